"""The questions ``member_items`` can touch (README, the row "member_items"): a tool of the
question has a string enum argument the request names two members or more of
(``asks.listed_members``).

    .venv/bin/python reports/tune/member-items-screen.py SPLIT IDS_OUT DATA_DIR

From the requests and the tools' schemas alone; writes the ids to IDS_OUT, one a line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools.asks import listed_members


def main(split: str, ids_out: str, data_dir: str) -> None:
    found = []
    for question, request in requests(split, data_dir):
        named = [(tool.name, arg, members) for tool in question_registry(question)
                 for arg, spec in (tool.schema.get("properties") or {}).items()
                 if (members := listed_members(spec, request))]
        if named:
            found.append(question.id)
            print(question.id, named)
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
