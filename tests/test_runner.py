"""run_tool: own thread per call, timeouts, cancellation (cooperative or abandoned), tool
names providers accept, and to_jsonable (any output becomes JSON-safe data, never raises).

Every tool here is a real Python function, LangChain tool or MCP server (FastMCP over stdio);
blocking tools block on threading.Event objects that each test releases at its end.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import json
import math
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from enum import Enum, IntEnum
from pathlib import Path
from typing import Annotated, Any, TypedDict
from uuid import UUID

import numpy as np
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolArg, StructuredTool
from langchain_core.tools import tool as lc_tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import BaseModel

from callgate.graph.cancellation import CancelToken
from callgate.tools import runner
from callgate.tools.mcp import load_mcp_tools_into_sync
from callgate.tools.registry import Tool, ToolRegistry, check_tool_name
from callgate.tools.runner import ToolRun, abandoned_threads, run_tool, to_jsonable


def registered(func: Callable[..., Any] | StructuredTool, **options: Any) -> Tool:
    return ToolRegistry().register(func, **options)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event hung tools wait on; set at the end of the test, and their threads joined."""
    event = threading.Event()
    before = set(threading.enumerate())
    yield event
    event.set()
    # Released tools finish: their workers end or go back to idle (reused by later calls).
    deadline = time.monotonic() + 5
    busy = [t for t in set(threading.enumerate()) - before if _running_a_tool(t)]
    while busy and time.monotonic() < deadline:
        time.sleep(0.02)
        busy = [t for t in busy if _running_a_tool(t)]
    assert not busy, f"{[t.name for t in busy]} did not finish after their release"


def _running_a_tool(thread: threading.Thread) -> bool:
    return (thread.is_alive() and thread.name.startswith("callgate-tool-")
            and thread.name != "callgate-tool-idle")


def json_safe(value: Any) -> Any:
    """Strict JSON, UTF-8 encodable, round-trips to the same value."""
    text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    assert json.loads(text) == value
    return value


# -- running ------------------------------------------------------------------------------

def test_sync_tool_runs_in_its_own_thread() -> None:
    def where(city: str) -> dict[str, Any]:
        """Where it ran."""
        return {"city": city, "thread": threading.current_thread().name}

    run = run_tool(registered(where), {"city": "Paris"}, timeout_s=5)
    assert isinstance(run, ToolRun)
    assert (run.outcome, run.abandoned, run.note) == ("ok", False, None)
    assert run.data == {"city": "Paris", "thread": "callgate-tool-where"}
    assert 0 < run.duration_ms < 5000


def test_async_function_runs_on_a_loop_in_its_thread() -> None:
    async def pause(ms: int) -> list[Any]:
        """Sleeps, asynchronously."""
        await asyncio.sleep(ms / 1000)
        return [threading.current_thread().name, asyncio.get_running_loop().is_running()]

    started = time.perf_counter()
    run = run_tool(registered(pause), {"ms": 30}, timeout_s=5)
    assert run.outcome == "ok" and run.data == ["callgate-tool-pause", True]
    assert run.duration_ms >= 30 and time.perf_counter() - started < 2
    assert run_tool(registered(pause), {"ms": 0}, timeout_s=math.inf).outcome == "ok"


def test_runs_from_inside_a_running_event_loop() -> None:
    async def caller() -> ToolRun:
        async def twice(n: int) -> int:
            """Double."""
            return 2 * n

        return run_tool(registered(twice), {"n": 21}, timeout_s=5)  # blocks, on purpose

    assert asyncio.run(caller()).data == 42


def test_langchain_tools_sync_and_async_only() -> None:
    @lc_tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    async def halve(n: float) -> float:
        return n / 2

    async_only = StructuredTool.from_function(coroutine=halve, name="halve",
                                              description="Half of n.")
    assert run_tool(registered(shout), {"text": "hi"}, timeout_s=5).data == "HI"
    assert run_tool(registered(async_only), {"n": 3}, timeout_s=5).data == 1.5


