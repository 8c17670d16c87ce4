"""The ``validate`` node: every pending call checked strictly against the registry."""

from __future__ import annotations

from typing import Any

from callgate.graph.settings import LoopSettings


def make_validate(settings: LoopSettings):
    registry = settings.registry

    def validate(state: dict[str, Any]) -> dict[str, Any]:
        errors = list(state.get("validation_errors") or [])  # parse errors found by decide
        checked: list[dict[str, Any]] = []
        for call in state.get("pending_calls") or []:
            if call.get("error"):
                errors.append({"id": call["id"], "name": call.get("name"),
                               "error": call["error"]})
                checked.append(call)
                continue
            result = registry.validate({"tool": call["name"], "args": call.get("args")})
            if result.valid:
                checked.append({**call, "args": result.args, "dropped": list(result.dropped)})
            else:
                errors.append({"id": call["id"], "name": call["name"], "error": result.error})
                checked.append({**call, "error": result.error})
        if settings.stats is not None:
            for err in errors:
                settings.stats.record_invalid(err.get("name"))
        return {"pending_calls": checked, "validation_errors": errors}

    return validate
