"""The strict tool registry: what the model may call, and how its calls are checked."""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from callgate.tools.validation import check_args

Summarizer = Callable[[str, Any], str]


@dataclass
class Tool:
    """A registered tool: a LangChain tool plus the policy callgate applies around it."""

    name: str
    description: str
    schema: dict[str, Any]
    runnable: BaseTool
    timeout_s: float | None = None
    sensitive: bool = False
    summarizer: Summarizer | None = None
    category: str | None = None
    source: str = "python"


class _ValidationFields(NamedTuple):
    valid: bool
    error: str | None
    tool: str | None
    args: dict[str, Any]


class ValidationResult(_ValidationFields):
    """``(valid, error, tool, args)``; ``dropped`` lists unknown arguments that were removed."""

    dropped: tuple[str, ...]

    def __new__(cls, valid: bool, error: str | None, tool: str | None,
                args: dict[str, Any], dropped: Iterable[str] = ()) -> ValidationResult:
        self = super().__new__(cls, valid, error, tool, args)
        self.dropped = tuple(dropped)
        return self


class ToolRegistry:
    """Tools by name, with strict validation of calls against their JSON schemas."""

    def __init__(self, tools: Iterable[Any] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if isinstance(item, Tool):
                self.add(item)
            else:
                self.register(item)

    # -- registration -------------------------------------------------------------------
    def register(
        self,
        func_or_tool: Callable[..., Any] | BaseTool,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = None,
        sensitive: bool = False,
        summarizer: Summarizer | None = None,
        category: str | None = None,
        source: str | None = None,
    ) -> Tool:
        """Register a Python function (sync or async) or a LangChain tool; return the Tool."""
        if isinstance(func_or_tool, BaseTool):
            # Errors must raise, so a failure is recorded as one (a tool that handles its
            # own errors would return the error text as an "ok" result).
            updates: dict[str, Any] = {"handle_tool_error": False,
                                       "handle_validation_error": False}
            updates.update((k, v) for k, v in (("name", name), ("description", description))
                           if v)
            runnable = func_or_tool.model_copy(update=updates)
            origin = source or "langchain"
        elif callable(func_or_tool):
            runnable = _function_tool(func_or_tool, name, description)
            origin = source or "python"
        else:
            raise TypeError(f"cannot register {func_or_tool!r}: expected a function or a "
                            "LangChain BaseTool")
        spec = convert_to_openai_tool(runnable)["function"]
        schema = spec.get("parameters") or {"type": "object", "properties": {}}
        tool = Tool(
            name=runnable.name,
            description=runnable.description or spec.get("description", ""),
            schema=schema,
            runnable=runnable,
            timeout_s=timeout_s,
            sensitive=sensitive,
            summarizer=summarizer,
            category=category,
            source=origin,
        )
        return self.add(tool)

    def tool(self, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`register`: ``@registry.tool(sensitive=True)``."""

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            self.register(func, **options)
            return func

        return decorate

    def add(self, tool: Tool) -> Tool:
        """Add a ready-made :class:`Tool`; names must be unique."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    # -- lookup -------------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def as_langchain_tools(self) -> list[BaseTool]:
        """The tools as LangChain tools, ready for ``model.bind_tools``."""
        return [t.runnable for t in self._tools.values()]

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry holding only the named tools (same Tool objects)."""
        chosen = ToolRegistry()
        for name in names:
            chosen.add(self._tools[name])
        return chosen

    # -- validation ---------------------------------------------------------------------
    def validate(self, payload: Any) -> ValidationResult:
        """Check a call ``{"tool", "args"}`` (or ``{"name", "arguments"}``) strictly."""
        if not isinstance(payload, dict):
            return ValidationResult(False, "a tool call must be a JSON object with the tool "
                                    f"name and its arguments, got {type(payload).__name__}",
                                    None, {})
        name = payload.get("tool", payload.get("name"))
        if not isinstance(name, str) or not name:
            return ValidationResult(False, "the tool call has no tool name "
                                    f"(valid tools: {self._names_text()})", None, {})
        tool = self._tools.get(name)
        if tool is None:
            return ValidationResult(False, self.unknown_tool_message(name), name, {})
        raw = next((payload[k] for k in ("args", "arguments", "parameters") if k in payload), {})
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                return ValidationResult(False, f"arguments for '{name}' are not valid JSON "
                                        f"({exc.msg} at position {exc.pos})", name, {})
        if raw is None:
            raw = {}
        result = check_args(tool.schema, raw)
        if not result.ok:
            return ValidationResult(False, f"invalid call to '{name}': "
                                    + "; ".join(result.errors), name, result.args,
                                    result.dropped)
        return ValidationResult(True, None, name, result.args, result.dropped)

    def unknown_tool_message(self, name: str) -> str:
        """``Unknown tool 'x'`` with the valid names and the nearest one as a hint."""
        message = f"Unknown tool '{name}'. Valid tools: {self._names_text()}."
        close = difflib.get_close_matches(name, self.names, n=1, cutoff=0.5)
        if close:
            message += f" Did you mean '{close[0]}'?"
        return message

    def _names_text(self) -> str:
        return ", ".join(self.names) if self._tools else "(none)"


def _function_tool(func: Callable[..., Any], name: str | None,
                   description: str | None) -> StructuredTool:
    doc = description or inspect.getdoc(func)
    if not doc:
        raise ValueError(f"tool {name or func.__name__!r} needs a description: give the "
                         "function a docstring or pass description=")
    options: dict[str, Any] = {"name": name or func.__name__, "description": doc}
    if inspect.iscoroutinefunction(func):
        return StructuredTool.from_function(coroutine=func, **options)
    return StructuredTool.from_function(func=func, **options)
