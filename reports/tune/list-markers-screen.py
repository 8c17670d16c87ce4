"""The questions the list-marker reading can touch (README, the row "list markers"): the
request opens two lines or more with a numbered list's marker ("1. ", "2) "), which
grounding's number reading blanks with ``list-markers.patch`` (``grounding._unmarked``;
not committed).

    .venv/bin/python reports/tune/list-markers-screen.py SPLIT IDS_OUT DATA_DIR

From the requests alone; writes the ids to IDS_OUT, one a line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from screening import requests

from callgate.tools.grounding import numbers_in


def main(split: str, ids_out: str, data_dir: str) -> None:
    found = []
    for question, request in requests(split, data_dir):
        # The marker reading changes what ``numbers_in`` reads only where markers are.
        as_lines = request.replace("\r\n", "\n")
        if any(line.lstrip().split(" ", 1)[0].rstrip(".)").lstrip("(").isdigit()
               and line.lstrip().split(" ", 1)[0][-1:] in ".)"
               for line in as_lines.split("\n")):
            found.append(question.id)
            print(question.id, numbers_in(request)[:12])
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
