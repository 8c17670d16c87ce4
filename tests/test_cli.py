"""The ``callgate`` command line, run as a user would (a real subprocess).

Tests that do not need a language model use callgate's scripted chat model (it replays
fixed ReAct replies), named in a ``models.yaml`` in the test's working directory; the
real tools, graph, SQLite threads and approvals run as they do for a user.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.servers import free_port, json_reply_server, llama_cpp_server

# Each name a scripted model replaying these ReAct replies (``models.yaml`` entries).
SCRIPTS = {
    "calc": ['Thought: compute it.\nAction: calculator\nAction Input: {"expression": "17*23"}',
             "Final Answer: 17 * 23 = 391 [R1]"],
    "deleter": ['Action: delete_file\nAction Input: {"path": "a.txt"}',
                "Final Answer: I handled the file [R1]"],
    "badcalc": ['Action: calculator\nAction Input: {"expression": 17}',
                'Action: calculator\nAction Input: {"expression": 23}',
                "Final Answer: I could not compute it."],
    "inventor": ["Final Answer: It is booked for 12 nights.\n\nThat's all.\n\nThat's all."
                 "\n\nFin"],
    "notes": ["Final Answer: The car is red."],
    "flaky": ['Action: fetch\nAction Input: {"key": "a"}', "Final Answer: got it [R1]"],
    "waiter": ['Action: wait_a_bit\nAction Input: {"seconds": 60}', "Final Answer: waited [R1]"],
}
MODELS_YAML = yaml.safe_dump({"models": {
    name: {"provider": "custom", "class": "callgate.models.scripted:ScriptedChatModel",
           "tool_format": "react", "native_tools": False, "loop": True, "script": script}
    for name, script in SCRIPTS.items()}})

FILE_TOOLS = """\
from pathlib import Path
from typing import Any


def delete_file(path: str) -> str:
    Path(path).unlink()
    return f"deleted {path}"
"""

TOOLS_YML = """\
tools:
  - name: delete_file
    description: Delete a file.
    module: ./file_tools.py
    function: delete_file
    sensitive: true
    parameters_schema:
      type: object
      properties: {path: {type: string}}
      required: [path]
