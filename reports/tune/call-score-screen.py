"""The questions of one split whose best tool score (``relevance.tool_scores``) is at least
LOW and below 9 (``call_score``), and whose reply in ``reports/bfcl-full.json`` has no call:
where a lower ``call_score`` can act. Counts every such question by category, reply and
verdict on stderr; prints the no-call ids.

    python reports/tune/call-score-screen.py ../shared/data/bfcl tune 5 > ids.txt
"""

import collections
import json
import sys
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.relevance import tool_scores

data, split, low = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
recorded = {q["id"]: q for q in json.loads(Path("reports/bfcl-full.json").read_text())["questions"]}
counts: collections.Counter[tuple[str, str, int]] = collections.Counter()
for category in CATEGORIES:
    for question in load_questions(category, data, split=split):
        request = question.messages[-1]["content"] if question.messages else ""
        best = max(tool_scores(question_registry(question), request).values(), default=0.0)
        if low <= best < 9:
            reply = recorded[question.id]
            counts[(category, "call" if reply["calls"] else "no call", reply["ok"])] += 1
            if not reply["calls"]:
                print(question.id)
for key, count in sorted(counts.items()):
    print(*key, count, file=sys.stderr)
