"""web_search against a SearxNG-compatible JSON server started on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from callgate.graph.settings import DEFAULT_TOOL_RETRY
from callgate.tools.builtin import BuiltinSettings, builtin_tools
from callgate.tools.builtin.calculator import calculator_tool
from callgate.tools.builtin.system_stats import system_stats_tool
from callgate.tools.builtin.web_search import searxng_search, summarize_results, web_search_tool
from callgate.tools.registry import ToolRegistry
from callgate.tools.relevance import relevant_tools
from callgate.tools.summaries import ITEM_CHARS
from tests.servers import LocalHTTPServer

Reply = tuple[int, str, bytes]


class FakeSearxng:
    """A tiny HTTP server; ``reply`` decides each answer, ``requests`` records queries."""

    def __init__(self) -> None:
        self.reply: Callable[[dict[str, list[str]]], Reply] = lambda q: (200, "{}", b"{}")
        self.requests: list[dict[str, list[str]]] = []
        self.stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                url = urlparse(self.path)
                query = parse_qs(url.query)
                fake.requests.append({"path": [url.path], **query})
                status, ctype, body = fake.reply(query)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = LocalHTTPServer(Handler)
        self.url = self.http.url

    def close(self) -> None:
        self.stop.set()
        self.http.close()


@pytest.fixture
def searx() -> Iterator[FakeSearxng]:
    fake = FakeSearxng()
    yield fake
    fake.close()


def results_reply(n: int, *, title: str = "Result", snippet: str = "about it") -> Callable:
    def reply(query: dict[str, list[str]]) -> Reply:
        results = [{"title": f"{title} {i}", "url": f"https://example.org/{i}",
                    "content": f"{snippet} {i}", "engine": "fake", "score": 1.0 / (i + 1),
                    "category": "general"} for i in range(n)]
        body = {"query": query["q"][0], "number_of_results": n, "results": results,
                "answers": [], "suggestions": [], "infoboxes": []}
        return 200, "application/json", json.dumps(body).encode()
    return reply


async def test_results_are_mapped(searx: FakeSearxng) -> None:
    searx.reply = results_reply(2)
    found = await searxng_search(searx.url, "langgraph tools", max_results=5)
    assert found == [
        {"title": "Result 0", "url": "https://example.org/0", "snippet": "about it 0"},
        {"title": "Result 1", "url": "https://example.org/1", "snippet": "about it 1"},
    ]
    sent = searx.requests[0]
    assert sent["path"] == ["/search"]
    assert sent["q"] == ["langgraph tools"] and sent["format"] == ["json"]


async def test_max_results_is_honoured_and_bounded(searx: FakeSearxng) -> None:
    searx.reply = results_reply(15)
    tool = web_search_tool("searxng", searxng_url=searx.url + "/", timeout_s=2)
    assert len(await tool.runnable.ainvoke({"query": "x", "max_results": 3})) == 3
    assert len(await tool.runnable.ainvoke({"query": "x"})) == 5
    assert len(await tool.runnable.ainvoke({"query": "x", "max_results": 50})) == 10


async def test_slow_server_times_out_quickly(searx: FakeSearxng) -> None:
    def slow(query: dict[str, list[str]]) -> Reply:
        searx.stop.wait(5)
        return results_reply(1)(query)

    searx.reply = slow
    started = time.perf_counter()
    with pytest.raises(TimeoutError, match=r"searxng did not answer within 0\.3 s"):
        await searxng_search(searx.url, "x", timeout_s=0.3)
    assert time.perf_counter() - started < 2


async def test_server_error_names_the_status_and_is_transient(searx: FakeSearxng) -> None:
    searx.reply = lambda q: (500, "text/plain", b"boom")
    with pytest.raises(httpx.HTTPStatusError, match="500") as info:
        await searxng_search(searx.url, "x")
    assert info.value.response.status_code == 500
    assert DEFAULT_TOOL_RETRY.retry_on(info.value)  # callgate retries 5xx


async def test_json_disabled_403_gets_a_hint(searx: FakeSearxng) -> None:
    searx.reply = lambda q: (403, "text/html", b"<h1>Forbidden</h1>")
    with pytest.raises(httpx.HTTPStatusError, match="403.*search.formats"):
        await searxng_search(searx.url, "x")


async def test_bad_json_is_a_clear_error(searx: FakeSearxng) -> None:
    searx.reply = lambda q: (200, "application/json", b"<html>not json</html>")
    with pytest.raises(ValueError, match="invalid JSON"):
        await searxng_search(searx.url, "x")
    searx.reply = lambda q: (200, "application/json", b'{"answers": []}')
    with pytest.raises(ValueError, match="without a 'results' list"):
        await searxng_search(searx.url, "x")


async def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ConnectionError, match="cannot reach searxng"):
        await searxng_search(f"http://127.0.0.1:{port}", "x", timeout_s=2)


async def test_empty_query_is_refused(searx: FakeSearxng) -> None:
    tool = web_search_tool("searxng", searxng_url=searx.url)
    with pytest.raises(ValueError, match="query is empty"):
        await tool.runnable.ainvoke({"query": "  "})
    assert searx.requests == []


async def test_summary_form_and_bounds(searx: FakeSearxng) -> None:
    searx.reply = results_reply(6, title="T" * 300, snippet="word " * 200)
    tool = web_search_tool("searxng", searxng_url=searx.url)
    data = await tool.runnable.ainvoke({"query": "x", "max_results": 6})
    summary = tool.summarizer("web_search", data)
    assert summary.startswith("[web_search] results: ")
    assert summary.endswith("(+3 more)")
    assert len(summary) <= 900
    items = summary.removeprefix("[web_search] results: ").removesuffix(" (+3 more)")
    assert len(items.split(" | ")) == 3
    assert all(len(item) <= ITEM_CHARS for item in items.split(" | "))

    short = summarize_results("web_search", [{"title": "Docs", "url": "u", "snippet": "How"}])
    assert short == "[web_search] results: Docs — How"
    assert summarize_results("web_search", []) == "[web_search] no results"


async def test_builtin_tools_use_searxng_when_configured(searx: FakeSearxng,
                                                         tmp_path: Path) -> None:
    searx.reply = results_reply(1)
    settings = BuiltinSettings(searxng_url=searx.url, index_path=tmp_path / "none.sqlite")
    tools, statuses = builtin_tools(settings)
    web = next(t for t in tools if t.name == "web_search")
    assert statuses[0].available and searx.url in statuses[0].reason
    assert web.schema["required"] == ["query"]
    assert (await web.runnable.ainvoke({"query": "x"}))[0]["url"] == "https://example.org/0"


def test_questions_about_what_changes_daily_are_about_the_web() -> None:
    # `callgate ask "What is the weather in Paris?"` shared no word with web_search's
    # description, was offered no tool, and the bundled model answered "The weather in Paris
    # is FINAL.". The tool's own relevance scores such words; the description, which the
    # prompt lists, stays as it is.
    web = web_search_tool("searxng", searxng_url="http://127.0.0.1:9")
    registry = ToolRegistry()
    for tool in [web, calculator_tool(), system_stats_tool()]:
        registry.add(tool)
    assert "weather" not in web.description
    for question in ["What is the weather in Paris?", "What's the price of gold today?",
                     "What is the exchange rate of the euro?"]:
        assert relevant_tools(registry, question, unmatched="none") == ["web_search"], question
    assert relevant_tools(registry, "What is the capital of France?", unmatched="none") == []
    assert relevant_tools(registry, "How busy is the CPU?", unmatched="none") == [
        "system_stats"]
