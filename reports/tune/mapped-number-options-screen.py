"""Screen: an optional number argument whose description maps numbers to words ("1 for
Bangkok, 2 for Chiang Mai") takes the number of the one word the request names, and is
left out where the request names none of them and does not write its value. Rescored on a
full run's recorded calls with callgate's checker. Usage, from the repository root with
../shared beside it: python reports/tune/mapped-number-options-screen.py tune|validate"""

import re
import sys

from screening import Calls, rescore

from callgate.eval.bfcl_data import BfclQuestion

MAPPED = re.compile(r"\b(\d+)\s*(?:for|=|:|means|is|represents)\s+([A-Z][\w ]*?|'[^']+'|"
                    r"\"[^\"]+\")(?=[,.;)]|\s+(?:and|or)\b|$)")


def mapping(description: str | None) -> dict[str, int]:
    return {m.group(2).strip("'\" "): int(m.group(1)) for m in MAPPED.finditer(description or "")}


def rewrite(question: BfclQuestion, request: str, calls: Calls) -> Calls:
    functions = {f["name"]: f for f in question.functions}
    for call in calls:
        (tool, args), = call.items()
        if tool not in functions:
            continue
        parameters = functions[tool]["parameters"]
        required = set(parameters.get("required") or [])
        for name in list(args):
            spec = parameters["properties"].get(name) or {}
            if (name in required or spec.get("type") not in ("integer", "number")
                    or isinstance(args[name], bool)):
                continue
            words = mapping(spec.get("description"))
            if len(words) < 2:
                continue
            named = {n for word, n in words.items()
                     if re.search(rf"(?i)\b{re.escape(word)}\b", request)}
            if not named and not re.search(rf"(?<![\d.]){args[name]}(?![\d.])", request):
                del args[name]
            elif len(named) == 1:
                args[name] = named.pop()
    return calls


if __name__ == "__main__":
    rescore(sys.argv[1], rewrite)
