"""The ``callgate`` command line, run as a user would (a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def callgate(*args: str, home: Path, env: dict[str, str] | None = None,
             timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "CALLGATE_HOME": str(home),
                "CALLGATE_INDEX": str(home / "index.sqlite"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "callgate.cli", *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=home)


def test_tools_lists_offered_and_missing(tmp_path: Path) -> None:
    result = callgate("tools", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "calculator" in result.stdout and "system_stats" in result.stdout
    assert "Built-in tools not offered:" in result.stdout
    assert "rag_search" in result.stdout and "callgate index PATH" in result.stdout


def test_index_then_rag_search_is_offered(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text("# Vacation\nEmployees get 25 days of paid vacation.\n")
    result = callgate("index", str(docs), home=tmp_path)
    assert result.returncode == 0 and "indexed 1 file(s)" in result.stdout
    tools = callgate("tools", home=tmp_path).stdout
    assert "rag_search" in tools.split("Built-in tools not offered:")[0]


def test_tools_yml_errors_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "tools.yml").write_text("tools:\n  - name: x\n    description: y\n")
    result = callgate("tools", home=tmp_path)
    assert result.returncode != 0 and "tools.yml:2" in result.stderr


@pytest.mark.llama
def test_ask_with_the_bundled_model(tmp_path: Path) -> None:
    result = callgate("ask", "What is 17 * 23?", "--json", "--max-steps", "2", home=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["status"] in {"done", "step_limit"} and out["final_answer"]
    for marker in ("Action:", "Action Input:", "<tool_call>", "Observation:"):
        assert marker not in out["final_answer"]
    rows = json.loads(callgate("stats", "--json", home=tmp_path).stdout)  # persisted usage
    events = out["tool_events"]
    executed = [e for e in events if not (e["repeat_of"] or e["denied"] or e["skipped"])]
    assert sum(r["calls"] for r in rows) == len(executed)
    assert sum(r["duplicates"] for r in rows) == sum(bool(e["repeat_of"]) for e in events)
