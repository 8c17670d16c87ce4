"""The module-level graph that langgraph.json points LangGraph Studio at."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.servers import langgraph_dev_server

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.llama
def test_langgraph_json_points_at_a_graph_without_its_own_checkpointer() -> None:
    spec = json.loads((REPO / "langgraph.json").read_text())
    module_path, attr = spec["graphs"]["callgate"].split(":")
    assert (REPO / module_path).is_file() and attr == "graph"

    from callgate.studio import graph

    assert graph.checkpointer is None and graph.store is None  # the server supplies both
    nodes = set(graph.get_graph().nodes)
    assert {"decide", "validate", "correct", "approve", "execute", "summarize", "cite"} <= nodes
    xray = set(graph.get_graph(xray=True).nodes)
    assert {"decide:choose", "decide:fill_args", "decide:parse"} <= xray
    out = graph.invoke({"messages": [("user", "Say hello.")], "mode": "chat"})
    assert out["status"] == "done" and out["final_answer"]


# --- The graph served by LangGraph Server (`langgraph dev`), driven through langgraph_sdk ---
#
# The server imports callgate/studio.py as langgraph.json says, with a rule-based scripted
# chat model (no language model: fixed replies chosen by the question's first word) picked
# through $CALLGATE_MODEL/$CALLGATE_MODELS, and plain Python tools from a tools.yml.

# Context fields, approval decisions in LangChain's HITL format and the result store land
# with issue 11 (the graph rewrite); until then the tests that need them are expected to fail.
CONTEXT_FIELDS = {"max_steps", "tool_timeout_s", "summary_char_limit", "grounding",
                  "max_calls_per_step", "approval"}

STUDIO_MODEL = '''
"""A scripted chat model for the server test: the question's first word picks the reply."""
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import Field

from callgate.models.scripted import ScriptedChatModel, tool_call


def reply(messages: list[BaseMessage]) -> AIMessage:
    if isinstance(messages[-1], ToolMessage):
        # The <think> block must not reach the streamed tokens (sanitized).
        return AIMessage("<think>the tool answered</think>Done: the tool ran [R1].")
    question = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    word, _, rest = question.partition(" ")
    if word in ("note", "wipe"):
        return tool_call(word, {"text" if word == "note" else "target": rest})
    if word == "slow":  # a fast call and a slow one in the same step
        return AIMessage("", tool_calls=[
            {"name": "note", "args": {"text": "before slow"}, "id": "fast", "type": "tool_call"},
            {"name": "slow", "args": {"seconds": float(rest)}, "id": "slow",
             "type": "tool_call"}])
    return AIMessage(f"You said: {question}")


class StudioModel(ScriptedChatModel):
    script: list[Any] = Field(default_factory=lambda: [reply])
    loop: bool = True
'''

STUDIO_TOOLS = '''
"""Plain Python tools that log their side effects to $CG_LOG/calls.log."""
import os
import time
from pathlib import Path


def _log(line: str) -> None:
    with (Path(os.environ["CG_LOG"]) / "calls.log").open("a") as f:
        f.write(line + "\\n")


def note(text: str) -> str:
    _log(f"note {text}")
    return f"noted {text}"


def wipe(target: str) -> str:
    _log(f"wipe {target}")
    return f"wiped {target}"


def slow(seconds: float) -> str:
    _log("slow started")
    time.sleep(seconds)
    _log("slow finished")
    return "slept"
'''

# A second graph on the same server: a model that writes text (the ReAct path, as the bundled
# model's), whose answer tokens stream from inside the decide subgraph.
REACT_GRAPH = '''
from callgate import build_agent
from callgate.models.scripted import ScriptedChatModel


def reply(messages):
    return "Thought: I know it.\\nFinal Answer: The machine is idle today."


graph = build_agent(ScriptedChatModel(native_tools=False, loop=True, script=[reply]), [],
                    store=False, name="callgate-react")
