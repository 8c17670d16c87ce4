"""The questions ``one_call_unlisted`` can change (README, its row in the rules table).

    .venv/bin/python reports/tune/one-call-unlisted-screen.py SPLIT IDS_OUT REPORT DATA_DIR

A question of a category scored by its calls whose reply in REPORT (a full run) had two
calls or more, and whose request gives no numbers, no list a call takes items of (read
with the reply's first call), and one ask: only there can the rule end a reply earlier.
Writes their ids to IDS_OUT, one a line, and prints each with its verdict and calls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import (
    CATEGORIES,
    NO_CALL_CATEGORIES,
    SOME_CALL_CATEGORIES,
    load_questions,
)
from callgate.tools.asks import asks, list_items_left, listed_items
from callgate.tools.grounding import numbers_in
from callgate.tools.relevance import PRESELECT


def main(split: str, ids_out: str, report: str, data_dir: str) -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text())["questions"]}
    found = []
    for category in CATEGORIES:
        if category in NO_CALL_CATEGORIES | SOME_CALL_CATEGORIES:
            continue
        for question in load_questions(category, split=split, data_dir=data_dir):
            row = rows[question.id]
            if len(row["calls"]) < 2:
                continue
            request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
            first_args = [next(iter(row["calls"][0].values()))]
            if numbers_in(request) or list_items_left(listed_items(request),
                                                      first_args) is not None:
                continue
            if len(asks(list(question_registry(question)), request, PRESELECT)) > 1:
                continue
            found.append(question.id)
            print(question.id, row["ok"], json.dumps(row["calls"])[:200])
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:5])
