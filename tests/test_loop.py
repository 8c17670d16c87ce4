"""The tool loop on the native path, driven by a scripted chat model.

Every model here is ``ScriptedChatModel``: a deterministic replay of fixed AIMessages
(with ``tool_calls``) that implements ``bind_tools`` - not a language model.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore

import callgate
from callgate import ToolRegistry, build_agent
from callgate.graph.cancellation import pending_requests
from callgate.graph.settings import _transient
from callgate.models.scripted import ScriptedChatModel, tool_call

MARKUP = ("<tool_call>", "Action:", "Action Input:", "[TOOL_CALLS]", "✿FUNCTION✿", "<think>")


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def ask(text: str = "question") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def run(script: list[Any], tools: list[Any] | ToolRegistry, **kwargs: Any):
    model = ScriptedChatModel(script=script)
    agent = build_agent(model, tools, **kwargs)
    return model, agent, agent.invoke(ask())


def test_graph_shows_the_loop_nodes() -> None:
    agent = build_agent(ScriptedChatModel(), [add])
    nodes = set(agent.get_graph().nodes)
    assert {"start", "decide", "validate", "correct", "approve", "execute", "summarize",
            "finalize", "cite"} <= nodes


def test_tool_call_then_cited_answer() -> None:
    model, agent, out = run([tool_call("add", {"a": 2, "b": 3}),
                             AIMessage("It is 5 [R1].")], [add])
    assert out["status"] == "done" and out["problems"] == []
    assert out["final_answer"].startswith("It is 5 [R1].")
    assert "Sources: [R1] add" in out["final_answer"]
    [event] = out["tool_events"]
    assert event["id"] == "R1" and event["ok"] and event["outcome"] == "ok"
    assert event["step"] == 1 and event["preview"] == "5" and event["stored"]
    assert callgate.get_result(agent, None, "R1") == 5  # the full result, from the store
    assert event["summary"] == "[add] 5" and event["duration_ms"] >= 0
    assert out["tools_used"] == ["add"]
    assert out["citations"][0]["id"] == "R1" and out["citations"][0]["explicit"]
    # the model saw the tool specs and the summary under its result id
    assert model.requests[0]["tools"][0]["function"]["name"] == "add"
    tool_msg = next(m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage))
    assert tool_msg.content == "[R1] [add] 5"


def test_direct_answer_without_tools() -> None:
    _, _, out = run([AIMessage("Hello there.")], [add])
    assert out["final_answer"] == "Hello there." and out["tool_events"] == []
    assert out["citations"] == [] and out["status"] == "done"


def test_correction_success() -> None:
    model, _, out = run([tool_call("add", {"a": 2, "b": True}, "c1"),
                         tool_call("add", {"a": 2, "b": 3}, "c2"),
                         AIMessage("5 [R1]")], [add])
    assert out["status"] == "done" and [e["args"] for e in out["tool_events"]] == [
        {"a": 2, "b": 3}]
    correction = next(m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage))
    assert correction.tool_call_id == "c1" and correction.status == "error"
    assert "argument 'b': expected integer, got boolean True" in correction.content
    assert '"required":["a","b"]' in correction.content  # the tool's schema is shown


def test_correction_failure_ends_with_clear_message() -> None:
    model, agent, out = run([tool_call("add", {"a": "2", "b": 3}, "c1"),
                             tool_call("add", {"a": 2.5, "b": 3}, "c2")], [add])
    assert out["status"] == "failed"
    assert [e["outcome"] for e in out["tool_events"]] == ["invalid"]  # nothing ran
    assert out["problems"][0]["outcome"] == "invalid" and "argument 'a'" in out["problems"][0][
        "error"]
    assert "still invalid after a correction" in out["final_answer"]
    assert "argument 'a'" in out["final_answer"]
    assert not any(marker in out["final_answer"] for marker in MARKUP)
    assert model.replies_used == 2  # exactly one correction round
    # every tool call in the thread got an answer, so the history stays valid
    ids = {m.tool_call_id for m in out["messages"] if isinstance(m, ToolMessage)}
    assert {"c1", "c2"} <= ids


def test_unknown_tool_gets_the_valid_names() -> None:
    model, _, out = run([tool_call("sum", {"a": 1, "b": 2}),
                         tool_call("add", {"a": 1, "b": 2}), AIMessage("3")], [add, multiply])
    correction = next(m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage))
    assert "Unknown tool 'sum'. Valid tools: add, multiply." in correction.content
    assert out["status"] == "done" and out["tool_events"][0]["tool"] == "add"


def test_malformed_arguments_from_invalid_tool_calls() -> None:
    broken = AIMessage("", invalid_tool_calls=[{"name": "add", "args": '{"a": 1, "b": ',
                                                "id": "bad1", "error": "json",
                                                "type": "invalid_tool_call"}])
    model, _, out = run([broken, tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]")],
                        [add])
    correction = next(m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage))
    assert correction.tool_call_id == "bad1" and "not valid JSON" in correction.content
    assert out["status"] == "done" and out["tool_events"][0]["ok"]


def test_step_limit_is_enforced_by_the_graph() -> None:
    counter = iter(range(100))
    model = ScriptedChatModel(
        script=[lambda _m: tool_call("add", {"a": next(counter), "b": 1}, None)], loop=True)
    agent = build_agent(model, [add], max_steps=3)
    out = agent.invoke(ask(), {"recursion_limit": 1000})
    assert out["status"] == "step_limit"
    assert len(out["tool_events"]) == 3
    assert model.replies_used == 4  # 3 steps + the final, tools-free answer
    last = model.requests[-1]["messages"][-1]
    assert isinstance(last, HumanMessage) and "step limit" in last.content
    assert out["final_answer"]  # an answer from what was gathered, not an exception


def test_step_limit_default_is_five() -> None:
    counter = iter(range(100))
    model = ScriptedChatModel(
        script=[lambda _m: tool_call("add", {"a": next(counter), "b": 1}, None)], loop=True)
    out = build_agent(model, [add]).invoke(ask())
    assert out["status"] == "step_limit" and len(out["tool_events"]) == 5


@pytest.mark.parametrize("limits", [{"max_steps": 0}, {"max_steps": -1}, {"max_steps": True},
                                    {"max_steps": 2.5}, {"tool_timeout_s": 0},
                                    {"tool_timeout_s": float("nan")},
                                    {"max_calls_per_step": 0}, {"approval": "maybe"}])
def test_a_limit_that_leaves_no_room_is_refused(limits: dict[str, Any]) -> None:
    # Scripted model. max_steps=0 had run a turn with no step to decide in, answered by
    # the loop's own "Do not call any tools." (status step_limit).
    model = ScriptedChatModel(script=[AIMessage("unused")])
    name = next(iter(limits))
    if name != "approval":  # not a build_agent argument
        with pytest.raises(ValueError, match=name):
            build_agent(model, [add], **limits)
    with pytest.raises(ValueError, match=name):  # the same limit given for one run
        build_agent(model, [add]).invoke(ask(), context=limits)
    assert model.replies_used == 0


def test_a_whole_number_written_as_a_float_is_a_limit() -> None:
    # Scripted model. A JSON client may send 3.0 for max_steps: it stands for 3.
    counter = iter(range(100))
    model = ScriptedChatModel(
        script=[lambda _m: tool_call("add", {"a": next(counter), "b": 1}, None)], loop=True)
    out = build_agent(model, [add]).invoke(ask(), context={"max_steps": 2.0})
    assert out["status"] == "step_limit" and len(out["tool_events"]) == 2


def test_an_unknown_mode_is_refused() -> None:
    model = ScriptedChatModel(script=[AIMessage("unused")])
    with pytest.raises(ValueError, match="unknown mode 'bogus'"):
        build_agent(model, [add]).invoke({**ask(), "mode": "bogus"})
    assert model.replies_used == 0


def test_a_refused_mode_leaves_no_mode_in_the_thread() -> None:
    # The refused run's message stays in the thread (nothing is lost), its mode does not:
    # the next run without a mode runs as an agent.
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "refused-mode"}}
    with pytest.raises(ValueError, match="unknown mode 'bogus'"):
        agent.invoke({**ask("first"), "mode": "bogus"}, thread)
    out = agent.invoke(ask("second"), thread)
    assert out["status"] == "done" and out["tools_used"] == ["add"]
    assert [m.content for m in out["messages"] if isinstance(m, HumanMessage)] == [
        "first", "second"]



def test_a_tool_result_that_answers_no_call_stays_in_the_thread_and_out_of_the_models_input(
        ) -> None:
    # A refused run's input stays in the thread: a tool message there answered no call, and
    # reached the model on every later turn; hosted providers reject such a history, so the
    # thread could not go on. The thread keeps it; the model's input leaves it out.
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "orphan-result"}}
    with pytest.raises(ValueError, match="last message is not one"):
        agent.invoke({"messages": [HumanMessage("first"),
                                   ToolMessage("42", tool_call_id="nowhere")]}, thread)
    out = agent.invoke(ask("1 + 2?"), thread)
    assert out["status"] == "done" and out["tools_used"] == ["add"]
    assert any(isinstance(m, ToolMessage) and m.tool_call_id == "nowhere"
               for m in out["messages"])
    first, second = ([m for m in r["messages"] if isinstance(m, ToolMessage)]
                     for r in model.requests)
    assert first == []
    # The loop's own call's result still reaches the model.
    [call] = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert [m.tool_call_id for m in second] == [call.tool_calls[0]["id"]]



def test_a_blank_question_is_refused_and_never_reaches_the_model() -> None:
    # As the CLI refuses one. The refused input stays in the thread (LangGraph keeps a
    # run's input); the model's input leaves it out, as hosted providers reject it.
    model = ScriptedChatModel(script=[AIMessage("Hello.")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "blank"}}
    for question in ("   ", [{"type": "text", "text": " \n"}]):
        with pytest.raises(ValueError, match="the new user message is blank"):
            agent.invoke({"messages": [HumanMessage(question)]}, thread)
    out = agent.invoke(ask("hi"), thread)
    assert out["final_answer"] == "Hello." and out["status"] == "done"
    [request] = model.requests
    assert [m.content for m in request["messages"] if isinstance(m, HumanMessage)] == ["hi"]


def test_chat_mode_runs_no_call_the_model_still_makes() -> None:
    # Chat mode binds no tools, but a model that saw them earlier in the thread may call
    # one anyway: it ran, and was cited. Its text is the answer, as on the ReAct path.
    called: list[int] = []

    def count(n: int) -> int:
        """Count."""
        called.append(n)
        return n

    reply = AIMessage("Counting is a tool's job.", tool_calls=[
        {"name": "count", "args": {"n": 1}, "id": "c1"}])
    out = build_agent(ScriptedChatModel(script=[reply]), [count]).invoke(
        {**ask("count to 1"), "mode": "chat"})
    assert called == [] and out["tool_events"] == []
    assert out["final_answer"] == "Counting is a tool's job." and out["status"] == "done"



def test_a_tools_artifact_is_kept_beside_its_content() -> None:
    # LangChain's response_format="content_and_artifact": the model is shown the content,
    # the store keeps the artifact too (it came back only for a call with an id).
    from langchain_core.tools import tool

    @tool(response_format="content_and_artifact")
    def rows(n: int) -> tuple[str, list[int]]:
        """Give n rows."""
        return f"{n} rows", list(range(n))

    @tool(response_format="content_and_artifact")
    def weather(city: str) -> tuple[dict[str, Any], dict[str, str]]:
        """Weather in a city."""
        return {"city": city, "temp_c": 21}, {"raw": "21C"}

    @tool(response_format="content_and_artifact")
    def unpaired(n: int) -> str:
        """Forgets its artifact."""
        return "only content"

    agent = build_agent(ScriptedChatModel(script=[
        tool_call("rows", {"n": 3}), tool_call("weather", {"city": "Oslo"}),
        tool_call("unpaired", {"n": 1}), AIMessage("3 rows [R1]")]), [rows, weather, unpaired])
    out = agent.invoke(ask("rows"))
    ran, oslo, failed = out["tool_events"]
    assert ran["ok"] and ran["summary"] == "[rows] 3 rows"
    assert callgate.get_result(agent, None, "R1") == "3 rows"
    item = agent.store.get(("callgate", "results", "-"), "R1")
    assert item.value["artifact"] == [0, 1, 2]
    # The content keeps its type (a tool call would have turned the dict into its JSON).
    assert callgate.get_result(agent, None, "R2") == {"city": "Oslo", "temp_c": 21}
    assert oslo["summary"] == "[weather] city: Oslo; temp_c: 21"
    assert not failed["ok"] and "must return a (content, artifact) pair" in failed["error"]
    plain = build_agent(ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}),
                                                  AIMessage("3 [R1]")]), [add])
    plain.invoke(ask("1 + 2?"))
    assert "artifact" not in plain.store.get(("callgate", "results", "-"), "R1").value


def test_a_run_without_a_checkpointer_writes_over_no_kept_result() -> None:
    # The README's own example: without a checkpointer each run starts from empty state,
    # and numbered its first call R1 again, over the thread's R1 in the store.
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]"),
                                      tool_call("add", {"a": 5, "b": 5}), AIMessage("10 [R2]")])
    agent = build_agent(model, [add])
    thread = {"configurable": {"thread_id": "no-saver"}}
    first = agent.invoke(ask("1 + 2?"), thread)
    second = agent.invoke(ask("5 + 5?"), thread)
    assert [first["tool_events"][0]["id"], second["tool_events"][0]["id"]] == ["R1", "R2"]
    assert [callgate.get_result(agent, thread, r) for r in ("R1", "R2")] == [3, 10]
    assert second["final_answer"].startswith("10 [R2]")


@pytest.mark.parametrize("thread_id", ["user.one", "bob@example.com", "50%off"])
def test_a_thread_id_with_a_period_keeps_its_results(thread_id: str) -> None:
    # LangGraph's stores refuse a namespace label holding a period: the result was lost. An
    # id without one keeps its own label (a review: "50%off" would have lost what it had).
    # Scripted chat model: one call, then the answer.
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]"),
                                      tool_call("add", {"a": 5, "b": 5}), AIMessage("10 [R2]")])
    agent = build_agent(model, [add])
    thread = {"configurable": {"thread_id": thread_id}}
    first = agent.invoke(ask("1 + 2?"), thread)
    assert first["tool_events"][0]["stored"] is True
    agent.invoke(ask("5 + 5?"), thread)
    assert [callgate.get_result(agent, thread, r) for r in ("R1", "R2")] == [3, 10]
    if "." not in thread_id:
        assert agent.store.get(("callgate", "results", thread_id), "R1") is not None



class SlowNumberingStore(InMemoryStore):
    """An in-memory store slow to hand back a thread's result numbering once read: two runs
    reading it at once both see the same last id, the window a remote store leaves."""

    def get(self, namespace: tuple[str, ...], key: str, **kwargs: Any) -> Any:
        item = super().get(namespace, key, **kwargs)
        if namespace[:2] == ("callgate", "numbering"):
            time.sleep(0.2)
        return item


@pytest.mark.parametrize("config", [{}, {"configurable": {"thread_id": "shared"}}],
                         ids=["no-thread", "one-thread"])
def test_concurrent_runs_on_one_thread_take_distinct_result_ids(
        config: dict[str, Any]) -> None:
    # Scripted models, one per run; both runs share the store (and the thread id, or none).
    store = SlowNumberingStore()
    agents = [build_agent(ScriptedChatModel(script=[tool_call("add", {"a": n, "b": n}),
                                                    AIMessage(f"{2 * n}")]), [add],
                          store=store) for n in (1, 5)]
    outs: list[dict[str, Any]] = [{}, {}]

    def run_one(i: int) -> None:
        outs[i] = agents[i].invoke(ask("add"), config)

    workers = [threading.Thread(target=run_one, args=(i,)) for i in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    ids = [out["tool_events"][0]["id"] for out in outs]
    assert sorted(ids) == ["R1", "R2"]
    assert [callgate.get_result(store, config, rid) for rid in ids] == [2, 10]


def test_a_cancelled_runs_unrun_call_and_a_forks_calls_take_fresh_result_ids() -> None:
    # The ids of calls the loop never ran, and of a fork's calls, go on from the thread's
    # numbering too: a cancelled second run without a checkpointer had called its unrun
    # call R1, the first run's; a fork from turn 1 numbered its call R2, the other
    # branch's, and a crash then left it unmatched with its stored result.
    token = callgate.CancelToken()

    def cancel_then_call(messages: list[Any]) -> AIMessage:
        token.cancel()
        return tool_call("add", {"a": 5, "b": 5})

    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]"),
                                      cancel_then_call, AIMessage("stopped")])
    agent = build_agent(model, [add])
    thread = {"configurable": {"thread_id": "unrun"}}
    agent.invoke(ask("1 + 2?"), thread)
    out = agent.invoke(ask("5 + 5?"), {"configurable": {"thread_id": "unrun",
                                                        "cancel_token": token}})
    assert [(e["id"], e["outcome"]) for e in out["tool_events"]] == [("R2", "cancelled")]
    assert callgate.get_result(agent, thread, "R1") == 3

    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]"),
                                      tool_call("add", {"a": 5, "b": 5}), AIMessage("10 [R2]"),
                                      tool_call("add", {"a": 7, "b": 7}), AIMessage("14 [R3]")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "fork"}}
    agent.invoke(ask("1 + 2?"), thread)
    after_turn_1 = agent.get_state(thread).config
    agent.invoke(ask("5 + 5?"), thread)
    fork = agent.invoke(ask("7 + 7?"), after_turn_1)
    assert [e["id"] for e in fork["tool_events"]] == ["R1", "R3"]
    assert [callgate.get_result(agent, thread, r) for r in ("R1", "R2", "R3")] == [3, 10, 14]


def test_a_thread_keeps_its_mode_until_a_run_sends_another() -> None:
    model = ScriptedChatModel(script=[AIMessage("Hi."), AIMessage("Still chatting."),
                                      tool_call("add", {"a": 1, "b": 2}), AIMessage("3")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "kept-mode"}}
    agent.invoke({**ask("hi"), "mode": "chat"}, thread)
    assert agent.invoke(ask("and now?"), thread)["tools_used"] == []
    assert "tools" not in model.requests[1]
    assert agent.invoke({**ask("1 + 2?"), "mode": "agent"}, thread)["tools_used"] == ["add"]


def test_timeout_becomes_an_error_result_and_the_loop_goes_on() -> None:
    async def slow(x: str) -> str:
        """Slow tool."""
        await asyncio.sleep(30)
        return x

    reg = ToolRegistry()
    reg.register(slow, timeout_s=0.3)
    model, _, out = run([tool_call("slow", {"x": "a"}), AIMessage("It timed out.")], reg)
    [event] = out["tool_events"]
    assert (event["ok"], event["outcome"]) == (False, "timeout")
    assert event["error"].startswith("timeout")
    assert event["summary"].startswith("[slow] failed: timeout")
    assert [p["outcome"] for p in out["problems"]] == ["timeout"]
    assert out["status"] == "done" and out["final_answer"].startswith("It timed out.")


def test_default_timeout_applies_to_sync_tools() -> None:
    def hang(x: str) -> str:
        """Hangs."""
        time.sleep(2)
        return x

    _, _, out = run([tool_call("hang", {"x": "a"}), AIMessage("done")], [hang],
                    tool_timeout_s=0.2)
    assert out["tool_events"][0]["outcome"] == "timeout"
    assert "abandoned" in out["tool_events"][0]["error"]  # a sync tool cannot be stopped


def test_raising_tool_is_fed_back_to_the_model() -> None:
    def broken(x: str) -> str:
        """Always fails."""
        raise ValueError("disk on fire")

    model, _, out = run([tool_call("broken", {"x": "a"}), AIMessage("It failed.")], [broken])
    [event] = out["tool_events"]
    assert not event["ok"] and event["error"] == "ValueError: disk on fire"
    seen = next(m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage))
    assert seen.content == "[R1] [broken] failed: ValueError: disk on fire"
    assert seen.status == "error"


@pytest.mark.parametrize("stop", [SystemExit(0), SystemExit(3), KeyboardInterrupt()])
def test_a_tool_that_exits_fails_its_call_not_the_run(stop: BaseException) -> None:
    # A tool wrapping a command line (argparse, click) calls sys.exit: that SystemExit came
    # out of invoke, and `callgate ask` exited 0 with no answer.
    def cli_wrapper(x: str) -> str:
        """Runs a command line."""
        raise stop

    async def async_wrapper(x: str) -> str:
        """Runs a command line, asynchronously."""
        raise stop

    for func in (cli_wrapper, async_wrapper):
        _, _, out = run([tool_call(func.__name__, {"x": "a"}), AIMessage("It ran.")], [func])
        [event] = out["tool_events"]
        assert event["outcome"] == "error" and event["error"].startswith(
            f"ToolExit: the tool raised {type(stop).__name__}")
        assert out["final_answer"].startswith("(Not from a tool:")


def test_a_tool_error_whose_message_cannot_be_read_is_still_the_calls_result() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no message")

    def odd(x: str) -> str:
        """Fails oddly."""
        raise Odd()

    _, _, out = run([tool_call("odd", {"x": "a"}), AIMessage("It ran.")], [odd])
    [event] = out["tool_events"]  # the RuntimeError had come out of invoke
    assert event["outcome"] == "error"
    assert event["error"] == "Odd: (its message could not be read: RuntimeError)"


def test_a_tool_message_marked_as_an_error_is_a_failed_call() -> None:
    def lookup(q: str) -> ToolMessage:
        """Look up."""
        return ToolMessage("Error: the index is offline", tool_call_id="x", status="error")

    _, _, out = run([tool_call("lookup", {"q": "a"}), AIMessage("It says 42 [R1]")], [lookup])
    assert [(p["outcome"], p["error"]) for p in out["problems"]] == [
        ("error", "ToolError: Error: the index is offline")]
    assert out["citations"] == [] and "Sources:" not in out["final_answer"]


def test_transient_errors_are_retried() -> None:
    attempts = []

    def flaky(x: str) -> str:
        """Fails twice."""
        attempts.append(x)
        if len(attempts) < 3:
            raise ConnectionError("reset by peer")
        return "ok"

    _, _, out = run([tool_call("flaky", {"x": "a"}), AIMessage("ok")], [flaky])
    assert out["tool_events"][0]["ok"] and len(attempts) == 3


def test_non_transient_errors_are_not_retried() -> None:
    attempts = []

    def picky(x: str) -> str:
        """Fails."""
        attempts.append(x)
        raise KeyError(x)

    run([tool_call("picky", {"x": "a"}), AIMessage("no")], [picky])
    assert len(attempts) == 1


@pytest.mark.parametrize("error", [
    PermissionError(13, "Permission denied", "/etc/x"), IsADirectoryError(21, "Is a directory"),
    FileExistsError(17, "File exists"), NotADirectoryError(20, "Not a directory")])
def test_os_errors_about_the_input_are_not_retried(error: OSError) -> None:
    # A tool that did its work and then failed on the file it was given ran three times.
    attempts = []

    def save(path: str) -> str:
        """Record, then write."""
        attempts.append(path)
        raise error

    _, _, out = run([tool_call("save", {"path": "/etc/x"}), AIMessage("no")], [save])
    assert len(attempts) == 1 and out["tool_events"][0]["outcome"] == "error"


def test_a_client_error_response_is_not_retried_even_as_an_os_error() -> None:
    # requests' HTTPError is an OSError: its status decides, and a 404 is not transient.
    class HTTPError(OSError):
        def __init__(self, status: int) -> None:
            super().__init__(f"{status} error")
            self.response = type("Response", (), {"status_code": status})()

    assert not _transient(HTTPError(404)) and _transient(HTTPError(503))
    assert _transient(ConnectionResetError()) and _transient(TimeoutError())


def test_parallel_calls_run_concurrently() -> None:
    # Each call waits at a barrier only the other call can open: run one after the other,
    # the first would wait out the barrier's timeout and fail. (Overlapping wall-clock spans
    # were checked here before; a pause holding the GIL while the second thread started
    # failed that check in CI though the calls did run at once.)
    barrier = threading.Barrier(2, timeout=5)

    async def fetch(name: str) -> str:
        """Fetch a thing."""
        await asyncio.to_thread(barrier.wait)
        return name.upper()

    both = AIMessage("", tool_calls=[
        {"name": "fetch", "args": {"name": "a"}, "id": "ca", "type": "tool_call"},
        {"name": "fetch", "args": {"name": "b"}, "id": "cb", "type": "tool_call"}])
    _, agent, out = run([both, AIMessage("A and B [R1][R2]")], [fetch])
    assert [e["ok"] for e in out["tool_events"]] == [True, True], out["tool_events"]
    assert [callgate.get_result(agent, None, r) for r in ("R1", "R2")] == ["A", "B"]
    assert [e["id"] for e in out["tool_events"]] == ["R1", "R2"]


def test_citations_drop_bogus_ids() -> None:
    _, _, out = run([tool_call("add", {"a": 1, "b": 1}),
                     AIMessage("Two [R1], maybe [R7], see (R1, R9).")], [add])
    answer = out["final_answer"]
    assert "R7" not in answer and "R9" not in answer
    assert answer.startswith("Two [R1], maybe, see [R1].")
    assert [c["id"] for c in out["citations"]] == ["R1"]


def test_uncited_answer_lists_the_results_it_was_given() -> None:
    _, _, out = run([tool_call("add", {"a": 1, "b": 1}), AIMessage("Two.")], [add])
    assert out["final_answer"] == "Two.\n\nSources: [R1] add"
    assert out["citations"][0]["explicit"] is False


def test_two_calls_on_one_id_each_keep_their_own_result() -> None:
    # A server that gives every call of a reply the same id: both events showed the second
    # call's result ('1 + 2' answered 4), and the first result was lost.
    step = AIMessage("", tool_calls=[
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_0", "type": "tool_call"},
        {"name": "add", "args": {"a": 2, "b": 2}, "id": "call_0", "type": "tool_call"}])
    _, _, out = run([step, AIMessage("3 and 4 [R1] [R2]")], [add])
    assert [(e["args"], e["summary"]) for e in out["tool_events"]] == [
        ({"a": 1, "b": 2}, "[add] 3"), ({"a": 2, "b": 2}, "[add] 4")]
    assert len({e["call_id"] for e in out["tool_events"]}) == 2
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    ai = next(m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls)
    assert [m.tool_call_id for m in replies] == [c["id"] for c in ai.tool_calls]
    assert out["final_answer"].startswith("3 and 4 [R1] [R2]")


def test_sources_name_urls_and_titles() -> None:
    def search(query: str) -> list[dict[str, str]]:
        """Search."""
        return [{"title": "LangGraph docs", "url": "https://example.org/lg", "snippet": "x"}]

    _, _, out = run([tool_call("search", {"query": "q"}), AIMessage("See [R1].")], [search])
    assert "[R1] search — LangGraph docs <https://example.org/lg>" in out["final_answer"]
    assert out["citations"][0]["sources"] == [
        {"url": "https://example.org/lg", "title": "LangGraph docs"}]


def test_a_data_uri_or_a_huge_url_is_no_source_link() -> None:
    # An image as a data: URI went whole into the Sources line (2 MB of base64 in the
    # answer) and into the state's events and citations.
    def draw(prompt: str) -> list[dict[str, str]]:
        """Draw."""
        return [{"title": "a cat", "url": "data:image/png;base64," + "A" * 2_000_000},
                {"title": "a dog", "url": "https://example.org/" + "d" * 5_000},
                {"title": "signed", "url": "https://example.org/s?sig=" + "s" * 1_000}]

    _, _, out = run([tool_call("draw", {"prompt": "cat"}), AIMessage("Here [R1].")], [draw])
    assert [s["title"] for s in out["citations"][0]["sources"]] == ["a cat", "a dog", "signed"]
    assert [len(s["url"]) for s in out["citations"][0]["sources"]] == [0, 0, 1_026]
    assert len(out["final_answer"]) < 1_200 and "a cat" in out["final_answer"]


def test_summaries_are_bounded_and_full_result_kept() -> None:
    def many(n: int) -> list[dict[str, str]]:
        """Many results."""
        return [{"title": f"t{i}", "snippet": "word " * 100} for i in range(n)]

    _, agent, out = run([tool_call("many", {"n": 10}), AIMessage("ok")], [many])
    event = out["tool_events"][0]
    assert len(callgate.get_result(agent, None, "R1")) == 10  # the full result, in the store
    assert len(event["preview"]) <= 200
    summary = event["summary"]
    assert summary.startswith("[many] results: t0: word") and summary.endswith("(+7 more)")
    assert len(summary) <= 900
    items = summary.removeprefix("[many] results: ").removesuffix(" (+7 more)").split(" | ")
    assert len(items) == 3 and all(len(item) <= 200 for item in items)


def test_custom_summarizer_and_limit() -> None:
    reg = ToolRegistry()
    reg.register(add, summarizer=lambda name, data: f"[{name}] sum is {data} " + "x" * 500)
    _, _, out = run([tool_call("add", {"a": 1, "b": 2}), AIMessage("3")], reg,
                    summary_char_limit=100)
    summary = out["tool_events"][0]["summary"]
    assert summary.startswith("[add] sum is 3 ") and len(summary) <= 100


def test_huge_result_is_kept_bounded_without_crashing() -> None:
    def dump(n: int) -> str:
        """A very large text."""
        return "y" * n

    _, agent, out = run([tool_call("dump", {"n": 10_000_000}), AIMessage("big")], [dump])
    event = out["tool_events"][0]
    assert event["ok"] and len(event["summary"]) <= 900 and len(event["preview"]) <= 200
    assert len(callgate.get_result(agent, None, "R1")) == 10_000_000  # kept whole, in the store
    assert all(len(str(m.content)) <= 1000 for m in out["messages"])


def test_dropped_unknown_args_are_reported_in_the_event() -> None:
    _, _, out = run([tool_call("add", {"a": 1, "b": 2, "c": 3}), AIMessage("3")], [add])
    assert out["tool_events"][0]["dropped"] == ["c"] and out["tool_events"][0]["ok"]


def test_chat_mode_answers_without_tools() -> None:
    model = ScriptedChatModel(script=[AIMessage("Just chatting.")])
    out = build_agent(model, [add]).invoke({**ask(), "mode": "chat"})
    assert out["final_answer"] == "Just chatting." and "tools" not in model.requests[0]


def test_repeated_call_is_served_from_cache_then_ends_the_loop() -> None:
    calls = []

    def lookup(key: str) -> str:
        """Look a key up."""
        calls.append(key)
        return key * 2

    model, _, out = run([tool_call("lookup", {"key": "a"}, "c1"),
                         tool_call("lookup", {"key": "a"}, "c2"),
                         tool_call("lookup", {"key": "a"}, "c3"),
                         AIMessage("aa [R1]")], [lookup])
    assert calls == ["a"]  # executed once
    r1, r2, r3 = out["tool_events"]
    assert r2["repeat_of"] == "R1" and r3["repeat_of"] == "R1"
    assert (r2["outcome"], r2["preview"]) == ("repeat", r1["preview"])
    assert "already called at step 1" in r2["summary"]
    assert out["status"] == "done" and model.replies_used == 4


def test_the_result_of_a_repeat_is_the_original_s() -> None:
    # get_result(…, "R2") of a repeat was a bare KeyError: only R1 ran, and was stored.
    _, agent, out = run([tool_call("add", {"a": 2, "b": 3}, "c1"),
                         tool_call("add", {"a": 2, "b": 3}, "c2"),
                         AIMessage("5 [R1]")], [add])
    assert [e["repeat_of"] for e in out["tool_events"]] == [None, "R1"]
    assert callgate.get_result(agent, None, "R2") == 5
    assert asyncio.run(callgate.aget_result(agent, None, "R2")) == 5
    with pytest.raises(KeyError, match="no stored result 'R9'"):
        callgate.get_result(agent, None, "R9")



@pytest.mark.parametrize(("options", "fragment"), [
    ({"tools": add}, "tools is a list of functions or tools"),  # was "not iterable"
    ({"tools": "add"}, "tools is a list of functions or tools"),  # its letters, as tools
    ({"max_stepz": 3}, "build_agent\\(\\) got an unexpected keyword argument 'max_stepz'; "
                       "its options are .*max_steps"),  # named LoopSettings
    ({"store": True}, "store must be a LangGraph BaseStore"),  # failed at the first run
    ({"stats": 1}, "stats must be a UsageStats"),  # raised out of invoke
    ({"auto_approve": "yes"}, "auto_approve must be True, False or a function")])  # was "ask"
def test_a_bad_build_option_is_a_type_error_naming_it(options: dict[str, Any],
                                                      fragment: str) -> None:
    model = ScriptedChatModel(script=[AIMessage("unused")])
    with pytest.raises(TypeError, match=fragment):
        build_agent(model, **{"tools": [add], **options})


def test_a_tool_choice_that_names_no_tool_is_refused_when_built() -> None:
    model = ScriptedChatModel(script=[AIMessage("unused")])
    with pytest.raises(ValueError, match="tool_choice 'ad' is no tool .* the tools are add"):
        build_agent(model, [add], tool_choice="ad")
    for choice in ("add", "required"):
        assert build_agent(model, [add], tool_choice=choice) is not None


def test_a_model_that_fails_the_last_answer_leaves_a_failed_status() -> None:
    def down(_messages: list[Any]) -> AIMessage:
        raise ValueError("model server returned 400")

    model, _, out = run([tool_call("add", {"a": 1, "b": 2}, "c1"),
                         tool_call("add", {"a": 1, "b": 2}, "c2"),
                         tool_call("add", {"a": 1, "b": 2}, "c3"), down], [add])
    assert out["status"] == "failed" and out["answer_source"] == "loop"
    assert "the model failed: model server returned 400" in out["final_answer"]
    assert "[R1] [add] 3" in out["final_answer"]  # what the turn gathered is kept


def test_custom_stream_reports_tool_start_and_end() -> None:
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3")])
    agent = build_agent(model, [add])
    events = [chunk for chunk in agent.stream(ask(), stream_mode="custom")]
    kinds = [e["event"] for e in events if e.get("event") in ("tool_start", "tool_end")]
    assert kinds == ["tool_start", "tool_end"]
    assert [e["phase"] for e in events if e.get("event") == "status"][0] == "thinking"
    end = next(e for e in events if e.get("event") == "tool_end")
    assert end["tool"] == "add" and end["ok"] and end["duration_ms"] >= 0


async def test_async_invoke() -> None:
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]")])
    agent = build_agent(model, [add])
    out = await agent.ainvoke(ask())
    assert out["status"] == "done" and callgate.get_result(agent, None, "R1") == 3


def test_threads_resume_and_ids_stay_stable(tmp_path) -> None:
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}, "c1"), AIMessage("3"),
                                      tool_call("add", {"a": 2, "b": 2}, "c2"), AIMessage("4")])
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        agent = build_agent(model, [add], checkpointer=saver)
        config = {"configurable": {"thread_id": "t1"}}
        agent.invoke(ask("1+2"), config)
        out = agent.invoke(ask("2+2"), config)
    assert [e["id"] for e in out["tool_events"]] == ["R1", "R2"]
    assert out["tools_used"] == ["add"] and out["final_answer"].startswith("4")
    assert [c["id"] for c in out["citations"]] == ["R2"]  # only this turn's results


def _cancel_soon(thread_id: str, started: threading.Event) -> threading.Thread:
    def cancel_when_started() -> None:
        started.wait(5)
        time.sleep(0.1)
        callgate.cancel(thread_id)

    thread = threading.Thread(target=cancel_when_started)
    thread.start()
    return thread


def test_cancellation_mid_tool(tmp_path) -> None:
    started, finished, was_cancelled = threading.Event(), threading.Event(), threading.Event()

    async def crawl(url: str) -> str:
        """Crawl a site (slowly)."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            was_cancelled.set()
            raise
        finished.set()
        return url

    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 1}, "c1"),
                                      tool_call("crawl", {"url": "x"}, "c2"),
                                      AIMessage("never")])
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        agent = build_agent(model, [add, crawl], checkpointer=saver)
        config = {"configurable": {"thread_id": "cancel-me"}}
        canceller = _cancel_soon("cancel-me", started)
        out = agent.invoke(ask(), config)
        canceller.join()
        saved = agent.get_state(config).values
    assert out["status"] == "cancelled" and was_cancelled.is_set() and not finished.is_set()
    assert [(e["tool"], e["outcome"]) for e in out["tool_events"]] == [
        ("add", "ok"), ("crawl", "cancelled")]
    assert "cancelled after 2 step(s)" in out["final_answer"]
    assert model.replies_used == 2  # no model call after the cancel
    assert saved["status"] == "cancelled" and len(saved["tool_events"]) == 2
    assert "cancel-me" not in pending_requests()  # the run removed the request it honoured
    assert [p["outcome"] for p in out["problems"]] == ["cancelled"]


