"""The BFCL questions of a split part whose recorded calls (``reports/bfcl-full.json``, the
full run at dba6e23) hold a string the joined-words fix reads anew: one token of three
words or more joined by "_" or "-" (two of them with letters) whose words the conversation
does not write one after another ("chai_tea_snack_16_ounces_of_chai_tea"; where it lacks a
word, grounding read it as before and the fix changes nothing).
Usage, from the repository root:

    .venv/bin/python reports/tune/joined-words-screen.py ../shared/data/bfcl tune|validate

prints the ids, one per line (``reports/tune/joined-words-tune-ids.txt``; validate has none).
"""

import json
import re
import sys
from pathlib import Path

from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.grounding import fold

WORD = re.compile(r"[^\W_]+")
JOINED = re.compile(r"[^\W_]+(?:[_-][^\W_]+){2,}")


def scattered(value: str, text: str) -> bool:
    """Whether ``value`` is a joined token whose words ``text`` does not write as a run."""
    if not JOINED.fullmatch(value.strip()):
        return False
    if sum(bool(re.search(r"[^\W\d_]", part)) for part in re.split(r"[_-]", value)) < 2:
        return False
    words, said = WORD.findall(fold(value)), WORD.findall(fold(text))
    run = any(said[i:i + len(words)] == words for i in range(len(said) - len(words) + 1))
    return not run


data_dir, split = sys.argv[1], sys.argv[2]
report = json.loads(Path("reports/bfcl-full.json").read_text(encoding="utf-8"))
calls = {row["id"]: row["calls"] for row in report["questions"]}
for category in CATEGORIES:
    for question in load_questions(category, split=split, data_dir=data_dir):
        text = "\n".join(m["content"] for m in question.messages)
        if any(isinstance(value, str) and scattered(value, text)
               for call in calls[question.id] for args in call.values()
               for value in args.values()):
            print(question.id)
