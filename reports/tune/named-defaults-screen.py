"""The questions the named-defaults rule can touch (README, "an optional argument the request
names, written as its default ..."): an offered function has an optional string argument,
not an enum, with a string default the request does not state, and the request names the
argument (``relevance.mentioned_arguments``).

    .venv/bin/python reports/tune/named-defaults-screen.py DATA_DIR SPLIT

prints the ids of SPLIT's questions found (``reports/tune/named-defaults-{tune,validate}-ids.txt``).
"""

from __future__ import annotations

import sys
from typing import Any

from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, load_questions
from callgate.tools.grounding import stated
from callgate.tools.relevance import mentioned_arguments


def request_of(question: BfclQuestion) -> str:
    """The question's last user message, as the strategy reads the request."""
    said = [m["content"] for m in question.messages if m["role"] == "user"]
    return said[-1] if said else ""


def named_default(schema: dict[str, Any], request: str) -> bool:
    properties = schema.get("properties") or {}
    for name in mentioned_arguments(schema, request):
        spec = properties.get(name) or {}
        default = spec.get("default")
        if (spec.get("type") == "string" and not spec.get("enum")
                and isinstance(default, str) and not stated(default, request)):
            return True
    return False


def main(data_dir: str, split: str) -> None:
    for category in CATEGORIES:
        for question in load_questions(category, data_dir, split=split):
            request = request_of(question)
            if any(named_default(f.get("parameters") or {}, request)
                   for f in question.functions):
                print(question.id)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
