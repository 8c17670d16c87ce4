"""Remove tool-call markup from text meant for a user, whole or while streaming.

`sanitize` and `StreamSanitizer` share one incremental engine, so the streamed pieces
always join up to exactly `sanitize(whole_text)`, wherever the chunks were split.

Only markup is removed, never prose: a tag or label that ordinary text could contain is
removed only where it is used as markup.

* `<think>…</think>`, `<thinking>…</thinking>` and `<tool_response>…</tool_response>`
  blocks. An unclosed one runs to the end of the text only when nothing visible came
  before it (reasoning cut off by the token limit); mentioned in prose, it stays as text;
* `<tool_call>…</tool_call>` blocks. When a call follows the tag (JSON, a fenced block,
  `<function=…>` or `name(`), an unclosed one runs to the end (a cut-off call); an
  unclosed `<tool_call>` followed by prose stays as text;
* stray closing tags of those blocks;
* lines starting (after optional spaces, any case) with `Thought:` or `Action Input:`. An
  `Action Input:` whose JSON spans several lines is removed up to its closing brace, a
  fenced one (```json … ```, on its line or the next) up to its closing fence. A
  `Final Answer:` (so written, as ReAct writes it) later on a `Thought:` line survives
  (its label goes, in emphasis too: `**Final Answer:**`);
* an `Action:` line that names a tool of `tool_names` (any case), or whose next non-blank
  line is `Action Input:`, or that follows removed ReAct markup and holds one bare name;
* an `Observation:` line that follows removed ReAct markup, or whose next non-blank line
  is `Thought:`, `Action Input:`, `Final Answer:` or an `Action:` line that is removed.
  Other `Action:` and `Observation:` lines are prose (minutes, YAML, policies) and stay;
* after prose on the same line (written `Action`, after a non-word character):
  `Action: <name>` up to the line's end or its `Action Input:`, when the name is a tool of
  `tool_names` or an `Action Input:` follows on that line or the next non-blank one; and
  that `Action Input:` with its value (JSON, a fence, or up to the line's end). The line break
  stays; an `Action Input:` after prose alone ("e.g. Action Input: {…}") is prose;
* the `Final Answer:` label at a line start (the text after it is kept);
* the line labels above set in markdown emphasis as chat-tuned models write them
  (`**Action:** calculator`, `**Thought**: …`, `*Final Answer:*`), or after a list
  item's or a quote's mark (`- Action: calculator`, `2. Action Input: {…}`, `> Final
  Answer: 4`; the mark goes with the label), by the same rules;
* `[TOOL_CALLS]` followed by a JSON call list or `name[ARGS]`, or at the very end, with
  the call; `<|python_tag|>` with the call that follows it;
* `✿FUNCTION✿`, `✿ARGS✿` and `✿RESULT✿` lines, and the `✿RETURN✿` label (Qwen-Agent
  puts the user-facing reply after it, so that text is kept);
* Llama 3.1's `<function=name>{…}</function>` and Gemma's ```` ```tool_code ```` (and
  ```` ```tool_output ````) blocks, where they close;
* DeepSeek's call list `<｜tool▁calls▁begin｜>` … `<｜tool▁calls▁end｜>` (a call, an output
  list or an output alike) with what it holds, to its closing token or the end;
* llama-cpp-python's chatml-function-calling calls: a `functions.name:` (or `function.name:`)
  label at a line start with the JSON object after it (on its line or the next), or alone at
  the end; before prose the label is text;
* Functionary's calls: v3.2's `>>>name` and a line break before a JSON object (after prose
  too; no space after `>>>`, which Python's prompt has), or alone at the end, with the
  object; on the reply's first line, where v3.2 writes no `>>>`, a tool of `tool_names`
  alone over an object (with `tool_names`, a `>>>name` naming none of them only over an
  object and not right after an operand, `a>>>b`);
  v2's `<|recipient|>name` to `<|content|>` with the object after it.
  The recipient `all` heads the reply's text (`>>>all`, `all` on the first line over text
  on a later line): the head goes, the text stays. A name over prose, or alone on the first
  line with nothing after it, is text;
* gpt-oss's harmony headers (`<|start|>assistant<|channel|>final<|message|>`), and the
  messages that are calls (`to=functions.name`, to `<|call|>`) or reasoning (the analysis
  channel, to `<|end|>`); a final or commentary message's text is kept;
* chat special tokens: `<|anything|>`, `<｜anything｜>`, `</s>`, `[INST]`, `[/INST]`;
  `<|im_start|>`, `<|start_header_id|>` and `<|from|>` also take the role name after them
  (and the spaces before it).

Markup that filled a whole line takes that line's break along. Then the whitespace is
tidied: line endings become `\\n`, spaces before a line break go, runs of blank lines
become one blank line, and the result is stripped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final, Literal, TypeVar

__all__ = ["StreamSanitizer", "sanitize"]

_HWS = " \t"

# Line markers: (lower-case keyword, what to do, whether a colon must follow).
# "action" and "observation" lines are removed only when the lines around make them markup.
_LINE_MARKERS: Final = (
    ("thought", "thought", True),
    ("action", "action", True),
    ("observation", "observation", True),
    ("action input", "args", True),
    ("action_input", "args", True),
    ("final answer", "label", True),
    ("final_answer", "label", True),
    ("✿function✿", "line", False),
    ("✿args✿", "args", False),
    ("✿result✿", "args", False),
    ("✿return✿", "label", False),
)

# Markers that may appear anywhere in a line: (lower-case literal, action, closing tag).
# "maybe_block": removed when closed, or unclosed before any visible text; "call_block":
# removed when closed or when a call follows; "call_payload": removed when a call follows.
_INLINE_MARKERS: Final = (
    ("<think>", "maybe_block", "</think>"),
    ("<thinking>", "maybe_block", "</thinking>"),
    ("<tool_call>", "call_block", "</tool_call>"),
    ("<tool_response>", "maybe_block", "</tool_response>"),
    ("</think>", "drop", ""),
    ("</thinking>", "drop", ""),
    ("</tool_call>", "drop", ""),
    ("</tool_response>", "drop", ""),
    ("</s>", "drop", ""),
    ("[inst]", "drop", ""),
    ("[/inst]", "drop", ""),
    ("[tool_calls]", "call_payload", ""),
    # Llama 3.1's custom tool call, Gemma's tool code block and the output it is given:
    # removed where they close.
    ("<function=", "closed_block", "</function>"),
    ("```tool_code", "closed_block", "```"),
    ("```tool_output", "closed_block", "```"),
    # DeepSeek's call list and tool outputs, special tokens no prose writes: removed to
    # their closing token, or to the end.
    ("<｜tool▁calls▁begin｜>", "block", "<｜tool▁calls▁end｜>"),
    ("<｜tool▁call▁begin｜>", "block", "<｜tool▁call▁end｜>"),
    ("<｜tool▁outputs▁begin｜>", "block", "<｜tool▁outputs▁end｜>"),
    ("<｜tool▁output▁begin｜>", "block", "<｜tool▁output▁end｜>"),
)
_PAYLOAD_TOKENS: Final = frozenset({"python_tag"})
# Functionary v2's "<|from|>assistant" names the role too.
_ROLE_TOKENS: Final = frozenset({"im_start", "start_header_id", "from"})
# The role names those tokens take; another word after one is text ("<|im_start|> Hello"
# had lost "Hello").
_ROLE_NAMES: Final = frozenset({"system", "user", "assistant", "tool", "function", "ipython",
                                "developer"})
_ROLE_NAME_MAX: Final = max(map(len, _ROLE_NAMES))
# gpt-oss's harmony message headers: "<|start|>assistant<|channel|>final<|message|>". The
# header decides what its message is: a call (a recipient "to=…") or reasoning (the analysis
# channel) goes to its end token; other messages (final, a commentary preamble) are shown.
_HARMONY_TOKENS: Final = frozenset({"start", "channel"})
_HARMONY_MESSAGE = "<|message|>"
_HARMONY_HEADER_MAX = 200  # characters from the token to its message's start
_HARMONY_RECIPIENT = re.compile(r"\bto=")
_HARMONY_ANALYSIS = re.compile(r"<\|channel\|>[ \t]*analysis\b|^[ \t]*analysis\b")
_SPECIAL_NAME_MAX = 64
_PIPES = "|｜"

# "A" may open a ReAct label after prose (`Sure! Action: calculator`); see `_mid_line`.
_TRIGGER = re.compile(r"[<\[\nA`>]")
# What an `Action:` after prose names: one name (in backticks, quotes or brackets, a period
# after it), then the line's end or an `Action Input:` label; read a token at a time, so a
# long line of them costs no more than its length.
_ACTION_TARGET = re.compile(r"[ \t]*[`*\"'\[]*([A-Za-z_][\w.\-]*)[`*\"'\]]*[ \t]*")
_TARGET_START = re.compile(r"[ \t]*[`*\"'\[]*")
_INPUT_LABEL = re.compile(r"Action[ _][Ii]nput[ \t]*:")
_INPUT_LABEL_START = re.compile(
    r"A(?:c(?:t(?:i(?:o(?:n(?:[ _](?:[Ii](?:n(?:p(?:u(?:t[ \t]*)?)?)?)?)?)?)?)?)?)?)?")


def action_target(text: str, end: int, final: bool = True
                  ) -> tuple[str, int, bool] | Partial | None:
    """The tool an `Action:` ending at `end` names, where one name stands between it and
    its line's end or an `Action Input:` label: (name, where the line ends or the label
    starts, whether a label follows); _PARTIAL when more text could tell; else None."""
    target = _ACTION_TARGET.match(text, end)
    if target is None or target.end() == len(text):
        if not final and (target is not None or _TARGET_START.fullmatch(text, end)):
            return _PARTIAL
        if target is None:
            return None
        return target.group(1).rstrip("."), len(text), False
    q = target.end()
    name = target.group(1).rstrip(".")
    if text[q] in "\r\n":
        return name, q, False
    if _INPUT_LABEL.match(text, q):
        return name, q, True
    if not final and _INPUT_LABEL_START.fullmatch(text, q):
        return _PARTIAL
    return None


def later_label(marker: str) -> tuple[str, str]:
    """`marker` as a Thought line may hold it later on, as patterns: plain (its words as
    written, in their case, joined by a space or "_", up to two spaces before a closing
    colon) and, for a colon label, set in emphasis with its closing stars (`**Final
    Answer:**`, `*Final Answer*:`; the group `stars`). After prose only the label's own case
    is a label: "whether the final answer: 42 is right" is the thought's words. The spaces
    are bounded so that a needle split between chunks always fits in the held-back tail."""
    words = "(?-i:" + "[ _]".join(map(re.escape, marker.removesuffix(":").split())) + ")"
    if not marker.endswith(":"):
        return words, r"(?!)"
    return (words + r"[ \t]{0,2}:",
            rf"(?P<stars>\*\*?){words}(?:(?P=stars)[ \t]{{0,2}}:|[ \t]{{0,2}}:[ \t]{{0,2}}"
            r"(?P=stars))(?!\*)")


# A `Final Answer:` later on a Thought line ("Thought: done. **Final Answer:** 42"), as the
# parser reads it; the label in emphasis takes its closing stars along.
THOUGHT_FINAL, THOUGHT_FINAL_EMPHASIS = later_label("Final Answer:")
_THOUGHT_END = re.compile(rf"\n|(?P<emphasis>{THOUGHT_FINAL_EMPHASIS})|{THOUGHT_FINAL}",
                          re.IGNORECASE)
# The longest label, with the character after it that tells whether it closes there.
_THOUGHT_HOLD = len("**final answer  :  **")
# What may still follow a label read plain and make it one in emphasis ("**Final Answer: **").
EMPHASIS_TAIL = re.compile(r"[ \t]{0,2}\*{0,2}")
_RUNS = re.compile(r"(\s+)|(\S+)")
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
_REACT_NEXT: Final = frozenset({"thought", "action input", "action_input", "final answer",
                                "final_answer"})
_ACTION_INPUT: Final = frozenset({"action input", "action_input"})

Partial = Literal["partial"]  # the type of _PARTIAL
_PARTIAL: Final = "partial"  # "the text so far could still become a marker"

# Engine modes.
(_TEXT, _BLOCK, _THOUGHT, _LINE, _ARGS, _JSON, _PAYLOAD, _PAYLOAD_LINE, _ROLE, _LABEL,
 _LINE_END, _FENCE) = range(12)
_FENCE_MARK = "```"


class JsonSpan:
    """Incremental bracket and string tracker for JSON-like text.

    Brackets are counted only outside strings; both quote kinds open strings (json5 and
    Python literals use single quotes). State survives between `scan` calls.
    """

    __slots__ = ("depth", "escape", "newline_ends_string", "quote")

    def __init__(self, newline_ends_string: bool = False) -> None:
        self.depth = 0
        self.quote = ""
        self.escape = False
        # A raw newline cannot occur in a valid JSON string; ending the string there keeps
        # a stray quote from swallowing the rest of a reply.
        self.newline_ends_string = newline_ends_string

    def scan(self, text: str, start: int, *, to_line_end: bool = False) -> int | None:
        """Advance over `text[start:]`.

        Returns the index just past the bracket that closes the value (or, with
        `to_line_end`, the index of the first newline outside any bracket), or None if
        the text ran out first.
        """
        i = start
        n = len(text)
        while i < n:
            ch = text[i]
            if self.quote:
                if self.escape:
                    self.escape = False
                elif ch == "\\":
                    self.escape = True
                elif ch == self.quote or (ch == "\n" and self.newline_ends_string):
                    self.quote = ""
            elif ch in "\"'":
                self.quote = ch
            elif ch in "{[(":
                self.depth += 1
            elif ch in "}])":
                self.depth = max(self.depth - 1, 0)
                if self.depth == 0 and not to_line_end:
                    return i + 1
            elif ch == "\n" and to_line_end and self.depth == 0:
                return i
            i += 1
        return None


def _skip(text: str, i: int, chars: str) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _skip_space(text: str, i: int, stop: int | None = None) -> int:
    stop = len(text) if stop is None else min(stop, len(text))
    while i < stop and text[i].isspace():
        i += 1
    return i


_Found = TypeVar("_Found")


def _after_mark(match: Callable[[str, int, bool], _Found | Partial | None], text: str, i: int,
                final: bool) -> _Found | Partial | None:
    """`match` after a list item's or a quote's mark at `text[i]` ("- Action: calculator",
    "2. Action Input: {…}", "> Final Answer: 4", as markdown-minded models set their
    steps), else right at `text[i]`; _PARTIAL while the text may still go on into a mark."""
    decoration = LINE_DECORATION.match(text, i)
    if decoration is not None and decoration.end() > i:
        found = match(text, decoration.end(), final)
        if found is not None:
            return found
    if not final and _DECORATION_START.fullmatch(text, i):
        return _PARTIAL  # "> -", "12"
    return match(text, i, final)


def _match_line_marker(text: str, i: int, final: bool) -> tuple[str, str, int] | Partial | None:
    """Match a line marker at `text[i]`, after a list item's or a quote's mark too:
    (keyword, action, end), _PARTIAL or None."""
    return _after_mark(_match_plain_line_marker, text, i, final)


def _match_plain_line_marker(text: str, i: int,
                             final: bool) -> tuple[str, str, int] | Partial | None:
    """Match a line marker right at `text[i]`: (keyword, action, end), _PARTIAL or None."""
    stars = 0
    while stars < 2 and i + stars < len(text) and text[i + stars] == "*":
        stars += 1
    if stars:
        return _match_emphasized_marker(text, i + stars, stars, final)
    partial = False
    best: tuple[str, str, int] | None = None
    for keyword, action, colon_required in _LINE_MARKERS:
        k = len(keyword)
        if len(text) - i < k:
            partial = partial or keyword.startswith(text[i:].lower())
            continue
        if text[i : i + k].lower() != keyword:
            continue
        j = _skip(text, i + k, _HWS)
        if j == len(text):
            if not final:
                partial = True
            elif not colon_required:
                best = (keyword, action, i + k)
        elif text[j] == ":":
            best = (keyword, action, j + 1)
        elif not colon_required:
            best = (keyword, action, i + k)
    if partial and not final:
        return _PARTIAL
    return best


# A list item's or a quote's mark before a line label: "- ", "* ", "+ ", "• ", "2. ", "3) ",
# "> " (a quote may hold a list item: "> - ").
LINE_DECORATION: Final = re.compile(r"(?:>[ \t]*)*(?:(?:[-+•*]|\d{1,2}[.)])[ \t]+)?")
_DECORATION_START: Final = re.compile(r"(?:>[ \t]*)*(?:[-+•*]|\d{1,2}[.)]?)?")
_CLOSINGS: Final = {n: re.compile(rf"\*{{{n}}}[ \t]*:|[ \t]*:[ \t]*\*{{{n}}}") for n in (1, 2)}
_CLOSING_STARTS: Final = {
    n: re.compile(rf"\*{{0,{n}}}|\*{{{n}}}[ \t]*|[ \t]*(?::[ \t]*\*{{0,{n}}})?") for n in (1, 2)}


def _match_emphasized_marker(text: str, i: int, stars: int,
                             final: bool) -> tuple[str, str, int] | Partial | None:
    """Match a colon label set in markdown emphasis (`**Action:**`, `**Action**:`) whose
    keyword starts at `text[i]`, after `stars` asterisks; its end is past the emphasis."""
    partial = False
    best: tuple[str, str, int] | None = None
    for keyword, action, colon_required in _LINE_MARKERS:
        if not colon_required:
            continue
        fragment = text[i : i + len(keyword)]
        if len(fragment) < len(keyword):
            partial = partial or keyword.startswith(fragment.lower())
            continue
        if fragment.lower() != keyword:
            continue
        after = i + len(keyword)
        closing = _CLOSINGS[stars].match(text, after)
        if closing is None:
            # The text may have run out inside what could still close the label.
            partial = partial or bool(_CLOSING_STARTS[stars].fullmatch(text, after))
        elif closing.end() == len(text) and not final:
            partial = True  # a third asterisk could follow
        elif not text.startswith("*", closing.end()):
            best = (keyword, action, closing.end())
    if partial and not final:
        return _PARTIAL
    return best


# llama-cpp-python's chatml-function-calling call label ("functions.name:", as its prompt
# teaches; "function.name:" too) at a line start. The name is bounded so that a stream and
# the whole text decide alike.
_FUNCTIONS_LABEL = re.compile(r"functions?\.[A-Za-z_][\w.\-]{0,63}[ \t]*:")
_FUNCTIONS_LABEL_START = re.compile(
    r"f(?:u(?:n(?:c(?:t(?:i(?:o(?:n(?:s?(?:\.(?:[A-Za-z_][\w.\-]{0,63}[ \t]*)?)?)?)?)?)?)?)?)?)?")


def _match_functions_label(text: str, i: int, final: bool) -> int | Partial | None:
    """The end of a `functions.name:` label at `text[i]` that a JSON object or nothing
    follows (before prose it is text); _PARTIAL while more text could tell; else None."""
    label = _FUNCTIONS_LABEL.match(text, i)
    if label is None:
        return _PARTIAL if not final and _FUNCTIONS_LABEL_START.fullmatch(text, i) else None
    follows = _call_object_follows(text, label.end(), final)
    return _PARTIAL if follows is None else label.end() if follows else None


def _call_object_follows(text: str, end: int, final: bool) -> bool | None:
    """Whether a call label ending at `end` heads a call: a JSON object follows it (after
    spaces), or nothing at all (a call cut off at the end); None while more text could
    tell; False before prose."""
    j = _skip_space(text, end)
    if j == len(text):
        return True if final else None
    return text[j] == "{"


def _prefix_of(word: str) -> str:
    """A pattern matching every prefix of `word`, the empty one too."""
    return "".join(f"(?:{re.escape(c)}" for c in word) + ")?" * len(word)


# LangChain's structured chat call under an `Action:` label: an object (a list of them too)
# whose first key, quoted, names the tool, a quoted string (`{"action": "web_search", …}`);
# and every prefix of that opening.
_BLOB_KEYS: Final = ("name", "tool", "tool_name", "function", "action")
_QUOTED_NAME = r'(?:[^"\\\n]|\\.)'
_BLOB_START: Final = re.compile(
    rf'[\[\s]*\{{\s*"(?:{"|".join(_BLOB_KEYS)})"\s*:\s*"({_QUOTED_NAME}{{1,64}})"')
_BLOB_START_PREFIX: Final = re.compile(
    rf'[\[\s]*(?:\{{\s*(?:"(?:{"|".join(_prefix_of(k) for k in _BLOB_KEYS)})'
    rf'(?:"\s*(?::\s*(?:"{_QUOTED_NAME}{{0,64}})?)?)?)?)?')
_BLOB_GAP = 200  # the most whitespace between the label and its object
# A fence's opening line, its language named or not.
_FENCE_OPENING = re.compile(r"```[\w+-]*[ \t]*")


def _blob_follows(text: str, end: int, final: bool, names: frozenset[str],
                  any_name: bool) -> bool | None:
    """Whether a call envelope follows an `Action:` label ending at `end`, after spaces and
    line breaks, fenced or not, as LangChain's structured chat agents write their calls
    and answers: its tool one of `names` (casefolded) or "Final Answer" — or, with
    `any_name`, any; None while more text could tell. Other JSON is the text's ("an
    Action: {"name": "add"} is dispatched")."""
    j = _skip_space(text, end, end + _BLOB_GAP + 1)
    if j - end > _BLOB_GAP:
        return False  # (bounded, so that a stream of spaces is not read again per chunk)
    if j < len(text) and text.startswith(_FENCE_MARK, j):
        # It matches: the text at j starts with the fence mark, all the pattern needs.
        j = _FENCE_OPENING.match(text, j).end()  # type: ignore[union-attr]
    elif not final and _FENCE_MARK.startswith(text[j:]):
        return None  # nothing yet, or "`", "``"
    if m := _BLOB_START.match(text, j):
        name = m.group(1).strip()
        return (any_name or name.casefold() in names
                or name.lower().replace("_", " ") == "final answer")
    return None if not final and _BLOB_START_PREFIX.fullmatch(text, j) else False


