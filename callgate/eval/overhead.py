"""Overhead benchmark: callgate's graph versus ``langchain.agents.create_agent``.

Both frameworks run the same scripted conversation: a :class:`ScriptedChatModel` with no
latency answers "question N" with three tool calls (``lookup``, ``add``, ``echo``: small,
instant tools), one per step, then a final answer built from the three tool results it
was shown. So what is measured is the framework: its graph, validation, state handling,
messages. Reported per framework: milliseconds per run and per step (a step = one model
turn; four per run: three tool steps and the answer), median and p95 over ``runs``
sequential runs (interleaved between the frameworks, after a warm-up), the peak memory
of one run (tracemalloc, in separate runs so that tracing does not slow the timed ones),
and ``concurrency`` runs at once with ``ainvoke`` (throughput, and a cross-talk check:
each run asks its own question, and its answer must carry its own tool results).
"""

from __future__ import annotations

import asyncio
import gc
import re
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from callgate.models.scripted import ScriptedChatModel, tool_call

__all__ = [
    "FRAMEWORKS",
    "cross_talk",
    "expected_answer",
    "format_overhead",
    "run_overhead",
    "scripted_model",
]

STEPS_PER_RUN = 4  # three tool steps and the final answer
_QUESTION = re.compile(r"question (\d+)")
_TOKENS = re.compile(r"value-q\d+|echo-q\d+|\bsum-\d+\b")


# --- the conversation -------------------------------------------------------------------------


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-{key}"


def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"sum-{a + b}"


def echo(text: str) -> str:
    """Echo a text back."""
    return f"echo-{text}"


TOOLS = (lookup, add, echo)


def expected_answer(n: int) -> str:
    """The answer run ``n`` must get: built from its own three tool results."""
    return f"answer-{n}: value-q{n};sum-{n + 1000};echo-q{n}"


