"""The ``start`` node: opens a user turn.

It resets the per-turn counters and closes what an earlier turn left open — a turn
paused for approval and then answered with a new message instead, or a turn stopped by a
crash or a server-side cancel: every ``tool_call`` of the history gets its answer
(calls that had finished keep their results; calls awaiting approval are ``denied``; the
rest ``cancelled``), so the thread stays valid for any model.

A finished call's result is in the state, else in the checkpoint the new message was
applied to, as a pending write of its step (``StateSnapshot.tasks``: LangGraph drops those
for a new input, keeping them only for a resume), else in the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from callgate.graph.context import Context, limits_of
from callgate.graph.execute import ok_result
from callgate.graph.history import blank
from callgate.graph.results import numbered, results_namespace, thread_of
from callgate.graph.settings import LoopSettings
from callgate.graph.state import AgentState, CallResult, Mode, ToolCall, ToolEvent
from callgate.graph.summarize import from_result, not_run, tool_message
from callgate.graph.writer import emit
from callgate.tools.approval import DANGEROUS_PATTERNS, approval_reason

log = logging.getLogger(__name__)


@dataclass
class GraphRef:
    """The compiled graph, once there is one (``build_agent`` sets it), for ``start`` to
    read the thread's checkpoints through the public ``get_state``."""

    graph: Any = None


def cut_off_results(ref: GraphRef | None, config: RunnableConfig) -> dict[str, CallResult]:
    """The results of the calls that finished in the step a new message cut off, by call
    id: the pending writes of the checkpoint the message was applied to."""
    graph = ref.graph if ref is not None else None
    configurable = config.get("configurable") or {}
    thread_id = thread_of(config)
    # Only as the root graph: a subgraph's checkpoints are not under the thread's own.
    if graph is None or not graph.checkpointer or thread_id is None or "|" in str(
            configurable.get("checkpoint_ns", "")):
        return {}  # no checkpoints of its own to read (the client sends its history)
    try:
        snapshot = _cut_off_step(graph, {"configurable": {"thread_id": thread_id}})
    except Exception as exc:  # no checkpointer of its own (LangGraph Server), a failing one
        log.warning("could not read the checkpoint before thread %r's new message: %s",
                    thread_id, exc)
        return {}
    results: dict[str, CallResult] = {}
    for task in snapshot.tasks:
        if task.name == "execute" and isinstance(task.result, dict):
            for result in task.result.get("call_results") or []:
                if isinstance(result, dict) and result.get("call_id"):
                    # The execute node's own write, read back untyped from the checkpoint.
                    results[result["call_id"]] = result  # type: ignore[assignment]
    return results


def _cut_off_step(graph: Any, config: RunnableConfig) -> Any:
    """The checkpoint of the step the new message cut off: the parent of the message's own
    checkpoint (``source`` "input"), which may already have a child, the step that runs
    ``start`` (saved in the background under durability "async"); or the newest
    checkpoint, where the message's are not saved yet."""
    snapshot = graph.get_state(config)
    for _ in range(2):
        if (snapshot.metadata or {}).get("source") == "input":
            return graph.get_state(snapshot.parent_config) if snapshot.parent_config else snapshot
        if not snapshot.parent_config or any(t.name == "execute" for t in snapshot.tasks):
            break
        snapshot = graph.get_state(snapshot.parent_config)
    return snapshot


def make_start(settings: LoopSettings, ref: GraphRef | None = None):
    patterns = settings.approval_patterns or DANGEROUS_PATTERNS

    def start(state: AgentState, runtime: Runtime[Context],
              config: RunnableConfig) -> dict[str, Any]:
        messages = state.get("messages") or []
        if not messages:
            raise ValueError("callgate needs at least one message: invoke the agent with "
                             "{'messages': [('user', 'your question')]}")
        last = messages[-1]
        if not isinstance(last, HumanMessage) or last.additional_kwargs.get(
                "callgate_correction"):
            # A run without a new question would answer the last one again, running its
            # tools again (or answer the loop's own correction of a failed run).
            raise ValueError("callgate answers a new user message, and the thread's last "
                             "message is not one: invoke the agent with {'messages': "
                             "[('user', 'your question')]}")
        if blank(last):
            # A blank message asks nothing, and hosted providers refuse one (the model
            # never reads one: model_history).
            raise ValueError("the new user message is blank: invoke the agent with "
                             "{'messages': [('user', 'your question')]}")
        mode = state.get("mode") or state.get("turn_mode") or "agent"
        if mode not in get_args(Mode):
            raise ValueError(f"unknown mode {mode!r}: callgate's modes are "
                             f"{', '.join(get_args(Mode))}")
        limit = limits_of(runtime, settings.defaults).summary_char_limit
        closing_messages, closing_events = close_open_calls(
            state, settings, patterns, limit, runtime.store, thread_of(config),
            lambda: cut_off_results(ref, config))
        emit({"event": "status", "phase": "thinking", "step": 0})
        closing: dict[str, Any] = {"messages": closing_messages,
                                   "tool_events": closing_events} if closing_events else {}
        return {
            **closing,
            "turn_mode": mode,
            "turn": state.get("turn", 0) + 1,
            "step": 0,
            "corrected_at": -1,
            "sent_back": [],
            "repeats": 0,
            "pending_calls": [],
            "validation_errors": [],
            "call_results": None,
            "draft_answer": None,
            "final_answer": None,
            "stop_reason": None,
            "citations": [],
            "problems": [],
            "answer_source": None,
            "answer_checks": [],
            "tools_used": [],
            "status": "running",
            "turn_start": len(state.get("tool_events") or []) + len(closing_events),
        }

    return start


