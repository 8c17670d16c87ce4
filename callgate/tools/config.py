"""``tools.yml``: Python functions and MCP servers declared as tools.

```yaml
tools:
  - name: add
    description: Add two integers.
    module: my_tools            # an importable module, or a .py path relative to this file
    function: add               # attribute path in the module (``Class.method`` works too)
    parameters_schema:          # a JSON schema of type object: what the model sees and
      type: object              # what the registry validates the arguments against
      properties: {a: {type: integer}, b: {type: integer}}
      required: [a, b]
    timeout_s: 5                # optional
    sensitive: false            # optional: true makes every call wait for approval
    category: math              # optional
    conversation_words: []      # optional: string arguments made of the user's words
    synonyms: {}                # optional: {a user's word: the tool's own word}
mcp_servers:
  git:
    transport: stdio
    command: mcp-server-git
    args: [--repository, /path/to/repo]
    sensitive_tools: [git_branch] # more tools that wait for approval
    safe_tools: [git_log]         # exempt by name (any case); a tool the server does not
    timeout_s: 20                 # annotate readOnly or non-destructive needs approval
    conversation_words: {}        # optional: {tool: [argument, ...]}, as for a tool entry
```

``conversation_words`` names string arguments whose text is made of the user's words, such
as a search query: under a llama.cpp model's grammar they are written as runs of those
words (``ToolRegistry.register(..., conversation_words=...)``). ``synonyms`` maps a word a
user may write to the tool's own word for it (``{ram: memory}``): the relevance score and the
answer checks read the request with the tool's words (``ToolRegistry.register(...,
synonyms=...)``).

Every error is a :class:`ToolsConfigError` of the form ``FILE:LINE: what is wrong``.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from langchain_core.tools import StructuredTool

from callgate.tools.mcp import (
    DEFAULT_SENSITIVE_MCP,
    MCPConfigError,
    MCPLoadError,
    MCPServer,
    load_mcp_tools_into_sync,
    parse_server,
)
from callgate.tools.registry import (
    Tool,
    ToolRegistry,
    conversation_words_problem,
    synonyms_problem,
)
from callgate.tools.validation import SchemaInvalid, compile_schema

Key = str | int
JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")
_TYPE_HINTS = {"int": "integer", "str": "string", "float": "number", "bool": "boolean",
               "list": "array", "dict": "object", "none": "null", "double": "number",
               "text": "string"}
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TOOL_KEYS = {"name": True, "description": True, "module": True, "function": True,
              "parameters_schema": True, "timeout_s": False, "sensitive": False,
              "category": False, "conversation_words": False, "synonyms": False}
_TOP_KEYS = ("tools", "mcp_servers")


class ToolsConfigError(ValueError):
    """A ``tools.yml`` problem: ``FILE:LINE: message``."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line
        self.problem = message


@dataclass
class ToolSpec:
    """One ``tools:`` entry, checked but not imported yet."""

    name: str
    description: str
    module: str
    function: str
    parameters_schema: dict[str, Any]
    timeout_s: float | None = None
    sensitive: bool = False
    category: str | None = None
    conversation_words: tuple[str, ...] = ()
    synonyms: dict[str, str] = field(default_factory=dict)
    index: int = 0  # position in the ``tools:`` list, to find its lines again


@dataclass
class ToolsConfig:
    """A checked ``tools.yml``: tool entries and MCP servers (nothing imported or started)."""

    path: Path
    tools: list[ToolSpec] = field(default_factory=list)
    mcp_servers: dict[str, MCPServer] = field(default_factory=dict)
    doc: _Document | None = field(default=None, repr=False)

    def error(self, keys: Sequence[Key], message: str) -> ToolsConfigError:
        """An error located at ``keys`` (a path into the document)."""
        line = self.doc.line(keys) if self.doc else None
        return ToolsConfigError(self.path, line, message)