# Functionary's call heads (see `parsing`): v3.2's ">>>name" and a line break, after prose
# too (no space after ">>>", which Python's prompt has); v2's "<|recipient|>name" up to
# "<|content|>" (after the recipient token). The name is bounded so that a stream and the
# whole text decide alike.
_NAME_PART = r"[A-Za-z_][\w.\-]{0,63}"
_FUNCTIONARY_HEAD = re.compile(rf">>>({_NAME_PART})[ \t]*\n")
_FUNCTIONARY_HEAD_START = re.compile(rf">(?:>(?:>(?:{_NAME_PART}[ \t]*)?)?)?")
_CONTENT_TOKEN = "<|content|>"
# (One way to read the spaces around the line break: "[ \t]*\n?[ \t]*" backtracked over a
# long run of them, quadratic.)
_RECIPIENT = re.compile(
    rf"[ \t]*({_NAME_PART})[ \t]*(?:\n[ \t]*)?{re.escape(_CONTENT_TOKEN)}")
_RECIPIENT_PREFIX = re.compile(rf"[ \t]*(?:{_NAME_PART}[ \t]*(?:\n[ \t]*)?)?")
# The reply's first line, where v3.2's first call has no ">>>": a tool's name alone on it
# over a JSON object, or "all" over the text.
_FIRST_LINE = re.compile(rf"({_NAME_PART})[ \t]*\n")
_FIRST_LINE_START = re.compile(rf"(?:{_NAME_PART}[ \t]*)?")


