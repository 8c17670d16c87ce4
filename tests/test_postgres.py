"""Threads and results on a real PostgreSQL server, across real processes.

The server: ``$CALLGATE_TEST_POSTGRES`` (``.ci/run`` starts one), else a throwaway one started
here with ``initdb``/``pg_ctl``; when neither works the tests skip and say why — except under
CI (``CI=true``), where that is a failure. Each process opens the database with
``callgate.persistence.open_persistence`` and runs the graph with a ``ScriptedChatModel``
(fixed replies, no language model) over plain Python tools that log their side effects to a
file, so the log shows exactly what ran where.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from callgate.persistence import (
    PersistenceError,
    open_async_persistence,
    open_persistence,
)
from tests.concurrent_open import open_at_once
from tests.needs import unavailable
from tests.servers import PostgresUnavailable, free_port, postgres_server

REPO = Path(__file__).resolve().parents[1]
URL_ENV = "CALLGATE_TEST_POSTGRES"
# The per-call task loop and the result store land with issue 11 (the graph rewrite).

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    configured = os.environ.get(URL_ENV)
    if configured:
        yield configured
        return
    try:
        with postgres_server() as url:
            yield url
    except PostgresUnavailable as exc:
        unavailable(f"no PostgreSQL server: {URL_ENV} is unset and one could not be started "
                    f"({exc})")


TOOLS = '''
"""Plain Python tools that log each side effect to $CG_LOG/calls.log."""
import os
import time
from pathlib import Path

from callgate import ToolRegistry

LOG = Path(os.environ["CG_LOG"])


def _log(line: str) -> None:
    with (LOG / "calls.log").open("a") as f:
        f.write(line + "\\n")


def append_line(text: str) -> str:
    """Append a line of text to the log."""
    _log(text)
    return f"appended {text}"


def slow(seconds: float) -> str:
    """Wait, then log 'slow'. Only the first call waits the full time (it is killed)."""
    marker = LOG / "slow.started"
    first = not marker.exists()
    marker.touch()
    time.sleep(seconds if first else 0.05)
    _log("slow")
    return "slept"


def wipe(target: str) -> str:
    """Wipe a target (sensitive: needs approval)."""
    _log(f"wipe {target}")
    return f"wiped {target}"


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(append_line)
    reg.register(slow, timeout_s=60)
    reg.register(wipe, sensitive=True)
    return reg
'''

WORKER = '''
"""One process: open the database, run one invoke on a thread, print the outcome as JSON."""
import inspect
import json
import sys

from langchain_core.messages import AIMessage
from langgraph.types import Command

from callgate import build_agent
from callgate.models.scripted import ScriptedChatModel
from callgate.persistence import open_persistence
import cg_tools

job = json.loads(sys.argv[1])
script = [AIMessage(r["text"], tool_calls=[
              {"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in r["calls"]])
          if isinstance(r, dict) else r for r in job["script"]]
model = ScriptedChatModel(script=script)
config = {"configurable": {"thread_id": job["thread"]}}
with open_persistence(job["url"]) as db:
    extra = {"store": db.store} if "store" in inspect.signature(build_agent).parameters else {}
    agent = build_agent(model, cg_tools.registry(), checkpointer=db.checkpointer, **extra)
    if "question" in job:
        inputs = {"messages": [("user", job["question"])]}
    elif "resume" in job:
        inputs = Command(resume=job["resume"])
    else:
        inputs = None
    out = agent.invoke(inputs, config)
    state = agent.get_state(config)
print(json.dumps({
    "status": out.get("status"),
    "final_answer": out.get("final_answer"),
    "events": [{"id": e.get("id"), "tool": e["tool"], "ok": e.get("ok"), "args": e["args"]}
               for e in out.get("tool_events") or []],
    "interrupts": [i.value for i in out.get("__interrupt__") or []],
    "first_request": [str(m.content) for m in model.requests[0]["messages"]]
                     if model.requests else [],
    "next": list(state.next),
    "message_count": len(state.values.get("messages") or []),
}, default=str))
'''


@dataclass
class Workspace:
    """A folder with the tools module, the worker script and the side-effect log."""

    root: Path
    url: str
    thread: str

    @property
    def log(self) -> list[str]:
        file = self.root / "calls.log"
        return file.read_text().split("\n")[:-1] if file.exists() else []

    def command(self, **job: Any) -> list[str]:
        return [sys.executable, str(self.root / "worker.py"),
                json.dumps({"url": self.url, "thread": self.thread, **job})]

    def env(self) -> dict[str, str]:
        return {**os.environ, "CG_LOG": str(self.root),
                "PYTHONPATH": os.pathsep.join([str(self.root), str(REPO)])}

    def run(self, **job: Any) -> dict[str, Any]:
        """Run one worker process to the end and return what it printed."""
        done = subprocess.run(self.command(**job), env=self.env(), cwd=REPO,
                              capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def work(tmp_path: Path, postgres_url: str) -> Workspace:
    (tmp_path / "cg_tools.py").write_text(TOOLS)
    (tmp_path / "worker.py").write_text(WORKER)
    return Workspace(tmp_path, postgres_url, f"t-{uuid.uuid4().hex[:12]}")


def calls(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A scripted model reply that calls tools (ids c1, c2, … in order)."""
    return {"text": "", "calls": [[n, a, f"c{i}"] for i, (n, a) in enumerate(items, 1)]}


