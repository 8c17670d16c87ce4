import json, re, sys
from callgate.eval.bfcl_data import load_questions
from callgate.tools.relevance import _stems
split = sys.argv[1]
r = json.load(open('/work/main/reports/bfcl-full.json'))
rows = {q['id']: q for q in r['questions']}
NUM = re.compile(r"(?<![\w.])\$?(-?\d+(?:,\d{3})*(?:\.\d+)?)(?![\d])")
STOP = {"of","is","are","was","the","a","an","at","to","be","with","and","its","it","=",":","about","around","approximately","for"}
def words(name):
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace(".", " ")
    return [w.lower() for w in name.split() if len(w) > 2]
def labelled(request, name):
    want = _stems(" ".join(words(name)))
    if not want: return []
    out = []
    for m in NUM.finditer(request):
        before = re.findall(r"[A-Za-z']+", request[max(0, m.start()-40):m.start()])
        before = [w for w in before if w.lower() not in STOP][-3:]
        got = _stems(" ".join(before))
        if want <= got:
            v = float(m.group(1).replace(",", ""))
            out.append(int(v) if v.is_integer() else v)
    return out
fix = brk = same = 0
for cat in ["simple_python", "multiple", "live_simple", "live_multiple"]:
    for q in load_questions(cat, split=split, data_dir="/work/shared/data/bfcl"):
        row = rows[q.id]
        if len(row['calls']) != 1 or len(q.ground_truth) != 1: continue
        (fn, args), = row['calls'][0].items()
        gfn, gargs = next(iter(q.ground_truth[0].items()))
        if fn != gfn: continue
        user = [m["content"] for m in q.messages if m["role"] == "user"][-1]
        for name, val in args.items():
            if isinstance(val, bool) or not isinstance(val, (int, float)): continue
            picks = set(labelled(user, name))
            if len(picks) != 1: continue
            pick = picks.pop()
            allowed = gargs.get(name, [])
            if pick == val: same += 1; continue
            good_now = val in allowed
            good_pick = pick in allowed
            tag = "FIX" if good_pick and not good_now else "BREAK" if good_now and not good_pick else "neither"
            fix += tag == "FIX"; brk += tag == "BREAK"
            print(tag, q.id, name, val, "->", pick, allowed, "|", user[:150])
print("fix", fix, "break", brk, "same", same)
