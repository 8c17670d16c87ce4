"""The questions of one split whose request holds every word of a tool's name (two words or
more) while no tool scores 9 (``call_score``): where a first-choice call for such a request
could act. Counts them by category, reply and verdict in ``reports/bfcl-full.json``; lists
those without a call, and those of the irrelevance categories.

    python reports/tune/tool-name-words-screen.py ../shared/data/bfcl tune
"""

import collections
import json
import sys
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.relevance import _stems, tool_scores

data, split = Path(sys.argv[1]), sys.argv[2]
recorded = {q["id"]: q for q in json.loads(Path("reports/bfcl-full.json").read_text())["questions"]}
counts: collections.Counter[tuple[str, str]] = collections.Counter()
for category in CATEGORIES:
    for question in load_questions(category, data, split=split):
        request = question.messages[-1]["content"] if question.messages else ""
        tools = list(question_registry(question))
        scores = tool_scores(tools, request)
        if max(scores.values(), default=0.0) >= 9:
            continue
        words = _stems(request)
        named = [t.name for t in tools if len(_stems(t.name.replace(".", " "))) >= 2
                 and _stems(t.name.replace(".", " ")) <= words]
        if not named:
            continue
        reply = recorded[question.id]
        state = ("call" if reply["calls"] else "no call") + (
            ", right" if reply["ok"] else ", wrong")
        counts[(category, state)] += 1
        if not reply["calls"] or "irrelevance" in category:
            print(question.id, state, named, scores)
for key, count in sorted(counts.items()):
    print(*key, count)
