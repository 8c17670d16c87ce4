"""Grounding on a labelled set: legitimate paraphrases pass, invented values are caught.

``tests/data/grounding_paraphrases.jsonl`` (hand-written, not from BFCL): one call a line,
``{id, category, user, tool_results?, today?, schema, args, label, invented?, note?}``.
``label`` is ``"grounded"`` for a call whose values paraphrase the user (units,
abbreviations, dates, number words, case) and ``"invented"`` for one carrying values
that appear nowhere; ``invented`` names those argument paths. ``today`` anchors the
relative dates of a case (2026-11-23, a Monday) unless its message states a date.

The cases of category ``holdout`` were written after the rules were in place and measured
once before being kept (2 of 18 legitimate calls rejected, 8 of 8 invented caught).

Run with ``-s`` to see the rates. Measured before the paraphrase rules (commit ea5d57a):
78 of 101 legitimate calls falsely rejected (77.2%), 42 of 42 invented calls caught;
after: 3 of 101 (3.0%), 42 of 42.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from callgate.tools.grounding import conversation_text, ungrounded_args

SET = Path(__file__).parent / "data" / "grounding_paraphrases.jsonl"

# Legitimate calls that grounding still rejects, each for the reason in its note: the value
# needs knowledge the user did not write (company -> ticker, a nickname) or a conversion.
KNOWN_FALSE_REJECTIONS = {"abbr-ticker", "hold-philly", "hold-feet-inches"}
MAX_FALSE_REJECTION_RATE = 0.035  # measured: 3 of 101 (3.0%)
MIN_CATCH_RATE = 1.0  # measured: 42 of 42


class Case(TypedDict):
    id: str
    category: str
    user: str
    tool_results: NotRequired[list[str]]
    today: NotRequired[str]
    schema: dict[str, Any]
    args: dict[str, Any]
    label: Literal["grounded", "invented"]
    invented: NotRequired[list[str]]
    note: NotRequired[str]


@dataclass(frozen=True)
class Verdict:
    case: Case
    flagged: frozenset[str]  # argument paths grounding flagged


def load_cases() -> list[Case]:
    with SET.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def judge(case: Case) -> Verdict:
    results = case.get("tool_results", [])
    messages = [HumanMessage(case["user"])] + [
        ToolMessage(text, tool_call_id=f"c{n}") for n, text in enumerate(results)]
    today = date.fromisoformat(case["today"]) if "today" in case else None
    found = ungrounded_args(case["args"], case["schema"], conversation_text(messages), today=today)
    return Verdict(case, frozenset(path for path, _ in found))


def test_the_set_covers_what_it_claims() -> None:
    cases = load_cases()
    labels = Counter(c["label"] for c in cases)
    assert labels["grounded"] >= 50 and labels["invented"] >= 25
    assert len({c["id"] for c in cases}) == len(cases)
    legit_kinds = Counter(c["category"] for c in cases if c["label"] == "grounded")
    for kind in ("units", "abbreviations", "dates", "numbers", "case"):
        assert legit_kinds[kind] >= 8, kind
    for case in cases:
        paths = set(case.get("invented", []))
        assert (case["label"] == "invented") == bool(paths), case["id"]
        assert paths <= set(case["args"]), case["id"]


def test_false_rejection_and_catch_rates() -> None:
    verdicts = [judge(case) for case in load_cases()]
    legit = [v for v in verdicts if v.case["label"] == "grounded"]
    invented = [v for v in verdicts if v.case["label"] == "invented"]
    rejected = [v for v in legit if v.flagged]
    caught = [v for v in invented if v.flagged & set(v.case["invented"])]
    false_rate, catch_rate = len(rejected) / len(legit), len(caught) / len(invented)

    by_kind = Counter(v.case["category"] for v in legit)
    rejected_by_kind = Counter(v.case["category"] for v in rejected)
    print(f"\ngrounding set: {len(legit)} legitimate calls, {len(rejected)} falsely rejected "
          f"({false_rate:.1%}); {len(invented)} invented, {len(caught)} caught ({catch_rate:.1%})")
    for kind, n in sorted(by_kind.items()):
        print(f"  {kind:<14} {rejected_by_kind[kind]}/{n} rejected")
    for v in rejected:
        print(f"  rejected {v.case['id']}: {sorted(v.flagged)} ({v.case.get('note', '')})")

    assert false_rate <= MAX_FALSE_REJECTION_RATE, [v.case["id"] for v in rejected]
    assert {v.case["id"] for v in rejected} <= KNOWN_FALSE_REJECTIONS
    assert catch_rate >= MIN_CATCH_RATE, [v.case["id"] for v in invented if v not in caught]
    # and on an invented call, exactly the invented values are flagged
    wrong = {v.case["id"]: sorted(v.flagged) for v in invented
             if v.flagged != set(v.case["invented"])}
    assert not wrong


# --- the rules behind the rates, one at a time --------------------------------------------


def test_a_date_stated_in_the_conversation_wins_over_today() -> None:
    text = "Today is 2025-02-27. Book the room for tomorrow."
    assert ungrounded_args({"d": "2025-02-28"}, {}, text, today=date(2026, 11, 23)) == []
    assert ungrounded_args({"d": "2026-11-24"}, {}, text, today=date(2026, 11, 23)) == [
        ("d", "2026-11-24")]


def test_without_a_stated_date_today_is_the_real_date() -> None:
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    assert ungrounded_args({"d": tomorrow}, {}, "Book it for tomorrow") == []
    assert ungrounded_args({"d": "2001-01-02"}, {}, "Book it for tomorrow") == [
        ("d", "2001-01-02")]


def test_dates_and_times_need_words_that_name_them() -> None:
    monday = date(2026, 11, 23)
    assert ungrounded_args({"d": "2026-11-24"}, {}, "What's the weather?", today=monday) == [
        ("d", "2026-11-24")]
    assert ungrounded_args({"t": "15:30"}, {}, "at half past 3", today=monday) == []
    assert ungrounded_args({"t": "15:30"}, {}, "at 3", today=monday) == [("t", "15:30")]
    # a date-time at midnight is a date; any other time must be named
    assert ungrounded_args({"d": "2026-11-24T00:00:00"}, {}, "tomorrow", today=monday) == []
    assert ungrounded_args({"d": "2026-11-24T09:00"}, {}, "tomorrow", today=monday) == [
        ("d", "2026-11-24T09:00")]


@pytest.mark.parametrize(("text", "value"), [
    ("tell us about the weather", "United States"),  # "us" is a word, "US" the country
    ("visit la playa", "Los Angeles"),
    ("I'm in a meeting", "meters"),  # "m" counts only after a number
    ("a cat and a dog", 1),  # "a" alone is no number
])
def test_ambiguous_abbreviations_do_not_ground(text: str, value: Any) -> None:
    assert ungrounded_args({"x": value}, {}, text) == [("x", value)]


@pytest.mark.parametrize(("text", "value"), [
    ("weather in the US", "United States"), ("run 400m", "meters"), ("a dozen eggs", 12),
    ("我想在肯德基买10个", 10), ("我想在肯德基买10个", "肯德基"), ("hotels in Zurich", "Zürich"),
])
def test_paraphrases_ground(text: str, value: Any) -> None:
    assert ungrounded_args({"x": value}, {}, text) == []


# --- on BFCL's ground truth ---------------------------------------------------------------

BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple")
# Measured before the paraphrase rules (commit ea5d57a): 156 of 995 correct calls flagged
# (15.7%), 977 of 995 swapped calls flagged (98.2%); after: 121 (12.2%) and 978 (98.3%).
MAX_BFCL_FLAGGED = 0.13
# 0.98 before search queries and prompts became free text (grounding.FREE_TEXT): a call
# whose only value is a query can no longer be caught, by design (975 of 995 still are).
MIN_BFCL_SWAPPED_FLAGGED = 0.975


def test_bfcl_correct_calls_pass_and_calls_from_another_question_do_not() -> None:
    """Each ground-truth call of the vendored BFCL slice (its first allowed value per
    argument) against its own question, then against another question's: a proxy for an
    answer from nowhere. Most flagged correct calls need knowledge or a default the question
    does not state (``gravity=9.8``, ``species="Homo sapiens"``)."""
    from callgate.eval.bfcl_data import VENDORED_DIR, load_questions, to_json_schema

    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for category in BFCL_CATEGORIES:
        for question in load_questions(category, data_dir=VENDORED_DIR):
            text = "\n".join(m["content"] for m in question.messages if m["role"] == "user")
            functions = {f["name"]: f for f in question.functions}
            for call in question.ground_truth or []:
                ((name, allowed),) = call.items()
                args = {k: next(v for v in values if v != "") for k, values in allowed.items()
                        if any(v != "" for v in values)}
                calls.append((text, to_json_schema(functions[name]["parameters"]), args))
    flagged = sum(bool(ungrounded_args(args, schema, text)) for text, schema, args in calls)
    swapped = [(calls[(n + 97) % len(calls)][0], schema, args)
               for n, (text, schema, args) in enumerate(calls)
               if calls[(n + 97) % len(calls)][0] != text]
    caught = sum(bool(ungrounded_args(args, schema, other)) for other, schema, args in swapped)
    print(f"\nBFCL ground truth: {flagged}/{len(calls)} correct calls flagged "
          f"({flagged / len(calls):.1%}); {caught}/{len(swapped)} calls against another "
          f"question flagged ({caught / len(swapped):.1%})")
    assert len(calls) > 900
    assert flagged / len(calls) <= MAX_BFCL_FLAGGED
    assert caught / len(swapped) >= MIN_BFCL_SWAPPED_FLAGGED
