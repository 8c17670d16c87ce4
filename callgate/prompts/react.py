"""The ReAct prompt: tools with their JSON schemas, and the exact reply format."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from callgate.prompts.correction import example_args

REACT_SYSTEM = """You are a helpful assistant that can use tools.

Tools:
{tools}

To use a tool, reply in exactly this format:
Thought: <one short sentence>
Action: <one tool name from the list>
Action Input: <a JSON object with the tool's arguments>

The result comes back as "Observation: [R1] ...". Use one tool at a time.
When you can answer, or when no tool fits the question, reply:
Thought: I can answer now.
Final Answer: <your answer, citing results like [R1]>"""

CHAT_SYSTEM = "You are a helpful assistant. Answer the user directly and briefly."

STOP = ["\nObservation:", "\nObservation"]


def describe_tool(name: str, description: str, schema: dict[str, Any]) -> str:
    """One tool as the prompt lists it: name, description, compact argument schema."""
    props = {key: {k: v for k, v in spec.items() if k != "title"}
             for key, spec in (schema.get("properties") or {}).items()}
    args = {"type": "object", "properties": props}
    if schema.get("required"):
        args["required"] = schema["required"]
    text = " ".join(description.split())
    return f"- {name}: {text}\n  Arguments: {json.dumps(args, ensure_ascii=False)}"


def react_system(tools: Iterable[tuple[str, str, dict[str, Any]]]) -> str:
    """The ReAct system prompt for ``(name, description, schema)`` triples."""
    listed = "\n".join(describe_tool(*tool) for tool in tools)
    return REACT_SYSTEM.format(tools=listed or "(none)")


def format_example(tool_name: str, schema: dict[str, Any]) -> str:
    """An exact example of a ReAct tool call, for correction messages."""
    args = json.dumps(example_args(schema), ensure_ascii=False)
    return f"Thought: <why>\nAction: {tool_name}\nAction Input: {args}"
