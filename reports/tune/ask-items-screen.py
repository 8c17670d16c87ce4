"""The questions an ask's list can touch (README, the row "ask_items"): requests read as
two asks or more, one of which gives a list of like items (``asks.listed_items``).

    .venv/bin/python reports/tune/ask-items-screen.py SPLIT IDS_OUT DATA_DIR

From the requests and the tools' schemas alone; writes the ids to IDS_OUT, one a line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools.asks import asks, listed_items


def main(split: str, ids_out: str, data_dir: str) -> None:
    found = []
    for question, request in requests(split, data_dir):
        plan = asks(list(question_registry(question)), request)
        lists = [items for ask in plan for items in listed_items(ask.text)]
        if len(plan) > 1 and lists:
            found.append(question.id)
            print(question.id, len(plan), lists)
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
