"""Usage statistics per tool, persisted in SQLite and safe under concurrent runs.

Storage is an append-only event log: every record is one ``INSERT`` of one row (kind,
tool, outcome, duration), in its own short autocommit transaction. Nothing is read and
rewritten, so concurrent writers (threads sharing an instance, or separate processes
sharing the file) can never lose an update; WAL mode lets readers run beside writers and
``busy_timeout`` makes a writer wait for the lock instead of failing. Figures are
aggregated when read, and p95 is exact: it is computed from every call's stored duration
(nearest-rank), not from a sample. ``reset()`` (or ``reset(tool)``) clears the log.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
_DEFAULT: Any = object()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_events (
    id          INTEGER PRIMARY KEY,
    ts          REAL    NOT NULL,
    tool        TEXT,
    kind        TEXT    NOT NULL,   -- call | invalid | correction | duplicate | denial
    ok          INTEGER,
    timed_out   INTEGER,
    duration_ms REAL
);
CREATE INDEX IF NOT EXISTS tool_events_tool_kind ON tool_events (tool, kind);
"""

_SUMMARY = """
SELECT tool,
       SUM(kind = 'call')                      AS calls,
       SUM(kind = 'call' AND ok = 1)           AS successes,
       SUM(kind = 'call' AND ok = 0)           AS failures,
       SUM(kind = 'call' AND timed_out = 1)    AS timeouts,
       SUM(kind = 'invalid')                   AS invalid,
       SUM(kind = 'correction')                AS corrections,
       SUM(kind = 'duplicate')                 AS duplicates,
       SUM(kind = 'denial')                    AS denials,
       COALESCE(SUM(CASE WHEN kind = 'call' THEN duration_ms END), 0) AS total_ms
FROM tool_events GROUP BY tool
"""

COLUMNS = ("tool", "calls", "successes", "failures", "timeouts", "invalid", "corrections",
           "duplicates", "denials", "total_ms", "avg_ms", "p95_ms")
NO_TOOL = "(no tool)"  # invalid calls whose tool name could not be read


