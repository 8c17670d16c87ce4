"""The state the tool loop carries between nodes (and into every checkpoint).

Checkpoints hold only bounded records: a call's summary (≤ ``summary_char_limit``) and a
short preview. The full result of every call lives in LangGraph's store
(``callgate.graph.results``), so a 10 MB result does not grow every checkpoint after it.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.channels import EphemeralValue
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from callgate.graph.events import Outcome

Status = Literal["running", "done", "cancelled", "failed", "step_limit"]
Mode = Literal["agent", "work", "chat"]


class Source(TypedDict):
    """A URL or document a result names, for the ``Sources:`` line."""

    url: str
    title: str


class CallError(TypedDict):
    """Why a call (or, with ``id=None``, a reply that could not be read, or an answer sent
    back: ``kind`` ``unsupported_answer``, with the ``answer``) was invalid."""

    id: str | None
    name: str | None
    error: str
    kind: NotRequired[str]
    answer: NotRequired[str]


class ToolCall(TypedDict):
    """A call the model made in this step, and what the loop decided about it.

    ``outcome`` is set only for a call that will not run (``invalid``, ``ungrounded``,
    ``denied``, ``skipped``, ``repeat``), with ``error`` saying why."""

    id: str
    name: str
    args: dict[str, Any]
    result_id: NotRequired[str]
    dropped: NotRequired[list[str]]
    outcome: NotRequired[Outcome]
    error: NotRequired[str]
    kind: NotRequired[str]
    approved: NotRequired[str]
    repeat_of: NotRequired[str]


class CallResult(TypedDict):
    """What running one call produced (the ``execute`` task's write)."""

    call_id: str
    result_id: str
    outcome: Outcome
    error: str | None
    summary: str
    preview: str
    sources: list[Source]
    duration_ms: float
    attempts: int
    stored: bool


class ToolEvent(TypedDict):
    """One call of the thread, as the caller and Studio see it.

    ``outcome`` is ``ok`` for a call that ran and returned; anything else means the call
    did not run or did not complete. The full result is in the store under ``id``."""

    id: str
    call_id: str
    tool: str
    args: dict[str, Any]
    outcome: Outcome
    ok: bool
    error: str | None
    summary: str
    preview: str
    sources: list[Source]
    duration_ms: float
    step: int
    turn: int
    dropped: list[str]
    repeat_of: str | None
    stored: bool


class Problem(TypedDict):
    """A call of this turn that did not complete ``ok``: the answer was given without it."""

    id: str
    tool: str
    outcome: Outcome
    error: str | None


class Citation(TypedDict):
    id: str
    tool: str
    explicit: bool
    sources: list[Source]


class InputState(TypedDict, total=False):
    """What a caller sends: the conversation so far, and whether tools may be used (a
    run without ``mode`` keeps the thread's last one, ``agent`` at first)."""

    messages: Annotated[list[AnyMessage], add_messages]
    # Ephemeral, so a run whose ``start`` refuses an unknown mode leaves no mode in the
    # thread for the next run to fail on; ``start`` keeps a valid one as ``turn_mode``.
    mode: Annotated[Mode, EphemeralValue]


class OutputState(TypedDict, total=False):
    """What a run returns. ``problems`` lists the calls of this turn that did not complete
    ``ok``: empty means a clean answer."""

    messages: Annotated[list[AnyMessage], add_messages]
    final_answer: str | None
    tool_events: Annotated[list[ToolEvent], operator.add]
    tools_used: list[str]
    citations: list[Citation]
    problems: list[Problem]
    answer_source: Literal["model", "results", "loop"] | None
    answer_checks: list[str]
    status: Status


def _merge_results(left: list[CallResult], right: list[CallResult] | None) -> list[CallResult]:
    """Results of the step's parallel calls accumulate; ``None`` clears them."""
    return [] if right is None else [*left, *right]


class AgentState(InputState, OutputState, total=False):
    """The whole state. Per-turn fields are reset by the ``start`` node.

    ``pending_calls`` are the calls of the current step, ``validation_errors`` their
    problems, ``call_results`` what the parallel ``execute`` tasks produced for
    ``summarize``; ``tool_events`` is the append-only log of every call of the thread;
    ``turn_start`` indexes the first event of this turn; ``turn_mode`` is the mode it runs
    in.
    """

    turn_mode: Mode
    turn: int
    step: int
    corrected_at: int
    # The calls a correction sent back (refused, and their siblings not run), until the
    # corrected reply: where it makes no call, they become this turn's events.
    sent_back: list[ToolCall]
    repeats: int
    pending_calls: list[ToolCall]
    validation_errors: list[CallError]
    call_results: Annotated[list[CallResult], _merge_results]
    draft_answer: str | None
    stop_reason: str | None
    turn_start: int


class ExecuteInput(TypedDict):
    """What ``execute`` gets for one call (sent with ``Send``)."""

    call: ToolCall
    step: int
    thread_id: str | None


class DecideOutput(TypedDict, total=False):
    """What a decide subgraph hands back (never the append-only logs, or they'd double)."""

    messages: Annotated[list[AnyMessage], add_messages]
    pending_calls: list[ToolCall]
    validation_errors: list[CallError]
    draft_answer: str | None
    step: int
