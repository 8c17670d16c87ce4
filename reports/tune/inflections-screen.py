"""The questions of a part of the shared half whose first offer of tools, asks or score-9
first choice change when the relevance score's crude stem drops "-ing", "-ed" and a final
"e" first (``relevance.INFLECTIONS``: "rated" meets "rating", "booked" meets "booking").
Prints their ids.

    git apply reports/tune/inflections.patch
    .venv/bin/python reports/tune/inflections-screen.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools import relevance
from callgate.tools.asks import asks
from callgate.tools.relevance import PRESELECT, relevant_tools

CALL_SCORE = 9.0  # ReactStrategy's call_score: a first choice forced to a call from here


def offer(question, request: str, inflections: bool) -> tuple:
    """What the ReAct path reads from the relevance score for ``request``."""
    relevance.INFLECTIONS = inflections
    registry = question_registry(question)
    tools = list(registry)
    return (relevant_tools(tools, request, PRESELECT, unmatched="none"),
            [(ask.text, ask.tools) for ask in asks(registry, request, PRESELECT)],
            max(relevance.tool_scores(tools, request).values(), default=0.0) >= CALL_SCORE)


data_dir, split = sys.argv[1], sys.argv[2]
for question, request in requests(split, data_dir):
    if offer(question, request, False) != offer(question, request, True):
        print(question.id)
