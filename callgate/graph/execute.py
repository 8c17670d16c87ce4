"""The ``execute`` node: runs the validated calls of a step, concurrently and safely.

Each call gets its own timeout (the tool's, else the agent's), retries for transient
errors (a LangGraph ``RetryPolicy`` applied per call: a node-level retry would re-run the
calls that already succeeded), duplicate detection against earlier calls of the turn,
and cooperative cancellation: a cancelled run cancels the tool tasks still in flight.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic_core import to_jsonable_python

from callgate.graph.cancellation import token_for
from callgate.graph.settings import LoopSettings
from callgate.graph.sync import run_sync
from callgate.graph.writer import emit

POLL_S = 0.05


def call_key(name: str, args: Any) -> str:
    """Tool name plus canonical JSON of the normalized arguments."""
    return name + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def make_execute(settings: LoopSettings):
    async def aexecute(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        step = state.get("step", 0)
        events = (state.get("tool_events") or [])[state.get("turn_start", 0):]
        seen = {call_key(e["tool"], e["args"]): e for e in events if not e.get("repeat_of")}
        results: dict[str, dict[str, Any]] = {}
        to_run: list[dict[str, Any]] = []
        twins: dict[str, dict[str, Any]] = {}  # repeated call id -> the earlier call or event
        repeats = 0
        for call in state.get("pending_calls") or []:
            if call.get("denied"):
                results[call["id"]] = _result(call, step, ok=False, error=call["denied"],
                                              denied=True)
                if settings.stats is not None:
                    settings.stats.record_denial(call["name"])
                continue
            if call.get("skipped"):  # set by validate: values not in the conversation
                results[call["id"]] = _result(call, step, ok=False, error=call["skipped"],
                                              skipped=True)
                continue
            earlier = seen.get(call_key(call["name"], call["args"]))
            if earlier is not None:
                repeats += 1
                twins[call["id"]] = earlier
                if settings.stats is not None:
                    settings.stats.record_duplicate(call["name"])
                continue
            seen[call_key(call["name"], call["args"])] = {"this_step": call["id"], "step": step}
            to_run.append(call)

        token = token_for(config)
        tasks = {call["id"]: asyncio.create_task(_run_call(call, settings, step, config))
                 for call in to_run}
        pending = set(tasks.values())
        cancelled = False
        while pending:
            _, pending = await asyncio.wait(pending, timeout=POLL_S)
            if pending and token.cancelled:
                cancelled = True
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                break
        for call in to_run:
            task = tasks[call["id"]]
            results[call["id"]] = (
                _result(call, step, ok=False, error="cancelled") if task.cancelled()
                else task.result()
            )
        for call in state.get("pending_calls") or []:
            if call["id"] in twins:
                earlier = twins[call["id"]]
                if "this_step" in earlier:  # the same call twice in this step: share its result
                    earlier = {**results[earlier["this_step"]], "call_id": earlier["this_step"]}
                results[call["id"]] = _repeat(call, earlier, step)
        ordered = [results[c["id"]] for c in state.get("pending_calls") or []]
        update: dict[str, Any] = {"step_results": ordered, "pending_calls": [],
                                  "repeats": state.get("repeats", 0) + repeats}
        if cancelled or token.cancelled:
            update["stop_reason"] = "cancelled"
        return update

    def execute(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return run_sync(aexecute(state, config))

    return execute, aexecute


async def _run_call(call: dict[str, Any], settings: LoopSettings, step: int,
                    config: RunnableConfig) -> dict[str, Any]:
    tool = settings.registry.get(call["name"])
    assert tool is not None, "validate lets only registered tools through"
    timeout = settings.timeout_for(call["name"])
    policy = settings.tool_retry
    retry_on = _retry_predicate(policy.retry_on)
    emit({"event": "tool_start", "id": call["id"], "tool": call["name"], "args": call["args"],
          "step": step})
    started = time.perf_counter()
    attempt, interval = 0, policy.initial_interval
    error: str | None = None
    data: Any = None
    timed_out = False
    while True:
        attempt += 1
        try:
            async with asyncio.timeout(timeout) as deadline:
                data = await tool.runnable.ainvoke(call["args"], config)
            error = None
            break
        except TimeoutError as exc:
            if deadline.expired():
                error, timed_out = "timeout", True
                break
            error = _describe(exc)
        except Exception as exc:  # a tool's failure is a result for the model, not a crash
            error = _describe(exc)
            if attempt < policy.max_attempts and retry_on(exc):
                await asyncio.sleep(interval)
                interval = min(interval * policy.backoff_factor, policy.max_interval)
                continue
        break
    duration_ms = round((time.perf_counter() - started) * 1000, 2)
    result = _result(call, step, ok=error is None, error=error, duration_ms=duration_ms,
                     data=_bounded_data(data, settings.max_result_chars) if error is None
                     else None, attempts=attempt, timed_out=timed_out)
    emit({"event": "tool_end", "id": call["id"], "tool": call["name"], "ok": result["ok"],
          "error": error, "duration_ms": duration_ms, "step": step})
    if settings.stats is not None:
        settings.stats.record_call(call["name"], ok=result["ok"], timed_out=timed_out,
                                   duration_ms=duration_ms)
    return result


def _result(call: dict[str, Any], step: int, *, ok: bool, error: str | None = None,
            data: Any = None, duration_ms: float = 0.0, **extra: Any) -> dict[str, Any]:
    return {"call_id": call["id"], "tool": call["name"], "args": call.get("args") or {},
            "dropped": call.get("dropped") or [], "ok": ok, "error": error, "data": data,
            "duration_ms": duration_ms, "step": step, **extra}


def _repeat(call: dict[str, Any], earlier: dict[str, Any], step: int) -> dict[str, Any]:
    return _result(call, step, ok=earlier.get("ok", True), error=earlier.get("error"),
                   data=earlier.get("data"), repeat_of=earlier.get("id"),
                   repeat_of_call=earlier.get("call_id"), repeat_step=earlier.get("step"))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _retry_predicate(retry_on: Any) -> Callable[[BaseException], bool]:
    if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        return lambda exc: isinstance(exc, retry_on)
    if isinstance(retry_on, tuple | list):
        kinds = tuple(retry_on)
        return lambda exc: isinstance(exc, kinds)
    return retry_on


def _bounded_data(data: Any, limit: int) -> Any:
    """JSON-safe data for the checkpoint; results over ``limit`` characters are cut, marked."""
    data = to_jsonable_python(data, fallback=str)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if len(text) <= limit:
        return data
    if isinstance(data, list):
        kept, size = [], 2
        for item in data:
            size += len(json.dumps(item, ensure_ascii=False)) + 1
            if size > limit:
                break
            kept.append(item)
        return {"truncated": True, "original_chars": len(text), "items": kept,
                "omitted_items": len(data) - len(kept)}
    return {"truncated": True, "original_chars": len(text), "text": text[:limit]}
