"""generate_image against OpenAI-images, Automatic1111 and ComfyUI servers on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from callgate.tools.builtin import BuiltinSettings, builtin_tools
from callgate.tools.builtin.generate_image import (
    generate_image_tool,
    image_kind,
    image_size,
    load_workflow,
)
from tests.servers import LocalHTTPServer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_png(width: int, height: int) -> bytes:
    """A valid RGB PNG of one colour, built with zlib and struct."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    rows = b"".join(b"\x00" + b"\x20\x80\xc0" * width for _ in range(height))
    return (PNG_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


Route = Callable[[str, dict[str, Any], dict[str, str]], tuple[int, str, bytes]]


class FakeServer:
    """Answers each (method, path) through ``routes``; records requests."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                fake.requests.append({"method": method, "path": url.path, "body": body,
                                      "query": query, "headers": dict(self.headers)})
                route = fake.routes.get((method, url.path))
                status, ctype, payload = (route(url.path, body, query) if route
                                          else (404, "text/plain", b"not found"))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, *args: Any) -> None:
                pass

        self.http = LocalHTTPServer(Handler)
        self.url = self.http.url

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


def as_json(payload: Any, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(payload).encode()


def openai_images(path: str, body: dict[str, Any], query: dict[str, str]):
    width, height = (int(x) for x in body["size"].split("x"))
    b64 = base64.b64encode(make_png(width, height)).decode()
    return as_json({"created": 1, "data": [{"b64_json": b64}]})


def saved(result: dict[str, Any], out_dir: Path) -> bytes:
    path = Path(result["path"])
    assert path.is_file() and path.parent == out_dir
    return path.read_bytes()


async def test_openai_images_api(server: FakeServer, tmp_path: Path) -> None:
    server.routes[("POST", "/v1/images/generations")] = openai_images
    tool = generate_image_tool("openai", server.url + "/v1", out_dir=tmp_path, model="flux",
                               api_key="sk-test", timeout_s=5)
    result = await tool.runnable.ainvoke({"prompt": "a red fox in snow", "width": 96,
                                          "height": 64})
    data = saved(result, tmp_path)
    assert data.startswith(PNG_SIGNATURE)
    assert result == {"path": result["path"], "width": 96, "height": 64, "backend": "openai"}
    assert Path(result["path"]).suffix == ".png" and "a-red-fox-in-snow" in result["path"]
    sent = server.requests[0]
    assert sent["body"] == {"model": "flux", "prompt": "a red fox in snow", "size": "96x64",
                            "n": 1, "response_format": "b64_json"}
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    assert tool.summarizer("generate_image", result).startswith(
        "[generate_image] saved 96x64 image (openai): ")

    second = await tool.runnable.ainvoke({"prompt": "a red fox in snow", "width": 96,
                                          "height": 64})
    assert second["path"] != result["path"]  # unique names


async def test_openai_images_api_with_url(server: FakeServer, tmp_path: Path) -> None:
    server.routes[("POST", "/v1/images/generations")] = lambda p, b, q: as_json(
        {"data": [{"url": server.url + "/files/out.png"}]})
    server.routes[("GET", "/files/out.png")] = lambda p, b, q: (200, "image/png",
                                                                make_png(32, 32))
    tool = generate_image_tool("openai", server.url + "/v1/", out_dir=tmp_path, timeout_s=5)
    result = await tool.runnable.ainvoke({"prompt": "dots", "width": 512, "height": 512})
    assert saved(result, tmp_path).startswith(PNG_SIGNATURE)
    assert (result["width"], result["height"]) == (32, 32)  # what the server really made
    assert "model" not in server.requests[0]["body"]
    assert "Authorization" not in server.requests[0]["headers"]


async def test_automatic1111(server: FakeServer, tmp_path: Path) -> None:
    server.routes[("POST", "/sdapi/v1/txt2img")] = lambda p, b, q: as_json(
        {"images": [base64.b64encode(make_png(b["width"], b["height"])).decode()],
         "parameters": b, "info": "{}"})
    tool = generate_image_tool("a1111", server.url, out_dir=tmp_path, timeout_s=5)
    result = await tool.runnable.ainvoke({"prompt": "lighthouse", "width": 96, "height": 64,
                                          "steps": 8, "guidance_scale": 6.5})
    assert saved(result, tmp_path).startswith(PNG_SIGNATURE)
    assert result["backend"] == "a1111" and (result["width"], result["height"]) == (96, 64)
    body = server.requests[0]["body"]
    assert body["steps"] == 8 and body["cfg_scale"] == 6.5 and body["prompt"] == "lighthouse"


WORKFLOW = {
    "3": {"class_type": "KSampler", "inputs": {
        "seed": 1, "steps": 30, "cfg": 8, "sampler_name": "euler", "scheduler": "normal",
        "denoise": 1, "model": ["4", 0], "positive": ["6", 0], "negative": ["7", 0],
        "latent_image": ["5", 0]}},
    "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd.safetensors"}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512,
                                                       "batch_size": 1}},
    "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "PROMPT", "clip": ["4", 1]}},
    "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["4", 1]}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0]}},
}


async def test_comfyui(server: FakeServer, tmp_path: Path) -> None:
    polls = []

    def history(path: str, body: dict[str, Any], query: dict[str, str]):
        polls.append(path)
        if len(polls) < 2:  # still running on the first poll
            return as_json({})
        return as_json({"p-1": {"status": {"status_str": "success", "completed": True},
                                "outputs": {"9": {"images": [
                                    {"filename": "f_0001.png", "subfolder": "",
                                     "type": "output"}]}}}})

    server.routes[("POST", "/prompt")] = lambda p, b, q: as_json({"prompt_id": "p-1"})
    server.routes[("GET", "/history/p-1")] = history
    server.routes[("GET", "/view")] = lambda p, b, q: (200, "image/png", make_png(128, 64))
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(WORKFLOW))
    tool = generate_image_tool("comfyui", server.url, out_dir=tmp_path / "out", timeout_s=5,
                               workflow=load_workflow(path))
    result = await tool.runnable.ainvoke({"prompt": "castle", "width": 128, "height": 64,
                                          "steps": 5})
    assert saved(result, tmp_path / "out").startswith(PNG_SIGNATURE)
    assert (result["width"], result["height"], result["backend"]) == (128, 64, "comfyui")
    queued = server.requests[0]["body"]["prompt"]
    assert queued["6"]["inputs"]["text"] == "castle"
    assert queued["7"]["inputs"]["text"] == "blurry"
    assert queued["5"]["inputs"]["width"] == 128 and queued["5"]["inputs"]["height"] == 64
    assert queued["3"]["inputs"]["steps"] == 5 and queued["3"]["inputs"]["cfg"] == 3.5
    view = server.requests[-1]
    assert view["path"] == "/view" and view["query"]["filename"] == "f_0001.png"


def test_comfyui_workflow_checks(tmp_path: Path) -> None:
    ui = tmp_path / "ui.json"
    ui.write_text(json.dumps({"nodes": [], "links": []}))
    with pytest.raises(ValueError, match="Save \\(API Format\\)"):
        load_workflow(ui)
    no_sampler = tmp_path / "bad.json"
    no_sampler.write_text(json.dumps({"1": {"class_type": "SaveImage", "inputs": {}}}))
    with pytest.raises(ValueError, match="no KSampler"):
        load_workflow(no_sampler)
    with pytest.raises(ValueError, match="needs a workflow"):
        generate_image_tool("comfyui", "http://127.0.0.1:1", out_dir=tmp_path)


@pytest.mark.parametrize(("reply", "error", "match"), [
    (lambda p, b, q: as_json({"data": [{"b64_json": base64.b64encode(b"GIF89a...").decode()}]}),
     ValueError, "did not return a PNG or JPEG"),
    (lambda p, b, q: as_json({"data": [{"b64_json": "***not base64***"}]}),
     ValueError, "not valid base64"),
    (lambda p, b, q: (200, "text/html", b"<html>hello</html>"), ValueError, "invalid JSON"),
    (lambda p, b, q: as_json({"data": []}), ValueError, "without data"),
    (lambda p, b, q: as_json({"error": {"message": "model overloaded"}}, 503),
     httpx.HTTPStatusError, "HTTP 503.*model overloaded"),
])
async def test_garbage_is_a_clear_error(server: FakeServer, tmp_path: Path, reply: Route,
                                        error: type[Exception], match: str) -> None:
    server.routes[("POST", "/v1/images/generations")] = reply
    tool = generate_image_tool("openai", server.url + "/v1", out_dir=tmp_path, timeout_s=5)
    with pytest.raises(error, match=match):
        await tool.runnable.ainvoke({"prompt": "anything", "width": 64, "height": 64})
    assert list(tmp_path.iterdir()) == []  # nothing saved


async def test_arguments_are_checked(tmp_path: Path) -> None:
    tool = generate_image_tool("openai", "http://127.0.0.1:1/v1", out_dir=tmp_path)
    with pytest.raises(ValueError, match="width must be between 64 and 2048"):
        await tool.runnable.ainvoke({"prompt": "x", "width": 10_000})
    with pytest.raises(ValueError, match="prompt is empty"):
        await tool.runnable.ainvoke({"prompt": " "})
    assert set(tool.schema["properties"]) == {"prompt", "width", "height", "steps",
                                              "guidance_scale"}
    assert tool.schema["required"] == ["prompt"]


def test_magic_bytes_and_sizes() -> None:
    png = make_png(7, 5)
    assert image_kind(png) == "png" and image_size(png) == (7, 5)
    jpeg = (b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 300, 400) + b"\x00" * 12)
    assert image_kind(jpeg) == "jpeg" and image_size(jpeg) == (400, 300)
    assert image_kind(b"GIF89a") is None and image_size(b"GIF89a") is None


def test_builtin_settings_build_the_tool(tmp_path: Path) -> None:
    settings = BuiltinSettings(image_url="http://127.0.0.1:9/v1", image_dir=tmp_path,
                               index_path=tmp_path / "none.sqlite")
    tools, statuses = builtin_tools(settings)
    status = next(s for s in statuses if s.name == "generate_image")
    assert status.available and "openai at http://127.0.0.1:9/v1" in status.reason
    tool = next(t for t in tools if t.name == "generate_image")
    assert tool.source == "builtin" and tool.timeout_s == 130
