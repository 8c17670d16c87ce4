"""Real servers on 127.0.0.1 for end-to-end tests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from callgate.models.llama_server import free_port, llama_cpp_server

__all__ = ["LocalHTTPServer", "free_port", "llama_cpp_server"]


class LocalHTTPServer:
    """An HTTP server on 127.0.0.1 (a free port), serving ``handler`` in a daemon thread."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
