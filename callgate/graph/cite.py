"""The ``cite`` node: the final answer, with checked citations and a ``Sources:`` line.

Result ids the model cites are kept only if they exist; when it cites none, the results
of this turn it was given are listed as the sources. The text is sanitized: no tool-call
markup reaches the user.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from callgate.graph.cancellation import end_run
from callgate.sanitize import sanitize
from callgate.tools.summaries import clip

_BRACKETS = re.compile(r"\s?[\[【(]\s*(R\d+(?:\s*[,;/&]\s*(?:and\s+)?R\d+)*)\s*[\]】)]")
_ID = re.compile(r"R\d+")
NO_ANSWER = "I have no answer to give."


def cite_text(text: str, known: set[str] | dict[str, str]) -> tuple[str, list[str]]:
    """Drop citations of unknown ids; return the text and the ids it cites, in order.

    ``known`` may map ids to the id they stand for (a repeated call cites the original)."""
    cited: list[str] = []
    alias = known if isinstance(known, dict) else {k: k for k in known}

    def keep(match: re.Match[str]) -> str:
        ids = list(dict.fromkeys(alias[i] for i in _ID.findall(match.group(1)) if i in alias))
        cited.extend(i for i in ids if i not in cited)
        lead = match.group(0)[0] if match.group(0)[0].isspace() else ""
        return f"{lead}[{', '.join(ids)}]" if ids else ""

    text = _BRACKETS.sub(keep, text)
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", text).strip(), cited


def sources_of(event: dict[str, Any]) -> list[dict[str, str]]:
    """URLs and titles a result carries (top-level record or its first items)."""
    data = event.get("data")
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


def make_cite():
    def cite(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        events = state.get("tool_events") or []
        by_id = {e["id"]: e for e in events}
        alias = {e["id"]: e.get("repeat_of") or e["id"] for e in events}
        text, cited = cite_text(sanitize(state.get("draft_answer") or ""), alias)
        turn = events[state.get("turn_start", 0):]
        if not re.search(r"\w", _BRACKETS.sub("", text)):  # nothing but citations
            text = ""
        explicit = bool(cited)
        if not cited:
            cited = [e["id"] for e in turn if e.get("ok") and not e.get("repeat_of")]
        citations = [{"id": rid, "tool": by_id[rid]["tool"], "explicit": explicit,
                      "sources": sources_of(by_id[rid])} for rid in cited]
        final = text or _from_results(turn) or NO_ANSWER
        if citations:
            final += "\n\nSources: " + "; ".join(_source_line(c) for c in citations)
        used: list[str] = []
        for event in turn:
            if not (event.get("denied") or event.get("skipped")) and event["tool"] not in used:
                used.append(event["tool"])
        end_run(config)
        status = state.get("status")
        return {
            "final_answer": final,
            "citations": citations,
            "tools_used": used,
            "status": "done" if status in (None, "running") else status,
            "messages": [AIMessage(final, name="callgate")],
            "draft_answer": None,
        }

    return cite


def _from_results(turn: list[dict[str, Any]]) -> str:
    """When the model gave no answer text, what the tools found is the answer."""
    found = [e for e in turn if e.get("ok") and not e.get("repeat_of")]
    if not found:
        return ""
    return "Here is what the tools returned: " + " ".join(
        f"{e['summary']} [{e['id']}]" for e in found)


def _source_line(citation: dict[str, Any]) -> str:
    parts = [f"[{citation['id']}] {citation['tool']}"]
    for src in citation["sources"]:
        label = src["title"] or src["url"]
        parts.append(f"{label} <{src['url']}>" if src["url"] and src["title"] else label)
    return " — ".join(parts[:1]) + (" — " + ", ".join(parts[1:]) if len(parts) > 1 else "")