def read_tools_yaml(path: str | Path) -> ToolsConfig:
    """Parse and check ``path``: structure, names, schemas. Imports and starts nothing."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolsConfigError(path, None, f"cannot read the file ({exc.strerror})") from exc
    doc = _Document(path, text)
    config = ToolsConfig(path=path, doc=doc)
    data = doc.data
    if data is None:
        return config
    if not isinstance(data, dict):
        raise config.error((), f"expected a mapping with 'tools:' and/or 'mcp_servers:', got "
                               f"{_kind(data)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise config.error((key,), f"unknown top-level key {key!r} (expected "
                                       f"{' or '.join(_TOP_KEYS)})")
    tools = data.get("tools") or []
    if not isinstance(tools, list):
        raise config.error(("tools",), f"'tools' must be a list of tool entries, got "
                                       f"{_kind(tools)}")
    first_line: dict[str, int | None] = {}
    for i, entry in enumerate(tools):
        spec = _tool_spec(config, i, entry)
        if spec.name in first_line:
            raise config.error(("tools", i, "name"), f"duplicate tool name '{spec.name}' "
                               f"(first declared at line {first_line[spec.name]})")
        first_line[spec.name] = doc.line(("tools", i, "name"))
        config.tools.append(spec)
    servers = data.get("mcp_servers") or {}
    if not isinstance(servers, dict):
        raise config.error(("mcp_servers",), "'mcp_servers' must be a mapping of server "
                                             f"names to settings, got {_kind(servers)}")
    for name, spec in servers.items():
        try:
            config.mcp_servers[str(name)] = parse_server(str(name), spec)
        except MCPConfigError as exc:
            raise config.error(("mcp_servers", name, *exc.key), str(exc)) from None
    return config


def load_tools_yaml(path: str | Path, registry: ToolRegistry, *, mcp: bool = True,
                    sensitive_patterns: Sequence[str] = DEFAULT_SENSITIVE_MCP) -> list[Tool]:
    """Import, check and register every tool of ``path`` (and, with ``mcp``, every MCP
    server's tools); return the registered tools. All or nothing: on any error the
    registry is left as it was."""
    config = read_tools_yaml(path)
    staged = ToolRegistry()
    for spec in config.tools:
        if spec.name in registry:
            raise config.error(("tools", spec.index, "name"), f"a tool named '{spec.name}' "
                               "is already registered")
        staged.add(_register_spec(config, spec))
    if mcp and config.mcp_servers:
        remote = ToolRegistry()
        try:
            load_mcp_tools_into_sync(remote, config.mcp_servers,
                                     sensitive_patterns=sensitive_patterns)
        except MCPLoadError as exc:
            raise config.error(("mcp_servers", exc.server), str(exc)) from exc
        except MCPConfigError as exc:  # found once the server listed its tools
            raise config.error(("mcp_servers", exc.server, *exc.key), str(exc)) from None
        except ValueError as exc:  # two servers offering the same tool name
            raise config.error(("mcp_servers",), str(exc)) from exc
        for tool in remote:
            if tool.name in staged or tool.name in registry:
                server = (tool.category or "").removeprefix("mcp:")
                raise config.error(("mcp_servers", server), f"MCP server '{server}' offers a "
                                   f"tool '{tool.name}', but a tool of that name is already "
                                   "registered or declared")
            staged.add(tool)
    for tool in staged:
        registry.add(tool)
    return list(staged)


def schema_problems(schema: Any) -> list[tuple[tuple[Key, ...], str]]:
    """What is wrong with a ``parameters_schema``: ``(path in the schema, message)`` pairs."""
    if not isinstance(schema, dict):
        return [((), f"must be a JSON schema mapping, got {_kind(schema)}")]
    problems: list[tuple[tuple[Key, ...], str]] = []
    if schema.get("type") != "object":
        where: tuple[Key, ...] = ("type",) if "type" in schema else ()
        got = f"type {schema['type']!r}" if "type" in schema else "no type"
        problems.append((where, f"must be an object schema (type: object), got {got}"))
    _check_schema(schema, (), schema, problems)
    return problems


# -- entries ----------------------------------------------------------------------------
def _tool_spec(config: ToolsConfig, i: int, entry: Any) -> ToolSpec:
    here: tuple[Key, ...] = ("tools", i)
    if not isinstance(entry, dict):
        raise config.error(here, f"a tool entry must be a mapping, got {_kind(entry)}")
    label = f"tool '{entry['name']}'" if isinstance(entry.get("name"), str) else f"tool #{i + 1}"
    for key in entry:
        if key not in _TOOL_KEYS:
            raise config.error((*here, key), f"{label}: unknown key {key!r} (allowed: "
                                             f"{', '.join(_TOOL_KEYS)})")
    for key, needed in _TOOL_KEYS.items():
        if needed and key not in entry:
            raise config.error(here, f"{label}: missing key '{key}'")
    for key in ("name", "description", "module", "function"):
        value = entry[key]
        if not isinstance(value, str) or not value.strip():
            raise config.error((*here, key), f"{label}: '{key}' must be a non-empty string, "
                                             f"got {value!r}")
    if not _NAME.match(entry["name"]):
        raise config.error((*here, "name"), f"{label}: a tool name may use only letters, "
                                            "digits, '_' and '-' (at most 64)")
    timeout = entry.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or timeout <= 0):
        raise config.error((*here, "timeout_s"), f"{label}: 'timeout_s' must be a positive "
                                                 f"number, got {timeout!r}")
    sensitive = entry.get("sensitive", False)
    if not isinstance(sensitive, bool):
        raise config.error((*here, "sensitive"), f"{label}: 'sensitive' must be true or "
                                                 f"false, got {sensitive!r}")
    category = entry.get("category")
    if category is not None and not isinstance(category, str):
        raise config.error((*here, "category"), f"{label}: 'category' must be a string")
    schema = entry["parameters_schema"]
    for sub, message in schema_problems(schema):
        raise config.error((*here, "parameters_schema", *sub),
                           f"{label}: parameters_schema{_dotted(sub)} {message}")
    try:
        compile_schema(schema)  # the meta-schema check registration would make, located here
    except SchemaInvalid as exc:
        raise config.error((*here, "parameters_schema"),
                           f"{label}: parameters_schema is not a valid JSON schema: {exc}"
                           ) from exc
    words = entry.get("conversation_words") or []
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise config.error((*here, "conversation_words"), f"{label}: 'conversation_words' "
                                                          "must be a list of argument names")
    if problem := conversation_words_problem(schema, words):
        raise config.error((*here, "conversation_words"), f"{label}: {problem}")
    synonyms = entry.get("synonyms", {})
    synonyms = {} if synonyms is None else synonyms  # "synonyms:" with nothing after it
    if problem := synonyms_problem(synonyms):
        raise config.error((*here, "synonyms"), f"{label}: {problem}")
    return ToolSpec(name=entry["name"], description=entry["description"].strip(),
                    module=entry["module"], function=entry["function"],
                    parameters_schema=schema,
                    timeout_s=float(timeout) if timeout is not None else None,
                    sensitive=sensitive, category=category, conversation_words=tuple(words),
                    synonyms=dict(synonyms), index=i)


def _register_spec(config: ToolsConfig, spec: ToolSpec) -> Tool:
    here: tuple[Key, ...] = ("tools", spec.index)
    label = f"tool '{spec.name}'"
    module = _import(config, spec, label)
    target: Any = module
    for part in spec.function.split("."):
        if not hasattr(target, part):
            raise config.error((*here, "function"), f"{label}: module '{spec.module}' has no "
                                                    f"function '{spec.function}'")
        target = getattr(target, part)
    if not callable(target):
        raise config.error((*here, "function"), f"{label}: '{spec.module}.{spec.function}' "
                                                f"is not callable (it is {_kind(target)})")
    problem = _signature_problem(target, spec.parameters_schema,
                                 f"{spec.module}.{spec.function}")
    if problem:
        raise config.error((*here, "parameters_schema"), f"{label}: {problem}")
    options: dict[str, Any] = {"name": spec.name, "description": spec.description,
                               "args_schema": copy.deepcopy(spec.parameters_schema)}
    if _is_async(target):
        runnable = StructuredTool(coroutine=target, **options)
    else:
        runnable = StructuredTool(func=target, **options)
    return ToolRegistry().register(runnable, timeout_s=spec.timeout_s, sensitive=spec.sensitive,
                                   category=spec.category, source="yaml",
                                   conversation_words=spec.conversation_words,
                                   synonyms=spec.synonyms)


def _import(config: ToolsConfig, spec: ToolSpec, label: str) -> ModuleType:
    where: tuple[Key, ...] = ("tools", spec.index, "module")
    name = spec.module
    try:
        if name.endswith(".py"):
            file = (config.path.parent / name).resolve()
            if not file.is_file():
                raise config.error(where, f"{label}: module file '{name}' not found "
                                          f"(looked at {file})")
            return _import_file(file)
        return importlib.import_module(name)
    except ToolsConfigError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise config.error(where, f"{label}: module '{name}' not found (is it installed "
                                      "or on sys.path?)") from None
        raise config.error(where, f"{label}: importing module '{name}' failed: "
                                  f"{_describe(exc)}") from exc
    except Exception as exc:  # a module that fails while importing: say how
        raise config.error(where, f"{label}: importing module '{name}' failed: "
                                  f"{_describe(exc)}") from exc


def _import_file(file: Path) -> ModuleType:
    key = f"callgate_tools_{abs(hash(str(file)))}_{file.stem}"
    if key in sys.modules:
        return sys.modules[key]
    loaded = importlib.util.spec_from_file_location(key, file)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules[key] = module
    try:
        loaded.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    return module


def _signature_problem(func: Callable[..., Any], schema: dict[str, Any],
                       qualname: str) -> str | None:
    """A mismatch that would make every call fail: arguments the function can't take."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):  # builtins without a signature: trust the schema
        return None
    properties = set(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    kinds = inspect.Parameter
    for name, param in params.items():
        if param.default is not param.empty or param.kind in (kinds.VAR_POSITIONAL,
                                                              kinds.VAR_KEYWORD):
            continue
        if param.kind is kinds.POSITIONAL_ONLY:
            return (f"parameter '{name}' of {qualname} is positional-only, so it cannot be "
                    "passed by name")
        if name not in required:
            return (f"parameter '{name}' of {qualname} has no default, so parameters_schema "
                    "must list it in 'required'")
    if any(p.kind is kinds.VAR_KEYWORD for p in params.values()):
        return None
    accepted = [n for n, p in params.items()
                if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)]
    unknown = sorted(properties - set(accepted))
    if unknown:
        return (f"parameters_schema property '{unknown[0]}' is not a parameter of "
                f"{qualname}({', '.join(accepted)})")
    return None


def _is_async(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None))  # noqa: B004 - async callable objects


