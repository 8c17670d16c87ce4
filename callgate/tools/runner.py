"""Running one tool call: in its own thread, with a timeout, cancellable, JSON-safe output.

:func:`run_tool` is synchronous so that one node serves ``invoke`` and ``ainvoke`` alike
(LangGraph runs a sync node in its executor). Each call runs on a daemon thread of its
own — an idle one reused, else a new one: a tool that never returns keeps only its own
thread, so no fixed pool can be exhausted by hung tools (the old design's 64 shared
threads were). An async tool (a coroutine function, an
async-only ``StructuredTool``, an MCP tool) runs under ``asyncio.run`` in that thread: one
loop per call costs ~0.1 ms, and unlike a shared loop it cannot be stalled for everyone by a
coroutine that blocks it; MCP tools open a session per call anyway, so nothing needs a loop
that outlives the call.

What happens to a tool that is still running at its timeout or cancel:

- a tool that takes a ``CancelToken`` parameter (see ``ToolRegistry.register``) gets it
  cancelled and may stop on its own; an async tool gets its task cancelled;
- a sync tool that ignores cancellation cannot be stopped (Python cannot kill a thread):
  the run returns at once with ``abandoned=True``; the thread keeps running until the tool
  returns, its result is dropped, and any side effect it has still happens. A daemon
  thread does not keep the process alive at exit.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import dataclasses
import json
import logging
import math
import queue
import re
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal
from enum import Enum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from pathlib import PurePath
from typing import Any, Literal
from uuid import UUID

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from callgate.graph.cancellation import CancelToken
from callgate.tools.registry import Tool

log = logging.getLogger(__name__)

POLL_S = 0.02  # how often the caller looks at the run's CancelToken
GRACE_S = 0.05  # how long a stopped tool gets to finish before it counts as abandoned

MAX_DEPTH = 64  # containers nested deeper are replaced by a marker
MAX_VALUES = 10_000_000  # values in one result; beyond, a marker (a shared-reference bomb)
REPR_CHARS = 500  # an unserialisable object becomes its repr, clipped to this

Outcome = Literal["ok", "timeout", "cancelled"]


class ToolExit(Exception):
    """A tool raised ``SystemExit`` or ``KeyboardInterrupt`` in its own thread: its call
    failed; the run, which nobody interrupted, goes on."""


class ToolError(Exception):
    """A tool replied with a ``ToolMessage`` marked ``status="error"``: its call failed."""


@dataclasses.dataclass(frozen=True)
class ToolRun:
    """How one call ended. ``data`` is JSON-safe (see :func:`to_jsonable`), None unless ok;
    ``abandoned``: the tool's thread was still running when the run gave up on it; ``note``
    says so in words (None when ok); ``artifact``: what a tool with
    ``response_format="content_and_artifact"`` (MCP tools: their structured content) gave
    beside its content, JSON-safe, or None."""

    outcome: Outcome
    data: Any
    duration_ms: float
    abandoned: bool
    note: str | None
    artifact: Any = None


def run_tool(tool: Tool, args: dict[str, Any], *, timeout_s: float,
             token: CancelToken | None = None, config: RunnableConfig | None = None,
             grace_s: float = GRACE_S) -> ToolRun:
    """Run ``tool`` with ``args`` in its own thread, for at most ``timeout_s`` seconds.

    ``token`` is the run's: when it is cancelled the call stops within ``POLL_S + grace_s``
    (a token already cancelled means the tool never starts). On timeout or cancel the tool's
    own token (its ``cancel_param``) is cancelled, an async tool's task is cancelled, and
    after ``grace_s`` the call returns; ``abandoned`` says whether its thread still runs.
    ``config`` is passed to the tool's ``invoke`` and the caller's context variables
    (LangGraph's config, stream writer) are copied into the thread.

    An exception raised by the tool propagates unchanged (same object): retries and error
    results are the caller's (LangGraph's ``RetryPolicy``). The tool's ``SystemExit`` or
    ``KeyboardInterrupt`` (``sys.exit`` in a wrapped command line) is raised as
    :class:`ToolExit` instead, a failure of the call: left as it is, it would end the
    caller's whole run (the CLI exited 0 with no answer). A returned value never raises:
    it becomes :func:`to_jsonable` data (a ``ToolMessage``/``Command``: its content),
    converted in the tool's thread within the timeout.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    started = time.perf_counter()
    if token is not None and token.cancelled:
        return ToolRun("cancelled", None, 0.0, False,
                       "cancelled before it started; the tool did not run")
    call = _Call(tool, args, config)
    call.start()
    deadline = started + timeout_s
    outcome: Outcome | None = None
    try:
        while not call.done.is_set():
            left = deadline - time.perf_counter()
            if left <= 0:
                outcome = "timeout"
                break
            if token is None:
                call.done.wait(min(left, threading.TIMEOUT_MAX))  # timeout_s may be inf
                continue
            if token.cancelled:
                outcome = "cancelled"
                break
            call.done.wait(min(POLL_S, left))
    except BaseException:  # the caller was interrupted (KeyboardInterrupt): stop the tool too
        call.stop()
        raise
    if outcome is None:
        duration_ms = _ms(started)
        if call.error is not None:
            error, call.error = call.error, None  # no reference cycle through the traceback
            if isinstance(error, KeyboardInterrupt | SystemExit):
                raise ToolExit(f"the tool raised {type(error).__name__}"
                               f"{f'({error})' if str(error) else ''}, which would have "
                               "ended the whole run") from error
            raise error
        return ToolRun("ok", call.data, duration_ms, False, None, call.artifact)
    call.stop()
    abandoned = not call.done.wait(grace_s)
    if abandoned:
        call.abandon()
    why = f"the {timeout_s:g} s timeout" if outcome == "timeout" else "cancel"
    if abandoned and _is_async(tool.runnable):
        note = (f"abandoned after {why}: its task was cancelled but had not ended within "
                f"{grace_s:g} s; its side effects may still happen")
    elif abandoned:
        note = (f"abandoned after {why}; its thread may still finish and its side effects "
                "may still happen")
    else:
        note = f"stopped after {why}"
    return ToolRun(outcome, None, _ms(started), abandoned, note)


