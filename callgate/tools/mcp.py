"""MCP servers as callgate tools, through langchain-mcp-adapters.

Session lifecycle: every tool call opens its own MCP session (for stdio, a fresh server
process), which is what ``MultiServerMCPClient.get_tools()`` does by default. Each call
runs on an event loop of its own in the tool's thread (``callgate.tools.runner``), and a
long-lived session is bound to the loop that opened it, so per-call sessions are the one
lifecycle that works from ``invoke``, ``ainvoke`` and Jupyter alike. The cost is a server
start per call (about half a second for ``mcp-server-git``); a server that needs state
across calls should be run over streamable HTTP.

Tools are sensitive (the approval gate asks first) unless the server annotates them
``readOnlyHint: true`` or ``destructiveHint: false``: the MCP spec's default for
``destructiveHint`` is true, so a tool without annotations may destroy things. A name that
matches ``DEFAULT_SENSITIVE_MCP`` (write-like tools) is sensitive whatever its annotations.
A server's config can list more (``sensitive_tools``), exempt some (``safe_tools``), or
decide for all of its tools (``sensitive: true|false``). Names and patterns match without
regard to case.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from callgate.tools.registry import Tool, ToolRegistry, conversation_words_problem
from callgate.tools.summaries import default_summary
from callgate.tools.validation import SchemaInvalid

log = logging.getLogger(__name__)

DEFAULT_SENSITIVE_MCP: tuple[str, ...] = (
    "*commit*", "*push*", "*delete*", "*remove*", "*reset*", "*write*", "*create*",
    "*checkout*", "*add*",
)

_TRANSPORTS = {"stdio": "stdio", "streamable_http": "streamable_http",
               "streamable-http": "streamable_http", "http": "streamable_http", "sse": "sse"}
_CONNECTION_KEYS = {
    "stdio": {"command", "args", "env", "cwd"},
    "streamable_http": {"url", "headers"},
    "sse": {"url", "headers"},
}
_POLICY_KEYS = {"transport", "timeout_s", "sensitive", "sensitive_tools", "safe_tools",
                "sensitive_patterns", "conversation_words"}
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class MCPConfigError(ValueError):
    """A server entry that is wrong; ``key`` is the path of the offending value in it."""

    def __init__(self, server: str, message: str, key: tuple[str | int, ...] = ()) -> None:
        super().__init__(f"MCP server '{server}': {message}")
        self.server = server
        self.key = key


class MCPLoadError(RuntimeError):
    """A server that could not be reached or listed its tools; ``stray``: the lines it
    wrote that are not MCP messages (a ``command`` that is no MCP server)."""

    def __init__(self, server: str, cause: BaseException, stray: Sequence[str] = ()) -> None:
        said = (f"; it wrote {len(stray)} line{'s' * (len(stray) != 1)} that "
                f"{'are' if len(stray) != 1 else 'is'} not MCP (JSON-RPC), the first "
                f"{stray[0][:80]!r}: is its command an MCP server?") if stray else ""
        super().__init__(f"MCP server '{server}' could not be loaded: {_describe(cause)}{said}")
        self.server = server
        self.stray = tuple(stray)


# The MCP client logs each line a stdio server writes that is not JSON-RPC with a full
# traceback ("Failed to parse JSONRPC message from server"): 11 lines per line of a
# `command` that is no MCP server, before callgate's own one-line error. While the tools
# are listed, those records are taken off the log and kept per server (the server listing
# is a context variable, which the client's reader task inherits), to be said once.
_listing: ContextVar[tuple[_StrayLines, str] | None] = ContextVar("callgate_mcp_listing",
                                                                  default=None)
_STDIO_LOG = "mcp.client.stdio"


class _StrayLines(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[str, list[str]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        listing = _listing.get()
        # Another load's (loads may run at once, each with its filter): its filter takes it.
        if listing is None or listing[0] is not self or not record.getMessage().startswith(
                "Failed to parse JSONRPC"):
            return True
        server = listing[1]
        error = record.exc_info[1] if record.exc_info else None
        # pydantic's ValidationError holds the line it could not read as its input.
        found = error.errors() if isinstance(error, ValidationError) else []
        line = found[0].get("input") if found else None
        said = line if isinstance(line, str) else "?" if line is None else json.dumps(
            line, ensure_ascii=False, default=str)  # JSON, but no JSON-RPC message
        self.lines.setdefault(server, []).append(said)
        return False


@contextmanager
def _stray_lines() -> Iterator[_StrayLines]:
    logger, stray = logging.getLogger(_STDIO_LOG), _StrayLines()
    logger.addFilter(stray)
    try:
        yield stray
    finally:
        logger.removeFilter(stray)


@dataclass
class MCPServer:
    """One server: its langchain-mcp-adapters connection and callgate's policy for it."""

    name: str
    connection: dict[str, Any]
    timeout_s: float | None = None
    sensitive: bool | None = None  # True/False: every tool; None: per tool, by the rules
    sensitive_tools: tuple[str, ...] = ()
    safe_tools: tuple[str, ...] = ()
    patterns: tuple[str, ...] | None = None  # None: the loader's sensitive_patterns
    # Per tool, its string arguments made of the conversation's words (a search query).
    conversation_words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Set by the loader: registered names are ``<server>_<tool>`` (``tool_name_prefix``).
    prefixed: bool = False

    def own_name(self, tool: BaseTool | str) -> str:
        """The tool's name as the server lists it (without ``tool_name_prefix``'s
        ``server_`` prefix): the name this server's policy keys may use."""
        name = tool if isinstance(tool, str) else tool.name
        return name.removeprefix(f"{self.name}_") if self.prefixed else name

    def is_sensitive(self, tool: BaseTool, patterns: Sequence[str]) -> bool:
        """Whether ``tool`` of this server needs approval. Its rules match the registered
        name or the server's own (so ``sensitive_tools`` holds with ``tool_name_prefix``)."""
        names = {tool.name, self.own_name(tool)}

        def matches(rules: Iterable[str]) -> bool:
            return any(_matches(name, rules) for name in names)

        if self.sensitive is not None:
            return self.sensitive or matches(self.sensitive_tools)
        if matches(self.sensitive_tools):
            return True
        if matches(self.safe_tools):
            return False
        rules = patterns if self.patterns is None else self.patterns
        return matches(rules) or not annotated_safe(tool)

    def words_for(self, tool: BaseTool) -> tuple[str, ...]:
        """The tool's ``conversation_words``, keyed by its registered or its own name."""
        return (self.conversation_words.get(tool.name)
                or self.conversation_words.get(self.own_name(tool), ()))


