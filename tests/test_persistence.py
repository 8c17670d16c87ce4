"""callgate.persistence on SQLite: where the database is, which URLs open what, clear errors.
(PostgreSQL: tests/test_postgres.py.)"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from callgate.persistence import (
    PersistenceError,
    callgate_home,
    default_db_path,
    open_async_persistence,
    open_persistence,
    resolve_url,
)
from tests.concurrent_open import open_at_once

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CALLGATE_HOME", "~/cg")
    monkeypatch.delenv("CALLGATE_DB", raising=False)
    return tmp_path / "cg"


def test_home_expands_the_tilde(home: Path) -> None:
    assert callgate_home() == home and default_db_path() == home / "threads.sqlite"
    assert resolve_url() == str(home / "threads.sqlite")


def test_home_defaults_to_the_user_data_dir(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.delenv("CALLGATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert callgate_home() == tmp_path / "data" / "callgate"


def test_default_is_a_sqlite_file_in_the_home(home: Path) -> None:
    with open_persistence() as db:
        assert db.backend == "sqlite" and db.url == str(home / "threads.sqlite")
        assert type(db.checkpointer).__name__ == "SqliteSaver"
        assert type(db.store).__name__ == "SqliteStore"
        db.store.put(("n",), "k", {"v": 1})
    assert (home / "threads.sqlite").is_file()
    # Another process opens the same file and sees the item.
    read = ("from callgate.persistence import open_persistence\n"
            "with open_persistence() as db: print(db.store.get(('n',), 'k').value)")
    done = subprocess.run([sys.executable, "-c", read], capture_output=True, text=True,
                          cwd=REPO, check=True, timeout=60)
    assert done.stdout.strip() == "{'v': 1}"


def test_env_and_url_forms(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLGATE_DB", str(tmp_path / "env.sqlite"))
    with open_persistence() as db:
        assert db.url == str(tmp_path / "env.sqlite")
    with open_persistence(f"sqlite:///{tmp_path}/url.sqlite") as db:
        assert db.url == str(tmp_path / "url.sqlite")
    with open_persistence("~/tilde/t.sqlite") as db:
        assert db.url == str(tmp_path / "tilde" / "t.sqlite")
    with open_persistence(":memory:") as db:
        assert db.backend == "sqlite"


@pytest.mark.parametrize(("url", "message"), [
    ("mysql://u:pw@host/db", "unsupported database URL scheme 'mysql' in 'mysql://u:***@host/db'"),
    ("sqlite:///", "no file in database URL 'sqlite:///'"),
    ("/proc/no-such-dir/x.sqlite", "cannot create /proc/no-such-dir for the SQLite database"),
    # A libpq keyword/value string had become a SQLite file of that name; its password is
    # not repeated.
    ("host=127.0.0.1 dbname=cg user=u password=secret",
     "the database is a PostgreSQL keyword/value string (host=… dbname=…); give it as a URL"),
])
def test_unusable_urls_are_one_line_errors(url: str, message: str) -> None:
    with pytest.raises(PersistenceError) as caught, open_persistence(url):
        pass
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_errors_inside_the_block_are_not_rewritten(home: Path) -> None:
    import sqlite3

    with pytest.raises(sqlite3.OperationalError), open_persistence() as db:
        db.store.conn.execute("SELECT * FROM no_such_table")


def test_async_twin_on_sqlite(home: Path) -> None:
    async def roundtrip() -> object:
        async with open_async_persistence() as db:
            assert type(db.checkpointer).__name__ == "AsyncSqliteSaver"
            await db.store.aput(("a",), "k", {"v": 2})
            item = await db.store.aget(("a",), "k")
            return item.value if item else None

    assert asyncio.run(roundtrip()) == {"v": 2}



def test_a_result_is_read_back_in_async_code_from_an_async_store(home: Path) -> None:
    # get_result's sync read raises InvalidStateError on an async store's own loop.
    from langchain_core.messages import AIMessage

    from callgate import aget_result, build_agent
    from callgate.models.scripted import ScriptedChatModel, tool_call

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def run() -> object:
        async with open_async_persistence() as db:
            model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}),
                                              AIMessage("3 [R1]")])
            agent = build_agent(model, [add], checkpointer=db.checkpointer, store=db.store)
            thread = {"configurable": {"thread_id": "async"}}
            await agent.ainvoke({"messages": [("user", "1 + 2?")]}, thread)
            return await aget_result(agent, thread, "R1")

    assert asyncio.run(run()) == 3


def test_a_result_json_cannot_hold_is_stored_as_text(home: Path) -> None:
    # The calculator's "2^1000 * 2^1000" is an int past 64 bits, which the SQLite store's
    # JSON writer (orjson) refuses: found asking the bundled model, the full result was lost
    # with a traceback in the terminal. It is kept as its text, like an object JSON has no
    # form for; what JSON holds stays as it is.
    from callgate import get_result
    from callgate.graph.results import put_result

    class Odd:
        def __str__(self) -> str:
            return "odd"

    config = {"configurable": {"thread_id": "t1"}}
    with open_persistence() as db:
        put_result(db.store, "t1", "R1", "calculator", {"expression": "2^1000 * 2^1000"},
                   2 ** 2000)
        put_result(db.store, "t1", "R2", "tool", {}, {"big": -(2 ** 64), "odd": Odd(),
                                                     "small": 2 ** 63 - 1, "list": (1.5,),
                                                     (1, 2): "tuple key"})
        assert get_result(db.store, config, "R1") == str(2 ** 2000)
        assert get_result(db.store, config, "R2") == {
            "big": str(-(2 ** 64)), "odd": "odd", "small": 2 ** 63 - 1, "list": [1.5],
            "(1, 2)": "tuple key"}
        # Past Python's limit on writing an int as text (4300 digits): what it is.
        put_result(db.store, "t1", "R3", "tool", {}, 10 ** 5000)
        assert get_result(db.store, config, "R3") == "<an integer of 16610 bits>"



@pytest.mark.parametrize("mode", ["sync", "async"])
def test_processes_opening_a_new_file_at_once_all_open_it(tmp_path: Path, mode: str) -> None:
    # LangGraph's SQLite setup applies its migrations outside a transaction, and two
    # `callgate ask` at first use had failed with "duplicate column name".
    db = tmp_path / "threads.sqlite"
    results = open_at_once(str(db), mode, tmp_path)
    assert [code for code, _ in results] == [0] * len(results), results
    with open_persistence(str(db)) as p:
        assert len(p.store.search(("t",), limit=10)) == len(results)
