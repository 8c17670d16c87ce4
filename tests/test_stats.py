"""Usage statistics: figures, persistence across processes, concurrency, and the graph."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from langchain_core.messages import AIMessage

from callgate.graph.builder import build_agent
from callgate.models.scripted import ScriptedChatModel, tool_call
from callgate.tools.registry import ToolRegistry
from callgate.tools.stats import UsageStats, percentile

REPO = Path(__file__).resolve().parents[1]


def test_counts_averages_and_p95() -> None:
    stats = UsageStats(None)
    for ms in range(1, 21):  # 1..20 ms: p95 (nearest rank) is the 19th value
        stats.record_call("search", ok=ms != 7, timed_out=ms == 20, duration_ms=float(ms))
    stats.record_invalid("search")
    stats.record_invalid(None)
    stats.record_correction("search")
    stats.record_duplicate("search")
    stats.record_denial("shell")
    search = stats.get("search")
    assert search == {"tool": "search", "calls": 20, "successes": 19, "failures": 1,
                      "timeouts": 1, "invalid": 1, "corrections": 1, "duplicates": 1,
                      "denials": 0, "total_ms": 210.0, "avg_ms": 10.5, "p95_ms": 19.0}
    shell = stats.get("shell")
    assert shell["denials"] == 1 and shell["calls"] == 0 and shell["avg_ms"] == 0.0
    assert [r["tool"] for r in stats.summary()] == ["search", "shell", None]
    assert stats.as_records() == stats.summary()
    table = stats.table()
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["tool", "calls", "ok"] and "p95" in lines[0]
    assert lines[2].split() == ["search", "20", "19", "1", "1", "1", "1", "1", "0", "210.0",
                                "10.5", "19.0"]
    assert "(no tool)" in table
    stats.reset("shell")
    assert stats.get("shell") is None and stats.get("search") is not None
    stats.reset()
    assert stats.summary() == [] and stats.table() == "No tool usage recorded yet."


def test_percentile_nearest_rank() -> None:
    assert percentile([], 95) == 0.0
    assert percentile([4.0], 95) == 4.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
    assert percentile([1.0, 2.0], 95) == 2.0


def test_default_path_and_memory(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CALLGATE_HOME", "~/cg")  # the callgate home, "~" expanded
    monkeypatch.setenv("HOME", str(tmp_path))
    stats = UsageStats()
    assert stats.path == tmp_path / "cg" / "stats.sqlite"
    assert stats.path.exists()
    assert UsageStats(None).path is None


RECORD = """
import sys
from callgate.tools.stats import UsageStats
stats = UsageStats(sys.argv[1])
for i in range(int(sys.argv[2])):
    stats.record_call("remote", ok=True, timed_out=False, duration_ms=float(i + 1))
