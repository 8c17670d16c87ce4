"""The tools an agent gets by default: configured built-ins, ``tools.yml``, MCP servers."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from callgate.tools.builtin import BuiltinSettings, BuiltinStatus, builtin_tools
from callgate.tools.registry import ToolRegistry


@dataclass
class Toolset:
    registry: ToolRegistry
    statuses: list[BuiltinStatus] = field(default_factory=list)
    tools_file: Path | None = None


def tools_file(path: str | Path | None = None) -> Path | None:
    """``path``, else ``$CALLGATE_TOOLS``, else ``./tools.yml`` when it exists."""
    if path:
        return Path(path)
    env = os.environ.get("CALLGATE_TOOLS")
    if env:
        return Path(env)
    default = Path("tools.yml")
    return default if default.is_file() else None


def default_toolset(path: str | Path | None = None, *, builtins: bool = True,
                    mcp: bool = True) -> Toolset:
    """Built-in tools whose backends are configured, plus tools.yml (and its MCP servers)."""
    registry = ToolRegistry()
    statuses: list[BuiltinStatus] = []
    if builtins:
        tools, statuses = builtin_tools(BuiltinSettings.from_env())
        for tool in tools:
            registry.add(tool)
    file = tools_file(path)
    if file is not None:
        from callgate.tools.config import load_tools_yaml

        load_tools_yaml(file, registry, mcp=mcp)
    return Toolset(registry, statuses, file)