def respond(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted model: three tool calls for "question N", then the answer."""
    last = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    match = _QUESTION.search(str(messages[last].content))
    n = int(match.group(1)) if match else -1
    results = [m for m in messages[last + 1:] if isinstance(m, ToolMessage)]
    if len(results) == 0:
        return tool_call("lookup", {"key": f"q{n}"})
    if len(results) == 1:
        return tool_call("add", {"a": n, "b": 1000})
    if len(results) == 2:
        return tool_call("echo", {"text": f"q{n}"})
    seen = [t for m in results for t in _TOKENS.findall(str(m.content))]
    return AIMessage(f"answer-{n}: {';'.join(seen)}")


def scripted_model() -> ScriptedChatModel:
    return ScriptedChatModel(script=[respond], loop=True)


# --- the two frameworks --------------------------------------------------------------------


@dataclass
class Framework:
    name: str
    build: Callable[..., Any]  # (model, tools, checkpointer=None) -> compiled graph
    answer: Callable[[dict[str, Any]], str]


def _callgate(model: ScriptedChatModel, tools: Sequence[Any] = TOOLS,
              checkpointer: Any = None) -> Any:
    from callgate import build_agent

    return build_agent(model, list(tools), tool_format="native", max_steps=5,
                       checkpointer=checkpointer)


def _create_agent(model: ScriptedChatModel, tools: Sequence[Any] = TOOLS,
                  checkpointer: Any = None) -> Any:
    from langchain.agents import create_agent

    return create_agent(model, list(tools), checkpointer=checkpointer)


def _last_text(out: dict[str, Any]) -> str:
    return str(out["messages"][-1].content)


FRAMEWORKS = {
    "callgate": Framework("callgate", _callgate, lambda out: out.get("final_answer") or ""),
    "create_agent": Framework("create_agent", _create_agent, _last_text),
}


def _inputs(n: int) -> dict[str, Any]:
    return {"messages": [("user", f"Please answer question {n}.")]}


def cross_talk(answers: Sequence[tuple[int, str]]) -> list[str]:
    """Runs whose answer is not their own: ``(n, answer)`` pairs in, problems out."""
    problems = []
    for n, answer in answers:
        if expected_answer(n) not in answer:
            problems.append(f"run {n} got {answer[:120]!r}, expected {expected_answer(n)!r}")
    return problems


# --- measuring ---------------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, -(-len(ordered) * q // 100))  # nearest rank
    return ordered[int(rank) - 1]


def _timed_run(fw: Framework, agent: Any, model: ScriptedChatModel, n: int) -> tuple[float, str]:
    started = time.perf_counter()
    out = agent.invoke(_inputs(n))
    elapsed = (time.perf_counter() - started) * 1000
    model.requests.clear()  # the scripted model keeps every request: not the framework's
    return elapsed, fw.answer(out)


def _peak_kib(fw: Framework, agent: Any, model: ScriptedChatModel, runs: int) -> float:
    peaks = []
    for n in range(runs):
        gc.collect()
        tracemalloc.start()
        try:
            base, _ = tracemalloc.get_traced_memory()
            agent.invoke(_inputs(10_000 + n))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        model.requests.clear()
        peaks.append((peak - base) / 1024)
    return statistics.median(peaks)


async def _concurrent(fw: Framework, agent: Any, model: ScriptedChatModel,
                      concurrency: int) -> dict[str, Any]:
    numbers = list(range(100_000, 100_000 + concurrency))
    started = time.perf_counter()
    outs = await asyncio.gather(*(agent.ainvoke(_inputs(n)) for n in numbers))
    wall = time.perf_counter() - started
    model.requests.clear()
    problems = cross_talk([(n, fw.answer(out)) for n, out in zip(numbers, outs, strict=True)])
    return {"runs": concurrency, "wall_s": round(wall, 4),
            "throughput_runs_per_s": round(concurrency / wall, 2) if wall else None,
            "cross_talk": len(problems), "problems": problems[:5]}


def checkpointer_bytes(db: str) -> int:
    """Bytes a ``SqliteSaver`` holds: its checkpoints and their pending writes."""
    with sqlite3.connect(db) as conn:
        checkpoints = conn.execute("SELECT coalesce(sum(length(checkpoint) + "
                                   "length(metadata)), 0) FROM checkpoints").fetchone()[0]
        writes = conn.execute("SELECT coalesce(sum(length(value)), 0) FROM writes").fetchone()[0]
    return int(checkpoints + writes)


def _checkpoint_bytes_per_step(fw: Framework, conversations: int = 5) -> float:
    """What one step adds to a SQLite checkpointer, over whole conversations."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "cp.sqlite")
        with SqliteSaver.from_conn_string(db) as saver:
            agent = fw.build(scripted_model(), checkpointer=saver)
            for n in range(conversations):
                agent.invoke(_inputs(n), {"configurable": {"thread_id": f"t{n}"}})
        return checkpointer_bytes(db) / (conversations * STEPS_PER_RUN)


def run_overhead(runs: int = 200, concurrency: int = 50, *, warmup: int = 5,
                 memory_runs: int = 5,
                 frameworks: Sequence[str] = ("callgate", "create_agent")) -> dict[str, Any]:
    """Measure each framework; return figures per framework and callgate/create_agent ratios."""
    chosen = [FRAMEWORKS[name] for name in frameworks]
    models = {fw.name: scripted_model() for fw in chosen}
    agents: dict[str, Any] = {}
    build_ms: dict[str, float] = {}
    for fw in chosen:
        started = time.perf_counter()
        agents[fw.name] = fw.build(models[fw.name])
        build_ms[fw.name] = (time.perf_counter() - started) * 1000
    times: dict[str, list[float]] = {fw.name: [] for fw in chosen}
    wrong: dict[str, list[str]] = {fw.name: [] for fw in chosen}
    for i in range(warmup + runs):  # interleaved: both see the same machine conditions
        for fw in chosen:
            elapsed, answer = _timed_run(fw, agents[fw.name], models[fw.name], i)
            if i >= warmup:
                times[fw.name].append(elapsed)
            wrong[fw.name] += cross_talk([(i, answer)])
    out: dict[str, Any] = {"runs": runs, "concurrency": concurrency,
                           "steps_per_run": STEPS_PER_RUN, "frameworks": {}}
    for fw in chosen:
        t = times[fw.name]
        median = statistics.median(t) if t else 0.0
        p95 = _pct(t, 95)
        out["frameworks"][fw.name] = {
            "build_ms": round(build_ms[fw.name], 2),
            "run_ms": {"median": round(median, 3), "p95": round(p95, 3),
                       "min": round(min(t), 3) if t else 0.0},
            "step_ms": {"median": round(median / STEPS_PER_RUN, 3),
                        "p95": round(p95 / STEPS_PER_RUN, 3)},
            "peak_kib_per_run": round(_peak_kib(fw, agents[fw.name], models[fw.name],
                                                memory_runs), 1),
            "sequential_wrong_answers": len(wrong[fw.name]),
            "checkpoint_bytes_per_step": round(_checkpoint_bytes_per_step(fw)),
            "concurrent": asyncio.run(_concurrent(fw, agents[fw.name], models[fw.name],
                                                  concurrency)),
        }
    if {"callgate", "create_agent"} <= out["frameworks"].keys():
        a, b = out["frameworks"]["callgate"], out["frameworks"]["create_agent"]
        out["ratio_callgate_to_create_agent"] = {
            "run_ms_median": _ratio(a["run_ms"]["median"], b["run_ms"]["median"]),
            "run_ms_p95": _ratio(a["run_ms"]["p95"], b["run_ms"]["p95"]),
            "peak_kib_per_run": _ratio(a["peak_kib_per_run"], b["peak_kib_per_run"]),
            "throughput": _ratio(a["concurrent"]["throughput_runs_per_s"],
                                 b["concurrent"]["throughput_runs_per_s"]),
            "checkpoint_bytes_per_step": _ratio(a["checkpoint_bytes_per_step"],
                                                b["checkpoint_bytes_per_step"]),
        }
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def format_overhead(result: dict[str, Any]) -> str:
    head = ("framework", "run ms (median / p95)", "step ms (median / p95)", "peak KiB/run",
            f"{result['concurrency']} concurrent: runs/s", "checkpoint B/step", "cross-talk")
    rows = []
    for name, f in result["frameworks"].items():
        c = f["concurrent"]
        rows.append((name, f"{f['run_ms']['median']:.2f} / {f['run_ms']['p95']:.2f}",
                     f"{f['step_ms']['median']:.2f} / {f['step_ms']['p95']:.2f}",
                     f"{f['peak_kib_per_run']:.0f}", f"{c['throughput_runs_per_s']}",
                     f"{f['checkpoint_bytes_per_step']}",
                     f"{c['cross_talk'] + f['sequential_wrong_answers']}"))
    ratio = result.get("ratio_callgate_to_create_agent")
    if ratio:
        rows.append(("ratio callgate/create_agent",
                     f"{ratio['run_ms_median']} / {ratio['run_ms_p95']}",
                     f"{ratio['run_ms_median']} / {ratio['run_ms_p95']}",
                     f"{ratio['peak_kib_per_run']}", f"{ratio['throughput']}",
                     f"{ratio['checkpoint_bytes_per_step']}", ""))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = [f"{result['runs']} runs per framework, {result['steps_per_run']} steps per run "
             "(3 tool steps + answer), scripted model without latency"]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