def abandoned_threads() -> int:
    """How many abandoned tool threads of this process are still running."""
    with _abandoned_lock:
        return len(_abandoned)


_abandoned: set[_Call] = set()
_abandoned_lock = threading.Lock()


class _Workers:
    """Daemon threads for tool calls: an idle one is reused, else a new one starts, so no
    fixed pool exists for hung tools to exhaust (a hung tool keeps only its own thread).
    ``concurrent.futures`` would do the reuse, but its threads are joined at interpreter
    exit, so one hung tool would keep the process alive; hence this small pool."""

    IDLE_S = 30.0  # an idle worker exits after this long

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            reuse = self._idle > 0
            if reuse:
                self._idle -= 1  # that worker is now promised this job
        if reuse:
            self._jobs.put(job)
        else:
            threading.Thread(target=self._work, args=(job,), daemon=True,
                             name="callgate-tool").start()

    def _work(self, job: Callable[[], None]) -> None:
        while True:
            job()
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody was promised this worker: retire
                        self._idle -= 1
                        return
                job = self._jobs.get()  # a job was promised just as we timed out


_WORKERS = _Workers()


class _Call:
    """One call's thread and what it left: ``data`` or ``error``, then ``done``."""

    def __init__(self, tool: Tool, args: dict[str, Any], config: RunnableConfig | None) -> None:
        self.tool = tool
        self.runnable = tool.runnable
        # A content_and_artifact tool: LangChain hands the artifact back only in the
        # ToolMessage a tool call returns, whose content it turns into text (a dict became
        # its JSON), so the tool's (content, artifact) pair is taken as it returns it.
        self.pair = getattr(tool.runnable, "response_format", "") == "content_and_artifact"
        if self.pair:
            self.runnable = tool.runnable.model_copy(update={"response_format": "content"})
        self.token = CancelToken()  # the tool's own: cancelled on timeout or run cancel
        self.args = {**args, tool.cancel_param: self.token} if tool.cancel_param else args
        self.config = config
        self.done = threading.Event()
        self.data: Any = None
        self.artifact: Any = None
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._stopping = False
        self._abandoned = False
        self._started = 0.0
        self._task: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    def start(self) -> None:
        context = contextvars.copy_context()
        self._started = time.perf_counter()
        _WORKERS.submit(lambda: context.run(self._run_named))

    def _run_named(self) -> None:
        thread = threading.current_thread()
        thread.name = f"callgate-tool-{self.tool.name}"
        try:
            self._target()
        finally:
            thread.name = "callgate-tool-idle"

    def stop(self) -> None:
        self.token.cancel()
        with self._lock:
            self._stopping = True
            task = self._task
        if task is not None:
            loop, running = task
            with contextlib.suppress(RuntimeError):  # a closed loop: the task is over
                loop.call_soon_threadsafe(running.cancel)

    def abandon(self) -> None:
        with _abandoned_lock:
            if not self.done.is_set():
                self._abandoned = True
                _abandoned.add(self)

    def _target(self) -> None:
        try:
            if _is_async(self.runnable):
                value = asyncio.run(self._arun())
            else:
                value = self.runnable.invoke(self.args, self.config)
            # A generator function's call runs none of its body: LangChain returns the
            # generator, which read as an ok result (its repr) whether or not it would have
            # raised. Its items are the result; what it raises is the call's failure.
            if isinstance(value, types.AsyncGeneratorType):
                value = asyncio.run(self._arun(value))
            elif isinstance(value, types.GeneratorType):
                value = self._drain(value)
            artifact = None
            if self.pair:
                value, artifact = _content_and_artifact(self.tool.name, value)
            # Converted here, not in the caller: a pathological value (a repr that never
            # returns) then costs this thread, within the timeout, not the run.
            self.data = to_jsonable(_content(value))
            if artifact is not None:
                self.artifact = to_jsonable(artifact)
        except BaseException as exc:  # handed to the caller, who re-raises it
            self.error = exc
        finally:
            with _abandoned_lock:
                self.done.set()
                if self._abandoned:
                    _abandoned.discard(self)
                    log.info("abandoned tool %r finished after %.1f s (%s); its result was "
                             "dropped", self.tool.name, time.perf_counter() - self._started,
                             "ok" if self.error is None else type(self.error).__name__)
                    self.error = None

    async def _arun(self, items: types.AsyncGeneratorType[Any, Any] | None = None) -> Any:
        """The async tool's result, or (``items``) what the async generator yields."""
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            self._task = (asyncio.get_running_loop(), task)
            if self._stopping:
                task.cancel()  # stopped before the loop started: cancelled at the first await
        if items is not None:
            await asyncio.sleep(0)  # a cancel made before the loop started lands here
            drained = []
            async for item in items:
                # A body that never awaits never lets the task's cancel land: the token
                # stops it, as _drain stops a sync one.
                if self.token.cancelled:
                    await items.aclose()
                    raise asyncio.CancelledError("stopped while its generator ran")
                drained.append(item)
            return drained
        return await self.runnable.ainvoke(self.args, self.config)

    def _drain(self, items: types.GeneratorType[Any, Any, Any]) -> list[Any]:
        """What a generator yields, stopping at a timeout or cancel (an endless one)."""
        drained = []
        for item in items:
            if self.token.cancelled:
                items.close()
                raise asyncio.CancelledError("stopped while its generator ran")
            drained.append(item)
        return drained


