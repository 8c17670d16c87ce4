"""Running the async implementation of a node from LangGraph's sync ``invoke``.

Coroutines run on one long-lived background event loop (a daemon thread) rather than a
fresh loop per call: a new loop per call also meant a new thread pool, so a new thread,
for every sync tool. ``asyncio.run`` per call would also wait for its executor on exit,
so a hung synchronous tool that already timed out would block the node until it returned.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# Sync tools run in the loop's default executor; a timed-out tool that never returns keeps
# its thread, so the pool is generous (threads are only started when none is idle).
TOOL_THREADS = 64

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared background event loop, started on first use."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            loop.set_default_executor(ThreadPoolExecutor(TOOL_THREADS,
                                                         thread_name_prefix="callgate-tool"))
            threading.Thread(target=loop.run_forever, name="callgate-loop",
                             daemon=True).start()
            _loop = loop
        return _loop


def _forget_loop() -> None:
    global _loop
    _loop = None  # a forked child has the loop object but not its thread


os.register_at_fork(after_in_child=_forget_loop)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also under a running loop (Jupyter),
    in the caller's context (LangGraph's config and stream writer live in contextvars)."""
    loop = background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:  # sync code called from a coroutine on the loop itself
        return _run_in_own_thread(coro)
    future = asyncio.run_coroutine_threadsafe(
        _in_context(coro, contextvars.copy_context()), loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()  # interrupted (KeyboardInterrupt): don't leave the work running
        raise


async def _in_context(coro: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
    return await asyncio.get_running_loop().create_task(coro, context=context)


def _run_in_own_thread(coro: Coroutine[Any, Any, T]) -> T:
    """Blocking the shared loop on itself would deadlock: use a private loop instead."""
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def target() -> None:
        loop = asyncio.new_event_loop()
        try:
            box["value"] = context.run(loop.run_until_complete, coro)
        except BaseException as exc:  # re-raised in the calling thread
            box["error"] = exc
        finally:
            loop.close()

    thread = threading.Thread(target=target, name="callgate-node", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
