"""The questions ``formula_numbers`` can touch (README, the row "formula_numbers"): the
request writes a formula (a run of formula characters holding a lone lowercase letter, an
operator of ``^ * + =`` and a digit: "2x^2", "'5y^3 - 4y + 2'") and a tool of the question
has a number argument. A superset: the rule acts only where a call's string argument holds
such a formula as the request writes it.

    .venv/bin/python reports/tune/formula-numbers-screen.py SPLIT IDS_OUT DATA_DIR

From the requests and the tools' schemas alone; writes the ids to IDS_OUT, one a line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from screening import requests

from callgate.eval.bfcl import question_registry

_RUN = re.compile(r"[\w.^*+/=()\- ]*[\^*+=][\w.^*+/=()\- ]*")
_VARIABLE = re.compile(r"(?<![^\W\d_])[a-z](?![^\W\d_])")


def main(split: str, ids_out: str, data_dir: str) -> None:
    found = []
    for question, request in requests(split, data_dir):
        formulas = [m.group().strip() for m in _RUN.finditer(request)
                    if _VARIABLE.search(m.group()) and re.search(r"\d", m.group())]
        numbers = any(spec.get("type") in ("integer", "number")
                      for tool in question_registry(question)
                      for spec in (tool.schema.get("properties") or {}).values()
                      if isinstance(spec, dict))
        if formulas and numbers:
            found.append(question.id)
            print(question.id, formulas[:3])
    Path(ids_out).write_text("".join(f"{qid}\n" for qid in found))
    print(len(found), "questions")


if __name__ == "__main__":
    main(*sys.argv[1:4])
