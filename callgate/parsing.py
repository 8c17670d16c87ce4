"""Turn raw model text into tool calls, a final answer, or a correctable error.

Models that only write text announce tool calls in many dialects; this module reads them
all and returns one `ParsedOutput`. Parsing is not validation: an unknown tool name is
still a call (the registry rejects it later).

Recognised formats (the `format` field):

* ``react``: ``Thought:`` / ``Action:`` / ``Action Input:`` (any case, CRLF, json5 input;
  labels in emphasis, after a list item's or a quote's mark, or after prose; plain text
  as the input of a tool that takes one text argument);
* ``xml``: ``<tool_call>{json}</tool_call>`` (several; an unclosed last one), also the
  ``<function=name><parameter=k>v</parameter></function>`` body of Qwen3-Coder, and
  Llama 3.1's ``<function=name>{json}</function>`` on its own;
* ``fenced_json`` / ``json``: a call envelope in a fenced block or inline in prose;
* ``mistral``: ``[TOOL_CALLS] [...]`` (and ``[TOOL_CALLS]name[ARGS]{...}``);
* ``python_tag``: Llama 3 ``<|python_tag|>{...}`` (or ``tool.call(k=v)``);
* ``qwen``: ``✿FUNCTION✿: name`` + ``✿ARGS✿: {...}``;
* ``deepseek``: ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>name`` + a fenced JSON object (or
  ``name<｜tool▁sep｜>{...}``), up to ``<｜tool▁call▁end｜>``;
* ``functions``: llama-cpp-python's chatml-function-calling ``functions.name:`` line, its
  JSON arguments after it (several calls in a row);
* ``harmony``: gpt-oss's messages to ``functions.name`` (the ``analysis`` channel is the
  reasoning; the ``final`` channel's text is read as any reply);
* ``python_call``: ``name(k="v")`` when ``name`` is a known tool (in Gemma's
  ```` ```tool_code ```` block, ``print(default_api.name(k="v"))``);
* ``final``: an explicit ``Final Answer:`` (or ``✿RETURN✿``); ``prose``: no markers;
* ``empty``: nothing usable (empty reply, or reasoning only).

Call envelopes: ``{"name"|"tool"|"tool_name"|"function"|"action": n,
"arguments"|"args"|"parameters"|"input"|"action_input"|"tool_input"|"params": {...}}``,
arguments as a JSON string, lists of envelopes, ``{"function": {...}}``,
``{"tool_calls": [...]}`` and, with known tool names, ``{"tool_name": {...}}``; under an
``Action:`` label too, as LangChain's structured chat agents write them, whose
``{"action": "Final Answer", "action_input": "…"}`` is a final answer.

Rules: ``<think>`` content is never a call (an unclosed ``<think>`` is reasoning only
when nothing visible comes before it; in prose it is text); an invented ``Observation:``
(or tool response) after a call and everything after it is discarded, while one echoed
before any call is dropped on its own and one after a final answer belongs to the answer;
a ``<tool_call>`` or ``[TOOL_CALLS]`` not followed by a call is prose; when actions and a
final answer both appear, whichever comes first wins; truncated JSON is an error, never
repaired.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import json5
import json_repair

from callgate.sanitize import (
    LINE_DECORATION,
    THOUGHT_FINAL,
    THOUGHT_FINAL_EMPHASIS,
    JsonSpan,
    action_target,
    call_follows,
    sanitize,
)

__all__ = ["ParsedOutput", "parse_model_output", "whole_json"]

EXAMPLE_ARGS = '{"query": "..."}'

ERR_EMPTY = (
    "The reply was empty. Either call a tool with its JSON arguments, "
    "or write the final answer for the user."
)
ERR_REASONING_ONLY = (
    "The reply contained only reasoning and no tool call or answer. After thinking, "
    "either call a tool or write the final answer for the user."
)
ERR_NO_ACTION = (
    "The reply had a Thought but neither an Action nor a Final Answer. Either name a "
    "tool on an Action line followed by its Action Input as a JSON object, or give the "
    "Final Answer."
)
ERR_CUT_CALL = (
    "The tool call is incomplete: it was cut off before its closing parenthesis, so it "
    'was not made. Send the whole call again, e.g. web_search(query="...").'
)
ERR_EMPTY_FINAL = "The Final Answer was empty. Write the answer for the user after the label."
# The errors above address the model; what each means, told to the user.
REPLY_PROBLEMS = {
    ERR_EMPTY: "the model's reply was empty",
    ERR_REASONING_ONLY: "the model's reply held only reasoning, no call or answer",
    ERR_NO_ACTION: "the model's reply named no tool and gave no answer",
    ERR_CUT_CALL: "the model's tool call was cut off before it was complete",
    ERR_EMPTY_FINAL: "the model's answer was empty",
}


@dataclass(frozen=True)
class ParsedOutput:
    """The result of parsing one model reply.

    Exactly one of these holds: `calls` is non-empty, `final_answer` is not None, or
    `error` is not None (a sentence for the model to act on).
    """

    calls: list[dict[str, Any]] = field(default_factory=list)
    final_answer: str | None = None
    error: str | None = None
    thought: str | None = None
    format: str = "empty"

    @property
    def kind(self) -> str:
        """Which outcome this is: "tool_calls", "final" or "invalid"."""
        if self.calls:
            return "tool_calls"
        return "final" if self.final_answer is not None else "invalid"


class _CallError(ValueError):
    """A call was clearly intended but cannot be used as written."""


@dataclass
class _Hit:
    """One recognised piece of the reply: calls, a final answer or an error."""

    start: int
    end: int
    format: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    final: str | None = None
    error: str | None = None
    rank: int = 0  # breaks ties between hits at the same position: lower wins


# --- small helpers -------------------------------------------------------------------

_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*")
_FENCE_WRAP_RE = re.compile(r"^```[\w+-]*[ \t]*\n?(.*?)\n?[ \t]*(?:```)?\s*$", re.DOTALL)


def _fragment(text: str, limit: int = 60) -> str:
    """A short one-line quote of the model's text for an error message."""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def _strip_fence(text: str) -> str:
    """`text` without a surrounding ``` fence or single backticks."""
    text = text.strip()
    m = _FENCE_WRAP_RE.match(text)
    if m:
        text = m.group(1).strip()
    if len(text) >= 2 and text[0] == text[-1] == "`":
        text = text.strip("`").strip()
    return text


def _value_end(text: str, start: int) -> int | None:
    """End of the bracketed value opening at `text[start]`, or None if it is truncated."""
    return JsonSpan().scan(text, start)


def _truncated_error(what: str) -> str:
    return (
        f"The {what} JSON is incomplete: it was cut off before its closing brace, so the "
        f"call was not made. Send the whole call again, complete and shorter if needed, "
        f"e.g. {EXAMPLE_ARGS}."
    )


