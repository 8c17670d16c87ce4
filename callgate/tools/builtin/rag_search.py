"""The ``rag_search`` tool: passages from local documents, over the FTS5 index or a retriever.

Scoping: a chunk belongs to a thread (``callgate index PATH --scope THREAD``) or to
``"global"``. By default a call sees the current thread's chunks plus the global ones;
``global: true`` sees every chunk in the index. The thread id comes from the LangGraph
config (``configurable.thread_id``); without one, only global chunks are searched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.config import get_config
from pydantic import BaseModel, ConfigDict, Field

from callgate.tools.index import GLOBAL, DamagedIndexError, DocumentIndex
from callgate.tools.registry import Tool, ToolRegistry
from callgate.tools.relevance import shared_words
from callgate.tools.summaries import ITEM_CHARS, TOP_ITEMS, clip

NAME = "rag_search"
# Its name already says "search": a description saying it again put rag_search beside
# web_search for every "search the web for ..." (callgate.tools.relevance scores words).
DESCRIPTION = (
    "Find the most relevant passages in the user's own documents, notes and files, each "
    "with its source file and location. Looks in this conversation's documents and the "
    "shared ones; set global to true to look in every indexed document."
)


class RagSearchArgs(BaseModel):
    """Arguments of ``rag_search``; ``global`` is a Python keyword, hence the alias."""

    model_config = ConfigDict(populate_by_name=True)

    query: str = Field(description="The words to look for, taken from the question.")
    limit: int = Field(3, ge=1, le=10, description="How many passages to return (1-10).")
    global_: bool = Field(False, alias="global",
                          description="Search all indexed documents, not only this "
                                      "conversation's and the shared ones.")


class _AliasedArgsTool(StructuredTool):
    # LangChain rebuilds the tool-call schema from field names, dropping aliases (the
    # model would see ``global_``); the args model itself already has nothing injected.
    @property
    def tool_call_schema(self) -> Any:
        return self.args_schema


def rag_search_tool(source: DocumentIndex | BaseRetriever) -> Tool:
    """The ``rag_search`` Tool over a :class:`DocumentIndex` or any LangChain retriever.

    With a retriever, a document's ``metadata["scope"]`` (if any) scopes it like an
    index chunk; its ``source`` and ``page``/``location`` metadata name where it is from.
    """
    if isinstance(source, DocumentIndex):
        index = source

        def search(query: str, limit: int = 3, global_: bool = False, *,
                   config: RunnableConfig) -> list[dict[str, Any]]:
            return index.search(query, limit=limit,
                                scope=None if global_ else _thread_scope(config))

        runnable = _AliasedArgsTool.from_function(func=search, name=NAME,
                                                  description=DESCRIPTION,
                                                  args_schema=RagSearchArgs)
    elif isinstance(source, BaseRetriever):
        retriever = source

        async def asearch(query: str, limit: int = 3, global_: bool = False, *,
                          config: RunnableConfig) -> list[dict[str, Any]]:
            scope = None if global_ else _thread_scope(config)
            docs = await retriever.ainvoke(query)
            found = [_from_document(d) for d in docs
                     if scope is None or d.metadata.get("scope", GLOBAL) in (scope, GLOBAL)]
            return found[:limit]

        runnable = _AliasedArgsTool.from_function(coroutine=asearch, name=NAME,
                                                  description=DESCRIPTION,
                                                  args_schema=RagSearchArgs)
    else:
        raise TypeError(f"rag_search needs a DocumentIndex or a BaseRetriever, got "
                        f"{type(source).__name__}")
    return ToolRegistry().register(
        runnable, summarizer=summarize_passages, conversation_words=("query",),
        category="documents", source="builtin",
        relevance=passage_match(index) if isinstance(source, DocumentIndex) else None)


# Words of a request an indexed passage must hold together before the request counts as
# about the documents: one shared word ("memory", "python") is chance. The score is that
# much and no more, so that a note mentioning a laptop does not crowd system_stats out of
# "How many cores does my laptop have?" (tools scoring under 3/4 of the best are not offered).
MIN_SHARED = 2


def passage_match(index: DocumentIndex) -> Callable[[str], float]:
    """A request's relevance to the documents: ``MIN_SHARED`` where it shares that many
    words with the best passage of the index that a call of this thread would search (every
    document outside a graph run), else 0. A question about the user's notes seldom says "my
    notes" ("When does our flight to Lisbon leave?"); with no word of the tool's description
    in it, no tool was offered and the model answered from nothing. An index that cannot be
    read scores 0: the call would report the error. A retriever gets no such score: a query
    may cost an embedding."""

    def score(request: str) -> float:
        try:
            scope: str | None = _thread_scope(get_config())
        except RuntimeError:  # not inside a graph run
            scope = None
        try:
            found = index.search(request, limit=1, scope=scope)
        except (sqlite3.Error, OSError, DamagedIndexError):
            return 0.0
        shared = shared_words(request, found[0]["text"]) if found else set()
        return float(MIN_SHARED) if len(shared) >= MIN_SHARED else 0.0

    return score


def summarize_passages(tool: str, data: Any) -> str:
    """``[rag_search] results: notes.md:lines 3-9 — text… | …`` (top 3)."""
    items = _items(data)
    if not items:
        return f"[{tool}] no matching passages"
    shown = " | ".join(clip(f"{_where(item)} — {item.get('text', '')}", ITEM_CHARS)
                       for item in items[:TOP_ITEMS])
    more = f" (+{len(items) - TOP_ITEMS} more)" if len(items) > TOP_ITEMS else ""
    return f"[{tool}] results: {shown}{more}"


def _thread_scope(config: RunnableConfig | None) -> str:
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(thread) if thread else GLOBAL


def _from_document(doc: Any) -> dict[str, Any]:
    meta = doc.metadata or {}
    location = meta.get("location")
    if location is None and meta.get("page") is not None:
        location = f"page {meta['page']}"
    score = meta.get("score", meta.get("relevance_score"))
    return {"text": doc.page_content, "source": str(meta.get("source", "")),
            "location": location, "score": score}


def _where(item: dict[str, Any]) -> str:
    source = str(item.get("source") or "?")
    if "://" not in source:
        source = Path(source).name or source
    return f"{source}:{item['location']}" if item.get("location") else source


def _items(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):  # execute's cut of an oversized result keeps "items"
        data = data.get("items") or []
    return [x for x in data if isinstance(x, dict)] if isinstance(data, list) else []
