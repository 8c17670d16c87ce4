"""Durable execution: a crash resumes without re-running finished work; big results stay
out of the checkpoint; hung tools cannot starve the process; any tool output is a result.

Models are ``ScriptedChatModel`` (fixed replies, not a language model); tools are plain
Python functions whose side effects are appended to files, so a second run would show.
Processes are killed with SIGKILL, the real thing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

import callgate
from callgate import build_agent
from callgate.eval.overhead import checkpointer_bytes
from callgate.graph.cancellation import pending_requests
from callgate.models.scripted import ScriptedChatModel, tool_call
from callgate.persistence import open_persistence

REPO = Path(__file__).resolve().parents[1]

TOOLS = '''
import time
from pathlib import Path
from callgate import ToolRegistry
HERE = Path({here!r})

def fast(tag: str) -> str:
    """Append a line, at once."""
    with (HERE / "fast.log").open("a") as log:
        log.write(tag + "\\n")
    return "fast " + tag

def slow(tag: str) -> str:
    """Append a line, after a while."""
    (HERE / "slow.started").write_text(tag)
    time.sleep(float((HERE / "slow.seconds").read_text()))
    with (HERE / "slow.log").open("a") as log:
        log.write(tag + "\\n")
    return "slow " + tag

def wipe(target: str) -> str:
    """Wipe something (sensitive)."""
    with (HERE / "wipe.log").open("a") as log:
        log.write(target + "\\n")
    return "wiped " + target

def registry():
    reg = ToolRegistry()
    reg.register(fast)
    reg.register(slow, timeout_s=60)
    reg.register(wipe, sensitive=True)
    return reg
'''

RUNNER = '''
import asyncio, sys
sys.path.insert(0, {here!r})
from langchain_core.messages import AIMessage
from langgraph.types import Command
from callgate import build_agent
from callgate.models.scripted import ScriptedChatModel
from durable_tools import registry

STEP = AIMessage("", tool_calls=[
    {{"name": n, "args": {{"tag": "x"}} if n != "wipe" else {{"target": "tmp"}}, "id": "c" + n,
      "type": "tool_call"}} for n in {names!r}])
CONFIG = {{"configurable": {{"thread_id": "t"}}}}
mode, action = sys.argv[1], sys.argv[2]
# A new process after the kill: the model's step is in the checkpoint, only its answer is due.
model = ScriptedChatModel(script=[STEP, AIMessage("all done [R1]")] if action == "ask" else
                          [AIMessage("all done [R1]")])
payload = {{"messages": [("user", "go")]}} if action == "ask" else (
    Command(resume={{"action": "approve"}}) if action == "approve" else
    {{"messages": [("user", "and now?")]}} if action == "new" else None)

def run_sync():
    from langgraph.checkpoint.sqlite import SqliteSaver
    with SqliteSaver.from_conn_string({db!r}) as saver:
        out = build_agent(model, registry(), checkpointer=saver).invoke(payload, CONFIG)
    print("STATUS", out.get("status"), "INTERRUPT" if "__interrupt__" in out else "")

async def run_async():
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    async with AsyncSqliteSaver.from_conn_string({db!r}) as saver:
        out = await build_agent(model, registry(), checkpointer=saver).ainvoke(payload, CONFIG)
    print("STATUS", out.get("status"), "INTERRUPT" if "__interrupt__" in out else "")

def run_persisted():  # a checkpointer and a store in one SQLite file, as the CLI's --db
    from callgate.persistence import open_persistence
    with open_persistence({db!r}) as p:
        out = build_agent(model, registry(), checkpointer=p.checkpointer,
                          store=p.store).invoke(payload, CONFIG)
    print("STATUS", out.get("status"), "INTERRUPT" if "__interrupt__" in out else "")

{{"sync": run_sync, "persisted": run_persisted}}.get(mode, lambda: asyncio.run(run_async()))()
'''


def _write(tmp_path: Path, names: list[str]) -> Path:
    (tmp_path / "durable_tools.py").write_text(TOOLS.format(here=str(tmp_path)))
    script = tmp_path / "runner.py"
    script.write_text(RUNNER.format(here=str(tmp_path), names=names,
                                    db=str(tmp_path / "cp.sqlite")))
    return script


ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # the checkout's callgate, wherever it is installed


def _run(script: Path, mode: str, action: str) -> str:
    done = subprocess.run([sys.executable, str(script), mode, action], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _kill_while_slow(script: Path, tmp_path: Path, mode: str, action: str) -> None:
    """Start a run, wait until the slow call is under way (the fast one done), SIGKILL it."""
    proc = subprocess.Popen([sys.executable, str(script), mode, action], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (tmp_path / "slow.started").exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the slow call never started"
        time.sleep(0.05)
    time.sleep(0.5)  # the fast call's write reaches the checkpointer
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sigkill_mid_step_resumes_only_the_unfinished_call(tmp_path: Path, mode: str) -> None:
    script = _write(tmp_path, ["fast", "slow"])
    (tmp_path / "slow.seconds").write_text("30")
    _kill_while_slow(script, tmp_path, mode, "ask")
    assert _lines(tmp_path / "fast.log") == ["x"] and _lines(tmp_path / "slow.log") == []
    (tmp_path / "slow.seconds").write_text("0")
    out = _run(script, mode, "resume")  # a new process: invoke(None, config)
    assert "STATUS done" in out
    assert _lines(tmp_path / "fast.log") == ["x"]  # exactly once: its write was kept
    assert _lines(tmp_path / "slow.log") == ["x"]  # the unfinished call ran
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        state = build_agent(ScriptedChatModel(), [], checkpointer=saver).get_state(
            {"configurable": {"thread_id": "t"}}).values
    assert [(e["tool"], e["outcome"]) for e in state["tool_events"]] == [
        ("fast", "ok"), ("slow", "ok")]


def test_a_new_message_after_sigkill_keeps_the_finished_calls_result(tmp_path: Path) -> None:
    # Not a resume: the new message discards the killed step's pending writes, and the
    # fast call's result comes from the store instead.
    script = _write(tmp_path, ["fast", "slow"])
    (tmp_path / "slow.seconds").write_text("30")
    _kill_while_slow(script, tmp_path, "persisted", "ask")
    (tmp_path / "slow.seconds").write_text("0")
    assert "STATUS done" in _run(script, "persisted", "new")
    assert _lines(tmp_path / "fast.log") == ["x"] and _lines(tmp_path / "slow.log") == []
    with open_persistence(str(tmp_path / "cp.sqlite")) as persistence:
        agent = build_agent(ScriptedChatModel(), [], checkpointer=persistence.checkpointer,
                            store=persistence.store)
        state = agent.get_state({"configurable": {"thread_id": "t"}}).values
    fast, slow = state["tool_events"]
    assert (fast["tool"], fast["outcome"], fast["summary"]) == ("fast", "ok", "[fast] fast x")
    assert (slow["tool"], slow["outcome"]) == ("slow", "cancelled")
    assert "before this call's result was recorded" in slow["error"]
    replies = [m.content for m in state["messages"] if m.type == "tool"]
    assert replies[0] == "[R1] [fast] fast x" and "not run (cancelled)" in replies[1]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_new_message_after_sigkill_keeps_a_result_only_the_checkpointer_has(
        tmp_path: Path, mode: str) -> None:
    # A SQLite checkpointer with build_agent's default store (in memory, gone with the
    # process): the fast call's result survived only as a pending write of the killed
    # step, which LangGraph drops for a new message, and the call was reported cancelled.
    script = _write(tmp_path, ["fast", "slow"])
    (tmp_path / "slow.seconds").write_text("30")
    _kill_while_slow(script, tmp_path, mode, "ask")
    (tmp_path / "slow.seconds").write_text("0")
    assert "STATUS done" in _run(script, mode, "new")
    assert _lines(tmp_path / "fast.log") == ["x"] and _lines(tmp_path / "slow.log") == []
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        state = build_agent(ScriptedChatModel(), [], checkpointer=saver).get_state(
            {"configurable": {"thread_id": "t"}}).values
    fast, slow = state["tool_events"]
    assert (fast["tool"], fast["outcome"], fast["summary"]) == ("fast", "ok", "[fast] fast x")
    assert (slow["tool"], slow["outcome"]) == ("slow", "cancelled")
    replies = [m.content for m in state["messages"] if m.type == "tool"]
    assert replies[0] == "[R1] [fast] fast x" and "not run (cancelled)" in replies[1]


def test_sigkill_after_approval_neither_asks_again_nor_runs_twice(tmp_path: Path) -> None:
    script = _write(tmp_path, ["wipe", "slow"])
    (tmp_path / "slow.seconds").write_text("30")
    assert "INTERRUPT" in _run(script, "sync", "ask")  # process 1: asks for approval
    _kill_while_slow(script, tmp_path, "sync", "approve")  # process 2: approved, killed
    assert _lines(tmp_path / "wipe.log") == ["tmp"]
    (tmp_path / "slow.seconds").write_text("0")
    out = _run(script, "sync", "resume")  # process 3
    assert "STATUS done" in out and "INTERRUPT" not in out  # not asked again
    assert _lines(tmp_path / "wipe.log") == ["tmp"]  # not run again
    assert _lines(tmp_path / "slow.log") == ["x"]


# --- big results stay out of the checkpoint ------------------------------------------------


def _ten_turns(db: Path, size: int) -> tuple[list[int], Any]:
    """The checkpoint's bytes after each of ten turns that each return a result of ``size``
    characters, and the last result as the store keeps it."""
    def blob(n: int) -> str:
        """A result of n characters."""
        return "z" * n

    turns = 10
    script = []
    for _ in range(turns):
        script += [tool_call("blob", {"n": size}), AIMessage("ok [R1]")]
    held = []
    with open_persistence(str(db)) as persistence:
        agent = build_agent(ScriptedChatModel(script=script), [blob],
                            checkpointer=persistence.checkpointer, store=persistence.store)
        config = {"configurable": {"thread_id": "big"}}
        for _ in range(turns):
            out = agent.invoke({"messages": [HumanMessage("again")]}, config)
            assert out["status"] == "done"
            held.append(checkpointer_bytes(str(db)))
        last = out["tool_events"][-1]["id"]
        kept = callgate.get_result(agent, config, last)
    return held, kept


def test_ten_turns_of_10_mb_results_leave_the_checkpoint_small(tmp_path: Path) -> None:
    # A scripted chat model (fixed replies) on real SQLite: sizes, not seconds, so the test
    # does not depend on the machine's speed.
    small, _ = _ten_turns(tmp_path / "small.sqlite", 1_000)
    big, kept = _ten_turns(tmp_path / "big.sqlite", 10_000_000)
    assert big[-1] - small[-1] <= 1_000_000, (big, small)
    assert len(kept) == 10_000_000  # the full result is readable from the store
    # Flat, not growing: every turn adds about what a turn with a 1,000-character result
    # adds (the summary, not the 10 MB), the tenth as well as the first.
    grown = [b - a for a, b in zip([0, *big], big, strict=False)]
    grown_small = [b - a for a, b in zip([0, *small], small, strict=False)]
    assert all(g - s <= 100_000 for g, s in zip(grown, grown_small, strict=True)), (grown,
                                                                                     grown_small)


def test_a_10_mb_error_message_leaves_the_checkpoint_small(tmp_path: Path) -> None:
    # An exception may carry a whole response body: its text went into the event, the
    # problems and every later checkpoint (80 MB after one turn, 550 MB after three).
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise ValueError("the server said: " + "e" * 10_000_000)

    db = tmp_path / "cp.sqlite"
    with open_persistence(str(db)) as persistence:
        agent = build_agent(ScriptedChatModel(script=[tool_call("fetch", {"url": "u"}),
                                                      AIMessage("It failed.")]),
                            [fetch], checkpointer=persistence.checkpointer,
                            store=persistence.store)
        out = agent.invoke({"messages": [HumanMessage("go")]},
                           {"configurable": {"thread_id": "t"}})
    [event] = out["tool_events"]
    assert event["outcome"] == "error" and event["error"].startswith(
        "ValueError: the server said: eee")
    assert len(event["error"]) < 2_100 and event["error"].endswith(
        "… (10,000,029 characters in all)")
    assert checkpointer_bytes(str(db)) < 1_000_000


# --- tools that hang, outputs that are odd -------------------------------------------------


def test_a_hung_sync_tool_100_times_leaves_later_tools_working() -> None:
    release = threading.Event()

    def hang(n: int) -> int:
        """Never returns (until the test ends)."""
        release.wait()
        return n

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    script = [tool_call("hang", {"n": 1}), AIMessage("gave up")] * 100
    script += [tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]")]
    agent = build_agent(ScriptedChatModel(script=script), [hang, add], tool_timeout_s=0.02)
    try:
        for _ in range(100):
            out = agent.invoke({"messages": [HumanMessage("hang")]})
            assert out["tool_events"][0]["outcome"] == "timeout"
        out = agent.invoke({"messages": [HumanMessage("add")]})
        assert out["tool_events"][0]["outcome"] == "ok"
    finally:
        release.set()


def _nested(depth: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize("value", [
    b"\xff\xfe not utf-8 \x80", b"plain bytes", {3, 1, 2}, frozenset({"a"}),
    {"deep": _nested(200)}, object(),
    {"when": time.gmtime(0)}, [b"\x00\xff"] * 1000, _cycle()])
def test_any_tool_output_is_a_result_not_an_exception(value: Any) -> None:
    def odd() -> Any:
        """Returns something odd."""
        return value

    agent = build_agent(ScriptedChatModel(script=[tool_call("odd", {}), AIMessage("ok")]), [odd])
    out = agent.invoke({"messages": [HumanMessage("go")]})
    assert out["status"] == "done" and out["tool_events"][0]["outcome"] in ("ok", "error")


def test_empty_messages_get_a_clear_error() -> None:
    agent = build_agent(ScriptedChatModel(script=[AIMessage("hi")]), [])
    with pytest.raises(ValueError, match="at least one message"):
        agent.invoke({"messages": []})


def test_a_run_without_a_new_message_does_not_answer_the_last_one_again() -> None:
    ran: list[int] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(a + b)
        return a + b

    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "no-new-message"}}
    agent.invoke({"messages": [HumanMessage("1 + 2?")]}, thread)
    for empty in ({"messages": []}, {"mode": "agent"}):
        with pytest.raises(ValueError, match="last message is not one"):
            agent.invoke(empty, thread)
    assert ran == [3] and model.replies_used == 2
    assert agent.get_state(thread).values["final_answer"].startswith("3")


def test_the_loops_own_correction_is_no_new_user_message() -> None:
    # A text-only scripted model writes a cut-off call, then the model server fails: the
    # thread's last message is callgate's correction, which a run without a message must
    # not answer as if the user had asked it.
    def down(_messages: list[Any]) -> str:
        raise ValueError("model server said 400")

    model = ScriptedChatModel(script=['Action: add\nAction Input: {"a": 1, "b": ', down],
                              native_tools=False, loop=True)
    agent = build_agent(model, [_add], checkpointer=InMemorySaver(), tool_format="react",
                        grammar=False)
    thread = {"configurable": {"thread_id": "correction-last"}}
    with pytest.raises(ValueError, match="model server said 400"):
        agent.invoke({"messages": [HumanMessage("1 + 2?")]}, thread)
    assert agent.get_state(thread).values["messages"][-1].additional_kwargs.get(
        "callgate_correction")
    with pytest.raises(ValueError, match="last message is not one"):
        agent.invoke({"messages": []}, thread)


def _add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- the run's context ---------------------------------------------------------------------


def test_context_fields_apply_per_run() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def wipe(target: str) -> str:
        """Wipe."""
        raise AssertionError("must not run")

    counter = iter(range(100))
    model = ScriptedChatModel(script=[lambda _m: tool_call("add", {"a": next(counter), "b": 1})],
                              loop=True)
    agent = build_agent(model, [add], max_steps=4)
    assert len(agent.invoke({"messages": [HumanMessage("go")]})["tool_events"]) == 4
    out = agent.invoke({"messages": [HumanMessage("go")]}, context={"max_steps": 2})
    assert out["status"] == "step_limit" and len(out["tool_events"]) == 2
    with pytest.raises(ValueError, match="unknown context field"):
        agent.invoke({"messages": [HumanMessage("go")]}, context={"max_stepz": 2})
    # A form's or a JSON client's text is not a flag, and a context is a dict of fields.
    for context, error in (({"grounding": "false"}, "grounding must be true or false"),
                           ("max_steps=2", "a run's context is a dict"),
                           ([("max_steps", 2)], "a run's context is a dict")):
        with pytest.raises(ValueError, match=error):
            agent.invoke({"messages": [HumanMessage("go")]}, context=context)
    with pytest.raises(ValueError, match="grounding must be True, False or None"):
        build_agent(model, [add], grounding="false")  # type: ignore[arg-type]

    registry = callgate.ToolRegistry()
    registry.register(wipe, sensitive=True)
    denying = build_agent(ScriptedChatModel(script=[tool_call("wipe", {"target": "a"}),
                                                    AIMessage("no")]), registry,
                          checkpointer=InMemorySaver())
    out = denying.invoke({"messages": [HumanMessage("wipe")]},
                         {"configurable": {"thread_id": "d"}}, context={"approval": "deny"})
    assert out["tool_events"][0]["outcome"] == "denied" and "'deny'" in out["tool_events"][0][
        "error"]
    schema = agent.get_context_jsonschema()
    assert {"max_steps", "tool_timeout_s", "summary_char_limit", "grounding",
            "max_calls_per_step", "approval"} <= set(schema["properties"])


# --- cancellation --------------------------------------------------------------------------


def test_cancel_before_the_run_starts_is_honoured() -> None:
    model = ScriptedChatModel(script=[AIMessage("never")])
    agent = build_agent(model, [], checkpointer=InMemorySaver())
    callgate.cancel("early")
    out = agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "early"}})
    assert out["status"] == "cancelled" and model.replies_used == 0
    assert "early" not in pending_requests()  # honoured, then forgotten: nothing leaks


def test_cancel_while_the_final_answer_is_written() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class SlowWords(GenericFakeChatModel):
        """A fake model that streams one word every 50 ms (the answer phase)."""

        def _stream(self, *args: Any, **kwargs: Any):
            for chunk in super()._stream(*args, **kwargs):
                time.sleep(0.05)
                yield chunk

    # Distinct words: a looping reply would stop decoding by itself (streaming.runs_away).
    model = SlowWords(messages=iter([AIMessage(" ".join(f"word{i}" for i in range(200)))]))
    agent = build_agent(model, [], tool_format="native")
    timer = threading.Timer(0.5, callgate.cancel, args=("answering",))
    timer.start()
    started = time.perf_counter()
    out = agent.invoke({"messages": [HumanMessage("talk")]},
                       {"configurable": {"thread_id": "answering"}})
    assert time.perf_counter() - started < 3  # 200 words would take 10 s
    assert out["status"] == "cancelled"


def test_cancel_from_another_process_through_the_store(tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite"
    started = tmp_path / "started"

    def crawl(url: str) -> str:
        """Slow, but cooperative: it checks for cancellation while it works."""
        started.write_text("1")
        for _ in range(300):
            time.sleep(0.05)
        return url

    model = ScriptedChatModel(script=[tool_call("crawl", {"url": "x"}), AIMessage("never")])
    canceller = textwrap.dedent(f"""
        import time
        from pathlib import Path
        import callgate
        from callgate.persistence import open_persistence
        while not Path({str(started)!r}).exists():
            time.sleep(0.05)
        with open_persistence({str(db)!r}) as p:
            callgate.cancel("remote", store=p.store)
    """)
    with open_persistence(str(db)) as persistence:
        agent = build_agent(model, [crawl], checkpointer=persistence.checkpointer,
                            store=persistence.store, tool_timeout_s=30)
        proc = subprocess.Popen([sys.executable, "-c", canceller], cwd=REPO, env=ENV)
        begun = time.perf_counter()
        out = agent.invoke({"messages": [HumanMessage("crawl")]},
                           {"configurable": {"thread_id": "remote"}})
        proc.wait(30)
    assert out["status"] == "cancelled" and time.perf_counter() - begun < 10
    assert out["tool_events"][0]["outcome"] == "cancelled"


def test_a_user_message_on_a_paused_thread_closes_the_pending_calls(tmp_path: Path) -> None:
    wiped: list[str] = []

    def wipe(target: str) -> str:
        """Wipe."""
        wiped.append(target)
        return "wiped"

    registry = callgate.ToolRegistry()
    registry.register(wipe, sensitive=True)
    model = ScriptedChatModel(script=[tool_call("wipe", {"target": "tmp"}, "w1"),
                                      AIMessage("Something else, then.")])
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        agent = build_agent(model, registry, checkpointer=saver)
        config = {"configurable": {"thread_id": "p"}}
        assert "__interrupt__" in agent.invoke({"messages": [HumanMessage("wipe tmp")]}, config)
        out = agent.invoke({"messages": [HumanMessage("never mind, hello")]}, config)
    assert wiped == [] and out["status"] == "done"
    assert [(e["tool"], e["outcome"]) for e in out["tool_events"]] == [("wipe", "denied")]
    answered = {m.tool_call_id for m in out["messages"] if m.type == "tool"}
    calls = [c["id"] for m in out["messages"] if m.type == "ai" for c in m.tool_calls]
    assert calls == ["w1"] and answered == {"w1"}
    kinds = [m.type for m in out["messages"]]
    assert kinds[:4] == ["human", "ai", "tool", "human"]  # the answer follows its call
    assert out["problems"] == []  # a new turn: the closed call belongs to the last one


def test_a_call_id_an_earlier_turn_used_still_gets_its_answer() -> None:
    # A server that numbers every reply's calls from 'call_0': the paused call shared its id
    # with the first turn's answered call, so the new message closed nothing, the call had
    # no event and no answer, and the history held a call with no tool message after it.
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def wipe(target: str) -> str:
        """Wipe."""
        return "wiped"

    registry = callgate.ToolRegistry()
    registry.register(add)
    registry.register(wipe, sensitive=True)
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}, "call_0"),
                                      AIMessage("3 [R1]"),
                                      tool_call("wipe", {"target": "tmp"}, "call_0"),
                                      AIMessage("Something else, then.")])
    agent = build_agent(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ids"}}
    assert agent.invoke({"messages": [HumanMessage("1 + 2?")]}, config)["status"] == "done"
    assert "__interrupt__" in agent.invoke({"messages": [HumanMessage("wipe tmp")]}, config)
    out = agent.invoke({"messages": [HumanMessage("never mind")]}, config)
    assert [(e["tool"], e["outcome"]) for e in out["tool_events"]] == [
        ("add", "ok"), ("wipe", "denied")]
    calls = [c["id"] for m in out["messages"] if m.type == "ai" for c in m.tool_calls]
    answers = [m.tool_call_id for m in out["messages"] if m.type == "tool"]
    assert calls == answers and len(set(calls)) == 2


def test_a_step_resumed_by_an_agent_without_its_tool_fails_the_call_not_the_run() -> None:
    # A thread resumed by an agent built without one of the step's tools (the CLI run again
    # without its --tools file): "AssertionError: validate lets only registered tools
    # through" failed the run, and every resume failed the same way.
    def wipe(target: str) -> str:
        """Wipe."""
        return "wiped"

    registry = callgate.ToolRegistry()
    registry.register(wipe, sensitive=True)
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "gone"}}
    first = build_agent(ScriptedChatModel(script=[tool_call("wipe", {"target": "tmp"})]),
                        registry, checkpointer=saver)
    assert "__interrupt__" in first.invoke({"messages": [HumanMessage("wipe tmp")]}, config)
    later = build_agent(ScriptedChatModel(script=[AIMessage("It could not be wiped.")]), [],
                        checkpointer=saver)
    out = later.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert out["status"] == "done" and out["final_answer"] == "It could not be wiped."
    assert [(p["tool"], p["outcome"], p["error"]) for p in out["problems"]] == [
        ("wipe", "error", "the tool 'wipe' is not registered in the agent that resumed this "
                          "step")]


@pytest.mark.parametrize("saved", ["cut-off step", "message", "message and start's step"])
def test_the_cut_off_step_is_found_whichever_checkpoints_the_new_message_has(saved: str
                                                                             ) -> None:
    # Under durability "async" the new message's checkpoints are saved in the background:
    # start saw the step that runs it (source "loop"), took it for the cut-off step, found
    # no execute task, and the finished call was reported cancelled (now and then, under load).
    from types import SimpleNamespace

    from callgate.graph.start import _cut_off_step

    def snapshot(name: str, source: str, tasks: list[str], parent: str | None) -> Any:
        return SimpleNamespace(
            name=name, metadata={"source": source}, tasks=[SimpleNamespace(name=t) for t in tasks],
            parent_config=parent and {"configurable": {"checkpoint_id": parent}})

    history = {"3": snapshot("3", "loop", ["execute", "execute"], "2"),
               "4": snapshot("4", "input", ["start"], "3"),
               "5": snapshot("5", "loop", ["start"], "4")}
    newest = {"cut-off step": "3", "message": "4", "message and start's step": "5"}[saved]

    class Graph:
        def get_state(self, config: dict) -> Any:
            return history[config["configurable"].get("checkpoint_id", newest)]

    assert _cut_off_step(Graph(), {"configurable": {"thread_id": "t"}}).name == "3"


def test_a_history_with_an_open_call_and_no_checkpointer_logs_no_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    # A client sending its own history (no checkpointer) with a thread id: start tried to
    # read the thread's checkpoints and logged "could not read the checkpoint" every run.
    open_call = tool_call("fast", {"x": "1"})
    agent = build_agent(ScriptedChatModel(script=[AIMessage("Fine.")]), [])
    with caplog.at_level("WARNING", logger="callgate"):
        out = agent.invoke({"messages": [HumanMessage("go"), open_call, HumanMessage("again")]},
                           {"configurable": {"thread_id": "t"}})
    assert [e["outcome"] for e in out["tool_events"]] == ["cancelled"]
    assert "could not read the checkpoint" not in caplog.text
