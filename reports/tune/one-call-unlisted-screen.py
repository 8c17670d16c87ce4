import json, sys
from callgate.eval.bfcl_data import load_questions, CATEGORIES
from callgate.eval.bfcl import question_registry
from callgate.tools.asks import asks, listed_items, list_items_left
from callgate.tools.grounding import numbers_in
from callgate.tools.relevance import PRESELECT
r = json.load(open('/work/main/reports/bfcl-full.json'))
rows = {q['id']: q for q in r['questions']}
split = sys.argv[1]; out = open(sys.argv[2], 'w')
n = 0
for cat in CATEGORIES:
    if cat in ('irrelevance', 'live_irrelevance', 'live_relevance'): continue
    for q in load_questions(cat, split=split, data_dir="/work/shared/data/bfcl"):
        row = rows[q.id]
        if len(row['calls']) < 2: continue
        user = [m["content"] for m in q.messages if m["role"] == "user"][-1]
        if numbers_in(user): continue
        first = [next(iter(row['calls'][0].values()))]
        if list_items_left(listed_items(user), first) is not None: continue
        if len(asks(list(question_registry(q)), user, PRESELECT)) > 1: continue
        n += 1
        print(q.id, file=out)
        print(q.id, row['ok'], json.dumps(row['calls'])[:200], '|', user[:100].replace('\n', ' '))
print(n)
