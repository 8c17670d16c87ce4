"""The built-in tools: web_search, rag_search, generate_image, system_stats.

A tool whose backend is not configured is not offered; its :class:`BuiltinStatus` says
why (``callgate tools`` prints them). Configuration comes from the environment:

=============================  ==========================================================
``CALLGATE_SEARXNG_URL``       SearxNG instance for web_search (its JSON API)
``CALLGATE_SEARCH_BACKEND``    ``auto`` (SearxNG if its URL is set, else ddgs),
                               ``searxng`` or ``ddgs``
``CALLGATE_HTTP_TIMEOUT``      seconds for web requests (10)
``CALLGATE_INDEX``             rag_search index (``index.sqlite`` in the callgate home)
``CALLGATE_IMAGE_URL``         image server: an OpenAI-compatible base URL
                               (``http://127.0.0.1:9000/v1``), or the A1111/ComfyUI URL
``CALLGATE_IMAGE_API``         ``openai`` (default), ``a1111`` or ``comfyui``
``CALLGATE_IMAGE_MODEL``       model name sent to the OpenAI images API
``CALLGATE_IMAGE_API_KEY``     bearer key for it (else ``OPENAI_API_KEY``)
``CALLGATE_IMAGE_DIR``         where images are saved (``images`` in the callgate home)
``CALLGATE_IMAGE_TIMEOUT``     seconds for one image (120)
``CALLGATE_COMFYUI_WORKFLOW``  ComfyUI workflow exported with "Save (API Format)"
=============================  ==========================================================
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from callgate.persistence import callgate_home
from callgate.tools.registry import Tool

SEARCH_BACKENDS = ("auto", "searxng", "ddgs")
BUILTIN_NAMES = ("web_search", "rag_search", "generate_image", "system_stats", "calculator")


@dataclass
class BuiltinStatus:
    """Whether a built-in tool is offered, and why (or why not)."""

    name: str
    available: bool
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass
class BuiltinSettings:
    """Backends of the built-in tools; :meth:`from_env` reads them from the environment."""

    searxng_url: str | None = None
    search_backend: str = "auto"
    http_timeout_s: float = 10.0
    index_path: Path = field(default_factory=lambda: callgate_home() / "index.sqlite")
    image_url: str | None = None
    image_api: str = "openai"
    image_model: str | None = None
    image_api_key: str | None = None
    image_dir: Path = field(default_factory=lambda: callgate_home() / "images")
    image_timeout_s: float = 120.0
    comfyui_workflow: Path | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> BuiltinSettings:
        """Settings from ``CALLGATE_*`` variables (``env`` defaults to ``os.environ``)."""
        env = dict(os.environ if env is None else env)

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        workflow = get("CALLGATE_COMFYUI_WORKFLOW")
        return cls(
            searxng_url=get("CALLGATE_SEARXNG_URL"),
            search_backend=(get("CALLGATE_SEARCH_BACKEND") or "auto").lower(),
            http_timeout_s=_seconds(get("CALLGATE_HTTP_TIMEOUT"), 10.0,
                                    "CALLGATE_HTTP_TIMEOUT"),
            index_path=Path(get("CALLGATE_INDEX") or callgate_home() / "index.sqlite"),
            image_url=get("CALLGATE_IMAGE_URL"),
            image_api=(get("CALLGATE_IMAGE_API") or "openai").lower(),
            image_model=get("CALLGATE_IMAGE_MODEL"),
            image_api_key=get("CALLGATE_IMAGE_API_KEY") or get("OPENAI_API_KEY"),
            image_dir=Path(get("CALLGATE_IMAGE_DIR") or callgate_home() / "images"),
            image_timeout_s=_seconds(get("CALLGATE_IMAGE_TIMEOUT"), 120.0,
                                     "CALLGATE_IMAGE_TIMEOUT"),
            comfyui_workflow=Path(workflow) if workflow else None,
        )


def builtin_tools(settings: BuiltinSettings | None = None
                  ) -> tuple[list[Tool], list[BuiltinStatus]]:
    """The configured built-in Tools, and the status of every built-in (in a fixed order)."""
    settings = settings or BuiltinSettings.from_env()
    tools: list[Tool] = []
    statuses: list[BuiltinStatus] = []
    for name, build in (("web_search", _web_search), ("rag_search", _rag_search),
                        ("generate_image", _generate_image), ("system_stats", _system_stats),
                        ("calculator", _calculator)):
        try:
            tool, reason = build(settings)
        except (ValueError, OSError, ImportError) as exc:
            tool, reason = None, str(exc)
        if tool is not None:
            tools.append(tool)
        statuses.append(BuiltinStatus(name, tool is not None, reason))
    return tools, statuses


# -- one builder per tool: (the Tool or None, the reason) --------------------------------
def _web_search(s: BuiltinSettings) -> tuple[Tool | None, str]:
    from callgate.tools.builtin.web_search import web_search_tool

    if s.search_backend not in SEARCH_BACKENDS:
        return None, (f"unknown CALLGATE_SEARCH_BACKEND {s.search_backend!r} "
                      f"(one of {', '.join(SEARCH_BACKENDS)})")
    if s.search_backend == "searxng" or (s.search_backend == "auto" and s.searxng_url):
        if not s.searxng_url:
            return None, "searxng backend chosen but CALLGATE_SEARXNG_URL is not set"
        return (web_search_tool("searxng", searxng_url=s.searxng_url,
                                timeout_s=s.http_timeout_s), f"searxng at {s.searxng_url}")
    if ddgs_installed():
        return web_search_tool("ddgs", timeout_s=s.http_timeout_s), "ddgs (DuckDuckGo)"
    if s.search_backend == "ddgs":
        return None, "ddgs backend chosen but ddgs is not installed (pip install ddgs)"
    return None, "no backend: set CALLGATE_SEARXNG_URL or install ddgs"


def _rag_search(s: BuiltinSettings) -> tuple[Tool | None, str]:
    from callgate.tools.builtin.rag_search import rag_search_tool
    from callgate.tools.index import DamagedIndexError, DocumentIndex, indexed_chunks

    path = s.index_path.expanduser()
    try:
        chunks = indexed_chunks(path)
    except DamagedIndexError as exc:
        return None, f"{exc}: {exc.hint}"
    if not chunks:
        return None, f"no documents indexed: run `callgate index PATH` (index: {path})"
    return rag_search_tool(DocumentIndex(path)), f"index {path} ({chunks} chunks)"


def _generate_image(s: BuiltinSettings) -> tuple[Tool | None, str]:
    from callgate.tools.builtin.generate_image import (
        IMAGE_APIS,
        generate_image_tool,
        load_workflow,
    )

    if not s.image_url:
        return None, "no image server: set CALLGATE_IMAGE_URL (and CALLGATE_IMAGE_API)"
    if s.image_api not in IMAGE_APIS:
        return None, (f"unknown CALLGATE_IMAGE_API {s.image_api!r} "
                      f"(one of {', '.join(IMAGE_APIS)})")
    workflow = None
    if s.image_api == "comfyui":
        if s.comfyui_workflow is None:
            return None, ("comfyui needs a workflow: set CALLGATE_COMFYUI_WORKFLOW to a "
                          "workflow exported with 'Save (API Format)'")
        workflow = load_workflow(s.comfyui_workflow)
    tool = generate_image_tool(s.image_api, s.image_url, out_dir=s.image_dir.expanduser(),
                               model=s.image_model, api_key=s.image_api_key,
                               timeout_s=s.image_timeout_s, workflow=workflow)
    return tool, f"{s.image_api} at {s.image_url}, saving to {s.image_dir}"


def _system_stats(s: BuiltinSettings) -> tuple[Tool | None, str]:
    from callgate.tools.builtin.system_stats import system_stats_tool

    return system_stats_tool(), "psutil"


def _calculator(s: BuiltinSettings) -> tuple[Tool | None, str]:
    from callgate.tools.builtin.calculator import calculator_tool

    return calculator_tool(), "exact arithmetic, no backend needed"


# Words with which a request asks for what a built-in does. The model is offered only the
# tools that are configured, so with nothing indexed "What do my notes say about the car?"
# got an invented car; ``callgate ask`` and ``chat`` then say which tool is off and how to
# turn it on (``not_offered_for``). Whole words, as "photosynthesis" asks for no photo;
# documents are the user's ("my notes", "the docs"), not "the notes of a C major chord";
# "draw" asks for a picture with its object ("Draw me a cat"), not in "Who won the draw?".
ASKED_BY: dict[str, re.Pattern[str]] = {
    "web_search": re.compile(r"\b(?:web|internet|online|google|news)\b", re.IGNORECASE),
    "rag_search": re.compile(r"\b(?:(?:my|our|your|the|these|those)\s+(?:own\s+)?"
                             r"(?:notes?|documents?|docs|files?|pdfs?)|indexed)\b",
                             re.IGNORECASE),
    "generate_image": re.compile(r"\b(?:images?|pictures?|photos?|drawings?|illustrations?|"
                                 r"illustrate|(?:draw|paint|sketch)\s+(?:me|us|a|an|the|"
                                 r"some|my))\b", re.IGNORECASE),
}


def not_offered_for(request: str, statuses: list[BuiltinStatus]) -> list[BuiltinStatus]:
    """The built-ins not offered whose job ``request`` asks for (``ASKED_BY``)."""
    return [s for s in statuses if not s.available
            and (words := ASKED_BY.get(s.name)) is not None and words.search(request)]


def ddgs_installed() -> bool:
    """Whether the ``ddgs`` package can be imported."""
    return importlib.util.find_spec("ddgs") is not None


def _seconds(value: str | None, default: float, name: str) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {value!r}") from None
    if seconds <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return seconds