def test_cancel_token_in_config() -> None:
    token = callgate.CancelToken()
    token.cancel()
    model = ScriptedChatModel(script=[AIMessage("never")])
    out = build_agent(model, [add]).invoke(
        ask(), {"configurable": {"cancel_token": token}})
    assert out["status"] == "cancelled" and model.replies_used == 0


def test_resume_after_crash_continues_where_it_stopped(tmp_path) -> None:
    """A model error mid-run propagates; the checkpoint lets the same thread go on."""
    path = str(tmp_path / "cp.sqlite")
    failing = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}, "c1")])
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(path) as saver, pytest.raises(RuntimeError,
                                                                    match="script exhausted"):
        build_agent(failing, [add], checkpointer=saver).invoke(ask(), config)
    working = ScriptedChatModel(script=[AIMessage("3 [R1]")])
    with SqliteSaver.from_conn_string(path) as saver:
        agent = build_agent(working, [add], checkpointer=saver)
        assert agent.get_state(config).next == ("decide",)
        out = agent.invoke(None, config)
    assert out["final_answer"].startswith("3 [R1]") and len(out["tool_events"]) == 1


def test_no_checkpointer_in_memory_saver_roundtrip() -> None:
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), AIMessage("3")])
    agent = build_agent(model, [add], checkpointer=InMemorySaver())
    out = agent.invoke(ask(), {"configurable": {"thread_id": "m"}})
    assert out["status"] == "done"


