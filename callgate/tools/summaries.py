"""Short, bounded summaries of tool results: what the model sees as the observation."""

from __future__ import annotations

import json
from typing import Any

ITEM_CHARS = 200
TOP_ITEMS = 3
_LIST_KEYS = ("results", "items", "data", "documents", "chunks", "hits")
_TITLE_KEYS = ("title", "name", "source", "document")
_TEXT_KEYS = ("snippet", "text", "content", "summary", "description", "body")


def clip(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut with an ellipsis."""
    text = str(text)
    # Only the head can show: normalising the whitespace of a 10 MB result would copy it twice.
    head = " ".join(text[: max(4 * limit, 1024)].split())
    if len(head) <= limit and len(text) <= max(4 * limit, 1024):
        return head
    return head[: max(0, limit - 1)].rstrip() + "…"


def render_item(item: Any, limit: int = ITEM_CHARS) -> str:
    """One result item as a line: title and text for records, compact JSON otherwise."""
    if isinstance(item, dict):
        title = next((str(item[k]) for k in _TITLE_KEYS if item.get(k)), "")
        text = next((str(item[k]) for k in _TEXT_KEYS if item.get(k)), "")
        if title or text:
            return clip(f"{title}: {text}" if title and text else title or text, limit)
        return clip(", ".join(f"{k}={_compact(v)}" for k, v in item.items()), limit)
    return clip(_compact(item), limit)


def default_summary(tool: str, data: Any) -> str:
    """Generic summary: the top items of a list, the fields of a record, or the text."""
    if isinstance(data, dict):
        inner = next((data[k] for k in _LIST_KEYS if isinstance(data.get(k), list)), None)
        if inner is not None:
            data = inner
    if isinstance(data, list | tuple):
        if not data:
            return f"[{tool}] no results"
        shown = " | ".join(render_item(x) for x in data[:TOP_ITEMS])
        more = f" (+{len(data) - TOP_ITEMS} more)" if len(data) > TOP_ITEMS else ""
        return f"[{tool}] results: {shown}{more}"
    if isinstance(data, dict):
        fields = list(data.items())
        shown = "; ".join(f"{k}: {render_item(v)}" for k, v in fields[:8])
        return f"[{tool}] {shown}"
    if data is None or data == "":
        return f"[{tool}] done (no output)"
    return f"[{tool}] {clip(str(data), 4 * ITEM_CHARS)}"


def failure_summary(tool: str, error: str) -> str:
    return f"[{tool}] failed: {clip(error, ITEM_CHARS)}"


def bounded(summary: str, limit: int) -> str:
    """Enforce the overall limit on a (possibly custom) summary."""
    return summary if len(summary) <= limit else summary[: max(0, limit - 1)].rstrip() + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


PREVIEW_CHARS = 200


def preview(data: Any, limit: int = PREVIEW_CHARS) -> str:
    """A one-line glimpse of a result (the checkpoint keeps this, not the result)."""
    return clip(_compact(data), limit)


def result_summary(summarizer: Any, tool: str, data: Any, limit: int) -> str:
    """The tool's own summary of ``data`` (else the generic one), within ``limit``."""
    if summarizer is None:
        return bounded(default_summary(tool, data), limit)
    try:
        text = summarizer(tool, data)
    except Exception as exc:  # a broken summarizer must not lose the result
        text = default_summary(tool, data) + f" (summarizer failed: {exc})"
    return bounded(str(text), limit)


def sources_in(data: Any) -> list[dict[str, str]]:
    """URLs and titles a result carries (top-level record or its first items)."""
    if isinstance(data, dict):
        inner = next((data[k] for k in ("results", "items", "chunks", "documents")
                      if isinstance(data.get(k), list)), None)
        data = inner if inner is not None else [data]
    found: list[dict[str, str]] = []
    for item in data[:3] if isinstance(data, list) else []:
        if not isinstance(item, dict):
            continue
        url = next((str(item[k]) for k in ("url", "link", "href") if item.get(k)), "")
        title = next((str(item[k]) for k in ("title", "source", "document", "path")
                      if item.get(k)), "")
        if url or title:
            found.append({"url": url, "title": clip(title, 80)})
    return found