def _functionary_head(head: re.Pattern[str], text: str, i: int,
                      final: bool) -> tuple[str, int] | Partial | None:
    """(name, end) of a Functionary call head matching `head` at `text[i]`, _PARTIAL while
    more text could still make one, else None."""
    m = head.match(text, i)
    if m is not None:
        return m.group(1).rstrip("."), m.end()
    if final:
        return None
    if head is _RECIPIENT:
        prefix = _RECIPIENT_PREFIX.match(text, i)
        could = _CONTENT_TOKEN.startswith(text[prefix.end():]) if prefix else False
    else:
        could = bool((_FUNCTIONARY_HEAD_START if head is _FUNCTIONARY_HEAD
                      else _FIRST_LINE_START).fullmatch(text, i))
    return _PARTIAL if could else None


def _match_special_token(text: str, i: int) -> tuple[int, str] | Partial | None:
    """Match `<|name|>` (or the full-width `<｜name｜>`) at `text[i]`."""
    n = len(text)
    if i + 1 >= n:
        return _PARTIAL
    if text[i + 1] not in _PIPES:
        return None
    j = i + 2
    while j < n and j - i - 2 <= _SPECIAL_NAME_MAX:
        ch = text[j]
        if ch in _PIPES or ch in "<>" or ch.isspace():
            break
        j += 1
    if j - i - 2 > _SPECIAL_NAME_MAX:
        return None
    if j >= n:
        return _PARTIAL
    if j == i + 2 or text[j] not in _PIPES:
        return None
    if j + 1 >= n:
        return _PARTIAL
    if text[j + 1] != ">":
        return None
    return j + 2, text[i + 2 : j].lower()


