"""The four notebooks in notebooks/ run top to bottom in a real Jupyter kernel, offline.

Each test executes one notebook with nbclient in the ``python3`` kernel of this interpreter's
environment (jupyter_client starts a ``python`` kernel spec with ``sys.executable``), then
reads what its key cells (found by their tag) printed or drew. formats-and-failures and
approvals-and-threads drive the loop with ``ScriptedChatModel`` (fixed replies, not a
language model) and a real subprocess; quickstart and evaluation also load the bundled GGUF
model (marked ``llama`` and ``slow``: minutes on two cores). The notebooks are committed
without outputs.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat import NotebookNode

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = ("quickstart", "formats-and-failures", "approvals-and-threads", "evaluation")
# Markup that must never reach a user (a subset of callgate.eval.outputs' markers).
MARKUP = ("<tool_call>", "</tool_call>", "<think>", "[TOOL_CALLS]", "✿FUNCTION✿", "<|",
          "Action Input:", "Observation:")


@dataclass
class Executed:
    """A notebook after a run: its cells with their outputs, and how long it took."""

    notebook: NotebookNode
    seconds: float

    def cell(self, tag: str) -> NotebookNode:
        """The code cell tagged ``tag`` (tags survive output stripping; ids may not)."""
        found = [c for c in self.notebook.cells if tag in c.metadata.get("tags", [])]
        assert len(found) == 1, f"expected one cell tagged {tag!r}, found {len(found)}"
        return found[0]

    def text(self, tag: str) -> str:
        """Everything the cell printed, and the plain-text form of what it displayed."""
        parts = []
        for output in self.cell(tag).outputs:
            if output.output_type == "stream":
                parts.append(output.text)
            elif "text/plain" in output.get("data", {}):
                parts.append(output.data["text/plain"])
        return "".join(parts)

    def images(self, tag: str) -> int:
        return sum("image/png" in o.get("data", {}) for o in self.cell(tag).outputs)


def execute(name: str, cell_timeout: int, again: tuple[str, ...] = (),
            runs: int = 1) -> Executed:
    """Run ``notebooks/<name>.ipynb`` in a fresh kernel, working directory notebooks/, top to
    bottom ``runs`` times (Run All again, without a restart). The cells tagged ``again`` run
    twice, as a user runs them again: once more, in that order, right after the last of
    them. The outputs kept are those of each cell's last run."""
    notebook = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    client = NotebookClient(notebook, timeout=cell_timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    tagged = {tag: (i, c) for i, c in enumerate(notebook.cells) for tag in c.metadata.get(
        "tags", [])}
    cells: list[tuple[int, NotebookNode]] = []
    for index, cell in enumerate(notebook.cells):
        cells.append((index, cell))
        if again and tagged[again[-1]][0] == index:
            cells += [tagged[tag] for tag in again]
    cells *= runs
    started = time.perf_counter()
    with client.setup_kernel():  # a failing cell raises CellExecutionError with its traceback
        for index, cell in cells:
            cell.outputs = []
            client.execute_cell(cell, index)
    run = Executed(notebook, time.perf_counter() - started)
    print(f"{name}: {run.seconds:.1f} s", file=sys.stderr)
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    return run


def test_committed_notebooks_are_the_four_and_have_no_outputs() -> None:
    assert sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")) == sorted(NOTEBOOKS)
    for name in NOTEBOOKS:
        notebook = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
        nbformat.validate(notebook)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        kept = [c.id for c in code if c.outputs or c.execution_count is not None]
        assert not kept, f"{name}: outputs committed in cells {kept} (see README: Notebooks)"
        assert notebook.metadata.kernelspec.name == "python3"
        # A notebook runs from a clone alone: no data from beside the checkout.
        assert not [c.id for c in code if "shared" in c.source or "../" in c.source], name


@pytest.mark.llama
@pytest.mark.slow
@pytest.mark.timeout(600)  # about a minute on two idle cores; far more on a busy machine
def test_quickstart() -> None:
    run = execute("quickstart", cell_timeout=540)
    corrected = run.text("correction")
    assert "Sources: [R1] get_weather" in corrected and "[R9]" not in corrected
    assert "done [('R1', 'get_weather', {'city': 'Paris', 'unit': 'celsius'}" in corrected
    assert "argument 'city': expected string, got boolean True" in run.text("told")
    assert "flowchart" in run.text("graph") and "approve" in run.text("graph")
    assert "old-2024.log" in run.text("approval")
    local = run.text("bundled")
    assert re.search(r"^status: (done|step_limit|failed)$", local, re.MULTILINE)
    assert not any(marker in local for marker in MARKUP)
    assert "get_weather" in run.text("stats")


@pytest.mark.timeout(120)
def test_formats_and_failures() -> None:
    run = execute("formats-and-failures", cell_timeout=60)
    table = run.text("outputs")
    for line in ("xml-debug-turn                       xml        tool_calls "
                 "delete_user_attribute({'query': 'qwen'})",
                 "two-xml-calls                        xml        tool_calls system_stats({}); "
                 "web_search({'query': 'uptime tips'})",
                 "think-block                          final      final      answer '4'"):
        assert line in table
    assert re.search(r"^truncated-json +react +invalid +error for the model: ", table, re.M)
    assert re.search(r"^action-input-not-json +react +invalid ", table, re.M)

    shown = run.text("sanitize")
    assert shown.count("leaks: []") == 5 and not any(m in shown for m in MARKUP)
    assert "sanitized: 'The disk is 40% full.'" in shown

    loop = run.text("react-loop")
    assert "R1 web_search {'query': 'CRISPR therapy', 'max_results': 3} ok" in loop
    assert "R2 system_stats {} ok" in loop and "status: done" in loop
    assert "CRISPR is great" not in loop  # the invented observation never reaches the user
    assert not any(m in loop for m in MARKUP)

    corrected = run.text("correction")
    assert "cut off" in corrected and "status: done [('web_search'" in corrected
    failed = run.text("correction-fails")
    assert "expected integer, got boolean True" in failed and "status: failed" in failed
    assert "problems: [{'id': 'R1', 'tool': 'add', 'outcome': 'invalid'" in failed
    assert "status: step_limit | tool steps: 3 | model calls: 4" in run.text("step-limit")

    cancelled = run.text("cancel")
    seconds = float(re.search(r"status: cancelled after ([\d.]+) s", cancelled).group(1))
    assert seconds < 5 and "[('crawl', 'cancelled', " in cancelled
    repeated = run.text("duplicates")
    assert "lookup really ran 1 time(s); status: done" in repeated
    assert "R2 lookup {'key': 'abc'} repeat |" in repeated


@pytest.mark.timeout(120)
def test_approvals_and_threads() -> None:
    # Run All twice in one kernel, the crash and its resumption twice each time: the same
    # every time. Run again, the crash cell had found the first run's marker and killed the
    # worker before it ran anything; in a second Run All, the resumed tools were still the
    # first run's module, writing to its deleted folder.
    run = execute("approvals-and-threads", cell_timeout=90, again=("crash", "resume"), runs=2)
    asked = run.text("interrupt")
    assert "'name': 'delete_file'" in asked and "{'path': 'a.txt'}" in asked
    assert "allowed: ['approve', 'edit', 'reject']" in asked
    assert "files: ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt']" in asked  # nothing ran yet
    assert "status: done | files: ['b.txt', 'c.txt', 'd.txt', 'e.txt']" in run.text("approve")
    assert "{'path': 'b.txt'}, True)] | files: ['c.txt', 'd.txt', 'e.txt']" in run.text("edit")
    rejected = run.text("reject")
    assert "rejected by the user: c.txt is still needed" in rejected
    assert "files: ['c.txt', 'd.txt', 'e.txt']" in rejected
    several = run.text("several")
    assert "asked: [{'path': 'd.txt'}, {'path': 'e.txt'}]" in several
    assert "{'path': 'e.txt'}, False)] | files: ['c.txt', 'e.txt']" in several
    assert "'outcome': 'denied', 'error': 'rejected by the user: keep e'" in several
    thread = run.text("thread")
    assert "'Note: buy milk'" in thread and "('R2', {'text': 'buy bread'})" in thread
    crashed = run.text("crash")
    assert "worker exit code: -9" in crashed
    assert "side effects so far: ['note start']" in crashed
    resumed = run.text("resume")
    assert "status: done" in resumed
    assert "side effects: ['note start', 'report']" in resumed  # each side effect once


@pytest.mark.llama
@pytest.mark.slow
@pytest.mark.timeout(900)  # about 1.5 min on two idle cores; far more on a busy machine
def test_evaluation() -> None:
    run = execute("evaluation", cell_timeout=840)
    bfcl = run.text("bfcl")
    assert len(re.findall(r"^(ok  |MISS) ", bfcl, re.MULTILINE)) == 6  # 2 x 3 categories
    assert re.search(r"^all questions +6 ", bfcl, re.MULTILINE)
    assert run.images("accuracy-chart") == 1
    assert run.images("failures-chart") == 1
    assert len(re.findall(r"invalid \d+  ungrounded \d+  repeated \d+  wrong value \d+",
                          run.text("failures-chart"))) == 3
    bench = run.text("overhead")
    assert "ratio callgate/create_agent" in bench
    assert run.images("overhead-chart") == 1
