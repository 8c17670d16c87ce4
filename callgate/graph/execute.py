"""The ``execute`` node: runs ONE validated call; the graph sends one task per call.

Because every call is its own LangGraph task, LangGraph checkpoints each finished call's
write on its own: a process killed in the middle of a step resumes (same ``thread_id``,
``invoke(None, config)``) with only the calls that had not finished — none twice, none
lost. Transient errors are retried by the node's ``RetryPolicy``; on the last attempt the
error becomes the call's result instead of failing the run. The full result goes to the
store (:mod:`callgate.graph.results`); the task writes only a bounded record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from callgate.graph.cancellation import token_for
from callgate.graph.context import Context, limits_of
from callgate.graph.results import put_result
from callgate.graph.settings import LoopSettings
from callgate.graph.state import CallResult, ExecuteInput, ToolCall
from callgate.graph.writer import emit
from callgate.tools.runner import ToolRun, run_tool
from callgate.tools.summaries import failure_summary, preview, result_summary, sources_in

log = logging.getLogger(__name__)

# Of a failed call's error, as its event and the turn's problems keep it: the state is in
# every checkpoint, and an exception may carry a whole response body (10 MB made each
# checkpoint 10 MB larger, growing with every turn).
ERROR_CHARS = 2000


def make_execute(settings: LoopSettings):
    policy = settings.tool_retry
    retry_on = _retry_predicate(policy.retry_on)

    def execute(task: ExecuteInput, runtime: Runtime[Context],
                config: RunnableConfig) -> dict[str, Any]:
        call, step = task["call"], task["step"]
        limits = limits_of(runtime, settings.defaults)
        tool = settings.registry.get(call["name"])
        attempt = runtime.execution_info.node_attempt if runtime.execution_info else 1
        emit({"event": "tool_start", "id": call["id"], "tool": call["name"],
              "args": call["args"], "step": step, "attempt": attempt})
        started = time.perf_counter()
        if tool is None:
            # validate lets only registered tools through, but a thread may be resumed by
            # an agent without the tool (a CLI run without its --tools file): the call
            # fails and the turn goes on, where an assertion had failed the run.
            result = _failed(call, f"the tool '{call['name']}' is not registered in the "
                                   "agent that resumed this step", started, attempt,
                             limits.summary_char_limit)
        else:
            try:
                run = run_tool(tool, call["args"],
                               timeout_s=settings.timeout_for(call["name"], limits),
                               token=token_for(config, runtime.store), config=config)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # a tool's failure (even CancelledError) is a result
                if isinstance(exc, Exception) and attempt < policy.max_attempts and retry_on(
                        exc):
                    raise  # the node's RetryPolicy runs this call again
                result = _failed(call, _describe(exc), started, attempt,
                                 limits.summary_char_limit)
            else:
                result = _finished(call, run, tool, runtime, task, attempt,
                                   limits.summary_char_limit)
        emit({"event": "tool_end", "id": call["id"], "result_id": result["result_id"],
              "tool": call["name"], "outcome": result["outcome"],
              "ok": result["outcome"] == "ok", "error": result["error"],
              "duration_ms": result["duration_ms"], "step": step,
              "attempts": result["attempts"]})
        if settings.stats is not None:
            settings.stats.record_call(call["name"], ok=result["outcome"] == "ok",
                                       timed_out=result["outcome"] == "timeout",
                                       duration_ms=result["duration_ms"])
        return {"call_results": [result]}

    return execute


def _finished(call: ToolCall, run: ToolRun, tool: Any, runtime: Runtime[Context],
              task: ExecuteInput, attempt: int, limit: int) -> CallResult:
    duration = round(run.duration_ms, 2)
    if run.outcome != "ok":
        error = "timeout" if run.outcome == "timeout" else "cancelled"
        if run.note:
            error += f" ({run.note})"
        return CallResult(call_id=call["id"], result_id=call["result_id"],
                          outcome=run.outcome, error=error,
                          summary=failure_summary(call["name"], error)[:limit], preview="",
                          sources=[], duration_ms=duration, attempts=attempt, stored=False)
    stored = False
    if runtime.store is not None:
        try:
            put_result(runtime.store, task["thread_id"], call["result_id"], call["name"],
                       call["args"], run.data, run.artifact)
            stored = True
        except Exception as exc:  # the summary still reaches the model; only the full copy
            # is lost: one line, not a traceback in the user's terminal
            log.warning("could not store result %s of %s: %s: %s", call["result_id"],
                        call["name"], type(exc).__name__, exc,
                        exc_info=log.isEnabledFor(logging.DEBUG))
    return ok_result(call, run.data, tool.summarizer, limit, duration_ms=duration,
                     attempts=attempt, stored=stored)


def ok_result(call: ToolCall, data: Any, summarizer: Any, limit: int, *, duration_ms: float,
              attempts: int, stored: bool) -> CallResult:
    """A call's ``ok`` result from its data: summary, preview and sources."""
    # ``sources_in`` (tools/, which does not import the graph's types) gives plain dicts
    # of the ``Source`` keys.
    return CallResult(call_id=call["id"], result_id=call["result_id"], outcome="ok",
                      error=None,
                      summary=result_summary(summarizer, call["name"], data, limit),
                      preview=preview(data), sources=sources_in(data),  # type: ignore[typeddict-item]
                      duration_ms=duration_ms, attempts=attempts, stored=stored)


def _failed(call: ToolCall, error: str, started: float, attempt: int,
            limit: int) -> CallResult:
    return CallResult(call_id=call["id"], result_id=call["result_id"], outcome="error",
                      error=error, summary=failure_summary(call["name"], error)[:limit],
                      preview="", sources=[],
                      duration_ms=round((time.perf_counter() - started) * 1000, 2),
                      attempts=attempt, stored=False)


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc).strip()
    except Exception as broken:  # an exception whose __str__ fails: the call failed all the
        # same, and saying so must not fail the run
        text = f"(its message could not be read: {type(broken).__name__})"
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if len(described) <= ERROR_CHARS:
        return described
    return described[:ERROR_CHARS].rstrip() + f"… ({len(described):,} characters in all)"


def _retry_predicate(retry_on: Any) -> Callable[[BaseException], bool]:
    if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        return lambda exc: isinstance(exc, retry_on)
    if isinstance(retry_on, tuple | list):
        kinds = tuple(retry_on)
        return lambda exc: isinstance(exc, kinds)
    return retry_on