def _match_inline(text: str, i: int, final: bool) -> tuple[str, int, str] | Partial | None:
    """Match an inline marker at `text[i]`: (action, end, closing tag), _PARTIAL or None."""
    partial = False
    for literal, action, close in _INLINE_MARKERS:
        k = len(literal)
        fragment = text[i : i + k]
        if len(fragment) == k:
            if fragment.lower() == literal:
                return action, i + k, close
        elif literal.startswith(fragment.lower()):
            partial = True
    if text[i] == "<":
        token = _match_special_token(text, i)
        if token == _PARTIAL:
            partial = True
        elif isinstance(token, tuple):
            end, name = token
            if name in _PAYLOAD_TOKENS:
                return "payload", end, ""
            if name in _ROLE_TOKENS:
                return "role", end, ""
            if name in _HARMONY_TOKENS:
                return "harmony", end, ""
            if name == "recipient":
                return "recipient", end, ""
            return "drop", end, ""
    if partial and not final:
        return _PARTIAL
    return None


def call_follows(text: str, k: int, final: bool, mistral: bool) -> bool | None:
    """Whether a tool call starts at `text[k:]` (after spaces): True, False, or None when
    more text is needed. A `<tool_call>` call is JSON, a fence, `<function=` or `name(`;
    a `[TOOL_CALLS]` call is JSON or `name[ARGS]`. Nothing at all (at the end) counts as a
    call that was cut off."""
    j = _skip_space(text, k)
    if j == len(text):
        return None if not final else True
    if text[j] in "{[" or (text[j] == "`" and not mistral):
        return True
    if not mistral and text[j] == "<":
        fragment = text[j : j + len("<function")].lower()
        if fragment == "<function":
            return True
        return None if "<function".startswith(fragment) and not final else False
    if mistral and "\n" in text[k:j]:
        return False
    name = _NAME.match(text, j)
    if name is None:
        return False
    end = _skip(text, name.end(), _HWS)
    if end == len(text):
        return None if not final else False
    if not mistral:
        return text[end] == "("
    fragment = text[end : end + len("[args]")].lower()
    if fragment == "[args]":
        return True
    return None if "[args]".startswith(fragment) and not final else False


def _bare_name(value: str) -> str:
    """The tool name on an `Action:` line, as the parser reads it."""
    return value.strip().strip("`*\"'[] ").rstrip(".").strip()