'''

TOOLS_YML = """
tools:
  - {name: note, description: Save a note., module: studio_tools.py, function: note,
     parameters_schema: {type: object, properties: {text: {type: string}}, required: [text]}}
  - {name: wipe, description: Wipe a target., module: studio_tools.py, function: wipe,
     sensitive: true,
     parameters_schema: {type: object, properties: {target: {type: string}},
                         required: [target]}}
  - {name: slow, description: Wait some seconds., module: studio_tools.py, function: slow,
     timeout_s: 60,
     parameters_schema: {type: object, properties: {seconds: {type: number}},
                         required: [seconds]}}
"""


@dataclass
class Studio:
    client: SyncLangGraphClient
    assistant_id: str
    folder: Path
    url: str

    @property
    def log(self) -> list[str]:
        file = self.folder / "calls.log"
        return file.read_text().split("\n")[:-1] if file.exists() else []

    def ask(self, question: str, thread_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        thread = thread_id or self.client.threads.create()["thread_id"]
        out = self.client.runs.wait(thread, self.assistant_id, input={
            "messages": [{"role": "user", "content": question}]}, **kwargs)
        return thread, out

    def resume(self, thread_id: str, answer: Any) -> Any:
        return self.client.runs.wait(thread_id, self.assistant_id,
                                     command={"resume": answer})


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    folder = tmp_path_factory.mktemp("studio")
    (folder / "studio_model.py").write_text(STUDIO_MODEL)
    (folder / "studio_tools.py").write_text(STUDIO_TOOLS)
    (folder / "tools.yml").write_text(TOOLS_YML)
    (folder / "react_graph.py").write_text(REACT_GRAPH)
    (folder / "models.yaml").write_text(
        'models:\n  studio-test: {provider: custom, class: "studio_model:StudioModel"}\n')
    # The project's langgraph.json with its paths made absolute, so that the server can run
    # in the temporary folder (its .langgraph_api/ goes there).
    spec = json.loads((REPO / "langgraph.json").read_text())
    # An "env" file would override the environment below (langgraph dev loads it over it).
    assert "env" not in spec
    module_path, attr = spec["graphs"]["callgate"].split(":")
    config = folder / "langgraph.json"
    config.write_text(json.dumps({
        **spec, "dependencies": [str((REPO / d).resolve()) for d in spec["dependencies"]],
        "graphs": {"callgate": f"{(REPO / module_path).resolve()}:{attr}",
                   "callgate-react": f"{folder / 'react_graph.py'}:graph"}}))
    env = {"CALLGATE_MODEL": "studio-test", "CALLGATE_MODELS": str(folder / "models.yaml"),
           "CALLGATE_TOOLS": str(folder / "tools.yml"), "CG_LOG": str(folder),
           "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)])}
    with langgraph_dev_server(config, env=env) as url:
        client = get_sync_client(url=url, timeout=60)
        [assistant] = client.assistants.search(graph_id="callgate")
        yield Studio(client, assistant["assistant_id"], folder, url)


def dangling_calls(messages: list[dict[str, Any]]) -> list[str]:
    """Tool calls in the thread's messages that no tool message answers."""
    answered = {m.get("tool_call_id") for m in messages if m["type"] == "tool"}
    return [c["id"] for m in messages if m["type"] == "ai"
            for c in m.get("tool_calls") or [] if c["id"] not in answered]


def asked(interrupts: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The (tool, args) approval interrupts ask about, in either request format."""
    calls = []
    for item in interrupts:
        value = item["value"]
        if "action_requests" in value:  # LangChain's HITL request
            calls += [(r["name"], r["args"]) for r in value["action_requests"]]
        else:  # callgate's older format
            calls.append((value["call"]["name"], value["call"]["args"]))
    return calls


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_lists_the_assistant_and_answers(studio: Studio) -> None:
    [assistant] = studio.client.assistants.search(graph_id="callgate")
    assert assistant["graph_id"] == "callgate"
    _, out = studio.ask("note hello")
    assert {"final_answer", "tool_events", "tools_used", "citations", "status",
            "messages"} <= set(out)
    assert out["status"] == "done" and out["tools_used"] == ["note"]
    assert out["final_answer"].startswith("Done: the tool ran [R1].")
    assert [(e["tool"], e["ok"]) for e in out["tool_events"]] == [("note", True)]
    assert [c["id"] for c in out["citations"]] == ["R1"]
    assert "note hello" in studio.log


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_keeps_full_results_in_its_store(studio: Studio) -> None:
    thread, out = studio.ask("note kept")
    [event] = out["tool_events"]
    # callgate.graph.results: namespace ("callgate", "results", thread_id), key = result id
    item = studio.client.store.get_item(["callgate", "results", thread], key=event["id"])
    assert item["value"]["tool"] == "note" and item["value"]["data"] == "noted kept"


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_streams_tool_events_and_sanitized_tokens(studio: Studio) -> None:
    thread = studio.client.threads.create()["thread_id"]
    custom: list[dict[str, Any]] = []
    tokens: list[str] = []
    for part in studio.client.runs.stream(
            thread, studio.assistant_id, stream_mode=["custom", "messages-tuple"],
            input={"messages": [{"role": "user", "content": "note streamed"}]}):
        if part.event == "custom":
            custom.append(part.data)
        elif part.event == "messages":
            chunk, _meta = part.data
            if chunk["type"] == "AIMessageChunk" and isinstance(chunk["content"], str):
                tokens.append(chunk["content"])
    tool_events = [e for e in custom if e["event"] in ("tool_start", "tool_end")]
    assert [(e["event"], e["tool"]) for e in tool_events] == [("tool_start", "note"),
                                                              ("tool_end", "note")]
    assert tool_events[0]["args"] == {"text": "streamed"} and tool_events[1]["ok"] is True
    text = "".join(tokens)
    assert "Done: the tool ran [R1]." in text
    assert "<think>" not in text and "the tool answered" not in text


@pytest.mark.server
@pytest.mark.timeout(120)
def test_the_readmes_sdk_stream_gives_a_react_models_answer_tokens(studio: Studio) -> None:
    # The README's langgraph_sdk snippet, as written, up to the thread's state: without
    # stream_subgraphs it streamed no token of a ReAct model's answer (the bundled model's).
    text = (REPO / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL)
               if "from langgraph_sdk import get_sync_client" in b]
    code = block[:block.index("client.runs.wait(")]
    code = code.replace('"http://127.0.0.1:2024"', repr(studio.url))
    code = code.replace('"callgate"', '"callgate-react"')
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, {})  # noqa: S102 - the README's own code
    tokens = [line for line in printed.getvalue().splitlines()
              if line.startswith("messages") and "AIMessageChunk" in line]
    assert any("The machine is idle today." in line for line in tokens), printed.getvalue()
    assert not any("Final Answer" in line or "Thought" in line for line in tokens)


@pytest.mark.server
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("answer", "log", "ran"), [
    pytest.param({"action": "approve"}, ["wipe a"], True, id="approve"),
    pytest.param({"action": "edit", "args": {"target": "b"}}, ["wipe b"], True, id="edit"),
    pytest.param({"action": "reject", "reason": "keep it"}, [], False, id="reject"),
])
def test_server_approval_shorthand(studio: Studio, answer: dict[str, Any], log: list[str],
                                   ran: bool) -> None:
    before = list(studio.log)
    thread, out = studio.ask("wipe a")
    interrupts = studio.client.threads.get_state(thread)["interrupts"]
    assert asked(interrupts) == [("wipe", {"target": "a"})]
    assert studio.log == before  # nothing runs before the answer
    out = studio.resume(thread, answer)
    assert out["status"] == "done"
    assert studio.log == before + log
    [event] = out["tool_events"]
    assert event["ok"] is ran and event["args"] == ({"target": "b"} if log == ["wipe b"]
                                                    else {"target": "a"})
    assert dangling_calls(out["messages"]) == []


@pytest.mark.server
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("decision", "log"), [
    pytest.param({"type": "approve"}, ["wipe c"], id="approve"),
    pytest.param({"type": "edit", "edited_action": {"name": "wipe", "args": {"target": "d"}}},
                 ["wipe d"], id="edit"),
    pytest.param({"type": "reject", "message": "no"}, [], id="reject"),
])
def test_server_approval_in_hitl_format(studio: Studio, decision: dict[str, Any],
                                        log: list[str]) -> None:
    before = list(studio.log)
    thread, _ = studio.ask("wipe c")
    [interrupt] = studio.client.threads.get_state(thread)["interrupts"]
    request = interrupt["value"]
    # LangChain's HITLRequest, as HumanInTheLoopMiddleware emits it (Studio renders it).
    assert request["action_requests"] == [
        {**request["action_requests"][0], "name": "wipe", "args": {"target": "c"}}]
    assert request["review_configs"][0]["action_name"] == "wipe"
    assert {"approve", "edit", "reject"} <= set(request["review_configs"][0][
        "allowed_decisions"])
    out = studio.resume(thread, {"decisions": [decision]})
    assert out["status"] == "done" and studio.log == before + log


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_cancel_leaves_the_thread_consistent(studio: Studio) -> None:
    client = studio.client
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, studio.assistant_id, input={
        "messages": [{"role": "user", "content": "slow 20"}]})
    deadline = time.monotonic() + 60
    while not {"slow started", "note before slow"} <= set(studio.log):
        assert time.monotonic() < deadline, "the slow tool never started"
        time.sleep(0.1)
    started = time.monotonic()
    client.runs.cancel(thread, run["run_id"], wait=True)
    assert time.monotonic() - started < 10  # the run did not wait for the tool to finish
    assert client.runs.get(thread, run["run_id"])["status"] == "interrupted"
    assert client.threads.get(thread)["status"] != "busy"
    _, out = studio.ask("note after", thread_id=thread)
    assert out["status"] == "done" and out["final_answer"].startswith("Done: the tool ran")
    questions = [m["content"] for m in out["messages"] if m["type"] == "human"]
    assert questions == ["slow 20", "note after"]
    # The next turn ran its own call and did not run the cancelled step's finished call again.
    assert studio.log.count("note before slow") == 1 and "note after" in studio.log
    assert not any(e["ok"] for e in out["tool_events"] if e["tool"] == "slow")
    assert dangling_calls(out["messages"]) == []


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_exposes_the_run_context_schema(studio: Studio) -> None:
    schemas = studio.client.assistants.get_schemas(studio.assistant_id)
    assert schemas["graph_id"] == "callgate"
    assert "messages" in schemas["input_schema"]["properties"]
    assert {"final_answer", "status"} <= set(schemas["output_schema"]["properties"])
    context = schemas.get("context_schema")
    assert set(context["properties"]) >= CONTEXT_FIELDS
    assert context["properties"]["approval"].get("enum") == ["ask", "auto", "deny"]


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_run_context_sets_the_approval_policy(studio: Studio) -> None:
    before = list(studio.log)
    _, out = studio.ask("wipe e", context={"approval": "deny"})
    assert "__interrupt__" not in out and out["status"] == "done"
    assert studio.log == before  # denied without asking
    [event] = out["tool_events"]
    assert event["ok"] is False and "deny" in (event["error"] or "")


@pytest.mark.server
@pytest.mark.timeout(120)
def test_server_drops_a_context_field_the_schema_does_not_name(studio: Studio) -> None:
    # As the README says: Python refuses it (tests/test_loop.py), the server filters it out
    # before the graph sees it, so the misspelt "aproval" leaves the approval policy at ask.
    before = list(studio.log)
    thread, _ = studio.ask("wipe f", context={"aproval": "deny"})
    assert asked(studio.client.threads.get_state(thread)["interrupts"]) == [
        ("wipe", {"target": "f"})]
    assert studio.log == before
