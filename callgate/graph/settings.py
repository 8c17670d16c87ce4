"""What the nodes of one compiled agent share: the tools, the policies, the default limits.

Per-run values (step limit, timeouts, grounding…) are LangGraph context
(:mod:`callgate.graph.context`); ``LoopSettings`` holds what is fixed when the agent is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import AnyMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import RetryPolicy

from callgate.graph.context import Approval, RunLimits
from callgate.tools.registry import ToolRegistry

# OS errors about the call's own input: running the call again finds the same file, the
# same permissions (and repeats whatever the tool did before it failed).
_BAD_INPUT_OS_ERRORS = (FileNotFoundError, FileExistsError, PermissionError,
                        IsADirectoryError, NotADirectoryError)


def _transient(exc: BaseException) -> bool:
    """Errors worth retrying: network trouble and 5xx/429 responses, not bugs or bad input.

    A response's status decides first: ``requests``' ``HTTPError`` is an ``OSError``, and
    its 404 is no more transient than any other 4xx."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return status >= 500 or status == 429
    return isinstance(exc, OSError) and not isinstance(exc, _BAD_INPUT_OS_ERRORS)


DEFAULT_TOOL_RETRY = RetryPolicy(initial_interval=0.2, backoff_factor=2.0, max_interval=2.0,
                                 max_attempts=3, jitter=False, retry_on=_transient)


class DecideStrategy(Protocol):
    """How one kind of model decides: native tool calling or ReAct text."""

    name: str

    def subgraph(self, settings: LoopSettings) -> Runnable:
        """The ``decide`` node: a compiled subgraph when deciding takes several steps
        (Studio shows them), else one plain node."""
        ...

    def answer_now(self, messages: list[AnyMessage], instruction: str,
                   config: RunnableConfig) -> str: ...

    def format_example(self, tool_name: str, schema: dict[str, Any]) -> str | None: ...


# What the loop calls on ``LoopSettings.stats`` (``callgate.tools.stats.UsageStats``).
_STATS_METHODS = ("record_call", "record_invalid", "record_correction", "record_duplicate",
                  "record_denial")


@dataclass
class LoopSettings:
    """Build-time configuration of the tool loop; the limits are each run's defaults."""

    registry: ToolRegistry
    max_steps: int = 5
    tool_timeout_s: float = 12.0
    summary_char_limit: int = 900
    max_calls_per_step: int = 4  # ReAct path: calls the model may write in one reply
    # Check that argument values come from the conversation (callgate.tools.grounding);
    # None: on for local llama.cpp models on the ReAct path, whose small models invent them.
    grounding: bool | None = None
    corrections: int = 1  # correction rounds per step
    max_repeats: int = 2
    tool_retry: RetryPolicy = DEFAULT_TOOL_RETRY
    auto_approve: bool | Callable[[dict[str, Any]], bool] = False
    approval_patterns: tuple[str, ...] = ()
    stats: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.grounding is not None and not isinstance(self.grounding, bool):
            raise ValueError(f"grounding must be True, False or None (auto), got "
                             f"{self.grounding!r}")
        if not (isinstance(self.auto_approve, bool) or callable(self.auto_approve)):
            # "yes" or 1 had meant "ask": a setting that reads as approval but is not one.
            raise TypeError(f"auto_approve must be True, False or a function of the call, "
                            f"got {self.auto_approve!r}")
        missing = [name for name in _STATS_METHODS
                   if not callable(getattr(self.stats, name, None))]
        if self.stats is not None and missing:
            raise TypeError(f"stats must be a UsageStats (callgate.tools.stats), got "
                            f"{self.stats!r}, which has no {missing[0]}()")
        _ = self.defaults  # RunLimits refuses a bad limit: when built, not at the first run

    @property
    def defaults(self) -> RunLimits:
        approval: Approval = "auto" if self.auto_approve is True else "ask"
        return RunLimits(max_steps=self.max_steps, tool_timeout_s=self.tool_timeout_s,
                         summary_char_limit=self.summary_char_limit,
                         grounding=bool(self.grounding),
                         max_calls_per_step=self.max_calls_per_step, approval=approval)

    def timeout_for(self, tool_name: str, limits: RunLimits) -> float:
        tool = self.registry.get(tool_name)
        return tool.timeout_s if tool and tool.timeout_s else limits.tool_timeout_s