def _loads(src: str) -> Any:
    """Parse complete but possibly non-strict JSON: json, json5, Python literals, repair.

    Callers must rule out truncation first: json_repair would happily close the braces
    of a cut-off call and invent its arguments.
    """
    try:
        return json.loads(src)
    except ValueError:
        pass
    try:
        return json5.loads(src)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        repaired = json_repair.repair_json(src, return_objects=True)
    except Exception:  # a heuristic third-party parser: any failure means "not JSON"
        repaired = None
    if isinstance(repaired, dict | list) and (repaired or src.strip() in ("{}", "[]")):
        return repaired
    raise ValueError("not JSON")


def _json_values(text: str, what: str) -> list[Any]:
    """The JSON values at the start of `text`, separated by spaces, commas or semicolons."""
    values: list[Any] = []
    i = 0
    while True:
        i = len(text) - len(text[i:].lstrip(" \t\r\n,;"))
        if i >= len(text) or text[i] not in "{[":
            return values
        end = _value_end(text, i)
        if end is None:
            raise _CallError(_truncated_error(what))
        try:
            values.append(_loads(text[i:end]))
        except ValueError:
            raise _CallError(
                f"The {what} is not valid JSON (\"{_fragment(text[i:end])}\"). Write it as "
                f'{{"name": "tool_name", "arguments": {EXAMPLE_ARGS}}}.'
            ) from None
        i = end


def whole_json(text: str) -> bool:
    """Whether `text` is one JSON value (JSON5 too) and nothing else, a fence around it
    aside."""
    body = _strip_fence(text)
    if body[:1] not in ("{", "[") or _value_end(body, 0) != len(body):
        return False
    try:
        _loads(body)
    except ValueError:
        return False
    return True


def _not_object_error(label: str, got: str) -> str:
    return (
        f"The {label} must be a JSON object with the tool arguments, for example "
        f'{label}: {EXAMPLE_ARGS} (use {{}} when the tool takes none). Got: "{_fragment(got)}".'
    )


def _parse_args_text(value: str, label: str, single: str | None = None) -> dict[str, Any]:
    """Arguments written after a label such as `Action Input:`; raises _CallError. With
    `single` (the tool's one text argument), plain text or a string is that argument's
    value, as LangChain's ReAct agents have models write it ("Action Input: weather in
    Paris")."""
    text = _strip_fence(value)
    if text in ("", "{}"):
        return {}
    if text[0] in "{[":
        end = _value_end(text, 0)
        if end is None:
            raise _CallError(_truncated_error(label))
        try:
            args = _loads(text[:end])
        except ValueError:
            args = None
        if isinstance(args, dict) and all(isinstance(k, str) for k in args):
            return args
        raise _CallError(_not_object_error(label, text))
    if text[0] in "\"'":
        # A JSON object wrapped in a string: "{\"q\": 1}".
        try:
            inner = _loads(text)
        except ValueError:
            inner = None
        if isinstance(inner, str) and inner.strip().startswith("{"):
            return _parse_args_text(inner, label)
        if single and isinstance(inner, str) and inner.strip():
            return {single: inner.strip()}
    elif single:
        return {single: _named_value(text, single)}
    raise _CallError(_not_object_error(label, text))


_NAMED_VALUE_RE = re.compile(r"([A-Za-z_]\w*)[ \t]*[=:][ \t]*(.+)", re.DOTALL)
# One quoted string, no unescaped quote of its kind inside.
_QUOTED_VALUE_RE = re.compile(r"""(["'])((?:\\.|(?!\1)[^\\])*)\1""", re.DOTALL)


def _named_value(text: str, name: str) -> str:
    """Plain text for the argument `name`, without that name written before it as a key:
    "city=Paris", "city: Paris", 'city="Paris"' are "Paris". Only where the rest is one
    value, a quoted string or a line: 'query="a" or "b"' and "code = 5\\nprint(code)" are
    their whole text."""
    m = _NAMED_VALUE_RE.fullmatch(text)
    if m is None or m.group(1).casefold() != name.casefold():
        return text
    value = m.group(2).strip()
    if value[:1] in ("'", '"'):
        quoted = _QUOTED_VALUE_RE.fullmatch(value)
        value = quoted.group(2).strip() if quoted else ""
    elif "\n" in value:
        value = ""
    return value or text


def _jsonable(value: Any) -> Any:
    """Python literal → JSON-compatible value; raises ValueError for sets, bytes, …"""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    raise ValueError(f"not a JSON value: {type(value).__name__}")


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _python_call(src: str) -> dict[str, Any] | None:
    """`name(k=literal, …)` as a call, None if it is not one; raises _CallError."""
    try:
        node = ast.parse(src.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call):
        return None
    name = _dotted_name(node.func)
    if name is None:
        return None
    try:
        positional = [_jsonable(ast.literal_eval(a)) for a in node.args]
        args = {}
        for kw in node.keywords:
            if kw.arg is None:
                return None
            args[kw.arg] = _jsonable(ast.literal_eval(kw.value))
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None  # not literal values: code or prose, not a call
    if positional:
        raise _CallError(
            f"Call {name} with keyword arguments only, e.g. {name}(query=\"...\"); "
            "positional arguments cannot be matched to parameter names."
        )
    return {"name": name, "args": args}


# --- call envelopes ---------------------------------------------------------------------

_NAME_KEYS = ("name", "tool", "tool_name", "function", "action")
_ARG_KEYS = ("arguments", "args", "parameters", "input", "action_input", "tool_input", "params")
_ENVELOPE_START_RE = re.compile(
    r"""[\[\s]*\{\s*["']?(?:name|tool|tool_name|function|tool_calls|action)["']?\s*:"""
)


def _make_call(name: str, args: Any) -> dict[str, Any]:
    name = name.strip()
    if not name:
        raise _CallError('The tool call has an empty "name". Give the name of the tool.')
    if args is None:
        return {"name": name, "args": {}}
    if isinstance(args, str):
        return {"name": name, "args": _parse_args_text(args, "arguments")}
    if isinstance(args, dict) and all(isinstance(k, str) for k in args):
        return {"name": name, "args": args}
    raise _CallError(
        f'The "arguments" of {name} must be a JSON object such as {EXAMPLE_ARGS}, '
        f"not {type(args).__name__}."
    )


def _to_calls(obj: Any, names: frozenset[str]) -> list[dict[str, Any]] | None:
    """The calls a parsed JSON value describes, None if it is just data."""
    if isinstance(obj, list):
        calls: list[dict[str, Any]] = []
        for item in obj:
            got = _to_calls(item, names)
            if not got:
                return None
            calls.extend(got)
        return calls or None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("tool_calls"), list):
        return _to_calls(obj["tool_calls"], names)
    for key in ("function", "function_call"):
        inner = obj.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return _to_calls(inner, names)
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name_key is not None:
        name = obj[name_key]
        arg_key = next((k for k in _ARG_KEYS if k in obj), None)
        if arg_key is not None:
            return [_make_call(name, obj[arg_key])]
        if name in names and set(obj) <= {name_key, "id", "type"}:
            return [{"name": name, "args": {}}]
        return None
    if names and len(obj) == 1:
        ((key, value),) = obj.items()
        if key in names and (value is None or isinstance(value, dict)):
            return [_make_call(key, value)]
    return None


