"""Screen: a string argument whose description names a format of comma-separated parts
("in the format of 'Street Address, City, State (abbr), Country'", "'City, State'") takes,
where its value is a run of the request that the request goes on with more comma parts, as
many parts as the format has ("2020 Addison Street, Berkeley, CA" -> "... CA, USA").
Rescored on a full run's recorded calls with callgate's checker. Usage, from the repository
root with ../shared beside it: python reports/tune/format-parts-screen.py tune|validate"""

import re
import sys

from screening import rescore, rewrite_strings

FORMAT = re.compile(r"format(?:ted)?\b[^'\"]{0,40}['\"]([^'\"]+,[^'\"]+)['\"]", re.IGNORECASE)


def parts_of(description: str) -> int | None:
    """The number of comma-separated parts of the format ``description`` names."""
    match = FORMAT.search(description)
    return len(match[1].split(",")) if match else None


def extended(request: str, value: str, parts: int) -> str | None:
    """``value`` with the request's comma parts after it, up to ``parts`` in all."""
    have = len(value.split(","))
    if have >= parts:
        return None
    at = request.find(value)
    if at < 0:
        return None
    tail = re.match(r"((?:,\s*[A-Z][\w.()-]*(?:\s+[A-Z][\w.()-]*)*)+)", request[at + len(value):])
    if not tail:
        return None
    more = [p.strip() for p in tail[1].split(",")[1:]][: parts - have]
    return ", ".join([value, *more]) if more else None


def longer(request: str, name: str, spec: dict, value: str) -> str | None:
    parts = parts_of(str(spec.get("description") or ""))
    return extended(request, value, parts) if parts else None


if __name__ == "__main__":
    rescore(sys.argv[1], rewrite_strings(longer))