def stored_result(store: BaseStore | None, thread_id: str | None, call: ToolCall,
                  settings: LoopSettings, limit: int) -> CallResult | None:
    """The result ``call``, of an interrupted step, put in the store before the
    interruption, if any.

    A step's ``execute`` tasks keep their results in the checkpoint only as pending writes,
    which a new message (not a resume) discards; the full result each finished call put in
    the store outlives them, so a call that ran is not reported as not run."""
    if store is None or not call.get("result_id"):
        return None
    try:
        item = store.get(results_namespace(thread_id), call["result_id"])
    except Exception as exc:  # a store that fails: the call is reported as not recorded
        log.warning("could not read result %s of thread %r: %s", call["result_id"],
                    thread_id, exc)
        return None
    value = item.value if item is not None else {}
    if value.get("tool") != call["name"] or value.get("args") != call["args"]:
        return None  # another call's result, or none
    tool = settings.registry.get(call["name"])
    return ok_result(call, value.get("data"), tool.summarizer if tool else None, limit,
                     duration_ms=0.0, attempts=1, stored=True)


def _open_call(pending: ToolCall | None, call: ToolCall) -> ToolCall:
    """An open call as the history has it, over what ``pending_calls`` knew of it."""
    return call if pending is None else {**pending, **call}


def close_open_calls(state: AgentState, settings: LoopSettings, patterns: Any, limit: int,
                     store: BaseStore | None = None, thread_id: str | None = None,
                     cut_off: Callable[[], dict[str, CallResult]] | None = None
                     ) -> tuple[list[BaseMessage], list[ToolEvent]]:
    """Answers for the tool calls an interrupted turn left without one: its result where
    the call finished (in the state, in ``cut_off()``'s pending writes, or in ``store``),
    else why it did not."""
    messages = state.get("messages") or []
    answered = {getattr(m, "tool_call_id", None) for m in messages}
    open_at = next((i for i, m in enumerate(messages) if isinstance(m, AIMessage)
                    and any(c.get("id") not in answered for c in m.tool_calls)), None)
    if open_at is None:
        return [], []
    pending = {c["id"]: c for c in state.get("pending_calls") or []}
    results = {r["call_id"]: r for r in state.get("call_results") or []}
    step, turn = state.get("step", 0), state.get("turn", 0)
    # ``answered`` holds None (the AIMessage at ``open_at`` has no ``tool_call_id``): a
    # call without an id is never open.
    open_calls: list[ToolCall] = [
        _open_call(pending.get(call_id), {"id": call_id, "name": tc["name"],
                                          "args": tc.get("args") or {}})
        for message in messages[open_at:] if isinstance(message, AIMessage)
        for tc in message.tool_calls
        if (call_id := tc.get("id")) is not None and call_id not in answered]
    # validate's result ids where it numbered the call (its result may be in the store
    # under that id), else the thread's next.
    open_calls = numbered(open_calls, store, thread_id, len(state.get("tool_events") or []))
    events: list[ToolEvent] = []
    written: dict[str, CallResult] | None = None  # read once, and only when needed
    for call in open_calls:
        if call["id"] not in results and cut_off is not None:
            written = cut_off() if written is None else written
            if call["id"] in written:
                results[call["id"]] = written[call["id"]]
        if call["id"] in results:
            events.append(from_result(call, {**results[call["id"]],
                                             "result_id": call["result_id"]}, step, turn))
            continue
        ran = pending.get(call["id"])
        if ran is not None and ran.get("result_id") and (
                stored := stored_result(store, thread_id, ran, settings, limit)):
            events.append(from_result(call, stored, step, turn))
            continue
        if not call.get("outcome"):
            waiting = (ran is not None and not call.get("approved")
                       and approval_reason(call, settings.registry, patterns))
            call["outcome"] = "denied" if waiting else "cancelled"
            call["error"] = ("not approved: a new message arrived instead of a decision"
                             if waiting else "the turn was interrupted before this "
                                             "call's result was recorded")
        events.append(not_run(call, step, turn, limit))
    # Tool answers must follow their call: move the messages written since behind them.
    later = [m for m in messages[open_at + 1:] if isinstance(m, HumanMessage)]
    moved: list[BaseMessage] = [RemoveMessage(id=m.id) for m in later if m.id]
    moved += [tool_message(e) for e in events]
    moved += [m.model_copy(update={"id": None}) for m in later]
    return moved, events
