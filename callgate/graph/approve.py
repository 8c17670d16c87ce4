"""The ``approve`` node: the human-in-the-loop gate in front of sensitive calls.

The calls of a step that need approval are put to a person in one LangGraph
``interrupt()``, in LangChain's human-in-the-loop request format (as
``HumanInTheLoopMiddleware`` emits it, so Studio and Agent Chat UI render it)::

    {"action_requests": [{"name": "wipe", "args": {...}, "description": "why"}],
     "review_configs": [{"action_name": "wipe", "allowed_decisions": [...]}]}

Resume with ``Command(resume={"decisions": [{"type": "approve"} | {"type": "edit",
"edited_action": {"name": "wipe", "args": {...}}} | {"type": "reject", "message": "..."}]})``,
one decision per request in order; ``{"action": "approve" | "reject" | "edit", "args": ...}``
(callgate's shorthand) answers a single request. Anything else — an unknown type, an edit
without a complete, valid argument set — rejects the call, and says why. (``Command(resume=
None)`` never gets here: LangGraph 1.2 raises on it before the run, the interrupt kept.) Tools
run only in ``execute``, after every answer is in. Fail closed: where the run cannot pause
(no checkpointer, no thread), a call that needs approval is denied.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from typing_extensions import TypedDict

from callgate.graph.context import Context, limits_of
from callgate.graph.settings import LoopSettings
from callgate.graph.state import AgentState, ToolCall
from callgate.graph.writer import emit
from callgate.tools.approval import DANGEROUS_PATTERNS, approval_reason

Decision = Literal["approve", "edit", "reject"]
DECISIONS: list[Decision] = ["approve", "edit", "reject"]


class ActionRequest(TypedDict):
    name: str
    args: dict[str, Any]
    description: NotRequired[str]


class ReviewConfig(TypedDict):
    action_name: str
    allowed_decisions: list[Decision]
    args_schema: NotRequired[dict[str, Any]]


class ApprovalRequest(TypedDict):
    """LangChain's ``HITLRequest``, plus the call ids for callers that track them."""

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]
    call_ids: list[str]


def make_approve(settings: LoopSettings, *, checkpointed: bool):
    patterns = settings.approval_patterns or DANGEROUS_PATTERNS
    registry = settings.registry

    def approve(state: AgentState, runtime: Runtime[Context],
                config: RunnableConfig) -> dict[str, Any]:
        limits = limits_of(runtime, settings.defaults)
        calls = list(state.get("pending_calls") or [])
        asking: list[tuple[int, str]] = []
        for i, call in enumerate(calls):
            if call.get("outcome") or call.get("approved"):
                continue
            reason = approval_reason(call, registry, patterns)
            if reason is None:
                continue
            auto = settings.auto_approve
            # A run's 'deny' is its own word: no build-time callable approves past it.
            if limits.approval == "deny":
                calls[i] = _denied(call, f"approval needed ({reason}); this run's approval "
                                         "policy is 'deny'")
            elif limits.approval == "auto" or (callable(auto) and auto(dict(call))):
                calls[i] = {**call, "approved": "auto"}
            elif not (checkpointed or runtime.server_info is not None) or not (
                    config.get("configurable") or {}).get("thread_id"):
                calls[i] = _denied(call, f"approval needed ({reason}) but this run cannot "
                                         "pause: give the agent a checkpointer and a "
                                         "thread_id, or set approval='auto'")
            else:
                asking.append((i, reason))
        if asking:
            emit({"event": "status", "phase": "approval", "step": state.get("step", 0)})
            request = ApprovalRequest(
                action_requests=[ActionRequest(name=calls[i]["name"], args=calls[i]["args"],
                                               description=f"{calls[i]['name']} needs "
                                                           f"approval: {reason}")
                                 for i, reason in asking],
                review_configs=[_review(calls[i], registry) for i, _ in asking],
                call_ids=[calls[i]["id"] for i, _ in asking])
            decisions = read_decisions(interrupt(request), len(asking))
            for (i, _), decision in zip(asking, decisions, strict=True):
                calls[i] = apply_decision(calls[i], decision, registry)
        return {"pending_calls": calls}

    return approve


def _review(call: ToolCall, registry: Any) -> ReviewConfig:
    tool = registry.get(call["name"])
    config = ReviewConfig(action_name=call["name"], allowed_decisions=list(DECISIONS))
    if tool is not None:
        config["args_schema"] = tool.schema
    return config


def _denied(call: ToolCall, why: str) -> ToolCall:
    return {**call, "outcome": "denied", "error": why}


def read_decisions(answer: Any, count: int) -> list[dict[str, Any] | str]:
    """One decision per request, from a HITL response or callgate's shorthand.

    An answer that cannot be read becomes a rejection that says why."""
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        decisions = list(answer["decisions"])
        if len(decisions) != count:
            why = (f"expected {count} decision(s), got {len(decisions)}: every call is "
                   "rejected")
            return [why] * count
        return decisions
    if isinstance(answer, str):
        answer = {"action": answer}
    if isinstance(answer, dict) and "action" in answer:
        if count == 1:
            return [answer]
        if answer.get("action") in ("approve", "reject"):
            return [answer] * count
        return [f"the shorthand {answer!r} answers one call, but {count} await a decision: "
                "send {'decisions': [...]} with one decision each"] * count
    return [f"unrecognised approval answer {answer!r}: expected {{'decisions': [...]}} "
            "or {'action': 'approve' | 'edit' | 'reject'}"] * count


def apply_decision(call: ToolCall, decision: dict[str, Any] | str, registry: Any) -> ToolCall:
    """The call as the person decided: approved, edited (validated again) or denied."""
    if isinstance(decision, str):  # already an explanation of why it is refused
        return _denied(call, f"rejected: {decision}")
    if not isinstance(decision, dict):
        return _denied(call, f"rejected: unrecognised decision {decision!r}")
    kind = decision.get("type") or decision.get("action")
    if kind == "approve":
        return {**call, "approved": "user"}
    if kind == "reject":
        message = decision.get("message") or decision.get("reason")
        return _denied(call, "rejected by the user" + (f": {message}" if message else ""))
    if kind == "edit":
        return _edited(call, decision, registry)
    return _denied(call, f"rejected: unrecognised decision type {kind!r} "
                         "(expected approve, edit or reject)")


def _edited(call: ToolCall, decision: dict[str, Any], registry: Any) -> ToolCall:
    action = decision.get("edited_action")
    if isinstance(action, dict):
        name, args = action.get("name", call["name"]), action.get("args")
    else:
        name, args = call["name"], decision.get("args")
    if name != call["name"]:
        return _denied(call, f"rejected: an edit may change the arguments of "
                             f"'{call['name']}', not call '{name}' instead")
    if not isinstance(args, dict):
        return _denied(call, "rejected: the edit carried no argument object (expected "
                             "edited_action.args with the complete arguments)")
    missing = sorted(set(call["args"]) - set(args))
    if missing:
        return _denied(call, "rejected: an edit must carry the complete arguments; missing "
                             + ", ".join(missing))
    # What runs is what the person approved: no defaults slipped in after the fact.
    result = registry.validate({"tool": name, "args": args}, defaults=False)
    if not result.valid:
        return _denied(call, f"rejected: the edited arguments were invalid: {result.error}")
    if result.dropped:
        return _denied(call, "rejected: the edit has arguments the tool does not take: "
                             + ", ".join(result.dropped))
    return {**call, "args": result.args, "approved": "edited"}
