"""Grounding: does each argument value of a call come from the conversation?

A small model that is offered a tool nearly always calls it, and when the question gives
no value for an argument it invents one (``weight=10`` for a body-mass-index tool asked
about a triangle). A value that appears nowhere in what the user wrote or the tools
returned, and that the schema does not supply (an enum member, a default, a constant),
is flagged; the loop then asks the model once to use the user's values or to answer
without the tool (see ``callgate.graph.validate``).

Numbers match when the conversation has the same number (``5``, ``5.0``, ``-4``,
``1e-9``, ``1,000``, ``five``), or the same in percent (``5%`` for ``0.05``); strings when
at least half of their words are in the conversation (or the whole value is, without
spaces and punctuation). Booleans and nulls are never flagged. No library does this.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

__all__ = ["CORRECTION_MARK", "conversation_text", "grounding_error", "numbers_in",
           "ungrounded_args", "unused_numbers"]

# On the loop's own correction messages, which quote the values they reject.
CORRECTION_MARK = {"callgate_correction": True}

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[,_]\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WORD = re.compile(r"[a-z0-9]+")
_SMALL = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
          "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
          "seventeen", "eighteen", "nineteen", "twenty")
_NUMBER_WORDS = {w: i for i, w in enumerate(_SMALL)} | {
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100, "thousand": 1000, "million": 1_000_000,
    "billion": 1_000_000_000, "dozen": 12, "half": 0.5, "quarter": 0.25, "once": 1,
    "twice": 2, "single": 1, "double": 2, "triple": 3, "first": 1, "second": 2, "third": 3,
}


def conversation_text(messages: Iterable[AnyMessage]) -> str:
    """What the user wrote and the tools returned: where argument values may come from."""
    return "\n".join(m.text for m in messages if isinstance(m, HumanMessage | ToolMessage)
                     and not m.additional_kwargs.get("callgate_correction"))


class _Context:
    def __init__(self, text: str) -> None:
        lowered = text.lower()
        self.words = set(_WORD.findall(lowered))
        self.squashed = "".join(_WORD.findall(lowered))
        self.numbers: set[float] = set()
        for match in _NUMBER.finditer(text):
            try:
                self.numbers.add(float(match.group().replace(",", "").replace("_", "")))
            except ValueError:
                continue
        self.numbers |= {float(v) for w, v in _NUMBER_WORDS.items() if w in self.words}

    def has_number(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        candidates = (value, value * 100, value / 100, abs(value))
        return any(math.isclose(c, n, rel_tol=1e-9, abs_tol=1e-12)
                   for c in candidates for n in self.numbers)

    def has_string(self, value: str) -> bool:
        words = _WORD.findall(value.lower())
        if not words:
            return False  # an empty (or punctuation-only) value: nothing was given
        squashed = "".join(words)
        if squashed in self.squashed:
            return True
        return sum(w in self.words for w in words) * 2 >= len(words)


def _supplied(schema: dict[str, Any], value: Any) -> bool:
    """The schema itself offers this value (enum member, const, default)."""
    if not isinstance(schema, dict):
        return False
    return (value in (schema.get("enum") or []) or ("const" in schema
            and schema["const"] == value) or ("default" in schema
                                              and schema["default"] == value))


def _sub_schema(schema: Any, key: str | int) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    if isinstance(key, int):
        items = schema.get("items")
        return items if isinstance(items, dict) else {}
    props = schema.get("properties") or {}
    return props.get(key) or {}


def _walk(value: Any, schema: dict[str, Any], path: str, context: _Context,
          found: list[tuple[str, Any]]) -> None:
    if value is None or isinstance(value, bool) or _supplied(schema, value):
        return
    if isinstance(value, int | float):
        if not context.has_number(float(value)):
            found.append((path, value))
    elif isinstance(value, str):
        if not context.has_string(value):
            found.append((path, value))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, _sub_schema(schema, i), f"{path}[{i}]", context, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, _sub_schema(schema, key), f"{path}.{key}", context, found)


def ungrounded_args(args: dict[str, Any], schema: dict[str, Any],
                    context: str) -> list[tuple[str, Any]]:
    """``(path, value)`` of every argument value that ``context`` does not contain."""
    found: list[tuple[str, Any]] = []
    ctx = _Context(context)
    for key, value in args.items():
        _walk(value, _sub_schema(schema, key), key, ctx, found)
    return found


def grounding_error(tool: str, found: list[tuple[str, Any]]) -> str:
    """The message for a call whose arguments were not in the conversation."""
    shown = ", ".join(f"{path}={_short(value)}" for path, value in found[:4])
    return (f"'{tool}' was called with values that appear nowhere in the conversation "
            f"({shown}). Use only values the user gave; if no tool fits the question, "
            f"answer directly without a tool.")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."



def _values_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(_values_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_values_text(v) for v in value)
    return "" if value is None or isinstance(value, bool) else str(value)


def numbers_in(text: str) -> list[str]:
    """The numbers written in ``text`` (``5``, ``-4``, ``1,000``, ``2.5e-3``), as written."""
    return [m.group() for m in _NUMBER.finditer(text)]


def unused_numbers(request: str, calls_args: Iterable[dict[str, Any]]) -> list[str]:
    """The numbers of ``request`` that no call's arguments contain (as a number, in
    percent, or inside a string): what a further call in the same step could be for."""
    used = _Context(" ".join(_values_text(args) for args in calls_args))
    return [n for n in numbers_in(request)
            if not used.has_number(float(n.replace(",", "").replace("_", "")))]
