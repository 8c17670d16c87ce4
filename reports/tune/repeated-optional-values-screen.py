"""Screen: an optional string argument (no enum, not its default) holding the value of a
required or earlier argument of the same call left out ("MetaTitle" and "MetaDescription"
copying "Title": "Julian is testing"), rescored on a full run's recorded calls with
callgate's checker. Usage, from the repository root with ../shared beside it:
python reports/tune/repeated-optional-values-screen.py tune|validate [REPORT]"""

import copy
import json
import sys
from pathlib import Path

from callgate.eval.bfcl_checker import check
from callgate.eval.bfcl_data import load_questions

CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
              "live_irrelevance", "live_relevance"]


def without_repeats(args: dict, function: dict) -> dict:
    """``args`` less the optional strings that repeat a value written before them or in a
    required argument."""
    parameters = function["parameters"]
    required = set(parameters.get("required") or [])
    names = list(args)
    out = dict(args)
    for position, name in enumerate(names):
        value, spec = args[name], parameters["properties"].get(name) or {}
        if (name in required or not isinstance(value, str) or not value or "enum" in spec
                or value == spec.get("default")):
            continue
        if any(other != name and args[other] == value
               and (other in required or names.index(other) < position) for other in names):
            del out[name]
    return out


def main(split: str, report: str = "reports/bfcl-full.json") -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text(encoding="utf-8"))["questions"]}
    changed = up = down = 0
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir="../shared/data/bfcl"):
            calls = rows[question.id]["calls"]
            functions = {f["name"]: f for f in question.functions}
            new = copy.deepcopy(calls)
            for call in new:
                (tool, args), = call.items()
                if tool in functions:
                    call[tool] = without_repeats(args, functions[tool])
            if new == calls:
                continue
            changed += 1
            was, now = check(question, calls).ok, check(question, new).ok
            up += now and not was
            down += was and not now
            print(question.id, "up" if now > was else "down" if was > now else "same")
    print(f"replies changed {changed}, up {up}, down {down}")


if __name__ == "__main__":
    main(*sys.argv[1:])
