"""The strict tool registry: what the model may call, and how its calls are checked."""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import math
import re
import typing
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple

from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from callgate.graph.cancellation import CancelToken
from callgate.tools.validation import SchemaInvalid, check_args, compile_schema

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
    # The parameter the runner fills with the call's CancelToken (cooperative cancellation);
    # it is injected, so it is not in ``schema``.
    cancel_param: str | None = None
    # Arguments whose text is made of the conversation's words (a search query): under
    # grammar-constrained decoding they are runs of its words (``grammar.Values.words``).
    conversation_words: tuple[str, ...] = ()
    # How much a request is about this tool beyond the words of its name and description,
    # added to its lexical score (``relevance.tool_scores``): rag_search's is the request's
    # words found together in an indexed passage, which no description can list.
    relevance: Callable[[str], float] | None = None
    # The words a request may use for the tool's own names ("ram" for "memory"): the
    # relevance score, the answer checks and the results' answer read it with the tool's
    # words (``relevance.in_tool_words``).
    synonyms: Mapping[str, str] = field(default_factory=dict)


_WORD = re.compile(r"[^\W_]+")


def synonyms_problem(synonyms: Any) -> str | None:
    """Why ``synonyms`` cannot be a tool's ``synonyms`` (one word to one word), or None."""
    if not isinstance(synonyms, Mapping):
        return f"synonyms must map words to words, got {type(synonyms).__name__}"
    odd = [f"{k!r}: {v!r}" for k, v in synonyms.items()
           if not (isinstance(k, str) and isinstance(v, str)
                   and _WORD.fullmatch(k) and _WORD.fullmatch(v))]
    return "synonyms map one word to one word; not " + ", ".join(odd) if odd else None


# What OpenAI, Anthropic and Gemini all accept as a function name.
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def single_input(schema: dict[str, Any]) -> str | None:
    """The one text argument a tool takes, if it takes one: its only required argument, or
    its only argument, where that is a string (or untyped)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    required = [n for n in schema.get("required") or [] if n in properties]
    names = required if len(required) == 1 else list(properties) if not required else []
    if len(names) != 1:
        return None
    spec = properties[names[0]]
    kind = spec.get("type", "string") if isinstance(spec, dict) else None
    return names[0] if kind == "string" or kind == ["string"] else None


def check_tool_name(name: str) -> None:
    """Raise ``ValueError`` unless model providers accept ``name`` (``[a-zA-Z0-9_-]{1,64}``)."""
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise ValueError(f"tool name {name!r} is not accepted by model providers: use 1 to 64 "
                         "letters, digits, '_' or '-' (rename it with name=...)")


def conversation_words_problem(schema: dict[str, Any], names: Iterable[str]) -> str | None:
    """Why ``names`` cannot be a tool's ``conversation_words`` (each must name a string
    argument of ``schema``), or None."""
    properties = schema.get("properties") or {}
    unknown = sorted(n for n in names if n not in properties)
    if unknown:
        return f"conversation_words names no argument of the tool: {unknown}"
    typed = sorted(n for n in names if isinstance(properties[n], dict)
                   and properties[n].get("type", "string") != "string")
    if typed:
        return f"conversation_words names arguments that are not strings: {typed}"
    return None


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
        conversation_words: Iterable[str] = (),
        relevance: Callable[[str], float] | None = None,
        synonyms: Mapping[str, str] | None = None,
    ) -> Tool:
        """Register a Python function (sync or async) or a LangChain tool; return the Tool.

        ``conversation_words`` names string arguments whose text is made of the
        conversation's words, such as a search query: a llama.cpp model's grammar writes them
        as runs of those words (``"latest Python release"``, not ``"latest_python_release"``).
        ``relevance`` scores how much a request is about the tool beyond its description's
        words (see :class:`Tool`). ``synonyms`` maps the words a question may use to the
        names the tool's results give figures (``{"ram": "memory"}``): one word each.

        A parameter annotated ``CancelToken`` (for a LangChain tool:
        ``Annotated[CancelToken, InjectedToolArg]``) opts into cooperative cancellation: it is
        left out of the schema and the runner passes a token cancelled on timeout or cancel.
        """
        if isinstance(func_or_tool, BaseTool):
            # Errors must raise, so a failure is recorded as one (a tool that handles its
            # own errors would return the error text as an "ok" result).
            updates: dict[str, Any] = {"handle_tool_error": False,
                                       "handle_validation_error": False}
            updates.update((k, v) for k, v in (("name", name), ("description", description))
                           if v)
            runnable = func_or_tool.model_copy(update=updates)
            origin = source or "langchain"
            cancel_param = _schema_cancel_param(runnable)
        elif callable(func_or_tool):
            runnable, cancel_param = _function_tool(func_or_tool, name, description)
            origin = source or "python"
        else:
            raise TypeError(f"cannot register {func_or_tool!r}: expected a function or a "
                            "LangChain BaseTool")
        try:
            spec = convert_to_openai_tool(runnable)["function"]
        except KeyError as exc:  # a $ref langchain-core cannot resolve
            raise SchemaInvalid(f"tool {runnable.name!r}: its parameters schema is not valid: "
                                f"{exc.args[0] if exc.args else exc}") from None
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
            cancel_param=cancel_param,
            conversation_words=tuple(conversation_words),
            relevance=relevance,
            # Not a mapping: left as given, for add() to say what is wrong with it.
            synonyms=dict(synonyms) if isinstance(synonyms, Mapping) else synonyms or {},
        )
        return self.add(tool)

    def tool(self, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`register`: ``@registry.tool(sensitive=True)``."""

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            self.register(func, **options)
            return func

        return decorate

    def add(self, tool: Tool) -> Tool:
        """Add a ready-made :class:`Tool`; names must be unique and acceptable to providers."""
        check_tool_name(tool.name)
        timeout = tool.timeout_s
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(
                timeout, int | float) or not 0 < timeout < math.inf):
            # As tools.yml says it: 0 had meant the default, "5" failed every call.
            raise ValueError(f"tool {tool.name!r}: timeout_s must be a positive number of "
                             f"seconds or None (the run's), got {timeout!r}")
        if not isinstance(tool.sensitive, bool):
            raise ValueError(f"tool {tool.name!r}: sensitive must be True or False, got "
                             f"{tool.sensitive!r}")
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        try:
            compile_schema(tool.schema)  # checked against its meta-schema once, then cached
        except SchemaInvalid as exc:
            raise SchemaInvalid(f"tool {tool.name!r}: its parameters schema is {exc}") from None
        if problem := conversation_words_problem(tool.schema, tool.conversation_words):
            raise ValueError(f"tool {tool.name!r}: {problem}")
        if problem := synonyms_problem(tool.synonyms):
            raise ValueError(f"tool {tool.name!r}: {problem}")
        self._tools[tool.name] = tool
        return tool

    # -- lookup -------------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str | None) -> Tool | None:
        return None if name is None else self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def single_inputs(self) -> dict[str, str]:
        """Each tool that takes one text argument (:func:`single_input`), with its name: a
        ReAct ``Action Input:`` written as plain text is that argument's value."""
        return {t.name: arg for t in self._tools.values() if (arg := single_input(t.schema))}

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
    def validate(self, payload: Any, *, defaults: bool = True) -> ValidationResult:
        """Check a call ``{"tool", "args"}`` (or ``{"name", "arguments"}``) strictly.

        Never raises; the rules are in :mod:`callgate.tools.validation`. ``defaults=False``
        leaves the schema's defaults out of the returned args (e.g. for an approver's edit)."""
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
        raw: Any = next((payload[k] for k in ("args", "arguments", "parameters")
                         if k in payload), {})
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                return ValidationResult(False, f"arguments for '{name}' are not valid JSON "
                                        f"({exc.msg} at position {exc.pos})", name, {})
            except (RecursionError, ValueError):  # nested too deep; an int over 4300 digits
                return ValidationResult(False, f"arguments for '{name}' could not be read: "
                                        "nested too deeply or a number too long", name, {})
        if raw is None:
            raw = {}
        result = check_args(tool.schema, raw, defaults=defaults)
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
                   description: str | None) -> tuple[StructuredTool, str | None]:
    doc = description or inspect.getdoc(func)
    tool_name: str = name if name else getattr(func, "__name__", "")
    check_tool_name(tool_name)
    if not doc:
        raise ValueError(f"tool {tool_name!r} needs a description: give the "
                         "function a docstring or pass description=")
    parameters: Collection[inspect.Parameter]
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        parameters = []
    kinds = {p.kind for p in parameters}
    if inspect.Parameter.VAR_KEYWORD in kinds and not kinds & {
            inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}:
        # LangChain makes **kwargs one argument named "kwargs", which no call fills right:
        # {"a": 1} arrived as kwargs=None, {"kwargs": {"a": 1}} nested. Beside named
        # parameters, the model is told of those, as before.
        raise TypeError(f"cannot register {tool_name!r}: its **kwargs name no arguments a "
                        "model can be told of; give each a parameter")
    options: dict[str, Any] = {"name": tool_name, "description": doc}
    func, cancel_param = _inject_cancel(func)
    if inspect.iscoroutinefunction(func):
        return StructuredTool.from_function(coroutine=func, **options), cancel_param
    return StructuredTool.from_function(func=func, **options), cancel_param


