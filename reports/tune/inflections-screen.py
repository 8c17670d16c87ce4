"""The questions of a part of the shared half whose first offer of tools, asks or score-9
first choice change when the relevance score's crude stem drops "-ing", "-ed" and a final
"e" first (``relevance.INFLECTIONS``: "rated" meets "rating", "booked" meets "booking").
Prints their ids.

    git apply reports/tune/inflections.patch
    .venv/bin/python reports/tune/inflections-screen.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys

from screening import offer_changes

from callgate.tools import relevance


def rule(on: bool) -> None:
    relevance.INFLECTIONS = on


for question_id in offer_changes(sys.argv[2], sys.argv[1], rule):
    print(question_id)
