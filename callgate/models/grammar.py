"""GBNF grammars for two-phase constrained ReAct decoding.

Phase 1 (`choice_grammar`) lets the model pick exactly one tool (or answer); phase 2
(`args_grammar`) forces one JSON object valid for that tool's argument schema. Both
return GBNF text for llama.cpp; compile it with `compile_grammar`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

__all__ = [
    "args_grammar",
    "bound_schema",
    "choice_grammar",
    "compile_grammar",
    "grammar_error",
    "gbnf_literal",
    "next_action_grammar",
]

_LITERAL_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}

# Schema keys that constrain a value; a node with none of them accepts anything.
_CONSTRAINING_KEYS = frozenset(
    {
        "type",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "properties",
        "items",
        "prefixItems",
        "additionalProperties",
        "pattern",
        "format",
    }
)


def gbnf_literal(text: str) -> str:
    """Quote `text` as a GBNF string literal (dots, dashes, quotes and backslashes are safe)."""
    return '"' + "".join(_LITERAL_ESCAPES.get(c, c) for c in text) + '"'


def choice_grammar(
    tool_names: Sequence[str],
    *,
    allow_final: bool = True,
    thought: bool = True,
    max_thought_chars: int | None = None,
    max_final_chars: int | None = None,
) -> str:
    """Phase-1 grammar: optional `Thought:` line, then `Action: <tool>\\n` or `Final Answer: ...`.

    The action branch ends right after the newline, so the grammar completes and the model
    can only stop there; the caller appends `Action Input: ` and runs phase 2.
    """
    names = list(dict.fromkeys(tool_names))
    if any(not n or "\n" in n for n in names):
        raise ValueError(f"tool names must be non-empty single-line strings: {names!r}")
    if not names and not allow_final:
        raise ValueError("choice_grammar needs at least one tool name or allow_final=True")
    if any(n is not None and n < 1 for n in (max_thought_chars, max_final_chars)):
        raise ValueError("max_thought_chars and max_final_chars must be >= 1")

    branches = []
    rules = []
    if names:
        branches.append("action")
        rules.append('action ::= "Action: " tool "\\n"')
        rules.append("tool ::= " + " | ".join(gbnf_literal(n) for n in names))
    if allow_final:
        branches.append("final")
        # First char is non-blank so "Final Answer: " + token " Paris" tokenizes naturally.
        rules.append(
            'final ::= "Final Answer: " [^ \\t\\r\\n\\x00] fchar' + _upto(max_final_chars)
        )
        rules.append("fchar ::= [^\\x00-\\x08\\x0B-\\x1F\\x7F]")
    head = "thought? " if thought else ""
    root = f"root ::= {head}({' | '.join(branches)})"
    if thought:
        rules.append(
            'thought ::= "Thought: " [^ \\t\\r\\n] tchar' + _upto(max_thought_chars) + ' "\\n"'
        )
        rules.append("tchar ::= [^\\r\\n\\x00]")
    return "\n".join([root, *rules]) + "\n"


def next_action_grammar(tool_names: Sequence[str]) -> str:
    """Grammar after a call's arguments: a new line, then another ``Action: <tool>\\n`` or
    ``Observation:`` (the stop sequence: the end of the turn).

    The choice is between the line the model would write to wait for a result and
    another call in the same step (parallel calls).
    """
    names = list(dict.fromkeys(tool_names))
    if not names or any(not n or "\n" in n for n in names):
        raise ValueError(f"tool names must be non-empty single-line strings: {names!r}")
    tools = " | ".join(gbnf_literal(n) for n in names)
    return (f'root ::= "\\n" ("Observation:" | "Action: " tool "\\n")\n'
            f"tool ::= {tools}\n")


def _upto(n: int | None) -> str:
    # Bounded repetition `x{0,N}` expands into N nested rules, and llama.cpp's sampler pays
    # for them on every token (36 s for a 4-token reply at N=1000, measured): lengths are
    # left unbounded by default and capped by max_tokens instead.
    if n is None:
        return "*"
    return f"{{0,{n - 1}}}" if n > 1 else "{0,0}"


def args_grammar(
    schema: dict[str, Any],
    *,
    include_optional: bool = True,
    max_string_chars: int = 120,
    max_array_items: int = 8,
) -> str:
    """Phase-2 grammar: exactly one JSON object valid for the tool's JSON `schema`.

    Strings and arrays are bounded (via `maxLength`/`maxItems`, which llama.cpp's
    converter honours); `include_optional=False` keeps only required properties.
    A root schema without properties (`{}`, `{"type": "object"}`) means "no arguments"
    and yields exactly `{}`.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    bounded = bound_schema(
        schema,
        include_optional=include_optional,
        max_string_chars=max_string_chars,
        max_array_items=max_array_items,
    )
    if _is_no_args(bounded):
        return 'root ::= "{" space "}" space\nspace ::= " "?\n'
    gbnf = json_schema_to_gbnf(json.dumps(bounded))
    return _strict_json_chars(gbnf) + "\n"