def _is_cancel_type(hint: Any) -> bool:
    """``CancelToken``, ``CancelToken | None`` or either inside ``Annotated``."""
    if typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return all(isinstance(k, type) and issubclass(k, CancelToken) for k in kinds)


def _inject_cancel(func: Callable[..., Any]) -> tuple[Callable[..., Any], str | None]:
    """Mark a ``CancelToken`` parameter as LangChain's ``InjectedToolArg`` (so the model never
    sees it), on a wrapper that leaves ``func`` untouched and passes a fresh, never-cancelled
    token when the caller (LangChain's ToolNode, say) gives none."""
    try:
        hints = typing.get_type_hints(func, include_extras=True)
        signature = inspect.signature(func)
    except (NameError, TypeError, ValueError):  # unresolved annotations: nothing to inject
        return func, None
    found = [p for p in signature.parameters if p in hints and _is_cancel_type(hints[p])]
    if not found:
        return func, None
    param = found[0]
    injected = Annotated[CancelToken | None, InjectedToolArg]
    # The wrapper lives in this module, so its annotations must be resolved objects, not the
    # strings of a ``from __future__ import annotations`` module.
    hints = {**hints, param: injected}
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation),
                            default=None if p.name == param else p.default)
                  for p in signature.parameters.values()]

    def with_token(kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get(param) is None:
            kwargs[param] = CancelToken()
        return kwargs

    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            return await func(*args, **with_token(kwargs))
    else:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **with_token(kwargs))
    wrapper.__annotations__ = hints
    # inspect.signature reads ``__signature__``; typeshed declares no such attribute.
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=hints.get("return", signature.empty))
    return wrapper, param


def _schema_cancel_param(tool: BaseTool) -> str | None:
    """A LangChain tool's ``Annotated[CancelToken, InjectedToolArg]`` argument, if any."""
    schema = tool.args_schema
    if not isinstance(schema, type):
        return None
    fields = getattr(schema, "model_fields", {})
    return next((n for n, f in fields.items()
                 if f.annotation is not None and _is_cancel_type(f.annotation)), None)
