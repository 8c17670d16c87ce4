"""Cancelling a run: from another thread or task, or from another process.

LangGraph cancels a run only by cancelling its asyncio task (LangGraph Server's
``runs.cancel`` does that), which a sync ``invoke`` cannot use and which stops mid-step.
callgate adds cooperative cancellation, checked at every node boundary, between streamed
model tokens and while tools run:

- a :class:`CancelToken` passed as ``config["configurable"]["cancel_token"]``;
- ``callgate.cancel(thread_id)``: a request for the thread, in this process;
- ``callgate.cancel(thread_id, store=store)``: the request is also persisted in the store
  (namespace ``("callgate", "cancel")``), so a run of the thread in another process sharing
  that store stops at its next node boundary.

A request is honoured by the run in progress, or by the next run of the thread that starts
within ``PENDING_TTL_S`` seconds (a cancel that arrives just before the run); the run that
honours it removes it when it ends, and older requests expire. Runs keep no per-thread
entries of their own, so nothing leaks when a run ends by an interrupt or a crash.
"""

from __future__ import annotations

import threading
import time

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

CANCEL_NAMESPACE = ("callgate", "cancel")
PENDING_TTL_S = 30.0
STORE_POLL_S = 0.25  # while a tool runs, how often a persisted request is looked for


class CancelToken:
    """A thread-safe flag; ``cancel()`` from anywhere, the run stops at the next boundary."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True once cancelled."""
        return self._event.wait(timeout)


_requests: dict[str, float] = {}  # thread id -> when a cancel was asked for, this process
_lock = threading.Lock()


def _live(asked_at: float | None, now: float) -> bool:
    return asked_at is not None and now - asked_at <= PENDING_TTL_S


class RunCancel(CancelToken):
    """The cancellation view of one run: its explicit token or its thread's request."""

    def __init__(self, thread_id: str | None, explicit: CancelToken | None,
                 store: BaseStore | None = None) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.explicit = explicit
        self.store = store
        self._next_look = 0.0

    def cancel(self) -> None:
        if self.explicit is not None:
            self.explicit.cancel()
        elif self.thread_id is not None:
            cancel(self.thread_id)
        else:
            raise RuntimeError("this run has no thread_id: pass a CancelToken as "
                               "config['configurable']['cancel_token'] to cancel it")

    @property
    def cancelled(self) -> bool:
        if self.explicit is not None and self.explicit.cancelled:
            return True
        if self.thread_id is None:
            return False
        now = time.time()
        with _lock:
            if _live(_requests.get(self.thread_id), now):
                return True
        if self.store is not None and now >= self._next_look:
            self._next_look = now + STORE_POLL_S  # a store read is a database query
            item = self.store.get(CANCEL_NAMESPACE, self.thread_id)
            return item is not None and _live(float(item.value.get("at", 0.0)), now)
        return False

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.cancelled:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.explicit is not None:
                self.explicit.wait(min(left, 0.05))
            else:
                time.sleep(min(left, 0.05))
        return True


def thread_id_of(config: RunnableConfig | None) -> str | None:
    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(value) if value is not None else None


def token_for(config: RunnableConfig | None, store: BaseStore | None = None) -> RunCancel:
    """The cancellation state of the run ``config`` belongs to (with ``store``: also
    requests persisted there by other processes)."""
    explicit = ((config or {}).get("configurable") or {}).get("cancel_token")
    return RunCancel(thread_id_of(config),
                     explicit if isinstance(explicit, CancelToken) else None, store)


def current_token() -> RunCancel | None:
    """The cancellation state of the LangGraph run this code runs in (None outside one)."""
    from langgraph.config import get_config

    try:
        return token_for(get_config())
    except RuntimeError:
        return None


def is_cancelled(config: RunnableConfig | None, store: BaseStore | None = None) -> bool:
    """Whether this run was cancelled, here or (through ``store``) from another process."""
    return token_for(config, store).cancelled


def end_run(config: RunnableConfig | None, store: BaseStore | None = None) -> None:
    """Forget the requests this run honoured (called when a turn ends)."""
    thread_id = thread_id_of(config)
    if thread_id is None:
        return
    with _lock:
        _requests.pop(thread_id, None)
    if store is not None and store.get(CANCEL_NAMESPACE, thread_id) is not None:
        store.delete(CANCEL_NAMESPACE, thread_id)


def cancel(thread_id: str, *, store: BaseStore | None = None) -> None:
    """Cancel the run on ``thread_id`` (in progress, or starting within ``PENDING_TTL_S``).

    With ``store`` (``agent.store``, or the store of ``callgate.persistence``), the request
    is persisted too, so a run of the thread in another process stops as well."""
    thread_id = str(thread_id)
    now = time.time()
    with _lock:
        for stale in [t for t, at in _requests.items() if not _live(at, now)]:
            del _requests[stale]
        _requests[thread_id] = now
    if store is not None:
        store.put(CANCEL_NAMESPACE, thread_id, {"at": now}, index=False)


def pending_requests() -> list[str]:
    """Thread ids with a cancel request held in this process (for leak checks)."""
    now = time.time()
    with _lock:
        return [t for t, at in _requests.items() if _live(at, now)]


__all__ = ["CancelToken", "RunCancel", "cancel", "current_token", "end_run", "is_cancelled",
           "pending_requests", "thread_id_of", "token_for"]
