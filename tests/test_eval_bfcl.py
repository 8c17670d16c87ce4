"""The BFCL runner: its plumbing on scripted models, then a small slice on the real model."""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from callgate.cli import UserError, main
from callgate.eval.baselines import CreateAgentAnswerer, PlainPromptAnswerer, format_comparison
from callgate.eval.bfcl import (
    Attempt,
    BfclReport,
    CallgateAnswerer,
    QuestionResult,
    UnknownQuestionError,
    answer_question,
    diff_reports,
    evaluate,
    event_outcome,
    format_table,
    markdown_tables,
    prompt_groups,
    question_registry,
    strip_injected,
    worker_tasks,
)
from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, default_data_dir, load_questions
from callgate.eval.bfcl_stats import (
    Score,
    difference_interval,
    summary_rows,
    wilson,
    within_noise,
)
from callgate.eval.provenance import machine_note
from callgate.models.scripted import ScriptedChatModel, tool_call

HYPOT = {
    "name": "math.hypot",
    "description": "Euclidean norm sqrt(x*x + y*y).",
    "parameters": {
        "type": "dict",
        "properties": {
            "x": {"type": "integer", "description": "x coordinate"},
            "y": {"type": "integer", "description": "y coordinate"},
            "z": {"type": "integer", "description": "optional z coordinate", "default": 0},
        },
        "required": ["x", "y"],
    },
}
WEATHER = {
    "name": "get_weather",
    "description": "Weather in a city.",
    "parameters": {"type": "dict", "properties": {"city": {"type": "string"}},
                   "required": ["city"]},
}


def question(category: str, truth: list[dict[str, Any]] | None,
             functions: list[dict[str, Any]] | None = None) -> BfclQuestion:
    return BfclQuestion(id=f"{category}_0", category=category,
                        messages=[{"role": "user", "content": "Find the hypotenuse of 4 and 5."}],
                        functions=functions or [HYPOT], ground_truth=truth)


SIMPLE = question("simple_python", [{"math.hypot": {"x": [4], "y": [5], "z": ["", 0]}}])
PARALLEL = question("parallel", [{"math.hypot": {"x": [4], "y": [5], "z": ["", 0]}},
                                 {"math.hypot": {"x": [3], "y": [4], "z": ["", 0]}}])
IRRELEVANT = question("irrelevance", None)


LIVE_IRRELEVANT = question("live_irrelevance", None)
RELEVANT = question("live_relevance", None)
LIVE_PARALLEL = question("live_parallel", PARALLEL.ground_truth)


def native(*script: Any) -> CallgateAnswerer:
    """callgate's native path on a scripted chat model (deterministic replies, in order)."""
    return CallgateAnswerer(ScriptedChatModel(script=list(script)), tool_format="native")


def run(answerer: Any, q: BfclQuestion):
    # callgate's own checker: its reasons are asserted below (the official checker's
    # agreement is tests/test_bfcl_checker.py's business).
    return answer_question(answerer, q, checker="own")


# --- plumbing (scripted models, deterministic) ----------------------------------------------



