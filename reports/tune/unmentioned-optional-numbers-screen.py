import json, sys
from callgate.eval.bfcl_data import load_questions
from callgate.eval.bfcl_checker import check
from callgate.tools.relevance import mentioned_arguments
split = sys.argv[1]
r = json.load(open('/work/main/reports/bfcl-full.json'))
rows = {q['id']: q for q in r['questions']}
cats = ["simple_python","multiple","parallel","parallel_multiple","irrelevance","live_simple","live_multiple","live_parallel","live_parallel_multiple","live_irrelevance","live_relevance"]
up = down = touched = 0
for cat in cats:
    for q in load_questions(cat, split=split, data_dir="/work/shared/data/bfcl"):
        row = rows[q.id]
        if not row['calls']: continue
        user = [m["content"] for m in q.messages if m["role"] == "user"][-1]
        funcs = {f["name"]: f for f in q.functions}
        new = []
        changed = False
        for call in row['calls']:
            (name, args), = call.items()
            f = funcs.get(name)
            if not f: new.append(call); continue
            schema = f["parameters"]
            props = schema.get("properties", {}); req = set(schema.get("required", []))
            asked = set(mentioned_arguments(schema, user))
            keep = {}
            for k, v in args.items():
                spec = props.get(k, {})
                if (k not in req and k not in asked and isinstance(v, (int, float)) and not isinstance(v, bool)
                        and spec.get("type") in ("integer", "number", "float") and v != spec.get("default")):
                    changed = True; continue
                keep[k] = v
            new.append({name: keep})
        if not changed: continue
        touched += 1
        ok_new = check(q, new).ok if hasattr(check(q, new), 'ok') else check(q, new)[0]
        ok_old = row['ok']
        if ok_new != ok_old:
            tag = 'UP' if ok_new else 'DOWN'
            up += ok_new; down += not ok_new
            print(tag, q.id, json.dumps(row['calls'])[:200])
print(split, "touched", touched, "up", up, "down", down)
