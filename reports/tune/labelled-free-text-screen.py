"""Screen: a free-text string argument (``candidates.is_free_text``; not a date or a time)
takes the text the request labels with the argument's last name word, where that text
looks like a value (a digit or one of . / : \\ = _ -): "using the command start
https://...", "the start microsoft.windows.camera: command". Rescored on a full run's
recorded calls with callgate's checker. Usage, from the repository root with ../shared
beside it: python reports/tune/labelled-free-text-screen.py tune|validate [REPORT]"""

import copy
import json
import re
import sys
from pathlib import Path

from callgate.eval.bfcl_checker import check
from callgate.eval.bfcl_data import load_questions
from callgate.tools.candidates import is_free_text, name_words

CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
              "live_irrelevance", "live_relevance"]
VALUE_LIKE = re.compile(r"[./:\\=_0-9-]")
WHEN = {"date", "time", "datetime", "year", "day"}


def labelled(request: str, name: str) -> str | None:
    """The one value-like text the request labels with ``name``'s last word: after "the
    WORD" or "WORD:", or between "the" and WORD."""
    words = name_words(name)
    if not words or WHEN & set(words):
        return None
    label = re.escape(words[-1])
    after = re.finditer(rf"\b(?:the\s+{label}s?\s*:?|{label}s?\s*:)\s+(?P<x>[^\n,;]+?)\s*"
                        rf"(?=[.?!](?:\s|$)|[,;\n]|$)", request, re.IGNORECASE)
    before = re.finditer(rf"\bthe\s+(?P<x>\S+(?:\s+\S+){{0,3}}?)\s+{label}s?\b", request,
                         re.IGNORECASE)
    found = {m.group("x").strip(" '\"") for m in [*after, *before]
             if VALUE_LIKE.search(m.group("x"))}
    return found.pop() if len(found) == 1 else None


def main(split: str, report: str = "reports/bfcl-full.json") -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text(encoding="utf-8"))["questions"]}
    changed = up = down = 0
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir="../shared/data/bfcl"):
            calls = rows[question.id]["calls"]
            request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
            functions = {f["name"]: f for f in question.functions}
            new = copy.deepcopy(calls)
            for call in new:
                (tool, args), = call.items()
                properties = functions[tool]["parameters"]["properties"] if tool in functions \
                    else {}
                for name, value in args.items():
                    spec = properties.get(name) or {}
                    if spec.get("type") != "string" or "enum" in spec \
                            or not is_free_text(name, spec):
                        continue
                    if (text := labelled(request, name)) and text != value:
                        args[name] = text
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