def _content_and_artifact(name: str, value: Any) -> tuple[Any, Any]:
    """A content_and_artifact tool's reply as its two parts (LangChain's own check)."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise ValueError(f"tool {name!r} has response_format='content_and_artifact', so it "
                         f"must return a (content, artifact) pair; it returned "
                         f"{type(value).__name__}")
    return value


def _is_async(runnable: BaseTool) -> bool:
    """Async-only tools: a ``StructuredTool`` with a coroutine and no function (async
    Python functions, MCP tools). Everything else runs through its sync ``invoke``."""
    return (isinstance(runnable, StructuredTool) and runnable.func is None
            and runnable.coroutine is not None)


def _content(value: Any) -> Any:
    """A ``ToolMessage``'s content; a ``Command``'s tool message content, else its update.

    A tool message with ``status="error"`` (LangChain's mark of a failed call) raises
    :class:`ToolError` with its content: it is the call's failure, not its result."""
    if isinstance(value, ToolMessage):
        _raise_if_error(value)
        return value.content
    if isinstance(value, Command):
        update = value.update
        messages = update.get("messages") if isinstance(update, dict) else None
        for message in messages or []:
            if isinstance(message, ToolMessage):
                _raise_if_error(message)
        contents = [m.content for m in messages or [] if isinstance(m, ToolMessage)]
        if contents:
            return contents[0] if len(contents) == 1 else contents
        return update
    return value


def _raise_if_error(message: ToolMessage) -> None:
    if message.status == "error":
        text = message.content if isinstance(message.content, str) else json.dumps(
            to_jsonable(message.content), ensure_ascii=False)
        raise ToolError(text.strip() or "the tool's reply is marked as an error")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


# -- JSON-safe output ---------------------------------------------------------------------

# Our own walker: pydantic_core.to_jsonable_python raises on cycles and non-UTF-8 bytes,
# leaves sets unsorted, has no depth marker and iterates generators (endless ones hang).
# It is used for the scalar types whose JSON form it defines (ISO dates, durations, ...).
_PYDANTIC_SCALARS = (datetime, date, dtime, timedelta, Decimal, UUID, PurePath, IPv4Address,
                     IPv6Address, IPv4Network, IPv6Network)
_SURROGATE = re.compile("[\ud800-\udfff]")
_BIG_INT_BITS = 13_000  # ~4,000 digits: below Python's default int-to-str limit (4,300)


def to_jsonable(value: Any) -> Any:
    """Any value as JSON-safe data (str keys; str, int, float, bool, None, list, dict); never
    raises. The rules:

    - ``bytes``/``bytearray``/``memoryview``: the text if valid UTF-8, else
      ``{"type": "bytes", "size": n, "base64": <all of them, base64>}`` (the store keeps
      them whole; a summary or preview shows a clipped part, as of any long value);
    - ``str`` with lone surrogates (not encodable): those become U+FFFD;
    - tuples, deques → lists; sets, frozensets → sorted lists (by JSON text where the items
      don't compare); mappings → dicts (keys as JSON text where not strings);
    - dataclasses and pydantic models → dicts of their fields; enums → their value;
      datetimes, dates, times → ISO 8601; timedelta → ISO 8601 duration; Decimal, UUID,
      paths, IP addresses → strings; NaN and infinities → "NaN", "Infinity", "-Infinity";
      ints too long to write in decimal → a marker; objects with ``tolist()`` (numpy) → that;
    - anything else → its ``repr`` clipped to 500 characters;
    - a container nested more than 64 levels deep, a container that contains itself, and
      values past 10,000,000 in all → a ``"<cut: ...>"``/``"<cycle: ...>"`` marker string.

    Nothing is truncated for size otherwise: a 10 MB string stays 10 MB.
    """
    try:
        return _Walker().convert(value, 0)
    except Exception as exc:  # a last guard: the walker catches per value already
        return f"<unconvertible {type(value).__name__}: {type(exc).__name__}>"


class _Walker:
    def __init__(self) -> None:
        self.path: set[int] = set()  # ids of the containers being converted (cycle check)
        self.values = 0

    def convert(self, obj: Any, depth: int) -> Any:
        kind = type(obj)
        if kind is str:
            return obj if obj.isascii() else _encodable(obj)
        if obj is None or kind is bool:
            return obj
        if kind is int:
            return obj if obj.bit_length() < _BIG_INT_BITS else _big_int(obj)
        if kind is float:
            return obj if math.isfinite(obj) else _non_finite(obj)
        try:
            if kind is dict or kind is list:
                return self._enter(obj, depth)
            return self._convert_other(obj, depth)
        except Exception:
            return _repr(obj)

    def _convert_other(self, obj: Any, depth: int) -> Any:
        if isinstance(obj, Enum):
            return self.convert(obj.value, depth)
        if isinstance(obj, str):  # subclasses: the plain string
            return self.convert(str.__str__(obj), depth)
        if isinstance(obj, int):
            return self.convert(int.__int__(obj), depth)
        if isinstance(obj, float):
            return self.convert(float.__float__(obj), depth)
        if isinstance(obj, bytes | bytearray | memoryview):
            return _bytes(bytes(obj))
        if isinstance(obj, _PYDANTIC_SCALARS):
            return self.convert(to_jsonable_python(obj), depth)
        if not isinstance(obj, Mapping | list | tuple | deque | set | frozenset | BaseModel) \
                and not _is_dataclass_instance(obj):
            tolist = getattr(type(obj), "tolist", None)
            if callable(tolist):  # numpy arrays and scalars
                return self.convert(tolist(obj), depth)
            return _repr(obj)
        return self._enter(obj, depth)

    def _enter(self, obj: Any, depth: int) -> Any:
        key = id(obj)
        if depth >= MAX_DEPTH or key in self.path or self.values > MAX_VALUES:
            label = _kind(obj)
            if depth >= MAX_DEPTH:
                return f"<cut: {label} nested more than {MAX_DEPTH} levels deep>"
            if key in self.path:
                return f"<cycle: this {label} contains itself>"
            return f"<cut: more than {MAX_VALUES:,} values in this result>"
        self.path.add(key)
        try:
            kind = type(obj)
            if kind is dict:
                return self._mapping(obj, depth + 1)
            if kind is list:
                return self._items(obj, depth + 1)
            return self._container(obj, depth + 1)
        finally:
            self.path.discard(key)

    def _container(self, obj: Any, depth: int) -> Any:
        if isinstance(obj, BaseModel):
            try:
                fields: Any = obj.model_dump(mode="python")
            except Exception:  # a cycle or a failing serializer: the fields as they are
                fields = {n: getattr(obj, n, None) for n in type(obj).model_fields}
            return self._mapping(fields, depth)
        if _is_dataclass_instance(obj):
            return self._mapping({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
                                  if hasattr(obj, f.name)}, depth)
        if isinstance(obj, Mapping):
            return self._mapping(obj, depth)
        items = self._items(obj, depth)
        if isinstance(obj, set | frozenset):
            try:
                items.sort()
            except TypeError:  # mixed kinds: a stable order all the same
                items.sort(key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
        return items

    # The two loops below inline the commonest values: they set the pace for big results.
    def _items(self, obj: Any, depth: int) -> list[Any]:
        self.values += len(obj)
        convert = self.convert
        return [item if (type(item) is str and item.isascii()) or item is None
                else convert(item, depth) for item in obj]

    def _mapping(self, obj: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        self.values += len(obj)
        convert, to_key = self.convert, self._key
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if type(k) is not str or not k.isascii():
                k = to_key(k, depth)
            out[k] = v if (type(v) is str and v.isascii()) or v is None else convert(v, depth)
        return out

    def _key(self, key: Any, depth: int) -> str:
        converted = self.convert(key, depth)
        if isinstance(converted, str):
            return converted
        return json.dumps(converted, ensure_ascii=False)  # 1 → "1", True → "true", as JSON


def _is_dataclass_instance(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _kind(obj: Any) -> str:
    kind = type(obj)
    return "dict" if kind is dict or isinstance(obj, Mapping) else kind.__name__


def _encodable(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # lone surrogates (from surrogateescape, or built by hand)
        return _SURROGATE.sub("\ufffd", text)


def _bytes(raw: bytes) -> Any:
    try:
        return _encodable(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return {"type": "bytes", "size": len(raw),
                "base64": base64.b64encode(raw).decode("ascii")}


def _big_int(value: int) -> int | str:
    try:
        str(value)
        return value
    except ValueError:  # longer than sys.get_int_max_str_digits()
        return f"<cut: an integer of {value.bit_length():,} bits>"


def _non_finite(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _repr(obj: Any) -> str:
    try:
        text = repr(obj)
    except Exception as exc:  # RecursionError, a broken __repr__
        return f"<{type(obj).__name__} object (repr failed: {type(exc).__name__})>"
    text = _encodable(text)
    if len(text) > REPR_CHARS:
        return f"{text[:REPR_CHARS]}… ({len(text):,} characters)"
    return text