"""


def callgate(*args: str, home: Path, env: dict[str, str] | None = None, stdin: str = "",
             timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "callgate.cli", *args], capture_output=True,
                          text=True, env=_env(home, env), timeout=timeout, cwd=home,
                          input=stdin)


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "CALLGATE_HOME": str(home / "data"), "HOME": str(home),
           "CALLGATE_INDEX": str(home / "index.sqlite"), "PYTHONPATH": root, **(extra or {})}
    for name in ("CALLGATE_DB", "CALLGATE_MODEL", "CALLGATE_MODELS", "CALLGATE_TOOLS"):
        if name not in (extra or {}):
            env.pop(name, None)
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "models.yaml").write_text(MODELS_YAML)
    return tmp_path


def _thread_values(home: Path, thread_id: str) -> tuple[tuple[str, ...], dict]:
    """The thread as the CLI left it in its SQLite database (read in a subprocess so this
    test process does not import the graph)."""
    code = ("import json, sys\n"
            "from callgate import build_agent\n"
            "from callgate.persistence import open_persistence\n"
            "with open_persistence(None) as db:\n"
            "    agent = build_agent('calc', [], checkpointer=db.checkpointer)\n"
            "    state = agent.get_state({'configurable': {'thread_id': sys.argv[1]}})\n"
            "    humans = [m.content for m in state.values.get('messages', [])"
            " if m.type == 'human']\n"
            "    print(json.dumps({'next': list(state.next), 'status':"
            " state.values.get('status'), 'humans': humans}))\n")
    out = subprocess.run([sys.executable, "-c", code, thread_id], capture_output=True,
                         text=True, env=_env(home), cwd=home, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    return tuple(data["next"]), data


# -- the other commands ----------------------------------------------------------------------


def test_tools_lists_offered_and_missing(home: Path) -> None:
    result = callgate("tools", home=home)
    assert result.returncode == 0, result.stderr
    assert "calculator" in result.stdout and "system_stats" in result.stdout
    assert "Built-in tools not offered:" in result.stdout
    assert "rag_search" in result.stdout and "callgate index PATH" in result.stdout


def test_every_option_says_what_it_does() -> None:
    # `stats --json` and `--reset` had no help text.
    import argparse

    from callgate.cli import _parser

    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("ask", "chat", "tools", "stats", "index"):
        silent = [action.dest for action in commands.choices[name]._actions
                  if not action.help]
        assert not silent, (name, silent)


def test_index_then_rag_search_is_offered(home: Path) -> None:
    docs = home / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text("# Vacation\nEmployees get 25 days of paid vacation.\n")
    result = callgate("index", str(docs), home=home)
    assert result.returncode == 0 and "indexed 1 file(s)" in result.stdout
    tools = callgate("tools", home=home).stdout
    assert "rag_search" in tools.split("Built-in tools not offered:")[0]


def test_index_of_a_folder_without_documents_says_so_and_a_blank_scope_is_refused(
        home: Path) -> None:
    # A user walkthrough: an empty folder said only "indexed 0 file(s)", and --scope ""
    # was taken as a scope.
    (home / "empty").mkdir()
    result = callgate("index", "empty", home=home)
    assert result.returncode == 0 and "indexed 0 file(s)" in result.stdout
    assert result.stderr == "note: no .md, .txt or .pdf file under empty\n"
    blank = callgate("index", "empty", "--scope", " ", home=home)
    assert blank.returncode == 2 and "a scope is a thread id or 'global', not blank" in (
        blank.stderr)


def test_index_expands_tilde_instead_of_making_a_folder_named_tilde(home: Path) -> None:
    (home / "notes.md").write_text("# Notes\nThe launch is on Friday.\n")
    result = callgate("index", "notes.md", home=home, env={"CALLGATE_INDEX": "~/idx/i.sqlite"})
    assert result.returncode == 0, result.stderr
    assert (home / "idx" / "i.sqlite").is_file()  # HOME is the test folder
    assert not (home / "~").exists()


def test_a_damaged_index_is_named_with_a_hint(home: Path) -> None:
    # Garbage in index.sqlite read as "no documents indexed: run callgate index PATH", and
    # that command then said only "error: file is not a database".
    index = home / "index.sqlite"
    index.write_bytes(bytes(range(256)) * 16)
    (home / "notes.md").write_text("# Notes\nThe car is red.\n")
    said = (f"the document index {index} is damaged or not a callgate index (file is not a "
            "database)")
    hint = ("delete it and run `callgate index PATH` again, or name another index file with "
            "--index or $CALLGATE_INDEX")
    tools = callgate("tools", home=home)
    assert tools.returncode == 0, tools.stderr
    offered, missing = tools.stdout.split("Built-in tools not offered:")
    assert "rag_search" not in offered and f"rag_search         {said}: {hint}" in missing
    ask = callgate("ask", "What do my notes say about the car?", "--model", "notes", home=home)
    assert f"[not offered: rag_search: {said}: {hint}]" in ask.stderr
    indexed = callgate("index", "notes.md", home=home)
    assert indexed.returncode == 2 and indexed.stdout == ""
    assert indexed.stderr == f"error: {said} (hint: {hint})\n"


def test_another_programs_database_as_the_index_is_refused_untouched(home: Path) -> None:
    # $CALLGATE_INDEX pointed at the threads database read as "no documents indexed", and
    # `callgate index` added its tables to it. A real SQLite checkpointer's file here.
    threads = home / "threads.sqlite"
    code = ("import sqlite3, sys\n"
            "from langgraph.checkpoint.sqlite import SqliteSaver\n"
            "SqliteSaver(sqlite3.connect(sys.argv[1])).setup()\n")
    made = subprocess.run([sys.executable, "-c", code, str(threads)], capture_output=True,
                          text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    before = threads.read_bytes()
    (home / "notes.md").write_text("# Notes\nThe car is red.\n")
    env = {"CALLGATE_INDEX": str(threads)}
    said = (f"the document index {threads} is damaged or not a callgate index (it is another "
            "database, with the tables checkpoints, writes)")
    tools = callgate("tools", home=home, env=env)
    offered, missing = tools.stdout.split("Built-in tools not offered:")
    assert "rag_search" not in offered and said in missing
    indexed = callgate("index", "notes.md", home=home, env=env)
    assert indexed.returncode == 2 and indexed.stdout == ""
    assert indexed.stderr.startswith(f"error: {said} (hint: ")
    assert len(indexed.stderr.splitlines()) == 1
    assert threads.read_bytes() == before


def test_tools_yml_errors_name_file_and_line(home: Path) -> None:
    (home / "tools.yml").write_text("tools:\n  - name: x\n    description: y\n")
    result = callgate("tools", home=home)
    assert result.returncode != 0 and "tools.yml:2" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- ask: --json and --events ------------------------------------------------------------------


def test_ask_json_is_one_object_and_the_thread_is_kept(home: Path) -> None:
    result = callgate("ask", "What is 17*23?", "--model", "calc", "--json", home=home)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)  # the whole stdout is one JSON object
    assert out["status"] == "done"
    assert out["final_answer"].startswith("17 * 23 = 391")
    assert [e["tool"] for e in out["tool_events"]] == ["calculator"]
    assert out["tool_events"][0]["ok"] is True and "391" in out["tool_events"][0]["summary"]
    assert out["problems"] == []  # the graph reports every call that did not complete ok
    assert [c["id"] for c in out["citations"]] == ["R1"]
    assert out["thread_id"].startswith("ask-")
    assert "not_offered" not in out  # it asks for no built-in that is off
    # status lines go to stderr: the tool line is there, not on stdout
    assert "calculator" in result.stderr
    assert (home / "data" / "threads.sqlite").is_file()
    next_nodes, values = _thread_values(home, out["thread_id"])
    assert next_nodes == () and values["status"] == "done"


def test_ask_events_stream_json_lines(home: Path) -> None:
    result = callgate("ask", "What is 17*23?", "--model", "calc", "--events", home=home)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "status" and events[0]["phase"] == "loading_model"
    assert kinds.index("tool_start") < kinds.index("tool_end") < kinds.index("token")
    assert kinds[-1] == "result" and kinds.count("result") == 1
    start = events[kinds.index("tool_start")]
    end = events[kinds.index("tool_end")]
    assert start["tool"] == end["tool"] == "calculator" and end["ok"] is True
    assert start["args"] == {"expression": "17*23"} and end["duration_ms"] >= 0
    tokens = "".join(e["text"] for e in events if e["event"] == "token")
    assert "391" in tokens and "Action:" not in tokens
    assert events[-1]["status"] == "done" and events[-1]["final_answer"].startswith(tokens)


def test_plain_ask_prints_only_the_answer_on_stdout(home: Path) -> None:
    result = callgate("ask", "What is 17*23?", "--model", "calc", home=home)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "17 * 23 = 391 [R1]\n\nSources: [R1] calculator\n"
    assert "→ calculator" in result.stderr and "✓ calculator" in result.stderr


def test_a_refused_call_is_shown_like_a_failed_one(home: Path) -> None:
    # Scripted: the calculator called with a number for its expression, again after the
    # correction. Neither call starts, yet each has its line, with the reason.
    result = callgate("ask", "What is 17*23?", "--model", "badcalc", home=home)
    assert result.returncode == 1 and "[status: failed]" in result.stderr  # nothing ran
    assert "→ calculator" not in result.stderr
    assert ('✗ calculator {"expression": 17} invalid: invalid call to \'calculator\': '
            "argument 'expression': expected string, got integer 17 (sent back for a "
            "correction)\n") in result.stderr
    refused = ("✗ calculator [R1] invalid: invalid call to 'calculator': argument "
               "'expression': expected string, got integer 23\n")
    assert refused in result.stderr


def test_what_the_answer_checks_found_is_said(home: Path) -> None:
    # Scripted: an answer with a number nobody gave, a loop, and the start of another label
    # where decoding was stopped. The loop goes, the blank lines it leaves and the label's
    # start too; the number stays, flagged on stderr and in the JSON (not in the answer).
    question = "How many nights is the hotel booked for?"
    plain = callgate("ask", question, "--model", "inventor", home=home)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "It is booked for 12 nights.\n\nThat's all.\n"
    checks = "repetition cut; numbers in no result or question: 12"
    assert f"[answer checks: {checks}]" in plain.stderr  # printed as text, not rich markup
    out = json.loads(callgate("ask", question, "--model", "inventor", "--json",
                              home=home).stdout)
    assert out["answer_source"] == "model" and out["answer_checks"] == checks.split("; ")


def test_a_request_for_a_tool_not_offered_says_how_to_turn_it_on(home: Path) -> None:
    # Scripted: the model, offered no rag_search (nothing indexed), answers from nothing.
    # The user is told which built-in the request asked for and how to turn it on.
    question = "What do my notes say about the car?"
    plain = callgate("ask", question, "--model", "notes", home=home)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "The car is red.\n"
    line = next(x for x in plain.stderr.splitlines() if x.startswith("[not offered:"))
    assert line.startswith("[not offered: rag_search: no documents indexed: run `callgate "
                           "index PATH` (index: ") and line.endswith("index.sqlite)]")
    out = json.loads(callgate("ask", question, "--model", "notes", "--json", home=home).stdout)
    assert [why.split(":")[0] for why in out["not_offered"]] == ["rag_search"]
    # with its tool on, no such line (nor for a request that asks for no built-in: the
    # --json test above)
    (home / "notes.md").write_text("# Car\nThe car is blue and parked at home.\n")
    assert callgate("index", "notes.md", home=home).returncode == 0
    indexed = callgate("ask", question, "--model", "notes", home=home)
    assert "[not offered:" not in indexed.stderr


# -- chat ----------------------------------------------------------------------------------------


def test_chat_with_piped_input_and_resumed_thread(home: Path) -> None:
    first = callgate("chat", "--model", "calc", "--json", "--thread", "t-1", home=home,
                     stdin="What is 17*23?\nAnd again?\n")
    assert first.returncode == 0, first.stderr
    answers = [json.loads(line) for line in first.stdout.splitlines()]
    assert [a["status"] for a in answers] == ["done", "done"]
    assert {a["thread_id"] for a in answers} == {"t-1"}
    assert "resume it with --thread t-1" in first.stderr

    again = callgate("chat", "--model", "calc", "--thread", "t-1", home=home,
                     stdin="Once more?\n")
    assert again.returncode == 0, again.stderr
    assert "391" in again.stdout
    next_nodes, values = _thread_values(home, "t-1")
    assert next_nodes == ()
    assert values["humans"] == ["What is 17*23?", "And again?", "Once more?"]



@pytest.mark.parametrize("word", ["exit", "  QUIT "])
def test_chat_ends_at_exit_or_quit(home: Path, word: str) -> None:
    # "exit" and "quit" were sent to the model as questions.
    result = callgate("chat", "--model", "calc", "--json", "--thread", "t-q", home=home,
                      stdin=f"What is 17*23?\n{word}\nAnd again?\n")
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["status"] for line in result.stdout.splitlines()] == ["done"]
    assert _thread_values(home, "t-q")[1]["humans"] == ["What is 17*23?"]


RAISING_MODEL = """\
from langchain_core.messages import HumanMessage

