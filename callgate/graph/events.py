"""The custom stream events (``stream_mode="custom"``): a documented, typed contract.

Every event is a dict with an ``event`` key naming its kind. ``tool_start`` and ``tool_end``
come from the node that runs each call; a call that did not run (refused as invalid or
ungrounded, denied, skipped, a repeat answered from the earlier result) gets a ``tool_end``
alone, with ``duration_ms`` 0 and its ``outcome`` saying why; one sent back for the step's
correction is a ``call_refused`` (``correct`` sends it). ``status`` marks the loop's
phases, so a CLI or UI can show what the agent is doing before any token arrives.
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

Outcome = Literal["ok", "error", "timeout", "invalid", "ungrounded", "denied", "skipped",
                  "repeat", "cancelled"]
Phase = Literal["thinking", "answering", "approval", "calling"]


class ToolStartEvent(TypedDict):
    """A tool call begins: ``id`` is the model's call id; ``attempt`` counts from 1 (a
    transient failure retried under the tool ``RetryPolicy`` starts again, with 2, 3…)."""

    event: Literal["tool_start"]
    id: str
    tool: str
    args: dict[str, Any]
    step: int
    attempt: int


class ToolEndEvent(TypedDict):
    """A tool call ended, or did not run (no ``tool_start`` then); ``result_id`` (``R3``) is
    how the answer cites it."""

    event: Literal["tool_end"]
    id: str
    result_id: str
    tool: str
    outcome: Outcome
    ok: bool
    error: str | None
    duration_ms: float
    step: int
    attempts: int  # how many times the call was started: 0 for one that did not run


class CallRefusedEvent(TypedDict):
    """A call refused before it ran (``invalid`` or ``ungrounded``) and sent back to the
    model for the step's one correction: the model's next reply stands in for it."""

    event: Literal["call_refused"]
    id: str
    tool: str
    args: dict[str, Any]
    outcome: Literal["invalid", "ungrounded"]
    error: str
    step: int


class StatusEvent(TypedDict):
    """The loop entered a phase: ``thinking`` (the model decides), ``calling`` (tools run),
    ``approval`` (waiting for a person), ``answering`` (the final answer is written)."""

    event: Literal["status"]
    phase: Phase
    step: int


StreamEvent = ToolStartEvent | ToolEndEvent | CallRefusedEvent | StatusEvent
