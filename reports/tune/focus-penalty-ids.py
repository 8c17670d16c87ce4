"""The questions of a part of the shared half whose request the ReAct path splits into two
asks or more (``callgate.tools.asks``, as ``ReactStrategy.plan`` reads it): where a call's
values pay ``focus_penalty`` for standing outside the ask it serves, the only place the
penalty acts. Prints their ids, one a line.

    .venv/bin/python reports/tune/focus-penalty-ids.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools.asks import asks
from callgate.tools.relevance import PRESELECT

data_dir, split = sys.argv[1], sys.argv[2]
for question, request in requests(split, data_dir):
    if len(asks(question_registry(question), request, PRESELECT)) > 1:
        print(question.id)
