"""The questions the described-copies rule can touch (README, the not-kept table's row "a
required string the model copied from its argument's own description ..."): the full run's
reply made no call, took its worker over 0.8 s (a tool was offered), and an offered function
has a required, non-enum string argument whose description gives examples (a quote, "e.g.",
"such as", "for example", "for instance", "like"). A copy of such an example was refused by
grounding and ended the turn without a call.

    .venv/bin/python reports/tune/described-copies-screen.py REPORT DATA_DIR SPLIT

REPORT is the full run's report it was screened on (``reports/tune/bfcl-full-499d430.json``);
prints the ids of SPLIT's questions found
(``reports/tune/described-copies-{tune,validate}-ids.txt``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, load_questions

EXAMPLES = re.compile(r"['\"]|e\.g\.|such as|for example|for instance|\blike\b", re.I)


def has_described_argument(question: BfclQuestion) -> bool:
    """Whether an offered function has a required string argument whose description gives
    examples."""
    for function in question.functions:
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required") or [])
        for name, spec in (parameters.get("properties") or {}).items():
            if (name in required and spec.get("type") == "string" and "enum" not in spec
                    and EXAMPLES.search(spec.get("description") or "")):
                return True
    return False


def main(report: Path, data_dir: str, split: str) -> None:
    questions = {q.id: q for category in CATEGORIES for q in load_questions(category, data_dir)}
    for row in json.loads(report.read_text())["questions"]:
        if (row["split"] == split and not row["calls"] and row["s"] >= 0.8
                and has_described_argument(questions[row["id"]])):
            print(row["id"])


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
