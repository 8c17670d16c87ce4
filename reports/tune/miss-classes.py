"""The classes of the tune misses in a BFCL report (README, "Where the misses are").

    .venv/bin/python reports/tune/miss-classes.py reports/bfcl-full.json /path/to/shared/data/bfcl

Reads each tune question's ``why`` from the report; the last line counts the single-call
categories' "no call" misses and how many of them were offered no tool (relevance, from the
question's request and tools in the shared data).
"""

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import load_questions
from callgate.tools.relevance import relevant_tools

report, data = json.loads(Path(sys.argv[1]).read_text()), sys.argv[2]
classes: dict[str, Counter[str]] = defaultdict(Counter)
for q in report["questions"]:
    if q["split"] != "tune" or q["ok"]:
        continue
    category, why = q["category"], q["why"]
    if category in ("simple_python", "multiple", "live_simple", "live_multiple"):
        m = re.match(r"expected exactly 1 call, got (\d+)", why)
        if m:
            kind = "no call" if m.group(1) == "0" else "more calls"
        elif "is not the expected" in why:
            kind = "wrong function"
        else:
            kind = "value"
    elif category in ("parallel", "parallel_multiple"):
        m = re.match(r"expected (\d+) calls, got (\d+)", why)
        if m:
            expected, got = int(m.group(1)), int(m.group(2))
            kind = "none" if got == 0 else "too few" if got < expected else "too many"
        elif why.startswith("no call matches"):
            kind = "no match"
        else:
            kind = "other"
    else:
        continue
    classes[category][kind] += 1
for category, counts in classes.items():
    print(category, sum(counts.values()), dict(counts))
offered_none = total = 0
for category in ("simple_python", "multiple", "live_simple", "live_multiple"):
    rows = {q["id"]: q for q in report["questions"] if q["category"] == category}
    for question in load_questions(category, split="tune", data_dir=data):
        row = rows[question.id]
        if row["ok"] or not row["why"].startswith("expected exactly 1 call, got 0"):
            continue
        total += 1
        request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
        if not relevant_tools(list(question_registry(question)), request, unmatched="none"):
            offered_none += 1
print("no-call misses", total, "offered no tool", offered_none)
