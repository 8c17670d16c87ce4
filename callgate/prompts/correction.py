"""The single correction message sent after an invalid tool call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

CORRECTION = (
    "Your tool call was invalid: {error}\n"
    "{schema_part}"
    "You have one chance to correct it. {format_hint}"
)

NOT_RUN = ("Not run: another call in the same step was invalid. Call it again if you still "
           "need it.")

# An answer sent back because it states numbers no tool returned while a tool the request
# is about was not called (the ReAct path's ``checked_answers``); the refusal's kind.
UNSUPPORTED_ANSWER = "unsupported_answer"
UNSUPPORTED = "Your answer states numbers no tool returned ({numbers}). Call {tool} for them."


def correction_message(
    error: str,
    tool_name: str | None,
    schema: dict[str, Any] | None,
    format_example: Callable[[str, dict[str, Any]], str | None] | None,
) -> str:
    """The precise error, the tool's schema, and an example of the exact format expected
    (where ``format_example`` gives one: a native strategy's gives none)."""
    schema_part = ""
    example = None
    if tool_name and schema is not None:
        schema_part = (f"The arguments of '{tool_name}' must match this JSON schema: "
                       f"{json.dumps(schema, separators=(',', ':'))}\n")
        example = format_example(tool_name, schema) if format_example else None
    elif format_example:
        example = format_example("tool_name", {})
    if example:
        hint = "Reply in exactly this format:\n" + example
    else:
        hint = "Call the tool again with corrected arguments, or answer without it."
    return CORRECTION.format(error=error, schema_part=schema_part, format_hint=hint)


def example_args(schema: dict[str, Any]) -> dict[str, Any]:
    """Placeholder arguments for the required parameters of a schema (for format examples)."""
    placeholders = {"string": "...", "integer": 1, "number": 1.0, "boolean": True,
                    "array": [], "object": {}}
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for key in schema.get("required") or []:
        prop = props.get(key) or {}
        if "enum" in prop and prop["enum"]:
            out[key] = prop["enum"][0]
        else:
            kind = prop.get("type", "string")
            out[key] = placeholders.get(kind if isinstance(kind, str) else kind[0], "...")
    return out
