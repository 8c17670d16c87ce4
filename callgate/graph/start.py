"""The ``start`` node: opens a user turn by resetting the per-turn counters."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from callgate.graph.cancellation import begin_run
from callgate.graph.settings import LoopSettings


def make_start(settings: LoopSettings):
    def start(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        begin_run(config)
        return {
            "mode": state.get("mode") or "agent",
            "step": 0,
            "corrections_left": settings.corrections,
            "repeats": 0,
            "pending_calls": [],
            "validation_errors": [],
            "step_results": [],
            "draft_answer": None,
            "final_answer": None,
            "stop_reason": None,
            "citations": [],
            "tools_used": [],
            "status": "running",
            "turn_start": len(state.get("tool_events") or []),
        }

    return start
