"""Cancelling a running thread from another thread or task.

LangGraph has no cooperative cancellation for a run (only task cancellation in async
code, which loses the step in flight), so callgate checks a token at every node boundary
and while tools run.
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.runnables import RunnableConfig


class CancelToken:
    """A thread-safe flag; ``cancel()`` from anywhere, the run stops at the next boundary."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


_active: dict[str, CancelToken] = {}
_lock = threading.Lock()


def _thread_id(config: RunnableConfig | None) -> str | None:
    configurable: dict[str, Any] = (config or {}).get("configurable") or {}
    value = configurable.get("thread_id")
    return str(value) if value is not None else None


def token_for(config: RunnableConfig | None) -> CancelToken:
    """The token governing this run: an explicit ``cancel_token`` or the thread's own."""
    configurable: dict[str, Any] = (config or {}).get("configurable") or {}
    explicit = configurable.get("cancel_token")
    if isinstance(explicit, CancelToken):
        return explicit
    thread_id = _thread_id(config)
    if thread_id is None:
        return _NEVER
    with _lock:
        return _active.setdefault(thread_id, CancelToken())


def begin_run(config: RunnableConfig | None) -> None:
    """Give the thread a fresh token at the start of a turn (old cancels don't leak in)."""
    thread_id = _thread_id(config)
    if thread_id is not None:
        with _lock:
            _active[thread_id] = CancelToken()


def end_run(config: RunnableConfig | None) -> None:
    thread_id = _thread_id(config)
    if thread_id is not None:
        with _lock:
            _active.pop(thread_id, None)


def cancel(thread_id: str) -> bool:
    """Cancel the run in progress on ``thread_id``; False if none is running here."""
    with _lock:
        token = _active.get(str(thread_id))
    if token is None:
        return False
    token.cancel()
    return True


class _NeverCancelled(CancelToken):
    def cancel(self) -> None:  # a run without a thread id can only be cancelled by token
        raise RuntimeError("this run has no thread_id: pass a CancelToken as "
                           "config['configurable']['cancel_token'] to cancel it")


_NEVER = _NeverCancelled()
