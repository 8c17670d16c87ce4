"""The ``approve`` node: the human-in-the-loop gate in front of sensitive calls.

Each call that needs approval raises LangGraph's ``interrupt()`` with the validated call;
resume with ``Command(resume={"action": "approve" | "edit" | "reject", ...})``. Answers
already given are replayed by LangGraph on resume, so approving several calls one by one
never re-runs a tool: tools run only in ``execute``, after every answer is in.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from callgate.graph.settings import LoopSettings
from callgate.tools.approval import DANGEROUS_PATTERNS, approval_reason


def make_approve(settings: LoopSettings):
    patterns = settings.approval_patterns or DANGEROUS_PATTERNS

    def approve(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        has_saver = bool((config.get("configurable") or {}).get("__pregel_checkpointer"))
        decided: list[dict[str, Any]] = []
        for call in state.get("pending_calls") or []:
            reason = approval_reason(call, settings.registry, patterns)
            if reason is None or call.get("denied") or call.get("approved"):
                decided.append(call)
                continue
            auto = settings.auto_approve
            if auto is True or (callable(auto) and auto(call)):
                decided.append({**call, "approved": "auto"})
            elif not has_saver:
                decided.append({**call, "denied": "approval needed (" + reason + ") but this "
                                "agent has no checkpointer to pause on; configure auto_approve "
                                "or a checkpointer"})
            else:
                answer = interrupt({"type": "approval", "call": call, "reason": reason})
                decided.append(_apply(call, answer, settings))
        return {"pending_calls": decided}

    return approve


def _apply(call: dict[str, Any], answer: Any, settings: LoopSettings) -> dict[str, Any]:
    if isinstance(answer, str):
        answer = {"action": answer}
    action = (answer or {}).get("action", "reject") if isinstance(answer, dict) else "reject"
    if action == "approve":
        return {**call, "approved": "user"}
    if action == "edit":
        result = settings.registry.validate({"tool": call["name"], "args": answer.get("args")})
        if not result.valid:
            return {**call, "denied": f"the edited arguments were invalid: {result.error}"}
        return {**call, "args": result.args, "approved": "edited"}
    reason = answer.get("reason") if isinstance(answer, dict) else None
    return {**call, "denied": "rejected by the user" + (f": {reason}" if reason else "")}
