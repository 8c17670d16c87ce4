"""Real processes that open one new database at the same moment (tests of the setup lock)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

OPENER = """
import asyncio, sys, time
from pathlib import Path
from callgate.persistence import open_async_persistence, open_persistence

db, ready, go, mode = sys.argv[1:]
Path(ready).touch()
while not Path(go).exists():  # every process opens the new database at the same moment
    time.sleep(0.001)
if mode == "sync":
    with open_persistence(db) as p:
        p.store.put(("t",), ready, {"ok": 1})
else:
    async def main() -> None:
        async with open_async_persistence(db) as p:
            await p.store.aput(("t",), ready, {"ok": 1})
    asyncio.run(main())
"""


def open_at_once(db: str, mode: str, tmp_path: Path, count: int = 6) -> list[tuple[int, str]]:
    """Start `count` processes that each open `db` (sync or async) once all have started,
    and store one item; their exit codes and stderr."""
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{k}" for k in range(count)]
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, db, str(r), str(go), mode],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in ready]
    try:
        while not all(r.exists() for r in ready):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()
        return [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    finally:
        for p in procs:
            p.kill()
