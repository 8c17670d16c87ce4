"""The ReAct prompt: tools with their arguments, and the exact reply format.

Tuned on BFCL with the bundled SmolLM2-135M (see ``reports/``): arguments listed one per
line (name, type, required or optional, default, allowed values, description) instead of
a JSON schema, plus one sentence on which arguments to give, did better on ``simple`` and
``multiple`` questions than the JSON schema listing, and the prompt is shorter.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from callgate.prompts.correction import example_args

_INTRO = "You are a helpful assistant that can use tools."
_TOOLS = "Tools:\n{tools}"


def _format(thoughts: bool = True) -> str:
    """The reply format; without ``thoughts``, no Thought or Observation lines, for a
    decoder whose grammar starts a reply at "Action:" or "Final Answer:" (30 tokens less
    to read on every question)."""
    thought = "Thought: <one short sentence>\n" if thoughts else ""
    observation = 'Results come back as "Observation: [R1] ...".\n' if thoughts else ""
    thought_now = "Thought: I can answer now.\n" if thoughts else ""
    return f"""To use a tool, reply in exactly this format:
{thought}Action: <one tool name from the list>
Action Input: <a JSON object with the tool's arguments>

Copy argument values from the user's question. Give an optional argument only when the \
question states its value.
To make several calls at once, write one Action and Action Input pair per call.
{observation}When you can answer, or when no tool fits the question, reply:
{thought_now}Final Answer: <your answer, citing results like [R1]>"""


# The prompts' fixed text, ``{tools}`` standing for the list (the answer checks read them).
REACT_SYSTEM = f"{_INTRO}\n\n{_TOOLS}\n\n{_format()}"
REACT_SYSTEM_TERSE = f"{_INTRO}\n\n{_TOOLS}\n\n{_format(thoughts=False)}"

CHAT_SYSTEM = "You are a helpful assistant. Answer the user directly and briefly."

STOP = ["\nObservation:", "\nObservation"]


def _type_text(spec: Any, defs: dict[str, Any], depth: int = 0) -> str:
    """A short type for one argument: ``integer``, ``array of string``, ``object {a, b}``."""
    if not isinstance(spec, dict) or depth > 3:
        return "any"
    if isinstance(spec.get("$ref"), str):
        target = defs.get(spec["$ref"].rsplit("/", 1)[-1])
        return _type_text(target, defs, depth + 1) if target else "object"
    for key in ("anyOf", "oneOf"):
        if isinstance(spec.get(key), list):
            names = [_type_text(s, defs, depth + 1) for s in spec[key]]
            return " or ".join(dict.fromkeys(n for n in names if n))
    kind = spec.get("type")
    if isinstance(kind, list):
        return " or ".join(_type_text({**spec, "type": k}, defs, depth + 1) for k in kind)
    if kind == "array" or (kind is None and "items" in spec):
        items = spec.get("items")
        return f"array of {_type_text(items, defs, depth + 1)}" if isinstance(
            items, dict) and items else "array"
    if kind == "object" or (kind is None and "properties" in spec):
        keys = list(spec.get("properties") or {})
        return f"object {{{', '.join(keys)}}}" if keys else "object"
    return kind or ("one of" if "enum" in spec else "any")


def describe_tool(name: str, description: str, schema: dict[str, Any]) -> str:
    """One tool as the prompt lists it: name, description, then one line per argument."""
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    required = set(schema.get("required") or [])
    lines = []
    for key, spec in (schema.get("properties") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        bits = [_type_text(spec, defs), "required" if key in required else "optional"]
        if "default" in spec and key not in required:
            bits.append(f"default {json.dumps(spec['default'], ensure_ascii=False)}")
        if isinstance(spec.get("enum"), list):
            bits.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False)
                                               for v in spec["enum"]))
        text = " ".join(str(spec.get("description") or "").split())
        lines.append(f"    {key} ({', '.join(bits)}){': ' + text if text else ''}")
    summary = " ".join(description.split())
    return f"- {name}: {summary}\n  Arguments:\n" + ("\n".join(lines) or "    (none)")


def react_system(tools: Iterable[tuple[str, str, dict[str, Any]]], *,
                 thoughts: bool = True) -> str:
    """The ReAct system prompt for ``(name, description, schema)`` triples; without
    ``thoughts``, the format has no Thought or Observation lines."""
    listed = _TOOLS.format(tools="\n".join(describe_tool(*tool) for tool in tools) or "(none)")
    return f"{_INTRO}\n\n{listed}\n\n{_format(thoughts=thoughts)}"


def format_example(tool_name: str, schema: dict[str, Any]) -> str:
    """An exact example of a ReAct tool call, for correction messages."""
    args = json.dumps(example_args(schema), ensure_ascii=False)
    return f"Thought: <why>\nAction: {tool_name}\nAction Input: {args}"