def test_tool_exceptions_propagate_unchanged() -> None:
    failure = ConnectionError("upstream refused")

    def flaky() -> str:
        """Always fails."""
        raise failure

    async def afail() -> str:
        """Fails asynchronously."""
        raise failure

    for func in (flaky, afail):
        with pytest.raises(ConnectionError) as caught:
            run_tool(registered(func), {}, timeout_s=5)
        assert caught.value is failure


def test_caller_context_reaches_the_tool() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")

    def whoami() -> str:
        """The caller's request id."""
        return request_id.get("unset")

    async def awhoami() -> str:
        """The caller's request id, async."""
        return request_id.get("unset")

    request_id.set("req-7")
    assert run_tool(registered(whoami), {}, timeout_s=5).data == "req-7"
    assert run_tool(registered(awhoami), {}, timeout_s=5).data == "req-7"


class Streamed(TypedDict, total=False):
    data: Any


async def test_from_a_sync_langgraph_node_under_invoke_and_ainvoke() -> None:
    """The way the graph uses it: a sync node; the tool streams through LangGraph's writer."""
    def progress(step: int) -> str:
        """Reports progress on the graph's custom stream."""
        get_stream_writer()({"progress": step})
        return f"step {step} done"

    tool = registered(progress)

    def node(state: Streamed) -> Streamed:
        return {"data": run_tool(tool, {"step": 1}, timeout_s=5).data}

    builder = StateGraph(Streamed)
    builder.add_node("call", node)
    builder.add_edge(START, "call")
    builder.add_edge("call", END)
    graph = builder.compile()
    assert graph.invoke({})["data"] == "step 1 done"
    assert await graph.ainvoke({}) == {"data": "step 1 done"}
    chunks = [c async for c in graph.astream({}, stream_mode="custom")]
    assert chunks == [{"progress": 1}]


# -- timeouts and cancellation ------------------------------------------------------------

def test_timeout_abandons_a_sync_tool_that_ignores_it(release: threading.Event) -> None:
    ticks: list[float] = []

    def stubborn() -> str:
        """Keeps working whatever happens."""
        while not release.wait(0.01):
            ticks.append(time.perf_counter())
        return "finished"

    baseline = abandoned_threads()
    started = time.perf_counter()
    run = run_tool(registered(stubborn), {}, timeout_s=0.15)
    elapsed = time.perf_counter() - started
    assert (run.outcome, run.data, run.abandoned) == ("timeout", None, True)
    # The tool runs until released: returning at all shows the run did not wait for it. The
    # upper bound is loose on purpose (a loaded CI machine can pause a process ~0.3 s).
    assert 0.15 <= elapsed < 5
    assert run.note is not None and "abandoned after the 0.15 s timeout" in run.note
    assert "side effects may still happen" in run.note
    assert abandoned_threads() == baseline + 1
    count = len(ticks)
    time.sleep(0.1)
    assert len(ticks) > count  # what the note says: the thread keeps running
    release.set()
    deadline = time.monotonic() + 5
    while abandoned_threads() > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert abandoned_threads() == baseline


def test_cancel_returns_promptly(release: threading.Event) -> None:
    def blocked() -> str:
        """Blocks until released."""
        release.wait()
        return "late"

    token = CancelToken()
    threading.Timer(0.1, token.cancel).start()
    started = time.perf_counter()
    run = run_tool(registered(blocked), {}, timeout_s=30, token=token)
    elapsed = time.perf_counter() - started
    assert (run.outcome, run.data, run.abandoned) == ("cancelled", None, True)
    assert elapsed < 5  # the tool blocks until released: loose bound, as above
    assert run.note is not None and run.note.startswith("abandoned after cancel")


