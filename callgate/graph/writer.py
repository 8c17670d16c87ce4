"""Custom stream events (``stream_mode="custom"``), a no-op outside a streaming run."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer


def emit(event: dict[str, Any]) -> None:
    """Send ``event`` to the custom stream if the run has one."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run (direct unit use)
        return
    writer(event)
