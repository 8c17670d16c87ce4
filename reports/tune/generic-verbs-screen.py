import json, sys, collections
from callgate.eval.bfcl_data import load_questions
from callgate.eval.bfcl import question_registry
from callgate.tools import relevance as rel
split = sys.argv[1]
W = 2.0
VERBS = set(sys.argv[2].split(','))
r = json.load(open('/work/main/reports/bfcl-full.json'))
rows = {(q['category'], q['id']): q for q in r['questions'] if q['split'] == split}
orig = rel.tool_scores
def new_scores(tools, request):
    s = orig(tools, request)
    asked = rel._stems(request)
    out = {}
    for t in tools:
        name = rel._stems(t.name.replace('.', ' '))
        generic = {w for w in name if w in VERBS} & asked
        # name words score 3, generic verbs 1 (as a description's word) unless the description has it too
        desc = rel._stems(t.description)
        out[t.name] = s[t.name] - 3 * len(generic) + sum(W for w in generic)
    return out
cats = ['simple_python','multiple','parallel','parallel_multiple','irrelevance','live_simple','live_multiple','live_parallel','live_parallel_multiple','live_irrelevance','live_relevance']
tot = collections.Counter(); ids = []
for cat in cats:
    for q in load_questions(cat, split=split, data_dir='/work/shared/data/bfcl'):
        reg = question_registry(q)
        req = [m for m in q.messages if m['role'] == 'user'][-1]['content']
        rel.tool_scores = orig
        a = rel.relevant_tools(list(reg), req, unmatched='none')
        rel.tool_scores = new_scores
        b = rel.relevant_tools(list(reg), req, unmatched='none')
        rel.tool_scores = orig
        if a != b:
            row = rows[(cat, q.id)]
            gt = {k for c in (q.ground_truth or []) for k in c} 
            from callgate.eval.bfcl_data import safe_name
            gt = {safe_name(k) for k in gt}
            tot[(cat, bool(row['ok']), 'gt-in-a' if gt & set(a) else '-', 'gt-in-b' if gt & set(b) else '-')] += 1
            ids.append(q.id)
            if len(sys.argv) > 3: print(cat, q.id, row['ok'], a, '->', b, gt)
for k, v in sorted(tot.items()): print(k, v)
open(f'/tmp/cg/verbs-{split}-ids.txt', 'w').write('\n'.join(ids) + '\n')
print(len(ids))
