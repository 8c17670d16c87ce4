"""The values an argument can take from the conversation: spans of its words, its numbers.

A small model asked for a value it should copy ("restaurants in Manhattan") often writes
one it half remembers ("Manchester"). These are the values that copying allows; the ReAct
path ranks them by the model's own probability (:mod:`callgate.graph.choose_values`).
Free text — a search query, a message, a date in the tool's own format — is the model's
to compose: :func:`is_free_text` says which arguments those are. A search query is composed
of the conversation's words (:func:`is_search_text`): SmolLM2's own queries were junk.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from callgate.tools.relevance import STOP_WORDS, number_readings

__all__ = ["FREE_TEXT_WORDS", "SEARCH_WORDS", "fuller_query", "is_free_text", "is_search_text",
           "name_words", "number_values", "spans"]

# A string argument whose name or description has one of these words holds text the user
# need not have written word for word (a search query, a summary, a formula, a date in the
# tool's format), so its value is not limited to spans of the conversation.
FREE_TEXT_WORDS = frozenset({
    "query", "prompt", "text", "message", "content", "summary", "description", "title",
    "body", "comment", "note", "question", "keyword", "keywords", "search", "expression",
    "formula", "function", "equation", "code", "sql", "command", "script", "instruction",
    "instructions", "reason", "date", "time", "datetime", "url", "path", "email",
})
# Words of a description that make its argument free text (an SQL statement is composed).
# Not "search" ("The city to search within", "The name of the book to search for" are
# copied), nor "query" as a verb ("The version of the project to query").
_DESCRIBED_FREE = frozenset({"query", "summary", "free", "formula", "expression", "sql"})
_VERB_QUERY = re.compile(r"\bto query\b")
# The last word of a search argument's name (query, search_query, keywords, q), or the word
# before a last "term", "string" or "text" (search_term, query_string), or the name
# "search": its value is words to look for, which the conversation holds (``is_search_text``).
SEARCH_WORDS = frozenset({"query", "q", "keyword", "keywords"})
_SEARCH_TAILS = frozenset({"term", "terms", "string", "text"})
_CAMEL = re.compile(r"([a-z])([A-Z])")

_WORD = re.compile(r"\w+")  # identifiers (main_db, user_id) are one word
# What may join two words inside one value: a space, or a little punctuation and maybe a
# space ("Manhattan, NY", "192.168.0.1", "http://x.org", "secure*pass", "McDonald's").
_JOIN = re.compile(r" |[^\w\s\"]{1,3} ?")
_TRAILING = re.compile(r"[+#]+")  # "C++", "C#", "Guardian Sword+"
MAX_SPAN_WORDS = 8
MAX_TEXT_WORDS = 400  # beyond, the latest words


def name_words(name: str) -> list[str]:
    """The words of an argument's name, lower-cased: ``departure_date`` and ``startDate``
    give ``["departure", "date"]`` and ``["start", "date"]``."""
    return re.findall(r"[a-z]+", _CAMEL.sub(r"\1 \2", name).lower())


def is_free_text(name: str, spec: dict[str, Any]) -> bool:
    """Whether a string argument is text the model composes rather than copies."""
    words = set(name_words(name))
    description = _VERB_QUERY.sub(" ", str(spec.get("description") or "").lower())
    described = set(re.findall(r"[a-z]+", description))
    return bool(words & FREE_TEXT_WORDS) or bool(described & _DESCRIBED_FREE)


def is_search_text(name: str, spec: dict[str, Any]) -> bool:
    """Whether a string argument holds words to search for (``query``, ``search_string``,
    ``keywords``, ``q``), not a setting of the search (``search_type``, ``search_scope``)."""
    words = name_words(name)
    if spec.get("type") not in (None, "string") or not words:
        return False
    return words[-1] in SEARCH_WORDS or words == ["search"] or (
        len(words) > 1 and words[-1] in _SEARCH_TAILS and words[-2] in {*SEARCH_WORDS, "search"})


# Words that say where to look, not what for ("Search the web", "Check my notes").
_WHERE_WORDS = frozenset({
    "search", "web", "internet", "online", "look", "up", "find", "check", "google",
    "notes", "note", "documents", "document", "docs", "files", "file"})
_QUERY_WORD = re.compile(r"\w+(?:['’-]\w+)*")  # "Wi-Fi" and "car's" are one word each


def _query_words(text: str) -> list[str]:
    """The words of ``text`` that say what to look for, in order, each once."""
    found = [w for w in _QUERY_WORD.findall(text)
             if len(w) > 1 and w.lower() not in STOP_WORDS | _WHERE_WORDS]
    return list(dict.fromkeys(found))


def fuller_query(query: str, request: str) -> str:
    """``query`` with each word once (SmolLM2 looped: "Python Python Python … version"), or,
    where it holds fewer than two words that say what to look for and the request holds
    more, those words of the request in its order: SmolLM2 searched for "latest" ("Search
    the web for the latest Python release"), "my notes" and "At what mileage", and found
    nothing."""
    words = query.split()
    first: dict[str, str] = {}
    for word in words:
        first.setdefault(word.lower(), word)
    query = " ".join(first.values()) if len(first) < len(words) else query
    have = _query_words(query)
    if len(have) >= 2:
        return query
    words = _query_words(request)
    return " ".join(words) if len(words) > len(have) else query


def spans(text: str, max_words: int = MAX_SPAN_WORDS) -> list[str]:
    """Every run of up to ``max_words`` whole words of ``text``, with what joins them as
    written, in order of first appearance (a trailing ``+`` or ``#`` kept as a variant)."""
    words = list(_WORD.finditer(text))[-MAX_TEXT_WORDS:]
    out: dict[str, None] = {}
    for i, first in enumerate(words):
        end = first.end()
        for j in range(i, min(len(words), i + max_words)):
            if j > i and not _JOIN.fullmatch(text[end:words[j].start()]):
                break
            end = words[j].end()
            value = text[first.start():end]
            out[value] = None
            if trailing := _TRAILING.match(text, end):
                out[value + trailing.group()] = None
    return list(out)


def number_values(text: str, spec: dict[str, Any]) -> list[int | float]:
    """The numbers of ``text`` (digits, words, percents as fractions) an integer or number
    argument with schema ``spec`` accepts."""
    integer = spec.get("type") == "integer"
    low, high = (bound if isinstance(bound, int | float) and not isinstance(bound, bool)
                 else None for bound in (spec.get("minimum"), spec.get("maximum")))
    out: dict[str, int | float] = {}
    for value in sorted(number_readings(text)):
        if not math.isfinite(value) or (integer and not float(value).is_integer()):
            continue  # "1e999" reads as infinity, which JSON cannot write
        if (low is not None and value < low) or (high is not None and value > high):
            continue
        number = int(value) if float(value).is_integer() else value
        out[json.dumps(number)] = number
    return list(out.values())