def annotated_safe(tool: BaseTool) -> bool:
    """Whether the server says ``tool`` changes nothing: ``readOnlyHint: true`` or
    ``destructiveHint: false`` (langchain-mcp-adapters puts the annotations in metadata)."""
    hints = tool.metadata or {}
    return hints.get("readOnlyHint") is True or hints.get("destructiveHint") is False


def parse_server(name: str, spec: Mapping[str, Any]) -> MCPServer:
    """Check one ``mcp_servers`` entry and turn it into an :class:`MCPServer`.

    ``${VAR}`` in ``args``, ``env``, ``cwd``, ``url`` and ``headers`` is replaced by the
    environment variable (an unset one is an error), so secrets stay out of the file.
    """
    if not isinstance(spec, Mapping):
        raise MCPConfigError(name, f"expected a mapping, got {type(spec).__name__}")
    raw_transport = spec.get("transport", "stdio" if "command" in spec else None)
    if raw_transport is None:
        raise MCPConfigError(name, "missing key 'transport' (stdio or streamable_http)")
    transport = _TRANSPORTS.get(raw_transport) if isinstance(raw_transport, str) else None
    if transport is None:
        raise MCPConfigError(name, f"unknown transport {raw_transport!r} (expected one of "
                             "stdio, streamable_http, sse)", ("transport",))
    allowed = _CONNECTION_KEYS[transport] | _POLICY_KEYS
    for key in spec:
        if key not in allowed:
            raise MCPConfigError(name, f"unknown key {key!r} for transport {transport} "
                                 f"(allowed: {', '.join(sorted(allowed))})", (key,))
    connection: dict[str, Any] = {"transport": transport}
    if transport == "stdio":
        connection["command"] = _expand(name, ("command",), _string(name, spec, "command"))
        args = spec.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str | int | float)
                                                 for a in args):
            raise MCPConfigError(name, "'args' must be a list of strings", ("args",))
        connection["args"] = [_expand(name, ("args", i), str(a)) for i, a in enumerate(args)]
        if spec.get("env") is not None:
            connection["env"] = _string_map(name, spec, "env")
        if spec.get("cwd") is not None:
            connection["cwd"] = _expand(name, ("cwd",), _string(name, spec, "cwd"))
    else:
        connection["url"] = _expand(name, ("url",), _string(name, spec, "url"))
        if not re.match(r"https?://", connection["url"]):
            raise MCPConfigError(name, f"'url' must start with http:// or https://, got "
                                 f"{connection['url']!r}", ("url",))
        if spec.get("headers") is not None:
            connection["headers"] = _string_map(name, spec, "headers")
    timeout = spec.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or timeout <= 0):
        raise MCPConfigError(name, f"'timeout_s' must be a positive number, got {timeout!r}",
                             ("timeout_s",))
    sensitive = spec.get("sensitive")
    if sensitive is not None and not isinstance(sensitive, bool):
        raise MCPConfigError(name, f"'sensitive' must be true or false, got {sensitive!r}",
                             ("sensitive",))
    return MCPServer(name=name, connection=connection,
                     timeout_s=float(timeout) if timeout is not None else None,
                     sensitive=sensitive,
                     sensitive_tools=_names(name, spec, "sensitive_tools"),
                     safe_tools=_names(name, spec, "safe_tools"),
                     patterns=_names(name, spec, "sensitive_patterns")
                     if spec.get("sensitive_patterns") is not None else None,
                     conversation_words=_words(name, spec))


