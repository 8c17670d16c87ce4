"""HTTP shims for OpenAI-compatible servers that are stricter than OpenAI.

langchain-openai sends ``"content": null`` on an assistant message that carries
``tool_calls`` (valid for OpenAI); llama-cpp-python's server rejects it with a 500. The
shim rewrites that one field to ``""`` in outgoing requests; nothing else changes.
"""

from __future__ import annotations

import json
from typing import TypedDict

import httpx


def _patched(request: httpx.Request) -> httpx.Request:
    if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
        return request
    try:
        body = json.loads(request.content)
    except ValueError:
        return request
    changed = False
    for message in body.get("messages") or []:
        if message.get("role") == "assistant" and message.get("content") is None:
            message["content"] = ""
            changed = True
    if not changed:
        return request
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    return httpx.Request(request.method, request.url, headers=headers, json=body,
                         extensions=request.extensions)


class _SyncTransport(httpx.HTTPTransport):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return super().handle_request(_patched(request))


class _AsyncTransport(httpx.AsyncHTTPTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await super().handle_async_request(_patched(request))


class HttpClients(TypedDict):
    http_client: httpx.Client
    http_async_client: httpx.AsyncClient


def compat_http_clients(timeout: float = 120.0) -> HttpClients:
    """``http_client`` / ``http_async_client`` kwargs for ``ChatOpenAI`` on local servers."""
    return {"http_client": httpx.Client(transport=_SyncTransport(), timeout=timeout),
            "http_async_client": httpx.AsyncClient(transport=_AsyncTransport(),
                                                   timeout=timeout)}