def asked(value: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (tool, args) an approval interrupt asks about, in either request format."""
    if "action_requests" in value:  # LangChain's HITL request
        return [(r["name"], r["args"]) for r in value["action_requests"]]
    return [(value["call"]["name"], value["call"]["args"])]  # callgate's older format


def test_open_persistence_on_postgres(postgres_url: str, monkeypatch) -> None:
    monkeypatch.setenv("CALLGATE_DB", postgres_url)
    with open_persistence() as db:  # $CALLGATE_DB selects the server
        assert db.backend == "postgres"
        assert type(db.checkpointer).__name__ == "PostgresSaver"
        assert type(db.store).__name__ == "PostgresStore"
        db.store.put(("probe",), "k", {"n": 1})
    with open_persistence(postgres_url) as db:  # setup() again is harmless; data is kept
        item = db.store.get(("probe",), "k")
        assert item is not None and item.value == {"n": 1}
        db.store.delete(("probe",), "k")


def test_unreachable_server_is_one_clear_error() -> None:
    url = f"postgresql://someone:secret@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(PersistenceError) as caught, open_persistence(url):
        pass
    message = str(caught.value)
    assert "\n" not in message and "secret" not in message
    assert message.startswith("cannot open the PostgreSQL server at postgresql://someone:***@")
    assert isinstance(caught.value, ValueError)


def test_thread_continues_in_a_second_process(work: Workspace) -> None:
    first = work.run(question="note one", script=[calls(("append_line", {"text": "one"})),
                                                  "Noted [R1]."])
    assert first["status"] == "done" and first["final_answer"].startswith("Noted")
    second = work.run(question="and now?", script=["Still one line."])
    assert second["status"] == "done"
    seen = "\n".join(second["first_request"])
    # The model in process 2 was shown turn 1, read back from PostgreSQL.
    assert "note one" in seen and "Noted" in seen and "and now?" in seen
    assert second["message_count"] > first["message_count"]
    assert work.log == ["one"]


def kill_during_slow_call(work: Workspace, step: dict[str, Any], logged: list[str]) -> None:
    """Start a worker on ``step`` and SIGKILL it once the slow call sleeps and ``logged``."""
    proc = subprocess.Popen(work.command(question="go", script=[step, "never used"]),
                            env=work.env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ((work.root / "slow.started").exists() and work.log == logged):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the step never started"
            time.sleep(0.05)
        time.sleep(0.5)  # let the checkpointer write what finished
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert work.log == logged


def test_resume_after_sigkill_completes_the_turn(work: Workspace) -> None:
    kill_during_slow_call(work, calls(("slow", {"seconds": 60})), [])
    out = work.run(script=["Slept [R1]."])  # invoke(None): continue where it stopped
    assert out["status"] == "done" and out["final_answer"].startswith("Slept")
    assert work.log == ["slow"]
    assert [(e["tool"], e["ok"]) for e in out["events"]] == [("slow", True)]


def test_resume_after_sigkill_runs_only_unfinished_calls(work: Workspace) -> None:
    """Process 1 is killed while the slow call sleeps, after the fast call finished; process 2
    resumes the thread: the fast call's side effect happened exactly once, the slow call ran."""
    step = calls(("append_line", {"text": "fast"}), ("slow", {"seconds": 60}))
    kill_during_slow_call(work, step, ["fast"])
    out = work.run(script=["Both done [R1] [R2]."])  # invoke(None): continue where it stopped
    assert out["status"] == "done", out
    assert work.log == ["fast", "slow"]
    assert [(e["tool"], e["ok"]) for e in out["events"]] == [("append_line", True),
                                                             ("slow", True)]


@pytest.mark.parametrize("answer", [
    pytest.param({"action": "approve"}, id="shorthand"),
    pytest.param({"decisions": [{"type": "approve"}]}, id="hitl"),
])
def test_approval_asked_in_one_process_answered_in_another(work: Workspace,
                                                           answer: dict[str, Any]) -> None:
    first = work.run(question="wipe x", script=[calls(("wipe", {"target": "x"}))])
    [request] = first["interrupts"]
    assert asked(request) == [("wipe", {"target": "x"})]
    assert first["next"] == ["approve"] and work.log == []  # nothing ran before the answer
    second = work.run(resume=answer, script=["Wiped x [R1]."])
    assert second["status"] == "done" and second["interrupts"] == []
    assert work.log == ["wipe x"]  # ran once, in process 2
    assert [(e["tool"], e["ok"]) for e in second["events"]] == [("wipe", True)]


def test_rejection_from_another_process(work: Workspace) -> None:
    work.run(question="wipe y", script=[calls(("wipe", {"target": "y"}))])
    out = work.run(resume={"action": "reject", "reason": "keep it"},
                   script=["I did not wipe y."])
    assert out["status"] == "done" and work.log == []
    assert "keep it" in "\n".join(out["first_request"])  # the model was told why


def test_store_written_in_one_process_read_in_another(work: Workspace) -> None:
    namespace, key = ("callgate-test", work.thread), "note"
    write = textwrap.dedent(f"""
        from callgate.persistence import open_persistence
        with open_persistence({work.url!r}) as db:
            db.store.put({namespace!r}, {key!r}, {{"text": "hello", "size": 5}})
    """)
    subprocess.run([sys.executable, "-c", write], check=True, cwd=REPO, timeout=60)
    with open_persistence(work.url) as db:
        item = db.store.get(namespace, key)
        assert item is not None and item.value == {"text": "hello", "size": 5}
        assert [i.key for i in db.store.search(namespace)] == [key]


def test_full_tool_results_land_in_the_store(work: Workspace) -> None:
    import callgate

    out = work.run(question="note two", script=[calls(("append_line", {"text": "two"})),
                                                "Done [R1]."])
    [event] = out["events"]
    config = {"configurable": {"thread_id": work.thread}}
    with open_persistence(work.url) as db:  # another process than the one that ran the tool
        assert callgate.get_result(db.store, config, event["id"]) == "appended two"


def test_a_result_json_cannot_hold_is_stored_on_postgres(work: Workspace) -> None:
    # PostgreSQL's store writes JSON with the json module: an int past 64 bits is kept as
    # it is, an object JSON has no form for as its text (SQLite's: tests/test_persistence.py).
    import callgate
    from callgate.graph.results import put_result

    class Odd:
        def __str__(self) -> str:
            return "odd"

    config = {"configurable": {"thread_id": work.thread}}
    with open_persistence(work.url) as db:
        put_result(db.store, work.thread, "R1", "calculator", {}, 2 ** 2000)
        put_result(db.store, work.thread, "R2", "tool", {}, {"odd": Odd(), "n": 1})
        assert callgate.get_result(db.store, config, "R1") == 2 ** 2000
        assert callgate.get_result(db.store, config, "R2") == {"odd": "odd", "n": 1}


async def test_async_persistence_on_postgres(postgres_url: str) -> None:
    async with open_async_persistence(postgres_url) as db:
        assert type(db.checkpointer).__name__ == "AsyncPostgresSaver"
        namespace = ("callgate-test", uuid.uuid4().hex)
        await db.store.aput(namespace, "k", {"v": [1, 2]})
        item = await db.store.aget(namespace, "k")
        assert item is not None and item.value == {"v": [1, 2]}
        await db.store.adelete(namespace, "k")


@pytest.fixture
def new_database(postgres_url: str) -> Iterator[str]:
    """A database of its own on the server, with no tables yet."""
    import psycopg

    name = f"callgate_new_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(postgres_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_processes_opening_a_new_database_at_once_all_open_it(new_database: str, mode: str,
                                                              tmp_path: Path) -> None:
    # LangGraph's saver and store apply their migrations outside a transaction; the setup
    # runs under an advisory lock, one process at a time.
    results = open_at_once(new_database, mode, tmp_path)
    assert [code for code, _ in results] == [0] * len(results), results
    with open_persistence(new_database) as db:
        assert db.backend == "postgres"
        assert len(db.store.search(("t",), limit=10)) == len(results)
