"""The ``summarize`` node: joins the step's calls, in call order, into events and messages.

Each call becomes one ``ToolEvent`` with an explicit ``outcome`` — also the calls that did
not run (invalid, ungrounded, denied, repeat) — and one ``ToolMessage`` carrying its
bounded summary under its result id, which is what the model sees next. A call that did not
run gets its ``tool_end`` stream event here (``execute`` sends those of the calls it runs),
so a refused call shows in a UI as plainly as a failed one.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from callgate.graph.context import Context, limits_of
from callgate.graph.results import numbered, put_repeat, thread_of
from callgate.graph.settings import LoopSettings
from callgate.graph.state import AgentState, CallResult, ToolCall, ToolEvent
from callgate.graph.writer import emit
from callgate.tools.summaries import bounded, failure_summary


def make_summarize(settings: LoopSettings):
    def summarize(state: AgentState, runtime: Runtime[Context],
                  config: RunnableConfig) -> dict[str, Any]:
        limit = limits_of(runtime, settings.defaults).summary_char_limit
        results = {r["call_id"]: r for r in state.get("call_results") or []}
        earlier = {e["id"]: e for e in state.get("tool_events") or []}
        step, turn = state.get("step", 0), state.get("turn", 0)
        events: list[ToolEvent] = []
        for call in state.get("pending_calls") or []:
            result = results.get(call["id"])
            event = (from_result(call, result, step, turn) if result is not None
                     else not_run(call, step, turn, limit))
            if event["outcome"] == "repeat":
                twin = earlier.get(event["repeat_of"] or "") or next(
                    (e for e in events if e["id"] == event["repeat_of"]), None)
                event = repeated(event, twin, limit)
                if runtime.store is not None and event["repeat_of"]:
                    put_repeat(runtime.store, thread_of(config), event["id"],
                               event["repeat_of"])
            if result is None:  # never started: its end alone says why it did not run
                emit({"event": "tool_end", "id": call["id"], "result_id": event["id"],
                      "tool": event["tool"], "outcome": event["outcome"], "ok": False,
                      "error": event["error"], "duration_ms": 0.0, "step": step,
                      "attempts": 0})
            events.append(event)
            _record(settings, event)
        repeats = state.get("repeats", 0) + sum(e["outcome"] == "repeat" for e in events)
        update: dict[str, Any] = {
            "tool_events": events,
            "messages": [tool_message(e) for e in events],
            "call_results": None,
            "pending_calls": [],
            "validation_errors": [],
            "repeats": repeats,
        }
        refused = [e for e in events if e["outcome"] in ("invalid", "ungrounded")]
        if events and len(refused) == len(events):  # nothing ran and no correction is left
            only_ungrounded = all(e["outcome"] == "ungrounded" for e in refused)
            update["stop_reason"] = "no_fitting_tool" if only_ungrounded else "failed"
        elif repeats >= settings.max_repeats:
            update["stop_reason"] = "repeated_calls"
        if not update.get("stop_reason"):
            emit({"event": "status", "phase": "thinking", "step": step})
        return update

    return summarize


def tool_message(event: ToolEvent) -> ToolMessage:
    return ToolMessage(f"[{event['id']}] {event['summary']}", tool_call_id=event["call_id"],
                       name=event["tool"],
                       status="success" if event["outcome"] in ("ok", "repeat") else "error")


def from_result(call: ToolCall, result: CallResult, step: int, turn: int) -> ToolEvent:
    return ToolEvent(id=result["result_id"], call_id=call["id"], tool=call["name"],
                     args=call["args"], outcome=result["outcome"],
                     ok=result["outcome"] == "ok", error=result["error"],
                     summary=result["summary"], preview=result["preview"],
                     sources=result["sources"], duration_ms=result["duration_ms"], step=step,
                     turn=turn, dropped=call.get("dropped", []), repeat_of=None,
                     stored=result["stored"])


def not_run(call: ToolCall, step: int, turn: int, limit: int) -> ToolEvent:
    """The event of a call that did not run (its ``outcome`` says why)."""
    outcome = call.get("outcome") or "skipped"
    error = call.get("error") or outcome
    return ToolEvent(id=call["result_id"], call_id=call["id"], tool=call["name"] or "?",
                     args=call.get("args") or {}, outcome=outcome, ok=False, error=error,
                     summary=bounded(failure_summary(call["name"] or "?",
                                                     f"not run ({outcome}): {error}"), limit),
                     preview="", sources=[], duration_ms=0.0, step=step, turn=turn,
                     dropped=call.get("dropped", []), repeat_of=call.get("repeat_of"),
                     stored=False)


def given_up(state: AgentState, store: BaseStore | None, thread_id: str | None,
             limit: int) -> list[ToolEvent]:
    """Events for the calls a correction sent back that the corrected reply gave up (it
    made no call; one that does replaces them, and ``validate`` clears them): so the turn's
    ``problems`` say the answer came without them, where nothing had recorded them."""
    calls: list[ToolCall] = [{**call, "outcome": call.get("outcome") or "skipped",
              "error": call.get("error") or "not run: sent back with a refused call, and the "
                                            "corrected reply left it out"}
             for call in state.get("sent_back") or []]
    step, turn = state.get("step", 0), state.get("turn", 0)
    events = []
    for call in numbered(calls, store, thread_id, len(state.get("tool_events") or [])):
        event = not_run(call, step, turn, limit)
        emit({"event": "tool_end", "id": call["id"], "result_id": event["id"],
              "tool": event["tool"], "outcome": event["outcome"], "ok": False,
              "error": event["error"], "duration_ms": 0.0, "step": step, "attempts": 0})
        events.append(event)
    return events


def repeated(event: ToolEvent, twin: ToolEvent | None, limit: int) -> ToolEvent:
    """A repeat is answered with the earlier call's result, marked as such."""
    if twin is None:
        return event
    note = (f"(repeat of {twin['id']}, already called at step {twin['step']}; the result "
            "will not change) ")
    return {**event, "summary": bounded(note + twin["summary"], limit),
            "preview": twin["preview"], "sources": twin["sources"]}


def _record(settings: LoopSettings, event: ToolEvent) -> None:
    stats = settings.stats
    if stats is None:
        return
    if event["outcome"] == "repeat":
        stats.record_duplicate(event["tool"])
    elif event["outcome"] == "denied":
        stats.record_denial(event["tool"])
