"""The suite reads nothing outside the repository: conftest's audit fails a session that does.

Each test here runs a real pytest subprocess on a small project laid out like a checkout with
a ``shared/data`` folder beside it, using this repository's own ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")

INSIDE = '''
from pathlib import Path

import pytest


def test_reads_inside() -> None:
    assert Path(__file__).read_text()


@pytest.mark.shared_data
def test_compares_with_shared(shared_data: Path) -> None:
    assert (shared_data / "note.txt").read_text() == "beside"
'''

BESIDE = '''
from pathlib import Path

NOTE = Path(__file__).resolve().parents[2] / "shared" / "data" / "note.txt"


def test_reads_beside() -> None:
    assert NOTE.read_text() == "beside"
'''

AT_IMPORT = '''
from pathlib import Path

NOTE = (Path(__file__).resolve().parents[2] / "shared" / "data" / "note.txt").read_text()


def test_uses_what_was_read_at_import() -> None:
    assert NOTE == "beside"
'''


# In one process, and as the README's command runs it: two pytest-xdist workers, whose reads
# the controller must still report.
WORKERS = pytest.mark.parametrize("workers", ["0", "2"], ids=["one process", "two workers"])


def run_suite(tmp_path: Path, tests: dict[str, str],
              workers: str) -> subprocess.CompletedProcess[str]:
    """A checkout at tmp_path/repo with shared/data beside it; run its tests."""
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "shared" / "data" / "note.txt").write_text("beside")
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    shutil.copy(CONFTEST, repo / "tests" / "conftest.py")
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nmarkers = ["shared_data: compares with ../shared/data"]\n')
    for name, text in tests.items():
        (repo / "tests" / name).write_text(text)
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS", "CALLGATE_SHARED_DATA"}}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", workers],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=120)


@WORKERS
def test_reads_inside_and_marked_comparisons_pass(tmp_path: Path, workers: str) -> None:
    done = run_suite(tmp_path, {"test_inside.py": INSIDE}, workers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert "read outside the repository" not in done.stdout


@WORKERS
def test_a_read_beside_the_checkout_fails_the_session(tmp_path: Path, workers: str) -> None:
    done = run_suite(tmp_path, {"test_inside.py": INSIDE, "test_beside.py": BESIDE,
                                "test_at_import.py": AT_IMPORT}, workers)
    # Every test passes on its own; the audit alone fails the run, naming each read.
    assert "4 passed" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1
    note = tmp_path / "shared" / "data" / "note.txt"
    assert "read outside the repository" in done.stdout
    assert f"tests/test_beside.py::test_reads_beside: {note}" in done.stdout
    assert f"collection: {note}" in done.stdout
    assert "test_compares_with_shared" not in done.stdout
