"""Full tool results, kept in LangGraph's store rather than in the checkpoint.

Each result is one store item under the namespace ``("callgate", "results", thread_id)``
(an id with a "." percent-encoded, as store labels hold no period)
with its result id (``R3``) as key and ``{"tool", "args", "data"}`` as value (and
``"artifact"`` for a tool that gives one beside its content: an MCP tool's structured
content). Runs without a thread id use the thread ``"-"``. A repeat (a call answered
from an earlier one's result) runs nothing and stores no data: its id is recorded under
``("callgate", "repeats", thread_id)`` with ``{"repeat_of": "R1"}``. Read one back with
:func:`get_result`, which reads a repeat's id as its original's.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from callgate.graph.state import ToolCall

log = logging.getLogger(__name__)

NO_THREAD = "-"

# BaseStore has no compare-and-set, so reading a thread's numbering and recording the next
# is made one step here: a process's concurrent runs on one thread (or on none: "-") took
# the same ids and wrote over each other's results. One lock of a fixed set per thread id
# (by hash), so a slow store holds up few other threads. Runs in several processes on one
# thread are LangGraph Server's to order: it runs a thread's runs one at a time.
_NUMBERING = tuple(threading.Lock() for _ in range(64))


def _thread_label(thread_id: str | None) -> str:
    """The thread id as a namespace label, which LangGraph's stores refuse with a period in
    it ("user.one", an email address): such an id percent-encoded ("%" and "."); any other
    id is its own label, as before (an id with "%" keeps the results it has)."""
    label = thread_id or NO_THREAD
    return label.replace("%", "%25").replace(".", "%2E") if "." in label else label


def results_namespace(thread_id: str | None) -> tuple[str, ...]:
    return ("callgate", "results", _thread_label(thread_id))


def thread_of(config: RunnableConfig | None) -> str | None:
    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(value) if value is not None else None


def put_result(store: BaseStore, thread_id: str | None, result_id: str, tool: str,
               args: dict[str, Any], data: Any, artifact: Any = None) -> None:
    """Keep a result (with its ``artifact``, where the tool gave one); where the store
    cannot write it as JSON, :func:`storable`'s copy."""
    namespace, value = results_namespace(thread_id), {"tool": tool, "args": args, "data": data}
    if artifact is not None:
        value["artifact"] = artifact
    try:
        # index=False: results are looked up by id, never searched by meaning.
        store.put(namespace, result_id, value, index=False)
    except (TypeError, ValueError):
        # SQLite's and PostgreSQL's stores write JSON with orjson, which refuses an int past
        # 64 bits (the calculator's 2^1000 * 2^1000) and objects it does not know.
        store.put(namespace, result_id, storable(value), index=False)


def repeats_namespace(thread_id: str | None) -> tuple[str, ...]:
    return ("callgate", "repeats", _thread_label(thread_id))


def put_repeat(store: BaseStore, thread_id: str | None, result_id: str, original: str
               ) -> None:
    """Record that ``result_id`` was answered from ``original``'s result."""
    try:
        store.put(repeats_namespace(thread_id), result_id, {"repeat_of": original},
                  index=False)
    except Exception as exc:  # only get_result of the repeat's own id is lost
        log.warning("could not record repeat %s of %s: %s", result_id, original, exc)


def numbering_namespace(thread_id: str | None) -> tuple[str, ...]:
    return ("callgate", "numbering", _thread_label(thread_id))


def _numbered_past(store: BaseStore | None, thread_id: str | None, events: int) -> int:
    """The number a new result id goes on from (``R8`` after 7): past the thread's
    ``events``, and past the last id any run gave out on the thread, which the store
    records (:func:`_record_numbered`). So no run writes over a kept result: a run without
    a checkpointer starts from empty state (its first call was ``R1`` again, over the
    thread's ``R1``), and so does a fork from an earlier checkpoint."""
    if store is None:
        return events
    try:
        item = store.get(numbering_namespace(thread_id), "last")
    except Exception as exc:  # a store that fails loses no run: the events' numbering
        log.warning("could not read the result numbering of thread %r: %s", thread_id, exc)
        return events
    last = item.value.get("n") if item is not None else None
    return max(events, last) if isinstance(last, int) else events


