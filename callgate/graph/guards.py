"""Guards checked at every node boundary that spends a step: step limit, then cancellation."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from callgate.graph.cancellation import token_for
from callgate.graph.settings import LoopSettings


def guard(state: dict[str, Any], config: RunnableConfig, settings: LoopSettings) -> str | None:
    """``"cancelled"``, ``"step_limit"``, or None when the loop may go on."""
    if token_for(config).cancelled:
        return "cancelled"
    if state.get("step", 0) >= settings.max_steps:
        return "step_limit"
    return None


def cancelled(config: RunnableConfig) -> bool:
    return token_for(config).cancelled