def bound_schema(
    schema: dict[str, Any],
    *,
    include_optional: bool = True,
    max_string_chars: int = 120,
    max_array_items: int = 8,
) -> dict[str, Any]:
    """Return a copy of `schema` with bounded strings/arrays, ready for the GBNF converter."""
    if not isinstance(schema, dict):
        raise TypeError(f"schema must be a dict, got {type(schema).__name__}")
    if max_string_chars < 1 or max_array_items < 1:
        raise ValueError("max_string_chars and max_array_items must be >= 1")
    bounder = _Bounder(include_optional, max_string_chars, max_array_items)
    out = bounder.node(copy.deepcopy(schema), root=True)
    for key in ("$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {k: bounder.node(v) for k, v in out[key].items()}
    return out


class _Bounder:
    """Walks a JSON schema and rewrites it into the subset llama.cpp converts well."""

    def __init__(self, include_optional: bool, max_chars: int, max_items: int) -> None:
        self.include_optional = include_optional
        self.max_chars = max_chars
        self.max_items = max_items

    def any_scalar(self) -> dict[str, Any]:
        # The converter turns `{}` into an unbounded free-form object; we want a bounded value.
        return {
            "anyOf": [
                {"type": "string", "maxLength": self.max_chars},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "null"},
            ]
        }

    def node(self, s: Any, *, root: bool = False) -> Any:
        if s is True or (isinstance(s, dict) and not (_CONSTRAINING_KEYS & s.keys())):
            # Root `{}` stays as is: `args_grammar` reads it as "no arguments".
            return {} if root else self.any_scalar()
        if not isinstance(s, dict):
            return s
        t = s.get("type")
        if isinstance(t, list):
            # The converter maps `type: [a, b]` to bare `{"type": a}` alternatives and drops
            # every other keyword (maxLength, items, ...), so split it ourselves.
            rest = {k: v for k, v in s.items() if k != "type"}
            return {"anyOf": [self.node({**rest, "type": x}) for x in t]}
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if isinstance(s.get(key), list):
                s[key] = [self.node(x) for x in s[key]]
        if "enum" in s or "const" in s or "$ref" in s:
            return s
        if t == "string" and "pattern" not in s and "format" not in s:
            s["maxLength"] = max(
                min(s.get("maxLength", self.max_chars), self.max_chars), s.get("minLength", 0)
            )
        elif t == "array" or (t is None and "items" in s):
            items = s.get("items")
            s["items"] = self.any_scalar() if items in (None, True, {}) else self.node(items)
            s["maxItems"] = max(
                min(s.get("maxItems", self.max_items), self.max_items), s.get("minItems", 0)
            )
        elif t == "object" or "properties" in s:
            self.object(s, root=root)
        return s

    def object(self, s: dict[str, Any], *, root: bool) -> None:
        props = s.get("properties") or {}
        required = [r for r in s.get("required", []) if r in props]
        if not self.include_optional:
            props = {k: v for k, v in props.items() if k in required}
        if "properties" in s:
            s["properties"] = {k: self.node(v) for k, v in props.items()}
            s["required"] = required
        extra = s.get("additionalProperties")
        if extra is True or (extra is None and not props and not root and "properties" not in s):
            s["additionalProperties"] = self.any_scalar()
        elif isinstance(extra, dict):
            s["additionalProperties"] = self.node(extra)


def _is_no_args(schema: dict[str, Any]) -> bool:
    if schema.get("type") not in (None, "object"):
        return False
    if schema.get("properties") or any(k in schema for k in ("$ref", "anyOf", "oneOf", "allOf")):
        return False
    extra = schema.get("additionalProperties")
    return extra in (None, False)


def _strict_json_chars(gbnf: str) -> str:
    # llama-cpp-python's Python converter lets raw control characters (newlines, tabs)
    # into strings, which strict JSON parsers reject; upstream llama.cpp excludes them.
    return re.sub(
        r'^(char ::= )\[\^"\\\\\]',
        lambda m: m.group(1) + '[^"\\\\\\x7F\\x00-\\x1F]',
        gbnf,
        flags=re.M,
    )


@lru_cache(maxsize=256)
def compile_grammar(gbnf: str) -> LlamaGrammar:
    """Wrap GBNF text in a `LlamaGrammar`, cached by text.

    Note: llama-cpp-python >=0.3 only parses the grammar when sampling starts (and a parse
    error there is fatal); check it first with `grammar_error`.
    """
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


def grammar_error(gbnf: str, llama: Llama) -> str | None:
    """Parse `gbnf` with llama.cpp against `llama`'s vocabulary; return an error or None."""
    import llama_cpp

    # LlamaGrammar.from_string no longer validates, so ask llama.cpp's parser directly.
    sampler = llama_cpp.llama_sampler_init_grammar(
        llama._model.vocab, gbnf.encode("utf-8"), b"root"
    )
    if not sampler:
        return "llama.cpp could not parse the grammar (see GBNF text)"
    llama_cpp.llama_sampler_free(sampler)
    return None
