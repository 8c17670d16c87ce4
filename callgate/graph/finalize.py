"""The ``finalize`` node: ends a loop that cannot go on, with the best answer available.

Step limit, repeated calls, a call still invalid after its correction, and calls whose
values were not in the conversation get one last tools-free model call ("answer with
what you have"): the results gathered earlier in the turn still feed the answer.
Cancellation ends without another model call; a model that fails to write that answer
leaves the gathered results as the answer, with ``status="failed"``. Every tool call the
model made gets an answer message, so the thread stays valid for the next turn.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from callgate.graph.cancellation import is_cancelled
from callgate.graph.context import Context, limits_of
from callgate.graph.events import Outcome
from callgate.graph.results import numbered, thread_of
from callgate.graph.settings import DecideStrategy, LoopSettings
from callgate.graph.state import AgentState, Status, ToolEvent
from callgate.graph.summarize import not_run, tool_message
from callgate.graph.writer import emit
from callgate.parsing import REPLY_PROBLEMS
from callgate.prompts.system import answer_now_instruction
from callgate.tools.grounding import GROUNDING_ADVICE
from callgate.tools.summaries import clip

STATUS: dict[str, Status] = {"step_limit": "step_limit", "cancelled": "cancelled",
                             "failed": "failed", "repeated_calls": "done",
                             "no_fitting_tool": "done"}


def make_finalize(settings: LoopSettings, strategy: DecideStrategy):
    def finalize(state: AgentState, runtime: Runtime[Context],
                 config: RunnableConfig) -> dict[str, Any]:
        reason = stop_reason(state, config, runtime, settings)
        limit = limits_of(runtime, settings.defaults).summary_char_limit
        leftover = unrun_events(state, reason, limit, runtime.store, thread_of(config))
        closing: list[AnyMessage] = [tool_message(e) for e in leftover]
        closing += close_dangling([*(state.get("messages") or []), *closing], reason)
        emit({"event": "status", "phase": "answering", "step": state.get("step", 0)})
        source, status = "model", STATUS.get(reason, "done")
        if reason == "cancelled":
            text, source = cancelled_text(state), "loop"
        elif reason == "failed" and not gathered(state):
            text, source = failed_text(state), "loop"
        else:
            messages = [*(state.get("messages") or []), *closing]
            try:
                text = strategy.answer_now(messages, answer_now_instruction(reason), config)
            except Exception as exc:  # the model failed: answer from what was gathered
                text, source, status = _fallback(state, exc), "loop", "failed"
            if is_cancelled(config, runtime.store):  # cancelled while the answer was written
                reason, text, source, status = ("cancelled", cancelled_text(state), "loop",
                                                "cancelled")
        return {"messages": closing, "tool_events": leftover, "draft_answer": text,
                "status": status, "stop_reason": reason,
                "answer_source": source, "pending_calls": [], "validation_errors": []}

    return finalize


def stop_reason(state: AgentState, config: RunnableConfig, runtime: Runtime[Context],
                settings: LoopSettings) -> str:
    """Why the loop is ending: cancelled, failed, no_fitting_tool, repeated_calls or
    step_limit."""
    if is_cancelled(config, runtime.store):
        return "cancelled"
    if stopped := state.get("stop_reason"):
        return stopped
    if state.get("validation_errors"):
        return "failed"
    if state.get("repeats", 0) >= settings.max_repeats:
        return "repeated_calls"
    limits = limits_of(runtime, settings.defaults)
    return "step_limit" if state.get("step", 0) >= limits.max_steps else "failed"


def unrun_events(state: AgentState, reason: str, limit: int, store: BaseStore | None = None,
                 thread_id: str | None = None) -> list[ToolEvent]:
    """Events for the calls of this step that the loop stopped before running: with the
    result ids ``validate`` gave them, or the thread's next (``results.numbered``)."""
    events: list[ToolEvent] = []
    calls = numbered(list(state.get("pending_calls") or []), store, thread_id,
                     len(state.get("tool_events") or []))
    for call in calls:
        outcome: Outcome = call.get("outcome") or (
            "cancelled" if reason == "cancelled" else "skipped")
        error = call.get("error") or f"not run: the loop stopped ({reason})"
        events.append(not_run({**call, "outcome": outcome, "error": error},
                              state.get("step", 0), state.get("turn", 0), limit))
    return events


def close_dangling(messages: list[AnyMessage], reason: str) -> list[AnyMessage]:
    """A "not run" answer for every tool call of the history that has none."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    closing: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in [*message.tool_calls, *message.invalid_tool_calls]:
                if (call_id := call.get("id")) and call_id not in answered:
                    closing.append(ToolMessage(f"Not run: the loop stopped ({reason}).",
                                               tool_call_id=call_id, name=call.get("name"),
                                               status="error"))
                    answered.add(call_id)
    return closing


def gathered(state: AgentState) -> str:
    """This turn's completed results, as a sentence."""
    events = [e for e in (state.get("tool_events") or [])[state.get("turn_start", 0):]
              if e.get("outcome") == "ok"]
    if not events:
        return ""
    return " Results gathered so far: " + "; ".join(
        f"[{e['id']}] {e['summary']}" for e in events)


def cancelled_text(state: AgentState) -> str:
    return f"The run was cancelled after {state.get('step', 0)} step(s)." + gathered(state)


def failed_text(state: AgentState) -> str:
    """What failed, in the user's terms: the errors' advice to the model ("Use only values
    the user gave", "Write the answer after the label") is not repeated."""
    turn = (state.get("tool_events") or [])[state.get("turn_start", 0):]
    errors = [error for e in turn if e.get("outcome") == "invalid" and (error := e.get("error"))]
    last = [e for e in state.get("validation_errors") or [] if e.get("error")]
    refused = last_refusals(state.get("messages") or [])
    if refused and last and last[-1].get("id") is None:
        # Values refused by grounding, then a reply to that correction that could not be
        # read (SmolLM2 gives up with an empty answer): the refusal is what went wrong.
        return (f"I could not complete this request: {clip(for_user(refused[-1]), 300)}. "
                f"After the correction, {for_user(last[-1]['error'])}.")
    errors += [e["error"] for e in last]
    detail = for_user(errors[-1]) if errors else "the tool call could not be read"
    return ("I could not complete this request: the model's tool call was still invalid "
            f"after a correction ({clip(detail, 300)}).")


def last_refusals(messages: list[AnyMessage]) -> list[str]:
    """The grounding refusals of the correction the model's last reply answered (an earlier
    step's refusal, corrected then, is not what failed now)."""
    found: list[str] = []
    replied = False
    for message in reversed(messages):
        if isinstance(message, AIMessage) and not replied:
            replied = True  # the reply to the correction
            continue
        if not (isinstance(message, ToolMessage | HumanMessage)
                and message.additional_kwargs.get("callgate_correction")):
            break  # the correction's messages end here
        if message.additional_kwargs.get("callgate_refusal") == "ungrounded":
            found.insert(0, message.text)
    return found


def for_user(error: str) -> str:
    """An error as the user reads it: its statement, without the advice to the model."""
    if error in REPLY_PROBLEMS:
        return REPLY_PROBLEMS[error]
    return error.removesuffix(GROUNDING_ADVICE).strip().rstrip(".")


def _fallback(state: AgentState, exc: Exception) -> str:
    return (f"I could not write a final answer (the model failed: {clip(str(exc), 200)})."
            + gathered(state))
