"""Screen: a free-text string argument (``candidates.is_free_text``; not a date or a time)
takes the text the request labels with the argument's last name word, where that text
looks like a value (a digit or one of . / : \\ = _ -): "using the command start
https://...", "the start microsoft.windows.camera: command". Rescored on a full run's
recorded calls with callgate's checker. Usage, from the repository root with ../shared
beside it: python reports/tune/labelled-free-text-screen.py tune|validate"""

import re
import sys

from screening import rescore, rewrite_strings

from callgate.tools.candidates import is_free_text, name_words

VALUE_LIKE = re.compile(r"[./:\\=_0-9-]")
WHEN = {"date", "time", "datetime", "year", "day"}


def labelled(request: str, name: str) -> str | None:
    """The one value-like text the request labels with ``name``'s last word: after "the
    WORD" or "WORD:", or between "the" and WORD."""
    words = name_words(name)
    if not words or WHEN & set(words):
        return None
    label = re.escape(words[-1])
    after = re.finditer(rf"\b(?:the\s+{label}s?\s*:?|{label}s?\s*:)\s+(?P<x>[^\n,;]+?)\s*"
                        rf"(?=[.?!](?:\s|$)|[,;\n]|$)", request, re.IGNORECASE)
    before = re.finditer(rf"\bthe\s+(?P<x>\S+(?:\s+\S+){{0,3}}?)\s+{label}s?\b", request,
                         re.IGNORECASE)
    found = {m.group("x").strip(" '\"") for m in [*after, *before]
             if VALUE_LIKE.search(m.group("x"))}
    return found.pop() if len(found) == 1 else None


def free_text(request: str, name: str, spec: dict, value: str) -> str | None:
    return labelled(request, name) if is_free_text(name, spec) else None


if __name__ == "__main__":
    rescore(sys.argv[1], rewrite_strings(free_text))
