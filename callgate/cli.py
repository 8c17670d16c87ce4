"""The ``callgate`` command line: ask, chat, tools, stats, index, eval, bench.

``ask`` and ``chat`` show what the agent does while it does it (a status line from the first
moment, a line per tool call, the answer's tokens), on stderr; the answer goes to stdout.
Ctrl-C cancels the run (the thread is kept and can be resumed); errors a user can cause
print one line with a hint (``--debug`` for the traceback).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import queue
import re
import signal
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

from rich.console import Console, Group, RenderableType
from rich.spinner import Spinner
from rich.text import Text
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from callgate.tools.builtin import BuiltinStatus

T = TypeVar("T")

# After the first Ctrl-C the run gets this long to stop at a token or node boundary; then
# the process exits anyway (the thread keeps its last checkpoint and resumes from there).
CANCEL_GRACE_S = 0.6
EXIT_CANCELLED = 130
# 128 + SIGPIPE: what a shell reports for a program a closed pipe ended (`yes | head`), so
# a pipeline under `set -o pipefail` sees callgate as it sees cat or grep.
EXIT_BROKEN_PIPE = 141
CHAT_QUIT_WORDS = ("exit", "quit")
_ARG_CHARS = 70
_PREVIEW_LINES = 6


# -- errors a user can cause -----------------------------------------------------------------


class UserError(Exception):
    """An error caused by input or setup, not a bug: shown as one line with a hint."""

    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        if hint:
            self.hint = hint


class ConfigError(UserError):
    hint = "fix the file named above, or run without --tools and $CALLGATE_TOOLS"


class ModelError(UserError):
    hint = ("--model takes bundled, gguf:PATH, openai:MODEL[@URL], anthropic:MODEL, "
            "ollama:MODEL or a name from models.yaml")


class ServerError(UserError):
    hint = "is the model server running, and is the URL in --model right?"


class DatabaseError(UserError):
    hint = "--db (or $CALLGATE_DB) takes a SQLite file path or postgresql://user@host/dbname"


class StatsError(UserError):
    hint = ("the usage statistics are a SQLite file (stats.sqlite in $CALLGATE_HOME, or "
            "stats --db PATH): move a damaged one away to start afresh")


class RunFailed(UserError):
    """The run raised where no user error explains it (a model's own exception): one line,
    the thread kept; ``--debug`` shows the traceback."""


class DocumentIndexError(UserError):
    hint = ("index takes a .md, .txt or .pdf file or a folder of them; --index (or "
            "$CALLGATE_INDEX) names a SQLite file")


class Cancelled(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The user pressed Ctrl-C: the run stopped (or will be abandoned) and the thread kept."""


def as_user_error(exc: BaseException, tool_choice: str | None = None) -> UserError | None:
    """The user-facing form of ``exc`` when a user can cause it; None for a bug."""
    from langchain_core.exceptions import ContextOverflowError as ProviderContextOverflow

    from callgate.extras import MissingExtraError, install_command
    from callgate.graph.decide_native import ToolChoiceError
    from callgate.models.errors import ModelServerUnreachableError
    from callgate.models.llamacpp import ContextOverflowError
    from callgate.persistence import PersistenceError
    from callgate.tools.config import ToolsConfigError
    from callgate.tools.index import DamagedIndexError

    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, ModelServerUnreachableError):  # the graph named the URL already
        return ServerError(str(exc))
    if isinstance(exc, MissingExtraError):
        return UserError(exc.need, f"install the {exc.extra} extra: {install_command(exc.extra)}")
    if isinstance(exc, DamagedIndexError):
        return DocumentIndexError(str(exc), exc.hint)
    if isinstance(exc, ToolsConfigError):
        return ConfigError(str(exc))
    if isinstance(exc, ToolChoiceError):
        return UserError(str(exc), "--tool-choice takes required or the name of a tool "
                                   "(callgate tools lists them), for a model with native "
                                   "tool calling or a llama.cpp model under the grammar")
    if isinstance(exc, PersistenceError):
        return DatabaseError(str(exc))
    if isinstance(exc, ContextOverflowError | ProviderContextOverflow):
        # Ours (llama.cpp), or a provider's as langchain-core names it (before the OpenAI
        # branches: langchain-openai's is an HTTP 400 too).
        return UserError(_server_message(exc),
                         "start a new thread, or use a model with a larger context")
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APIStatusError):
        detail = _server_message(exc)
        message = f"the model server answered HTTP {exc.status_code}" + (
            f": {detail}" if detail and not detail.startswith("Error code:") else "")
        if tool_choice:
            return ServerError(message, f"this server may not support tool_choice="
                                        f"{tool_choice!r}: run without --tool-choice")
        return ServerError(message, "check the model name and the server's log")
    if openai is not None and isinstance(exc, openai.APIConnectionError):
        request = getattr(exc, "_request", None) or getattr(exc, "request", None)
        where = _where(getattr(request, "url", None))
        return ServerError(f"cannot reach the model server{where}: {_root_reason(exc)}")
    if openai is not None and isinstance(exc, openai.APIError):
        # Any other error of a request: a stream cut off, a reply that does not parse.
        return ServerError(f"the model server failed: {_server_message(exc)}")
    if openai is not None and type(exc) is openai.OpenAIError:
        # The base class itself is what the client raises before any request ("Missing
        # credentials. Please pass an `api_key` ... or set the `OPENAI_API_KEY` environment
        # variable."); its subclasses are errors of a request.
        return ModelError(f"the OpenAI client cannot start: {exc}",
                          "set OPENAI_API_KEY, or name a server that needs no key: "
                          "openai:MODEL@http://127.0.0.1:8080/v1")
    if (error := _provider_error(exc)) is not None:
        return error
    ollama = sys.modules.get("ollama")
    if ollama is not None and isinstance(exc, ollama.ResponseError):
        detail = " ".join(str(exc.error).split())[:300]
        missing = re.search(r"model [\"']([^\"']+)[\"'] not found", detail)
        if exc.status_code == 404 and missing:
            return ServerError(f"the Ollama server does not have the model {missing[1]!r}",
                               f"pull it first: ollama pull {missing[1]}")
        return ServerError(f"the Ollama server answered HTTP {exc.status_code}: {detail}",
                           "check the model name and the server's log")
    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(exc, httpx.TransportError):
        try:  # httpx raises RuntimeError for an error raised outside a request
            where = _where(exc.request.url)
        except RuntimeError:
            where = ""
        return ServerError(f"cannot reach the model server{where}: {exc}")
    if isinstance(exc, ConnectionRefusedError | ConnectionResetError | ConnectionAbortedError):
        return ServerError(f"cannot reach the model server: {exc}")
    return None


