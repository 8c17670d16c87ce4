"""Result-size benchmark: what a big tool result costs the checkpoint and memory.

callgate keeps a call's bounded summary and preview in the checkpoint and the full result
in LangGraph's store; LangChain's ``create_agent`` (the anchor, run side by side) keeps the
whole result in its ``ToolMessage``, so in every checkpoint that carries the messages. Both
run the same scripted conversation (a ``ScriptedChatModel``, not a language model) on a
SQLite checkpointer: ``turns`` turns of one tool call returning ``size`` characters and an
answer. Reported per framework and size: checkpoint bytes added per tool step (checkpoints
plus pending writes, the store excluded), the store's bytes, median seconds per turn, and
the peak memory of one turn (tracemalloc).
"""

from __future__ import annotations

import gc
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from callgate.eval.overhead import FRAMEWORKS, checkpointer_bytes
from callgate.models.scripted import ScriptedChatModel, tool_call

SIZES = (1_000, 1_000_000, 10_000_000)
PEAK_SIZES = (10_000_000, 50_000_000)


def blob(n: int) -> str:
    """A result of ``n`` characters."""
    return "z" * n


def _store_bytes(db: str) -> int:
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if "store" not in tables:
            return 0
        return int(conn.execute("SELECT coalesce(sum(length(value)), 0) FROM store")
                   .fetchone()[0])


def _agent(name: str, db: str, turns: int, size: int, stack: Any) -> Any:
    from callgate.persistence import open_persistence

    script: list[Any] = []
    for _ in range(turns):
        script += [tool_call("blob", {"n": size}), AIMessage("done")]
    model = ScriptedChatModel(script=script)
    persistence = stack.enter_context(open_persistence(db))
    if name == "callgate":
        from callgate import build_agent

        return build_agent(model, [blob], tool_format="native",
                           checkpointer=persistence.checkpointer, store=persistence.store)
    return FRAMEWORKS[name].build(model, [blob], checkpointer=persistence.checkpointer)


def measure(name: str, size: int, turns: int = 3) -> dict[str, Any]:
    """Checkpoint growth and turn time for ``turns`` turns with one ``size`` result each."""
    from contextlib import ExitStack

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        db = str(Path(tmp) / "threads.sqlite")
        agent = _agent(name, db, turns, size, stack)
        config = {"configurable": {"thread_id": "sizes"}}
        seconds = []
        for _ in range(turns):
            started = time.perf_counter()
            agent.invoke({"messages": [("user", "again")]}, config)
            seconds.append(time.perf_counter() - started)
        stack.close()
        return {"framework": name, "size": size, "turns": turns,
                "checkpoint_bytes_per_step": round(checkpointer_bytes(db) / turns),
                "store_bytes": _store_bytes(db),
                "turn_s_median": round(statistics.median(seconds), 4),
                "turn_s_last": round(seconds[-1], 4)}


def peak_memory(name: str, size: int) -> dict[str, Any]:
    """Peak traced memory of one turn whose tool returns ``size`` characters."""
    from contextlib import ExitStack

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        agent = _agent(name, str(Path(tmp) / "threads.sqlite"), 1, size, stack)
        gc.collect()
        tracemalloc.start()
        try:
            agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "p"}})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return {"framework": name, "size": size, "peak_mib": round(peak / 2**20, 1)}


def run_result_sizes(sizes: tuple[int, ...] = SIZES, peak_sizes: tuple[int, ...] = PEAK_SIZES,
                     turns: int = 3,
                     frameworks: tuple[str, ...] = ("callgate", "create_agent")
                     ) -> dict[str, Any]:
    return {"sizes": [measure(fw, size, turns) for size in sizes for fw in frameworks],
            "peaks": [peak_memory(fw, size) for size in peak_sizes for fw in frameworks]}


def format_result_sizes(result: dict[str, Any]) -> str:
    lines = ["result chars  framework     checkpoint B/tool step  store B      s/turn (median)"]
    for row in result["sizes"]:
        lines.append(f"{row['size']:<13} {row['framework']:<13} "
                     f"{row['checkpoint_bytes_per_step']:<23} {row['store_bytes']:<12} "
                     f"{row['turn_s_median']}")
    lines.append("")
    lines.append("result chars  framework     peak MiB (one turn)")
    for row in result["peaks"]:
        lines.append(f"{row['size']:<13} {row['framework']:<13} {row['peak_mib']}")
    return "\n".join(lines)
