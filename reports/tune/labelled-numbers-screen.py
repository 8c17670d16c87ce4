"""Screen: numbers labelled by their argument's name words ("a base of 12 meters" for
`base`), rescored on a full run's recorded calls. Usage: python labelled-numbers-screen.py
tune|validate (from the repository root, with ../shared beside it)."""

import json
import re
import sys
from pathlib import Path

from callgate.eval.bfcl_data import load_questions
from callgate.tools.relevance import _stems

NUMBER = re.compile(r"(?<![\w.])\$?(-?\d+(?:,\d{3})*(?:\.\d+)?)(?![\d])")
STOP = {"of", "is", "are", "was", "the", "a", "an", "at", "to", "be", "with", "and", "its",
        "it", "about", "around", "approximately", "for"}
CATEGORIES = ["simple_python", "multiple", "live_simple", "live_multiple"]


def name_words(name: str) -> list[str]:
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace(".", " ")
    return [w.lower() for w in name.split() if len(w) > 2]


def labelled(request: str, name: str) -> list[float]:
    """The numbers of ``request`` whose three words before them hold every word of
    ``name``."""
    want = _stems(" ".join(name_words(name)))
    if not want:
        return []
    out = []
    for match in NUMBER.finditer(request):
        before = re.findall(r"[A-Za-z']+", request[max(0, match.start() - 40):match.start()])
        label = [w for w in before if w.lower() not in STOP][-3:]
        if want <= _stems(" ".join(label)):
            out.append(float(match.group(1).replace(",", "")))
    return out


def main(split: str) -> None:
    report = json.loads(Path("reports/bfcl-full.json").read_text(encoding="utf-8"))
    rows = {q["id"]: q for q in report["questions"]}
    fixed = broken = same = 0
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir="../shared/data/bfcl"):
            row = rows[question.id]
            if len(row["calls"]) != 1 or len(question.ground_truth) != 1:
                continue
            (tool, args), = row["calls"][0].items()
            expected_tool, expected = next(iter(question.ground_truth[0].items()))
            if tool != expected_tool:
                continue
            request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
            for name, value in args.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    continue
                picks = set(labelled(request, name))
                if len(picks) != 1:
                    continue
                pick = picks.pop()
                if pick == value:
                    same += 1
                    continue
                allowed = expected.get(name, [])
                fixed += pick in allowed and value not in allowed
                broken += value in allowed and pick not in allowed
                print(question.id, name, value, "->", pick, allowed)
    print(f"fixed {fixed}, broken {broken}, already the labelled number {same}")


if __name__ == "__main__":
    main(sys.argv[1])
