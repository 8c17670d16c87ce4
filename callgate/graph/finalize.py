"""The ``finalize`` node: ends a loop that cannot go on, with the best answer available.

Step limit, repeated calls and calls whose values were still not in the conversation after
a correction get one last tools-free model call ("answer with what you have");
cancellation and an uncorrectable call end without another model call. Every tool
call the model made gets an answer message, so the thread stays valid for the next turn.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from callgate.graph.cancellation import token_for
from callgate.graph.settings import DecideStrategy, LoopSettings
from callgate.prompts.system import answer_now_instruction
from callgate.tools.summaries import clip

STATUS = {"step_limit": "step_limit", "cancelled": "cancelled", "failed": "failed",
          "repeated_calls": "done", "no_fitting_tool": "done"}


def make_finalize(settings: LoopSettings, strategy: DecideStrategy):
    def prepare(state: dict[str, Any],
                config: RunnableConfig) -> tuple[str, list[AnyMessage], str | None]:
        reason = stop_reason(state, config, settings)
        errors = state.get("validation_errors") or []
        if reason == "failed" and errors and all(e.get("kind") == "ungrounded"
                                                 for e in errors):
            reason = "no_fitting_tool"  # the model insists on invented values
        closing = _close_dangling(state.get("messages") or [], reason)
        fixed = None
        if reason == "cancelled":
            fixed = f"The run was cancelled after {state.get('step', 0)} step(s)."
            fixed += _gathered(state)
        elif reason == "failed":
            detail = errors[0]["error"] if errors else "the tool call could not be read"
            fixed = ("I could not complete this request: the model's tool call was still "
                     f"invalid after a correction ({clip(detail, 300)}).")
        return reason, closing, fixed

    def done(reason: str, closing: list[AnyMessage], text: str) -> dict[str, Any]:
        return {"messages": closing, "draft_answer": text, "status": STATUS.get(reason, "done"),
                "stop_reason": reason, "pending_calls": [], "validation_errors": []}

    def finalize(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        reason, closing, fixed = prepare(state, config)
        if fixed is None:
            messages = [*(state.get("messages") or []), *closing]
            try:
                fixed = strategy.answer_now(messages, answer_now_instruction(reason), config)
            except Exception as exc:
                fixed = _fallback(state, exc)
        return done(reason, closing, fixed)

    async def afinalize(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        reason, closing, fixed = prepare(state, config)
        if fixed is None:
            messages = [*(state.get("messages") or []), *closing]
            try:
                fixed = await strategy.aanswer_now(messages, answer_now_instruction(reason),
                                                   config)
            except Exception as exc:
                fixed = _fallback(state, exc)
        return done(reason, closing, fixed)

    return finalize, afinalize


def stop_reason(state: dict[str, Any], config: RunnableConfig, settings: LoopSettings) -> str:
    """Why the loop is ending: cancelled, failed, repeated_calls or step_limit."""
    if state.get("stop_reason"):
        return state["stop_reason"]
    if token_for(config).cancelled:
        return "cancelled"
    if state.get("validation_errors"):
        return "failed"
    if state.get("repeats", 0) >= settings.max_repeats:
        return "repeated_calls"
    return "step_limit"


def _close_dangling(messages: list[AnyMessage], reason: str) -> list[AnyMessage]:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    closing: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            calls = [*message.tool_calls, *message.invalid_tool_calls]
            for call in calls:
                if call.get("id") and call["id"] not in answered:
                    closing.append(ToolMessage(f"Not run: the loop stopped ({reason}).",
                                               tool_call_id=call["id"], name=call.get("name"),
                                               status="error"))
                    answered.add(call["id"])
    return closing


def _gathered(state: dict[str, Any]) -> str:
    events = (state.get("tool_events") or [])[state.get("turn_start", 0):]
    if not events:
        return ""
    return " Results gathered so far: " + "; ".join(
        f"[{e['id']}] {e['summary']}" for e in events)


def _fallback(state: dict[str, Any], exc: Exception) -> str:
    return (f"I could not write a final answer (the model failed: {clip(str(exc), 200)})."
            + _gathered(state))
