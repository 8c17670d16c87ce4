"""The state the tool loop carries between nodes (and into every checkpoint)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

Status = Literal["running", "done", "cancelled", "failed", "step_limit"]
Mode = Literal["agent", "work", "chat"]


class InputState(TypedDict, total=False):
    """What a caller sends: the conversation so far, and whether tools may be used."""

    messages: Annotated[list[AnyMessage], add_messages]
    mode: Mode


class OutputState(TypedDict, total=False):
    """What a run returns."""

    messages: Annotated[list[AnyMessage], add_messages]
    final_answer: str | None
    tool_events: Annotated[list[dict[str, Any]], operator.add]
    tools_used: list[str]
    citations: list[dict[str, Any]]
    status: Status


class AgentState(InputState, OutputState, total=False):
    """The whole state. Per-turn fields are reset by the ``start`` node.

    ``pending_calls`` are the calls of the current step (``{id, name, args, ...}``),
    ``validation_errors`` their problems, ``step_results`` what ``execute`` produced for
    ``summarize``; ``tool_events`` is the append-only log of every executed call with its
    full result; ``turn_start`` indexes the first event of this turn.
    """

    step: int
    corrections_left: int
    repeats: int
    pending_calls: list[dict[str, Any]]
    validation_errors: list[dict[str, Any]]
    step_results: list[dict[str, Any]]
    draft_answer: str | None
    stop_reason: str | None
    turn_start: int


class DecideOutput(TypedDict, total=False):
    """What a decide subgraph hands back (never the append-only logs, or they'd double)."""

    messages: Annotated[list[AnyMessage], add_messages]
    pending_calls: list[dict[str, Any]]
    validation_errors: list[dict[str, Any]]
    draft_answer: str | None
    step: int
