"""The questions of a part of the shared half whose tools take a string argument whose
description names a format of comma parts ("in the format of 'Street Address, City, State
(abbr), Country'"): those ``format_parts`` can touch. Prints their ids.

    .venv/bin/python reports/tune/format-parts-ids.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import re
import sys

from screening import requests

from callgate.eval.bfcl import question_registry

PARTS_FORMAT = re.compile(r"\bformat(?:ted)?\b[^'\"]{0,40}['\"]([^'\"]+,[^'\"]+)['\"]",
                          re.IGNORECASE)

for question, _ in requests(sys.argv[2], sys.argv[1]):
    if any(isinstance(spec, dict) and spec.get("type") == "string"
           and PARTS_FORMAT.search(str(spec.get("description") or ""))
           for tool in question_registry(question)
           for spec in (tool.schema.get("properties") or {}).values()):
        print(question.id)
