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
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from callgate.tools.candidates import FREE_TEXT_WORDS, is_free_text, is_search_text
from callgate.tools.relevance import STOP_WORDS

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

__all__ = [
    "FREE_TEXT_WORDS",
    "Values",
    "answer_grammar",
    "args_grammar",
    "bound_schema",
    "choice_grammar",
    "compile_grammar",
    "grammar_error",
    "gbnf_literal",
    "next_action_grammar",
    "query_rules",
    "span_rules",
    "tool_name_grammar",
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
    numbers: Sequence[str] | None = None,
) -> str:
    """Phase-1 grammar: optional `Thought:` line, then `Action: <tool>\\n` or `Final Answer: ...`.

    The action branch ends right after the newline, so the grammar completes and the model
    can only stop there; the caller appends `Action Input: ` and runs phase 2. With
    ``numbers``, the answer writes no number but those (:func:`answer_grammar`).
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
    if allow_final and numbers is not None:
        branches.append("final")
        rules.append('final ::= "Final Answer: " answer')
        rules.append(_answer_rules(numbers))
    elif allow_final:
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


def answer_grammar(numbers: Sequence[str], *, rest: bool = False, after: str = "") -> str:
    """Grammar for an answer's text in which every number is one of ``numbers`` (as
    written in the results and the user's words) or a citation id like ``[R2]``: the
    model cannot state a figure no tool returned. Other text is free. ``rest``: the
    text continues an answer already begun (it may start with a blank); ``after``: that
    answer so far, whose last number or citation may have been cut off mid-way (the
    rest first finishes it: "3" of "391" goes on with "91")."""
    literals = _literals(numbers)
    body = "answer" if not rest else _resume(after, literals,
                                             "part* num?" if literals else "part*")
    return f"root ::= {body}\n{_answer_rules(numbers)}\n"


_OPEN_CITE = re.compile(r"\[(R\d{0,2})?$")
_OPEN_NUMBER = re.compile(r"[-+\d.,_eE]*\d$")


def _resume(after: str, literals: Sequence[str], tail: str) -> str:
    """The root of an answer's rest (``tail``), first finishing the citation or number
    ``after`` ends in."""
    if cite := _OPEN_CITE.search(after):
        written = len(cite.group()) - 1  # of "R", digit, digit
        close = ['"R" [0-9] [0-9]? "]"', '[0-9] [0-9]? "]"', '[0-9]? "]"', '"]"'][written]
        return f"(({close} | text) {tail})?"  # "[R" may be plain text too: "[Reuters]"
    run = _OPEN_NUMBER.search(after)
    if run is None:
        return tail
    # Any suffix of the run may be where the number began ("2-3": "-3" or "3").
    text = run.group()
    starts = [text[i:] for i in range(len(text)) if text[i] in "+-0123456789"]
    ends = sorted({lit[len(s):] for s in starts for lit in literals
                   if lit.startswith(s) and len(lit) > len(s)}, key=lambda e: (-len(e), e))
    go_on = f"(text {tail})?"  # after a whole number, a non-digit or nothing
    if not ends:
        return go_on
    close = "(" + " | ".join(gbnf_literal(e) for e in ends) + ")"
    finished = any(s in literals for s in starts)
    return f"({close} {go_on} | text {tail})?" if finished else f"{close} {go_on}"


def _literals(numbers: Sequence[str]) -> list[str]:
    return sorted({n for n in numbers if n and re.fullmatch(r"[-+]?[\d.,_eE+-]+", n)},
                  key=len, reverse=True)


def _answer_rules(numbers: Sequence[str]) -> str:
    # A number is a whole literal followed by a non-digit (or the end), so "17" cannot
    # grow into "171"; "[R" digits "]" keeps citations possible. The first character is
    # not blank, so "Final Answer: " + a token " Paris" is not forced apart.
    literals = _literals(numbers)
    number = " | ".join(gbnf_literal(n) for n in literals)
    rules = [
        'cite ::= "[R" [0-9] [0-9]? "]"',
        "text ::= [^0-9\\x00-\\x08\\x0B-\\x1F\\x7F]",
    ]
    if literals:
        rules += [
            "answer ::= (first | cite | num text) part* num? | num",
            "part ::= text | cite | num text",
            f"num ::= {number}",
        ]
    else:
        rules += ["answer ::= (first | cite) part*", "part ::= text | cite"]
    rules.append("first ::= [^ \\t\\r\\n\\x00-\\x1F0-9\\x7F]")
    return "\n".join(rules)


def next_action_grammar(tool_names: Sequence[str]) -> str:
    """Grammar after a call's arguments: a new line, then another ``Action: <tool>\\n`` or
    ``Observation:`` (the stop sequence: the end of the turn).

    The choice is between the line the model would write to wait for a result and
    another call in the same step (parallel calls); with no tool names, only the first.
    """
    names = list(dict.fromkeys(tool_names))
    if any(not n or "\n" in n for n in names):
        raise ValueError(f"tool names must be non-empty single-line strings: {names!r}")
    if not names:
        return 'root ::= "\\n" "Observation:"\n'
    tools = " | ".join(gbnf_literal(n) for n in names)
    return (f'root ::= "\\n" ("Observation:" | "Action: " tool "\\n")\n'
            f"tool ::= {tools}\n")


def tool_name_grammar(tool_names: Sequence[str]) -> str:
    """Grammar after ``Action:``: a space, one of the tool names, a new line."""
    names = list(dict.fromkeys(tool_names))
    if not names or any(not n or "\n" in n for n in names):
        raise ValueError(f"tool names must be non-empty single-line strings: {names!r}")
    return f'root ::= " " ({" | ".join(gbnf_literal(n) for n in names)}) "\\n"\n'


def _upto(n: int | None) -> str:
    # Bounded repetition `x{0,N}` expands into N nested rules, and llama.cpp's sampler pays
    # for them on every token (36 s for a 4-token reply at N=1000, measured): lengths are
    # left unbounded by default and capped by max_tokens instead.
    if n is None:
        return "*"
    return f"{{0,{n - 1}}}" if n > 1 else "{0,0}"


_SPAN = "CALLGATE_SPAN"  # placeholder consts, replaced by their rules after conversion
_QUERY = "CALLGATE_QUERY"
_MAX_QUERY_SPANS = 8
_SPAN_WORD = re.compile(r"\w+")  # identifiers (main_db, user_id) are one word
_SPAN_JOIN = re.compile(r"[ ,.'&/:+-]{1,3}")  # what may join two words inside one span
_MAX_SPAN_WORDS = 400  # the span rule grows with the text; beyond, the latest words


@dataclass(frozen=True)
class Values:
    """What argument values may be: the rules of point "values the model cannot invent".

    ``text``: string arguments are spans of it (whole words, copied with the characters
    between them), unless the schema gives an enum, const, pattern or format, or the
    argument is free text (``FREE_TEXT_WORDS``, or named in ``free``). ``numbers``: number
    and integer arguments are one of them (integers: the integral ones); when none fits
    the type, any number is allowed. ``words``: the arguments ``word_args`` names (None:
    every search argument, ``is_search_text``: ``query``, ``keywords``...) are free text
    composed of spans of it, in any order, one space between them ("latest Python
    release", not "latest_python_release" or "R1"). ``None`` leaves that kind
    unconstrained."""

    text: str | None = None
    numbers: tuple[float, ...] | None = None
    free: frozenset[str] = field(default_factory=frozenset)
    words: str | None = None
    word_args: frozenset[str] | None = None

    def is_words(self, name: str, spec: dict[str, Any]) -> bool:
        if self.words is None:
            return False
        return is_search_text(name, spec) if self.word_args is None else name in self.word_args

    def is_free(self, name: str, spec: dict[str, Any]) -> bool:
        return name in self.free or is_free_text(name, spec)


def span_rules(text: str, name: str = "span", word: str = "sw",
               open_ends: frozenset[str] = frozenset()) -> str:
    """GBNF rules: ``name`` is any run of whole words of ``text`` with the characters
    between them as written, JSON-escaped (a rule per word: ``word`` and its index); the
    grammar is linear in the text's length. A run may not end on a word of ``open_ends``
    (lower case): such a word only leads into the next one."""
    words = list(_SPAN_WORD.finditer(text))[-_MAX_SPAN_WORDS:]
    joins = [i + 1 < len(words)
             and _SPAN_JOIN.fullmatch(text[w.end():words[i + 1].start()]) is not None
             for i, w in enumerate(words)]
    # A word that may not end a run, with nowhere to lead: no run can use it.
    dead = [False] * len(words)
    for i in reversed(range(len(words))):
        dead[i] = words[i].group().lower() in open_ends and not (joins[i] and not dead[i + 1])
    live = [i for i in range(len(words)) if not dead[i]]
    if not live:
        return name + ' ::= [^"\\\\\\x7F\\x00-\\x1F]+\n'
    rules = []
    for i in live:
        found = words[i]
        body = gbnf_literal(json.dumps(found.group(), ensure_ascii=False)[1:-1])
        if joins[i] and not dead[i + 1]:
            between = text[found.end():words[i + 1].start()]
            step = f"{gbnf_literal(json.dumps(between)[1:-1])} {word}{i + 1}"
            body += f" {step}" if found.group().lower() in open_ends else f" ({step})?"
        rules.append(f"{word}{i} ::= {body}")
    starts = " | ".join(f"{word}{i}" for i in live)
    return "\n".join([f"{name} ::= {starts}", *rules]) + "\n"


def query_rules(text: str, name: str = "query") -> str:
    """GBNF rules: ``name`` is up to eight spans of ``text`` (:func:`span_rules`) with one
    space between them: a search composed of the conversation's words. A span does not end
    on a stop word ("At" was a whole query once; "At what mileage" is not cut there)."""
    more = _MAX_QUERY_SPANS - 1
    return (f'{name} ::= {name}-span (" " {name}-span){{0,{more}}}\n'
            + span_rules(text, name=f"{name}-span", word=f"{name}-w", open_ends=STOP_WORDS))


def args_grammar(
    schema: dict[str, Any],
    *,
    include_optional: bool | Sequence[str] = True,
    max_string_chars: int = 120,
    max_array_items: int = 8,
    values: Values | None = None,
    filled_lists: bool = False,
) -> str:
    """Phase-2 grammar: exactly one JSON object valid for the tool's JSON `schema`.

    Strings and arrays are bounded (via `maxLength`/`maxItems`, which llama.cpp's
    converter honours); `include_optional=False` keeps only required properties, a list
    keeps the required ones and those named. ``values`` limits the top-level arguments'
    values (and their array items) to what the conversation contains (:class:`Values`).
    A root schema without properties (`{}`, `{"type": "object"}`) means "no arguments"
    and yields exactly `{}`. With ``filled_lists`` a required top-level array (``type``
    ``array``, or no type and ``items``) without a default has at least one item; arrays
    inside ``anyOf``, a type list or a ``$ref`` are left as they are.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    keep = None if isinstance(include_optional, bool) else set(include_optional)
    bounded = bound_schema(
        schema,
        include_optional=include_optional if isinstance(include_optional, bool) else True,
        max_string_chars=max_string_chars,
        max_array_items=max_array_items,
    )
    if keep is not None and isinstance(bounded.get("properties"), dict):
        required = set(bounded.get("required") or [])
        bounded["properties"] = {k: v for k, v in bounded["properties"].items()
                                 if k in required or k in keep}
    if filled_lists and isinstance(bounded.get("properties"), dict):
        for name in bounded.get("required") or []:
            spec = bounded["properties"].get(name)
            is_array = isinstance(spec, dict) and (spec.get("type") == "array" or (
                spec.get("type") is None and "items" in spec))
            if is_array and "default" not in spec and spec.get("maxItems", 1) >= 1:
                spec["minItems"] = max(1, spec.get("minItems", 0))
    placed: set[str] = set()  # the placeholder consts put in
    if values is not None and isinstance(bounded.get("properties"), dict):
        for name, spec in bounded["properties"].items():
            placed |= _limit_values(name, spec, values)
    if _is_no_args(bounded):
        return 'root ::= "{" space "}" space\nspace ::= " "?\n'
    try:
        gbnf = json_schema_to_gbnf(json.dumps(bounded))
    except (AssertionError, ValueError, KeyError, NotImplementedError):
        # llama-cpp-python's converter takes only part of regex syntax ("(?:" fails): a
        # pattern it cannot read constrains nothing here; validation still checks it.
        gbnf = json_schema_to_gbnf(json.dumps(_without_patterns(bounded)))
    gbnf = _strict_json_chars(gbnf)
    # The converter names rules after the properties: ours carry a prefix no name has.
    if values is not None and _SPAN in placed:
        gbnf = gbnf.replace(gbnf_literal(json.dumps(_SPAN)), '"\\"" cg-span "\\""')
        gbnf += "\n" + span_rules(values.text or "", name="cg-span", word="cg-sw")
    if values is not None and _QUERY in placed:
        gbnf = gbnf.replace(gbnf_literal(json.dumps(_QUERY)), '"\\"" cg-query "\\""')
        gbnf += "\n" + query_rules(values.words or "", name="cg-query")
    return gbnf + "\n"


def _without_patterns(schema: Any) -> Any:
    """``schema`` with every ``pattern`` keyword removed."""
    if isinstance(schema, dict):
        return {k: _without_patterns(v) for k, v in schema.items() if k != "pattern"
                or not isinstance(v, str)}
    if isinstance(schema, list):
        return [_without_patterns(v) for v in schema]
    return schema


def _limit_values(name: str, spec: Any, values: Values) -> set[str]:
    """Rewrite one argument's bounded schema in place (its array items too); the
    placeholder consts put in."""
    if not isinstance(spec, dict) or {"enum", "const", "pattern", "format", "$ref",
                                      "anyOf", "oneOf", "allOf"} & spec.keys():
        return set()
    kind = spec.get("type")
    if kind == "array" and isinstance(spec.get("items"), dict):
        return _limit_values(name, spec["items"], values)
    if kind == "string" and values.words is not None and values.is_words(name, spec):
        if _SPAN_WORD.search(values.words):
            return _to_placeholder(spec, _QUERY)
    elif kind == "string" and values.text is not None and not values.is_free(name, spec):
        if _SPAN_WORD.search(values.text):
            return _to_placeholder(spec, _SPAN)
    elif kind in ("integer", "number") and values.numbers is not None:
        fits = [n for n in values.numbers if kind == "number" or float(n).is_integer()]
        fits = [n for n in fits if _in_bounds(n, spec)]
        if fits:
            literals = [int(n) if float(n).is_integer() else n for n in fits]
            spec.clear()
            spec["enum"] = list(dict.fromkeys(literals))
    return set()


def _to_placeholder(spec: dict[str, Any], const: str) -> set[str]:
    """Turn a string argument's schema into the placeholder ``const`` (its rule replaces
    it once the schema is converted)."""
    for key in ("type", "maxLength", "minLength"):
        spec.pop(key, None)
    spec["const"] = const
    return {const}


def _in_bounds(n: float, spec: dict[str, Any]) -> bool:
    low, high = spec.get("minimum"), spec.get("maximum")
    return (low is None or n >= low) and (high is None or n <= high)


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
        if isinstance(s.get("enum"), list) and isinstance(t, str):
            # A member its own type rules out is a value validation refuses: never offer it.
            s["enum"] = [m for m in s["enum"] if _json_type_fits(m, t)] or s["enum"]
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


def _json_type_fits(value: Any, kind: str) -> bool:
    """Whether ``value`` is of JSON Schema type ``kind`` (``True`` is no integer)."""
    if kind == "integer":
        return not isinstance(value, bool) and (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    kinds = {"string": str, "boolean": bool, "array": list, "object": dict,
             "null": type(None)}
    return kind not in kinds or isinstance(value, kinds[kind])


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
