"""Recorded call values equal to a format template their argument's description quotes
("in the format 'track:Song Name artist:Artist Name'"), which the conversation does not write."""
import json, re, glob
rep = json.load(open('reports/bfcl-full.json'))
D = '/work/shared/data/bfcl/'
qs = {}
for f in glob.glob(D + 'BFCL_v4_*.json'):
    for l in open(f):
        d = json.loads(l); qs[d['id']] = d
TEMPLATE = re.compile(r"(?i)\b(?:format(?:ted)?|in the form)\b(?:\s+(?:of|as|like|is))*\s*:?\s*(['\"])(.+?)\1")
def walk(v, spec, out, path):
    if isinstance(v, str):
        desc = (spec or {}).get('description') or ''
        temps = [m.group(2) for m in TEMPLATE.finditer(desc)]
        out.append((path, v, temps))
    elif isinstance(v, dict):
        props = (spec or {}).get('properties') or {}
        for k, x in v.items(): walk(x, props.get(k), out, f'{path}.{k}')
    elif isinstance(v, list):
        for i, x in enumerate(v): walk(x, (spec or {}).get('items'), out, f'{path}[{i}]')
n = 0
for q in rep['questions']:
    d = qs[q['id']]
    text = '\n'.join(m['content'] for t in d['question'] for m in t if m['role'] == 'user').lower()
    fns = {}
    for f in d['function']:
        fns[f['name']] = f; fns[f['name'].replace('.', '_')] = f
    hits = []
    for call in q['calls']:
        for name, args in call.items():
            fn = fns.get(name)
            if not fn: continue
            out = []
            walk(args, fn['parameters'], out, '')
            for path, v, temps in out:
                if v.strip() in temps and v.strip().lower() not in text:
                    hits.append((path, v))
    if hits:
        n += 1
        print(q['id'], q['split'], 'ok' if q['ok'] else 'MISS', hits[:3])
print(n)
