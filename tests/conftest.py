"""Test environment: data from inside the repository only, checked by an audit hook.

The suite must pass on a fresh clone with nothing beside it. Everything it reads ships in the
repository (the model-output corpus and the BFCL slice in ``callgate/eval/data``), and an
audit hook (``sys.addaudithook``) records every file this pytest process opens or lists under
the checkout's parent folder but outside the checkout — ``../shared`` above all (under
pytest-xdist, each worker's reads are sent to the controller). Any such read fails the
session, unless the test is marked ``shared_data`` (it compares a vendored copy
with the optional ``../shared/data`` and skips without it). Subprocesses are not audited; the
environment pinned below keeps them on the vendored data too.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The optional larger data folder beside the checkout ($CALLGATE_SHARED_DATA, else
# ../shared/data), for the `shared_data` comparisons only; None where there is none.
_shared = os.environ.pop("CALLGATE_SHARED_DATA", None)
_shared_dir = Path(_shared) if _shared else REPO.parent / "shared" / "data"
SHARED_DATA: Path | None = _shared_dir if _shared_dir.is_dir() else None
# Defaults that would otherwise prefer ../shared/data when it exists: pin them to the vendored
# copies, so the suite reads the same data on every machine (subprocesses inherit this).
os.environ["CALLGATE_BFCL_DIR"] = str(REPO / "callgate" / "eval" / "data" / "bfcl")

# The suite never writes into the user's callgate home (threads, stats, index, images):
# this process and its subprocesses get a throwaway one.
os.environ["CALLGATE_HOME"] = tempfile.mkdtemp(prefix="callgate-test-home-")

# One llama.cpp thread per model. Two threads spin-wait for each other whenever the machine
# is busy: on two shared cores the default suite's model tests took 167-303 s with two threads
# and 12-16 s with one (tests/test_models.py, its model tests alone, 2026-11-23).
os.environ.setdefault("CALLGATE_N_THREADS", "1")

# --- the outside-read audit -------------------------------------------------------------------
_PARENT = str(REPO.parent).rstrip(os.sep) + os.sep
_INSIDE = str(REPO) + os.sep
_AUDITED = {"open", "os.listdir", "os.scandir"}
# A checkout in the temp folder (/tmp/callgate) has every test's temp file beside it: there,
# only the shared data folder itself is watched.
_SHARED = str(REPO.parent / "shared") + os.sep
_IN_TEMP = os.path.realpath(tempfile.gettempdir()) == os.path.realpath(REPO.parent)
OUTSIDE_READS: list[tuple[str, str]] = []  # (test node id or "collection", absolute path)
_EXEMPT: set[str] = set()  # node ids marked shared_data


def _audit(event: str, args: tuple[object, ...]) -> None:
    """Record opens and listings under the checkout's parent but outside the checkout."""
    if event not in _AUDITED or not args or not isinstance(args[0], str | bytes | os.PathLike):
        return
    path = os.path.abspath(os.fsdecode(os.fspath(args[0])))
    if _IN_TEMP and not (path + os.sep).startswith(_SHARED):
        return
    if path.startswith(_PARENT) and not (path + os.sep).startswith(_INSIDE):
        test = os.environ.get("PYTEST_CURRENT_TEST", "collection").split(" ")[0]
        OUTSIDE_READS.append((test, path))


sys.addaudithook(_audit)  # an audit hook cannot be removed: it lives as long as the process


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A test that needs more than the suite's default timeout is slow by its own account:
    # it leaves the README's command for `pytest -m slow` even where its file lacks the marker.
    default = float(config.getini("timeout") or 0)
    for item in items:
        limit = item.get_closest_marker("timeout")
        if default and limit and limit.args and float(limit.args[0]) > default:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("shared_data"):
            _EXEMPT.add(item.nodeid)


def _violations() -> list[tuple[str, str]]:
    return [(test, path) for test, path in OUTSIDE_READS if test not in _EXEMPT]


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its reads go to the controller
        workeroutput["outside_reads"] = _violations()
    elif _violations() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a worker has finished
def pytest_testnodedown(node: object, error: object) -> None:
    # The workers ran the tests, so their audit hooks saw the reads; this controller process
    # reports them and fails the session (pytest-xdist's documented workeroutput channel).
    reads = getattr(node, "workeroutput", {}).get("outside_reads", [])
    OUTSIDE_READS.extend((test, path) for test, path in reads)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    found = _violations()
    if not found:
        return
    terminalreporter.section("read outside the repository", red=True)
    terminalreporter.line(f"{len(found)} file access(es) outside {REPO} (a fresh clone has "
                          "nothing beside it; vendor the data or mark the test shared_data):")
    for test, path in dict.fromkeys(found):
        terminalreporter.line(f"  {test}: {path}", red=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The optional ../shared/data folder; skips the test where there is none (a user's
    clone), fails it under CI, which runs with the folder beside its clone."""
    if SHARED_DATA is None:
        from tests.needs import unavailable

        unavailable("no shared data folder beside this checkout (optional)")
    return SHARED_DATA