def parse_servers(servers: Mapping[str, Any]) -> dict[str, MCPServer]:
    """:func:`parse_server` for each entry; ready :class:`MCPServer` values pass through."""
    return {name: spec if isinstance(spec, MCPServer) else parse_server(name, spec)
            for name, spec in servers.items()}


async def load_mcp_tools_into(
    registry: ToolRegistry,
    servers: Mapping[str, Any],
    *,
    sensitive_patterns: Sequence[str] = DEFAULT_SENSITIVE_MCP,
    tool_name_prefix: bool = False,
    strict: bool = True,
    load_timeout_s: float = 30.0,
) -> list[Tool]:
    """Load every server's tools and register them (``source="mcp"``); return them.

    ``servers`` maps names to config dicts (as in ``tools.yml``) or :class:`MCPServer`.
    All servers are listed concurrently, each within ``load_timeout_s``. With ``strict``,
    a server that fails raises :class:`MCPLoadError` and nothing is registered; otherwise
    it is logged and skipped. A name clash with a tool already registered raises
    ``ValueError`` before any registration (``tool_name_prefix=True`` prefixes names with
    the server's name).
    """
    from langchain_mcp_adapters.client import MultiServerMCPClient

    parsed = {name: replace(server, prefixed=tool_name_prefix)
              for name, server in parse_servers(servers).items()}
    # handle_tool_errors=False: an MCP error result must raise, so that callgate records
    # the call as failed instead of handing the error text back as a successful result.
    # Each connection is built key by key from the config (``_server`` checks them): a
    # dict, not one of the adapters' connection TypedDicts.
    client = MultiServerMCPClient({n: s.connection for n, s in parsed.items()},  # type: ignore[misc]
                                  tool_name_prefix=tool_name_prefix, handle_tool_errors=False)

    async def listing(name: str, stray: _StrayLines) -> list[BaseTool]:
        _listing.set((stray, name))  # this task's own context: its reader tasks inherit it
        try:
            async with asyncio.timeout(load_timeout_s):
                return await client.get_tools(server_name=name)
        except TimeoutError:
            raise TimeoutError(f"no answer within {load_timeout_s:g} s") from None

    names = list(parsed)
    with _stray_lines() as stray:
        listed = await asyncio.gather(*(listing(n, stray) for n in names),
                                      return_exceptions=True)
    ready: list[Tool] = []
    for name, tools in zip(names, listed, strict=True):
        lines = stray.lines.get(name, [])
        if isinstance(tools, BaseException):
            if isinstance(tools, asyncio.CancelledError):
                raise tools
            if strict:
                raise MCPLoadError(name, tools, lines) from tools
            log.warning("%s", MCPLoadError(name, tools, lines))
            continue
        if lines:
            log.warning("MCP server '%s' wrote %d line(s) that are not MCP (JSON-RPC), "
                        "ignored; the first: %r", name, len(lines), lines[0][:80])
        server = parsed[name]
        listed_names = {t.name for t in tools} | {server.own_name(t) for t in tools}
        for tool_name in server.conversation_words:
            if tool_name not in listed_names:
                raise MCPConfigError(name, f"'conversation_words' names tool {tool_name!r}, "
                                     "which the server does not list",
                                     ("conversation_words", tool_name))
        for lc_tool in tools:
            ready.append(_as_tool(lc_tool, server, sensitive_patterns))
    scratch = ToolRegistry()
    kept: list[Tool] = []
    for tool in ready:  # clashes between servers, then with the registry, before adding any
        if tool.name in scratch or tool.name in registry:
            raise ValueError(f"MCP tool '{tool.name}' ({_server_of(tool)}) clashes with a "
                             "tool already registered; set tool_name_prefix=True or rename")
        try:
            scratch.add(tool)
        except SchemaInvalid as exc:  # the server's schema for this tool is not JSON Schema
            if strict:
                raise MCPLoadError(_server_of(tool), exc) from exc
            log.warning("skipping MCP tool %r: %s", tool.name, exc)
            continue
        kept.append(tool)
    for tool in kept:
        registry.add(tool)
    return kept


