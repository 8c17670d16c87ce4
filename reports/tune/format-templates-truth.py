"""Ground-truth values (the shared half's possible answers) that grounding's template rule
would refuse: a format template of the argument's description the question does not write."""
import json, glob
from callgate.tools.grounding import ungrounded_args
D = '/work/shared/data/bfcl/'
n = total = 0
for f in glob.glob(D + 'possible_answer/BFCL_v4_*.json'):
    qs = {json.loads(l)['id']: json.loads(l) for l in open(f.replace('possible_answer/', ''))}
    for l in open(f):
        a = json.loads(l); q = qs.get(a['id'])
        if not q: continue
        text = '\n'.join(m['content'] for t in q['question'] for m in t if m['role'] == 'user')
        fns = {fn['name']: fn for fn in q['function']}
        for call in a['ground_truth']:
            for name, args in call.items():
                fn = fns.get(name)
                if not fn: continue
                for arg, options in args.items():
                    for v in options:
                        if isinstance(v, str) and v:
                            total += 1
                            spec = {'type': 'object', 'properties': fn['parameters'].get('properties', {})}
                            from callgate.tools.grounding import _template_copy, _context
                            from datetime import date
                            s = spec['properties'].get(arg, {})
                            if _template_copy(v, s, _context(text, date.today())):
                                n += 1; print(a['id'], arg, repr(v))
print(n, 'of', total)
