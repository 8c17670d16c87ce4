"""The questions whose asks change when "later", "afterward" and "subsequently" open a
segment that moves on (README, the not-kept row "later-asks").

    .venv/bin/python reports/tune/later-asks-screen.py SPLIT IDS_OUT DATA_DIR

From the requests and the tools' schemas alone: the asks with ``_MOVES_ON`` as it is, and
with the three words added; writes the ids whose asks differ to IDS_OUT, one a line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools import asks as asks_module


def main(split: str, ids_out: str, data_dir: str) -> None:
    before = asks_module._MOVES_ON
    after = re.compile(before.pattern.replace(
        "next|after|afterwards|", "next|after|afterwards?|later|subsequently|"), re.IGNORECASE)
    assert after.pattern != before.pattern
    found = []
    for question, request in requests(split, data_dir):
        tools = list(question_registry(question))
        read = []
        try:
            for pattern in (before, after):
                asks_module._MOVES_ON = pattern
                read.append([(a.tools, a.start) for a in asks_module.asks(tools, request)])
        finally:
            asks_module._MOVES_ON = before
        if read[0] != read[1]:
            found.append(question.id)
            print(question.id, len(read[0]), "->", len(read[1]), read[1])
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
