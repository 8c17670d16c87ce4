"""Which calls need a person's approval: sensitive tools, and arguments that look dangerous.

The argument check runs on the decoded values, never on JSON text (where a tab is ``\\t``
and a newline ``\\n``, so ``rm\\t-rf`` would slip past ``rm\\s+-rf``). Every string value
and every key is normalised first (Unicode compatibility forms, zero-width characters
removed, any run of whitespace, ``$IFS`` included, turned into one space) and matched
without regard to case; lists of strings (argv style) are also matched joined by spaces.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from callgate.tools.registry import ToolRegistry

# Options between a command and the part that matters, e.g. ``git -C repo push``.
_OPTS = r"(?:\S+\s+)*?"
# Where a command starts: the text start, or after a separator, sudo, env or a path.
_CMD = r"(?:^|[;&|({`]\s*|\bsudo\s+|\bdoas\s+|\bexec\s+|\benv\s+|/)"

DANGEROUS_PATTERNS: tuple[str, ...] = (
    # rm with a recursive or force option, in any spelling: -rf, -fr, -r -f, -Rf,
    # --recursive --force.
    r"\brm\s+" + _OPTS + r"(?:-[a-z]*[rf][a-z]*|--recursive|--force|--no-preserve-root)\b",
    r"\bsudo\b|\bdoas\b|\bsu\s+(?:-\s|-c\b|root\b)",
    r"\bgit\s+" + _OPTS + r"push\b",
    r"\bgit\s+" + _OPTS + r"(?:reset\s+" + _OPTS + r"--hard|clean\s+" + _OPTS
    + r"-[a-z]*f|branch\s+" + _OPTS + r"-D\b|filter-branch|update-ref\s+-d)",
    r"\bdrop\s+(?:table|database|schema|view|index|user|role)\b",
    r"\btruncate\s+table\b|(?:^|;)\s*truncate\s+[\w.\"`\[\]]+\s*(?:;|$)",
    r"\bdelete\s+from\b",
    r"\bupdate\s+[\w.\"`\[\]]+\s+set\b(?!.*\bwhere\b)",
    r"\balter\s+table\b.*\bdrop\b",
    r"\bmkfs(?:\.\w+)?\b|\bwipefs\b|\bshred\b|\bfdisk\b|\bparted\b",
    r"\bdd\s+" + _OPTS + r"(?:if|of)=",
    r"\bchmod\s+" + _OPTS + r"(?:-[a-z]*r[a-z]*\b|--recursive\b|0?777\b|[augo]*\+rwx\b)",
    r"\bchown\s+" + _OPTS + r"(?:-[a-z]*r[a-z]*|--recursive)\b",
    # Piping a download into an interpreter, or running a downloaded script.
    r"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^|]*\|\s*(?:sudo\s+)?"
    r"(?:ba|z|k|da|c)?sh\b|\b(?:curl|wget)\b[^|]*\|\s*(?:sudo\s+)?(?:python\d?|perl|ruby)\b",
    r"(?:\$\(|<\(|`)\s*(?:curl|wget)\b|\biex\b|\binvoke-expression\b",
    r"\b(?:shutdown|reboot|poweroff)\b|" + _CMD + r"halt\b|\binit\s+[06]\b"
    r"|\bsystemctl\s+(?:poweroff|reboot|halt|kexec)\b",
    r"(\w+|:)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}",  # fork bomb, e.g. :(){ :|:& };:
    r">\s*/dev/(?:sd[a-z]|hd[a-z]|nvme\d|mmcblk\d|disk\d|xvd[a-z]|vd[a-z])",
    r"\bmv\s+" + _OPTS + r"/\s*$|\bmv\s+\S+\s+/dev/null\b",
    r"\bformat\s+[a-z]:|\bformat-volume\b|\bclear-disk\b|\bdiskpart\b",
    r"\b(?:del|erase)\s+(?:\S+\s+)*?/[sq]\b|\b(?:rd|rmdir)\s+(?:\S+\s+)*?/s\b",
    r"\bremove-item\b.*\s-(?:recurse|r)\b",
    r"\bkill\s+-(?:9|kill|sigkill)\s+-?1\b|\bkillall\b|\bpkill\s+-9\b",
    r"\bcrontab\s+-r\b|\bfind\b.*\s-delete\b|\bfind\b.*-exec\s+rm\b",
    r"\bkubectl\s+delete\b|\bterraform\s+destroy\b|\bdocker\s+(?:system\s+)?prune\b",
)

# Characters that change nothing on screen but split a word for a regex.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff"), None)
_IFS = re.compile(r"\$\{?IFS\}?")
_QUOTES = re.compile(r"""["'\\]""")


@dataclass(frozen=True)
class Finding:
    """A dangerous-looking match: where in the arguments, and what matched."""

    path: str
    match: str


def normalize(text: str) -> str:
    """``text`` as matched: NFKC, invisible characters dropped, whitespace runs → one space."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return " ".join(_IFS.sub(" ", text).split())


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) for every string in ``value``: keys, values, and argv-style lists."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                yield sub, key
            yield from _texts(item, sub)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _texts(item, f"{path}[{i}]")
        scalars = [str(v) for v in value if isinstance(v, str | int | float)]
        if len(scalars) > 1:
            yield path, " ".join(scalars)


def find_dangerous(args: Any, patterns: Iterable[str] = DANGEROUS_PATTERNS) -> Finding | None:
    """The first argument text that matches one of ``patterns`` (case-insensitive)."""
    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
    for path, raw in _texts(args, ""):
        text = normalize(raw)
        # Shell quoting can split a word ("r''m", r\m); match the unquoted form as well.
        variants = (text, _QUOTES.sub("", text)) if _QUOTES.search(text) else (text,)
        for variant in variants:
            for pattern in compiled:
                match = pattern.search(variant)
                if match:
                    return Finding(path or "arguments", match.group(0).strip())
    return None


def approval_reason(call: Mapping[str, Any], registry: ToolRegistry,
                    patterns: Iterable[str] = DANGEROUS_PATTERNS) -> str | None:
    """Why ``call`` must be approved, or None when it may run without asking."""
    tool = registry.get(call["name"])
    if tool is not None and tool.sensitive:
        return f"'{tool.name}' is marked sensitive"
    found = find_dangerous(call.get("args") or {}, patterns)
    if found is not None:
        return f"argument '{found.path}' contains '{found.match}'"
    return None
