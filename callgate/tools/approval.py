"""Which calls need a person's approval: sensitive tools, and arguments that look dangerous."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from callgate.tools.registry import ToolRegistry

DANGEROUS_PATTERNS: tuple[str, ...] = (
    r"\brm\s+-[a-z]*r[a-z]*f|\brm\s+-[a-z]*f[a-z]*r",  # rm -rf / rm -fr
    r"\bsudo\b",
    r"\bgit\s+push\b",
    r"\bmkfs(\.\w+)?\b|\bdd\s+if=",
    r"\bdrop\s+(table|database)\b|\btruncate\s+table\b|\bdelete\s+from\b",
    r"\bshutdown\b|\breboot\b",
    r"\bchmod\s+-R\s+777\b",
)


def approval_reason(call: dict[str, Any], registry: ToolRegistry,
                    patterns: Iterable[str] = DANGEROUS_PATTERNS) -> str | None:
    """Why ``call`` must be approved, or None when it may run without asking."""
    tool = registry.get(call["name"])
    if tool is not None and tool.sensitive:
        return f"'{tool.name}' is marked sensitive"
    text = json.dumps(call.get("args") or {}, ensure_ascii=False)
    for pattern in patterns:
        match = re.search(pattern, text, flags=re.IGNORECASE)
        if match:
            return f"its arguments contain '{match.group(0)}'"
    return None