class _MarkupRemover:
    """The incremental engine: removes markup, leaves whitespace tidying to `_Whitespace`.

    Every decision waits until enough text has arrived that more text could not change
    it, which is what makes the output independent of how the input was chunked.
    """

    def __init__(self, tool_names: Iterable[str] | None = None) -> None:
        self._names = frozenset(n.casefold() for n in tool_names or ())
        self._trace = False  # the last thing seen was removed ReAct markup
        self._emitted = False  # visible text has been emitted
        self._scanned = 0  # how far past a pending `<think>` the closing tag was looked for
        self._buf = ""
        self._mode = _TEXT
        self._line_start = True
        self._resume_line_start = False  # line_start to restore after a removed block
        self._close: re.Pattern[str] | None = None
        self._close_len = 0
        self._json = JsonSpan(newline_ends_string=True)
        self._after_json = _TEXT
        self._role_spaced = False  # spaces came after a role token
        self._before = ""  # the input character just before the buffer

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        return self._run(final=False)

    def flush(self) -> str:
        out = self._run(final=True)
        self._buf = ""
        return out

    def _run(self, final: bool) -> str:
        text = self._buf
        out: list[str] = []
        i = 0
        while i < len(text):
            step = self._step(text, i, final, out)
            if step is None:
                break
            i = step
        if i:
            self._before = text[i - 1]
        self._buf = text[i:]
        return "".join(out)

    def _step(self, text: str, i: int, final: bool, out: list[str]) -> int | None:
        """Process from `text[i]`; return the new position, or None to wait for more text."""
        mode = self._mode
        if mode == _TEXT:
            return self._step_text(text, i, final, out)
        if mode == _BLOCK:
            assert self._close is not None
            m = self._close.search(text, i)
            if m:
                self._mode, self._line_start = self._after_removal(), self._resume_line_start
                return m.end()
            return self._hold_tail(text, i, self._close_len - 1, final)
        if mode == _THOUGHT:
            m = _THOUGHT_END.search(text, i)
            if not m or (not final and m.group() != "\n" and (m.end() == len(text) or (
                    m.group("emphasis") is None and EMPHASIS_TAIL.fullmatch(text, m.end())))):
                # (Closing stars may follow the label.)
                return self._hold_tail(text, i, _THOUGHT_HOLD, final)
            if m.group() == "\n":
                self._mode, self._line_start = _TEXT, True
            else:
                self._mode = _LABEL
            return m.end()
        if mode == _LINE:
            k = text.find("\n", i)
            if k < 0:
                return len(text)
            self._mode, self._line_start = _TEXT, True
            return k + 1
        if mode in (_ARGS, _PAYLOAD):
            return self._step_value(text, i, final)
        if mode == _FENCE:
            k = text.find(_FENCE_MARK, i)
            if k < 0:
                return self._hold_tail(text, i, len(_FENCE_MARK) - 1, final)
            self._mode, self._line_start = self._after_json, False
            return k + len(_FENCE_MARK)
        if mode in (_JSON, _PAYLOAD_LINE):
            end = self._json.scan(text, i, to_line_end=mode == _PAYLOAD_LINE)
            if end is None:
                return len(text)
            self._mode, self._line_start = self._after_json, False
            if self._mode == _TEXT and self._resume_line_start:
                self._mode = _LINE_END
            return end
        if mode == _ROLE:
            # Spaces before the role name go too ("<|from|> assistant"), as they come; a
            # word that names no role is text, after one space where there were spaces.
            start = _skip(text, i, _HWS)
            self._role_spaced = self._role_spaced or start > i
            if start == len(text) and not final:
                return start
            j = start
            while j < len(text) and j - start <= _ROLE_NAME_MAX and text[j].isalpha():
                j += 1
            if j == len(text) and not final:
                return None  # the word may go on
            self._mode, self._line_start = self._after_removal(), self._resume_line_start
            if text[start:j].lower() in _ROLE_NAMES:
                return j
            if self._role_spaced:
                self._emit(out, " ")
            return start
        if mode == _LINE_END:
            j = _skip(text, i, _HWS + "\r")
            if j == len(text) and not final:
                return None
            self._mode = _TEXT
            if j < len(text) and text[j] == "\n":
                self._line_start = True
                return j + 1
            return i
        # _LABEL: drop the spaces between a label and its text.
        j = _skip(text, i, _HWS)
        if j < len(text):
            self._mode, self._line_start = _TEXT, False
        return j

    def _hold_tail(self, text: str, i: int, keep: int, final: bool) -> int | None:
        # Dropped text: keep only a tail that might hold the start of a split needle.
        if final:
            return len(text)
        pos = len(text) - keep
        return pos if pos > i else None

    def _emit(self, out: list[str], piece: str) -> None:
        out.append(piece)
        if (not self._emitted or self._trace) and piece.strip():
            self._emitted, self._trace = True, False

    def _step_text(self, text: str, i: int, final: bool, out: list[str]) -> int | None:
        if self._line_start:
            if text[i] in "<[`":
                # A block at the very start of a line keeps the line start for what follows
                # it, as if the block were not there: `<think>…</think>Final Answer: x`.
                handled = self._inline(text, i, final, resume_line_start=True)
                if handled is None:
                    return None
                if handled != i:
                    return handled
            j = _skip(text, i, _HWS)
            if j == len(text) and not final:
                return None
            if j < len(text) and (text[j] == ">" or not self._emitted):
                # Functionary's call heads: ">>>name" (before the quote marks "> " open),
                # or on the reply's first line a tool's name alone over a JSON object.
                handled = self._functionary(text, j, final, out, line_start=True)
                if handled != j:
                    return handled
            marker = _match_line_marker(text, j, final)
            if marker == _PARTIAL:
                return None
            if isinstance(marker, tuple):
                keyword, action, end = marker
                if keyword == "action":
                    blob = _blob_follows(text, end, final, self._names, not self._names)
                    if blob is None:
                        return None
                    if blob:
                        self._enter_line_mode("args")  # the label, then its object as a value
                        return end
                if action in ("action", "observation"):
                    markup = self._react_line(text, action, end, final, self._trace)
                    if markup is None:
                        return None
                    action = "line" if markup else ""
                if action:
                    self._enter_line_mode(action)
                    return end
            elif marker is None:
                label = _match_functions_label(text, j, final)
                if label == _PARTIAL:
                    return None
                if isinstance(label, int):
                    self._enter_line_mode("args")  # the label, then its object like a value
                    return label
            self._emit(out, text[i:j])
            self._line_start = False
            return j
        m = _TRIGGER.search(text, i)
        if not m:
            self._emit(out, text[i:])
            return len(text)
        p = m.start()
        self._emit(out, text[i:p])
        if text[p] == "\n":
            out.append("\n")
            self._line_start = True
            return p + 1
        if text[p] == "A":
            handled = self._mid_line(text, p, final)
        elif text[p] == ">":
            handled = self._functionary(text, p, final, out, line_start=False)
        else:
            handled = self._inline(text, p, final, resume_line_start=False)
        if handled is None:
            # Return the progress made so far; the marker candidate waits at `p`.
            return p if p > i else None
        if handled == p:
            self._emit(out, text[p])
            return p + 1
        return handled

    def _functionary(self, text: str, p: int, final: bool, out: list[str],
                     line_start: bool) -> int | None:
        """A Functionary call head at `p` ("all" too): new position, `p` if none, None to
        wait. On the reply's first line, without ">>>", only a tool's name or "all"."""
        first = text[p] != ">"
        head = self._functionary_call(_FIRST_LINE if first else _FUNCTIONARY_HEAD, text, p,
                                      final, first_line=first)
        if head is None:
            return None
        end, call = head
        if end == p:
            return p
        self._resume_line_start = line_start
        if not call:  # "all": the reply's text follows on its own line
            if not line_start:
                out.append("\n")
            self._mode, self._line_start = _TEXT, True
            return end
        self._trace = True
        self._json = JsonSpan(newline_ends_string=True)
        self._mode, self._after_json = _JSON, _TEXT
        return end

    def _functionary_call(self, pattern: re.Pattern[str], text: str, p: int, final: bool,
                          first_line: bool = False) -> tuple[int, bool] | None:
        """The head `pattern` matches at `p`: (where its call's object starts, True) for a
        call — a name over a JSON object, or alone at the end —, (past the head, False) for
        "all", (`p`, False) when there is none (a name over prose); None to wait."""
        found = _functionary_head(pattern, text, p, final)
        if found == _PARTIAL:
            word = text[p:].rstrip(_HWS)
            if first_line and not ("all".startswith(word) or any(
                    n.startswith(word.casefold()) for n in self._names)):
                return p, False  # the reply's first word, which names no tool
            return None
        if found is None:
            return p, False
        name, end = found
        if first_line:
            return self._first_line_head(name, text, p, end, final)
        if name == "all":
            return end, False
        if pattern is _FUNCTIONARY_HEAD and self._names and name.casefold() not in self._names:
            # A name no tool has heads a call (to be corrected) only over a JSON object and
            # not after an operand: ">>>" in code ("a>>>b"), a quoted reply (">>>Thanks")
            # is text.
            before = text[p - 1] if p else self._before
            if before and (before.isalnum() or before in "_)]"):
                return p, False
            j = _skip_space(text, end)
            if j == len(text):
                return (p, False) if final else None
            return (j, True) if text[j] == "{" else (p, False)
        follows = _call_object_follows(text, end, final)
        if follows is None:
            return None
        # The call's object, read as a value from where it starts; a name over prose is text.
        return (_skip_space(text, end), True) if follows else (p, False)

    def _first_line_head(self, name: str, text: str, p: int, end: int,
                         final: bool) -> tuple[int, bool] | None:
        """`_functionary_call`'s reading of the reply's first line, `name` alone on it up to
        `end`: a tool's name over a JSON object, or "all" over text on a later line; else
        (a word or a name alone: "Final Answer: all", a reply that is just a tool's name)
        the line is text."""
        j = _skip_space(text, end)
        if j == len(text):
            return (p, False) if final else None
        if name == "all":
            return end, False
        if name.casefold() in self._names and text[j] == "{":
            return j, True
        return p, False

    def _react_line(self, text: str, action: str, end: int, final: bool,
                    trace: bool) -> bool | None:
        """Whether the `Action:`/`Observation:` line whose label ends at `end` is ReAct
        markup: True, False, or None when more text is needed."""
        k = text.find("\n", end)
        if k < 0 and not final:
            return None
        if action == "action":
            name = _bare_name(text[end : k if k >= 0 else len(text)])
            if name and (name.casefold() in self._names or (trace and _NAME.fullmatch(name))):
                return True
        elif trace:
            return True
        nxt = self._next_label(text, k, final)
        if nxt is None or isinstance(nxt, bool):
            return nxt
        keyword, next_action, next_end = nxt
        if action == "action":
            return keyword in _ACTION_INPUT
        if keyword in _REACT_NEXT:
            return True
        return next_action == "action" and self._react_line(text, next_action, next_end, final,
                                                            False)

    def _mid_line(self, text: str, p: int, final: bool) -> int | None:
        """A ReAct label after prose at `p`: new position, `p` if none, None to wait."""
        before = text[p - 1] if p else self._before
        if before and (before.isalnum() or before in "_*"):  # in a word, or in emphasis
            return p
        head = text[p : p + len("Action")]
        if head != "Action":  # as ReAct writes it: "ACTION", "action" after prose are words
            return None if not final and "Action".startswith(head) else p
        marker = _match_line_marker(text, p, final)
        if marker == _PARTIAL:
            return None
        if not isinstance(marker, tuple) or marker[0] not in ("action", *_ACTION_INPUT):
            return p
        keyword, _, end = marker
        if keyword == "action":
            blob = _blob_follows(text, end, final, self._names, False)
            if blob is None:
                return None
            if blob:
                # The object goes; the rest of the line is the text's, as after a mid-line
                # `Action Input:` value.
                j = _skip_space(text, end)
                self._trace, self._resume_line_start = True, False
                self._json = JsonSpan(newline_ends_string=True)
                self._after_json = _LABEL
                if text.startswith(_FENCE_MARK, j):
                    self._mode = _FENCE
                    return j + len(_FENCE_MARK)
                self._mode = _JSON
                return j
        if keyword in _ACTION_INPUT:
            if not self._trace:  # after prose ("e.g. Action Input: {…}"): the text says it
                return p
            j = _skip(text, end, _HWS)
            if j == len(text) and not final:
                return None
            # After a removed `Action:` its value goes, up to the line's end, as at a line
            # start.
            fenced = self._fenced(text, j, final)
            if fenced is None:
                return None
            json_value = j < len(text) and text[j] in "{["
            self._resume_line_start = False
            self._json = JsonSpan(newline_ends_string=True)
            # _LABEL after it: the spaces that followed the call go with it.
            self._after_json = _LABEL
            if fenced:
                self._mode = _FENCE
                return j + len(_FENCE_MARK)
            self._mode = _JSON if json_value else _PAYLOAD_LINE
            return j
        target = action_target(text, end, final)
        if target == _PARTIAL:
            return None
        if not isinstance(target, tuple):
            return p
        name, stop, label = target
        if not label and name.casefold() not in self._names:
            newline = text.find("\n", stop)
            if newline < 0 and not final:
                return None
            nxt = self._next_label(text, newline, final)
            if nxt is None:
                return None
            if not isinstance(nxt, tuple) or nxt[0] not in _ACTION_INPUT:
                return p
        self._trace = True
        return stop

    def _next_label(self, text: str, k: int, final: bool) -> tuple[str, str, int] | bool | None:
        """The line marker opening the next non-blank line after the newline at `k`:
        (keyword, action, end), False when there is none, None when more text is needed."""
        if k < 0:
            return False
        j = _skip(text, k + 1, _HWS + "\r\n")
        if j == len(text):
            return False if final else None
        marker = _match_line_marker(text, j, final)
        if marker == _PARTIAL:
            return None
        return marker if isinstance(marker, tuple) else False

    def _inline(self, text: str, p: int, final: bool, resume_line_start: bool) -> int | None:
        """Handle an inline marker at `p`: new position, `p` if none, None to wait."""
        marker = _match_inline(text, p, final)
        if marker == _PARTIAL:
            return None
        if marker is None:
            return p
        action, end, close = marker
        if action == "harmony":
            # Read up to the message's start (within a bound, so that a stream and the whole
            # text decide alike); without one the token alone goes.
            window = end + _HARMONY_HEADER_MAX + len(_HARMONY_MESSAGE)
            k = text.find(_HARMONY_MESSAGE, end, window)
            if k < 0 and not final and len(text) < window:
                return None
            if k < 0:
                action = "drop"
            else:
                header = text[end:k]
                end = k + len(_HARMONY_MESSAGE)
                if _HARMONY_RECIPIENT.search(header):
                    action, close = "block", "<|call|>"
                elif _HARMONY_ANALYSIS.search(header):
                    action, close = "block", "<|end|>"
                else:
                    action = "drop"
        if action == "recipient":
            head = self._functionary_call(_RECIPIENT, text, end, final)
            if head is None:
                return None
            end, call = head
            action = "payload" if call else "drop"
        if action in ("call_block", "call_payload"):
            follows = call_follows(text, end, final, mistral=action == "call_payload")
            if follows is None:
                return None
            if follows:
                action = "block" if action == "call_block" else "payload"
            elif action == "call_payload":
                return p
            else:
                action = "closed_block"  # prose after the tag: markup only if it closes
        if action in ("maybe_block", "closed_block"):
            # A prose `<tool_call>` is not closed by the closing tag of a later real call.
            opening = "|" + re.escape(text[p:end]) if action == "closed_block" else ""
            closing = re.compile(re.escape(close) + opening, re.IGNORECASE)
            m = closing.search(text, max(end, p + self._scanned - len(close)))
            if m is not None and m.group().lower() != close:
                self._scanned = 0
                return p
            if m is None and (self._emitted or action == "closed_block"):
                # Mentioned in prose unless it closes: wait for the closing tag or the end.
                if not final:
                    self._scanned = len(text) - p
                    return None
                self._scanned = 0
                return p
            self._scanned = 0
            self._resume_line_start = resume_line_start
            if m is not None:
                self._mode, self._line_start = self._after_removal(), resume_line_start
                return m.end()
            action = "block"
        self._resume_line_start = resume_line_start
        if action == "block":
            self._mode = _BLOCK
            self._close = re.compile(re.escape(close), re.IGNORECASE)
            self._close_len = len(close)
        elif action == "payload":
            self._mode = _PAYLOAD
        elif action == "role":
            self._mode, self._role_spaced = _ROLE, False
        else:
            self._mode, self._line_start = self._after_removal(), resume_line_start
        return end

    def _after_removal(self) -> int:
        # Markup that began a line takes the line break after it along.
        return _LINE_END if self._resume_line_start else _TEXT

    def _enter_line_mode(self, action: str) -> None:
        self._trace = action != "label"
        self._mode = {"thought": _THOUGHT, "line": _LINE, "args": _ARGS, "label": _LABEL}[action]

    def _step_value(self, text: str, i: int, final: bool) -> int | None:
        """After `Action Input:`-like markers and call tokens: find the call's value."""
        j = _skip_space(text, i)
        if j == len(text):
            return len(text) if final else None
        gap = text[i:j]
        fenced = self._fenced(text, j, final) if self._mode == _ARGS else False
        if fenced is None:
            return None
        if fenced:
            self._after_json, self._mode = _LINE, _FENCE
            return j + len(_FENCE_MARK)
        if text[j] in "{[":
            self._json = JsonSpan(newline_ends_string=True)
            self._after_json = _LINE if self._mode == _ARGS else _TEXT
            self._mode = _JSON
            return j
        if self._mode == _ARGS:
            if "\n" in gap:
                # Empty arguments; the next line is ordinary text.
                self._mode, self._line_start = _TEXT, True
                return i + gap.rfind("\n") + 1
            self._mode = _LINE
            return j
        if "\n" in gap:
            self._mode, self._line_start = _TEXT, False
            return i + gap.find("\n")
        # A call that is not JSON (`name[ARGS]{…}`, Python code): up to the end of its line.
        self._json = JsonSpan(newline_ends_string=True)
        self._after_json = _TEXT
        self._role_spaced = False  # spaces came after a role token
        self._mode = _PAYLOAD_LINE
        return j

    @staticmethod
    def _fenced(text: str, j: int, final: bool) -> bool | None:
        """Whether an `Action Input:` value at `j` is fenced (```json … ```), as chat-tuned
        models write it; None when more text could tell."""
        if text.startswith(_FENCE_MARK, j):
            return True
        if not final and j < len(text) and _FENCE_MARK.startswith(text[j:]):
            return None  # "`" or "``" so far
        return False


