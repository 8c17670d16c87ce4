"""Full tool results, kept in LangGraph's store rather than in the checkpoint.

Each result is one store item under the namespace ``("callgate", "results", thread_id)``
with its result id (``R3``) as key and ``{"tool", "args", "data"}`` as value. Runs without a
thread id use the thread ``"-"``. Read one back with :func:`get_result`.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

NO_THREAD = "-"


def results_namespace(thread_id: str | None) -> tuple[str, ...]:
    return ("callgate", "results", thread_id or NO_THREAD)


def thread_of(config: RunnableConfig | None) -> str | None:
    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(value) if value is not None else None


def put_result(store: BaseStore, thread_id: str | None, result_id: str, tool: str,
               args: dict[str, Any], data: Any) -> None:
    """Keep a result; what the store cannot write as JSON is kept as its text."""
    namespace, value = results_namespace(thread_id), {"tool": tool, "args": args, "data": data}
    try:
        # index=False: results are looked up by id, never searched by meaning.
        store.put(namespace, result_id, value, index=False)
    except TypeError:
        # SQLite's and PostgreSQL's stores write JSON with orjson, which refuses an int past
        # 64 bits (the calculator's 2^1000 * 2^1000) and objects it does not know.
        store.put(namespace, result_id, storable(value), index=False)


def storable(value: Any) -> Any:
    """``value`` as JSON any store writes: an int past 64 bits, and an object JSON has no
    form for, become their text."""
    def number(text: str) -> int | str:
        whole = int(text)
        return whole if -2 ** 63 <= whole < 2 ** 64 else text

    return json.loads(json.dumps(value, default=str), parse_int=number)


def get_result(agent: Any, config: RunnableConfig | None, result_id: str) -> Any:
    """The full data of result ``result_id`` (``"R3"``) on the thread in ``config``.

    ``agent`` is the compiled graph from ``build_agent`` (or its store). Raises
    ``KeyError`` when the store has no such result."""
    store = agent if isinstance(agent, BaseStore) else getattr(agent, "store", None)
    if store is None:
        raise ValueError("this agent has no store: compile it with one to keep full results")
    item = store.get(results_namespace(thread_of(config)), result_id)
    if item is None:
        raise KeyError(f"no stored result {result_id!r} on thread {thread_of(config)!r}")
    return item.value["data"]