class UsageStats:
    """Per-tool counters and durations. ``path``: a SQLite file (default
    ``stats.sqlite`` in the callgate home, ``$CALLGATE_HOME`` or the user data folder), or
    ``None`` for an in-memory store (tests).

    The graph calls the ``record_*`` methods; a storage failure is logged, never raised,
    so statistics can't break a run.
    """

    def __init__(self, path: str | Path | None = _DEFAULT) -> None:
        if path is _DEFAULT:
            from callgate.persistence import callgate_home

            path = callgate_home() / "stats.sqlite"
        self.path: Path | None = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._inherited: list[sqlite3.Connection] = []  # a parent's, after fork: never touch
        self._pid = 0
        with self._lock:
            self._connection()  # create the file and table now: errors show up here

    # -- recording (called by the graph) -------------------------------------------------
    def record_call(self, name: str, *, ok: bool, timed_out: bool, duration_ms: float) -> None:
        """One executed call: its outcome and how long it took."""
        self._insert(name, "call", ok=ok, timed_out=timed_out, duration_ms=duration_ms)

    def record_invalid(self, name: str | None) -> None:
        """A call that failed validation (``name`` is None when it could not be read)."""
        self._insert(name, "invalid")

    def record_correction(self, name: str | None) -> None:
        """A correction round sent to the model for a call to ``name``."""
        self._insert(name, "correction")

    def record_duplicate(self, name: str) -> None:
        """A repeated call answered from the earlier result."""
        self._insert(name, "duplicate")

    def record_denial(self, name: str) -> None:
        """A call refused at the approval gate."""
        self._insert(name, "denial")

    # -- reading -------------------------------------------------------------------------
    def summary(self) -> list[dict[str, Any]]:
        """One dict per tool (sorted by name) with every figure in :data:`COLUMNS`;
        ``tool`` is None for invalid calls without a readable tool name."""
        with self._lock:
            conn = self._connection()
            rows = conn.execute(_SUMMARY).fetchall()
            durations: dict[str | None, list[float]] = {}
            for tool, ms in conn.execute(
                "SELECT tool, duration_ms FROM tool_events WHERE kind = 'call' "
                "AND duration_ms IS NOT NULL ORDER BY tool, duration_ms"
            ):
                durations.setdefault(tool, []).append(ms)
        out = []
        for row in rows:
            record = dict(zip(COLUMNS, (*row, 0.0, 0.0), strict=True))
            for key in COLUMNS[1:9]:
                record[key] = int(record[key] or 0)
            calls = record["calls"]
            record["total_ms"] = round(float(record["total_ms"]), 2)
            record["avg_ms"] = round(record["total_ms"] / calls, 2) if calls else 0.0
            record["p95_ms"] = round(percentile(durations.get(record["tool"], []), 95), 2)
            out.append(record)
        return sorted(out, key=lambda r: (r["tool"] is None, r["tool"] or ""))

    def as_records(self) -> list[dict[str, Any]]:
        """The summary as plain records (``pandas.DataFrame(stats.as_records())``)."""
        return self.summary()

    def get(self, name: str | None) -> dict[str, Any] | None:
        """The summary row of one tool, or None if it has no records."""
        return next((r for r in self.summary() if r["tool"] == name), None)

    def table(self) -> str:
        """A plain-text table of :meth:`summary`, for ``callgate stats``."""
        rows = self.summary()
        if not rows:
            return "No tool usage recorded yet."
        headers = ("tool", "calls", "ok", "failed", "timeouts", "invalid", "corrections",
                   "duplicates", "denials", "total ms", "avg ms", "p95 ms")
        cells = [[r["tool"] if r["tool"] is not None else NO_TOOL,
                  *(str(r[k]) for k in COLUMNS[1:9]),
                  *(f"{r[k]:.1f}" for k in ("total_ms", "avg_ms", "p95_ms"))] for r in rows]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]

        def line(values: list[str] | tuple[str, ...]) -> str:
            first = values[0].ljust(widths[0])
            rest = (v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))
            return "  ".join((first, *rest)).rstrip()

        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(headers), rule, *(line(c) for c in cells)])

    def reset(self, tool: str | None = _DEFAULT) -> None:
        """Forget everything, or only the records of ``tool``."""
        with self._lock:
            conn = self._connection()
            if tool is _DEFAULT:
                conn.execute("DELETE FROM tool_events")
            elif tool is None:
                conn.execute("DELETE FROM tool_events WHERE tool IS NULL")
            else:
                conn.execute("DELETE FROM tool_events WHERE tool = ?", (tool,))

    def close(self) -> None:
        """Close the database connection (a later call reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> UsageStats:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"UsageStats({str(self.path) if self.path else None!r})"

    # -- storage -------------------------------------------------------------------------
    def _insert(self, name: str | None, kind: str, *, ok: bool | None = None,
                timed_out: bool | None = None, duration_ms: float | None = None) -> None:
        row = (time.time(), name, kind, None if ok is None else int(ok),
               None if timed_out is None else int(timed_out),
               None if duration_ms is None else float(duration_ms))
        try:
            with self._lock:
                self._connection().execute(
                    "INSERT INTO tool_events (ts, tool, kind, ok, timed_out, duration_ms) "
                    "VALUES (?, ?, ?, ?, ?, ?)", row)
        except sqlite3.Error as exc:
            log.warning("callgate stats: could not record %s for %r in %s: %s", kind, name,
                        self.path or ":memory:", exc)

    def _connection(self) -> sqlite3.Connection:
        """The connection (call with the lock held); reopened in a forked child process."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self.path is None:
            if self._conn is not None:  # a forked child keeps its copy of the memory store
                self._pid = os.getpid()
                return self._conn
            target = ":memory:"
        else:
            if self._conn is not None:
                self._inherited.append(self._conn)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.path)
        # isolation_level=None: autocommit, so each INSERT is its own short transaction.
        conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if self.path is not None:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # durable enough for counters, in WAL
        conn.executescript(_SCHEMA)
        self._conn, self._pid = conn, os.getpid()
        return conn


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return float(sorted_values[rank - 1])
