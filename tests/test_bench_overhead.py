"""The overhead benchmark runs and reports sane structure (speed is measured, not asserted)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from callgate.cli import main
from callgate.eval.overhead import (
    FRAMEWORKS,
    _concurrent,
    cross_talk,
    expected_answer,
    run_overhead,
    scripted_model,
)


def test_benchmark_structure() -> None:
    result = run_overhead(runs=3, concurrency=5, warmup=1, memory_runs=1)
    assert set(result["frameworks"]) == {"callgate", "create_agent"}
    for name, f in result["frameworks"].items():
        assert 0 < f["run_ms"]["median"] <= f["run_ms"]["p95"], name
        assert f["step_ms"]["median"] == pytest.approx(f["run_ms"]["median"] / 4, abs=0.01)
        assert f["peak_kib_per_run"] > 0
        assert f["sequential_wrong_answers"] == 0
        assert f["concurrent"]["runs"] == 5 and f["concurrent"]["cross_talk"] == 0
        assert f["concurrent"]["throughput_runs_per_s"] > 0
        assert f["checkpoint_bytes_per_step"] > 0
    assert set(result["ratio_callgate_to_create_agent"]) == {
        "run_ms_median", "run_ms_p95", "peak_kib_per_run", "throughput",
        "checkpoint_bytes_per_step"}


def test_result_sizes_keep_big_results_out_of_callgate_checkpoints() -> None:
    from callgate.eval.result_sizes import format_result_sizes, run_result_sizes

    result = run_result_sizes(sizes=(1_000, 200_000), peak_sizes=(200_000,), turns=2)
    rows = {(r["framework"], r["size"]): r for r in result["sizes"]}
    callgate_growth = (rows["callgate", 200_000]["checkpoint_bytes_per_step"]
                       - rows["callgate", 1_000]["checkpoint_bytes_per_step"])
    anchor_growth = (rows["create_agent", 200_000]["checkpoint_bytes_per_step"]
                     - rows["create_agent", 1_000]["checkpoint_bytes_per_step"])
    assert callgate_growth < 10_000 < anchor_growth  # the anchor keeps the result inline
    assert rows["callgate", 200_000]["store_bytes"] >= 200_000  # callgate's is in the store
    assert "peak MiB" in format_result_sizes(result)


@pytest.mark.parametrize("name", ["callgate", "create_agent"])
def test_each_concurrent_run_gets_its_own_answer(name: str) -> None:
    fw = FRAMEWORKS[name]
    model = scripted_model()
    result = asyncio.run(_concurrent(fw, fw.build(model), model, 5))
    assert result["cross_talk"] == 0 and result["problems"] == []


def test_cross_talk_check_catches_swapped_answers() -> None:
    assert cross_talk([(1, expected_answer(1)), (2, expected_answer(2) + "\nSources")]) == []
    problems = cross_talk([(1, expected_answer(2)), (2, expected_answer(1))])
    assert len(problems) == 2 and "run 1 got" in problems[0]
    # A run that saw another run's tool result differs in that one token.
    mixed = expected_answer(3).replace("echo-q3", "echo-q4")
    assert cross_talk([(3, mixed)])


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "overhead.json"
    assert main(["bench", "overhead", "--runs", "3", "--concurrency", "5", "--warmup", "1",
                 "--report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ratio callgate/create_agent" in printed
    assert json.loads(out.read_text())["runs"] == 3