def _calls_from_values(text: str, what: str, names: frozenset[str]) -> list[dict[str, Any]]:
    """Calls from the JSON value(s) at the start of `text`; raises _CallError."""
    values = _json_values(text, what)
    calls = _to_calls(values, names) if values else None
    if not calls:
        raise _CallError(
            f"The {what} must be a JSON object with a tool name and its arguments, e.g. "
            f'{{"name": "tool_name", "arguments": {EXAMPLE_ARGS}}}.'
        )
    return calls


def _hit_from(start: int, end: int, fmt: str, make: Callable[[], list[dict[str, Any]]]) -> _Hit:
    """Run `make()` for calls; a _CallError becomes an error hit."""
    try:
        return _Hit(start, end, fmt, calls=make())
    except _CallError as exc:
        return _Hit(start, end, fmt, error=str(exc))


# --- reasoning and fabricated observations ------------------------------------------------

_THINK_RE = re.compile(r"<(think|thinking)>(.*?)(?:</\1>|\Z)", re.IGNORECASE | re.DOTALL)
_THINK_CLOSE_RE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_OPEN_RE = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_OBSERVATION_RE = re.compile(
    r"^[ \t]*(?:observation[ \t]*:|✿result✿)|<tool_response>", re.IGNORECASE | re.MULTILINE
)


def _split_reasoning(text: str, names: frozenset[str]) -> tuple[str, list[str]]:
    """Remove `<think>` blocks; return the rest and the reasoning texts."""
    thoughts: list[str] = []
    close = _THINK_CLOSE_RE.search(text)
    opened = _THINK_OPEN_RE.search(text)
    if close and (opened is None or close.start() < opened.start()):
        # The chat template opened the block for the model: only `</think>` is written.
        thoughts.append(text[: close.start()])
        text = text[close.end() :]
    kept: list[str] = []
    pos = 0
    for m in _THINK_RE.finditer(text):
        closed = m.group(0).lower().endswith(f"</{m.group(1).lower()}>")
        if not closed and sanitize("".join(kept) + text[pos : m.start()], tool_names=names):
            break  # an unclosed tag after visible text is a mention in prose
        kept.append(text[pos : m.start()])
        thoughts.append(m.group(2))
        pos = m.end()
    kept.append(text[pos:])
    return "".join(kept), [t.strip() for t in thoughts if t.strip()]


# A call made before an Observation makes that Observation an invented one.
_CALL_MARKER_RE = re.compile(
    r"^[ \t]*(?:action(?:[ _]input)?[ \t]*:|✿FUNCTION✿)|<tool_call>|\[TOOL_CALLS\]"
    r"|<\|python_tag\|>",
    re.IGNORECASE | re.MULTILINE,
)
# Where an echoed Observation ends: the next ReAct label or call.
_ECHO_STOP_RE = re.compile(
    r"^[ \t]*(?:(?:thought|action|action[ _]input|final[ _]answer|observation)[ \t]*:|✿)"
    r"|<tool_call>|\[TOOL_CALLS\]",
    re.IGNORECASE | re.MULTILINE,
)
_TOOL_RESPONSE_CLOSE = "</tool_response>"


def _cut_observation(text: str, names: frozenset[str]) -> str:
    """Handle `Observation:` lines (and tool responses) the model wrote itself.

    After a call, one is invented (the stop sequence was ignored): it and what follows go.
    Before any call or answer label it is an echo of the last result: it alone goes, when
    the next ReAct label follows it or nothing visible came before it. After a final
    answer label, it is part of the answer.
    """
    pos = 0
    while m := _OBSERVATION_RE.search(text, pos):
        before = text[: m.start()]
        if _FINAL_RE.search(before):
            return text
        if _CALL_MARKER_RE.search(before):
            return before
        visible_before = bool(sanitize(before, tool_names=names))
        end: int | None = None
        if m.group().lower() == "<tool_response>":
            close = text.lower().find(_TOOL_RESPONSE_CLOSE, m.end())
            if close >= 0:
                end = close + len(_TOOL_RESPONSE_CLOSE)
            elif visible_before:
                pos = m.end()  # mentioned in prose
                continue
        if end is None:
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end + 1
            value = len(text) - len(text[m.end() :].lstrip(" \t"))
            if value < len(text) and text[value] in "{[":
                json_end = _value_end(text, value)
                if json_end is not None:
                    line_end = text.find("\n", json_end)
                    line_end = len(text) if line_end < 0 else line_end + 1
            stop = _ECHO_STOP_RE.search(text, line_end)
            if stop is not None:
                end = stop.start()
            elif not visible_before:
                end = line_end
            else:
                pos = m.end()  # an Observation line in prose
                continue
        text = before + text[end:]
        pos = m.start()
    return text


# --- detectors: each returns the hits of one format --------------------------------------

# A ReAct label in markdown emphasis at a line start: "**Action:** x", "**Action**: x"; and
# a final answer label in emphasis later on a Thought line.
_EMPHASIS_CLOSE = r"(?:\2[ \t]*:|[ \t]*:[ \t]*\2)(?!\*)"
_EMPHASIZED_LABEL = re.compile(
    r"^([ \t]*)(\*\*?)(thought|action[ _]input|action|observation|final[ _]answer)"
    + _EMPHASIS_CLOSE, re.IGNORECASE | re.MULTILINE)
_EMPHASIZED_THOUGHT_FINAL = re.compile(
    rf"^([ \t]*\**thought\**[ \t]*:\**[^\n]*?)(?:(?P<label>{THOUGHT_FINAL_EMPHASIS})"
    rf"|{THOUGHT_FINAL})", re.IGNORECASE | re.MULTILINE)
# A ReAct label (plain or in emphasis) after a list item's or a quote's mark at a line start.
_DECORATED_LABEL = re.compile(
    rf"^([ \t]*)(?P<mark>{LINE_DECORATION.pattern})(?P<label>\*{{0,2}}"
    r"(?P<keyword>thought|action[ _]input|action|observation|final[ _]answer)"
    r"(?:\*{0,2}[ \t]*:|[ \t]*:\*{0,2}))", re.IGNORECASE | re.MULTILINE)
# An `Action:` after prose, as the sanitizer takes it for markup (written `Action`, after a
# character of no word and no emphasis); a line whose words are the model's own.
_MID_ACTION = re.compile(r"(?<![\w*])Action[ \t]*:")
_WORDS_LINE = re.compile(r"[ \t]*(?:thought|observation)[ \t]*:", re.IGNORECASE)


def _answer_start(text: str) -> int:
    """Where the first final answer label starts (the end of `text` if none)."""
    final = _FINAL_RE.search(text)
    return final.start() if final else len(text)


