"""What the screen scripts of this folder share: the questions of a part of the shared half,
each with the user's latest request, and the rescoring of a full run's recorded calls. Run
a script from the repository root (``.venv/bin/python reports/tune/NAME.py ...``): this
folder is then on ``sys.path``."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_checker import check
from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, load_questions
from callgate.tools import relevance
from callgate.tools.asks import asks


def requests(split: str, data_dir: str) -> Iterator[tuple[BfclQuestion, str]]:
    """Every question of ``split`` (all eleven categories) whose latest user message is
    text, with that text."""
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir=data_dir):
            said = [m["content"] for m in question.messages if m["role"] == "user"]
            if said and isinstance(said[-1], str):
                yield question, said[-1]


Calls = list[dict[str, dict[str, Any]]]


StringRule = Callable[[str, str, dict[str, Any], str], "str | None"]


def rewrite_strings(rule: StringRule) -> Callable[[BfclQuestion, str, Calls], Calls]:
    """A ``rescore`` rewrite giving each string argument (no enum) of each recorded call the
    value ``rule(request, name, spec, value)`` returns, where it returns one."""

    def rewrite(question: BfclQuestion, request: str, calls: Calls) -> Calls:
        functions = {f["name"]: f for f in question.functions}
        for call in calls:
            (tool, args), = call.items()
            properties = functions[tool]["parameters"]["properties"] if tool in functions else {}
            for name, value in args.items():
                spec = properties.get(name) or {}
                if (spec.get("type") == "string" and "enum" not in spec
                        and isinstance(value, str)
                        and (new := rule(request, name, spec, value)) is not None):
                    args[name] = new
        return calls

    return rewrite


def rescore(split: str, rewrite: Callable[[BfclQuestion, str, Calls], Calls], *,
            report: str = "reports/bfcl-full.json", data_dir: str = "../shared/data/bfcl",
            categories: Iterable[str] = CATEGORIES) -> None:
    """Rewrite a full run's recorded calls of each question of ``split`` (``rewrite`` gets
    the question, its request and a copy of the calls), score the rewritten ones with
    callgate's checker, and print each changed reply and the tally: a screen of a rule on
    recorded calls, before any run."""
    rows = {q["id"]: q for q in json.loads(Path(report).read_text(encoding="utf-8"))["questions"]}
    wanted = set(categories)
    changed = up = down = 0
    for question, request in requests(split, data_dir):
        if question.category not in wanted:
            continue
        calls = rows[question.id]["calls"]
        new = rewrite(question, request, copy.deepcopy(calls))
        if new == calls:
            continue
        changed += 1
        was, now = check(question, calls).ok, check(question, new).ok
        up += now and not was
        down += was and not now
        print(question.id, "up" if now > was else "down" if was > now else "same")
    print(f"replies changed {changed}, up {up}, down {down}")


CALL_SCORE = 9.0  # ReactStrategy's call_score: a first choice forced to a call from here


def _offer(question: BfclQuestion, request: str) -> tuple:
    """What the ReAct path reads from the relevance score for ``request``: the tools first
    offered, the asks and their tools, and whether the first choice is forced to a call."""
    registry = question_registry(question)
    tools = list(registry)
    return (relevance.relevant_tools(tools, request, relevance.PRESELECT, unmatched="none"),
            [(ask.text, ask.tools) for ask in asks(registry, request, relevance.PRESELECT)],
            max(relevance.tool_scores(tools, request).values(), default=0.0) >= CALL_SCORE)


def offer_changes(split: str, data_dir: str, rule: Callable[[bool], None]) -> Iterator[str]:
    """The ids of the questions of ``split`` whose first offer of tools, asks or forced first
    choice differ with a relevance rule off and on (``rule(False)``, ``rule(True)`` set it):
    those the rule can touch."""
    for question, request in requests(split, data_dir):
        rule(False)
        before = _offer(question, request)
        rule(True)
        if _offer(question, request) != before:
            yield question.id
