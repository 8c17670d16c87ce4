"""The questions ``named_items`` can change (README, its row in the not-kept table).

    .venv/bin/python reports/tune/named-items-screen.py SPLIT IDS_OUT REPORT DATA_DIR

Screened on the recorded calls of REPORT (a full run): a call holding a list argument whose
items are enum members, where the request names members (``relevance.named_members``, in
the order it names them) and the call's list is not those. Writes the ids to IDS_OUT.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from screening import requests

from callgate.eval.bfcl import question_registry
from callgate.tools.relevance import named_members, word_positions


def named_items(spec: Any, request: str) -> list[str]:
    """As ``reports/tune/named-items.patch``'s ``choose_values._named_items``."""
    items = spec.get("items") if isinstance(spec, dict) and spec.get("type") == "array" else None
    members = items.get("enum") if isinstance(items, dict) else None
    if not isinstance(members, list):
        return []
    said = word_positions(request)

    def first(member: str) -> int:
        return min((said[w] for w in word_positions(member) if w in said), default=len(request))

    return sorted(named_members(members, request), key=first)


def main(split: str, ids_out: str, report: str, data_dir: str) -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text())["questions"]}
    found = []
    for question, request in requests(split, data_dir):
        registry = question_registry(question)
        row = rows[question.id]
        hit = False
        for call in row["calls"]:
            ((name, args),) = call.items()
            tool = registry.get(name.replace(".", "_")) or registry.get(name)
            properties = (tool.schema.get("properties") or {}) if tool else {}
            for arg, spec in properties.items():
                named = named_items(spec, request)
                if named and args.get(arg) != named:
                    hit = True
                    print(question.id, row["ok"], name, arg, args.get(arg), "->", named)
        if hit:
            found.append(question.id)
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:5])
