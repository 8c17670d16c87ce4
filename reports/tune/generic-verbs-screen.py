"""Screen: the questions whose offered tools change when a generic verb of a tool's name
scores 2, not 3 (``generic-verbs.patch``), from the requests and tools alone. Usage: python
generic-verbs-screen.py tune|validate OUT_IDS (from the repository root, with ../shared
beside it); prints each changed offer and whether the expected tool is in it."""

import json
import sys
from collections import Counter
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import CATEGORIES, load_questions, safe_name
from callgate.tools import relevance
from callgate.tools.registry import Tool

GENERIC = {"find", "searc", "list", "retri", "fetch", "looku", "look", "query", "check",
           "calcu", "compu", "estim", "analy", "creat", "updat", "delet", "add", "remov",
           "set"}
SCORES = relevance.tool_scores


def verbs_scoring_two(tools: list[Tool], request: str) -> dict[str, float]:
    scores = SCORES(tools, request)
    asked = relevance._stems(request)
    for tool in tools:
        generic = relevance._stems(tool.name.replace(".", " ")) & GENERIC & asked
        scores[tool.name] -= len(generic)
    return scores


def offer(tools: list[Tool], request: str, scores) -> list[str]:
    relevance.tool_scores = scores
    try:
        return relevance.relevant_tools(tools, request, unmatched="none")
    finally:
        relevance.tool_scores = SCORES


def main(split: str, out: str) -> None:
    report = json.loads(Path("reports/bfcl-full.json").read_text(encoding="utf-8"))
    rows = {q["id"]: q for q in report["questions"]}
    counts: Counter[tuple[str, bool, bool, bool]] = Counter()
    ids = []
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir="../shared/data/bfcl"):
            tools = list(question_registry(question))
            request = [m for m in question.messages if m["role"] == "user"][-1]["content"]
            before = offer(tools, request, SCORES)
            after = offer(tools, request, verbs_scoring_two)
            if before == after:
                continue
            expected = {safe_name(name) for call in question.ground_truth or [] for name in call}
            ok = bool(rows[question.id]["ok"])
            counts[(category, ok, bool(expected & set(before)), bool(expected & set(after)))] += 1
            ids.append(question.id)
            print(category, question.id, ok, before, "->", after)
    for key, count in sorted(counts.items()):
        print("category, right, expected offered before, after:", key, count)
    Path(out).write_text("\n".join(ids) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
