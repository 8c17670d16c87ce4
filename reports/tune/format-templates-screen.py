"""The questions the format-template fix can touch (README, the kept table's row "a fix
against an invented value (point 5): a value that copies the format ..."): a call of the
full run's recorded replies holds a value equal to a format template its argument's
description names, which the conversation does not write; and the ground-truth values such a
rule would refuse (none).

    .venv/bin/python reports/tune/format-templates-screen.py REPORT DATA_DIR

REPORT is the full run's report it was screened on (``reports/tune/bfcl-full-499d430.json``);
prints the questions found.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, load_questions
from callgate.tools.grounding import _context, _template_copy  # the rule itself


def strings(value: Any, spec: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every string inside ``value``, with the schema that describes it."""
    spec = spec if isinstance(spec, dict) else {}
    if isinstance(value, str):
        yield value, spec
    elif isinstance(value, dict):
        properties = spec.get("properties") or {}
        for key, item in value.items():
            yield from strings(item, properties.get(key))
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, spec.get("items"))


def copies(question: BfclQuestion, calls: list[dict[str, Any]]) -> list[str]:
    """The values of ``calls`` that copy a format template the conversation does not write."""
    said = "\n".join(m["content"] for m in question.messages if m["role"] == "user")
    context = _context(said, date.today())
    schemas = {}
    for function in question.functions:
        schemas[function["name"]] = schemas[function["name"].replace(".", "_")] = function[
            "parameters"]
    return [value for call in calls for name, args in call.items()
            for value, spec in strings(args, schemas.get(name))
            if _template_copy(value, spec, context)]


def main(report: str, data_dir: str) -> None:
    questions = {q.id: q for category in CATEGORIES
                 for q in load_questions(category, split="all", data_dir=data_dir)}
    recorded = json.loads(Path(report).read_text())["questions"]
    found = [(r, copied) for r in recorded if (copied := copies(questions[r["id"]], r["calls"]))]
    for r, copied in found:
        print(r["id"], r["split"], "ok" if r["ok"] else "MISS", copied)
    print(len(found), "questions")
    truth = [(q.id, v) for q in questions.values() for call in q.ground_truth or []
             for name, args in call.items() for arg, options in args.items()
             for option in options for v in copies(q, [{name: {arg: option}}])]
    print(*truth, len(truth), "ground-truth values the rule would refuse")


if __name__ == "__main__":
    main(*sys.argv[1:3])
