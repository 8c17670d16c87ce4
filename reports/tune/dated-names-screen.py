"""The questions whose listed items change when a month of a day the request names is no
name (``asks._list_candidates``; README, its row).

    .venv/bin/python reports/tune/dated-names-screen.py SPLIT IDS_OUT DATA_DIR

From the requests alone: ``listed_items`` with the days masked (as the code reads them) and
without (as before); writes the ids whose lists differ to IDS_OUT, one a line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from screening import requests

from callgate.tools import asks as asks_module


def main(split: str, ids_out: str, data_dir: str) -> None:
    masked = asks_module.date_time_spans
    found = []
    for question, request in requests(split, data_dir):
        now = asks_module.listed_items(request)
        asks_module.date_time_spans = lambda _text: []
        try:
            before = asks_module.listed_items(request)
        finally:
            asks_module.date_time_spans = masked
        if now != before:
            found.append(question.id)
            print(question.id, before, "->", now)
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
