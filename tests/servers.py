"""Real servers on 127.0.0.1 for end-to-end tests."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from callgate.models.llama_server import free_port, llama_cpp_server

__all__ = ["LocalHTTPServer", "PostgresUnavailable", "free_port", "json_reply_server",
           "langgraph_dev_server", "llama_cpp_server", "postgres_server"]


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


def json_reply_server(status: int, body: object,
                      headers: dict[str, str] | None = None) -> LocalHTTPServer:
    """A server answering every POST with ``status`` and ``body`` as JSON: a provider's
    error as its API writes it."""
    data = json.dumps(body).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return LocalHTTPServer(Handler)


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be started here (the message says why)."""


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    # Debian keeps the server binaries off PATH, one folder per major version.
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return candidates[-1] if candidates else None


@contextmanager
def postgres_server(database: str = "callgate_test") -> Iterator[str]:
    """A throwaway PostgreSQL server on 127.0.0.1 (``initdb`` + ``pg_ctl`` into a temporary
    folder, trust auth), with ``database`` created: yields its ``postgresql://`` URL.

    As root the server runs as the ``postgres`` user (PostgreSQL refuses root). Raises
    :class:`PostgresUnavailable` when the binaries are missing or the server does not start.
    """
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise PostgresUnavailable("initdb/pg_ctl not found (install Debian's postgresql "
                                  "package, or set CALLGATE_TEST_POSTGRES to a server URL)")
    as_user: list[str] = []
    # Not pytest's tmp_path: its 0700 parents would keep the postgres user out.
    folder = Path(tempfile.mkdtemp(prefix="callgate-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if not runuser:
            raise PostgresUnavailable("running as root and runuser is missing: cannot start "
                                      "PostgreSQL as an unprivileged user")
        as_user = [runuser, "-u", "postgres", "--"]
        shutil.chown(folder, user="postgres")
    data, log, port = folder / "data", folder / "server.log", free_port()

    def run(*cmd: str) -> None:
        done = subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=120)
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            detail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
            raise PostgresUnavailable(f"{Path(cmd[0]).name} failed: "
                                      f"{' / '.join(tail + detail)}")

    started = False
    try:
        run(initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-sync")
        run(pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
            f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off", "start")
        started = True
        import psycopg

        admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        yield f"postgresql://postgres@127.0.0.1:{port}/{database}"
    finally:
        if started:
            subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def langgraph_dev_server(config: Path, *, env: dict[str, str] | None = None,
                         startup_s: float = 90.0) -> Iterator[str]:
    """``langgraph dev --no-browser`` for ``config`` on a free 127.0.0.1 port: yields its URL.

    Runs in ``config``'s folder (where the server keeps ``.langgraph_api/``), logs to
    ``server.log`` there, and is stopped with its process group on exit."""
    import httpx

    port = free_port()
    cli = Path(sys.executable).with_name("langgraph")
    log = config.parent / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(cli), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
             "--port", str(port), "--config", str(config)],
            cwd=config.parent, env={**os.environ, **(env or {})}, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"langgraph dev exited ({proc.returncode}): "
                                   f"{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"langgraph dev not up after {startup_s:.0f} s: "
                                   f"{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