def _collapse(space: str) -> str:
    """Normalise one run of whitespace that sits between two pieces of text."""
    space = space.replace("\r\n", "\n").replace("\r", "\n")
    breaks = space.count("\n")
    if not breaks:
        return space
    indent = space[space.rfind("\n") + 1 :]
    return ("\n\n" if breaks > 1 else "\n") + indent


class _Whitespace:
    """Incremental whitespace tidying: strip both ends, collapse blank lines."""

    def __init__(self) -> None:
        self._pending = ""
        self._started = False

    def feed(self, text: str) -> str:
        out: list[str] = []
        for m in _RUNS.finditer(text):
            if m.group(1) is not None:
                self._pending += m.group(1)
                continue
            if self._started:
                out.append(_collapse(self._pending))
            self._pending = ""
            self._started = True
            out.append(m.group(2))
        return "".join(out)

    def flush(self) -> str:
        self._pending = ""
        return ""


_THINK_OPEN: Final = (("<think>", "</think>"), ("<thinking>", "</thinking>"))
_GATE_TRIGGER = re.compile(r"[<\n]")


# Where the words of a Thought line end for the gate, besides its label: its break, a
# `<think>` block's opening.
_THOUGHT_LINE_END = re.compile("|".join(["\n", *(re.escape(o) for o, _ in _THINK_OPEN)]),
                               re.IGNORECASE)


