"""The BFCL questions whose recorded calls leave an ask closed that states items of its own:
those ``own_items`` (not kept) could touch. Usage, from the repository root:
python reports/tune/own-items-screen.py REPORT DATA_DIR tune|validate (prints the ids)."""

import json
import sys
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import CATEGORIES, load_questions, safe_name
from callgate.tools.asks import asks, items_left
from callgate.tools.relevance import PRESELECT, as_arithmetic

report, data_dir, split = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {q["id"]: q for q in json.loads(Path(report).read_text())["questions"]}
for category in CATEGORIES:
    for question in load_questions(category, split=split, data_dir=data_dir):
        row = rows[question.id]
        if not row["calls"]:
            continue
        request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
        plan = asks(list(question_registry(question)), as_arithmetic(request), PRESELECT)
        if len(plan) < 2:
            continue
        calls = [(safe_name(name), args) for call in row["calls"] for name, args in call.items()]
        remaining = list(plan)
        for name, _ in calls:  # each call serves the first open ask of its tool
            served = next((a for a in remaining if name in a.tools), None)
            if served is not None:
                remaining.remove(served)
        called = {name for name, _ in calls}
        made = [args for _, args in calls]
        closed = [a for a in remaining if not a.again and called & set(a.tools)
                  and not items_left(a.text, made)]
        if any(items_left(a.text, []) for a in closed):
            print(question.id)
