"""The questions of one split whose reply in ``reports/bfcl-full.json`` made calls and left
a number of the request unused (``grounding.unused_numbers`` over the recorded calls): the
turns that ended with numbers left, where ``numbers-left-call.patch`` (a further step must
call while the earlier steps' calls all succeeded and numbers are left) can act. Counts
every such question by category and verdict ("ok", "fewer": wrong with fewer calls than
BFCL's answer, "wrong": wrong otherwise) on stderr; prints the ids of the "ok" and "fewer"
ones, the replies it can put down or up.

    python reports/tune/numbers-left-call-screen.py ../shared/data/bfcl tune > ids.txt
"""

import collections
import json
import sys
from pathlib import Path

from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.grounding import unused_numbers

data, split = Path(sys.argv[1]), sys.argv[2]
recorded = {q["id"]: q for q in json.loads(Path("reports/bfcl-full.json").read_text())["questions"]}
counts: collections.Counter[tuple[str, str]] = collections.Counter()
for category in CATEGORIES:
    for question in load_questions(category, data, split=split):
        reply = recorded[question.id]
        last = question.messages[-1] if question.messages else {}
        request = last.get("content", "") if last.get("role") == "user" else ""
        args = [next(iter(call.values())) for call in reply["calls"]]
        if not reply["calls"] or not unused_numbers(request, args):
            continue
        wanted = len(question.ground_truth or [])
        verdict = "ok" if reply["ok"] else "fewer" if wanted > len(args) else "wrong"
        counts[(category, verdict)] += 1
        if verdict != "wrong":
            print(question.id)
for (category, verdict), count in sorted(counts.items()):
    print(f"{category:24} {verdict:6} {count}", file=sys.stderr)