def load_mcp_tools_into_sync(registry: ToolRegistry, servers: Mapping[str, Any],
                             **options: Any) -> list[Tool]:
    """:func:`load_mcp_tools_into` from sync code (also under a running loop, as in
    Jupyter: then on a loop of its own in a short-lived thread)."""
    coro = load_mcp_tools_into(registry, servers, **options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="callgate-mcp-load") as pool:
        return pool.submit(asyncio.run, coro).result()


def _as_tool(lc_tool: BaseTool, server: MCPServer, patterns: Sequence[str]) -> Tool:
    """A registry Tool for one MCP tool, built the way ``ToolRegistry.register`` does."""
    words = server.words_for(lc_tool)
    schema = convert_to_openai_tool(lc_tool)["function"].get("parameters") or {}
    if problem := conversation_words_problem(schema, words):
        raise MCPConfigError(server.name, f"tool {lc_tool.name!r}: {problem}",
                             ("conversation_words", lc_tool.name))
    return ToolRegistry().register(lc_tool, timeout_s=server.timeout_s,
                                   sensitive=server.is_sensitive(lc_tool, patterns),
                                   summarizer=summarize_mcp, category=f"mcp:{server.name}",
                                   source="mcp", conversation_words=words)


def summarize_mcp(tool: str, data: Any) -> str:
    """``[tool] text`` from an MCP result's content blocks (non-text blocks are counted)."""
    blocks = data if isinstance(data, list) else None
    if not blocks or not all(isinstance(b, dict) and "type" in b for b in blocks):
        return default_summary(tool, data)
    texts = [" ".join(str(b.get("text", "")).split()) for b in blocks if b["type"] == "text"]
    text = " ".join(t for t in texts if t)
    others = len(blocks) - len(texts)
    if others:
        text += f" (+{others} non-text block{'s' if others > 1 else ''})"
    return f"[{tool}] {text.strip() or '(empty result)'}"


def _server_of(tool: Tool) -> str:
    return (tool.category or "mcp").removeprefix("mcp:")


def _matches(name: str, patterns: Iterable[str]) -> bool:
    folded = name.casefold()
    return any(fnmatch.fnmatchcase(folded, p.casefold()) for p in patterns)


def _string(server: str, spec: Mapping[str, Any], key: str) -> str:
    value = spec.get(key)
    if value is None:
        raise MCPConfigError(server, f"missing key '{key}'")
    if not isinstance(value, str) or not value.strip():
        raise MCPConfigError(server, f"'{key}' must be a non-empty string, got {value!r}",
                             (key,))
    return value


def _string_map(server: str, spec: Mapping[str, Any], key: str) -> dict[str, str]:
    value = spec.get(key)
    if not isinstance(value, Mapping):
        raise MCPConfigError(server, f"'{key}' must be a mapping of names to strings", (key,))
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise MCPConfigError(server, f"'{key}.{k}' must be a string, got {v!r}", (key, k))
        out[str(k)] = _expand(server, (key, k), str(v))
    return out


def _names(server: str, spec: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = spec.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MCPConfigError(server, f"'{key}' must be a list of tool names", (key,))
    return tuple(value)


def _words(server: str, spec: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    value = spec.get("conversation_words") or {}
    if not isinstance(value, Mapping) or not all(
            isinstance(tool, str) and isinstance(args, list)
            and all(isinstance(a, str) for a in args) for tool, args in value.items()):
        raise MCPConfigError(server, "'conversation_words' must map tool names to lists of "
                             "argument names", ("conversation_words",))
    return {tool: tuple(args) for tool, args in value.items()}


def _expand(server: str, key: tuple[str | int, ...], text: str) -> str:
    def value(match: re.Match[str]) -> str:
        var = match.group(1)
        if var not in os.environ:
            raise MCPConfigError(server, f"environment variable {var} is not set", key)
        return os.environ[var]

    return _ENV_REF.sub(value, text)


def _describe(exc: BaseException) -> str:
    # The MCP client wraps failures in exception groups; the leaf says what went wrong.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
