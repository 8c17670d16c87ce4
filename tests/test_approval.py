"""Approval of sensitive calls (LangGraph ``interrupt``), and duplicate detection on a
thread resumed in another process. Models here are ``ScriptedChatModel``: fixed replies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from callgate import ToolRegistry, build_agent
from callgate.models.scripted import ScriptedChatModel, tool_call

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def deleted() -> list[str]:
    return []


@pytest.fixture
def tools(deleted: list[str]) -> ToolRegistry:
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def shell(command: str) -> str:
        """Run a shell command (pretend)."""
        deleted.append(command)
        return "ok"

    registry = ToolRegistry()
    registry.register(delete_file, sensitive=True)
    registry.register(shell)
    return registry


@pytest.fixture
def saver(tmp_path: Path):
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as checkpointer:
        yield checkpointer


CONFIG: dict[str, Any] = {"configurable": {"thread_id": "approval"}}


def agent_for(script: list[Any], tools: ToolRegistry, saver: Any, **kwargs: Any):
    model = ScriptedChatModel(script=script)
    return model, build_agent(model, tools, checkpointer=saver, **kwargs)


def test_interrupt_then_approve(tools, saver, deleted) -> None:
    model, agent = agent_for([tool_call("delete_file", {"path": "a.txt"}, "c1"),
                              AIMessage("Deleted [R1].")], tools, saver)
    paused = agent.invoke({"messages": [("user", "delete a.txt")]}, CONFIG)
    [request] = paused["__interrupt__"]
    # LangChain's human-in-the-loop request format (HumanInTheLoopMiddleware's)
    [action] = request.value["action_requests"]
    assert action["name"] == "delete_file" and action["args"] == {"path": "a.txt"}
    assert "sensitive" in action["description"]
    assert request.value["review_configs"][0]["allowed_decisions"] == [
        "approve", "edit", "reject"]
    assert deleted == [] and agent.get_state(CONFIG).next == ("approve",)
    out = agent.invoke(Command(resume={"action": "approve"}), CONFIG)
    assert deleted == ["a.txt"] and out["status"] == "done"
    assert out["tool_events"][0]["ok"] and out["final_answer"].startswith("Deleted [R1].")


def test_edit_is_validated_again(tools, saver, deleted) -> None:
    _, agent = agent_for([tool_call("delete_file", {"path": "a.txt"}, "c1"),
                          AIMessage("done")], tools, saver)
    agent.invoke({"messages": [("user", "delete")]}, CONFIG)
    out = agent.invoke(Command(resume={"action": "edit", "args": {"path": "b.txt"}}), CONFIG)
    assert deleted == ["b.txt"] and out["tool_events"][0]["args"] == {"path": "b.txt"}


def test_invalid_edit_is_denied(tools, saver, deleted) -> None:
    model, agent = agent_for([tool_call("delete_file", {"path": "a.txt"}, "c1"),
                              AIMessage("not deleted")], tools, saver)
    agent.invoke({"messages": [("user", "delete")]}, CONFIG)
    out = agent.invoke(Command(resume={"action": "edit", "args": {"path": 5}}), CONFIG)
    assert deleted == []
    event = out["tool_events"][0]
    assert event["outcome"] == "denied" and "edited arguments were invalid" in event["error"]
    assert "expected string, got integer 5" in event["error"]


def test_reject_tells_the_model(tools, saver, deleted) -> None:
    model, agent = agent_for([tool_call("delete_file", {"path": "a.txt"}, "c1"),
                              AIMessage("I did not delete it.")], tools, saver)
    agent.invoke({"messages": [("user", "delete")]}, CONFIG)
    out = agent.invoke(Command(resume={"action": "reject", "reason": "keep it"}), CONFIG)
    assert deleted == [] and out["status"] == "done"
    seen = [m for m in model.requests[1]["messages"] if isinstance(m, ToolMessage)][-1]
    assert "rejected by the user: keep it" in seen.content and seen.status == "error"
    assert out["tools_used"] == []


def test_two_sensitive_calls_are_decided_together(tools, saver, deleted) -> None:
    both = AIMessage("", tool_calls=[
        {"name": "delete_file", "args": {"path": "a"}, "id": "c1", "type": "tool_call"},
        {"name": "delete_file", "args": {"path": "b"}, "id": "c2", "type": "tool_call"}])
    _, agent = agent_for([both, AIMessage("a gone")], tools, saver)
    first = agent.invoke({"messages": [("user", "delete a and b")]}, CONFIG)
    requests = first["__interrupt__"][0].value["action_requests"]
    assert [r["args"] for r in requests] == [{"path": "a"}, {"path": "b"}]
    assert deleted == []  # nothing runs until every answer is in
    out = agent.invoke(Command(resume={"decisions": [
        {"type": "approve"}, {"type": "reject", "message": "keep b"}]}), CONFIG)
    assert deleted == ["a"]  # ran exactly once; b was refused
    assert [e["outcome"] for e in out["tool_events"]] == ["ok", "denied"]
    assert out["problems"] == [{"id": "R2", "tool": "delete_file", "outcome": "denied",
                                "error": "rejected by the user: keep b"}]


def test_fail_closed_without_a_checkpointer(tools, deleted) -> None:
    model = ScriptedChatModel(script=[tool_call("delete_file", {"path": "a"}),
                                      AIMessage("could not")])
    out = build_agent(model, tools).invoke({"messages": [("user", "delete a")]})
    assert deleted == []
    event = out["tool_events"][0]
    assert event["outcome"] == "denied" and "cannot pause" in event["error"]
    assert "checkpointer" in event["error"] and "approval='auto'" in event["error"]


def test_auto_approve(tools, deleted) -> None:
    model = ScriptedChatModel(script=[tool_call("delete_file", {"path": "a"}), AIMessage("ok")])
    build_agent(model, tools, auto_approve=True).invoke({"messages": [("user", "delete a")]})
    assert deleted == ["a"]


def test_a_runs_deny_stands_over_a_build_time_approver(tools, deleted) -> None:
    # A callable auto_approve had approved the call before the run's "deny" was read.
    model = ScriptedChatModel(script=[tool_call("delete_file", {"path": "a"}), AIMessage("ok")],
                              loop=True)
    agent = build_agent(model, tools, auto_approve=lambda call: True)
    out = agent.invoke({"messages": [("user", "delete a")]}, context={"approval": "deny"})
    assert deleted == [] and out["tool_events"][0]["outcome"] == "denied"
    agent.invoke({"messages": [("user", "delete a")]})  # without it, the callable approves
    assert deleted == ["a"]


@pytest.mark.parametrize(("command", "asks"), [
    ("rm -rf /tmp/x", True), ("sudo reboot", True), ("git push origin main", True),
    ("psql -c 'DROP TABLE users'", True), ("ls -la", False), ("git status", False)])
def test_dangerous_arguments_need_approval(tools, saver, deleted, command, asks) -> None:
    _, agent = agent_for([tool_call("shell", {"command": command}), AIMessage("ok")],
                         tools, saver)
    out = agent.invoke({"messages": [("user", "run it")]}, CONFIG)
    assert ("__interrupt__" in out) is asks
    assert deleted == ([] if asks else [command])


def test_duplicates_are_detected_across_processes(tmp_path: Path) -> None:
    """Process 1 calls lookup('a') then pauses on an approval; process 2 resumes the thread
    from the SQLite checkpoint, and the model's repeat of lookup('a') is not run again."""
    (tmp_path / "dupe_tools.py").write_text(textwrap.dedent(f'''
        from pathlib import Path
        from callgate import ToolRegistry
        LOG = Path({str(tmp_path / "calls.log")!r})

        def lookup(key: str) -> str:
            """Look a key up."""
            with LOG.open("a") as log:
                log.write(key + "\\n")
            return key * 2

        def wipe(target: str) -> str:
            """Wipe something."""
            return "wiped"

        def registry():
            reg = ToolRegistry()
            reg.register(lookup)
            reg.register(wipe, sensitive=True)
            return reg
    '''))
    first = textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from langchain_core.messages import AIMessage
        from langgraph.checkpoint.sqlite import SqliteSaver
        from callgate import build_agent
        from callgate.models.scripted import ScriptedChatModel, tool_call
        from dupe_tools import registry
        model = ScriptedChatModel(script=[tool_call("lookup", {{"key": "a"}}, "c1"),
                                          tool_call("wipe", {{"target": "x"}}, "c2")])
        with SqliteSaver.from_conn_string({str(tmp_path / "cp.sqlite")!r}) as saver:
            agent = build_agent(model, registry(), checkpointer=saver)
            out = agent.invoke({{"messages": [("user", "go")]}},
                               {{"configurable": {{"thread_id": "t"}}}})
            assert "__interrupt__" in out
    ''')
    subprocess.run([sys.executable, "-c", first], check=True, cwd=REPO)
    sys.path.insert(0, str(tmp_path))
    try:
        from dupe_tools import registry  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    model = ScriptedChatModel(script=[tool_call("lookup", {"key": "a"}, "c3"),
                                      AIMessage("aa [R1]")])
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        agent = build_agent(model, registry(), checkpointer=saver)
        out = agent.invoke(Command(resume={"action": "approve"}),
                           {"configurable": {"thread_id": "t"}})
    assert (tmp_path / "calls.log").read_text().split() == ["a"]  # ran once, in process 1
    assert [e["repeat_of"] for e in out["tool_events"]] == [None, None, "R1"]
    assert out["tool_events"][2]["outcome"] == "repeat"
    assert out["tool_events"][2]["preview"] == "aa"
