"""The questions ``ask_mentions`` can touch: the request has two asks or more
(``callgate.tools.asks.asks``), and for a tool of one of them the optional arguments the ask
mentions, or the flags it affirms, differ from those the whole request does
(``relevance.mentioned_arguments``, ``relevance.affirmed_flags``).

    .venv/bin/python reports/tune/ask-mentions-screen.py SPLIT IDS_OUT DATA_DIR

From the requests and the tools' schemas alone; writes the ids to IDS_OUT, one a line (and
prints only the ids).
"""

from __future__ import annotations

import sys
from pathlib import Path

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools.asks import asks
from callgate.tools.relevance import affirmed_flags, mentioned_arguments


def main(split: str, ids_out: str, data_dir: str) -> None:
    found = []
    for question, request in requests(split, data_dir):
        registry = question_registry(question)
        plan = asks(list(registry), request)
        if len(plan) < 2:
            continue
        for ask in plan:
            schemas = [registry.get(name).schema for name in ask.tools]
            if any(mentioned_arguments(s, ask.text) != mentioned_arguments(s, request)
                   or affirmed_flags(s, ask.text) != affirmed_flags(s, request)
                   for s in schemas):
                found.append(question.id)
                break
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(*found)
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
