"""The BFCL runner: its plumbing on scripted models, then a small slice on the real model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from callgate.cli import main
from callgate.eval.baselines import CreateAgentAnswerer, PlainPromptAnswerer, format_comparison
from callgate.eval.bfcl import (
    CallgateAnswerer,
    answer_question,
    evaluate,
    format_table,
    question_registry,
    strip_injected,
)
from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, default_data_dir, load_questions
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


def native(*script: Any) -> CallgateAnswerer:
    return CallgateAnswerer(ScriptedChatModel(script=list(script)), tool_format="native")


def run(answerer: Any, q: BfclQuestion):
    return answer_question(answerer, q)


# --- plumbing (scripted models, deterministic) ----------------------------------------------


def test_a_call_matching_the_ground_truth_scores_1() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), SIMPLE)
    assert result.ok and result.reason == ""
    # Safe name on the native path, mapped back; the injected default z=0 is not scored.
    assert result.calls == [{"math.hypot": {"x": 4, "y": 5}}]
    assert (result.attempted, result.invalid) == (1, 0)


def test_a_wrong_call_scores_0() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 6}), AIMessage("x")), SIMPLE)
    assert not result.ok and "'y'" in result.reason


def test_only_the_first_call_counts_for_simple() -> None:
    answerer = native(tool_call("math_hypot", {"x": 1, "y": 1}),
                      tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("x"))
    result = run(answerer, SIMPLE)
    assert not result.ok and result.calls == [{"math.hypot": {"x": 1, "y": 1}}]
    assert answerer.model.replies_used == 1  # settled by the first call: the run stops there


def test_parallel_calls_are_collected_across_steps() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 3, "y": 4}), AIMessage("5 and 5")),
                 PARALLEL)
    assert result.ok, result.reason
    assert result.calls == [{"math.hypot": {"x": 4, "y": 5}}, {"math.hypot": {"x": 3, "y": 4}}]


def test_parallel_missing_a_call_fails() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), PARALLEL)
    assert not result.ok and "expected 2 calls, got 1" in result.reason


def test_an_exact_repeat_is_not_a_new_call_but_is_reported() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 4, "y": 5}),
                        tool_call("math_hypot", {"x": 3, "y": 4}), AIMessage("done")), PARALLEL)
    assert result.ok and result.repeats == 1
    assert result.ok_counting_repeats is False


def test_irrelevance_without_a_call_is_correct() -> None:
    result = run(native(AIMessage("I cannot help with that.")), IRRELEVANT)
    assert result.ok and result.calls == [] and result.attempted == 0


def test_irrelevance_with_a_call_is_wrong() -> None:
    result = run(native(tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), IRRELEVANT)
    assert not result.ok and result.reason == "expected no call, got 1"


def test_invalid_calls_count_and_a_fixed_correction_is_seen() -> None:
    result = run(native(tool_call("math_hypot", {"x": "4", "y": 5}),
                        tool_call("math_hypot", {"x": 4, "y": 5}), AIMessage("5")), SIMPLE)
    assert result.ok
    assert (result.attempted, result.invalid, result.corrections, result.fixed) == (2, 1, 1, 1)


def test_react_path_on_a_text_model() -> None:
    model = ScriptedChatModel(native_tools=False, script=[
        'Thought: use the tool\nAction: math.hypot\nAction Input: {"x": 4, "y": 5}',
        "Final Answer: 5"])
    answerer = CallgateAnswerer(model, tool_format="react", grammar=False)
    assert answerer.name == "callgate react, no grammar"
    result = run(answerer, SIMPLE)
    assert result.ok and result.calls == [{"math.hypot": {"x": 4, "y": 5}}]


def test_an_answerer_that_crashes_is_a_scored_miss() -> None:
    def broken(_: BfclQuestion):
        raise RuntimeError("boom")

    result = answer_question(broken, SIMPLE)
    assert not result.ok and result.error == "RuntimeError: boom"


def test_plain_prompt_baseline_scores_the_raw_parse() -> None:
    model = ScriptedChatModel(native_tools=False, script=[
        'Action: math.hypot\nAction Input: {"x": 4, "y": 5}'])
    result = run(PlainPromptAnswerer(model), SIMPLE)
    assert result.ok and (result.attempted, result.invalid) == (1, 0)
    request = model.requests[0]
    assert "math.hypot" in request["messages"][0].content  # the ReAct prompt lists the tool


def test_create_agent_baseline_collects_its_tool_calls() -> None:
    model = ScriptedChatModel(script=[tool_call("math_hypot", {"x": 4, "y": 5}),
                                      tool_call("math_hypot", {"x": 3, "y": 4}),
                                      AIMessage("done")])
    result = run(CreateAgentAnswerer(model), PARALLEL)
    assert result.ok and len(result.calls) == 2


def test_registry_and_injected_defaults() -> None:
    registry = question_registry(question("multiple", [], [HYPOT, WEATHER]), safe_names=True)
    assert registry.names == ["math_hypot", "get_weather"]
    assert registry.get("math_hypot").runnable.invoke({"x": 1, "y": 2}) == "ok"
    assert strip_injected({"x": 1, "z": 0, "o": {"a": 1, "d": 2}},
                          {"x": 1, "o": {"a": 1}}) == {"x": 1, "o": {"a": 1}}


def test_report_figures_and_json(tmp_path: Path) -> None:
    answers = {"simple_python": tool_call("math_hypot", {"x": 4, "y": 5}),
               "irrelevance": AIMessage("no tool fits")}

    def reply(messages: list[Any]) -> AIMessage:
        return answers[current["category"]]

    current: dict[str, str] = {}
    model = ScriptedChatModel(script=[reply], loop=True)
    answerer = CallgateAnswerer(model, tool_format="native")

    def answer(q: BfclQuestion):
        current["category"] = q.category
        return answerer(q)

    report = evaluate(answer, questions=[SIMPLE, IRRELEVANT, SIMPLE], name="scripted")
    f = report.figures("simple_python")
    assert (f["questions"], f["accuracy"], f["valid_call_rate"]) == (2, 1.0, 1.0)
    assert report.figures("irrelevance")["valid_call_rate"] is None  # no call attempted
    assert report.figures()["accuracy"] == 1.0
    data = json.loads(report.write(tmp_path / "r.json").read_text())
    assert data["categories"]["simple_python"]["passed"] == 2
    assert data["questions"][0][:2] == ["simple_python_0", 1]
    assert "simple_python" in format_table(report)


def test_worker_processes_need_an_answerer_built_from_a_model_spec() -> None:
    with pytest.raises(ValueError, match="model spec"):
        evaluate(native(), questions=[SIMPLE, PARALLEL], jobs=2)


def test_comparison_table_lists_rows_that_could_not_run() -> None:
    from callgate.eval.baselines import Row

    report = evaluate(native(tool_call("math_hypot", {"x": 4, "y": 5})), questions=[SIMPLE])
    text = format_comparison([Row("react", report), Row("native", why_not="no server")])
    assert "100.0" in text and "not run: no server" in text


# --- the real bundled model ------------------------------------------------------------------


@pytest.mark.llama
@pytest.mark.timeout(900)  # 12 questions on the real model, some with several calls
def test_bfcl_slice_on_the_bundled_model(tmp_path: Path, capsys: pytest.CaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Two worker processes, each with its own copy of the model (--jobs) and one core:
    # conftest's two llama.cpp threads per model would oversubscribe the cores.
    monkeypatch.setenv("CALLGATE_N_THREADS", "1")
    path = tmp_path / "bfcl.json"
    assert main(["eval", "bfcl", "--limit", "2", "--report", str(path), "--quiet",
                 "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(path.read_text())
    assert set(data["categories"]) == set(CATEGORIES)
    for name, figures in data["categories"].items():
        assert figures["questions"] == 2, name
        assert 0.0 <= figures["accuracy"] <= 1.0
        assert figures["errors"] == 0
        assert figures["s_per_question"] > 0
        # Grammar-constrained decoding: every attempted call passes validation.
        assert figures["valid_call_rate"] in (None, 1.0), name
    assert data["overall"]["attempted_calls"] > 0
    assert data["settings"]["grammar"] is True and data["settings"]["tool_format"] == "react"
    assert len(data["questions"]) == 12
    # Results keep the questions' order, whichever worker answered first.
    expected = [q.id for c in CATEGORIES for q in load_questions(c, default_data_dir(), 2)]
    assert [row[0] for row in data["questions"]] == expected
    assert "overall" in printed and "simple_python" in printed