def test_cancelled_before_start_never_runs() -> None:
    ran: list[int] = []

    def effect() -> None:
        """Records that it ran."""
        ran.append(1)

    token = CancelToken()
    token.cancel()
    run = run_tool(registered(effect), {}, timeout_s=5, token=token)
    assert (run.outcome, run.abandoned) == ("cancelled", False)
    assert "did not run" in (run.note or "")
    time.sleep(0.05)
    assert ran == []


def careful_writer(path: Path) -> Callable[..., str]:
    def careful(lines: int, cancel: CancelToken) -> str:
        """Writes a line every 20 ms, stopping when cancelled."""
        for i in range(lines):
            if cancel.cancelled:
                return "stopped"
            with path.open("a") as out:
                out.write(f"{i} {time.perf_counter()}\n")
            time.sleep(0.02)
        with path.open("a") as out:
            out.write("finished\n")
        return "done"

    return careful


@pytest.mark.parametrize("how", ["timeout", "cancel"])
def test_cooperative_tool_stops(tmp_path: Path, how: str) -> None:
    out = tmp_path / "lines.txt"
    tool = registered(careful_writer(out))
    assert tool.cancel_param == "cancel"
    token = CancelToken()
    if how == "cancel":
        threading.Timer(0.1, token.cancel).start()
    # A generous grace: on a busy machine the tool may need a while to see its token.
    run = run_tool(tool, {"lines": 100}, timeout_s=0.1 if how == "timeout" else 30,
                   token=token, grace_s=1)
    returned = time.perf_counter()
    assert run.outcome == ("timeout" if how == "timeout" else "cancelled")
    assert run.abandoned is False and run.note is not None and run.note.startswith("stopped")
    time.sleep(0.15)  # it would have written ~7 more lines by now
    written = out.read_text().splitlines()
    assert "finished" not in written and 1 <= len(written) < 20
    assert all(float(line.split()[1]) < returned for line in written)


def test_cancel_param_is_not_shown_to_the_model(tmp_path: Path) -> None:
    tool = registered(careful_writer(tmp_path / "x.txt"))
    assert tool.schema["properties"] == {"lines": {"type": "integer"}}
    assert tool.schema["required"] == ["lines"]
    check = ToolRegistry([tool]).validate({"tool": "careful", "args": {"lines": 1,
                                                                        "cancel": True}})
    assert check.valid and check.args == {"lines": 1} and check.dropped == ("cancel",)
    # Called the LangChain way (ToolNode, create_agent): the tool gets a token of its own.
    assert tool.runnable.invoke({"lines": 1}) == "done"


def test_langchain_tool_with_injected_token_cooperates() -> None:
    seen: list[bool] = []

    @lc_tool
    def poll(cancel: Annotated[CancelToken, InjectedToolArg]) -> str:
        """Waits until cancelled."""
        while not cancel.cancelled:
            time.sleep(0.005)
        seen.append(True)
        return "stopped"

    tool = registered(poll)
    assert tool.cancel_param == "cancel" and "cancel" not in tool.schema.get("properties", {})
    run = run_tool(tool, {}, timeout_s=0.1, grace_s=1)
    assert (run.outcome, run.abandoned, seen) == ("timeout", False, [True])