def undecorated_labels(text: str, names: frozenset[str]) -> str:
    """`text` with the list item's or quote's mark before each ReAct label removed, as the
    sanitizer removes it ("- Action: web_search", "2. Action Input: {…}", "> Thought: …":
    markdown-minded models set their steps so, and the Action Input was lost), where the
    reply is ReAct (an `Action Input:` or final answer label, or an `Action:` naming a
    tool) — a list of notes ("- Action: approve the budget") stays prose — and up to the
    first final answer label: the answer's own text keeps its marks."""
    stop = _answer_start(text)
    found: list[re.Match[str]] = []
    for m in _DECORATED_LABEL.finditer(text):
        if m.start() > stop:
            break
        if not m.group("mark"):
            continue  # a plain label, or one in emphasis (``plain_labels``)
        found.append(m)
        if m.group("keyword").lower().startswith("final"):
            break
    if not found or not _is_react(text, names, [(m.group("keyword"), m.end()) for m in found]):
        return text
    out: list[str] = []
    pos = 0
    for m in found:
        out += [text[pos : m.start()], m.group(1)]
        pos = m.start("label")
    return "".join(out) + text[pos:]


def _is_react(text: str, names: frozenset[str], labels: list[tuple[str, int]]) -> bool:
    """Whether a reply whose labels set apart (by a list's mark, by emphasis) are `labels`,
    each its keyword and where it ends, is ReAct: it has a plain `Action Input:` or final
    answer label, or one of `labels` is neither a Thought nor an Observation and, where an
    `Action:`, names a tool. Notes set so ("- Action: approve the budget") are prose."""
    if _answer_start(text) < len(text) or _INPUT_RE.search(text):
        return True
    folded = {n.casefold() for n in names}
    for keyword, end in labels:
        keyword = keyword.lower()
        if keyword.startswith(("thought", "observation")):
            continue
        if keyword != "action":
            return True
        target = action_target(text, end)
        if isinstance(target, tuple) and target[0].casefold() in folded:
            return True
    return False


def plain_labels(text: str, names: frozenset[str]) -> str:
    """`text` with the ReAct labels a model set in markdown emphasis (chat-tuned models
    bold them: ``**Action:** web_search``) written plain, as the detectors read them, where
    the reply is ReAct (an `Action Input:` or final answer label, or an `Action:` naming a
    tool) — bold notes (``**Action:** Approve``, ``**Owner:** Bob``) stay prose — and up to
    the first final answer label: the answer's own text keeps its emphasis."""
    inline = _EMPHASIZED_THOUGHT_FINAL.search(text)
    if inline is None or inline.group("label") is None:
        inline = None  # a plain label first on its line: the text after it is the answer's
    elif inline.start() <= _answer_start(text):
        text = f"{text[: inline.start()]}{inline.group(1)}Final Answer:{text[inline.end():]}"
    stop = _answer_start(text)
    found: list[re.Match[str]] = []
    for m in _EMPHASIZED_LABEL.finditer(text, 0, stop):
        found.append(m)
        if m.group(3).lower().startswith("final"):
            stop = m.start()
            break
    if not found or not (inline is not None or _is_react(
            text, names, [(m.group(3), m.end()) for m in found])):
        return text
    out: list[str] = []
    pos = 0
    for m in found:
        out += [text[pos : m.start()], m.group(1), m.group(3), ":"]
        pos = m.end()
    return "".join(out) + text[pos:]


def action_lines(text: str, names: frozenset[str]) -> str:
    """`text` with an `Action:` that follows prose on its line, and an `Action Input:` on
    its Action's line, each moved to a line of its own, before the first final answer
    label — where the sanitizer takes them for markup (the name is a tool's, or an `Action
    Input:` follows): "I will check. Action: calculator" is the call it shows, not an
    answer "I will check.". A Thought line's words, and what stands inside a value (a
    bracket or string still open, across lines too), are left alone."""
    folded = {n.casefold() for n in names}
    stop = _answer_start(text)
    lines = text[:stop].split("\n")
    following = [""] * len(lines)  # the next non-blank line after each
    for index in range(len(lines) - 2, -1, -1):
        after = lines[index + 1]
        following[index] = after if after.strip() else following[index + 1]
    value = _ValueDepth()
    for index, line in enumerate(lines):
        cuts: list[int] = []
        pos = 0
        for action in _MID_ACTION.finditer(line) if not _WORDS_LINE.match(line) else ():
            pos = value.advance(line, pos, action.start())
            if value.inside:
                continue  # an argument's text ("… Action: …"), or prose's open bracket
            target = action_target(line, action.end())
            if not isinstance(target, tuple):
                continue
            name, until, label = target
            if name.casefold() in folded or label or _INPUT_RE.match(following[index]):
                cuts += [action.start(), until] if label else [action.start()]
        value.advance(line, pos, len(line))
        value.line_end()
        if cuts:
            parts = [line[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(line)],
                                                        strict=True)]
            lines[index] = "\n".join(part for part in parts if part)
    return "\n".join(lines) + text[stop:]


