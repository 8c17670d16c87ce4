"""The ``generate_image`` tool: an OpenAI-compatible images API, Automatic1111 or ComfyUI.

ComfyUI runs a workflow, so it needs one: ``CALLGATE_COMFYUI_WORKFLOW`` names a workflow
exported with "Save (API Format)". Its first ``KSampler`` gets steps, cfg and a random
seed; the node wired to its ``positive`` input gets the prompt as ``text``, and the node
wired to its ``latent_image`` input (``EmptyLatentImage``) gets width and height.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import json
import random
import re
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from callgate.tools.registry import Tool, ToolRegistry

IMAGE_APIS = ("openai", "a1111", "comfyui")
_SAMPLERS = ("KSampler", "KSamplerAdvanced")
POLL_S = 0.25


async def render(api: str, url: str, prompt: str, width: int, height: int, *, steps: int = 20,
                 guidance_scale: float = 3.5, model: str | None = None,
                 api_key: str | None = None, timeout_s: float = 120.0,
                 workflow: dict[str, Any] | None = None) -> bytes:
    """The image bytes (PNG or JPEG, checked) from one backend."""
    base = url.rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            if api == "openai":
                data = await _openai(client, base, prompt, width, height, model, api_key)
            elif api == "a1111":
                data = await _a1111(client, base, prompt, width, height, steps, guidance_scale)
            elif api == "comfyui":
                if workflow is None:
                    raise ValueError("comfyui needs a workflow (CALLGATE_COMFYUI_WORKFLOW)")
                filled = fill_workflow(workflow, prompt, width, height, steps, guidance_scale)
                data = await _comfyui(client, base, filled, timeout_s)
            else:
                raise ValueError(f"unknown image API {api!r} (one of {', '.join(IMAGE_APIS)})")
    except httpx.TimeoutException as exc:
        raise TimeoutError(f"{api} did not answer within {timeout_s:g} s") from exc
    except httpx.TransportError as exc:
        raise ConnectionError(f"cannot reach the {api} image server at {url}: {exc}") from exc
    if image_kind(data) is None:
        raise ValueError(f"the {api} server did not return a PNG or JPEG image (its data "
                         f"starts with {data[:16]!r})")
    return data


def save_image(data: bytes, folder: str | Path, prompt: str) -> Path:
    """Write the image under ``folder`` with a unique, readable name; return its path."""
    folder = Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    slug = "-".join(re.findall(r"[a-z0-9]+", prompt.lower()))[:40].strip("-") or "image"
    suffix = ".png" if image_kind(data) == "png" else ".jpg"
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{uuid.uuid4().hex[:8]}{suffix}"
    path.write_bytes(data)
    return path


def image_kind(data: bytes) -> str | None:
    """``"png"`` or ``"jpeg"`` by magic bytes, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR or a JPEG's SOF marker; None if not found."""
    if image_kind(data) == "png" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    i = 2
    while image_kind(data) == "jpeg" and i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def load_workflow(path: str | Path) -> dict[str, Any]:
    """Read a ComfyUI API-format workflow and check that :func:`fill_workflow` can use it."""
    try:
        workflow = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the ComfyUI workflow {path}: {exc}") from exc
    if isinstance(workflow, dict) and "nodes" in workflow:
        raise ValueError(f"{path} is in ComfyUI's UI format: export it with "
                         "'Save (API Format)'")
    fill_workflow(workflow, "check", 512, 512, 20, 3.5)
    return workflow


def fill_workflow(workflow: dict[str, Any], prompt: str, width: int, height: int, steps: int,
                  guidance_scale: float) -> dict[str, Any]:
    """A copy of ``workflow`` with the prompt, size, steps, cfg and a random seed set."""
    nodes = copy.deepcopy(workflow)
    if not isinstance(nodes, dict):
        raise ValueError("a ComfyUI API-format workflow is a JSON object of nodes")
    sampler = next((n for n in nodes.values()
                    if isinstance(n, dict) and n.get("class_type") in _SAMPLERS), None)
    if sampler is None:
        raise ValueError("the ComfyUI workflow has no KSampler node")
    inputs = sampler.setdefault("inputs", {})
    inputs.update(steps=steps, cfg=guidance_scale)
    inputs["noise_seed" if sampler["class_type"] == "KSamplerAdvanced" else "seed"] = \
        random.randrange(2**32)
    positive = _linked(nodes, inputs.get("positive"))
    if positive is None or "text" not in positive.get("inputs", {}):
        raise ValueError("the KSampler's positive input is not a text-encode node")
    positive["inputs"]["text"] = prompt
    latent = _linked(nodes, inputs.get("latent_image"))
    if latent is not None and "width" in latent.get("inputs", {}):
        latent["inputs"].update(width=width, height=height)
    return nodes


