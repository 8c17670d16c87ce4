"""The questions whose grounding a run of dotted digits can change (README, its row).

    .venv/bin/python reports/tune/dotted-values-screen.py SPLIT IDS_OUT REPORT DATA_DIR

A question whose conversation writes a run of digits joined by two dots or more ("2.1.3",
"10.0.4.17"), or whose calls in REPORT (a full run) hold one the conversation does not write
whole. Writes the ids to IDS_OUT, one a line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from screening import requests

from callgate.tools.grounding import _DOTTED


def strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (a call's arguments)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value


def main(split: str, ids_out: str, report: str, data_dir: str) -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text())["questions"]}
    found = []
    for question, _request in requests(split, data_dir):
        said = " ".join(str(m["content"]) for m in question.messages)
        written = {m.group() for m in _DOTTED.finditer(said)}
        invented = [v for call in rows[question.id]["calls"] for v in strings(call)
                    if any(m.group() not in written for m in _DOTTED.finditer(v))]
        if written or invented:
            found.append(question.id)
            print(question.id, sorted(written)[:3], invented[:2])
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:5])
