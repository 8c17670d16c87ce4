"""The custom stream events follow their documented TypedDicts (``callgate.graph.events``),
on the sync and async paths (the server path is in test_studio.py). The model is a
``ScriptedChatModel`` (fixed replies, not a language model)."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import TypeAdapter

from callgate import build_agent
from callgate.graph.events import (
    CallRefusedEvent,
    StatusEvent,
    StreamEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from callgate.models.scripted import ScriptedChatModel

KINDS = {"tool_start": ToolStartEvent, "tool_end": ToolEndEvent, "status": StatusEvent,
         "call_refused": CallRefusedEvent}
ADAPTER: TypeAdapter[Any] = TypeAdapter(StreamEvent)


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def boom(x: str) -> str:
    """Fails."""
    raise ValueError(x)


def agent() -> Any:
    both = AIMessage("", tool_calls=[
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1", "type": "tool_call"},
        {"name": "boom", "args": {"x": "no"}, "id": "c2", "type": "tool_call"}])
    return build_agent(ScriptedChatModel(script=[both, AIMessage("3 [R1]")]), [add, boom])


def check(events: list[dict[str, Any]]) -> None:
    for event in events:
        kind = KINDS[event["event"]]
        assert set(event) == set(get_type_hints(kind)), event  # exactly the documented keys
        ADAPTER.validate_python(event)
    seen = [e["event"] for e in events]
    assert seen.count("tool_start") == seen.count("tool_end") == 2
    ends = {e["id"]: e for e in events if e["event"] == "tool_end"}
    assert (ends["c1"]["outcome"], ends["c1"]["result_id"]) == ("ok", "R1")
    assert (ends["c2"]["outcome"], ends["c2"]["ok"]) == ("error", False)
    phases = [e["phase"] for e in events if e["event"] == "status"]
    assert phases[0] == "thinking" and "calling" in phases


def test_sync_stream_events_follow_the_contract() -> None:
    check(list(agent().stream({"messages": [HumanMessage("go")]}, stream_mode="custom")))


async def test_async_stream_events_follow_the_contract() -> None:
    check([e async for e in agent().astream({"messages": [HumanMessage("go")]},
                                            stream_mode="custom")])


def test_an_unknown_event_shape_is_refused_by_the_contract() -> None:
    with pytest.raises(ValueError):
        ADAPTER.validate_python({"event": "tool_end", "id": "c1"})


def test_a_call_that_did_not_run_ends_without_starting() -> None:
    # The scripted model calls ``add`` with a string twice: the first call is sent back for
    # the correction (call_refused), the second is refused as invalid with the correction
    # spent. Its tool_end says so; neither had a tool_start.
    bad = [AIMessage("", tool_calls=[{"name": "add", "args": {"a": "one", "b": 2},
                                      "id": f"c{n}", "type": "tool_call"}]) for n in (1, 2)]
    graph = build_agent(ScriptedChatModel(script=[*bad, AIMessage("I could not add them.")]),
                        [add])
    events = list(graph.stream({"messages": [HumanMessage("add one and 2")]},
                               stream_mode="custom"))
    for event in events:
        assert set(event) == set(get_type_hints(KINDS[event["event"]])), event
        ADAPTER.validate_python(event)
    assert not [e for e in events if e["event"] == "tool_start"]
    (sent_back,) = [e for e in events if e["event"] == "call_refused"]
    assert (sent_back["id"], sent_back["outcome"], sent_back["args"]) == (
        "c1", "invalid", {"a": "one", "b": 2})
    assert "argument 'a'" in sent_back["error"]
    (end,) = [e for e in events if e["event"] == "tool_end"]
    assert (end["id"], end["tool"], end["outcome"], end["ok"]) == ("c2", "add", "invalid", False)
    assert end["result_id"] == "R1" and end["duration_ms"] == 0.0
    assert "argument 'a'" in end["error"]
