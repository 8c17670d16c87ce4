"""The questions of a part of the shared half whose first offer of tools, asks or score-9
first choice change when the words of the arguments' descriptions count in the relevance
score (``relevance.ARGUMENT_WORDS``, which ``argument-words.patch`` adds). Prints their ids.

    git apply reports/tune/argument-words.patch
    .venv/bin/python reports/tune/argument-words-screen.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys

from screening import offer_changes

from callgate.tools import relevance


def rule(on: bool) -> None:
    relevance.ARGUMENT_WORDS = 0.5 if on else 0.0


for question_id in offer_changes(sys.argv[2], sys.argv[1], rule):
    print(question_id)