def numbered(calls: list[ToolCall], store: BaseStore | None, thread_id: str | None,
             events: int) -> list[ToolCall]:
    """``calls`` each with a result id: its own where it has one (``validate`` gave it),
    else the next of the thread's numbering, which the store then records."""
    if all(call.get("result_id") for call in calls):
        return list(calls)
    with _NUMBERING[hash(thread_id or NO_THREAD) % len(_NUMBERING)]:
        base, fresh = _numbered_past(store, thread_id, events), 0
        out: list[ToolCall] = []
        for call in calls:
            if not call.get("result_id"):
                fresh += 1
                call = {**call, "result_id": f"R{base + fresh}"}
            out.append(call)
        _record_numbered(store, thread_id, base + fresh)
    return out


def _record_numbered(store: BaseStore | None, thread_id: str | None, last: int) -> None:
    """Record ``last`` as the highest result number given out on the thread."""
    if store is None:
        return
    try:
        store.put(numbering_namespace(thread_id), "last", {"n": last}, index=False)
    except Exception as exc:
        log.warning("could not record the result numbering of thread %r: %s", thread_id, exc)


def storable(value: Any) -> Any:
    """``value`` as JSON any store writes: keys as text, tuples and sets as lists, pydantic
    models and dataclasses as their fields, an int past 64 bits and any other object as
    their text. (So SQLite's store keeps 2^2000 as text, where PostgreSQL's, which writes
    JSON with the json module, keeps the int.)"""
    if value is None or isinstance(value, str | float | bool):
        return value
    if isinstance(value, int):
        if -2 ** 63 <= value < 2 ** 64:
            return value
        try:
            return str(value)
        except ValueError:  # past Python's limit on int-to-text conversion (4300 digits)
            return f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, dict):
        return {str(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [storable(item) for item in value]
    if hasattr(value, "model_dump"):
        return storable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return storable(dataclasses.asdict(value))
    return str(value)


def get_result(agent: Any, config: RunnableConfig | None, result_id: str) -> Any:
    """The full data of result ``result_id`` (``"R3"``) on the thread in ``config``.

    ``agent`` is the compiled graph from ``build_agent`` (or its store). The id of a repeat
    gives the result of the call it repeats. Raises ``KeyError`` when the store has no such
    result. In async code with an async store (``AsyncSqliteStore``,
    ``AsyncPostgresStore``), :func:`aget_result`."""
    store, thread = _store_of(agent), thread_of(config)
    item = store.get(results_namespace(thread), result_id)
    original = None
    if item is None and (alias := store.get(repeats_namespace(thread), result_id)):
        original = alias.value["repeat_of"]
        item = store.get(results_namespace(thread), original)
    return _data(item, result_id, config, original)


async def aget_result(agent: Any, config: RunnableConfig | None, result_id: str) -> Any:
    """:func:`get_result` for async code: an async store refuses sync calls on its loop."""
    store, thread = _store_of(agent), thread_of(config)
    item = await store.aget(results_namespace(thread), result_id)
    original = None
    if item is None and (alias := await store.aget(repeats_namespace(thread), result_id)):
        original = alias.value["repeat_of"]
        item = await store.aget(results_namespace(thread), original)
    return _data(item, result_id, config, original)


def _store_of(agent: Any) -> BaseStore:
    store = agent if isinstance(agent, BaseStore) else getattr(agent, "store", None)
    if store is None:
        raise ValueError("this agent has no store: compile it with one to keep full results")
    return store


def _data(item: Any, result_id: str, config: RunnableConfig | None,
          original: str | None) -> Any:
    if item is None:
        of = f" (a repeat of {original!r}, which has none)" if original else ""
        raise KeyError(f"no stored result {result_id!r}{of} on thread "
                       f"{thread_of(config)!r}")
    return item.value["data"]
