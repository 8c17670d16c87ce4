"""The questions the ordinal-counts rule can touch (README, "a request that counts its items
by ordinals ..."): the request counts two items or more by ordinals ("The first table is
... the second table is ...", ``asks.counted_calls``).

    .venv/bin/python reports/tune/ordinal-counts-screen.py DATA_DIR SPLIT

prints the ids of SPLIT's questions found (``reports/tune/ordinal-counts-{tune,validate}-ids.txt``).
"""

from __future__ import annotations

import sys

from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.asks import counted_calls


def main(data_dir: str, split: str) -> None:
    for category in CATEGORIES:
        for question in load_questions(category, data_dir, split=split):
            said = [m["content"] for m in question.messages if m["role"] == "user"]
            if said and counted_calls(said[-1]) is not None:
                print(question.id)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
