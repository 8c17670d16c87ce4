"""The questions of a part of the shared half whose first offer of tools, asks or score-9
first choice change when an arithmetic request's operators count as the words that name
them (``relevance.OPERATOR_WORDS``: "443 * 349" is about "the product"). Prints their ids.

    git apply reports/tune/operator-words.patch
    .venv/bin/python reports/tune/operator-words-screen.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools import relevance
from callgate.tools.asks import asks
from callgate.tools.relevance import PRESELECT, relevant_tools

CALL_SCORE = 9.0  # ReactStrategy's call_score: a first choice forced to a call from here
WORDS = dict(relevance.OPERATOR_WORDS)


def offer(question, request: str, words: dict[str, str]) -> tuple:
    """What the ReAct path reads from the relevance score for ``request``."""
    relevance.OPERATOR_WORDS = words
    registry = question_registry(question)
    tools = list(registry)
    return (relevant_tools(tools, request, PRESELECT, unmatched="none"),
            [(ask.text, ask.tools) for ask in asks(registry, request, PRESELECT)],
            max(relevance.tool_scores(tools, request).values(), default=0.0) >= CALL_SCORE)


data_dir, split = sys.argv[1], sys.argv[2]
for question, request in requests(split, data_dir):
    if offer(question, request, {}) != offer(question, request, WORDS):
        print(question.id)