def _where(url: Any) -> str:
    """`` at URL`` for a request's (httpx) URL, without the user, password or query a URL
    may carry a key in; "" without one."""
    if url is None:
        return ""
    try:
        url = url.copy_with(userinfo=b"", query=None)
    except (AttributeError, TypeError):
        return ""
    return f" at {url}"


def _provider_error(exc: BaseException) -> UserError | None:
    """The user-facing form of a chat model provider's error, as langchain-core names them
    (``langchain_core.exceptions``: Anthropic's and OpenAI's integrations raise these);
    None for any other."""
    from langchain_core import exceptions as lc

    if not isinstance(exc, lc.ModelError):
        return None
    if isinstance(exc, lc.ModelConnectionError | lc.ModelTimeoutError):
        return ServerError(f"cannot reach the model server: {_root_reason(exc)}")
    kinds: list[tuple[type[BaseException], str, str]] = [
        (lc.ModelAuthenticationError, "refused the credentials",
         "check the provider's API key (ANTHROPIC_API_KEY, OPENAI_API_KEY)"),
        (lc.ModelPermissionDeniedError, "denied the request",
         "check that the API key may use this model"),
        (lc.ModelNotFoundError, "does not know the model", "check the model name in --model"),
        (lc.ModelRateLimitError, "is limiting requests", "wait a moment and ask again"),
        (lc.ModelRefusalError, "refused to answer", "rephrase the request"),
    ]
    what, hint = next(((what, hint) for kind, what, hint in kinds if isinstance(exc, kind)),
                      ("failed", "check the model name and the provider's status; --debug "
                                 "shows the whole error"))
    return ServerError(f"the model server {what}: {_server_message(exc)}", hint)


def _root_reason(exc: BaseException) -> str:
    """The innermost cause of ``exc``, as text ("[Errno 111] Connection refused")."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    return str(root) or type(root).__name__


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return " ".join(str(message).split())[:300]
    return " ".join(str(getattr(exc, "message", exc)).split())[:300]


@contextmanager
def phase(error: type[UserError], *caught: type[BaseException]) -> Iterator[None]:
    """Errors of ``caught`` types raised while setting up one thing are that thing's fault."""
    try:
        yield
    except caught as exc:
        if isinstance(exc, BrokenPipeError) or as_user_error(exc) is not None:
            raise  # a closed stdout is no fault of the thing set up
        hint = "check the path" if isinstance(exc, FileNotFoundError | IsADirectoryError) else None
        raise error(str(exc) or type(exc).__name__, hint) from exc


# -- records -----------------------------------------------------------------------------------


def _mode(args: argparse.Namespace) -> dict[str, str]:
    """The run's ``mode`` where ``--mode`` gives one; else none, and the thread keeps its
    last (the graph's rule: agent at first)."""
    return {"mode": args.mode} if args.mode else {}


class CliStatusEvent(TypedDict):
    """The CLI's own phase before the graph runs (``--events``)."""

    event: Literal["status"]
    phase: Literal["loading_model"]
    step: int


class TokenEvent(TypedDict):
    """A sanitized answer token (``--events``)."""

    event: Literal["token"]
    text: str
    node: str | None


class Result(TypedDict, total=False):
    """What ``--json`` prints and ``--events`` ends with (``event: "result"``)."""

    final_answer: str | None
    status: str | None
    tool_events: list[dict[str, Any]]
    tools_used: list[str]
    citations: list[dict[str, Any]]
    thread_id: str
    problems: list[dict[str, Any]]
    answer_source: str | None
    answer_checks: list[str]
    not_offered: list[str]


@dataclass
class Decision:
    """One person's answer to one approval request."""

    kind: Literal["approve", "edit", "reject"]
    args: dict[str, Any] | None = None
    message: str | None = None


# -- display -----------------------------------------------------------------------------------


class _LiveView:
    """The spinner, status and a preview of the answer's last lines (one rich renderable)."""

    def __init__(self) -> None:
        self.spinner = Spinner("dots", style="cyan")
        self.status = "loading model"
        self.since = time.monotonic()
        self.preview = ""

    def __rich__(self) -> RenderableType:
        elapsed = time.monotonic() - self.since
        self.spinner.update(text=Text.assemble((self.status, "bold"), f"  {elapsed:4.1f}s"))
        if not self.preview.strip():
            return self.spinner
        tail = "\n".join(self.preview.strip().splitlines()[-_PREVIEW_LINES:])
        return Group(self.spinner, Text(tail, style="dim"))


