"""The BFCL questions of a split part the described-members rule can touch: an offered
function has a required string enum argument whose members the request names neither
whole (``named_members``) nor by a word of their own (``word_named_members``), and whose
description tells one member from the others by a word the request writes
(``described_members``). Usage:

    .venv/bin/python reports/tune/described-members-screen.py ../shared/data/bfcl tune|validate

prints the ids, one per line (``reports/tune/described-members-{tune,validate}-ids.txt``).
"""

import sys

from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.relevance import described_members, named_members, word_named_members

data_dir, split = sys.argv[1], sys.argv[2]
for category in CATEGORIES:
    for question in load_questions(category, split=split, data_dir=data_dir):
        request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
        for function in question.functions:
            parameters = function.get("parameters") or {}
            required = set(parameters.get("required") or [])
            touched = False
            for name, spec in (parameters.get("properties") or {}).items():
                members = spec.get("enum") if isinstance(spec, dict) else None
                if (name in required and isinstance(members, list)
                        and not named_members(members, request)
                        and not word_named_members(members, request)
                        and described_members(members, spec.get("description") or "", request)):
                    touched = True
            if touched:
                print(question.id)
                break
