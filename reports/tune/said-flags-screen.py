"""The questions the said-flags rule can touch (README, "a boolean argument the request says
no to ..."): an offered function has a boolean argument the request speaks of
(``relevance.flag_values``) where that reading gives a value ``relevance.affirmed_flags``
does not (false, or true in a sentence that negates something else).

    .venv/bin/python reports/tune/said-flags-screen.py DATA_DIR SPLIT

prints the ids of SPLIT's questions found (``reports/tune/said-flags-{tune,validate}-ids.txt``).
"""

from __future__ import annotations

import sys

from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, load_questions
from callgate.tools.relevance import affirmed_flags, flag_values


def request_of(question: BfclQuestion) -> str:
    """The question's last user message, as the strategy reads the request."""
    said = [m["content"] for m in question.messages if m["role"] == "user"]
    return said[-1] if said else ""


def touched(question: BfclQuestion) -> bool:
    request = request_of(question)
    for function in question.functions:
        schema = function.get("parameters") or {}
        values = flag_values(schema, request)
        affirmed = set(affirmed_flags(schema, request))
        if any(False in said for said in values.values()) or {
                name for name, said in values.items() if said == (True,)} - affirmed:
            return True
    return False


def main(data_dir: str, split: str) -> None:
    for category in CATEGORIES:
        for question in load_questions(category, data_dir, split=split):
            if touched(question):
                print(question.id)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