# -- schema checks ----------------------------------------------------------------------
def _check_schema(node: Any, path: tuple[Key, ...], root: dict[str, Any],
                  problems: list[tuple[tuple[Key, ...], str]]) -> None:
    if isinstance(node, bool):  # `true` / `false` are valid (trivial) schemas
        return
    if not isinstance(node, dict):
        problems.append((path, f"must be a schema mapping, got {_kind(node)}"))
        return
    types = node.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        for name in names:
            if not isinstance(name, str) or name not in JSON_TYPES:
                hint = _TYPE_HINTS.get(str(name).lower())
                problems.append(((*path, "type"), f"has unknown type {name!r}"
                                 + (f" (did you mean '{hint}'?)" if hint else
                                    f" (JSON schema types: {', '.join(JSON_TYPES)})")))
    properties = node.get("properties")
    if properties is not None:
        if not isinstance(properties, dict):
            problems.append(((*path, "properties"), "must be a mapping of argument names "
                                                    "to schemas"))
            properties = {}
        for key, sub in properties.items():
            _check_schema(sub, (*path, "properties", key), root, problems)
    required = node.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            problems.append(((*path, "required"), "must be a list of property names"))
        else:
            known = properties or {}
            for j, name in enumerate(required):
                if name not in known:
                    listed = ", ".join(known) or "none"
                    problems.append(((*path, "required", j), f"names unknown property "
                                                             f"'{name}' (properties: {listed})"))
    for key in ("items", "additionalProperties", "not"):
        sub = node.get(key)
        if isinstance(sub, list) and key == "items":
            for j, item in enumerate(sub):
                _check_schema(item, (*path, key, j), root, problems)
        elif sub is not None:
            _check_schema(sub, (*path, key), root, problems)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            options = node[key]
            if not isinstance(options, list) or not options:
                problems.append(((*path, key), "must be a non-empty list of schemas"))
                continue
            for j, option in enumerate(options):
                _check_schema(option, (*path, key, j), root, problems)
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            for name, sub in node[key].items():
                _check_schema(sub, (*path, key, name), root, problems)
    if "$ref" in node and not _resolves(node["$ref"], root):
        problems.append(((*path, "$ref"), f"points nowhere: {node['$ref']!r} (only local "
                                          "references like '#/$defs/Name' are supported)"))
    if "enum" in node and (not isinstance(node["enum"], list) or not node["enum"]):
        problems.append(((*path, "enum"), "must be a non-empty list"))
    if isinstance(node.get("pattern"), str):
        try:
            re.compile(node["pattern"])
        except re.error as exc:
            problems.append(((*path, "pattern"), f"is not a valid regular expression ({exc})"))