def generate_image_tool(api: str, url: str, *, out_dir: str | Path, model: str | None = None,
                        api_key: str | None = None, timeout_s: float = 120.0,
                        workflow: dict[str, Any] | None = None) -> Tool:
    """The ``generate_image`` Tool for one backend, saving images under ``out_dir``."""
    if api not in IMAGE_APIS:
        raise ValueError(f"unknown image API {api!r} (one of {', '.join(IMAGE_APIS)})")
    if api == "comfyui" and workflow is None:
        raise ValueError("comfyui needs a workflow: set CALLGATE_COMFYUI_WORKFLOW to a "
                         "workflow exported with 'Save (API Format)'")

    async def generate_image(prompt: str, width: int = 1024, height: int = 1024,
                             steps: int = 20, guidance_scale: float = 3.5) -> dict:
        """Generate an image from a text description and save it; returns the file path.
        width and height are in pixels (64-2048); steps and guidance_scale tune
        diffusion models."""
        if not prompt.strip():
            raise ValueError("prompt is empty: describe the image")
        for label, value, low, high in (("width", width, 64, 2048),
                                        ("height", height, 64, 2048),
                                        ("steps", steps, 1, 150),
                                        ("guidance_scale", guidance_scale, 0, 30)):
            if not low <= value <= high:
                raise ValueError(f"{label} must be between {low} and {high}, got {value}")
        data = await render(api, url, prompt, width, height, steps=steps,
                            guidance_scale=guidance_scale, model=model, api_key=api_key,
                            timeout_s=timeout_s, workflow=workflow)
        path = await asyncio.to_thread(save_image, data, out_dir, prompt)
        actual = image_size(data) or (width, height)
        return {"path": str(path), "width": actual[0], "height": actual[1], "backend": api}

    return ToolRegistry().register(generate_image, summarizer=summarize_image,
                                   category="media", source="builtin",
                                   timeout_s=timeout_s + 10)


def summarize_image(tool: str, data: Any) -> str:
    """``[generate_image] saved 1024x1024 image (openai): /path/to/file.png``."""
    if not isinstance(data, dict) or not data.get("path"):
        return f"[{tool}] no image"
    return (f"[{tool}] saved {data.get('width')}x{data.get('height')} image "
            f"({data.get('backend')}): {data['path']}")


# -- backends ---------------------------------------------------------------------------
async def _openai(client: httpx.AsyncClient, base: str, prompt: str, width: int, height: int,
                  model: str | None, api_key: str | None) -> bytes:
    body: dict[str, Any] = {"prompt": prompt, "size": f"{width}x{height}", "n": 1}
    if model:
        body["model"] = model
    if not (model or "").startswith("gpt-image"):  # gpt-image models reject it, send b64
        body["response_format"] = "b64_json"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    payload = _json(await client.post(f"{base}/images/generations", json=body,
                                      headers=headers), "the images API")
    items = payload.get("data") if isinstance(payload, dict) else None
    item = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}
    if item.get("b64_json"):
        return _b64(item["b64_json"], "the images API")
    if item.get("url"):
        return _checked(await client.get(item["url"]), "the image URL").content
    raise ValueError("the images API answered without data[0].b64_json or data[0].url")


async def _a1111(client: httpx.AsyncClient, base: str, prompt: str, width: int, height: int,
                 steps: int, guidance_scale: float) -> bytes:
    body = {"prompt": prompt, "width": width, "height": height, "steps": steps,
            "cfg_scale": guidance_scale, "batch_size": 1, "n_iter": 1}
    payload = _json(await client.post(f"{base}/sdapi/v1/txt2img", json=body), "automatic1111")
    images = payload.get("images") if isinstance(payload, dict) else None
    if not isinstance(images, list) or not images or not isinstance(images[0], str):
        raise ValueError("automatic1111 answered without images[0]")
    return _b64(images[0], "automatic1111")


async def _comfyui(client: httpx.AsyncClient, base: str, workflow: dict[str, Any],
                   timeout_s: float) -> bytes:
    queued = _json(await client.post(f"{base}/prompt", json={
        "prompt": workflow, "client_id": uuid.uuid4().hex}), "comfyui")
    prompt_id = queued.get("prompt_id") if isinstance(queued, dict) else None
    if not prompt_id:
        raise ValueError(f"comfyui did not queue the workflow: {str(queued)[:200]}")
    deadline = time.monotonic() + timeout_s
    while True:
        history = _json(await client.get(f"{base}/history/{prompt_id}"), "comfyui")
        entry = history.get(prompt_id) if isinstance(history, dict) else None
        if entry:
            if (entry.get("status") or {}).get("status_str") == "error":
                raise RuntimeError("comfyui failed to run the workflow")
            images = [img for out in (entry.get("outputs") or {}).values()
                      for img in (out.get("images") or [])]
            if images:
                break
            if (entry.get("status") or {}).get("completed"):
                raise ValueError("the comfyui workflow produced no image")
        if time.monotonic() > deadline:
            raise TimeoutError(f"comfyui did not finish within {timeout_s:g} s")
        await asyncio.sleep(POLL_S)
    first = images[0]
    params = {k: first.get(k, "") for k in ("filename", "subfolder", "type")}
    return _checked(await client.get(f"{base}/view", params=params), "comfyui").content


# -- helpers ----------------------------------------------------------------------------
def _linked(nodes: dict[str, Any], link: Any) -> dict[str, Any] | None:
    """The node an input ``[node_id, output_index]`` points to."""
    if isinstance(link, list) and link and str(link[0]) in nodes:
        node = nodes[str(link[0])]
        return node if isinstance(node, dict) else None
    return None


def _checked(response: httpx.Response, what: str) -> httpx.Response:
    """``response`` if 2xx, else an HTTPStatusError naming the status and the server's words."""
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        detail = " ".join(response.text.split())[:200]
        raise httpx.HTTPStatusError(
            f"{what} answered HTTP {response.status_code} {response.reason_phrase}"
            + (f": {detail}" if detail else ""), request=exc.request,
            response=exc.response) from None
    return response


def _json(response: httpx.Response, what: str) -> Any:
    try:
        return _checked(response, what).json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} returned invalid JSON ({exc}); it starts with "
                         f"{response.text[:80]!r}") from None


def _b64(text: str, what: str) -> bytes:
    if text.startswith("data:"):  # a data URL: data:image/png;base64,....
        text = text.partition(",")[2]
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{what} returned an image that is not valid base64: {exc}") from None
