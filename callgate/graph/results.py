"""Full tool results, kept in LangGraph's store rather than in the checkpoint.

Each result is one store item under the namespace ``("callgate", "results", thread_id)``
with its result id (``R3``) as key and ``{"tool", "args", "data"}`` as value. Runs without a
thread id use the thread ``"-"``. Read one back with :func:`get_result`.
"""

from __future__ import annotations

import dataclasses
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
    """Keep a result; where the store cannot write it as JSON, :func:`storable`'s copy."""
    namespace, value = results_namespace(thread_id), {"tool": tool, "args": args, "data": data}
    try:
        # index=False: results are looked up by id, never searched by meaning.
        store.put(namespace, result_id, value, index=False)
    except (TypeError, ValueError):
        # SQLite's and PostgreSQL's stores write JSON with orjson, which refuses an int past
        # 64 bits (the calculator's 2^1000 * 2^1000) and objects it does not know.
        store.put(namespace, result_id, storable(value), index=False)


def last_result_number(store: BaseStore | None, thread_id: str | None) -> int:
    """The highest result number (``R7``: 7) the store holds for the thread, 0 for none.
    A turn's numbering goes on from it, so no run writes over a kept result: a run without
    a checkpointer starts from empty state (its first call was ``R1`` again, and the
    thread's earlier ``R1`` was lost), and so does a fork from an earlier checkpoint."""
    if store is None:
        return 0
    highest, offset, page = 0, 0, 200
    while True:
        items = store.search(results_namespace(thread_id), limit=page, offset=offset)
        highest = max([highest, *(int(item.key[1:]) for item in items
                                  if item.key[:1] == "R" and item.key[1:].isdigit())])
        if len(items) < page:
            return highest
        offset += page


def storable(value: Any) -> Any:
    """``value`` as JSON any store writes: keys as text, tuples and sets as lists, pydantic
    models and dataclasses as their fields, an int past 64 bits and any other object as
    their text. (So SQLite's store keeps 2^2000 as text, where PostgreSQL's, which writes
    JSON with the json module, keeps the int.)"""
    if value is None or isinstance(value, str | float | bool):
        return value
    if isinstance(value, int):
        if -2 ** 63 <= value < 2 ** 64:
            return value
        try:
            return str(value)
        except ValueError:  # past Python's limit on int-to-text conversion (4300 digits)
            return f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, dict):
        return {str(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [storable(item) for item in value]
    if hasattr(value, "model_dump"):
        return storable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return storable(dataclasses.asdict(value))
    return str(value)


def get_result(agent: Any, config: RunnableConfig | None, result_id: str) -> Any:
    """The full data of result ``result_id`` (``"R3"``) on the thread in ``config``.

    ``agent`` is the compiled graph from ``build_agent`` (or its store). Raises
    ``KeyError`` when the store has no such result. In async code with an async store
    (``AsyncSqliteStore``, ``AsyncPostgresStore``), :func:`aget_result`."""
    return _data(_store_of(agent).get(results_namespace(thread_of(config)), result_id),
                 result_id, config)


async def aget_result(agent: Any, config: RunnableConfig | None, result_id: str) -> Any:
    """:func:`get_result` for async code: an async store refuses sync calls on its loop."""
    item = await _store_of(agent).aget(results_namespace(thread_of(config)), result_id)
    return _data(item, result_id, config)


def _store_of(agent: Any) -> BaseStore:
    store = agent if isinstance(agent, BaseStore) else getattr(agent, "store", None)
    if store is None:
        raise ValueError("this agent has no store: compile it with one to keep full results")
    return store


def _data(item: Any, result_id: str, config: RunnableConfig | None) -> Any:
    if item is None:
        raise KeyError(f"no stored result {result_id!r} on thread {thread_of(config)!r}")
    return item.value["data"]