def _resolves(ref: Any, root: dict[str, Any]) -> bool:
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return False
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return False
        target = target[part]
    return True


# -- YAML with line numbers -------------------------------------------------------------
def yaml_problem(exc: yaml.YAMLError, path: Path | None = None) -> tuple[int | None, str]:
    """The line a YAML syntax error is on (None where it has no position) and what it is,
    in one line: for ``FILE:LINE: invalid YAML: ...`` (tools.yml and models.yaml alike). A
    ``.json`` file (JSON is YAML) is named as what its user wrote."""
    kind = "JSON" if path is not None and path.suffix.lower() == ".json" else "YAML"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        return (mark.line + 1 if mark else None), f"invalid {kind}: {problem}"
    return None, f"invalid {kind}: {str(exc).splitlines()[0]}"


class _Document:
    """The parsed YAML plus its node tree, to give each error the line it is about."""

    def __init__(self, path: Path, text: str) -> None:
        loader = yaml.SafeLoader(text)
        try:
            self.root: yaml.Node | None = loader.get_single_node()
            if self.root is not None:
                _check_duplicate_keys(path, self.root)
            self.data: Any = loader.construct_document(self.root) if self.root else None
        except yaml.YAMLError as exc:
            raise ToolsConfigError(path, *yaml_problem(exc, path)) from None
        finally:
            loader.dispose()

    def line(self, keys: Sequence[Key]) -> int | None:
        """The line of the deepest node along ``keys`` (a missing key: its parent's).

        A block mapping or list starts on the line after its key, so for those the key's
        own line is given: that is where a reader looks for ``parameters_schema:``.
        """
        node = self.root
        if node is None:
            return None
        key_node: yaml.Node | None = None
        for key in keys:
            found = _child(node, key)
            if found is None:
                break
            key_node, node = found
        if key_node is not None and isinstance(node, yaml.MappingNode | yaml.SequenceNode) \
                and not node.flow_style:
            return key_node.start_mark.line + 1
        return node.start_mark.line + 1


def _child(node: yaml.Node, key: Key) -> tuple[yaml.Node | None, yaml.Node] | None:
    """``(key node, value node)`` of ``key`` in a mapping, ``(None, item)`` in a list."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(key):
                return key_node, value_node
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return None, node.value[key]
    return None


def _check_duplicate_keys(path: Path, node: yaml.Node) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    raise ToolsConfigError(path, line, f"duplicate key '{key_node.value}' "
                                           f"(first at line {seen[key_node.value]})")
                seen[key_node.value] = line
            _check_duplicate_keys(path, value_node)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicate_keys(path, item)


def _dotted(path: Sequence[Key]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", int: "a number",
             float: "a number", bool: "a boolean", type(None): "nothing"}
    return names.get(type(value), type(value).__name__)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
