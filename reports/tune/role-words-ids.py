"""The BFCL questions of a split part whose mentioned arguments the role words change: those
``role_words`` can touch. Usage: python reports/tune/role-words-ids.py DATA_DIR tune|validate
(prints the ids, one per line)."""

import sys

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import CATEGORIES, load_questions
from callgate.tools.relevance import mentioned_arguments

data_dir, split = sys.argv[1], sys.argv[2]
for category in CATEGORIES:
    for question in load_questions(category, split=split, data_dir=data_dir):
        request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
        if any(mentioned_arguments(tool.schema, request)
               != mentioned_arguments(tool.schema, request, roles=False)
               for tool in question_registry(question)):
            print(question.id)