class _ValueDepth:
    """Whether a place in a reply is inside a value: a bracket open, or a double-quoted
    string (which a line's end closes, as a raw newline cannot be in one)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote = False

    @property
    def inside(self) -> bool:
        return bool(self.depth or self.quote)

    def advance(self, line: str, start: int, end: int) -> int:
        """Read `line[start:end]`; return `end`."""
        escaped = False
        for ch in line[start:end]:
            if self.quote:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    self.quote = False
            elif ch == '"':
                self.quote = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth = max(self.depth - 1, 0)
        return end

    def line_end(self) -> None:
        self.quote = False


_ACTION_RE = re.compile(r"^[ \t]*action[ \t]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
_INPUT_RE = re.compile(r"^[ \t]*action[ _]input[ \t]*:", re.IGNORECASE | re.MULTILINE)
_REACT_NEXT_RE = re.compile(
    r"^[ \t]*(?:action[ \t]*:|thought[ \t]*:|final[ _]answer[ \t]*:)",
    re.IGNORECASE | re.MULTILINE,
)
# The label at a line start, later on a Thought line, or Qwen-Agent's ✿RETURN✿.
_FINAL_RE = re.compile(
    rf"^[ \t]*(?:thought[ \t]*:[^\n]*?(?P<inline>{THOUGHT_FINAL})"
    r"|(?P<label>final[ _]answer[ \t]*:|✿RETURN✿(?:[ \t]*:)?))",
    re.IGNORECASE | re.MULTILINE,
)
_THOUGHT_LABEL_RE = re.compile(r"^[ \t]*thought[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)


def _final_hit(text: str, names: frozenset[str]) -> _Hit | None:
    """The first final answer label; it runs to the end, so later ones never count."""
    m = _FINAL_RE.search(text)
    if m is None:
        return None
    start = m.start("inline") if m.group("inline") else m.start("label")
    answer = unwrapped_answer(sanitize(text[m.end() :], tool_names=names), names)
    if answer:
        return _Hit(start, len(text), "final", final=answer)
    return _Hit(start, len(text), "final", error=ERR_EMPTY_FINAL)


def unwrapped_answer(answer: str, tool_names: Iterable[str] = ()) -> str:
    """A sanitized final answer that is wholly a "Final Answer" action envelope, fenced or
    not (a structured chat agent's habit, after the label too), as the envelope's answer;
    any other answer as it is. The streamed answer's reading (``StreamSanitizer``'s
    ``unwrap``)."""
    body = _strip_fence(answer)
    if body[:1] != "{" or _value_end(body, 0) != len(body):
        return answer
    try:
        inner = _final_envelope(_loads(body))
    except ValueError:
        return answer
    return answer if inner is None else sanitize(inner, tool_names=tool_names)


def _react_action(name: str, region: str,
                  single_inputs: Mapping[str, str]) -> dict[str, Any] | str:
    """One ReAct action: a call, or the text of a `Final Answer` action; raises _CallError."""
    name = name.strip().strip("`*\"'[] ").rstrip(".").strip()
    inp = _INPUT_RE.search(region)
    value = region[inp.end() :] if inp else ""
    if name.lower().replace("_", " ") == "final answer":
        try:
            decoded = _loads(value.strip())
        except ValueError:
            decoded = None
        return decoded if isinstance(decoded, str) else value.strip()
    if _NAME_RE.fullmatch(name):
        args = _parse_args_text(value, "Action Input", single_inputs.get(name)) if inp else {}
        return {"name": name, "args": args}
    call = _python_call(name) if "(" in name else None
    if call is not None:
        return call
    raise _CallError(
        "The Action line must contain only the name of one tool, e.g. Action: web_search, "
        f'followed by a line Action Input: {EXAMPLE_ARGS}. Got: "{_fragment(name)}".'
    )


# A fence's opening on the line of the object it holds ("```json {…}```").
_INLINE_FENCE_RE = re.compile(r"`{1,3}(?:json)?[ \t]*(?=[{\[])", re.IGNORECASE)


def _action_blob(region: str, names: frozenset[str]) -> _Hit | None:
    """The call envelope (fenced or not, the fence on the object's line too) that opens
    `region`, an `Action:` line's following text, as a hit in `region`; None if it opens
    with none."""
    start = len(region) - len(region.lstrip())
    fence = _INLINE_FENCE_RE.match(region, start)
    opening = {start, fence.end()} if fence else {start}
    found = [h for h in (*_fenced_hits(region, names, len(region)),
                         *_json_hits(region, names, len(region))) if h.start in opening]
    return min(found, key=lambda h: h.rank) if found else None


def _react_hits(text: str, names: frozenset[str],
                single_inputs: Mapping[str, str]) -> list[_Hit]:
    hits = []
    for m in _ACTION_RE.finditer(text):
        nxt = _REACT_NEXT_RE.search(text, m.end())
        region_end = nxt.start() if nxt else len(text)
        region = text[m.end() : region_end]
        if m.group(1).strip()[:1] in ("", "{", "[", "`") and (
                blob := _action_blob(text[m.start(1) : region_end], names)) is not None:
            # "Action:" over a call envelope, as LangChain's structured chat agents write it.
            end = len(text) if blob.format == "final" else m.start(1) + blob.end
            hits.append(dataclasses.replace(blob, start=m.start(), end=end))
            continue
        try:
            got = _react_action(m.group(1), region, single_inputs)
        except _CallError as exc:
            hits.append(_Hit(m.start(), region_end, "react", error=str(exc)))
            continue
        if isinstance(got, str):
            answer = sanitize(got, tool_names=names)
            error = None if answer else ERR_EMPTY_FINAL
            hits.append(_Hit(m.start(), len(text), "final", final=answer or None, error=error))
        else:
            hits.append(_Hit(m.start(), region_end, "react", calls=[got]))
    if not hits:
        orphan = _INPUT_RE.search(text)
        if orphan:
            hits.append(
                _Hit(
                    orphan.start(),
                    len(text),
                    "react",
                    error="The Action Input has no Action line before it. Name the tool on "
                    "a line Action: tool_name, then give Action Input: " + EXAMPLE_ARGS + ".",
                )
            )
    return hits


_XML_RE = re.compile(
    r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.IGNORECASE | re.DOTALL
)
_XML_FUNCTION_RE = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_XML_PARAM_RE = re.compile(
    r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)", re.DOTALL
)


def _xml_param_value(raw: str) -> Any:
    raw = raw.strip()
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _xml_calls(content: str, names: frozenset[str]) -> list[dict[str, Any]]:
    body = _strip_fence(content)
    if not body:
        raise _CallError(
            "The tool call was empty. Put the call inside as JSON: "
            f'{{"name": "tool_name", "arguments": {EXAMPLE_ARGS}}}.'
        )
    functions = list(_XML_FUNCTION_RE.finditer(body))
    if functions:
        return [_function_call(f.group(1), f.group(2)) for f in functions]
    if body[0] not in "{[":
        call = _python_call(body)
        if call is not None:
            return [call]
    return _calls_from_values(body, "tool call", names)


def _function_calls(name: str, body: str) -> list[dict[str, Any]]:
    return [_function_call(name, body)]


def _function_call(name: str, body: str) -> dict[str, Any]:
    """A `<function=name>` tag's call: its `<parameter=k>` values (Qwen3-Coder), or the JSON
    object it holds (Llama 3.1's custom tool format); raises _CallError."""
    if _XML_PARAM_RE.search(body):
        return {"name": name, "args": {p.group(1): _xml_param_value(p.group(2))
                                       for p in _XML_PARAM_RE.finditer(body)}}
    return {"name": name, "args": _parse_args_text(body, "arguments")}


def _function_tag_hits(text: str) -> list[_Hit]:
    """`<function=name>…</function>` outside a `<tool_call>` (Llama 3.1 writes its custom
    tools' calls so); an unclosed tag is a mention."""
    return [_hit_from(m.start(), m.end(), "xml",
                      partial(_function_calls, m.group(1), m.group(2)))
            for m in _XML_FUNCTION_RE.finditer(text) if m.group(0).endswith("</function>")]


def _xml_hits(text: str, names: frozenset[str]) -> list[_Hit]:
    return [
        _hit_from(m.start(), m.end(), "xml", partial(_xml_calls, m.group(1), names))
        for m in _XML_RE.finditer(text)
        # An unclosed tag followed by prose is a mention, not a call.
        if m.group(0).lower().endswith("</tool_call>")
        or call_follows(m.group(1), 0, True, mistral=False)
    ]


_MISTRAL_RE = re.compile(r"\[TOOL_CALLS\]", re.IGNORECASE)
_MISTRAL_NAMED_RE = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*\[ARGS\]", re.IGNORECASE)


def _mistral_hits(text: str, names: frozenset[str]) -> list[_Hit]:
    hits = []
    for m in _MISTRAL_RE.finditer(text):
        if not call_follows(text, m.end(), True, mistral=True):
            continue  # mentioned in prose
        rest = text[m.end() :]
        named = _MISTRAL_NAMED_RE.match(rest)
        end = _payload_end(text, m.end())

        def make(rest: str = rest, named: re.Match[str] | None = named) -> list[dict[str, Any]]:
            if named:
                return [{"name": named.group(1),
                         "args": _parse_args_text(rest[named.end() :], "arguments")}]
            return _calls_from_values(rest, "tool call list", names)

        hits.append(_hit_from(m.start(), end, "mistral", make))
    return hits


def _payload_end(text: str, start: int) -> int:
    """Where the calls written after a token end: after their JSON, else at the line end."""
    i = len(text) - len(text[start:].lstrip())
    if i < len(text) and text[i] in "{[":
        while i < len(text) and text[i] in "{[":
            end = _value_end(text, i)
            if end is None:
                return len(text)
            i = len(text) - len(text[end:].lstrip(" \t\r\n,;"))
        assert end is not None  # the loop ran (`text[i]` opened a value) and returned on None
        return end
    end = JsonSpan().scan(text, start, to_line_end=True)
    return end if end is not None else len(text)


_PYTHON_TAG_RE = re.compile(r"<\|python_tag\|>", re.IGNORECASE)
_CALL_HEAD_RE = re.compile(r"[A-Za-z_][\w.]*\s*\(")


def _python_tag_calls(rest: str, names: frozenset[str]) -> list[dict[str, Any]]:
    body = rest.strip()
    if body[:1] in ("{", "["):
        return _calls_from_values(body, "tool call", names)
    head = _CALL_HEAD_RE.match(body)
    end = _value_end(body, head.end() - 1) if head else None
    call = _python_call(body[:end]) if end is not None else None
    if call is None:
        raise _CallError(
            "The tool call after the python tag must be JSON: "
            f'{{"name": "tool_name", "parameters": {EXAMPLE_ARGS}}}.'
        )
    call["name"] = call["name"].removesuffix(".call")  # Llama built-ins: brave_search.call(…)
    return [call]


def _python_tag_hits(text: str, names: frozenset[str]) -> list[_Hit]:
    return [
        _hit_from(
            m.start(),
            _payload_end(text, m.end()),
            "python_tag",
            partial(_python_tag_calls, text[m.end() :], names),
        )
        for m in _PYTHON_TAG_RE.finditer(text)
    ]


_QWEN_FN_RE = re.compile(r"^[ \t]*✿FUNCTION✿[ \t]*:?[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
_QWEN_ARGS_RE = re.compile(r"^[ \t]*✿ARGS✿[ \t]*:?", re.IGNORECASE | re.MULTILINE)
_QWEN_NEXT_RE = re.compile(r"^[ \t]*✿(?:FUNCTION|RETURN|RESULT)✿", re.IGNORECASE | re.MULTILINE)


def _qwen_hits(text: str) -> list[_Hit]:
    hits = []
    for m in _QWEN_FN_RE.finditer(text):
        nxt = _QWEN_NEXT_RE.search(text, m.end())
        end = nxt.start() if nxt else len(text)
        region = text[m.end() : end]

        def make(m: re.Match[str] = m, region: str = region) -> list[dict[str, Any]]:
            name = m.group(1).strip().strip("`*\"' ")
            if not _NAME_RE.fullmatch(name):
                raise _CallError(
                    "The function line must contain only the tool name, followed by a line "
                    f'with its arguments as a JSON object. Got: "{_fragment(name)}".'
                )
            args = _QWEN_ARGS_RE.search(region)
            value = region[args.end() :] if args else ""
            return [{"name": name, "args": _parse_args_text(value, "arguments")}]

        hits.append(_hit_from(m.start(), end, "qwen", make))
    return hits


# llama-cpp-python's chatml-function-calling format, which its prompt teaches and its server
# reads only when its grammar wrote it: "functions.name:" on a line of its own, the arguments
# as a JSON object on the next; a model writing it unasked ("function.name:" too) leaves it in
# the reply's text. The label is a call where a JSON object follows it or nothing does; before
# prose it is not.
_FUNCTIONS_LABEL_RE = re.compile(r"^[ \t]*functions?\.([A-Za-z_][\w.\-]{0,63})[ \t]*:",
                                 re.MULTILINE)  # the name bounded as the sanitizer bounds it
_SPACE_RE = re.compile(r"\s*")


def _space_end(text: str, i: int) -> int:
    """Where the whitespace at `text[i]` ends."""
    space = _SPACE_RE.match(text, i)
    assert space is not None  # `\s*` matches everywhere, the empty string too
    return space.end()


def _labelled_calls(text: str, heads: list[tuple[int, int, str]], fmt: str) -> list[_Hit]:
    """The calls that labels head, each (where it starts, where it ends, the tool's name): a
    label over a JSON object is its call, a label alone at the end the call with its
    arguments left to validation; a cut-off object is the truncation error; before prose a
    label is text."""
    hits: list[_Hit] = []
    for begin, after, name in heads:
        if hits and begin < hits[-1].end:
            continue  # inside the last call's object, which `_select` keeps whole anyway
        start = _space_end(text, after)
        if start == len(text):
            hits.append(_Hit(begin, start, fmt, calls=[_make_call(name, {})]))
        elif text[start] == "{":
            end = _value_end(text, start)
            if end is None:
                hits.append(_Hit(begin, len(text), fmt, error=_truncated_error("arguments")))
                break

            def make(name: str = name, value: str = text[start:end]) -> list[dict[str, Any]]:
                return [{"name": name, "args": _parse_args_text(value, "arguments")}]

            hits.append(_hit_from(begin, end, fmt, make))
    return hits


def _functions_hits(text: str) -> list[_Hit]:
    return _labelled_calls(text, [(m.start(), m.end(), m.group(1).rstrip("."))
                                  for m in _FUNCTIONS_LABEL_RE.finditer(text)], "functions")


# Functionary's formats, which a server without its handler leaves in the text. v3.2: each
# call is ">>>name" and a line break before its JSON object, also right after prose
# ("Let me check.>>>get_weather\n{…}"); the reply's first call has no ">>>" (the prompt
# ends with it), so a tool's name alone on the reply's first line over an object is one
# too. With known tools, ">>>name" must name one of them. v2:
# "<|from|>assistant\n<|recipient|>name\n<|content|>{…}". The recipient "all" is
# the reply's text, no call; a name over anything but an object is text too, and so is
# ">>> name", as Python's prompt writes it.
_FUNCTIONARY_RE = re.compile(
    r"(?:<\|from\|>[ \t]*assistant[ \t]*\n?)?<\|recipient\|>[ \t]*([A-Za-z_][\w.\-]{0,63})"
    r"[ \t]*(?:\n[ \t]*)?<\|content\|>|>>>([A-Za-z_][\w.\-]{0,63})[ \t]*\n")
_OPERAND_END = re.compile(r"[\w)\]]\Z")  # ">>>" right after it is a shift in code
_FIRST_NAME_RE = re.compile(r"\s*([A-Za-z_][\w.\-]{0,63})[ \t]*\n")


def _functionary_hits(text: str, names: frozenset[str]) -> list[_Hit]:
    folded = {n.casefold() for n in names}
    # With known tools, ">>>name" naming none is a call (to be corrected) only over a JSON
    # object and not after an operand: ">>>" in code ("a>>>b") or a quoted reply
    # (">>>Thanks") is text, as the sanitizer keeps it.
    starts = [(m.start(), m.end(), name) for m in _FUNCTIONARY_RE.finditer(text)
              if (name := (m.group(1) or m.group(2)).rstrip(".")) == "all" or m.group(1)
              or not folded or name.casefold() in folded
              or (not _OPERAND_END.search(text, 0, m.start())
                  and text.startswith("{", _space_end(text, m.end())))]
    first = _FIRST_NAME_RE.match(text)
    # Unmarked, only over an object: a tool's name alone is a word ("Final Answer: calculator").
    if first is not None and (name := first.group(1).rstrip(".")).casefold() in folded and (
            text.startswith("{", _space_end(text, first.end()))):
        starts.insert(0, (first.start(1), first.end(), name))
    return _labelled_calls(text, [h for h in starts if h[2] != "all"], "functionary")


# DeepSeek's calls, each between its call tokens: "function<｜tool▁sep｜>name" and the
# arguments in a fence on the next line (R1, V3), or "name<｜tool▁sep｜>" and the arguments
# (V3.1); the list's own tokens around them are chat special tokens.
_DEEPSEEK_CALL_RE = re.compile(
    r"<｜tool▁call▁begin｜>(?:function<｜tool▁sep｜>)?([^\n<｜]*?)(?:<｜tool▁sep｜>|\n)(.*?)"
    r"(?:<｜tool▁call▁end｜>|(?=<｜tool▁call▁begin｜>|<｜tool▁calls▁end｜>)|\Z)", re.DOTALL)
_DEEPSEEK_LIST = "<｜tool▁calls▁begin｜>"


def _deepseek_hits(text: str) -> list[_Hit]:
    hits = []
    for m in _DEEPSEEK_CALL_RE.finditer(text):
        # The list's opening token belongs to its first call: no prose before the call.
        start = m.start() - len(_DEEPSEEK_LIST) if text.endswith(
            _DEEPSEEK_LIST, 0, m.start()) else m.start()

        def make(m: re.Match[str] = m) -> list[dict[str, Any]]:
            name = m.group(1).strip()
            if not _NAME_RE.fullmatch(name):
                raise _CallError(
                    "A tool call must name one tool before its arguments. Got: "
                    f'"{_fragment(name)}".')
            return [{"name": name, "args": _parse_args_text(m.group(2), "arguments")}]

        hits.append(_hit_from(start, m.end(), "deepseek", make))
    return hits


_FENCED_RE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)```", re.DOTALL)
# Where an inline call may start: an object whose first key is quoted or a bare word
# (prose braces such as "{x}" or code blocks are not worth a parse), or a list of them.
_JSON_OPEN_RE = re.compile(r"""\{(?=\s*(?:["']|[A-Za-z_][\w\-]*\s*:))|\[(?=\s*\{)""")
# Scans that run to the end of the text without closing cost O(n) each; after this many
# the rest of a long reply is not searched for inline calls.
_MAX_OPEN_SCANS = 8


def _final_envelope(obj: Any) -> str | None:
    """The answer of a "Final Answer" action written as a call envelope, as LangChain's
    structured chat agents write it (``{"action": "Final Answer", "action_input": "…"}``);
    None for any other value."""
    if not isinstance(obj, dict):
        return None
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name is None or name.strip().lower().replace("_", " ") != "final answer":
        return None
    answer = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    return answer if isinstance(answer, str) else None


def _envelope_hit(
    text: str, start: int, end: int, fmt: str, names: frozenset[str], rank: int
) -> _Hit | None:
    """A hit for the JSON value `text[start:end]` if it is a call envelope."""
    try:
        obj = _loads(text[start:end])
    except ValueError:
        return None
    answer = _final_envelope(obj)
    if answer is not None:
        answer = sanitize(answer, tool_names=names)
        return _Hit(start, len(text), "final", final=answer or None,
                    error=None if answer else ERR_EMPTY_FINAL, rank=rank)
    try:
        calls = _to_calls(obj, names)
    except _CallError as exc:
        return _Hit(start, end, fmt, error=str(exc), rank=rank)
    return _Hit(start, end, fmt, calls=calls, rank=rank) if calls else None


def _fenced_hits(text: str, names: frozenset[str], limit: int) -> list[_Hit]:
    hits = []
    for m in _FENCED_RE.finditer(text, 0, limit):
        body = m.group(2).strip()
        if body[:1] not in ("{", "["):
            continue
        end = _value_end(body, 0)
        if end is None:
            continue  # left to _json_hits, which knows what a truncated call looks like
        hit = _envelope_hit(body, 0, end, "fenced_json", names, rank=1)
        if hit is not None:
            # A final answer runs to the end, as its label does: later calls never count.
            stop = len(text) if hit.format == "final" else m.end()
            hits.append(_Hit(m.start(), stop, hit.format, hit.calls, hit.final,
                             error=hit.error, rank=1))
    return hits


def _json_hits(text: str, names: frozenset[str], limit: int) -> list[_Hit]:
    """Call envelopes written inline, starting before `limit`."""
    hits = []
    i = 0
    open_scans = 0
    while (m := _JSON_OPEN_RE.search(text, i, limit)) and open_scans < _MAX_OPEN_SCANS:
        start = m.start()
        end = _value_end(text, start)
        if end is None:
            if _ENVELOPE_START_RE.match(text, start):
                hits.append(_Hit(start, len(text), "json", error=_truncated_error("tool call"),
                                 rank=2))
                break
            open_scans += 1
            i = start + 1
            continue
        hit = _envelope_hit(text, start, end, "json", names, rank=2)
        if hit is not None:
            hits.append(hit)
        # Non-call data is skipped whole: a call is never nested inside other JSON.
        i = end if hit is not None or text[start] == "{" else start + 1
    return hits


def _python_call_hits(text: str, names: frozenset[str], limit: int) -> list[_Hit]:
    if not names:
        return []
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # Gemma's tool code calls them as ``default_api.name(...)``.
    pattern = re.compile(rf"(?:(?<![\w.])|(?<=\bdefault_api\.))(?:{alternatives})\s*\(")
    # A cut-off call is reported only if it had started its keyword arguments.
    call_start = re.compile(r"\(\s*(?:[A-Za-z_]\w*\s*=|\))")
    hits = []
    i = 0
    open_scans = 0
    while (m := pattern.search(text, i, limit)) and open_scans < _MAX_OPEN_SCANS:
        end = _value_end(text, m.end() - 1)
        if end is None:
            if call_start.match(text, m.end() - 1):
                hits.append(_Hit(m.start(), len(text), "python_call", error=ERR_CUT_CALL, rank=3))
                break
            open_scans += 1
            i = m.end()
            continue
        try:
            call = _python_call(text[m.start() : end])
        except _CallError as exc:
            hits.append(_Hit(m.start(), end, "python_call", error=str(exc), rank=3))
        else:
            if call is not None and call["name"] in names:
                hits.append(_Hit(m.start(), end, "python_call", calls=[call], rank=3))
        i = end
    return hits


_TOOL_CODE_RE = re.compile(r"```tool_code[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


def _tool_code_hits(text: str, names: frozenset[str], limit: int) -> list[_Hit]:
    """Gemma's ```` ```tool_code ```` block, as one hit for the calls it holds (``print(
    default_api.name(...))``): the block's own text is no reasoning."""
    hits = []
    for m in _TOOL_CODE_RE.finditer(text, 0, limit):
        inner = _python_call_hits(m.group(1), names, len(m.group(1)))
        if inner:
            error = next((h.error for h in inner if h.error), None)
            hits.append(_Hit(m.start(), m.end(), "python_call", error=error, rank=3,
                             calls=[] if error else [c for h in inner for c in h.calls]))
    return hits


# gpt-oss's harmony messages: a header (its channel, a recipient "to=functions.name"), then
# the message, up to the token that ends it. The first may lack "<|start|>assistant".
_HARMONY_RE = re.compile(
    r"(?:<\|start\|>[ \t]*assistant)?(?P<header>[^<]*(?:<\|(?:channel|constrain)\|>[^<]*)*)"
    r"<\|message\|>(?P<body>.*?)(?:<\|(?:end|call|return)\|>|(?=<\|start\|>)|\Z)",
    re.DOTALL)
_HARMONY_CHANNEL = re.compile(r"<\|channel\|>[ \t]*(\w+)")
_HARMONY_RECIPIENT = re.compile(r"\bto=(?:functions\.)?([A-Za-z_][\w.\-]*)")


def _harmony(text: str) -> ParsedOutput | tuple[str, list[str]]:
    """A reply in gpt-oss's harmony format: the calls its messages to "functions.name" make
    (with the analysis channel as the reasoning), or the final channel's text to parse as
    any reply and the reasoning; a reply not in harmony as it is, without reasoning."""
    if "<|message|>" not in text or "<|channel|>" not in text:
        return text, []
    reasoning: list[str] = []
    final: list[str] = []
    calls: list[dict[str, Any]] = []
    for m in _HARMONY_RE.finditer(text):
        header, body = m.group("header"), m.group("body").strip()
        channel = _HARMONY_CHANNEL.search(header)
        recipient = _HARMONY_RECIPIENT.search(header)
        if recipient is not None:
            try:
                calls.append({"name": recipient.group(1),
                              "args": _parse_args_text(body, "arguments")})
            except _CallError as exc:
                return ParsedOutput(error=str(exc), thought="\n\n".join(reasoning) or None,
                                    format="harmony")
        elif channel is not None and channel.group(1).lower() == "analysis":
            reasoning += [body] if body else []
        elif body:
            final.append(body)
    if calls:
        return ParsedOutput(calls=calls, thought="\n\n".join(reasoning) or None,
                            format="harmony")
    return "\n\n".join(final), reasoning


# --- putting it together --------------------------------------------------------------------


def _select(hits: list[_Hit]) -> list[_Hit]:
    """Hits in text order, dropping any that overlaps one already taken."""
    taken: list[_Hit] = []
    cursor = 0
    for hit in sorted(hits, key=lambda h: (h.start, h.rank, -h.end)):
        if hit.start >= cursor:
            taken.append(hit)
            cursor = hit.end
    return taken


def _reasoning(thoughts: list[str], before: str, names: frozenset[str]) -> str | None:
    parts = [*thoughts, _THOUGHT_LABEL_RE.sub("", before)]
    joined = "\n\n".join(p for p in (sanitize(x, tool_names=names) for x in parts) if p)
    return joined or None


def parse_model_output(text: str, tool_names: Iterable[str] | None = None, *,
                       single_inputs: Mapping[str, str] | None = None) -> ParsedOutput:
    """Parse one model reply into tool calls, a final answer, or a correctable error.

    `tool_names` (the registered tools) additionally enables Python-style calls
    `name(k="v")` and `{"name": {args}}` dicts for those names. `single_inputs` maps each
    tool that takes one text argument to that argument (``ToolRegistry.single_inputs``): a
    ReAct `Action Input:` written as plain text or a string is its value.
    """
    names = frozenset(tool_names or ())
    if not text or not text.strip():
        return ParsedOutput(error=ERR_EMPTY, format="empty")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    harmony = _harmony(text)
    if isinstance(harmony, ParsedOutput):
        return harmony
    text, reasoning = harmony
    body, thoughts = _split_reasoning(text, names)
    thoughts = [*reasoning, *thoughts]
    body = action_lines(plain_labels(undecorated_labels(body, names), names), names)
    body = _cut_observation(body, names)
    if not body.strip():
        return ParsedOutput(
            error=ERR_REASONING_ONLY if thoughts else ERR_EMPTY,
            thought=_reasoning(thoughts, "", names),
            format="empty",
        )
    final = _final_hit(body, names)
    # Hits that start after the final answer label are dropped anyway: skip the costly search.
    limit = final.start if final else len(body)
    hits = _select(
        [
            *([final] if final else []),
            *_react_hits(body, names, single_inputs or {}),
            *_xml_hits(body, names),
            *_function_tag_hits(body),
            *_mistral_hits(body, names),
            *_python_tag_hits(body, names),
            *_qwen_hits(body),
            *_deepseek_hits(body),
            *_functions_hits(body),
            *_functionary_hits(body, names),
            *_fenced_hits(body, names, limit),
            *_json_hits(body, names, limit),
            *_tool_code_hits(body, names, limit),
            *_python_call_hits(body, names, limit),
        ]
    )
    if not hits:
        return _prose(body, thoughts, names)
    thought = _reasoning(thoughts, body[: hits[0].start], names)
    first = hits[0]
    if first.format == "final":
        if first.final is None:
            return ParsedOutput(error=first.error, thought=thought, format="final")
        return ParsedOutput(final_answer=first.final, thought=thought, format="final")
    # Actions count up to the first final answer; anything after it is dropped.
    first_final = next((k for k, h in enumerate(hits) if h.format == "final"), len(hits))
    actions = hits[:first_final]
    error = next((h for h in actions if h.error is not None), None)
    if error is not None:
        return ParsedOutput(error=error.error, thought=thought, format=error.format)
    calls = [call for h in actions for call in h.calls]
    return ParsedOutput(calls=calls, thought=thought, format=hits[0].format)


def _prose(body: str, thoughts: list[str], names: frozenset[str]) -> ParsedOutput:
    """A reply without any call or label: the text is the answer."""
    thought = _reasoning(thoughts, "", names)
    answer = sanitize(body, tool_names=names)
    if answer:
        return ParsedOutput(final_answer=answer, thought=thought, format="prose")
    if _THOUGHT_LABEL_RE.search(body):
        return ParsedOutput(error=ERR_NO_ACTION, thought=_reasoning(thoughts, body, names),
                            format="react")
    return ParsedOutput(error=ERR_EMPTY, thought=thought, format="empty")
