"""Real servers on 127.0.0.1 for end-to-end tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def llama_cpp_server(model_path: str, *, chat_format: str = "chatml-function-calling",
                     n_ctx: int = 2048, ready_s: float = 90) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on a free port; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", model_path,
               "--chat_format", chat_format, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", "2", "--verbose", "False"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    base = f"http://127.0.0.1:{port}/v1"
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
                raise TimeoutError("llama_cpp.server did not come up")
            time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