def test_async_tool_is_cancelled_not_abandoned(tmp_path: Path) -> None:
    marker = tmp_path / "after.txt"
    cleaned: list[str] = []

    async def slow_async(seconds: float) -> str:
        """Sleeps, then writes a file."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise
        marker.write_text("ran")
        return "done"

    token = CancelToken()
    threading.Timer(0.05, token.cancel).start()
    cancelled = run_tool(registered(slow_async), {"seconds": 3}, timeout_s=5, token=token,
                         grace_s=1)
    timed_out = run_tool(registered(slow_async), {"seconds": 3}, timeout_s=0.05, grace_s=1)
    for run in (cancelled, timed_out):
        assert run.abandoned is False and run.duration_ms < 1000
    assert (cancelled.outcome, timed_out.outcome) == ("cancelled", "timeout")
    assert cleaned == ["cancelled", "cancelled"]
    assert not marker.exists()  # not abandoned: the coroutine is over, it never will be


def test_hundred_hung_tools_do_not_starve_later_ones(release: threading.Event) -> None:
    def hang(i: int) -> int:
        """Never returns (until the test ends)."""
        release.wait()
        return i

    def quick(i: int) -> int:
        """Returns at once."""
        return i + 1

    hung_tool, quick_tool = registered(hang), registered(quick)
    started = time.perf_counter()
    with ThreadPoolExecutor(100) as pool:  # 100 runs at once, as 100 graph tasks would be
        runs = list(pool.map(lambda i: run_tool(hung_tool, {"i": i}, timeout_s=0.2),
                             range(100)))
    assert {(r.outcome, r.abandoned) for r in runs} == {("timeout", True)}
    hung = [t for t in threading.enumerate() if t.name == "callgate-tool-hang"]
    assert len(hung) == 100
    results = [run_tool(quick_tool, {"i": i}, timeout_s=1) for i in range(20)]
    assert [r.data for r in results] == list(range(1, 21))
    assert all(r.outcome == "ok" for r in results)
    assert time.perf_counter() - started < 5


def test_bad_timeout_is_refused() -> None:
    def noop() -> None:
        """Nothing."""

    for bad in (0, -1, math.nan):
        with pytest.raises(ValueError, match="timeout_s must be a positive"):
            run_tool(registered(noop), {}, timeout_s=bad)


# -- MCP (a real FastMCP server over stdio) -----------------------------------------------

MCP_SERVER = """
import asyncio
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("runner-test")


@mcp.tool()
def count_words(text: str) -> int:
    \"\"\"Count words.\"\"\"
    return len(text.split())


@mcp.tool()
async def wait_long(seconds: float) -> str:
    \"\"\"Waits.\"\"\"
    await asyncio.sleep(seconds)
    return "waited"


if __name__ == "__main__":
    mcp.run("stdio")
