"""System prompts for the native tool-calling path and for the last, tools-free answer."""

from __future__ import annotations

NATIVE_SYSTEM = (
    "You are a helpful assistant that can call tools. Call a tool only when it is needed to "
    "answer; otherwise answer directly. Each tool result is labelled with an id such as [R1]. "
    "When your answer uses a result, cite its id in square brackets, e.g. [R1]. Never invent "
    "result ids."
)

CHAT_SYSTEM = "You are a helpful assistant. Answer directly; no tools are available."

ANSWER_NOW = (
    "{reason} Do not call any tools. Answer the user's last question now, as well as you can "
    "with any tool results above, citing result ids like [R1] where you use them."
)

REASONS = {
    "step_limit": "The step limit for tool calls has been reached.",
    "repeated_calls": "The same tool call was repeated, so its result will not change.",
    "no_fitting_tool": "No tool fits this question with the values the user gave.",
}


def answer_now_instruction(reason: str) -> str:
    """The user-turn instruction for the final, tools-free model call."""
    return ANSWER_NOW.format(reason=REASONS.get(reason, "No more tool calls are possible."))
