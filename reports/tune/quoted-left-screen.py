"""The questions ``one_call_unlisted``'s quoted-values guard can change (README, its row).

    .venv/bin/python reports/tune/quoted-left-screen.py SPLIT IDS_OUT REPORT DATA_DIR

From the requests and the tools' schemas alone: a request that gives no numbers, no list the
list reader reads, one ask, and two quoted values or more. Writes their ids to IDS_OUT, one a
line, and prints each with its verdict and calls in REPORT (a full run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools.asks import asks, listed_items, quoted_values
from callgate.tools.grounding import numbers_in
from callgate.tools.relevance import PRESELECT


def main(split: str, ids_out: str, report: str, data_dir: str) -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text())["questions"]}
    found = []
    for question, request in requests(split, data_dir):
        if numbers_in(request) or listed_items(request) or len(quoted_values(request)) < 2:
            continue
        if len(asks(list(question_registry(question)), request, PRESELECT)) > 1:
            continue
        found.append(question.id)
        row = rows[question.id]
        print(question.id, row["ok"], json.dumps(row["calls"])[:200])
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:5])