def _error_line(capsys: pytest.CaptureFixture) -> str:
    """The one line a user error prints on stderr (``callgate.cli.main`` returned 2)."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]

def test_a_call_matching_the_ground_truth_scores_1() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), SIMPLE)
    assert result.ok and result.reason == "" and result.ok_executed
    # Safe name on the native path, mapped back; the injected default z=0 is not scored.
    assert result.calls == [{"math.hypot": {"x": 4, "y": 5}}] and result.outcomes == ["ok"]
    assert (result.attempted, result.invalid) == (1, 0)


def test_a_wrong_call_scores_0() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 6}), AIMessage("x")), SIMPLE)
    assert not result.ok and "'y'" in result.reason


def test_two_calls_on_a_simple_question_are_wrong() -> None:
    answerer = native(tool_call("math_hypot", {"x": 4, "y": 5}),
                      tool_call("math_hypot", {"x": 1, "y": 1}), AIMessage("x"))
    result = run(answerer, SIMPLE)
    assert not result.ok and result.reason == "expected exactly 1 call, got 2"
    assert result.calls == [{"math.hypot": {"x": 4, "y": 5}}, {"math.hypot": {"x": 1, "y": 1}}]
    assert result.ok_executed is False  # both ran: wrong in either figure
    assert answerer.model.replies_used == 2  # settled by the second call: the run stops there


def test_a_repeated_call_on_a_simple_question_is_wrong_strictly() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), SIMPLE)
    assert not result.ok and result.outcomes == ["ok", "repeat"] and result.repeats == 1
    # The repeat was answered from the first call's result: executed-only, one call.
    assert result.ok_executed is True


def test_parallel_calls_are_collected_across_steps() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 3, "y": 4}), AIMessage("5 and 5")),
                 PARALLEL)
    assert result.ok, result.reason
    assert result.calls == [{"math.hypot": {"x": 4, "y": 5}}, {"math.hypot": {"x": 3, "y": 4}}]


def test_parallel_calls_match_in_any_order() -> None:
    result = run(native(tool_call("math_hypot", {"x": 3, "y": 4}),
                        tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5 and 5")),
                 LIVE_PARALLEL)
    assert result.ok, result.reason


def test_parallel_missing_a_call_fails() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), PARALLEL)
    assert not result.ok and "expected 2 calls, got 1" in result.reason


def test_a_repeated_call_on_a_parallel_question_is_wrong() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 3, "y": 4}), AIMessage("done")), PARALLEL)
    assert not result.ok and result.reason == "expected 2 calls, got 3"
    assert result.outcomes == ["ok", "repeat", "ok"] and result.repeats == 1
    assert result.ok_executed is True  # labelled apart: repeats answered from cache dropped


@pytest.mark.parametrize("q", [IRRELEVANT, LIVE_IRRELEVANT], ids=lambda q: q.category)
def test_irrelevance_without_a_call_is_correct(q: BfclQuestion) -> None:
    result = run(native(AIMessage("I cannot help with that.")), q)
    assert result.ok and result.calls == [] and result.attempted == 0


@pytest.mark.parametrize("q", [IRRELEVANT, LIVE_IRRELEVANT], ids=lambda q: q.category)
def test_irrelevance_with_a_call_is_wrong(q: BfclQuestion) -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), q)
    assert not result.ok and result.reason == "expected no call, got 1"


def test_relevance_needs_at_least_one_call() -> None:
    assert run(native(tool_call("math_hypot", {"x": 9, "y": 9}), AIMessage("x")), RELEVANT).ok
    assert run(native(tool_call("math_hypot", {"x": 9, "y": 9}),
                      tool_call("math_hypot", {"x": 1, "y": 1}), AIMessage("x")), RELEVANT).ok
    missed = run(native(AIMessage("No tool needed.")), RELEVANT)
    assert not missed.ok and missed.reason == "expected a call, got none"


def test_a_refused_call_with_no_correction_left_still_counts() -> None:
    # Invalid (a string for an integer) twice: the correction round is spent, the loop
    # answers without running it. The model did call: wrong on an irrelevance question.
    result = run(native(tool_call("math_hypot", {"x": "4", "y": 5}),
                        tool_call("math_hypot", {"x": "4", "y": 5}), AIMessage("sorry")),
                 IRRELEVANT)
    assert not result.ok and result.outcomes == ["invalid"]
    assert result.calls == [{"math.hypot": {"x": "4", "y": 5}}]
    assert result.ok_executed is True  # nothing ran
    assert (result.attempted, result.invalid, result.corrections) == (2, 2, 1)
    # Why each was refused goes to the report with the question.
    assert len(result.invalid_errors) == 2
    assert all("'x'" in e and "string" in e for e in result.invalid_errors)


def test_invalid_calls_count_and_a_fixed_correction_is_seen() -> None:
    result = run(native(tool_call("math_hypot", {"x": "4", "y": 5}),
                        tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), SIMPLE)
    assert result.ok  # the call sent back for correction is replaced by the corrected one
    assert result.calls == [{"math.hypot": {"x": 4, "y": 5}}] and result.outcomes == ["ok"]
    assert (result.attempted, result.invalid, result.corrections, result.fixed) == (2, 1, 1, 1)


def test_outcomes_of_the_older_event_fields() -> None:
    assert event_outcome({"outcome": "ungrounded"}) == "ungrounded"
    assert event_outcome({"ok": True, "repeat_of": "R1"}) == "repeat"
    assert event_outcome({"ok": False, "skipped": True}) == "skipped"
    assert event_outcome({"ok": False, "timed_out": True}) == "timeout"
    assert event_outcome({"ok": False, "error": "boom"}) == "error"
    assert event_outcome({"ok": True}) == "ok"


def test_react_path_on_a_text_model() -> None:
    model = ScriptedChatModel(native_tools=False, script=[
        'Thought: use the tool\nAction: math_hypot\nAction Input: {"x": 4, "y": 5}',
        "Final Answer: 5"])
    answerer = CallgateAnswerer(model, tool_format="react", grammar=False)
    assert answerer.name == "callgate react, no grammar"
    result = run(answerer, SIMPLE)
    assert result.ok and result.calls == [{"math.hypot": {"x": 4, "y": 5}}]


@pytest.mark.llama
def test_the_report_hashes_the_prompt_the_options_give() -> None:
    # The bundled model, as the grammar needs llama.cpp; only the recorded settings are
    # read, nothing is decoded.
    def described(**options: Any) -> dict[str, Any]:
        return CallgateAnswerer("bundled", react_options=options).describe()["react"]

    default = described()
    assert default["terse_format"] is True
    assert default["prompt_sha1"] != described(terse_format=False)["prompt_sha1"]
    assert described(terse_format=False)["terse_format"] is False


def test_an_answerer_that_crashes_is_a_scored_miss() -> None:
    def broken(_: BfclQuestion):
        raise RuntimeError("boom")

    result = answer_question(broken, SIMPLE)
    assert not result.ok and result.error == "RuntimeError: boom"


def test_plain_prompt_baseline_scores_the_raw_parse() -> None:
    model = ScriptedChatModel(native_tools=False, script=[
        'Action: math_hypot\nAction Input: {"x": 4, "y": 5}'])
    result = run(PlainPromptAnswerer(model), SIMPLE)
    assert result.ok and (result.attempted, result.invalid) == (1, 0)
    request = model.requests[0]
    # The ReAct prompt lists the tool under its provider-safe name; scoring maps it back.
    assert "math_hypot" in request["messages"][0].content


def test_create_agent_baseline_collects_its_tool_calls() -> None:
    model = ScriptedChatModel(script=[tool_call("math_hypot", {"x": 4, "y": 5}),
                                      tool_call("math_hypot", {"x": 3, "y": 4}),
                                      AIMessage("done")])
    result = run(CreateAgentAnswerer(model), PARALLEL)
    assert result.ok and len(result.calls) == 2


def test_registry_and_injected_defaults() -> None:
    registry = question_registry(question("multiple", [], [HYPOT, WEATHER]))
    assert registry.names == ["math_hypot", "get_weather"]
    assert registry.get("math_hypot").runnable.invoke({"x": 1, "y": 2}) == "ok"
    assert strip_injected({"x": 1, "z": 0, "o": {"a": 1, "d": 2}},
                          {"x": 1, "o": {"a": 1}}) == {"x": 1, "o": {"a": 1}}


def test_report_figures_and_json(tmp_path: Path) -> None:
    answers = {"simple_python": tool_call("math_hypot", {"x": 4, "y": 5}),
               "irrelevance": AIMessage("no tool fits")}

    def reply(messages: list[Any]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):  # the call's result came back: answer
            return AIMessage("5")
        return answers[current["category"]]

    current: dict[str, str] = {}
    model = ScriptedChatModel(script=[reply], loop=True)
    answerer = CallgateAnswerer(model, tool_format="native")

    def answer(q: BfclQuestion):
        current["category"] = q.category
        return answerer(q)

    tune = replace(SIMPLE, split="tune")
    validate = replace(SIMPLE, id="simple_python_1", split="validate")
    irrelevant = replace(IRRELEVANT, split="tune")
    report = evaluate(answer, questions=[tune, irrelevant, validate], name="scripted",
                      checker="own")
    f = report.figures("simple_python")
    assert (f["questions"], f["accuracy"], f["valid_call_rate"]) == (2, 1.0, 1.0)
    assert f["ci95"] == [round(x, 4) for x in wilson(2, 2)]
    assert f["s_median"] > 0 and f["s_p90"] >= f["s_median"]
    assert report.figures("irrelevance")["valid_call_rate"] is None  # no call attempted
    assert report.figures()["accuracy"] == 1.0
    assert report.parts() == ["tune", "validate"]
    assert report.figures("simple_python", "validate")["questions"] == 1
    data = json.loads(report.write(tmp_path / "r.json").read_text())
    assert data["categories"]["simple_python"]["all"]["passed"] == 2
    assert data["categories"]["simple_python"]["tune"]["passed"] == 1
    assert data["categories"]["irrelevance"]["validate"]["questions"] == 0
    assert data["scoring"]["checker"] == "own"
    gap = data["tune_vs_validate"]["simple_python"]
    assert gap["difference"] == 0.0 and gap["within_noise"] is True
    # irrelevance ran on tune only: no difference to speak of.
    assert data["tune_vs_validate"]["irrelevance"]["difference"] is None
    rows = {row["name"]: row for row in data["summary"]["all"]}
    # Only two categories ran: BFCL's summary rows that need others are N/A (None).
    assert rows["non_live_ast"]["accuracy"] is None
    assert "multiple" in rows["non_live_ast"]["missing"]
    assert rows["overall"]["accuracy"] is None
    first = data["questions"][0]
    assert (first["id"], first["split"], first["ok"], first["outcomes"]) == (
        "simple_python_0", "tune", 1, ["ok"])
    assert "invalid" not in first  # only questions with refused invalid calls carry reasons
    table = format_table(report)
    assert "simple_python" in table and "BFCL summary" in table and "N/A" in table
    assert "validate %" in table and "+0.0 (noise)" in table


def test_questions_offering_the_same_functions_are_answered_one_after_another() -> None:
    # One model answering them in turn reads their shared tool list once (llama.cpp's KV
    # cache); the report keeps the questions' order.
    first = replace(SIMPLE, id="simple_python_0")
    weather = replace(SIMPLE, id="simple_python_1", functions=[WEATHER])
    again = replace(SIMPLE, id="simple_python_2")
    assert prompt_groups([first, weather, again]) == [[0, 2], [1]]
    assert prompt_groups([]) == []
    answered: list[str] = []

    def answerer(q: BfclQuestion) -> Attempt:
        answered.append(q.id)
        return Attempt(calls=[{"math.hypot": {"x": 4, "y": 5}}], outcomes=["ok"])

    progress: list[str] = []
    report = evaluate(answerer, questions=[first, weather, again],
                      progress=lambda r: progress.append(r.id))
    assert answered == progress == ["simple_python_0", "simple_python_2", "simple_python_1"]
    assert [r.id for r in report.results] == ["simple_python_0", "simple_python_1",
                                              "simple_python_2"]
    assert [r.ok for r in report.results] == [True, False, True]


def test_worker_tasks_keep_groups_whole_up_to_a_workers_share_largest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import callgate.eval.bfcl as bfcl

    weather = [replace(SIMPLE, id=f"simple_python_{n}", functions=[WEATHER]) for n in range(5)]
    hypot = [replace(SIMPLE, id=f"simple_python_{n}") for n in (5, 6)]
    questions = [hypot[0], *weather, hypot[1]]
    # Seven questions, two workers: a share is four; the five weather questions split.
    assert worker_tasks(questions, 2) == [[1, 2, 3, 4], [0, 6], [5]]
    assert worker_tasks(questions, 1) == [[1, 2, 3, 4, 5], [0, 6]]
    assert worker_tasks([], 2) == []
    # A worker answers its task's questions in turn, results in the task's order.
    answered: list[str] = []

    def answerer(q: BfclQuestion) -> Attempt:
        answered.append(q.id)
        return Attempt(calls=[{"math.hypot": {"x": 4, "y": 5}}], outcomes=["ok"])

    monkeypatch.setattr(bfcl, "_WORKER_ANSWERER", answerer)
    results = bfcl._answer_in_worker([hypot[1], hypot[0]])
    assert [r.id for r in results] == answered == ["simple_python_6", "simple_python_5"]
    assert all(r.ok for r in results)


def test_a_worker_that_dies_costs_only_its_own_questions() -> None:
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    import callgate.eval.bfcl as bfcl

    done: Future[list[Any]] = Future()
    done.set_result(["kept"])
    assert bfcl._task_results(done, [SIMPLE], "own") == ["kept"]
    dead: Future[list[Any]] = Future()
    dead.set_exception(BrokenProcessPool("a child process terminated abruptly"))
    [miss] = bfcl._task_results(dead, [SIMPLE], "own")
    assert (miss.id, miss.ok, miss.calls) == ("simple_python_0", False, [])
    assert "BrokenProcessPool" in (miss.error or "") and "worker" in miss.reason


def test_worker_processes_need_an_answerer_built_from_a_model_spec() -> None:
    with pytest.raises(ValueError, match="model spec"):
        evaluate(native(), questions=[SIMPLE, PARALLEL], jobs=2)


def test_comparison_table_lists_rows_that_could_not_run() -> None:
    from callgate.eval.baselines import Row

    report = evaluate(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")),
                      questions=[SIMPLE])
    text = format_comparison([Row("react", report), Row("native", why_not="no server")])
    assert "100.0" in text and "not run: no server" in text


# --- statistics and BFCL's summary rows ------------------------------------------------------


def test_wilson_intervals_against_hand_computed_values() -> None:
    # (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964, worked by hand.
    for (passed, total), (low, high) in {(5, 10): (0.236593, 0.763407),
                                         (0, 10): (0.0, 0.277534),
                                         (81, 100): (0.722211, 0.874853),
                                         (10, 10): (0.722466, 1.0)}.items():
        got = wilson(passed, total)
        assert got == pytest.approx((low, high), abs=2e-6), (passed, total)
    assert wilson(0, 0) == (0.0, 1.0)


def test_differences_inside_and_outside_the_noise() -> None:
    assert within_noise(Score(50, 100), Score(55, 100))
    assert within_noise(Score(48, 100), Score(35, 100))  # 13 points on 100 questions: noise
    assert not within_noise(Score(30, 100), Score(60, 100))
    assert not within_noise(Score(0, 10), Score(10, 10))
    low, high = difference_interval(Score(60, 100), Score(30, 100))
    assert 0 < low < 0.3 < high


def test_bfcl_summary_rows_weigh_as_bfcl_does() -> None:
    scores = {
        "simple_python": Score(50, 100), "multiple": Score(30, 50),
        "parallel": Score(20, 100), "parallel_multiple": Score(10, 100),
        "live_simple": Score(30, 100), "live_multiple": Score(100, 400),
        "live_parallel": Score(2, 8), "live_parallel_multiple": Score(3, 12),
        "irrelevance": Score(90, 120), "live_irrelevance": Score(200, 400),
        "live_relevance": Score(6, 8),
    }
    rows = {row.name: row for row in summary_rows(scores)}
    assert rows["non_live_ast"].accuracy == pytest.approx((0.5 + 0.6 + 0.2 + 0.1) / 4)
    # Live is pooled (weighted by question counts), not the mean of the four categories.
    assert rows["live"].accuracy == pytest.approx(135 / 520)
    assert rows["live"].ci95 == wilson(135, 520)
    assert rows["irrelevance"].accuracy == pytest.approx((0.75 + 0.5) / 2)
    assert rows["relevance"].accuracy == pytest.approx(0.75)
    assert rows["overall"].accuracy == pytest.approx((0.35 + 135 / 520 + 0.625) / 3)
    for row in rows.values():
        assert row.ci95 is not None and row.ci95[0] < row.accuracy < row.ci95[1]
    partial = {row.name: row for row in summary_rows(
        {k: v for k, v in scores.items() if k != "live_parallel"})}
    assert partial["live"].accuracy is None and partial["live"].missing == ("live_parallel",)
    assert partial["overall"].accuracy is None
    assert partial["non_live_ast"].accuracy == rows["non_live_ast"].accuracy


def _scripted_report(right: int, total: int, category: str = "simple_python"):
    """A report where the first ``right`` of ``total`` questions get the right call (a
    scripted model: the call, then an answer once the result is back)."""
    questions = [replace(SIMPLE, id=f"{category}_{n}", category=category,
                         split="tune" if n % 2 else "validate") for n in range(total)]

    def answer(q: BfclQuestion):
        n = int(q.id.rsplit("_", 1)[1])
        call = tool_call("math_hypot", {"x": 4, "y": 5 if n < right else 6})
        return native(call, AIMessage("done"))(q)

    return evaluate(answer, questions=questions, checker="own")


def test_diff_of_two_reports_says_what_is_noise(tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    before = _scripted_report(4, 20).write(tmp_path / "before.json")
    small = _scripted_report(6, 20).write(tmp_path / "small.json")
    large = _scripted_report(18, 20).write(tmp_path / "large.json")
    rows = diff_reports(*(json.loads(p.read_text()) for p in (before, small)))
    whole = next(d for d in rows if d.part == "all")
    assert (whole.before, whole.after) == (Score(4, 20), Score(6, 20))
    assert whole.difference == pytest.approx(0.1) and whole.within_noise
    assert {d.part for d in rows} == {"all", "tune", "validate"}
    assert main(["eval", "diff", str(before), str(large), "--part", "all"]) == 0
    printed = capsys.readouterr().out
    assert "+70.0" in printed and "REAL" in printed and "validate" not in printed
    assert main(["eval", "diff", str(before), str(tmp_path / "missing.json")]) == 2
    assert re.search("cannot read BFCL report", _error_line(capsys))


def test_a_report_records_its_machine_and_diff_says_when_machines_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Scripted model (not a real one). Greedy replies differ between machines (llama.cpp's
    # kernels follow the CPU), so a report names its machine and diff warns across two.
    report = _scripted_report(4, 20).to_dict()
    here = report["machine"]
    assert here["cpus"] == os.cpu_count() and here["cpu"]
    assert here["llama_cpp_python"] == metadata.version("llama-cpp-python")
    assert "CPU" in (here["llama_cpp_features"] or "")  # llama.cpp's "CPU : AVX = 1 | ..."
    other = {**report, "machine": {**here, "llama_cpp_features": "AVX = 1 | AVX2 = 1"}}
    older = {k: v for k, v in report.items() if k != "machine"}
    assert machine_note(report, dict(report)) is None
    assert "llama_cpp_features differ" in (machine_note(report, other) or "")
    assert "does not record its machine" in (machine_note(older, report) or "")
    for name, data in (("a", report), ("b", report), ("c", other)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    assert main(["eval", "diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert "machine" not in capsys.readouterr().out
    assert main(["eval", "diff", str(tmp_path / "a.json"), str(tmp_path / "c.json")]) == 0
    assert "different machines" in capsys.readouterr().out


def test_a_report_of_some_questions_is_compared_on_those(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    # Scripted model (not a real one): question n is right when n < right.
    full = _scripted_report(4, 20).to_dict()
    ids = ["simple_python_3", "simple_python_5", "simple_python_6", "simple_python_8"]
    questions = [replace(SIMPLE, id=i, category="simple_python",
                         split="tune" if int(i.rsplit("_", 1)[1]) % 2 else "validate")
                 for i in ids]

    def answer(q: BfclQuestion):  # 3 goes wrong, 5 and 6 go right, 8 stays wrong
        right = q.id in ("simple_python_5", "simple_python_6")
        call = tool_call("math_hypot", {"x": 4, "y": 5 if right else 6})
        return native(call, AIMessage("done"))(q)

    some = evaluate(answer, questions=questions, checker="own").to_dict()
    rows = {d.part: d for d in diff_reports(full, some)}
    assert rows["all"].before == Score(1, 4) and rows["all"].after == Score(2, 4)
    assert (rows["all"].up, rows["all"].down) == (2, 1)
    assert (rows["tune"].up, rows["tune"].down) == (1, 1)  # 3 and 5
    assert (rows["validate"].up, rows["validate"].down) == (1, 0)  # 6
    (tmp_path / "full.json").write_text(json.dumps(full))
    (tmp_path / "some.json").write_text(json.dumps(some))
    assert main(["eval", "diff", str(tmp_path / "full.json"), str(tmp_path / "some.json")]) == 0
    assert "2 / 1" in capsys.readouterr().out


def test_evaluate_answers_only_the_questions_named(tmp_path: Path) -> None:
    asked: list[str] = []

    def answer(q: BfclQuestion):
        asked.append(q.id)
        return native(AIMessage("no call"))(q)

    tune = [q.id for q in load_questions("simple_python", split="tune", limit=3)]
    report = evaluate(answer, categories=["simple_python"], split="tune", limit=3,
                      ids=tune[1:], checker="own")
    assert asked == tune[1:] and report.settings["ids"] == sorted(tune[1:])
    with pytest.raises(UnknownQuestionError, match="simple_python_nope"):
        evaluate(answer, categories=["simple_python"], split="tune", limit=3,
                 ids=["simple_python_nope"], checker="own")
    asked.clear()  # questions given and ids: the ids still choose among them
    given = load_questions("simple_python", split="tune", limit=3)
    report = evaluate(answer, questions=given, ids=tune[:1], checker="own")
    assert asked == tune[:1] and [r.id for r in report.results] == tune[:1]


def test_cli_names_an_unknown_question_id_in_one_line(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    assert main(["eval", "bfcl", "--model", "scripted", "--categories", "simple_python",
              "--ids", "nope", "--no-report", "--quiet"]) == 2
    assert re.search("no such BFCL question .*: nope$", _error_line(capsys))
    empty = tmp_path / "ids.txt"
    empty.write_text("\n")
    assert main(["eval", "bfcl", "--ids-file", str(empty), "--no-report"]) == 2
    assert re.search("named no question", _error_line(capsys))
    assert main(["eval", "bfcl", "--baselines", "--ids", "simple_python_0", "--no-report"]) == 2
    assert re.search("not for --baselines", _error_line(capsys))
    assert main(["eval", "bfcl", "--ids-file", str(tmp_path / "missing.txt"), "--no-report"]) == 2
    assert re.search("cannot read the question ids", _error_line(capsys))


def test_cli_rejects_an_unknown_split_and_category(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "bfcl", "--split", "train", "--no-report"])
    assert "invalid choice: 'train'" in capsys.readouterr().err
    assert main(["eval", "bfcl", "--categories", "live", "--no-report"]) == 2
    assert re.search("unknown BFCL category 'live'", _error_line(capsys))


# --- the real bundled model ------------------------------------------------------------------


@pytest.mark.llama
@pytest.mark.timeout(1500)  # 11 questions on the real model, some with several calls
def test_bfcl_slice_on_the_bundled_model(tmp_path: Path, capsys: pytest.CaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Two worker processes, each with its own copy of the model (--jobs) and one core:
    # conftest's two llama.cpp threads per model would oversubscribe the cores.
    monkeypatch.setenv("CALLGATE_N_THREADS", "1")
    path = tmp_path / "bfcl.json"
    assert main(["eval", "bfcl", "--limit", "1", "--report", str(path), "--quiet",
                 "--jobs", "2", "--split", "validate"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(path.read_text())
    assert set(data["categories"]) == set(CATEGORIES)
    for name, parts in data["categories"].items():
        figures = parts["all"]
        assert figures["questions"] == 1 == parts["validate"]["questions"], name
        assert 0.0 <= figures["accuracy"] <= 1.0
        assert figures["errors"] == 0
        assert figures["s_median"] > 0
        # Grammar-constrained decoding: every attempted call passes validation.
        assert figures["valid_call_rate"] in (None, 1.0), name
    assert data["all_questions"]["attempted_calls"] > 0
    assert data["settings"]["grammar"] is True and data["settings"]["tool_format"] == "react"
    assert data["settings"]["react"]["answer_tokens"] == 1  # BFCL scores calls, not answers
    assert data["settings"]["react"]["calls_only"] is True
    assert data["split"] == "validate" and "tune" not in data["summary"]
    assert [row["name"] for row in data["summary"]["all"]] == [
        "non_live_ast", "live", "irrelevance", "relevance", "overall"]
    assert data["summary"]["all"][-1]["accuracy"] is not None  # every category ran
    assert len(data["questions"]) == len(CATEGORIES)
    # Results keep the questions' order, whichever worker answered first.
    expected = [q.id for c in CATEGORIES
                for q in load_questions(c, default_data_dir(), 1, split="validate")]
    assert [row["id"] for row in data["questions"]] == expected
    assert all(row["split"] == "validate" for row in data["questions"])
    assert "all questions" in printed and "BFCL summary" in printed


def _calls_and_completions(question: BfclQuestion, monkeypatch: pytest.MonkeyPatch
                           ) -> dict[bool, tuple[list[dict[str, Any]], int]]:
    """The bundled model's calls for ``question`` and how many completions it decoded,
    with the answer left unwritten (``calls_only``, the harness's default) and written."""
    from callgate.models.llamacpp import ChatLlamaCppText

    completions: list[int] = []
    real = ChatLlamaCppText._completion

    def counted(self: ChatLlamaCppText, *args: Any) -> Any:
        completions.append(1)
        return real(self, *args)

    monkeypatch.setattr(ChatLlamaCppText, "_completion", counted)
    seen = {}
    for calls_only in (True, False):
        completions.clear()
        answerer = CallgateAnswerer("bundled", react_options={"calls_only": calls_only})
        seen[calls_only] = (answerer(question).calls, len(completions))
    return seen


@pytest.mark.llama
def test_the_harness_leaves_a_chosen_answer_unwritten_and_makes_the_same_calls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The real bundled model on a hand-written question: after its call's result it
    # chooses the answer, which the harness (reading calls only) does not decode.
    seen = _calls_and_completions(SIMPLE, monkeypatch)
    assert seen[True][0] == seen[False][0] == [{"math.hypot": {"x": 4, "y": 5}}]
    assert seen[True][1] == seen[False][1] - 1  # the answer's one token is not decoded


@pytest.mark.llama
def test_the_harness_decodes_nothing_where_no_tool_is_offered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The real bundled model on a hand-written question that shares no word with the tool:
    # the grammar offers only the answer, which the harness does not write, so the model
    # is not run at all; writing answers, it decodes one.
    unrelated = BfclQuestion(id="irrelevance_0", category="irrelevance",
                             messages=[{"role": "user", "content": "Who painted the Mona Lisa?"}],
                             functions=[HYPOT], ground_truth=None)
    seen = _calls_and_completions(unrelated, monkeypatch)
    assert seen[True] == ([], 0)
    assert seen[False][0] == [] and seen[False][1] >= 1


def test_react_options_from_the_command_line() -> None:
    from callgate.eval.cli import _react_options

    assert _react_options(["value_floor=-6", "spans=true", "preselect=null"]) == {
        "value_floor": -6, "spans": True, "preselect": None}
    with pytest.raises(UserError, match="value_floor"):  # the message lists the knobs
        _react_options(["no_such_knob=1"])
    with pytest.raises(UserError, match="NAME=VALUE"):
        _react_options(["value_floor"])


def test_a_run_of_some_questions_is_merged_into_a_full_run() -> None:
    from callgate.eval.bfcl import format_merged, merge_reports

    def q(qid: str, category: str, split: str, ok: bool) -> dict[str, object]:
        return {"id": qid, "category": category, "split": split, "ok": ok}

    base = {"questions": [q("irrelevance_0", "irrelevance", "tune", False),
                          q("irrelevance_2", "irrelevance", "validate", True),
                          q("simple_python_0", "simple_python", "tune", True)]}
    overlay = {"questions": [q("irrelevance_0", "irrelevance", "tune", True),
                             q("simple_python_0", "simple_python", "tune", False)]}
    scores = merge_reports(base, [overlay])
    assert (scores["all"]["irrelevance"].passed, scores["all"]["irrelevance"].total) == (2, 2)
    assert scores["tune"]["simple_python"].passed == 0
    assert scores["validate"]["irrelevance"].passed == 1
    assert merge_reports(base, [])["all"]["irrelevance"].passed == 1  # nothing put in
    assert "irrelevance" in format_merged(scores)
    with pytest.raises(ValueError, match="not in the base report"):
        merge_reports(base, [{"questions": [q("multiple_0", "multiple", "tune", True)]}])


def test_merge_on_the_command_line_says_what_is_wrong_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    base = tmp_path / "base.json"
    base.write_text(json.dumps({"questions": []}))
    done = subprocess.run([sys.executable, "-m", "callgate.cli", "eval", "merge", str(base),
                           str(tmp_path / "missing.json")], capture_output=True, text=True)
    assert done.returncode != 0 and "cannot read BFCL report" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_report_is_strict_json_with_an_infinite_option(tmp_path: Path) -> None:
    # ``--react-option value_floor=-Infinity``: Python's json would write -Infinity,
    # which jq and most JSON readers refuse.
    report = _scripted_report(1, 2)
    report.settings = {**report.settings, "react": {"value_floor": -math.inf}}

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(report.write(tmp_path / "r.json").read_text(), parse_constant=refuse)
    assert data["settings"]["react"]["value_floor"] == "-Infinity"


def _verdicts(category: str, part: str, passed: int, total: int) -> list[QuestionResult]:
    return [QuestionResult(id=f"{category}_{part}_{i}", category=category, ok=i < passed,
                           reason="" if i < passed else "expected no call, got 1", calls=[],
                           attempted=0, invalid=0, corrections=0, fixed=0, seconds=1.0,
                           split=part, ok_executed=i < passed)
            for i in range(total)]


def test_tables_print_figures_from_the_counts_not_from_rounded_fractions(
        tmp_path: Path) -> None:
    # 176 of 221 on tune, 175 of 221 on validate: a gap of 0.45 points, +0.5 rounded. The
    # report keeps 0.0045, and a table written from it said +0.4 (the README did).
    report = BfclReport("counts", {}, [*_verdicts("live_irrelevance", "tune", 176, 221),
                                       *_verdicts("live_irrelevance", "validate", 175, 221)])
    data = json.loads(report.write(tmp_path / "r.json").read_text())
    assert data["tune_vs_validate"]["live_irrelevance"]["difference"] == 0.0045
    assert "+0.5 (noise)" in format_table(report)
    tables = markdown_tables(data)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")
            for line in tables.splitlines() if line.startswith("| ")}
    low, high = wilson(351, 442)
    assert rows["live_irrelevance"][2] == f"79.4 [{100 * low:.1f}–{100 * high:.1f}]"
    assert rows["live_irrelevance"][3:6] == ["79.6 [73.8–84.4]", "79.2 [73.4–84.0]",
                                             "+0.5 (noise)"]
    assert rows["all"][1] == "442"
    # The calls, corrections and seconds are the report's own figures.
    assert rows["live_irrelevance"][7:] == ["-", "0/0", "1.00 / 1.00 |"]
    # BFCL's summary rows that need categories this run lacks are N/A, as BFCL shows them.
    assert rows["overall"][2:] == ["N/A", "N/A", "N/A", "N/A |"]


def test_tables_need_a_report_with_its_questions(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    report = BfclReport("counts", {}, _verdicts("irrelevance", "tune", 1, 2))
    with pytest.raises(ValueError, match="lists no questions"):
        markdown_tables(report.to_dict(details=False))
    # One split part only: no tune and validate columns.
    tables = markdown_tables(json.loads(report.write(tmp_path / "r.json").read_text()))
    assert "validate %" not in tables and "| irrelevance | 2 | 50.0 [" in tables
    assert main(["eval", "table", str(tmp_path / "r.json")]) == 0
    assert main(["eval", "table", str(tmp_path / "missing.json")]) == 2
    assert re.search("cannot read BFCL report .*missing.json", _error_line(capsys))
    (tmp_path / "short.json").write_text(json.dumps(report.to_dict(details=False)))
    assert main(["eval", "table", str(tmp_path / "short.json")]) == 2
    assert re.search("lists no questions", _error_line(capsys))
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    assert main(["eval", "table", str(tmp_path / "other.json")]) == 2
    assert re.search("not a report of 'callgate eval bfcl'", _error_line(capsys))
