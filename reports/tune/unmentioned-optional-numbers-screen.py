"""Screen: optional number arguments the request does not mention, left out of a full
run's recorded calls and rescored. Usage: python unmentioned-optional-numbers-screen.py
tune|validate (from the repository root, with ../shared beside it)."""

import json
import sys
from pathlib import Path
from typing import Any

from callgate.eval.bfcl_checker import check
from callgate.eval.bfcl_data import load_questions
from callgate.tools.relevance import mentioned_arguments

CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
              "live_irrelevance", "live_relevance"]
NUMBER_TYPES = ("integer", "number", "float")


def unmentioned(name: str, value: Any, schema: dict[str, Any], asked: set[str]) -> bool:
    spec = (schema.get("properties") or {}).get(name) or {}
    return (name not in set(schema.get("required") or []) and name not in asked
            and isinstance(value, int | float) and not isinstance(value, bool)
            and spec.get("type") in NUMBER_TYPES and value != spec.get("default"))


def main(split: str) -> None:
    report = json.loads(Path("reports/bfcl-full.json").read_text(encoding="utf-8"))
    rows = {q["id"]: q for q in report["questions"]}
    touched = up = down = 0
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir="../shared/data/bfcl"):
            row = rows[question.id]
            request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
            schemas = {f["name"]: f["parameters"] for f in question.functions}
            calls = []
            for call in row["calls"]:
                (tool, args), = call.items()
                schema = schemas.get(tool)
                if schema is None:
                    calls.append(call)
                    continue
                asked = set(mentioned_arguments(schema, request))
                calls.append({tool: {k: v for k, v in args.items()
                                     if not unmentioned(k, v, schema, asked)}})
            if calls == row["calls"]:
                continue
            touched += 1
            ok = check(question, calls).ok
            if ok != row["ok"]:
                up += ok
                down += not ok
                print("UP" if ok else "DOWN", question.id, json.dumps(row["calls"])[:200])
    print(f"{split}: {touched} replies touched, {up} up, {down} down")


if __name__ == "__main__":
    main(sys.argv[1])
