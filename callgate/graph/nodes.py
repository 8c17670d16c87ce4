"""Graph nodes with both a sync and an async implementation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

try:
    # LangGraph's own light node wrapper (``create_agent`` builds its nodes with it too):
    # unlike ``RunnableLambda`` it opens no extra callback run per call. It is internal, so
    # a LangGraph release that moves it gets the (slower, equivalent) public wrapper.
    from langgraph._internal._runnable import RunnableCallable
except ImportError:  # pragma: no cover - depends on the installed LangGraph
    RunnableCallable = None


def dual_node(func: Callable[..., Any], afunc: Callable[..., Awaitable[Any]],
              name: str) -> Runnable:
    """A node that runs ``func`` under ``invoke`` and ``afunc`` under ``ainvoke``."""
    if RunnableCallable is None:  # pragma: no cover
        return RunnableLambda(func, afunc=afunc, name=name)
    return RunnableCallable(func, afunc, name=name, trace=False)


def inline(func: Callable[..., Any], name: str | None = None) -> Runnable:
    """A quick sync node or edge function, run in place under ``ainvoke`` too.

    LangGraph would otherwise run a plain sync function in a worker thread under
    ``ainvoke``, and trace each edge function as a run of its own; these functions only
    compute over the state, so neither is worth its cost (``create_agent`` does the same).
    """
    if RunnableCallable is None:  # pragma: no cover
        return RunnableLambda(func, name=name)
    return RunnableCallable(func, name=name, trace=False)
