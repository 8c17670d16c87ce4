"""The ``validate`` node: every pending call checked strictly against the registry.

With grounding on (``LoopSettings.grounding``), a schema-valid call whose argument values
appear nowhere in the conversation is an error too, of kind ``"ungrounded"``: the model
gets one correction round to use the user's values or to answer without the tool. When
other calls of the same step are fine, the ungrounded ones are skipped instead (not run,
their error is their result) and the rest run: one invented extra call does not hold
back the calls the user asked for.
"""

from __future__ import annotations

from typing import Any

from callgate.graph.settings import LoopSettings
from callgate.tools.grounding import conversation_text, grounding_error, ungrounded_args


def make_validate(settings: LoopSettings):
    registry = settings.registry

    def validate(state: dict[str, Any]) -> dict[str, Any]:
        errors = list(state.get("validation_errors") or [])  # parse errors found by decide
        checked: list[dict[str, Any]] = []
        context: str | None = None
        for call in state.get("pending_calls") or []:
            if call.get("error"):
                errors.append({"id": call["id"], "name": call.get("name"),
                               "error": call["error"]})
                checked.append(call)
                continue
            result = registry.validate({"tool": call["name"], "args": call.get("args")})
            if not result.valid:
                errors.append({"id": call["id"], "name": call["name"], "error": result.error})
                checked.append({**call, "error": result.error})
                continue
            valid = {**call, "args": result.args, "dropped": list(result.dropped)}
            if settings.grounding:
                if context is None:
                    context = conversation_text(state.get("messages") or [])
                tool = registry.get(call["name"])
                found = ungrounded_args(result.args, tool.schema if tool else {}, context)
                if found:
                    error = grounding_error(call["name"], found)
                    errors.append({"id": call["id"], "name": call["name"], "error": error,
                                   "kind": "ungrounded"})
                    valid.update(error=error, kind="ungrounded")
            checked.append(valid)
        if settings.stats is not None:  # ungrounded calls are schema-valid, not invalid
            for err in errors:
                if err.get("kind") != "ungrounded":
                    settings.stats.record_invalid(err.get("name"))
        if errors and all(e.get("kind") == "ungrounded" for e in errors) and any(
                not c.get("error") for c in checked):
            checked = [{**{k: v for k, v in c.items() if k != "error"}, "skipped": c["error"]}
                       if c.get("error") else c for c in checked]
            errors = []
        return {"pending_calls": checked, "validation_errors": errors}

    return validate