"""


@pytest.mark.server
def test_mcp_tool_runs_and_times_out(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(MCP_SERVER)
    registry = ToolRegistry()
    load_mcp_tools_into_sync(registry, {"t": {"transport": "stdio", "command": sys.executable,
                                              "args": [str(script)]}})
    counted = run_tool(registry.get("count_words"), {"text": "one two three"}, timeout_s=30)
    assert counted.outcome == "ok" and "3" in json.dumps(counted.data)
    run = run_tool(registry.get("wait_long"), {"seconds": 60}, timeout_s=1)
    assert run.outcome == "timeout" and run.duration_ms < 1000 + 500
    if run.abandoned:  # the stdio client was still closing its session when the grace ended
        assert "its task was cancelled" in (run.note or "")


# -- outputs ------------------------------------------------------------------------------

def test_non_utf8_bytes_and_odd_outputs_become_results() -> None:
    def blob() -> bytes:
        """Binary data."""
        return b"\x89PNG\r\n\x1a\n" + bytes(range(256))

    def text_bytes() -> bytes:
        """UTF-8 bytes."""
        return "héllo".encode()

    def a_set() -> set[str]:
        """A set."""
        return {"b", "c", "a"}

    def a_message() -> ToolMessage:
        """A ToolMessage."""
        return ToolMessage(content="from a message", tool_call_id="x")

    def a_command() -> Command:
        """A Command carrying a ToolMessage."""
        return Command(update={"messages": [ToolMessage(content="from a command",
                                                        tool_call_id="x")]})

    def a_thread() -> threading.Lock:
        """An unserialisable object."""
        return threading.Lock()

    data = {f.__name__: run_tool(registered(f), {}, timeout_s=5).data
            for f in (blob, text_bytes, a_set, a_message, a_command, a_thread)}
    assert data["blob"]["type"] == "bytes" and data["blob"]["size"] == 264
    assert data["text_bytes"] == "héllo"
    assert data["a_set"] == ["a", "b", "c"]
    assert data["a_message"] == "from a message"
    assert data["a_command"] == "from a command"
    assert data["a_thread"].startswith("<unlocked _thread.lock")
    json_safe(data)


def test_a_reply_marked_as_an_error_fails_the_call() -> None:
    # LangChain's ToolMessage(status="error") is a failed call: it had been an "ok" result,
    # cited as the answer's source, with no problem reported.
    def a_message() -> ToolMessage:
        """A failure, as a ToolMessage."""
        return ToolMessage(content="Error: the index is offline", tool_call_id="x",
                           status="error")

    def a_command() -> Command:
        """A failure, in a Command."""
        return Command(update={"messages": [ToolMessage(
            content=[{"type": "text", "text": "offline"}], tool_call_id="x", status="error")]})

    with pytest.raises(runner.ToolError, match="^Error: the index is offline$"):
        run_tool(registered(a_message), {}, timeout_s=5)
    with pytest.raises(runner.ToolError, match="offline"):
        run_tool(registered(a_command), {}, timeout_s=5)


def test_bytes() -> None:
    raw = b"\xff\xfe" + bytes(200)
    out = to_jsonable(raw)
    assert out["type"] == "bytes" and out["size"] == 202
    assert base64.b64decode(out["base64"]) == raw  # whole: the store keeps the result
    assert to_jsonable(bytearray(b"abc")) == "abc"
    assert to_jsonable(memoryview(b"\xc3\xa9")) == "é"
    assert to_jsonable([b"\x80"])[0]["size"] == 1
    assert to_jsonable(b"") == ""


class Color(Enum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


@dataclass
class Node:
    name: str
    tags: set[str] = field(default_factory=set)
    children: list[Node] = field(default_factory=list)
    parent: Node | None = None


class Report(BaseModel):
    title: str
    when: datetime
    raw: bytes
    flags: frozenset[int]


def test_sets_tuples_records_and_scalars() -> None:
    assert to_jsonable({3, 1, 2}) == [1, 2, 3]
    assert to_jsonable(frozenset({"b", "a"})) == ["a", "b"]
    mixed = to_jsonable({1, "a", (2, 3), None})
    assert sorted(map(json.dumps, mixed)) == sorted(map(json.dumps, [1, "a", [2, 3], None]))
    assert to_jsonable({1, "a", (2, 3), None}) == mixed  # the same order every time
    assert to_jsonable((1, (2, deque([3])))) == [1, [2, [3]]]
    assert to_jsonable(Node("n", {"y", "x"})) == {"name": "n", "tags": ["x", "y"],
                                                 "children": [], "parent": None}
    report = Report(title="t", when=datetime(2026, 11, 23, 12, 0, tzinfo=UTC), raw=b"\xff",
                    flags=frozenset({2, 1}))
    assert to_jsonable(report) == {"title": "t", "when": "2026-11-23T12:00:00Z",
                                   "raw": {"type": "bytes", "size": 1, "base64": "/w=="},
                                   "flags": [1, 2]}
    assert to_jsonable([date(2026, 1, 2), timedelta(seconds=90), Decimal("1.10"),
                        UUID(int=1), Path("/tmp/x"), Color.RED, Level.HIGH]) == [
        "2026-01-02", "PT1M30S", "1.10", "00000000-0000-0000-0000-000000000001", "/tmp/x",
        "red", 3]
    assert to_jsonable([math.nan, math.inf, -math.inf, 1.5]) == ["NaN", "Infinity",
                                                                 "-Infinity", 1.5]
    assert to_jsonable({1: "a", None: "b", False: "c", (1, 2): "d", 2.5: "e"}) == {
        "1": "a", "null": "b", "false": "c", "[1, 2]": "d", "2.5": "e"}
    assert to_jsonable(np.arange(3)) == [0, 1, 2] and to_jsonable(np.float32(0.5)) == 0.5
    json_safe(to_jsonable(report))


def test_cycles_are_marked() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert to_jsonable(loop) == [1, "<cycle: this list contains itself>"]
    mapping: dict[str, Any] = {"a": 1}
    mapping["self"] = mapping
    assert to_jsonable(mapping) == {"a": 1, "self": "<cycle: this dict contains itself>"}
    root = Node("root")
    root.children.append(Node("leaf", parent=root))
    out = json_safe(to_jsonable(root))
    assert out["children"][0]["parent"] == "<cycle: this Node contains itself>"
    shared = [1, 2]
    assert to_jsonable([shared, shared]) == [[1, 2], [1, 2]]  # shared is not a cycle


def test_deep_nesting_is_cut_without_recursion_error() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    out = json_safe(to_jsonable(deep))
    levels = 0
    while isinstance(out, list):
        out, levels = out[0], levels + 1
    assert levels == runner.MAX_DEPTH
    assert out == f"<cut: list nested more than {runner.MAX_DEPTH} levels deep>"


def test_shared_reference_bomb_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "MAX_VALUES", 10_000)
    bomb: list[Any] = [0] * 10
    for _ in range(12):  # 10**13 values if expanded
        bomb = [bomb] * 10
    started = time.perf_counter()
    text = json.dumps(to_jsonable(bomb))
    assert "<cut: more than 10,000 values in this result>" in text
    assert time.perf_counter() - started < 2 and len(text) < 2_000_000


def test_huge_and_hostile_values_never_raise() -> None:
    big = "x" * 10_000_000
    assert to_jsonable(big) is big  # nothing truncated for size
    wide = "é" * 5_000_000
    assert to_jsonable({"text": wide})["text"] is wide
    assert to_jsonable("a\ud800b") == "a\ufffdb"  # lone surrogate: not encodable
    assert to_jsonable({"k\udcff": 1}) == {"k\ufffd": 1}

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    class Chatty:
        def __repr__(self) -> str:
            return "y" * 1_000_000

    assert to_jsonable(Hostile()) == "<Hostile object (repr failed: RuntimeError)>"
    chatty = to_jsonable(Chatty())
    assert chatty.startswith("y" * runner.REPR_CHARS) and chatty.endswith("characters)")
    assert len(chatty) < runner.REPR_CHARS + 40

    def endless() -> Iterator[int]:
        n = 0
        while True:
            yield n
            n += 1

    assert to_jsonable(endless()).startswith("<generator object")  # not consumed
    huge_int = to_jsonable(10 ** 5000)
    assert isinstance(huge_int, str) and "bits" in huge_int
    assert to_jsonable(2 ** 100) == 2 ** 100
    json_safe([to_jsonable(v) for v in (Hostile(), Chatty(), endless(), 10 ** 5000,
                                         {"nested": [{1, 2}, b"\xff", Hostile()]})])


# -- tool names ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["get_weather", "a", "A-b_9", "x" * 64])
def test_accepted_tool_names(name: str) -> None:
    check_tool_name(name)


@pytest.mark.parametrize("name", ["", "x" * 65, "get weather", "ns.tool", "get_weathеr",
                                  "zero\u200bwidth", "tool\n", "<lambda>"])
def test_rejected_tool_names(name: str) -> None:
    with pytest.raises(ValueError, match="is not accepted by model providers: use 1 to 64 "
                                         "letters, digits, '_' or '-'"):
        check_tool_name(name)


def test_register_checks_names() -> None:
    def fine() -> None:
        """Fine."""

    registry = ToolRegistry()
    with pytest.raises(ValueError, match="'my tool' is not accepted"):
        registry.register(fine, name="my tool")
    with pytest.raises(ValueError, match="'<lambda>' is not accepted"):
        registry.register(lambda: None, description="anonymous")

    @lc_tool("web.search")
    def search(query: str) -> str:
        """Search."""
        return query

    with pytest.raises(ValueError, match="'web.search' is not accepted"):
        registry.register(search)
    registry.register(search, name="web_search")
    assert registry.names == ["web_search"]