def _atoms_prefix(atoms: list[str]) -> str:
    """A pattern matching every prefix of the sequence of patterns `atoms`."""
    return "".join(f"(?:{a}" for a in atoms) + ")?" * len(atoms)


class _AnswerGate:
    """Swallow text until `marker` appears at a line start, or later on a line that a
    `Thought:` label opens, outside `<think>` blocks (an unclosed one runs to the end); then
    pass the rest through untouched.

    The blocks are skipped only before the marker: after it, the answer goes to the markup
    remover, which keeps a `<think>` mentioned in prose.
    """

    def __init__(self, marker: str) -> None:
        # The marker at a line start as the parser reads "Final Answer:": its words joined by
        # a space or "_", any spaces before a closing colon; in emphasis, its words.
        words = marker.removesuffix(":").split()
        self._colon = marker.endswith(":")
        joined = [*(re.escape(c) for c in words[0])]
        for word in words[1:]:
            joined += ["[ _]", *(re.escape(c) for c in word)]
        tail = [r"[ \t]*", ":"] if self._colon else []
        self._label = re.compile("".join(joined + tail), re.IGNORECASE)
        self._label_start = re.compile(_atoms_prefix(joined + tail), re.IGNORECASE)
        self._words = re.compile("".join(joined), re.IGNORECASE)
        self._words_start = re.compile(_atoms_prefix(joined), re.IGNORECASE)
        self._buf = ""
        self._open = False
        self._line_start = True
        self._close: re.Pattern[str] | None = None
        self._close_len = 0
        # On a Thought line: what ends the search there (the marker, plain or in emphasis,
        # the line's break, a `<think>` block, which the gate skips as it does elsewhere: a
        # marker after it is no longer the Thought line's), and the longest of them, with the
        # character after it.
        self._thought = False
        plain, emphasis = later_label(marker)
        self._thought_end = re.compile(
            f"(?P<marker>(?P<emphasis>{emphasis})|{plain})|{_THOUGHT_LINE_END.pattern}",
            re.IGNORECASE)
        self._thought_hold = max(len(marker) + 8, *(len(o) for o, _ in _THINK_OPEN))

    def feed(self, chunk: str, final: bool = False) -> str:
        if self._open:
            return chunk
        text = self._buf + chunk
        i = 0
        while i < len(text):
            if self._close is not None:
                m = self._close.search(text, i)
                if m is None:
                    i = len(text) if final else max(i, len(text) - self._close_len + 1)
                    break
                self._close, i = None, m.end()
                continue
            if self._thought:
                m = self._thought_end.search(text, i)
                if m is None:
                    i = len(text) if final else max(i, len(text) - self._thought_hold)
                    break
                if m.group("marker") is not None:
                    if not final and (m.end() == len(text) or (
                            m.group("emphasis") is None
                            and EMPHASIS_TAIL.fullmatch(text, m.end()))):
                        # Closing stars may follow; stars before a plain label may open it.
                        i = max(i, m.start() - 2)
                        break
                    self._open, self._buf = True, ""
                    return text[m.end():]
                self._thought = False
                if text[m.start()] == "\n":
                    self._line_start, i = True, m.end()
                else:
                    i = m.start()  # the block's opening, read below
                continue
            j = _skip(text, i, _HWS) if self._line_start else i
            if j < len(text) and text[j] == "<":
                opened = self._think_at(text, j, final)
                if opened is None:
                    break
                if opened != j:
                    i = opened  # the line start, if any, carries over the block
                    continue
            if self._line_start:
                end = self._marker_at(text, j, final)
                if end is None:
                    # A Thought label as the sanitizer reads one (in emphasis, after a list
                    # item's mark too): "**Thought:** done. **Final Answer:** 42".
                    label = _match_line_marker(text, j, final)
                    if isinstance(label, tuple) and label[0] == "thought":
                        self._thought, self._line_start, i = True, False, label[2]
                        continue
                    if label == _PARTIAL:
                        end = _PARTIAL
                if end == _PARTIAL:
                    break  # could still become a marker (also when nothing follows yet)
                if isinstance(end, int):
                    self._open, self._buf = True, ""
                    return text[end:]
                self._line_start = False
                i = j
                continue
            m = _GATE_TRIGGER.search(text, i + (1 if text[i] == "<" else 0))
            if m is None:
                i = len(text)
                break
            i = m.start()
            if text[i] == "\n":
                self._line_start, i = True, i + 1
        self._buf = "" if final else text[i:]
        return ""

    def _marker_at(self, text: str, j: int, final: bool) -> int | Partial | None:
        """The end of the marker at `text[j]` (set in markdown emphasis too, as
        `**Final Answer:**` or `**Final Answer**:`, and after a list item's or a quote's
        mark, as `- Final Answer:`), _PARTIAL, or None."""
        return _after_mark(self._plain_marker_at, text, j, final)

    def _plain_marker_at(self, text: str, j: int, final: bool) -> int | Partial | None:
        """The end of the marker right at `text[j]`, _PARTIAL, or None."""
        stars = 0
        while stars < 2 and j + stars < len(text) and text[j + stars] == "*":
            stars += 1
        if not stars:
            label = self._label.match(text, j)
            if label is not None:
                return label.end()
            return _PARTIAL if not final and self._label_start.fullmatch(text, j) else None
        if not self._colon:
            return None  # emphasis only around a colon label
        k = j + stars
        words = self._words.match(text, k)
        if words is None:
            return _PARTIAL if not final and self._words_start.fullmatch(text, k) else None
        closing = _CLOSINGS[stars].match(text, words.end())
        if closing is not None and not text.startswith("*", closing.end()):
            return _PARTIAL if closing.end() == len(text) and not final else closing.end()
        if closing is None and not final and _CLOSING_STARTS[stars].fullmatch(
                text, words.end()):
            return _PARTIAL
        return None

    def _think_at(self, text: str, p: int, final: bool) -> int | None:
        """Past the `<think>` opening at `p`, `p` if there is none, None to wait."""
        partial = False
        for opening, closing in _THINK_OPEN:
            fragment = text[p : p + len(opening)]
            if len(fragment) == len(opening):
                if fragment.lower() == opening:
                    self._close = re.compile(re.escape(closing), re.IGNORECASE)
                    self._close_len = len(closing)
                    return p + len(opening)
            elif opening.startswith(fragment.lower()):
                partial = True
        return None if partial and not final else p