def test_call_cut_off_by_the_token_limit_is_never_run() -> None:
    cut = AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1",
                                     "type": "tool_call"}],
                    response_metadata={"finish_reason": "length"})
    model, _, out = run([cut, tool_call("add", {"a": 1, "b": 2}), AIMessage("3 [R1]")], [add])
    correction = next(m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage))
    assert "cut off by the token limit" in correction.content
    assert [e["args"] for e in out["tool_events"]] == [{"a": 1, "b": 2}]


# --- calls a server left in the text ----------------------------------------------------


@pytest.mark.parametrize("content", [
    '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>',
    'Let me add. [TOOL_CALLS] [{"name": "add", "arguments": {"a": 2, "b": 3}}]',
    '{"name": "add", "parameters": {"a": 2, "b": 3}}',
    '```json\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n```',
    '<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a": 2, "b": 3}<|call|>',
    'functions.add:\n{"a": 2, "b": 3}',  # llama-cpp-python's chatml-function-calling
    'Let me add.>>>add\n{"a": 2, "b": 3}',  # Functionary v3.2
    'add\n{"a": 2, "b": 3}',  # its first call, without ">>>"
    '<|from|>assistant\n<|recipient|>add\n<|content|>{"a": 2, "b": 3}<|stop|>',  # v2
])
def test_a_call_left_in_the_text_is_made(content: str) -> None:
    # A server that does not parse the model's call markup returns it as the text (scripted
    # native model): the loop reads the call, rather than showing the markup or "no answer"
    # and saying it was done.
    model, _agent, out = run([AIMessage(content), AIMessage("It is 5 [R1].")], [add])
    assert [(e["tool"], e["args"], e["ok"]) for e in out["tool_events"]] == [
        ("add", {"a": 2, "b": 3}, True)]
    assert out["status"] == "done" and out["final_answer"].startswith("It is 5 [R1].")
    assert not any(marker in out["final_answer"] for marker in MARKUP)


