"""The questions of a part of the shared half whose first offer of tools, asks or score-9
first choice change when an arithmetic request's operators count as the words that name
them (``relevance.OPERATOR_WORDS``: "443 * 349" is about "the product"). Prints their ids.

    git apply reports/tune/operator-words.patch
    .venv/bin/python reports/tune/operator-words-screen.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys

from screening import offer_changes

from callgate.tools import relevance

WORDS = dict(relevance.OPERATOR_WORDS)


def rule(on: bool) -> None:
    relevance.OPERATOR_WORDS = WORDS if on else {}


for question_id in offer_changes(sys.argv[2], sys.argv[1], rule):
    print(question_id)
