"""The ``summarize`` node: each result becomes a bounded summary with a stable id.

The summary is what the model sees (as the tool message / observation); the full result
stays in ``tool_events`` for Studio, citations and the caller.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage

from callgate.graph.settings import LoopSettings
from callgate.tools.summaries import bounded, default_summary, failure_summary


def make_summarize(settings: LoopSettings):
    limit = settings.summary_char_limit

    def summarize(state: dict[str, Any]) -> dict[str, Any]:
        base = len(state.get("tool_events") or [])
        ids: dict[str, str] = {}
        events: list[dict[str, Any]] = []
        messages: list[ToolMessage] = []
        for n, result in enumerate(state.get("step_results") or [], start=base + 1):
            rid = f"R{n}"
            ids[result["call_id"]] = rid
            repeat_of = result.get("repeat_of") or ids.get(result.get("repeat_of_call") or "")
            summary = _summary(result, settings, limit)
            if repeat_of:
                summary = bounded(f"(repeat of {repeat_of}, already called at step "
                                  f"{result.get('repeat_step')}; the result will not change) "
                                  + summary, limit)
            event = {key: result.get(key) for key in (
                "tool", "args", "ok", "error", "data", "duration_ms", "step", "dropped")}
            event.update(id=rid, call_id=result["call_id"], summary=summary,
                         repeat_of=repeat_of, denied=bool(result.get("denied")),
                         skipped=bool(result.get("skipped")),
                         timed_out=bool(result.get("timed_out")))
            events.append(event)
            messages.append(ToolMessage(f"[{rid}] {summary}", tool_call_id=result["call_id"],
                                        name=result["tool"],
                                        status="success" if result["ok"] else "error"))
        return {"tool_events": events, "messages": messages, "step_results": []}

    return summarize


def _summary(result: dict[str, Any], settings: LoopSettings, limit: int) -> str:
    name = result["tool"]
    if not result["ok"]:
        return bounded(failure_summary(name, result.get("error") or "unknown error"), limit)
    tool = settings.registry.get(name)
    summarizer = tool.summarizer if tool and tool.summarizer else default_summary
    try:
        text = summarizer(name, result.get("data"))
    except Exception as exc:  # a broken summarizer must not lose the result
        text = default_summary(name, result.get("data")) + f" (summarizer failed: {exc})"
    return bounded(text, limit)