# The opening of an answer that may be wholly a JSON value, as the parser unwraps a "Final
# Answer" envelope: a fence or backticks, then the value's brace; all of it but the brace
# (more may still turn it into one).
_WRAPPED_OPENING = re.compile(r"\s*(?:```[\w+-]*[ \t]*\n?)?\s*`*\s*")
_WRAPPED_START = re.compile(_WRAPPED_OPENING.pattern + r"\{")


class _WrappedAnswer:
    """Hold back an answer that opens with a JSON object (fenced, in backticks or bare) to
    its end, then give `unwrap`'s reading of the whole; other answers pass as they come.

    The parser gives an answer written as a structured chat agent's envelope,
    `{"action": "Final Answer", "action_input": "4"}`, as its text ("4"); which object is
    one shows only at its end, so such answers arrive whole.
    """

    def __init__(self, unwrap: Callable[[str], str]) -> None:
        self._unwrap = unwrap
        self._held = ""
        self._holding: bool | None = None  # None: too little written to tell

    def feed(self, text: str, final: bool = False) -> str:
        if self._holding is False:
            return text
        self._held += text
        if self._holding is None:
            if _WRAPPED_START.match(self._held):
                self._holding = True
            elif not _WRAPPED_OPENING.fullmatch(self._held):
                self._holding, text, self._held = False, self._held, ""
                return text
        if not final:
            return ""
        held, self._held = self._held, ""
        return self._unwrap(held) if held else ""


class StreamSanitizer:
    """Sanitize streamed model output chunk by chunk.

    `feed` returns the text that is safe to show now and holds back a trailing fragment
    that could still turn into markup (`<too`, `Act`, `[TOOL_`, `<|`, `Final Ans`);
    `flush` returns the rest. The pieces always join up to `sanitize(whole_text)`.

    With `answer_marker` (e.g. "Final Answer:" for ReAct models) nothing is shown until
    the marker appears as the parser reads it: at a line start (any case, optional leading
    spaces, its words joined by a space or "_", any spaces before a closing colon,
    `final_answer :`; a colon label also in markdown emphasis, `**Final Answer:**`, or
    after a list item's or a quote's mark, `- Final Answer:`), or later on a line a
    `Thought:` label opens (that label as a line label, `**Thought:**`, `- Thought:` too;
    the marker's words in its case joined by a space or "_", up to two spaces before its
    colon, in
    emphasis with its closing stars, `Thought: done. **Final Answer:** 4`), outside
    `<think>` blocks;
    the pieces then join up to `sanitize(text after the marker)`, i.e. the whitespace right
    after the marker is dropped like any leading whitespace.
    Without the marker the stream is empty.

    `tool_names` (the registered tools) lets an `Action: name` line count as markup without
    an `Action Input:` line after it; see :func:`sanitize`.

    `unwrap`, for a final answer: the parser's reading of an answer that is wholly a JSON
    value (a "Final Answer" envelope's text); an answer opening with an object (fenced, in
    backticks or bare) is held back to its end and the pieces join up to `unwrap` of it.
    """

    def __init__(self, answer_marker: str | None = None, *,
                 tool_names: Iterable[str] | None = None,
                 unwrap: Callable[[str], str] | None = None) -> None:
        self._gate = _AnswerGate(answer_marker) if answer_marker else None
        self._remover = _MarkupRemover(tool_names)
        self._space = _Whitespace()
        self._wrapped = _WrappedAnswer(unwrap) if unwrap else None

    def feed(self, chunk: str) -> str:
        """Take the next chunk of model output; return the text safe to emit now."""
        if self._gate is not None:
            chunk = self._gate.feed(chunk)
        text = self._space.feed(self._remover.feed(chunk))
        return self._wrapped.feed(text) if self._wrapped is not None else text

    def flush(self) -> str:
        """Signal the end of the output; return the text still held back."""
        text = self._gate.feed("", final=True) if self._gate is not None else ""
        text = self._remover.feed(text) + self._remover.flush()
        text = self._space.feed(text) + self._space.flush()
        return self._wrapped.feed(text, final=True) if self._wrapped is not None else text


def sanitize(text: str, *, tool_names: Iterable[str] | None = None) -> str:
    """Return `text` with all tool-call markup and reasoning removed, ready for a user.

    `tool_names`: the registered tools. An `Action: <name>` line naming one of them (any
    case) is markup even without an `Action Input:` line; without them, such a line is
    markup only when an `Action Input:` line follows or it continues a ReAct trace.
    """
    stream = StreamSanitizer(tool_names=tool_names)
    return stream.feed(text) + stream.flush()
