"""Real servers on 127.0.0.1 for end-to-end tests."""

from __future__ import annotations

from callgate.models.llama_server import free_port, llama_cpp_server

__all__ = ["free_port", "llama_cpp_server"]
