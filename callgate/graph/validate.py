"""The ``validate`` node: every pending call checked strictly against the registry.

Each call leaves with a verdict:

- valid: it will run (after ``approve``), under the result id it is given here;
- ``repeat``: the same tool with the same arguments already completed ``ok`` in this turn
  (or earlier in this step); it is answered with that result instead of running again;
- ``skipped``: beyond ``Context.max_calls_per_step`` calls in one step;
- ``invalid`` / ``ungrounded``: sent back for one correction per step (``correct``); when
  the step's correction is spent, the call is refused with that outcome.

Grounding (``Context.grounding``): an argument value that appears nowhere in the
conversation was invented. An invented *optional* argument is dropped (its default
applies) and the call runs; an invented *required* one makes the call ``ungrounded``. An
ungrounded call next to valid ones in the same step is refused alone and the rest run.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from callgate.graph.context import Context, limits_of
from callgate.graph.results import numbered, thread_of
from callgate.graph.settings import LoopSettings
from callgate.graph.state import AgentState, CallError, ToolCall
from callgate.graph.writer import emit
from callgate.prompts.correction import UNSUPPORTED_ANSWER
from callgate.tools.grounding import conversation_text, ground, grounding_error


def call_key(name: str, args: Any) -> str:
    """Tool name plus canonical JSON of the normalized arguments."""
    return name + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def correction_left(state: AgentState, settings: LoopSettings) -> bool:
    """Whether this step may still be corrected (one correction round per step)."""
    return settings.corrections > 0 and state.get("corrected_at") != state.get("step", 0)


def make_validate(settings: LoopSettings):
    registry = settings.registry

    def validate(state: AgentState, runtime: Runtime[Context],
                 config: RunnableConfig) -> dict[str, Any]:
        limits = limits_of(runtime, settings.defaults)
        errors = list(state.get("validation_errors") or [])  # parse errors found by decide
        checked: list[ToolCall] = []
        context: str | None = None
        for call in state.get("pending_calls") or []:
            if call.get("error"):  # malformed: found by decide
                errors.append({"id": call["id"], "name": call.get("name"),
                               "error": call["error"]})
                checked.append({**call, "outcome": "invalid"})
                continue
            result = registry.validate({"tool": call["name"], "args": call.get("args")})
            if not result.valid:
                assert result.error is not None  # ``ToolRegistry.validate`` says why, always
                errors.append({"id": call["id"], "name": call["name"], "error": result.error})
                checked.append({**call, "outcome": "invalid", "error": result.error or ""})
                continue
            valid: ToolCall = {**call, "args": result.args, "dropped": list(result.dropped)}
            if limits.grounding:
                if context is None:
                    context = conversation_text(state.get("messages") or [])
                valid = _grounded(valid, registry, context, errors)
            checked.append(valid)
        if settings.stats is not None:  # ungrounded calls are schema-valid, not invalid
            for err in errors:
                if err.get("kind") not in ("ungrounded", UNSUPPORTED_ANSWER):
                    settings.stats.record_invalid(err.get("name"))
        cap = max(1, limits.max_calls_per_step)
        checked = [c if i < cap or c.get("outcome") else
                   {**c, "outcome": "skipped",
                    "error": f"only {cap} calls run per step (max_calls_per_step)"}
                   for i, c in enumerate(checked)]
        correctable = bool(errors) and correction_left(state, settings)
        only_ungrounded = all(e.get("kind") == "ungrounded" for e in errors)
        if correctable and only_ungrounded and any(not c.get("outcome") for c in checked):
            correctable = False  # invented extra calls are refused alone; the rest run
        if correctable:
            return {"pending_calls": checked, "validation_errors": errors}
        if any(not c.get("outcome") for c in checked):
            emit({"event": "status", "phase": "calling", "step": state.get("step", 0)})
        # Not corrected: each refused call carries its outcome; only text that could not be
        # read as any call is left as an error (it ends the loop). An answer sent back with
        # no correction left is the answer after all (its checks flag its numbers).
        kept = [e["answer"] for e in errors if e.get("kind") == UNSUPPORTED_ANSWER]
        ready = _repeats_by_result_id(numbered(_mark_repeats(checked, state), runtime.store,
                                               thread_of(config),
                                               len(state.get("tool_events") or [])))
        # A corrected reply that makes calls replaces those sent back (their first form).
        return {**({"sent_back": []} if checked else {}), "pending_calls": ready,
                "validation_errors": [e for e in errors if not e.get("id")
                                      and e.get("kind") != UNSUPPORTED_ANSWER],
                **({"draft_answer": kept[0]} if kept else {})}

    return validate


def _grounded(call: ToolCall, registry: Any, context: str,
              errors: list[CallError]) -> ToolCall:
    tool = registry.get(call["name"])
    grounded = ground(call["args"], tool.schema if tool else {}, context)
    if grounded.refused:
        error = grounding_error(call["name"], grounded.refused)
        errors.append({"id": call["id"], "name": call["name"], "error": error,
                       "kind": "ungrounded"})
        return {**call, "outcome": "ungrounded", "error": error, "kind": "ungrounded"}
    if not grounded.dropped:
        return call
    dropped = [*call.get("dropped", []),
               *(f"{k} (not in the conversation)" for k in grounded.dropped)]
    return {**call, "args": grounded.args, "dropped": dropped}


def _mark_repeats(calls: list[ToolCall], state: AgentState) -> list[ToolCall]:
    """Calls that repeat one that completed ``ok`` this turn, or one earlier in this step."""
    events = (state.get("tool_events") or [])[state.get("turn_start", 0):]
    done = {call_key(e["tool"], e["args"]): e["id"] for e in events
            if e.get("outcome") == "ok"}
    in_step: dict[str, str] = {}
    marked: list[ToolCall] = []
    for call in calls:
        if call.get("outcome"):
            marked.append(call)
            continue
        key = call_key(call["name"], call["args"])
        earlier = done.get(key)
        if earlier is not None:
            marked.append({**call, "outcome": "repeat", "repeat_of": earlier,
                           "error": f"repeat of {earlier}, which already completed"})
        elif key in in_step:
            marked.append({**call, "outcome": "repeat", "repeat_of": in_step[key],
                           "error": "the same call twice in one step"})
        else:
            in_step[key] = call["id"]
            marked.append(call)
    return marked


def _repeats_by_result_id(calls: list[ToolCall]) -> list[ToolCall]:
    """A repeat within the step names the call it repeats by that call's result id."""
    ids = {call["id"]: call["result_id"] for call in calls}
    return [{**c, "repeat_of": ids.get(c["repeat_of"], c["repeat_of"])}
            if c.get("repeat_of") else c for c in calls]
