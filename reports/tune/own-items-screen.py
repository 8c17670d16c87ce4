import json, sys
from callgate.eval.bfcl_data import load_questions, CATEGORIES, safe_name
from callgate.eval.bfcl import question_registry
from callgate.tools.asks import asks, items_left
from callgate.tools.relevance import PRESELECT, as_arithmetic
rows={q["id"]:q for q in json.load(open(sys.argv[1]))["questions"]}
split=sys.argv[2]; ids=[]
for c in CATEGORIES:
    for q in load_questions(c, split=split, data_dir="/work/shared/data/bfcl"):
        r=rows[q.id]
        if not r["calls"]: continue
        reg=question_registry(q)
        req=as_arithmetic([m["content"] for m in q.messages if m["role"]=="user"][-1])
        plan=asks(list(reg), req, PRESELECT)
        if len(plan)<2: continue
        calls=[(safe_name(n),a) for call in r["calls"] for n,a in call.items()]
        remaining=list(plan)
        for name,_ in calls:
            s=next((a for a in remaining if name in a.tools),None)
            if s: remaining.remove(s)
        called={n for n,_ in calls}; args=[a for _,a in calls]
        closed=[a for a in remaining if not a.again and (called & set(a.tools)) and not items_left(a.text,args)]
        own=[a for a in closed if items_left(a.text,[])]
        if own:
            ids.append(q.id)
            if split=="tune": print(q.id, r["ok"], [a.text[:80] for a in own], items_left(own[0].text,[]))
print(len(ids))
open(f"/tmp/cg/askown-{split}-ids.txt","w").write("\n".join(ids)+"\n")
