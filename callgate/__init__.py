"""callgate: reliable LLM tool calling as one LangGraph graph, for hosted and local models."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported eagerly: importing the submodule `callgate.sanitize` would otherwise shadow the
# function of the same name on the package (the module itself only needs `re`).
from callgate.sanitize import StreamSanitizer, sanitize

# Public names resolve lazily so `import callgate` (and the CLI) stays fast and a
# missing optional dependency only fails the feature that needs it.
_EXPORTS = {
    "build_agent": "callgate.graph.builder",
    "AgentState": "callgate.graph.state",
    "CancelToken": "callgate.graph.cancellation",
    "cancel": "callgate.graph.cancellation",
    "Context": "callgate.graph.context",
    "get_result": "callgate.graph.results",
    "aget_result": "callgate.graph.results",
    "ToolRegistry": "callgate.tools.registry",
    "Tool": "callgate.tools.registry",
    "ValidationResult": "callgate.tools.registry",
    "parse_model_output": "callgate.parsing",
    "ParsedOutput": "callgate.parsing",
    "load_model": "callgate.models.spec",
    "ModelServerUnreachableError": "callgate.models.errors",
}

__all__ = [
    "AgentState",
    "CancelToken",
    "Context",
    "ModelServerUnreachableError",
    "ParsedOutput",
    "StreamSanitizer",
    "Tool",
    "ToolRegistry",
    "ValidationResult",
    "aget_result",
    "build_agent",
    "cancel",
    "get_result",
    "load_model",
    "parse_model_output",
    "sanitize",
]

if TYPE_CHECKING:
    from callgate.graph.builder import build_agent
    from callgate.graph.cancellation import CancelToken, cancel
    from callgate.graph.context import Context
    from callgate.graph.results import aget_result, get_result
    from callgate.graph.state import AgentState
    from callgate.models.errors import ModelServerUnreachableError
    from callgate.models.spec import load_model
    from callgate.parsing import ParsedOutput, parse_model_output
    from callgate.tools.registry import Tool, ToolRegistry, ValidationResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'callgate' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