stats.record_denial("remote")
"""
READ = """
import json, sys
from callgate.tools.stats import UsageStats
print(json.dumps(UsageStats(sys.argv[1]).summary()))
"""


def python(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_persisted_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "stats.sqlite"
    python(RECORD, str(db), "10")
    here = UsageStats(db)
    remote = here.get("remote")
    assert (remote["calls"], remote["denials"], remote["total_ms"]) == (10, 1, 55.0)
    here.record_call("local", ok=False, timed_out=True, duration_ms=5.0)
    there = {r["tool"]: r for r in json.loads(python(READ, str(db)))}
    assert there["remote"]["calls"] == 10 and there["remote"]["p95_ms"] == 10.0
    assert there["local"]["timeouts"] == 1 and there["local"]["failures"] == 1


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "stats.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", RECORD, str(db), "100"], cwd=REPO)
             for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    remote = UsageStats(db).get("remote")
    assert (remote["calls"], remote["denials"]) == (300, 3)


def test_concurrent_threads_lose_nothing(tmp_path: Path) -> None:
    for stats in (UsageStats(None), UsageStats(tmp_path / "threads.sqlite")):
        start = threading.Barrier(8)

        def work(n: int, stats: UsageStats = stats, start: threading.Barrier = start) -> None:
            start.wait()
            for i in range(50):
                stats.record_call(f"t{n % 2}", ok=i % 5 != 0, timed_out=False,
                                  duration_ms=1.0)
                if i % 10 == 0:
                    stats.record_duplicate(f"t{n % 2}")

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rows = {r["tool"]: r for r in stats.summary()}
        for name in ("t0", "t1"):
            assert rows[name]["calls"] == 200 and rows[name]["successes"] == 160
            assert rows[name]["duplicates"] == 20 and rows[name]["total_ms"] == 200.0


def test_storage_errors_never_raise(tmp_path: Path, caplog) -> None:
    stats = UsageStats(tmp_path / "s.sqlite")
    stats._connection().execute("DROP TABLE tool_events")  # simulate a broken store
    stats.record_call("x", ok=True, timed_out=False, duration_ms=1.0)
    assert "could not record call" in caplog.text


def test_graph_records_every_figure() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def lookup(term: str, limit: int = 3) -> list[str]:
        """Look a term up."""
        return [term] * limit

    released = threading.Event()  # set when the test ends: the abandoned call returns

    @registry.tool(timeout_s=0.2)
    def slow(seconds: float) -> str:
        """Sleep for a while."""
        released.wait(seconds)
        return "done"

    script = [
        tool_call("lookup", {"term": "x", "limit": True}, call_id="c1"),  # invalid: bool
        tool_call("lookup", {"term": "x", "limit": 2}, call_id="c2"),  # corrected: runs
        tool_call("lookup", {"term": "x", "limit": 2}, call_id="c3"),  # duplicate
        tool_call("slow", {"seconds": 30}, call_id="c4"),  # times out after 0.2 s
        AIMessage("Found x [R1]."),
    ]
    stats = UsageStats(None)
    agent = build_agent(ScriptedChatModel(script=script), registry, stats=stats)
    started = time.perf_counter()
    try:
        result = agent.invoke({"messages": [("user", "look x up")]})
    finally:
        released.set()
    assert time.perf_counter() - started < 10, "the timeout must not wait for the tool"
    assert result["status"] == "done", result
    events = result["tool_events"]
    assert [(e["tool"], e["outcome"], bool(e["repeat_of"])) for e in events] == [
        ("lookup", "ok", False), ("lookup", "repeat", True), ("slow", "timeout", False)]

    lookup_row, slow_row = stats.get("lookup"), stats.get("slow")
    assert {k: lookup_row[k] for k in ("calls", "successes", "failures", "timeouts", "invalid",
                                       "corrections", "duplicates", "denials")} == {
        "calls": 1, "successes": 1, "failures": 0, "timeouts": 0, "invalid": 1,
        "corrections": 1, "duplicates": 1, "denials": 0}
    assert {k: slow_row[k] for k in ("calls", "successes", "failures", "timeouts")} == {
        "calls": 1, "successes": 0, "failures": 1, "timeouts": 1}
    assert 150 <= slow_row["p95_ms"] < 1500 and slow_row["avg_ms"] == slow_row["total_ms"]
    assert lookup_row["p95_ms"] == lookup_row["total_ms"] == events[0]["duration_ms"]


def test_graph_records_denials() -> None:
    registry = ToolRegistry()

    @registry.tool(sensitive=True)
    def wipe(path: str) -> str:
        """Delete a folder."""
        raise AssertionError("must not run")

    stats = UsageStats(None)
    model = ScriptedChatModel(script=[tool_call("wipe", {"path": "/tmp/x"}),
                                      AIMessage("Not allowed.")])
    # No checkpointer and no auto-approve: the gate fails closed, and that is a denial.
    result = build_agent(model, registry, stats=stats).invoke({"messages": [("user", "wipe")]})
    assert result["tool_events"][0]["outcome"] == "denied"
    row = stats.get("wipe")
    assert (row["denials"], row["calls"]) == (1, 0)