class Display:
    """Progress on stderr: a live spinner on a terminal; elsewhere only tool and approval
    lines (so a user error stays one line in a log)."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.live_ok = self.console.is_terminal and not quiet
        self.quiet = quiet
        self.view = _LiveView()
        self._live: Any = None
        self._message_id: str | None = None

    def start(self) -> None:
        if self.live_ok and self._live is None:
            from rich.live import Live

            self._live = Live(self.view, console=self.console, transient=True,
                              refresh_per_second=12, redirect_stdout=False,
                              redirect_stderr=False)
            self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def status(self, text: str) -> None:
        if text != self.view.status:
            self.view.status = text
            self.view.since = time.monotonic()

    def line(self, text: Text | str) -> None:
        if not self.quiet:
            # A plain string is printed as it is: rich would read "[status: …]" as markup.
            self.console.print(Text(text) if isinstance(text, str) else text)

    def token(self, text: str, message_id: str | None) -> None:
        if message_id != self._message_id:  # a new model reply: a new preview
            self._message_id = message_id
            self.view.preview = ""
        self.view.preview += text
        self.status("answering")

    def clear_preview(self) -> None:
        self.view.preview = ""
        self._message_id = None

    def tool_start(self, event: dict[str, Any]) -> None:
        attempt = event.get("attempt")
        if isinstance(attempt, int) and attempt > 1:  # a retry: the call's line is there
            self.status(f"calling {event.get('tool', '?')} again (attempt {attempt})…")
            return
        self.status(f"calling {event.get('tool', '?')}…")
        self.line(Text.assemble(("  → ", "cyan"), (str(event.get("tool", "?")), "bold"),
                                f" {_short_args(event.get('args'))}"))

    def tool_end(self, event: dict[str, Any]) -> None:
        ok = bool(event.get("ok", event.get("outcome") == "ok"))
        outcome = event.get("outcome") or ("ok" if ok else "failed")
        duration = event.get("duration_ms")
        # 0: the call did not run (refused, denied, skipped, a repeat)
        took = f"  {duration:.0f} ms" if isinstance(duration, int | float) and duration else ""
        attempts = event.get("attempts")
        if isinstance(attempts, int) and attempts > 1:
            took += f" ({attempts} attempts)"
        ref = f" [{event['result_id']}]" if event.get("result_id") else ""
        if ok:
            self.line(Text.assemble(("  ✓ ", "green"), str(event.get("tool", "?")), ref, took))
        elif outcome == "repeat":  # answered with the earlier result: no failure
            why = _why(event)
            self.line(Text.assemble(("  ↺ ", "cyan"), str(event.get("tool", "?")), ref,
                                    f" {why or 'repeat'}"))
        else:
            why = _why(event)
            self.line(Text.assemble(("  ✗ ", "red"), str(event.get("tool", "?")), ref,
                                    (f" {outcome}", "red"), f": {why}" if why else "", took))
        self.status("thinking")

    def call_refused(self, event: dict[str, Any]) -> None:
        why = _why(event)
        self.line(Text.assemble(("  ✗ ", "yellow"), (str(event.get("tool", "?")), "bold"),
                                f" {_short_args(event.get('args'))}",
                                (f" {event.get('outcome', 'invalid')}", "yellow"),
                                f": {why}" if why else "", " (sent back for a correction)"))


def _why(event: dict[str, Any], limit: int = 160) -> str:
    """An event's error on one line, without the advice grounding gives the model."""
    from callgate.tools.grounding import GROUNDING_ADVICE

    text = " ".join(str(event.get("error") or "").replace(GROUNDING_ADVICE, "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _short_args(args: Any) -> str:
    text = json.dumps(args if args is not None else {}, ensure_ascii=False, default=str)
    return text if len(text) <= _ARG_CHARS else text[: _ARG_CHARS - 1] + "…"


_PHASES = {"thinking": "thinking", "calling": "calling tools…",
           "approval": "waiting for approval", "answering": "answering"}


class EventSink:
    """``--events``: one JSON object per line on stdout, flushed at once."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def write(self, event: Mapping[str, Any]) -> None:
        if self.enabled:
            sys.stdout.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
            sys.stdout.flush()


# -- Ctrl-C ------------------------------------------------------------------------------------


class CtrlC:
    """SIGINT cancels the run in progress instead of raising; a second one exits at once."""

    def __init__(self, display: Display, events: EventSink) -> None:
        self.display = display
        self.events = events
        self.token: Any = None  # the CancelToken of the run in progress
        self.thread_id: str | None = None
        self.pressed_at: float | None = None
        self.turn_ended = False  # the cancelled run reached its end: nothing to resume

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGINT (main thread only) for the duration of the block."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self._handle)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.pressed_at is not None:
            self.exit_now()
        self.pressed_at = time.monotonic()
        if self.token is None:  # nothing to cancel cooperatively (loading, a prompt)
            raise KeyboardInterrupt
        self.token.cancel()
        self.display.status("cancelling")

    @property
    def overdue(self) -> bool:
        return (self.pressed_at is not None
                and time.monotonic() - self.pressed_at > CANCEL_GRACE_S)

    def message(self) -> str:
        if self.thread_id and self.turn_ended:
            # --thread alone would only print the turn's "The run was cancelled" answer.
            return (f"cancelled — the turn ended there; thread {self.thread_id} is saved: a "
                    f"new question with --thread {self.thread_id} goes on from it")
        if self.thread_id:
            return (f"cancelled — thread {self.thread_id} saved; "
                    f"resume with --thread {self.thread_id}")
        return "cancelled"

    def exit_now(self) -> NoReturn:
        """Say so and leave without waiting for worker threads (a model may be decoding)."""
        self.display.stop()
        self.events.write({"event": "cancelled", "thread_id": self.thread_id})
        self.display.console.print(self.message())
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CANCELLED)


class _OwnStdout:
    """``sys.stdout`` while a session runs: the CLI's own output (the main thread's) goes to
    stdout; whatever another thread prints — a tool's debug ``print``, which runs in a
    thread of its own — goes to stderr, so that ``--json``, ``--events`` and ``ask … >
    answer.txt`` keep only what the CLI writes."""

    def __init__(self, out: Any, err: Any) -> None:
        self.out = out
        self.err = err
        # Another thread's text, held until its line ends: print() writes its pieces one
        # by one, and the status line written meanwhile would land inside the tool's line.
        self._lines: dict[int, str] = {}
        self._lock = threading.RLock()  # a second Ctrl-C's exit flushes from inside one

    def write(self, text: str) -> int:
        if threading.current_thread() is threading.main_thread():
            return self.out.write(text)
        with self._lock:
            held = self._lines.pop(threading.get_ident(), "") + text
            whole, newline, rest = held.rpartition("\n")
            if rest:
                self._lines[threading.get_ident()] = rest
            if newline:
                self.err.write(whole + newline)
        return len(text)

    def flush(self) -> None:
        # Only the calling thread's own line: the CLI flushes after every --events line,
        # and releasing the tools' half lines then let the status line land inside them.
        with self._lock:
            held = self._lines.pop(threading.get_ident(), "")
        if held:
            self.err.write(held)
        self.err.flush()
        self.out.flush()

    def release(self) -> None:
        """End the lines the threads left unfinished (at a turn's end and the session's),
        each on a line of its own: joined, two threads' half lines read as one, and a
        pooled thread's next print went on from its last turn's."""
        with self._lock:
            held, self._lines = list(self._lines.values()), {}
        for line in held:
            self.err.write(line + "\n")

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding…: stdout's own
        return getattr(self.out, name)


def _end_tool_lines() -> None:
    """A turn's end: what the tools printed without ending the line is written, ended."""
    if isinstance(sys.stdout, _OwnStdout):
        sys.stdout.release()


def _writes_fd1(stream: Any) -> bool:
    try:
        return bool(stream.fileno() == 1)
    except (AttributeError, OSError, ValueError):  # a stream without a file (captured)
        return False


@contextmanager
def _stdout_kept() -> Iterator[None]:
    """Tools' output to stderr for the duration of the block: their prints
    (``_OwnStdout``) and what they write to file descriptor 1 itself (``os.system``, a
    child process, C code), fd 1 being a copy of stderr meanwhile; the CLI's own output
    goes to a copy of the real fd 1. Only the CLI's process does this: the Python API
    leaves a program's file descriptors alone."""
    out = sys.stdout
    out.flush()
    saved: int | None = None
    own = out
    with suppress(OSError):  # fd 1 or 2 closed: nothing to keep apart
        saved = os.dup(1)
        if _writes_fd1(out):
            own = io.TextIOWrapper(io.FileIO(os.dup(1), "w"), encoding=out.encoding,
                                   errors=out.errors,
                                   line_buffering=bool(getattr(out, "line_buffering", False)))
        os.dup2(2, 1)
    kept = sys.stdout = _OwnStdout(own, sys.stderr)
    try:
        yield
    finally:
        sys.stdout = out
        try:
            kept.release()
            if own is not out:
                own.close()  # flushed first; its file closes even when the flush fails
        finally:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)