from callgate.models.scripted import ScriptedChatModel


class Raising(ScriptedChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        said = [m.text for m in messages if isinstance(m, HumanMessage)]
        if said and "boom" in said[-1]:
            raise RuntimeError("model exploded")
        return super()._generate(messages, stop, run_manager, **kwargs)
"""


def test_a_model_that_raises_is_one_line_and_its_thread_goes_on(home: Path) -> None:
    # The model's own exception was a traceback; and the thread was wedged: --thread first
    # finished the failed turn, which failed again, so no new question was ever asked.
    (home / "raising_model.py").write_text(RAISING_MODEL)
    models = yaml.safe_load(MODELS_YAML)
    models["models"]["raising"] = {**models["models"]["calc"], "class": "raising_model:Raising"}
    (home / "models.yaml").write_text(yaml.safe_dump(models))
    failed = callgate("ask", "boom", "--model", "raising", "--thread", "w", "--events",
                      home=home)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert failed.stderr.strip().splitlines() == [
        "error: the run failed: RuntimeError: model exploded (hint: the thread is saved: "
        "--thread w goes on from it; --debug shows the traceback)"]
    last = json.loads(failed.stdout.splitlines()[-1])
    assert last["event"] == "error" and "model exploded" in last["message"]
    again = callgate("ask", "What is 17*23?", "--model", "raising", "--thread", "w",
                     "--json", home=home)
    assert again.returncode == 0, again.stderr
    assert "that turn failed again" in again.stderr
    assert json.loads(again.stdout)["status"] == "done"
    assert _thread_values(home, "w")[1]["humans"] == ["boom", "What is 17*23?"]



def test_chat_on_a_thread_whose_turn_fails_again_goes_on(home: Path) -> None:
    # chat finished the failed turn first, which failed again, and the chat ended there,
    # before a message could be typed: every chat on the thread, however often tried.
    (home / "raising_model.py").write_text(RAISING_MODEL)
    models = yaml.safe_load(MODELS_YAML)
    models["models"]["raising"] = {**models["models"]["calc"], "class": "raising_model:Raising"}
    (home / "models.yaml").write_text(yaml.safe_dump(models))
    assert callgate("ask", "boom", "--model", "raising", "--thread", "wc",
                    home=home).returncode == 2
    chat = callgate("chat", "--model", "raising", "--thread", "wc", "--json", home=home,
                    stdin="What is 17*23?\n")
    assert chat.returncode == 0, chat.stderr
    assert "that turn failed again" in chat.stderr and "Traceback" not in chat.stderr
    assert [json.loads(line)["status"] for line in chat.stdout.splitlines()] == ["done"]
    assert _thread_values(home, "wc")[1]["humans"] == ["boom", "What is 17*23?"]


def _shouter(home: Path, module: str) -> tuple[str, ...]:
    """A tool `shout` made of ``module``'s source, and a scripted model `shouter` that
    calls it once and answers: the arguments of an ``ask`` that runs them."""
    (home / "shout.py").write_text(module)
    (home / "tools.yml").write_text(
        "tools:\n  - name: shout\n    description: Shout.\n    module: ./shout.py\n"
        "    function: shout\n    parameters_schema:\n      type: object\n"
        "      properties: {text: {type: string}}\n      required: [text]\n")
    models = yaml.safe_load(MODELS_YAML)
    models["models"]["shouter"] = {**models["models"]["calc"], "script": [
        'Action: shout\nAction Input: {"text": "hi"}', "Final Answer: HI [R1]"]}
    (home / "models.yaml").write_text(yaml.safe_dump(models))
    return ("ask", "Shout hi", "--model", "shouter", "--tools", "tools.yml", "--no-builtins")


def test_what_a_tool_prints_stays_out_of_stdout(home: Path) -> None:
    # A tool's debug print went to stdout, before the JSON: --json could not be parsed,
    # --events had a line that is no event, and `ask … > answer.txt` kept the print.
    common = _shouter(home, "def shout(text: str) -> str:\n"
                            "    print('debug: shouting', text)\n    return text.upper()\n")
    result = callgate(*common, "--json", home=home)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final_answer"].startswith("HI [R1]")
    assert "debug: shouting hi" in result.stderr
    events = callgate(*common, "--events", home=home)
    assert [json.loads(line)["event"] for line in events.stdout.splitlines()][-1] == "result"
    plain = callgate(*common, home=home)
    assert plain.stdout == "HI [R1]\n\nSources: [R1] shout\n"


def test_a_tools_printed_line_reaches_stderr_whole() -> None:
    # print('debug: shouting', text) writes its pieces one by one; the status line the CLI
    # wrote meanwhile landed inside the tool's line ('debug: shouting  → shout … hi').
    import threading

    from callgate.cli import _OwnStdout

    class Writes:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def write(self, text: str) -> int:
            self.calls.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    out, err = Writes(), Writes()
    kept = _OwnStdout(out, err)

    def tool() -> None:
        print("debug: shouting", "hi", file=kept)  # type: ignore[arg-type]
        kept.write("no newline yet")

    thread = threading.Thread(target=tool)
    thread.start()
    thread.join()
    kept.write("the CLI's own\n")
    kept.flush()  # as after every --events line: the main thread's flush keeps their lines
    assert err.calls == ["debug: shouting hi\n"] and out.calls == ["the CLI's own\n"]
    kept.release()  # a turn's or session's end ends what a thread left unfinished
    assert err.calls[-1] == "no newline yet\n"
    # Two threads alive at once (a finished thread's id can be a new thread's): each half
    # line ends on its own, not joined to the other's.
    written = threading.Barrier(3)

    def half(text: str) -> None:
        kept.write(text)
        written.wait()

    halves = [threading.Thread(target=half, args=(t,)) for t in ("one half", "another")]
    for t in halves:
        t.start()
    written.wait()
    kept.release()
    for t in halves:
        t.join()
    assert sorted(err.calls[-2:]) == ["another\n", "one half\n"]


def test_a_tools_unfinished_line_ends_with_its_turn(home: Path) -> None:
    # print('loud', end='') was held until its line ended: the chat's next turn went on
    # from it, or the session's end wrote the turns' halves joined ("loudloud").
    _shouter(home, "def shout(text: str) -> str:\n"
                   "    print('loud', end='')\n    return text.upper()\n")
    chat = callgate("chat", "--model", "shouter", "--tools", "tools.yml", "--no-builtins",
                    "--json", home=home, stdin="Shout hi\nShout hi\n")
    assert chat.returncode == 0, chat.stderr
    assert [json.loads(line)["status"] for line in chat.stdout.splitlines()] == ["done"] * 2
    assert "loudloud" not in chat.stderr and chat.stderr.count("loud\n") == 2, chat.stderr


def test_a_closed_stdout_is_one_line(home: Path) -> None:
    # `callgate ask … >&-`: sys.stdout is None, and the session's first flush was a traceback.
    result = subprocess.run([sys.executable, "-m", "callgate.cli", "ask", "What is 17*23?",
                             "--model", "calc"], cwd=home, env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            timeout=120, preexec_fn=lambda: os.close(1))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: standard output is closed")


def test_a_thread_keeps_its_mode_until_mode_is_given(home: Path) -> None:
    # --mode defaulted to agent, so every run without it took a chat thread back to tools.
    def tools_run(*extra: str) -> list[dict]:
        result = callgate("ask", "What is 17*23?", "--model", "calc", "--json", "--thread",
                          "m", *extra, home=home)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["tool_events"]

    assert tools_run("--mode", "chat") == []
    assert tools_run() == []  # still chat
    assert [e["tool"] for e in tools_run("--mode", "agent")] == ["calculator"]


def test_a_retried_call_is_one_line(home: Path) -> None:
    # Each attempt of a call retried after a transient error printed its own "→ fetch".
    (home / "flaky_tools.py").write_text(
        "from pathlib import Path\n\n\ndef fetch(key: str) -> str:\n"
        "    tries = Path('tries.txt')\n"
        "    tries.write_text(tries.read_text() + 'x' if tries.exists() else 'x')\n"
        "    if len(tries.read_text()) < 3:\n"
        "        raise ConnectionError('connection reset')\n"
        "    return 'value'\n")
    (home / "tools.yml").write_text(
        "tools:\n  - name: fetch\n    description: Fetch a key.\n"
        "    module: ./flaky_tools.py\n    function: fetch\n    parameters_schema:\n"
        "      type: object\n      properties: {key: {type: string}}\n"
        "      required: [key]\n")
    result = callgate("ask", "Fetch a", "--model", "flaky", "--no-builtins", home=home)
    assert result.returncode == 0, result.stderr
    assert (home / "tries.txt").read_text() == "xxx"
    assert result.stderr.count("→ fetch") == 1, result.stderr
    assert "✓ fetch [R1]" in result.stderr and "(3 attempts)" in result.stderr


# -- approvals -------------------------------------------------------------------------------


def _approval_setup(home: Path) -> None:
    (home / "file_tools.py").write_text(FILE_TOOLS)
    (home / "tools.yml").write_text(TOOLS_YML)
    (home / "a.txt").write_text("a")
    (home / "b.txt").write_text("b")


def test_approval_answered_on_stdin_edit(home: Path) -> None:
    _approval_setup(home)
    result = callgate("ask", "Delete a.txt", "--model", "deleter", "--no-builtins", "--json",
                      home=home, stdin='e {"path": "b.txt"}\n')
    assert result.returncode == 0, result.stderr
    assert "approval needed" in result.stderr and "delete_file" in result.stderr
    out = json.loads(result.stdout)
    assert out["tool_events"][0]["args"] == {"path": "b.txt"}
    assert (home / "a.txt").exists() and not (home / "b.txt").exists()


def test_the_approval_prompt_stays_out_of_redirected_stdout(home: Path) -> None:
    # `callgate ask "…" > answer.txt` at a terminal: input() wrote the approval prompt to
    # stdout, into the answer's file, and the person at the terminal never saw it.
    import pty

    _approval_setup(home)
    terminal, stdin = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "callgate.cli", "ask", "Delete a.txt", "--model",
             "deleter", "--no-builtins"], stdin=stdin, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=_env(home), cwd=home)
        os.close(stdin)
        os.write(terminal, b"n not today\n")  # the terminal keeps the line until it is read
        out, err = proc.communicate(timeout=300)
    finally:
        os.close(terminal)
    assert proc.returncode == 0, err
    assert "approve?" not in out and "approve? [y]es / [n]o" in err
    assert out.startswith("(Not from a tool: the call to delete_file was not approved")
    assert (home / "a.txt").exists()


@pytest.mark.parametrize(("answer", "error"), [
    ("n not today", "rejected by the user: not today"),
    # A bare n read "rejected by the user: rejected by the user".
    ("n", "rejected by the user")])
def test_approval_rejected_on_stdin_runs_nothing(home: Path, answer: str, error: str) -> None:
    _approval_setup(home)
    result = callgate("ask", "Delete a.txt", "--model", "deleter", "--no-builtins", "--json",
                      home=home, stdin=f"{answer}\n")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["tool_events"][0]["outcome"] == "denied"
    assert out["tool_events"][0]["error"] == error
    assert [p["outcome"] for p in out["problems"]] == ["denied"]
    assert (home / "a.txt").exists() and (home / "b.txt").exists()


def test_a_piped_edit_that_is_not_json_says_it_rejects(home: Path) -> None:
    # It said "not JSON (…): answer again", and rejected the call: stdin has one answer
    # line per call.
    _approval_setup(home)
    result = callgate("ask", "Delete a.txt", "--model", "deleter", "--no-builtins", "--json",
                      home=home, stdin="e {bad json\n")
    assert result.returncode == 0, result.stderr
    assert "answer again" not in result.stderr
    assert ("not JSON (Expecting property name enclosed in double quotes) — rejected (one "
            "answer line per call on stdin)") in result.stderr
    assert json.loads(result.stdout)["tool_events"][0]["outcome"] == "denied"
    assert (home / "a.txt").exists()


def test_yes_approves_without_asking(home: Path) -> None:
    _approval_setup(home)
    result = callgate("ask", "Delete a.txt", "--model", "deleter", "--no-builtins", "--yes",
                      "--json", home=home)
    assert result.returncode == 0, result.stderr
    assert "approve?" not in result.stderr
    assert not (home / "a.txt").exists()


# -- user errors: one line, a hint, no traceback ---------------------------------------------


def _user_errors(home: Path) -> dict[str, list[str]]:
    (home / "broken.yml").write_text("tools: [\n")
    dead = f"openai:some-model@http://127.0.0.1:{free_port()}/v1"
    return {
        "unknown model spec": ["--model", "nosuch"],
        "missing GGUF file": ["--model", "gguf:/nonexistent/model.gguf"],
        "bad tools.yml": ["--model", "calc", "--tools", "broken.yml"],
        "bad --db URL": ["--model", "calc", "--db", "mysql://db/x"],
        "server down": ["--model", dead],
        "unsupported tool_choice": ["--model", "calc", "--tool-choice", "required"],
        # The scripted model writes text only, as the bundled one does: this was a bare
        # NotImplementedError from bind_tools.
        "native on a text-only model": ["--model", "calc", "--tool-format", "native"],
    }


@pytest.mark.parametrize("case", ["unknown model spec", "missing GGUF file", "bad tools.yml",
                                  "bad --db URL", "server down", "unsupported tool_choice",
                                  "native on a text-only model"])
def test_user_errors_are_one_line_with_a_hint(home: Path, case: str) -> None:
    args = _user_errors(home)[case]
    result = callgate("ask", "hello", *args, home=home, timeout=120)
    assert result.returncode not in (0, 130), result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "(hint: " in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""


def _more_user_errors(home: Path) -> dict[str, list[str]]:
    (home / "folder").mkdir()
    (home / "damaged.sqlite").write_text("not a database")
    (home / "fake.pdf").write_text("%PDF-junk")
    (home / "report.json").write_text("not JSON")
    (home / "photo.bin").write_bytes(bytes(range(256)) * 8)  # indexed as latin-1 "text"
    # The MCP client printed pydantic's tracebacks of the lines it wrote, first.
    (home / "notmcp.yml").write_text(f"mcp_servers:\n  fake:\n    command: {sys.executable}\n"
                                     "    args: ['-c', 'print(\"usage: x\")']\n")
    (home / "tools.json").write_text('{"tools": [')
    (home / "model.gguf").write_text("<!DOCTYPE html>")  # a download page saved as the model
    return {
        "stats --db a folder": ["stats", "--db", "folder"],
        "stats --db a damaged file": ["stats", "--db", "damaged.sqlite"],
        "stats --db a missing file": ["stats", "--db", "nowhere/stats.sqlite"],
        "index an unreadable PDF": ["index", "fake.pdf"],
        "index into a folder": ["index", "fake.pdf", "--index", "folder"],
        "index a binary file": ["index", "photo.bin"],
        "an MCP command that is no MCP server": ["tools", "--tools", "notmcp.yml"],
        "a tools file of broken JSON": ["tools", "--tools", "tools.json"],
        "a GGUF model that is a folder": ["ask", "hello", "--model", "gguf:folder"],
        "a GGUF model that is no GGUF file": ["ask", "hello", "--model", "gguf:model.gguf"],
        "eval bfcl --report a folder": ["eval", "bfcl", "--limit", "1", "--report", "folder"],
        "eval table of a file that is no report": ["eval", "table", "report.json"],
        "ask a blank question": ["ask", "   "],
        "anthropic without a key": ["ask", "hello", "--model", "anthropic:claude-test"],
        "a tool choice naming no tool": ["ask", "hello", "--model",
                                         f"openai:m@http://127.0.0.1:{free_port()}/v1",
                                         "--tool-choice", "nosuch"],
        "an Ollama server not running": ["ask", "hello", "--model",
                                         f"ollama:m@http://me:secret@127.0.0.1:{free_port()}"],
    }


@pytest.mark.parametrize("case", ["stats --db a folder", "stats --db a damaged file",
                                  "stats --db a missing file",
                                  "index an unreadable PDF", "index into a folder",
                                  "index a binary file",
                                  "an MCP command that is no MCP server",
                                  "a tools file of broken JSON",
                                  "a GGUF model that is a folder",
                                  "a GGUF model that is no GGUF file",
                                  "eval bfcl --report a folder",
                                  "eval table of a file that is no report",
                                  "ask a blank question", "anthropic without a key",
                                  "a tool choice naming no tool",
                                  "an Ollama server not running"])
def test_more_user_errors_are_one_line_with_a_hint(home: Path, case: str) -> None:
    # Each was a traceback (or a late, misleading error: eval bfcl wrote its report only
    # after the whole run; anthropic failed at the first request, as "cannot reach").
    env = _env(home)
    env.pop("ANTHROPIC_API_KEY", None)
    result = subprocess.run([sys.executable, "-m", "callgate.cli", *_more_user_errors(home)[case]],
                            capture_output=True, text=True, env=env, timeout=120, cwd=home)
    assert result.returncode == 2 and result.stdout == "", result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: ") and "(hint: " in lines[0]
    if case == "anthropic without a key":  # said when the model is built, not "cannot reach"
        assert "set ANTHROPIC_API_KEY" in lines[0]
    if case == "index an unreadable PDF":  # pypdf's own warning, in the line
        assert "(EOF marker not found)" in lines[0]
    if case == "stats --db a missing file":  # read as "no usage", the folder created
        assert "no statistics file at" in lines[0] and not (home / "nowhere").exists()
    if case == "a tools file of broken JSON":  # was "invalid YAML"
        assert "tools.json:1: invalid JSON" in lines[0]
    if case == "a GGUF model that is a folder":  # was "not found"
        assert "is a folder (hint: check the path)" in lines[0]
    if case == "a GGUF model that is no GGUF file":  # was llama.cpp's "Failed to load model"
        assert "model.gguf is not a GGUF model file: it starts with b'<!DO'" in lines[0]
    if case == "an MCP command that is no MCP server":
        assert "'usage: x': is its command an MCP server?" in lines[0]
    if case == "an Ollama server not running":  # where it looked, as for OpenAI's servers
        assert "cannot reach the model server at http://127.0.0.1:" in lines[0]
        assert "secret" not in lines[0]  # not the password the URL carries
    if case == "a tool choice naming no tool":  # said before any request, with the tools
        assert "'nosuch' is no tool" in lines[0] and "calculator" in lines[0]


def test_a_damaged_statistics_file_is_one_line_for_ask(home: Path) -> None:
    (home / "data").mkdir()
    (home / "data" / "stats.sqlite").write_text("not a database")
    result = callgate("ask", "hello", "--model", "notes", home=home)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "usage statistics are a SQLite file" in result.stderr


@pytest.mark.parametrize("unbuffered", ["1", ""])
@pytest.mark.parametrize(("argv", "read"), [
    (["eval", "table", "BFCL"], 0), (["tools"], 0),
    # The first line (the CLI's status event) read: the next is written during the run.
    (["ask", "What is 17*23?", "--model", "calc", "--events"], 1),
], ids=["eval table", "tools", "ask --events"])
def test_a_closed_stdout_ends_quietly(home: Path, argv: list[str], read: int,
                                      unbuffered: str) -> None:
    # `callgate eval table reports/bfcl-full.json | head -2` said "error: cannot read BFCL
    # report …: [Errno 32] Broken pipe"; `ask --events | head -1` called it a failed run.
    # The reader closes its end early, as `| head` does.
    report = Path(__file__).resolve().parents[1] / "reports" / "bfcl-full.json"
    argv = [str(report) if a == "BFCL" else a for a in argv]
    process = subprocess.Popen([sys.executable, "-m", "callgate.cli", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env(home, {"PYTHONUNBUFFERED": unbuffered}), cwd=home)
    assert process.stdout is not None
    for _ in range(read):
        assert process.stdout.readline()
    process.stdout.close()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 141 and err == "", err


@pytest.mark.parametrize(("argv", "blocked", "line"), [
    (["index", "doc.pdf"], ["pypdf"],
     'error: reading a PDF needs pypdf (hint: install the pdf extra: pip install -e '
     '"{checkout}[pdf]")'),
    # With psycopg installed but not the savers, the open raised ModuleNotFoundError.
    (["ask", "hello", "--model", "notes", "--db", "postgresql://me@127.0.0.1:9/x"],
     ["langgraph.checkpoint.postgres"],
     "error: a PostgreSQL database needs langgraph-checkpoint-postgres and psycopg (hint: "
     'install the postgres extra: pip install -e "{checkout}[postgres]")'),
    (["ask", "hello", "--model", "notes", "--db", "postgresql://me@127.0.0.1:9/x"],
     ["psycopg", "psycopg.conninfo"], None),
], ids=["pdf", "postgres savers", "psycopg"])
def test_a_missing_extra_is_one_line_naming_it(home: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str],
                                               argv: list[str], blocked: list[str],
                                               line: str | None) -> None:
    # Each was a traceback: RuntimeError from the PDF reader, ModuleNotFoundError from the
    # PostgreSQL open. In this process, with the package's import blocked.
    from callgate.cli import main

    (home / "doc.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    monkeypatch.chdir(home)
    for key, value in _env(home).items():
        monkeypatch.setenv(key, value)
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    # The hint names the checkout, not ".": the working folder is another.
    checkout = Path(__file__).resolve().parents[1]
    if line is None:
        assert err.startswith("error: a PostgreSQL database needs")
        assert f'"{checkout}[postgres]"' in err
    else:
        assert err.strip() == line.format(checkout=checkout)


def test_the_extras_hint_installs_from_where_it_is_run(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    # It said `pip install -e ".[pdf]"` in any folder: run in a user's own project, that
    # installs their project, not callgate's extra.
    from callgate.extras import install_command

    checkout = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(checkout)
    assert install_command("pdf") == 'pip install -e ".[pdf]"'
    monkeypatch.chdir(tmp_path)
    assert install_command("pdf") == f'pip install -e "{checkout}[pdf]"'


def test_a_question_that_is_not_utf8_is_answered(home: Path) -> None:
    # The byte 0xff reaches Python as a lone surrogate, which the tokenizer refused with a
    # traceback; it is now U+FFFD in the question.
    result = callgate("ask", "What colour is the car \udcff?", "--model", "notes", "--json",
                      home=home)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["final_answer"].startswith("The car is red")
    assert _thread_values(home, out["thread_id"])[1]["humans"] == [
        "What colour is the car \ufffd?"]


def test_a_models_yaml_that_is_not_yaml_is_one_line(home: Path) -> None:
    # It was a yaml.parser.ParserError traceback, for any --model.
    (home / "models.yaml").write_text("models: [1, 2\n")
    result = callgate("ask", "hello", "--model", "bundled", home=home)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"error: {home / 'models.yaml'}:") and "invalid YAML" in lines[0]


def test_a_models_yaml_typo_is_one_line_naming_the_key(home: Path) -> None:
    # `temprature: 0.2` was ignored without a word.
    (home / "models.yaml").write_text(
        "models:\n  calc:\n    provider: custom\n"
        "    class: callgate.models.scripted:ScriptedChatModel\n"
        "    script: ['Final Answer: hi']\n    temprature: 0.2\n")
    result = callgate("ask", "hello", "--model", "calc", home=home)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"error: {home / 'models.yaml'}: model 'calc': unknown key "
                               "'temprature': neither a setting")


@pytest.mark.parametrize(("target", "said"), [
    # A misspelt class name was an AttributeError traceback.
    ("callgate.models.scripted:ScriptedChatModle",
     "module 'callgate.models.scripted' has no 'ScriptedChatModle'"),
    ("callgate.models.scriptd:ScriptedChatModel", "no module named 'callgate.models.scriptd'"),
])
def test_a_custom_models_missing_class_is_one_line_naming_the_entry(
        home: Path, target: str, said: str) -> None:
    (home / "models.yaml").write_text(
        f"models:\n  mine: {{provider: custom, class: '{target}'}}\n")
    result = callgate("ask", "hello", "--model", "mine", home=home)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"error: {home / 'models.yaml'}: model 'mine': class "
                               f"'{target}': {said}")


@pytest.mark.parametrize(("steps", "said"), [
    ("0", "0 is below 1"), ("-3", "-3 is below 1"),  # -3 was "below 0"
    ("two", "'two' is not a whole number")])
def test_max_steps_below_one_is_a_usage_error(home: Path, steps: str, said: str) -> None:
    # --max-steps 0 had answered with the loop's own "Do not call any tools."
    result = callgate("ask", "hello", "--model", "calc", "--max-steps", steps, home=home)
    assert result.returncode == 2 and result.stdout == ""
    assert f"argument --max-steps: {said}" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("args", "usage"), [
    (["ask", "hello", "--bogus"], "callgate ask"),
    (["eval", "bfcl", "--bogus"], "callgate eval bfcl"),
    (["eval", "answers", "--max-steps", "0"], "callgate eval answers"),
    (["eval", "bfcl", "--max-steps", "0"], "callgate eval bfcl"),
    (["--bogus", "ask", "hello"], "callgate"),  # before the subcommand: the top level's
])
def test_a_subcommands_mistake_gets_its_usage(home: Path, args: list[str], usage: str) -> None:
    # An unknown option of `ask` was shown with the top-level usage.
    result = callgate(*args, home=home)
    assert result.returncode == 2 and result.stdout == ""
    assert f"\n{usage}: error: " in result.stderr and result.stderr.startswith(f"usage: {usage} ")


def test_json_output_also_says_the_answer_checks_on_stderr(home: Path) -> None:
    result = callgate("ask", "Book it", "--model", "inventor", "--no-builtins", "--json",
                      home=home)
    assert result.returncode == 0, result.stderr
    checks = json.loads(result.stdout)["answer_checks"]
    assert checks and f"[answer checks: {'; '.join(checks)}]" in result.stderr


def test_finishing_a_thread_that_is_not_saved_is_one_line(home: Path) -> None:
    # `callgate ask --thread nosuch` printed an empty answer and "[status: None]".
    result = callgate("ask", "--thread", "nosuch", "--model", "calc", home=home)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        "error: no thread 'nosuch' is saved in this database (hint: callgate ask "
        "\"QUESTION\" --thread nosuch starts it; --db names another database)")
    # Said before the model loads: a model that cannot load is not what is wrong here.
    missing = callgate("ask", "--thread", "nosuch", "--model", "gguf:/no/such.gguf", home=home)
    assert missing.stderr == result.stderr and missing.returncode == 2
    # A saved thread, its turn finished: its answer again.
    first = callgate("ask", "What is 17*23?", "--thread", "t1", "--model", "calc", home=home)
    again = callgate("ask", "--thread", "t1", "--model", "calc", home=home)
    assert first.returncode == again.returncode == 0, again.stderr
    assert again.stdout == first.stdout and "391" in again.stdout


def test_openai_without_a_key_is_one_line(home: Path) -> None:
    # `callgate ask --model openai:gpt-4o` with no OPENAI_API_KEY: the client raised
    # "Missing credentials" while the model was built, and the CLI printed a traceback.
    env = _env(home)
    env.pop("OPENAI_API_KEY", None)
    result = subprocess.run([sys.executable, "-m", "callgate.cli", "ask", "hello", "--model",
                             "openai:gpt-4o"], capture_output=True, text=True, env=env,
                            timeout=120, cwd=home)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: the OpenAI client cannot start: Missing credentials")
    assert "(hint: set OPENAI_API_KEY" in lines[0]


@pytest.mark.parametrize(("status", "kind", "message", "line", "hint"), [
    (401, "authentication_error", "invalid x-api-key",
     "error: the model server refused the credentials: ", "check the provider's API key"),
    (404, "not_found_error", "model: claude-test", "error: the model server does not know "
     "the model: ", "check the model name"),
    (429, "rate_limit_error", "slow down", "error: the model server is limiting requests: ",
     "wait a moment"),
    # langchain-core's ContextOverflowError, a ModelError too: the thread is too long, not
    # the server at fault.
    (400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum",
     "error: ", "start a new thread"),
])
def test_an_anthropic_error_is_one_line(home: Path, status: int, kind: str, message: str,
                                        line: str, hint: str) -> None:
    # A real HTTP server on 127.0.0.1 in Anthropic's place, answering as its API answers
    # (langchain-anthropic raises langchain-core's ModelAuthenticationError and kin; the CLI
    # printed their traceback).
    server = json_reply_server(status, {"type": "error",
                                        "error": {"type": kind, "message": message}},
                               {"retry-after": "0"})
    try:
        result = callgate("ask", "hello", "--model", "anthropic:claude-test", home=home,
                          env={"ANTHROPIC_API_KEY": "not-a-key", "ANTHROPIC_BASE_URL": server.url,
                               "ANTHROPIC_API_URL": server.url}, timeout=120)
    finally:
        server.close()
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(line + message) and f"(hint: {hint}" in lines[0]


def test_an_ollama_model_not_pulled_says_to_pull_it(home: Path) -> None:
    # A real HTTP server on 127.0.0.1 answering as Ollama does for a model it does not
    # have; the hint said the thread was saved, not how to get the model.
    server = json_reply_server(404, {"error": 'model "qwen9:4b" not found, try pulling it first'})
    try:
        result = callgate("ask", "hello", "--model", f"ollama:qwen9:4b@{server.url}",
                          home=home, timeout=120)
    finally:
        server.close()
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0] == ("error: the Ollama server does not have the model 'qwen9:4b' (hint: "
                        "pull it first: ollama pull qwen9:4b)")


def test_an_openai_error_of_a_request_is_not_a_missing_key() -> None:
    # Only the client's own start-up error names the key (a second reader's review: a stream
    # cut off, openai.APIError, read "the OpenAI client cannot start … set OPENAI_API_KEY").
    import httpx
    import openai

    from callgate.cli import as_user_error

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    cut = as_user_error(openai.APIError("An error occurred during streaming", request, body=None))
    assert cut is not None and str(cut) == (
        "the model server failed: An error occurred during streaming")
    start = as_user_error(openai.OpenAIError("Missing credentials."))
    assert start is not None and "OPENAI_API_KEY" in (start.hint or "")


def test_debug_shows_the_traceback(home: Path) -> None:
    result = callgate("ask", "hello", "--model", "nosuch", "--debug", home=home)
    assert result.returncode == 2
    assert "Traceback" in result.stderr and result.stderr.strip().splitlines()[-1].startswith(
        "error: model spec 'nosuch'")


# -- the bundled model -----------------------------------------------------------------------


@pytest.mark.llama
@pytest.mark.timeout(900)
def test_ask_with_the_bundled_model(home: Path) -> None:
    result = callgate("ask", "What is 17 * 23?", "--json", "--max-steps", "2", home=home,
                      timeout=800)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["status"] in {"done", "step_limit"} and out["final_answer"]
    for marker in ("Action:", "Action Input:", "<tool_call>", "Observation:"):
        assert marker not in out["final_answer"]
    rows = json.loads(callgate("stats", "--json", home=home).stdout)  # persisted usage
    events = out["tool_events"]
    executed = [e for e in events if e["outcome"] in ("ok", "error", "timeout")]
    assert sum(r["calls"] for r in rows) == len(executed)
    assert sum(r["duplicates"] for r in rows) == sum(e["outcome"] == "repeat" for e in events)
    # The system prompt's KV state is kept for the next process, which answers the same.
    (state,) = (home / "data" / "prefix-cache").glob("*.kv")
    inode = state.stat().st_ino
    again = callgate("ask", "What is 17 * 23?", "--json", "--max-steps", "2", home=home,
                     timeout=800)
    assert json.loads(again.stdout)["final_answer"] == out["final_answer"]
    assert list((home / "data" / "prefix-cache").glob("*.kv")) == [state]
    assert state.stat().st_ino == inode  # read, not written again (writes replace the file)


def _ask_once(home: Path, question: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``callgate ask --json`` on the bundled model: its output, and the one call that ran."""
    result = callgate("ask", question, "--json", "--max-steps", "2", home=home, timeout=250)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    (event,) = [e for e in out["tool_events"] if e["outcome"] == "ok"]
    return out, event


@pytest.mark.llama  # the suite's default timeout: five short questions (about 10 s each here)
def test_ask_converts_units_with_the_calculator(home: Path) -> None:
    # The bundled model, through the CLI: the calculator is offered for a conversion, the
    # grammar and the request's span make the expression, and the answer states its result
    # (it had been made-up code, no tool offered).
    out, event = _ask_once(home, "Convert 5 miles to kilometers.")
    assert event["tool"] == "calculator" and event["args"] == {
        "expression": "5 miles to kilometers"}
    assert event["summary"].endswith("= 8.04672 kilometers")
    assert "8.04672 kilometers" in out["final_answer"]
    # With no amount, as a question asks it: SmolLM2 wrote "1.0fahrenheit to celsius" and
    # answered "1.000000000000001"; the request's one span the pattern admits is the value.
    out, event = _ask_once(home, "How many feet in a mile?")
    assert event["args"] == {"expression": "How many feet in a mile"}
    assert "5280 feet" in out["final_answer"]
    # An amount written as a word: offered no tool, SmolLM2 had answered with made-up code
    # and four invented numbers.
    out, event = _ask_once(home, "Convert a mile to feet.")
    assert event["args"] == {"expression": "a mile to feet"}
    assert "5280 feet" in out["final_answer"]
    out, event = _ask_once(home, "How many minutes are in an hour and a half?")
    assert event["args"] == {"expression": "How many minutes are in an hour and a half"}
    assert "90" in out["final_answer"]  # it had been offered no tool
    # Two conversions: SmolLM2 wrote "10.00000000000001, 10.00000000000001, 5.0000…", the
    # calculator failed, and the answer was that junk. The value is the request's span
    # holding the junk's first number, and the turn's second call takes the other.
    result = callgate("ask", "Convert 10 km to miles and 5 kg to pounds.", "--json",
                      "--max-steps", "3", home=home, timeout=250)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [e["args"]["expression"] for e in out["tool_events"] if e["outcome"] == "ok"] == [
        "10 km to miles", "5 kg to pounds"]
    assert "6.21371192237334 miles" in out["final_answer"]
    assert "11.0231131092439 pounds" in out["final_answer"]


@pytest.mark.llama  # the suite's default timeout: two short questions
def test_ask_reads_arithmetic_written_in_words(home: Path) -> None:
    # The bundled model, through the CLI: "What is two plus two?" had been offered no tool
    # and answered "4" unchecked ("numbers in no result or question: 4"). The loop reads it
    # as "2 plus 2", the calculator is offered and called, and the answer is its result.
    out, event = _ask_once(home, "What is two plus two?")
    assert event["tool"] == "calculator" and event["summary"].endswith("= 4")
    assert out["final_answer"].startswith("4") and out["answer_checks"] == []
    # "percent" in words too: system_stats had been called, "2.5% of 2.5% = 0.3" answered.
    out, event = _ask_once(home, "What is fifteen percent of eighty?")
    assert event["tool"] == "calculator" and event["summary"].endswith("= 12")


@pytest.mark.llama
@pytest.mark.server
@pytest.mark.timeout(600)
def test_tool_choice_refused_by_llama_cpp_server_is_one_line(home: Path) -> None:
    from callgate.models.bundled import bundled_model_path

    with llama_cpp_server(str(bundled_model_path())) as url:  # a real server, HTTP 500
        result = callgate("ask", "What is 17*23?", "--model", f"openai:smollm@{url}",
                          "--tool-choice", "required", "--max-steps", "1", home=home,
                          timeout=400)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("error: the model server answered HTTP 5")
    assert "tool_choice='required'" in lines[0]


SLOW_TOOLS_YML = """\
tools:
  - name: wait_a_bit
    description: Wait some seconds.
    module: ./slow_tools.py
    function: wait_a_bit
    parameters_schema:
      type: object
      properties: {seconds: {type: integer}}
      required: [seconds]
"""


def test_ctrl_c_during_a_tool_says_the_turn_ended(home: Path) -> None:
    # The hint said "resume with --thread ID", which only printed the turn's "The run was
    # cancelled after 1 step(s)." again: a cancelled run ends its turn.
    (home / "slow_tools.py").write_text("import time\n\n\ndef wait_a_bit(seconds: int) -> str:"
                                        "\n    time.sleep(seconds)\n    return 'waited'\n")
    (home / "tools.yml").write_text(SLOW_TOOLS_YML)
    process = subprocess.Popen(
        [sys.executable, "-m", "callgate.cli", "ask", "Wait a minute.", "--model", "waiter",
         "--no-builtins", "--events"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home), cwd=home)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if json.loads(line)["event"] == "tool_start":
                break
        process.send_signal(signal.SIGINT)
        rest, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, err
    thread = json.loads(rest.splitlines()[-1])["thread_id"]
    assert (f"cancelled — the turn ended there; thread {thread} is saved: a new question "
            f"with --thread {thread} goes on from it") in err
    assert "resume with" not in err
    nxt, values = _thread_values(home, thread)
    assert nxt == () and values["status"] == "cancelled"


@pytest.mark.llama
@pytest.mark.timeout(900)
def test_ctrl_c_while_the_model_generates_stops_within_a_second(home: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "callgate.cli", "ask", "Tell me a long story about a cat.",
         "--mode", "chat", "--events"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home), cwd=home)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # wait for the model's first streamed token
            if json.loads(line)["event"] == "token":
                break
        else:
            pytest.fail(f"no token streamed: {process.stderr.read() if process.stderr else ''}")
        signalled = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        stopped = time.monotonic() - signalled
        rest, err = process.stdout.read(), process.stderr.read() if process.stderr else ""
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert stopped < 1.0, f"took {stopped:.2f} s to stop"
    cancelled = json.loads(rest.splitlines()[-1])
    thread = cancelled["thread_id"]
    assert cancelled["event"] == "cancelled" and thread.startswith("ask-")
    assert (f"cancelled — the turn ended there; thread {thread} is saved: a new question "
            f"with --thread {thread} goes on from it") in err

    # The thread goes on (with the scripted model: the thread is what is tested here), as
    # an agent again: a run without --mode keeps the thread's "chat".
    resumed = callgate("ask", "What is 17*23?", "--model", "calc", "--thread", thread,
                       "--mode", "agent", "--json", home=home)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["status"] == "done" and out["thread_id"] == thread
    next_nodes, values = _thread_values(home, thread)
    assert next_nodes == () and values["status"] == "done"
    assert values["humans"][-1] == "What is 17*23?"