def test_a_cut_off_call_in_the_text_goes_back_for_correction() -> None:
    model, _agent, out = run([AIMessage('<tool_call>{"name": "add", "arguments": {"a": 2'),
                              tool_call("add", {"a": 2, "b": 3}), AIMessage("It is 5 [R1].")],
                             [add])
    correction = model.requests[1]["messages"][-1].text
    assert "incomplete" in correction, correction
    assert [(e["tool"], e["ok"]) for e in out["tool_events"]] == [("add", True)]
    assert out["final_answer"].startswith("It is 5 [R1].")


def test_the_issues_native_answer_goes_back_for_correction() -> None:
    # The accuracy issue's native-path answer, a call label over an HTML-escaped object that
    # is no JSON (scripted native model): a correction, never the answer.
    model, _agent, out = run([AIMessage("function.add:\n{&#34;a=2 &#34;}"),
                              tool_call("add", {"a": 2, "b": 3}), AIMessage("It is 5 [R1].")],
                             [add])
    assert "JSON object" in model.requests[1]["messages"][-1].text
    assert [(e["tool"], e["ok"]) for e in out["tool_events"]] == [("add", True)]
    assert out["final_answer"].startswith("It is 5 [R1].") and "&#34;" not in out["final_answer"]


@pytest.mark.parametrize(("content", "answer"), [
    ("Thought: easy.\nThe answer is 5.", "The answer is 5."),
    # A call named in prose, or shown as an example, is the answer's text, not a call.
    ("You could call add(a=2, b=3) yourself.", "You could call add(a=2, b=3) yourself."),
    ('A call looks like {"name": "add", "arguments": {"a": 2, "b": 3}} in JSON.',
     'A call looks like {"name": "add", "arguments": {"a": 2, "b": 3}} in JSON.'),
])
def test_a_text_answer_stays_the_answer(content: str, answer: str) -> None:
    _model, _agent, out = run([AIMessage(content)], [add])
    assert out["tool_events"] == [] and out["final_answer"] == answer
