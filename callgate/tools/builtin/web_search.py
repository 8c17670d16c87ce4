"""The ``web_search`` tool: a SearxNG instance's JSON API, or DuckDuckGo through ``ddgs``."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import httpx

from callgate.tools.registry import Tool, ToolRegistry
from callgate.tools.relevance import shared_words
from callgate.tools.summaries import ITEM_CHARS, TOP_ITEMS, clip

MAX_RESULTS = 10
# What changes from day to day, which no model knows: a question about it is about the web
# even where it shares no word with the description ("What is the weather in Paris?" got no
# tool, and the bundled model answered "The weather in Paris is FINAL."). Scored, not
# written into the description: the prompt lists the description, and every word of a
# prompt moves a small model's answers to other questions (the answer sets, README).
CHANGING = ("weather forecast price stock exchange rate headline score today "
            "tonight tomorrow latest")


def about_changing_things(request: str) -> float:
    """One point per word of ``CHANGING`` in ``request``, as a description's word scores."""
    return float(len(shared_words(request, CHANGING)))


async def searxng_search(base_url: str, query: str, max_results: int = 5,
                         timeout_s: float = 10.0) -> list[dict[str, str]]:
    """Results of a SearxNG instance (``GET {base_url}/search?format=json``).

    Raises ``TimeoutError`` when it does not answer in time, ``ConnectionError`` when it
    cannot be reached, ``httpx.HTTPStatusError`` (with ``response``) for HTTP errors and
    ``ValueError`` for an answer that is not SearxNG's JSON.
    """
    url = base_url.rstrip("/") + "/search"
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url, params={"q": query, "format": "json"},
                                        headers={"Accept": "application/json"})
    except httpx.TimeoutException as exc:
        raise TimeoutError(f"searxng did not answer within {timeout_s:g} s") from exc
    except httpx.TransportError as exc:
        raise ConnectionError(f"cannot reach searxng at {base_url}: {exc}") from exc
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        hint = (" (is `json` listed in search.formats of its settings.yml?)"
                if response.status_code == 403 else "")
        raise httpx.HTTPStatusError(
            f"searxng answered HTTP {response.status_code} {response.reason_phrase}{hint}",
            request=exc.request, response=exc.response) from None
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"searxng returned invalid JSON ({exc}); its answer starts with "
                         f"{response.text[:80]!r}") from None
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise ValueError("searxng returned JSON without a 'results' list")
    found = [{"title": _text(r.get("title")), "url": _text(r.get("url")),
              "snippet": _text(r.get("content"))}
             for r in results if isinstance(r, dict) and r.get("url")]
    return found[:max_results]


async def ddgs_search(query: str, max_results: int = 5,
                      timeout_s: float = 10.0) -> list[dict[str, str]]:
    """DuckDuckGo (and the other engines ``ddgs`` aggregates) through ``DDGS().text``."""
    from ddgs import DDGS
    from ddgs.exceptions import DDGSException, TimeoutException

    def run() -> list[dict[str, Any]]:
        return DDGS(timeout=max(1, math.ceil(timeout_s))).text(query, max_results=max_results)

    try:
        results = await asyncio.to_thread(run)
    except TimeoutException as exc:
        raise TimeoutError(f"ddgs did not answer within {timeout_s:g} s") from exc
    except DDGSException as exc:
        if str(exc) == "No results found.":
            return []
        raise RuntimeError(f"ddgs search failed: {exc}") from exc
    return [{"title": _text(r.get("title")), "url": _text(r.get("href")),
             "snippet": _text(r.get("body"))} for r in results[:max_results]]


def web_search_tool(backend: str, *, searxng_url: str | None = None,
                    timeout_s: float = 10.0) -> Tool:
    """The ``web_search`` Tool over ``"searxng"`` (needs ``searxng_url``) or ``"ddgs"``."""
    if backend == "searxng":
        if not searxng_url:
            raise ValueError("the searxng backend needs a URL")
        url = searxng_url

        async def backend_search(query: str, n: int) -> list[dict[str, str]]:
            return await searxng_search(url, query, n, timeout_s)
    elif backend == "ddgs":
        async def backend_search(query: str, n: int) -> list[dict[str, str]]:
            return await ddgs_search(query, n, timeout_s)
    else:
        raise ValueError(f"unknown search backend {backend!r} (searxng or ddgs)")

    async def web_search(query: str, max_results: int = 5) -> list[dict]:
        """Search the web for news, facts and anything recent; returns up to max_results
        (1-10) results: title, url, snippet."""
        if not query.strip():
            raise ValueError("query is empty: say what to search for")
        return await backend_search(query, min(max(1, max_results), MAX_RESULTS))

    return ToolRegistry().register(web_search, summarizer=summarize_results, category="web",
                                   conversation_words=("query",),
                                   relevance=about_changing_things,
                                   source="builtin", timeout_s=timeout_s + 5)


def summarize_results(tool: str, data: Any) -> str:
    """``[web_search] results: title — snippet | …`` (top 3, each ≤200 chars)."""
    if isinstance(data, dict):  # execute's cut of an oversized result keeps "items"
        data = data.get("items") or []
    items = [x for x in data if isinstance(x, dict)] if isinstance(data, list) else []
    if not items:
        return f"[{tool}] no results"
    shown = " | ".join(
        clip(f"{x.get('title') or x.get('url', '')} — {x['snippet']}" if x.get("snippet")
             else x.get("title") or x.get("url", ""), ITEM_CHARS)
        for x in items[:TOP_ITEMS])
    more = f" (+{len(items) - TOP_ITEMS} more)" if len(items) > TOP_ITEMS else ""
    return f"[{tool}] results: {shown}{more}"


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""
