"""The robustness benchmark over model-output corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callgate.cli import main
from callgate.eval.outputs import (
    PACKAGED_CORPUS,
    default_corpus,
    find_leaks,
    format_outputs,
    load_corpus,
    run_outputs,
)


def test_packaged_corpus_all_pass_and_nothing_leaks() -> None:
    report = run_outputs(PACKAGED_CORPUS)
    assert len(report.results) >= 28
    assert report.passed == len(report.results), format_outputs(report)
    assert report.leaks == 0 and report.ok
    kinds = report.per_kind()
    assert set(kinds) == {"tool_calls", "final", "invalid"}
    assert all(k["pass_rate"] == 1.0 for k in kinds.values())


def test_cli_on_the_packaged_corpus(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out = tmp_path / "outputs.json"
    assert main(["eval", "outputs", str(PACKAGED_CORPUS), "--report", str(out)]) == 0
    assert "leaked markers in user-facing text: 0" in capsys.readouterr().out
    assert json.loads(out.read_text())["leaked_markers"] == 0


def test_cli_without_a_file_reads_the_packaged_corpus(capsys: pytest.CaptureFixture,
                                                       tmp_path: Path) -> None:
    out = tmp_path / "outputs.json"
    assert main(["eval", "outputs", "--report", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["corpus"] == str(PACKAGED_CORPUS)
    assert report["cases"] == report["passed"] == len(load_corpus(PACKAGED_CORPUS))
    assert f"corpus: {PACKAGED_CORPUS}" in capsys.readouterr().out


def test_shared_data_variable_names_a_larger_corpus(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    assert default_corpus() == PACKAGED_CORPUS
    monkeypatch.setenv("CALLGATE_SHARED_DATA", str(tmp_path))
    assert default_corpus() == tmp_path / "model-outputs" / "dev.jsonl"
    assert main(["eval", "outputs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: corpus not found:") and err.count("\n") == 1


@pytest.mark.shared_data
def test_packaged_corpus_is_the_shared_corpus(shared_data: Path) -> None:
    shared = shared_data / "model-outputs" / "dev.jsonl"
    assert PACKAGED_CORPUS.read_bytes() == shared.read_bytes()


def write(tmp_path: Path, cases: list[dict]) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return path


def test_a_wrong_expectation_is_reported_as_a_failure(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    path = write(tmp_path, [
        {"id": "right", "output": 'Action: web_search\nAction Input: {"query": "x"}',
         "expect": {"kind": "tool_calls", "calls": [{"name": "web_search",
                                                     "args": {"query": "x"}}]}},
        {"id": "wrong-args", "output": 'Action: web_search\nAction Input: {"query": "x"}',
         "expect": {"kind": "tool_calls", "calls": [{"name": "web_search",
                                                     "args": {"query": "y"}}]}},
        {"id": "wrong-kind", "output": "Final Answer: Paris",
         "expect": {"kind": "invalid"}},
    ])
    report = run_outputs(path)
    assert report.passed == 1 and not report.ok
    failed = {r.id: r.why for r in report.results if not r.passed}
    assert set(failed) == {"wrong-args", "wrong-kind"}
    assert "expected invalid, got final" in failed["wrong-kind"]
    assert report.per_kind()["tool_calls"] == {"cases": 2, "passed": 1, "pass_rate": 0.5}
    assert main(["eval", "outputs", str(path)]) == 1
    assert "FAIL wrong-args" in capsys.readouterr().out


def test_leaks_are_found_in_text() -> None:
    assert find_leaks("Paris.") == []
    assert find_leaks("<tool_call>{}</tool_call>\nAction: x") == ["<tool_call>", "</tool_call>",
                                                                 "Action:"]
    assert find_leaks("ok<|im_end|>") == ["<|"]


def test_a_malformed_corpus_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, [{"id": "x", "output": "y", "expect": {"kind": "maybe"}}])
    with pytest.raises(ValueError, match="expect.kind"):
        load_corpus(path)
