"""No failure disguised as success: every call that did not complete ``ok`` is an event with
its outcome and is listed in ``problems``; citations name only this turn's ok results;
corrections are per step; approvals cannot be dodged by a malformed answer.

Models are ``ScriptedChatModel`` (fixed replies, not a language model).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import callgate
from callgate import ToolRegistry, build_agent
from callgate.models.scripted import ScriptedChatModel, tool_call


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def ask(text: str = "question") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def calls(*pairs: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}
                                     for i, (n, a) in enumerate(pairs)])


def outcomes(out: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["tool"], e["outcome"]) for e in out["tool_events"]]


def test_every_outcome_is_an_event_and_a_problem() -> None:
    release = threading.Event()

    def boom(x: str) -> str:
        """Fails."""
        raise ValueError("no " + x)

    def hang(x: str) -> str:
        """Hangs."""
        release.wait(5)
        return x

    def wipe(target: str) -> str:
        """Sensitive."""
        raise AssertionError("must not run")

    reg = ToolRegistry()
    for fn in (add, boom):
        reg.register(fn)
    reg.register(hang, timeout_s=0.1)
    reg.register(wipe, sensitive=True)
    step1 = calls(("add", {"a": 1, "b": 2}), ("boom", {"x": "y"}), ("hang", {"x": "z"}),
                  ("wipe", {"target": "t"}))
    step2 = calls(("add", {"a": 1, "b": 2}), ("add", {"a": "one", "b": 2}))
    step3 = calls(("add", {"a": 1, "b": 2}), ("add", {"a": "two", "b": 2}))  # its correction
    agent = build_agent(ScriptedChatModel(script=[step1, step2, step3, AIMessage("3 [R1]")]),
                        reg, max_calls_per_step=5)
    try:
        out = agent.invoke(ask())
    finally:
        release.set()
    assert outcomes(out) == [("add", "ok"), ("boom", "error"), ("hang", "timeout"),
                             ("wipe", "denied"), ("add", "repeat"), ("add", "invalid")]
    assert out["status"] == "done"
    assert [p["outcome"] for p in out["problems"]] == ["error", "timeout", "denied", "repeat",
                                                       "invalid"]
    assert all(p["error"] for p in out["problems"])
    assert [c["id"] for c in out["citations"]] == ["R1"]  # only the ok result


def test_a_clean_answer_has_no_problems() -> None:
    out = build_agent(ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}),
                                                AIMessage("3 [R1]")]), [add]).invoke(ask())
    assert out["status"] == "done" and out["problems"] == []
    assert out["answer_source"] == "model"


def test_cancelled_and_skipped_outcomes() -> None:
    token = callgate.CancelToken()
    added = threading.Event()

    def plus(a: int, b: int) -> int:
        """Add."""
        added.set()
        return a + b

    def slow(x: str) -> str:
        """Slow; cancels the run while it works (once the other call is done)."""
        added.wait(5)
        token.cancel()
        time.sleep(2)
        return x

    out = build_agent(ScriptedChatModel(script=[calls(("slow", {"x": "a"}),
                                                      ("plus", {"a": 1, "b": 1}),
                                                      ("plus", {"a": 2, "b": 2}))]),
                      [slow, plus], max_calls_per_step=2).invoke(
        ask(), {"configurable": {"cancel_token": token}})
    assert out["status"] == "cancelled"
    assert outcomes(out) == [("slow", "cancelled"), ("plus", "ok"), ("plus", "skipped")]


def test_citations_name_only_this_turns_ok_results() -> None:
    def broken(x: str) -> str:
        """Fails."""
        raise ValueError("down")

    model = ScriptedChatModel(script=[
        tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]"),
        tool_call("broken", {"x": "a"}), AIMessage("See [R1] and [R2] and (R2).")])
    agent = build_agent(model, [add, broken], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "cite"}}
    agent.invoke(ask("1+2"), config)
    out = agent.invoke(ask("again"), config)
    # R1 is the last turn's, R2 failed: neither is cited; "(R2)" stays as written prose.
    assert out["citations"] == []
    # The turn's only call failed, so the answer says first that it is the model's own.
    assert out["final_answer"] == ("(Not from a tool: the call to broken failed, so this is "
                                   "the model's own answer.)\n\nSee and and (R2).")
    assert "Sources:" not in out["final_answer"]


def test_an_answer_claiming_a_denied_call_says_first_that_it_did_not_run() -> None:
    # The call could not pause (no checkpointer: fail closed), and the model said it was
    # done: "I deleted a.txt." read as success, status done, nothing said in the answer.
    deleted: list[str] = []

    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return "deleted"

    reg = ToolRegistry()
    reg.register(delete_file, sensitive=True)
    script = [tool_call("delete_file", {"path": "a.txt"}), AIMessage("I deleted a.txt [R1].")]
    out = build_agent(ScriptedChatModel(script=script), reg).invoke(ask("delete a.txt"))
    assert deleted == [] and outcomes(out) == [("delete_file", "denied")]
    assert out["final_answer"] == ("(Not from a tool: the call to delete_file was not "
                                   "approved, so this is the model's own answer.)\n\n"
                                   "I deleted a.txt.")
    # An answer that says so disguises nothing: no note.
    script = [tool_call("delete_file", {"path": "a.txt"}),
              AIMessage("I cannot delete it without your approval.")]
    out = build_agent(ScriptedChatModel(script=script), reg).invoke(ask("delete a.txt"))
    assert out["final_answer"] == "I cannot delete it without your approval."
    # Nor does one saying it did not do it (the MCP test's "I did not commit anything."
    # had got the note), after a denial only: after a failure it says nothing of the tool.
    for declined in ("I did not delete anything.", "I left a.txt alone.",
                     "The file has not been deleted."):
        script = [tool_call("delete_file", {"path": "a.txt"}), AIMessage(declined)]
        out = build_agent(ScriptedChatModel(script=script), reg).invoke(ask("delete a.txt"))
        assert out["final_answer"] == declined


@pytest.mark.parametrize("reply", [AIMessage(""), AIMessage("[R1]"),
                                   tool_call("add", {"a": 1, "b": 2})])
def test_no_answer_from_the_model_is_a_failed_turn_not_a_clean_one(reply: AIMessage) -> None:
    # An empty reply (a server that sometimes returns empty content), citations alone, or a
    # call in chat mode: "I have no answer to give." with status done and no problems, the
    # mark of a clean answer (the ReAct path's correction of an empty answer ends failed).
    out = build_agent(ScriptedChatModel(script=[reply]), [add]).invoke(
        {**ask("What is 1 + 2?"), "mode": "chat"})
    assert out["final_answer"] == "I have no answer to give."
    assert (out["status"], out["answer_source"]) == ("failed", "loop")


def test_prose_in_parentheses_that_names_no_result_keeps_its_words() -> None:
    out = build_agent(ScriptedChatModel(script=[AIMessage("See figure (R2) of the paper.")]),
                      [add]).invoke(ask())
    assert out["final_answer"] == "See figure (R2) of the paper."


def test_the_correction_budget_is_per_step() -> None:
    model = ScriptedChatModel(script=[
        tool_call("add", {"a": "1", "b": 2}),  # step 1: invalid
        tool_call("add", {"a": 1, "b": 2}),  # its correction: valid
        tool_call("add", {"a": True, "b": 3}),  # step 2: invalid
        tool_call("add", {"a": 2, "b": 3}),  # its own correction: valid
        AIMessage("3 and 5 [R1] [R2]")])
    out = build_agent(model, [add]).invoke(ask())
    assert outcomes(out) == [("add", "ok"), ("add", "ok")] and out["problems"] == []
    assert out["status"] == "done" and model.replies_used == 5


def test_results_still_feed_the_answer_after_a_failed_correction() -> None:
    model = ScriptedChatModel(script=[
        tool_call("add", {"a": 1, "b": 2}),
        tool_call("add", {"a": "x", "b": 2}), tool_call("add", {"a": "y", "b": 2}),
        AIMessage("At least 1+2 is 3 [R1].")])
    out = build_agent(model, [add]).invoke(ask())
    assert out["status"] == "failed"
    assert out["final_answer"].startswith("At least 1+2 is 3 [R1].")
    assert outcomes(out) == [("add", "ok"), ("add", "invalid")]
    seen = model.requests[-1]["messages"]
    assert any(isinstance(m, ToolMessage) and m.content.startswith("[R1]") for m in seen)


def test_a_failed_call_may_be_tried_again() -> None:
    attempts: list[str] = []

    def flaky(x: str) -> str:
        """Fails the first time."""
        attempts.append(x)
        if len(attempts) == 1:
            raise KeyError("not yet")
        return "fine"

    model = ScriptedChatModel(script=[tool_call("flaky", {"x": "a"}),
                                      tool_call("flaky", {"x": "a"}), AIMessage("fine [R2]")])
    out = build_agent(model, [flaky]).invoke(ask())
    assert attempts == ["a", "a"]  # not a "repeat": the first one did not complete ok
    assert outcomes(out) == [("flaky", "error"), ("flaky", "ok")]


def test_an_invented_optional_argument_is_dropped_and_the_call_runs() -> None:
    def search(query: str, region: str = "world") -> str:
        """Search."""
        return f"{query} in {region}"

    model = ScriptedChatModel(script=[
        'Action: search\nAction Input: {"query": "langgraph", "region": "Atlantis"}',
        "Final Answer: found [R1]"], native_tools=False)
    agent = build_agent(model, [search], grounding=True)
    out = agent.invoke(ask("search for langgraph"))
    [event] = out["tool_events"]
    assert event["outcome"] == "ok" and event["args"] == {"query": "langgraph",
                                                          "region": "world"}
    assert event["dropped"] == ["region (not in the conversation)"]
    assert callgate.get_result(agent, None, "R1") == "langgraph in world"


# --- approvals that cannot be dodged ---------------------------------------------------------


def paused_wipe_answered(answer: Any) -> tuple[list[str], dict[str, Any]]:
    """A sensitive wipe("tmp") pauses for approval, then ``answer`` resumes it: what was
    wiped, and the output."""
    wiped: list[str] = []

    def wipe(target: str = "EVERYTHING") -> str:
        """Wipe a target."""
        wiped.append(target)
        return "wiped"

    reg = ToolRegistry()
    reg.register(wipe, sensitive=True)
    agent = build_agent(ScriptedChatModel(script=[tool_call("wipe", {"target": "tmp"}),
                                                  AIMessage("ok")]), reg,
                        checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "wipe"}}
    assert "__interrupt__" in agent.invoke(ask("wipe tmp"), config)
    return wiped, agent.invoke(Command(resume=answer), config)


@pytest.mark.parametrize("answer", [
    {"action": "edit"}, {"action": "edit", "args": None}, {"action": "edit", "args": {"bad": 1}},
    {"decisions": [{"type": "edit", "edited_action": {"name": "wipe"}}]},
    {"decisions": [{"type": "edit", "edited_action": {"name": "other", "args": {"target": "a"}}}]},
    {"decisions": [{"type": "bogus"}]}, {"decisions": []}, {"decisions": None}, 42, "maybe",
    {"action": "edit", "args": {}}, {"action": None}])
def test_a_malformed_answer_is_a_rejection_and_nothing_runs(answer: Any) -> None:
    # (``Command(resume=None)`` equals ``Command()``: LangGraph 1.2 itself raises on it,
    # before any node runs, so it cannot reach the approval gate.)
    wiped, out = paused_wipe_answered(answer)
    assert wiped == []
    [event] = out["tool_events"]
    assert event["outcome"] == "denied" and event["error"].startswith("rejected")


def test_a_complete_edit_runs_as_edited() -> None:
    wiped, out = paused_wipe_answered({"decisions": [
        {"type": "edit", "edited_action": {"name": "wipe", "args": {"target": "cache"}}}]})
    assert wiped == ["cache"] and out["tool_events"][0]["args"] == {"target": "cache"}


def test_a_generator_tool_runs_and_what_it_raises_fails_the_call() -> None:
    # A generator function's call runs none of its body: the generator itself came back
    # as an ok result (its repr, cited as the answer's source), raise or not.
    async def fetch_pages(n: int) -> AsyncIterator[str]:
        """Fetch pages."""
        yield "page 1"
        raise ConnectionAbortedError("the stream broke after page 1")

    def read_rows(n: int) -> Iterator[str]:
        """Read rows."""
        yield "row 1"
        raise OSError("disk read failed")

    async def list_items(n: int) -> AsyncIterator[str]:
        """List items."""
        yield "a"
        yield "b"

    def endless(n: int) -> Iterator[int]:
        """Count for ever."""
        while True:
            yield n

    reg = ToolRegistry()
    for fn in (fetch_pages, read_rows, list_items):
        reg.register(fn)
    reg.register(endless, timeout_s=0.2)
    for name, outcome, error in (("fetch_pages", "error", "ConnectionAbortedError: the "
                                  "stream broke after page 1"),
                                 ("read_rows", "error", "OSError: disk read failed"),
                                 ("endless", "timeout", "timeout")):
        script = [tool_call(name, {"n": 1}), AIMessage("Done: all of it [R1].")]
        out = build_agent(ScriptedChatModel(script=script), reg).invoke(ask())
        [event] = out["tool_events"]
        assert (event["outcome"], event["error"].split(" (")[0]) == (outcome, error)
        assert [p["outcome"] for p in out["problems"]] == [outcome]
        assert out["citations"] == [] and out["final_answer"].startswith("(Not from a tool")
    script = [tool_call("list_items", {"n": 1}), AIMessage("a and b [R1]")]
    out = build_agent(ScriptedChatModel(script=script), reg).invoke(ask())
    assert outcomes(out) == [("list_items", "ok")] and out["problems"] == []
    assert out["tool_events"][0]["summary"] == "[list_items] results: a | b"


def test_an_endless_async_generator_tool_stops_at_its_timeout() -> None:
    # A body that never awaits never let the task's cancel land: the call was reported
    # timeout while its thread went on yielding, its list growing by ~55 MB a second.
    async def count_forever(n: int) -> AsyncIterator[int]:
        """Count for ever."""
        while True:
            yield n

    reg = ToolRegistry()
    reg.register(count_forever, timeout_s=0.2)
    script = [tool_call("count_forever", {"n": 1}), AIMessage("Done [R1].")]
    out = build_agent(ScriptedChatModel(script=script), reg).invoke(ask())
    assert outcomes(out) == [("count_forever", "timeout")]
    deadline = time.monotonic() + 10
    while any("count_forever" in t.name for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the generator's thread still runs"
        time.sleep(0.05)
