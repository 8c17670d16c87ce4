"""The README's "From Python" snippets, run as a user copies them: in a fresh process, with the
bundled model, nothing added but lines that print what the README says they give."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(section: str) -> list[str]:
    """The ```python blocks of the README's ``section`` (a "## " heading), in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.DOTALL)


@pytest.mark.llama
def test_the_from_python_snippets_run_as_written(tmp_path: Path) -> None:
    # The first snippet ended in `callgate.get_result(agent, config, "R1")`, with neither
    # `callgate` nor `config` defined: a NameError for anyone who ran it.
    first, second = python_blocks("From Python")[:2]
    said = re.search(r'# ValidationResult\(valid=False, error="([^"]*)"', second)
    assert said, "the README no longer shows what validate returns"
    script = first + second + (
        "import json\n"
        "print(json.dumps({'status': out['status'], 'tools': [e['tool'] for e in "
        "out['tool_events']], 'result': get_result(agent, config, 'R1'), 'error': "
        "registry.validate({'tool': 'get_weather', 'args': {'city': True}}).error}))\n")
    env = {**os.environ, "CALLGATE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == "done" and out["tools"] == ["get_weather"]
    assert out["result"]["temperature"] == 21  # the full result, from the store
    assert out["error"] == said.group(1)


def test_the_bfcl_tables_are_the_recorded_reports() -> None:
    # Written by hand from the report's four-digit fractions, four figures were 0.1 off
    # (validate's overall 56.5 [53.1–59.7] for 56.4 [53.2–59.7]); the README now carries
    # `callgate eval table reports/bfcl-full.json`'s output, and this keeps the two equal.
    from callgate.eval.bfcl import markdown_tables

    report = json.loads((ROOT / "reports" / "bfcl-full.json").read_text(encoding="utf-8"))
    assert markdown_tables(report) in (ROOT / "README.md").read_text(encoding="utf-8")


def test_env_example_lists_every_variable_callgate_reads() -> None:
    # The README says `.env.example` lists the variables; it had four of them.
    placeholders = {"CALLGATE_SPAN", "CALLGATE_QUERY", "CALLGATE_PREFILL"}  # grammar, prompt
    read = {name for file in (ROOT / "callgate").rglob("*.py")
            for name in re.findall(r"CALLGATE_[A-Z0-9_]+", file.read_text(encoding="utf-8"))}
    listed = set(re.findall(r"^#? ?(CALLGATE_[A-Z0-9_]+)=",
                            (ROOT / ".env.example").read_text(encoding="utf-8"), re.MULTILINE))
    assert read - placeholders == listed


def test_env_example_says_how_it_is_read() -> None:
    # `cp .env.example .env` then `langgraph dev` read nothing: langgraph.json names no env
    # file, and neither the CLI nor the library loads one. The README and the file say so.
    spec = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert "env" not in spec
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "nothing reads a .env file" in example
    assert "`langgraph.json` names no `.env` file" in readme


def undefined_names(code: str) -> set[str]:
    """Names ``code`` reads at module level that nothing in it defines and that are no
    builtins (the snippets define no scopes that would hide one)."""
    import ast
    import builtins

    tree = ast.parse(code)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
            defined |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)} - defined


def test_the_postgresql_snippet_defines_what_it_uses() -> None:
    # It passed `tools`, defined nowhere: a NameError before it reached the database.
    (snippet,) = [b for b in python_blocks("LangGraph Studio") if "open_persistence" in b]
    assert undefined_names(snippet) == set()
    assert undefined_names("print(tools)") == {"tools"}  # the check sees a missing name