def stdout_closed() -> NoReturn:
    """Leave quietly: the reader of stdout (``| head``) has closed it and wants no more."""
    # Python's recipe: stdout on devnull, so that nothing written on the way out fails
    # again. os._exit, as Ctrl-C's hard stop: a run's worker threads are not waited for.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    with suppress(OSError):  # stderr may be the same closed pipe (2>&1 | head)
        sys.stderr.flush()
    os._exit(EXIT_BROKEN_PIPE)


def _in_background(fn: Callable[[], T], ctrl_c: CtrlC) -> T:
    """Run ``fn`` in a worker thread so that Ctrl-C is handled while it runs in C code."""
    box: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def work() -> None:
        try:
            box.put((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box.put((False, exc))

    threading.Thread(target=work, daemon=True, name="callgate-work").start()
    while True:
        try:
            ok, value = box.get(timeout=0.05)
        except queue.Empty:
            if ctrl_c.overdue:
                ctrl_c.exit_now()
            continue
        if ok:
            return value
        raise value


# -- approvals ---------------------------------------------------------------------------------


class Approver:
    """Asks a person about each call that needs approval: on the terminal, or one answer
    line per call from piped stdin (``y``, ``n [reason]``, ``e {json}`` or ``{json}``)."""

    def __init__(self, display: Display, events: EventSink, auto: bool) -> None:
        self.display = display
        self.events = events
        self.auto = auto

    def resume_value(self, request: Any) -> Any:
        """The resume value for one interrupt, in the format the request came in."""
        self.events.write({"event": "approval", "request": request})
        if isinstance(request, dict) and isinstance(request.get("action_requests"), list):
            # LangChain's human-in-the-loop request: one decision per action request.
            decisions = []
            for action in request["action_requests"]:
                d = self.decide(action.get("name", "?"), action.get("args") or {},
                                action.get("description"))
                if d.kind == "edit":
                    decisions.append({"type": "edit", "edited_action": {
                        "name": action.get("name"), "args": d.args}})
                elif d.kind == "reject":
                    decisions.append({"type": "reject", **(
                        {"message": d.message} if d.message else {})})
                else:
                    decisions.append({"type": "approve"})
            return {"decisions": decisions}
        call = request.get("call", {}) if isinstance(request, dict) else {}
        reason = request.get("reason") if isinstance(request, dict) else None
        d = self.decide(call.get("name", "?"), call.get("args") or {}, reason)
        if d.kind == "edit":
            return {"action": "edit", "args": d.args}
        if d.kind == "reject":
            return {"action": "reject", **({"reason": d.message} if d.message else {})}
        return {"action": "approve"}

    def decide(self, name: str, args: dict[str, Any], why: str | None) -> Decision:
        args_text = json.dumps(args, ensure_ascii=False, default=str)
        if self.auto:
            self.display.line(f"  approved (--yes): {name} {args_text}")
            return Decision("approve")
        self.display.line(Text.assemble(("approval needed", "bold yellow"),
                                        f" ({why})" if why else "", f":\n  {name} {args_text}"))
        tty = sys.stdin.isatty()
        while True:
            line = _read_line("  approve? [y]es / [n]o [reason] / [e]dit [JSON]: ", tty)
            if line is None:
                self.display.line("  no answer on stdin: rejected")
                return Decision("reject", message="no answer")
            decision, problem = parse_answer(line, lambda: _read_line(
                "  new arguments as JSON: ", tty))
            if decision is not None:
                if not tty:
                    self.display.line(f"  answer: {line.strip()} → {decision.kind}")
                return decision
            if not tty:  # one answer line per call: a bad one rejects it, as none does
                self.display.line(f"  {problem} — rejected (one answer line per call on stdin)")
                return Decision("reject", message=problem)
            self.display.line(f"  {problem} — answer again")


def parse_answer(line: str, more: Callable[[], str | None]) -> tuple[Decision | None, str]:
    """An approval answer line; ``more`` reads the JSON of a bare ``e``/``edit``."""
    text = line.strip()
    word, _, rest = text.partition(" ")
    word = word.lower()
    if text.startswith("{"):
        word, rest = "edit", text
    if word in ("y", "yes", "a", "approve", "ok"):
        return Decision("approve"), ""
    if word in ("n", "no", "r", "reject", "deny"):
        # The graph says "rejected by the user" itself; the message is only the reason.
        return Decision("reject", message=rest.strip() or None), ""
    if word in ("e", "edit"):
        raw = rest.strip() or (more() or "").strip()
        try:
            args = json.loads(raw)
        except json.JSONDecodeError as exc:
            return None, f"not JSON ({exc.msg})"
        if not isinstance(args, dict):
            return None, "the new arguments must be a JSON object"
        return Decision("edit", args=args), ""
    return None, f"unrecognised answer {text!r}: y, n [reason] or e [JSON]"


# -- running a turn ----------------------------------------------------------------------------


@dataclass
class Session:
    """One agent on one thread, with its display, events, approvals and Ctrl-C."""

    agent: Any
    thread_id: str
    display: Display
    events: EventSink
    approver: Approver
    ctrl_c: CtrlC
    statuses: list[BuiltinStatus] = field(default_factory=list)
    show_tokens: bool = True
    tokens_seen: list[str] = field(default_factory=list)

    def run(self, payload: Any) -> dict[str, Any]:
        """Finish what the thread left undone (an approval, an interrupted turn), then run
        ``payload`` (None: only that); returns the thread's values."""
        from langgraph.types import Command

        config: dict[str, Any] = {"configurable": {"thread_id": self.thread_id}}
        state = self.agent.get_state(config)
        if state.interrupts:
            self._stream(Command(resume=self._answers(state.interrupts)), config)
        elif state.next:
            self.display.line(f"finishing the interrupted turn of thread {self.thread_id}")
            try:
                self._stream(None, config)
            except RunFailed as failed:
                if payload is None:
                    raise
                # A turn that fails again (a model that raises on it) would wedge the
                # thread: the new message goes on, and closes that turn first (start).
                self.display.line(f"that turn failed again ({failed}); going on with the "
                                  "new message")
        if payload is not None:
            self._stream(payload, config)
        return dict(self.agent.get_state(config).values)

    def unfinished(self) -> bool:
        """Whether the thread stopped midway (an approval awaited, a run cut off)."""
        state = self.agent.get_state({"configurable": {"thread_id": self.thread_id}})
        return bool(state.next or state.interrupts)

    def _answers(self, interrupts: Any) -> dict[str, Any]:
        self.display.stop()
        try:
            return {pending.id: self.approver.resume_value(pending.value)
                    for pending in interrupts}
        finally:
            self.display.start()

    def _stream(self, payload: Any, config: dict[str, Any]) -> None:
        """Run until the turn ends, asking for approvals on the way."""
        from langgraph.types import Command

        while True:
            try:
                self._stream_once(payload, config)
            except BrokenPipeError:
                # At once: unwinding would close the database under the run's worker
                # thread (SQLite crashed the process).
                stdout_closed()
            except Exception as exc:
                if isinstance(exc, UserError | Cancelled) or as_user_error(exc) is not None:
                    raise
                raise RunFailed(f"the run failed: {type(exc).__name__}: {exc}",
                                f"the thread is saved: --thread {self.thread_id} goes on "
                                "from it; --debug shows the traceback") from exc
            state = self.agent.get_state(config)
            if not state.interrupts:
                return
            payload = Command(resume=self._answers(state.interrupts))

    def _stream_once(self, payload: Any, config: dict[str, Any]) -> None:
        from callgate.graph.cancellation import CancelToken

        token = CancelToken()
        config = {**config, "configurable": {**config["configurable"], "cancel_token": token}}
        self.ctrl_c.token = token
        items: queue.Queue[tuple[str, Any]] = queue.Queue()

        def work() -> None:
            try:
                # durability="sync": each finished step is on disk before the next starts, so
                # a killed CLI never runs a finished call again when the thread resumes.
                for item in self.agent.stream(payload, config, subgraphs=True,
                                              stream_mode=["custom", "messages", "updates"],
                                              durability="sync"):
                    items.put(("item", item))
                items.put(("done", None))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                items.put(("error", exc))

        self.display.status("thinking")
        threading.Thread(target=work, daemon=True, name="callgate-run").start()
        try:
            while True:
                try:
                    kind, item = items.get(timeout=0.05)
                except queue.Empty:
                    if self.ctrl_c.overdue:
                        self.ctrl_c.exit_now()
                    continue
                if kind == "done":
                    break
                if kind == "error":
                    if token.cancelled:
                        self.ctrl_c.turn_ended = not self.unfinished()
                        raise Cancelled from item
                    raise item
                self._show(*item)
        finally:
            self.ctrl_c.token = None
        if token.cancelled:
            self.ctrl_c.turn_ended = not self.unfinished()
            raise Cancelled

    def _show(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        if mode == "custom" and isinstance(chunk, dict):
            self.events.write(chunk)
            kind = chunk.get("event")
            if kind == "tool_start":
                self.display.tool_start(chunk)
            elif kind == "tool_end":
                self.display.tool_end(chunk)
            elif kind == "call_refused":
                self.display.call_refused(chunk)
            elif kind == "status":
                phase = str(chunk.get("phase"))
                step = chunk.get("step")
                label = _PHASES.get(phase, phase)
                self.display.status(f"{label} (step {step})" if phase == "thinking" and step
                                    else label)
        elif mode == "messages":
            from langchain_core.messages import AIMessageChunk

            message, meta = chunk
            # Only streamed chunks are tokens; whole messages (a node's finished answer,
            # tool results) come again in the final state.
            if isinstance(message, AIMessageChunk) and isinstance(message.content, str) \
                    and message.content:
                node = meta.get("langgraph_node") if isinstance(meta, dict) else None
                self.events.write(TokenEvent(event="token", text=message.content, node=node))
                if self.show_tokens:
                    self.display.token(message.content, message.id)
        elif mode == "updates" and isinstance(chunk, dict) and not namespace \
                and ("finalize" in chunk or "cite" in chunk):
            self.display.status("answering")


def result_of(values: dict[str, Any], thread_id: str,
              statuses: list[BuiltinStatus] | None = None) -> Result:
    """The machine-readable result of the thread's last turn; ``statuses``: the built-ins',
    to name those not offered that the turn's request asks for (``not_offered``)."""
    from callgate.tools.builtin import not_offered_for
    from callgate.tools.grounding import user_texts

    events = list(values.get("tool_events") or [])
    start = values.get("turn_start")
    turn = events[start:] if isinstance(start, int) else events
    out = Result(final_answer=values.get("final_answer"), status=values.get("status"),
                 tool_events=turn, tools_used=list(values.get("tools_used") or []),
                 citations=list(values.get("citations") or []), thread_id=thread_id)
    if "problems" in values:
        out["problems"] = list(values.get("problems") or [])
    if values.get("answer_source"):
        out["answer_source"] = values["answer_source"]
        out["answer_checks"] = list(values.get("answer_checks") or [])
    request = (user_texts(values.get("messages") or []) or [""])[-1]
    if off := not_offered_for(request, statuses or []):
        out["not_offered"] = [str(status) for status in off]
    return out


def _notes_lines(out: Result) -> list[str]:
    """What the answer checks found (a number no result holds is flagged, not removed, so
    a reader should know: ``answer_checks``), and the built-ins the request asked for that
    are not offered, with how to turn them on (``not_offered``): for stderr."""
    notes = out.get("answer_checks") or []
    lines = [f"[answer checks: {'; '.join(notes)}]"] if notes else []
    lines += [f"[not offered: {why}]" for why in out.get("not_offered") or []]
    return lines


# -- building the agent ------------------------------------------------------------------------


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=os.environ.get("CALLGATE_MODEL", "bundled"),
                        help="model spec: bundled, gguf:PATH, openai:MODEL[@URL], "
                             "anthropic:MODEL, ollama:MODEL, or a name from models.yaml")
    parser.add_argument("--tool-format", choices=["auto", "native", "react"], default="auto",
                        help="native tool calling or ReAct text (default auto: native where "
                             "the model has it)")
    parser.add_argument("--tool-choice", help="force a call on each turn's first step "
                                              "('required' or a tool name): native tool "
                                              "calling, or a llama.cpp model's grammar")
    parser.add_argument("--no-grammar", action="store_true",
                        help="no grammar-constrained decoding for llama.cpp models")
    parser.add_argument("--max-steps", type=at_least_one, default=5,
                        help="model steps that may call tools before the answer (default 5)")
    parser.add_argument("--tools", dest="tools_file", help="a tools.yml file")
    parser.add_argument("--no-builtins", action="store_true", help="no built-in tools")
    parser.add_argument("--mode", choices=["agent", "work", "chat"], default=None,
                        help="agent or work: tools allowed; chat: an answer without tools "
                             "(default: the thread's last mode, agent at first)")
    parser.add_argument("--yes", action="store_true",
                        help="approve sensitive tool calls without asking")
    parser.add_argument("--thread", help="thread id: continue it (finishing a turn that was "
                                         "interrupted) instead of starting a new one")
    parser.add_argument("--db", help="where threads live: a SQLite file or postgresql://… "
                                     "(default $CALLGATE_DB, else threads.sqlite in "
                                     "$CALLGATE_HOME or the user data folder)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _debug_option(parser)


def at_least_one(text: str) -> int:
    """argparse's type for a count of steps: a whole number of at least 1."""
    value = _whole(text)  # not at_least(0): -1 was "below 0", and 0 is refused too
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1: the loop needs a step")
    return value


def at_least(lowest: int) -> Callable[[str], int]:
    """argparse's type for a count: a whole number of at least ``lowest``."""

    def count(text: str) -> int:
        value = _whole(text)
        if value < lowest:
            raise argparse.ArgumentTypeError(f"{value} is below {lowest}")
        return value

    return count


def _scope(text: str) -> str:
    """argparse's type for an index scope: a thread id or 'global', not blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a scope is a thread id or 'global', not blank")
    return text


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _debug_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error")


def _home() -> Path:
    from callgate.persistence import callgate_home

    return callgate_home()


def _build(args: argparse.Namespace, db: Any, display: Display, events: EventSink,
           ctrl_c: CtrlC) -> tuple[Any, list[BuiltinStatus]]:
    """The agent for ``args``, with the model loaded (a llama.cpp model is loaded here,
    under a "loading model" status, rather than silently at its first call), and the
    built-in tools' statuses."""
    import inspect

    from callgate import build_agent
    from callgate.models.spec import load_model
    from callgate.tools.stats import UsageStats
    from callgate.toolset import default_toolset

    with phase(ConfigError, ValueError, OSError):
        toolset = default_toolset(args.tools_file, builtins=not args.no_builtins)
    model_errors: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError,
                                                     TypeError)
    if (openai := sys.modules.get("openai")) is not None:
        model_errors = (*model_errors, openai.OpenAIError)
    home = _home()
    with phase(ModelError, *model_errors):
        model, config = load_model(args.model)
        if hasattr(model, "loaded"):  # our llama.cpp model: load the GGUF now
            # and keep its system prompt's KV state for the next process (ask is one each)
            # Our llama.cpp model (the one with ``loaded``) has ``prefix_cache``.
            model.prefix_cache = str(home / "prefix-cache")  # type: ignore[attr-defined]
            _in_background(lambda: model.loaded, ctrl_c)
        tool_format = config.tool_format if args.tool_format == "auto" else args.tool_format
        grammar = False if args.no_grammar else config.grammar
    options: dict[str, Any] = {}
    if "store" in inspect.signature(build_agent).parameters:  # the graph keeps results there
        options["store"] = db.store
    with phase(StatsError, sqlite3.Error, OSError):
        stats = UsageStats(home / "stats.sqlite")
    with phase(ModelError, ValueError, TypeError):
        agent = build_agent(model, toolset.registry, tool_format=tool_format,
                            grammar=grammar, tool_choice=args.tool_choice, max_steps=args.max_steps,
                            checkpointer=db.checkpointer, auto_approve=args.yes,
                            stats=stats, **options)
    return agent, toolset.statuses


@contextmanager
def _database(url: str | None) -> Iterator[Any]:
    """Threads and results: SQLite by default, PostgreSQL for a ``postgresql://`` URL."""
    from callgate.persistence import open_persistence

    with open_persistence(url) as db:
        yield db


@contextmanager
def _session(args: argparse.Namespace, prefix: str, *, saved_only: bool = False
             ) -> Iterator[Session]:
    """The agent on ``args.thread`` (a new thread id without one); ``saved_only``: the
    thread must be in the database already, checked before the model loads."""
    display = Display(quiet=args.quiet)
    events = EventSink(getattr(args, "events", False))
    ctrl_c = CtrlC(display, events)
    ctrl_c.thread_id = args.thread
    display.start()
    display.status("loading model")
    events.write(CliStatusEvent(event="status", phase="loading_model", step=0))
    try:
        with ctrl_c.installed(), _stdout_kept(), _database(args.db) as db:
            if saved_only and db.checkpointer.get_tuple(
                    {"configurable": {"thread_id": args.thread}}) is None:
                raise UserError(f"no thread {args.thread!r} is saved in this database",
                                f"callgate ask \"QUESTION\" --thread {args.thread} starts "
                                "it; --db names another database")
            agent, statuses = _build(args, db, display, events, ctrl_c)
            thread_id = args.thread or f"{prefix}-{uuid.uuid4().hex[:8]}"
            ctrl_c.thread_id = thread_id
            yield Session(agent, thread_id, display, events,
                          Approver(display, events, args.yes), ctrl_c, statuses)
    except (Cancelled, KeyboardInterrupt):
        ctrl_c.exit_now()
    finally:
        display.stop()


def _typed(text: str) -> str:
    """Text from the command line or stdin, bytes that are not UTF-8 as U+FFFD: Python
    keeps them as lone surrogates, which no model's tokenizer takes."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def cmd_ask(args: argparse.Namespace) -> int:
    args.question = _typed(args.question).strip() if args.question else args.question
    if not args.question and not args.thread:
        raise UserError("ask needs a question", "callgate ask \"QUESTION\" "
                                                "(or --thread ID to finish that thread's turn)")
    with _session(args, "ask", saved_only=not args.question) as session:
        payload = ({"messages": [("user", args.question)], **_mode(args)}
                   if args.question else None)
        session.show_tokens = not (args.json or args.events)
        values = session.run(payload)
        session.display.stop()
        _end_tool_lines()  # before the answer, as they were printed
        out = result_of(values, session.thread_id, session.statuses)
    if args.events:
        session.events.write({"event": "result", **out})
    elif args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2, default=str))
        for line in _notes_lines(out):
            session.display.line(line)
    else:
        print(out.get("final_answer") or "")
        for line in _notes_lines(out):
            session.display.line(line)
        if out.get("status") != "done":
            session.display.line(f"[status: {out.get('status')}]")
    return 0 if out.get("status") in ("done", "step_limit") else 1


def cmd_chat(args: argparse.Namespace) -> int:
    tty = sys.stdin.isatty()
    with _session(args, "chat") as session:
        display = session.display
        display.stop()
        display.line(f"thread {session.thread_id} (resume it with --thread "
                     f"{session.thread_id}); an empty line, exit or quit ends the chat")
        first = session.unfinished()  # finish the interrupted turn before a new one
        while True:
            payload: Any = None
            if not first:
                line = _read_line("you> ", tty)
                if line is None or line.strip().lower() in ("", *CHAT_QUIT_WORDS):
                    break
                payload = {"messages": [("user", _typed(line).strip())], **_mode(args)}
            display.start()
            try:
                values = session.run(payload)
            except RunFailed as failed:
                if not first:
                    raise
                # The interrupted turn fails again (a model that raises on it): the chat
                # goes on, and its next message closes that turn, as ask's does. Raised,
                # it ended every chat on the thread before a message could be typed.
                display.stop()
                display.line(f"error: that turn failed again ({failed}); a new message "
                             "goes on from it")
                first = False
                continue
            finally:
                display.stop()  # the spinner first: the ended lines go below it
                _end_tool_lines()
            first = False
            display.stop()
            display.clear_preview()
            out = result_of(values, session.thread_id, session.statuses)
            if args.json:
                print(json.dumps(out, ensure_ascii=False, default=str), flush=True)
            else:
                print(out.get("final_answer") or "", flush=True)
                for line in _notes_lines(out):
                    display.line(line)
                if out.get("status") != "done":
                    display.line(f"[status: {out.get('status')}]")
    return 0


def _read_line(prompt: str, tty: bool) -> str | None:
    if tty:
        # On stderr, as input() writes it when fd 1 is stdout's: sys.stdout is not during
        # a session (_stdout_kept), and input() would write the prompt there — into the
        # answer's file for ``ask … > answer.txt``, unseen by the person at the terminal.
        sys.stderr.write(prompt)
        sys.stderr.flush()
        try:
            return input()
        except EOFError:
            return None
    line = sys.stdin.readline()
    return line if line else None


# -- the other commands ------------------------------------------------------------------------


def cmd_tools(args: argparse.Namespace) -> int:
    from callgate.toolset import default_toolset

    with phase(ConfigError, ValueError, OSError):
        toolset = default_toolset(args.tools_file)
    print("Tools offered to the model:")
    for tool in toolset.registry:
        flags = [tool.source]
        if tool.sensitive:
            flags.append("needs approval")
        if tool.timeout_s:
            flags.append(f"timeout {tool.timeout_s:g}s")
        first_line = tool.description.strip().splitlines()[0] if tool.description else ""
        print(f"  {tool.name:<18} {first_line[:70]}  [{', '.join(flags)}]")
    missing = [s for s in toolset.statuses if not s.available]
    if missing:
        print("\nBuilt-in tools not offered:")
        for status in missing:
            print(f"  {status.name:<18} {status.reason}")
    if toolset.tools_file:
        print(f"\nFrom {toolset.tools_file}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from callgate.tools.stats import UsageStats

    path = Path(args.db).expanduser() if args.db else _home() / "stats.sqlite"
    if args.db and not path.exists():
        # A mistyped path had read as "no usage recorded" (and left an empty file there).
        raise StatsError(f"no statistics file at {path}", "stats --db names the stats.sqlite "
                                                          "a run wrote; without it, the "
                                                          "callgate home's")
    with phase(StatsError, sqlite3.Error, OSError):
        stats = UsageStats(path)
        if args.reset:
            stats.reset()
            print("statistics reset")
            return 0
        summary = stats.summary() if args.json else stats.table()
    print(json.dumps(summary, indent=2) if args.json else summary)
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from callgate.tools.builtin import BuiltinSettings
    from callgate.tools.index import DocumentIndex

    index_path = Path(args.index or BuiltinSettings.from_env().index_path).expanduser()
    target = Path(args.path).expanduser()
    if not target.exists():
        raise UserError(f"no such file or folder: {target}", "give a .md, .txt or .pdf file, "
                                                             "or a folder of them")
    with phase(DocumentIndexError, sqlite3.Error, OSError, ValueError):
        index = DocumentIndex(index_path)
        if target.is_dir():
            report = index.add_folder(target, scope=args.scope)
        else:
            done = index.add_file(target, scope=args.scope)
    if target.is_dir():
        print(f"indexed {len(report.files)} file(s), {report.chunks} chunk(s) into {index_path} "
              f"(scope {args.scope}); {len(report.skipped)} skipped")
        for path, why in report.skipped:
            print(f"  skipped {path}: {why}")
        if not report.files and not report.skipped:
            print(f"note: no .md, .txt or .pdf file under {target}", file=sys.stderr)
    else:
        print(f"indexed {done.path}: {done.chunks} chunk(s) into {index_path}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="callgate", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer one question, using tools")
    ask.add_argument("question", nargs="?", help="the question (optional with --thread)")
    output = ask.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help="print one JSON object: final_answer, status, tool_events, "
                             "citations, thread_id (and problems)")
    output.add_argument("--events", action="store_true",
                        help="stream JSON lines: status, tool_start, tool_end, token, "
                             "approval, and a final result")
    _agent_options(ask)
    ask.set_defaults(func=cmd_ask)

    chat = sub.add_parser("chat", help="a conversation, persisted and resumable")
    chat.add_argument("--json", action="store_true", help="one JSON object per answer")
    _agent_options(chat)
    chat.set_defaults(func=cmd_chat)

    tools = sub.add_parser("tools", help="list the tools and why some are not offered")
    tools.add_argument("--tools", dest="tools_file", help="a tools.yml file")
    _debug_option(tools)
    tools.set_defaults(func=cmd_tools)

    stats = sub.add_parser("stats", help="usage statistics per tool")
    stats.add_argument("--db", help="statistics file (default stats.sqlite in $CALLGATE_HOME)")
    stats.add_argument("--json", action="store_true",
                       help="a JSON list instead of the table: one object per tool, "
                            "with every figure")
    stats.add_argument("--reset", action="store_true",
                       help="forget every recorded call (the file stays)")
    _debug_option(stats)
    stats.set_defaults(func=cmd_stats)

    index = sub.add_parser("index", help="add documents to the rag_search index")
    index.add_argument("path", help="a file or folder (.md, .txt, .pdf)")
    index.add_argument("--scope", default="global", type=_scope,
                       help="a thread id, or 'global'")
    index.add_argument("--index", help="index file (default $CALLGATE_INDEX)")
    _debug_option(index)
    index.set_defaults(func=cmd_index)

    from callgate.eval.cli import add_commands

    add_commands(sub)
    own_usage(sub)
    return parser


def own_usage(subcommands: argparse._SubParsersAction) -> None:
    """Each subcommand says its own usage for a mistake ``main`` finds (argparse would say
    the top level's)."""
    for command in subcommands.choices.values():
        command.set_defaults(usage=command)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    # argparse reports a subcommand's unknown argument with the top-level usage; the
    # subcommand's says what it takes (not for one written before the subcommand).
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        before = argv[:argv.index(args.command)] if args.command in argv else argv
        blamed = parser if set(unknown) & set(before) else getattr(args, "usage", parser)
        blamed.error(f"unrecognized arguments: {' '.join(unknown)}")
    if sys.stdout is None:  # started with stdout closed (>&-): nowhere for the output
        if sys.stderr is not None:
            print("error: standard output is closed: there is nowhere to write the output "
                  "(hint: redirect it to a file, or to /dev/null)", file=sys.stderr)
        return 2
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed stdout is found here, not in the flush at exit
        return code
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        stdout_closed()
    except Exception as exc:
        error = as_user_error(exc, getattr(args, "tool_choice", None))
        if error is None:
            raise
        if getattr(args, "debug", False):
            import traceback

            traceback.print_exc()
        if getattr(args, "events", False):
            EventSink(True).write({"event": "error", "message": str(error),
                                   "hint": error.hint})
        hint = f" (hint: {error.hint})" if error.hint else ""
        print(f"error: {error}{hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Run as ``python -m callgate.cli``: this module is then ``__main__``, and the errors the
    # eval commands raise are ``callgate.cli``'s classes; run that module's ``main``.
    from callgate.cli import main as cli_main

    sys.exit(cli_main())
