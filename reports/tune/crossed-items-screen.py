"""The questions ``crossed_items`` can touch (README, the row "crossed_items"): the request
gives two lists with no item in common and does not pair them off ("respectively"),
``callgate.tools.asks.crossed_lists``. A superset: the rule acts only where a call holds an
item of each list, each the whole value of an argument.

    .venv/bin/python reports/tune/crossed-items-screen.py SPLIT IDS_OUT DATA_DIR

From the requests alone; writes the ids to IDS_OUT, one a line (and prints only the ids).
"""

from __future__ import annotations

import sys
from pathlib import Path

from screening import requests

from callgate.tools.asks import crossed_lists


def main(split: str, ids_out: str, data_dir: str) -> None:
    found = [question.id for question, request in requests(split, data_dir)
             if crossed_lists(request)]
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(*found)
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
