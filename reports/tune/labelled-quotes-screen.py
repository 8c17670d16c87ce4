"""Screen: a string argument (no enum) takes the one quoted value the request labels with
the argument's name words: the words of the name, in order, then at most three words ("should
be", "as", "to", "is", "named", "called", "of"), then the quote: "The title should be
'Breakthrough in Artificial Intelligence'", "set the meta title as '...'", "with the subject
'Sales Forecast Request'". Rescored on a full run's recorded calls with callgate's checker.
Usage, from the repository root with ../shared beside it:
python reports/tune/labelled-quotes-screen.py tune|validate"""

import re
import sys

from screening import rescore, rewrite_strings

from callgate.tools.candidates import name_words

QUOTE = r"['\"‘“](?P<x>[^'\"‘’“”]{1,200})['\"’”](?!\w)"


def labelled(request: str, name: str) -> str | None:
    """The one quoted value the request labels with ``name``'s words."""
    words = name_words(name)
    if not words:
        return None
    label = r"[\s_-]*".join(re.escape(w) for w in words)
    found = {m.group("x") for m in re.finditer(
        rf"(?<![\w-]){label}s?\b(?:\s+\w+){{0,3}}?\s*:?\s*{QUOTE}", request, re.IGNORECASE)}
    return found.pop() if len(found) == 1 else None


def quoted(request: str, name: str, spec: dict, value: str) -> str | None:
    return labelled(request, name)


if __name__ == "__main__":
    rescore(sys.argv[1], rewrite_strings(quoted))
