"""What the nodes of one compiled agent share: the tools, the limits, the decide strategy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import AnyMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import RetryPolicy

from callgate.tools.registry import ToolRegistry


def _transient(exc: BaseException) -> bool:
    """Errors worth retrying: network trouble and 5xx/429 responses, not bugs or bad input."""
    if isinstance(exc, ConnectionError | OSError) and not isinstance(exc, FileNotFoundError):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(status, int) and (status >= 500 or status == 429)


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

    async def aanswer_now(self, messages: list[AnyMessage], instruction: str,
                          config: RunnableConfig) -> str: ...

    def format_example(self, tool_name: str, schema: dict[str, Any]) -> str | None: ...


@dataclass
class LoopSettings:
    """Limits and policies of the tool loop (runtime configuration, not state)."""

    registry: ToolRegistry
    max_steps: int = 5
    tool_timeout_s: float = 12.0
    summary_char_limit: int = 900
    max_result_chars: int = 1_000_000
    corrections: int = 1
    max_repeats: int = 2
    max_calls_per_step: int = 4  # ReAct path: calls the model may write in one reply
    # Flag argument values that appear nowhere in the conversation (callgate.tools.grounding);
    # None: on for local llama.cpp models on the ReAct path, whose small models invent them.
    grounding: bool | None = None
    tool_retry: RetryPolicy = DEFAULT_TOOL_RETRY
    auto_approve: bool | Callable[[dict[str, Any]], bool] = False
    approval_patterns: tuple[str, ...] = ()
    stats: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def timeout_for(self, tool_name: str) -> float:
        tool = self.registry.get(tool_name)
        return tool.timeout_s if tool and tool.timeout_s else self.tool_timeout_s