def test_what_a_tool_writes_to_file_descriptor_1_stays_out_of_stdout(home: Path) -> None:
    # A tool's os.system, or a subprocess inheriting stdout, wrote to fd 1 itself, past
    # sys.stdout: `ask … > answer.txt` kept "noise from echo" before the answer.
    common = _shouter(home, "import os, subprocess, sys\n\n"
                            "def shout(text: str) -> str:\n"
                            "    os.system('echo noise from os.system')\n"
                            "    subprocess.run([sys.executable, '-c',\n"
                            "                    'print(\"noise from a child\")'])\n"
                            "    os.write(1, b'noise from os.write\\n')\n"
                            "    return text.upper()\n")
    noise = ("noise from os.system", "noise from a child", "noise from os.write")
    plain = callgate(*common, home=home)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "HI [R1]\n\nSources: [R1] shout\n"
    assert all(line in plain.stderr for line in noise), plain.stderr
    result = callgate(*common, "--json", home=home)
    assert json.loads(result.stdout)["final_answer"].startswith("HI [R1]")
    events = callgate(*common, "--events", home=home)
    assert [json.loads(line)["event"] for line in events.stdout.splitlines()][-1] == "result"
    chat = callgate("chat", "--model", "shouter", "--tools", "tools.yml", "--no-builtins",
                    "--json", home=home, stdin="Shout hi\n")
    assert chat.returncode == 0, chat.stderr
    assert [json.loads(line)["status"] for line in chat.stdout.splitlines()] == ["done"]
    assert all(line in chat.stderr for line in noise), chat.stderr
