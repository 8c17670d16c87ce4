"""llama-cpp-python's OpenAI-compatible server on 127.0.0.1, for the native path offline.

``chat_format="chatml-function-calling"`` gives any chat GGUF OpenAI-style ``tools``; point
``openai:MODEL@<url>`` (or ``ChatOpenAI(base_url=url)``) at the URL it yields.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from callgate.models.llamacpp import default_threads


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def llama_cpp_server(model_path: str, *, chat_format: str = "chatml-function-calling",
                     n_ctx: int = 2048, n_threads: int | None = None,
                     ready_s: float = 90) -> Iterator[str]:
    """Start the server on a free port and yield its base URL (``http://127.0.0.1:N/v1``)."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", model_path,
               "--chat_format", chat_format, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", str(n_threads or default_threads()),
               "--verbose", "False"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    base = f"http://127.0.0.1:{port}/v1"
    assert process.stderr is not None  # stderr=PIPE
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {process.stderr.read()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"llama_cpp.server did not answer within {ready_s:g} s")
            time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
