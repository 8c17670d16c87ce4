"""The ``correct`` node: one correction round per step, with the precise error and schema.

The model's reply is sent back with an answer to each of its calls (the error, or "not
run" for the valid calls next to it); its next reply stands in for this one, in the same
step — so a step has at most one correction, and a later step has its own. Each call sent
back is a ``call_refused`` stream event, so a UI shows the attempt the correction replaces.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from callgate.graph.settings import DecideStrategy, LoopSettings
from callgate.graph.state import AgentState, CallError
from callgate.graph.writer import emit
from callgate.prompts.correction import NOT_RUN, UNSUPPORTED_ANSWER, correction_message
from callgate.tools.grounding import CORRECTION_MARK
from callgate.tools.registry import ToolRegistry


def make_correct(settings: LoopSettings, strategy: DecideStrategy):
    registry = settings.registry

    def correct(state: AgentState) -> dict[str, Any]:
        errors = state.get("validation_errors") or []
        by_id = {e["id"]: e for e in errors if e.get("id")}
        messages: list[Any] = []
        step = state.get("step", 0)
        for call in state.get("pending_calls") or []:
            err = by_id.get(call["id"])
            text = _correction(err, registry, strategy) if err else NOT_RUN
            if err:
                emit({"event": "call_refused", "id": call["id"], "tool": call.get("name") or "?",
                      "args": call.get("args") or {},
                      "outcome": "ungrounded" if err.get("kind") == "ungrounded" else "invalid",
                      "error": err["error"], "step": step})
            # The refusal's kind travels with it: a decide strategy may answer a grounding
            # refusal differently (ReAct re-decodes the call from the conversation's values).
            marks = {**CORRECTION_MARK, "callgate_refusal": err.get("kind") or "invalid"} if (
                err) else CORRECTION_MARK
            messages.append(ToolMessage(text, tool_call_id=call["id"], name=call.get("name"),
                                        status="error", additional_kwargs=marks))
        # Text the parser could not read, or an answer sent back (``UNSUPPORTED_ANSWER``).
        loose = [e for e in errors if not e.get("id")]
        if loose:
            marks = {**CORRECTION_MARK, "callgate_refusal": loose[0].get("kind") or "invalid"}
            messages.append(HumanMessage(_correction(loose[0], registry, strategy),
                                         name="callgate", additional_kwargs=marks))
        if settings.stats is not None:  # an answer sent back is no correction of a call
            for err in errors:
                if err.get("kind") != UNSUPPORTED_ANSWER:
                    settings.stats.record_correction(err.get("name"))
        emit({"event": "status", "phase": "thinking", "step": step})
        return {"messages": messages, "corrected_at": step, "step": step - 1,
                "pending_calls": [], "validation_errors": [],
                "sent_back": [c for c in state.get("pending_calls") or [] if c.get("name")]}

    return correct


def _correction(err: CallError, registry: ToolRegistry, strategy: DecideStrategy) -> str:
    tool = registry.get(err.get("name") or "")
    if err.get("kind") in ("ungrounded", UNSUPPORTED_ANSWER):  # well-formed: said whole
        return err["error"]
    return correction_message(err["error"], tool.name if tool else None,
                              tool.schema if tool else None, strategy.format_example)
