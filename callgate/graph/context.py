"""Per-run configuration: LangGraph's ``context_schema``.

Each field may be set per run — ``agent.invoke(inputs, config, context={"max_steps": 3})``,
a ``langgraph_sdk`` run's ``context``, or Studio's assistant configuration — and falls back
to the value the agent was built with (``build_agent(..., max_steps=5)``).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Literal, get_args

from langgraph.runtime import Runtime
from pydantic import BaseModel
from typing_extensions import TypedDict

Approval = Literal["ask", "auto", "deny"]


class Context(TypedDict, total=False):
    """What a run may override."""

    max_steps: int
    """Model turns that may call tools before the loop must answer (default 5)."""
    tool_timeout_s: float
    """Seconds a tool call may take, unless the tool sets its own (default 12)."""
    summary_char_limit: int
    """Characters of a result summary the model sees (default 900)."""
    grounding: bool
    """Check that argument values come from the conversation (default: on for llama.cpp
    models on the ReAct path)."""
    max_calls_per_step: int
    """Calls a ReAct model may write in one reply (default 4)."""
    approval: Approval
    """Sensitive calls: ``ask`` (interrupt), ``auto`` (approve), ``deny`` (refuse)."""


@dataclass(frozen=True)
class RunLimits:
    """The resolved per-run values every node reads."""

    max_steps: int = 5
    tool_timeout_s: float = 12.0
    summary_char_limit: int = 900
    grounding: bool = False
    max_calls_per_step: int = 4
    approval: Approval = "ask"

    def __post_init__(self) -> None:
        # A step limit of 0 would leave the loop no step to decide in: refused here, for a
        # build_agent argument and a run's context alike.
        for name in ("max_steps", "summary_char_limit", "max_calls_per_step"):
            value = getattr(self, name)
            if not (_is_number(value) and float(value).is_integer() and value >= 1):
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
            object.__setattr__(self, name, int(value))  # 3.0 from a JSON client is 3
        timeout = self.tool_timeout_s
        if not (_is_number(timeout) and timeout > 0):  # NaN is not above 0 either
            raise ValueError(f"tool_timeout_s must be a number of seconds above 0, "
                             f"got {timeout!r}")
        if not isinstance(self.grounding, bool):  # "false" from a form would switch it on
            raise ValueError(f"grounding must be true or false, got {self.grounding!r}")
        if self.approval not in get_args(Approval):
            raise ValueError(f"approval must be one of {list(get_args(Approval))}, "
                             f"got {self.approval!r}")

    def merged(self, context: Context | dict[str, Any] | None) -> RunLimits:
        """These limits with the run's context applied over them (unknown keys refused)."""
        if not context:
            return self
        known = {f.name for f in fields(self)}
        if isinstance(context, Mapping):
            context = dict(context)
        elif is_dataclass(context) or isinstance(context, BaseModel):
            context = {f.name: getattr(context, f.name) for f in fields(self)
                       if getattr(context, f.name, None) is not None}
        else:
            raise ValueError(f"a run's context is a dict of {sorted(known)}, got "
                             f"{type(context).__name__} {str(context)[:60]!r}")
        unknown = set(context) - known
        if unknown:
            raise ValueError(f"unknown context field(s) {sorted(unknown)}; "
                             f"known: {sorted(known)}")
        return replace(self, **{k: v for k, v in context.items() if v is not None})


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def limits_of(runtime: Runtime[Context] | None, defaults: RunLimits) -> RunLimits:
    """The limits of the run ``runtime`` belongs to."""
    context = getattr(runtime, "context", None)
    return defaults.merged(context)
