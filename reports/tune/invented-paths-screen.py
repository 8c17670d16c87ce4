"""invented-paths-screen.py SPLIT: the recorded calls of ``reports/bfcl-full.json`` holding a
file path whose last part (the file or folder name) the conversation does not write
("/path/to/file.txt" for "Delete the file notes.txt"): such a call is refused by the
``invented_paths`` grounding rule. Prints each path-like value with the verdict, then the
rescore with those calls dropped (a refused call is no call)."""

import sys

from screening import rescore

from callgate.tools import grounding


def leaves(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)


def newly_refused(args, schema, context):
    """The values grounding refuses with the rule and not without it."""
    rule = grounding._invented_path
    with_rule = grounding.ungrounded_args(args, schema, context)
    grounding._invented_path = lambda value, ctx: False
    try:
        without = grounding.ungrounded_args(args, schema, context)
    finally:
        grounding._invented_path = rule
    return [value for found, value in with_rule if (found, value) not in without]


def rewrite(question, request, calls):
    # Only what the user wrote grounds a value (single-turn questions: no tool results).
    context = "\n".join(m["content"] for m in question.messages
                        if m["role"] == "user" and isinstance(m["content"], str))
    schemas = {f["name"]: f["parameters"] for f in question.functions}
    kept = []
    for call in calls:
        (tool, args), = call.items()
        paths = [v for v in leaves(args) if ("/" in v or "\\" in v)]
        refused = newly_refused(args, schemas.get(tool) or {}, context)
        for value in paths:
            print(f"  {question.id} {tool} {value!r}: {'REFUSED' if value in refused else 'ok'}")
        if not refused:
            kept.append(call)
    return kept


rescore(sys.argv[1], rewrite)
