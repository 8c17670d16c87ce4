"""Screen: an optional string argument (no enum, not its default) holding the value of a
required or earlier argument of the same call left out ("MetaTitle" and "MetaDescription"
copying "Title": "Julian is testing"), rescored on a full run's recorded calls with
callgate's checker. Usage, from the repository root with ../shared beside it:
python reports/tune/repeated-optional-values-screen.py tune|validate"""

import sys
from typing import Any

from screening import Calls, rescore

from callgate.eval.bfcl_data import BfclQuestion


def without_repeats(args: dict[str, Any], function: dict[str, Any]) -> dict[str, Any]:
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


def rewrite(question: BfclQuestion, request: str, calls: Calls) -> Calls:
    functions = {f["name"]: f for f in question.functions}
    return [{tool: without_repeats(args, functions[tool]) if tool in functions else args}
            for call in calls for tool, args in call.items()]


if __name__ == "__main__":
    rescore(sys.argv[1], rewrite)
