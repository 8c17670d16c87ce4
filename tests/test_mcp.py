"""MCP tools through langchain-mcp-adapters, against the real mcp-server-git over stdio."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from callgate.graph.builder import build_agent
from callgate.graph.results import get_result
from callgate.models.scripted import ScriptedChatModel, tool_call
from callgate.tools.config import ToolsConfigError, load_tools_yaml
from callgate.tools.mcp import (
    DEFAULT_SENSITIVE_MCP,
    MCPConfigError,
    MCPLoadError,
    load_mcp_tools_into,
    load_mcp_tools_into_sync,
    parse_server,
)
from callgate.tools.registry import ToolRegistry
from tests.needs import unavailable

WRITERS = ("git_commit", "git_add", "git_reset", "git_checkout", "git_create_branch")
READERS = ("git_status", "git_log", "git_diff", "git_diff_unstaged", "git_show", "git_branch")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def server_command(repo: Path) -> dict[str, Any]:
    script = Path(sys.executable).parent / "mcp-server-git"
    if script.exists():
        return {"transport": "stdio", "command": str(script),
                "args": ["--repository", str(repo)]}
    return {"transport": "stdio", "command": sys.executable,
            "args": ["-m", "mcp_server_git", "--repository", str(repo)]}


def make_repo(path: Path) -> Path:
    if shutil.which("git") is None:
        unavailable("git is not installed (the MCP server under test serves a git repository)")
    try:
        import mcp_server_git  # noqa: F401  (a dev dependency: the real MCP server run)
    except ImportError:
        unavailable("mcp-server-git is not installed (pip install -e \".[dev]\")")
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "Test")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    (path / "notes_untracked.txt").write_text("not added yet\n")
    return path


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("mcp") / "repo")


@pytest.fixture(scope="module")
def registry(repo: Path) -> ToolRegistry:
    registry = ToolRegistry()
    load_mcp_tools_into_sync(registry, {"git": {**server_command(repo), "timeout_s": 30}})
    return registry


def stub(name: str, **metadata: Any) -> StructuredTool:
    return StructuredTool(name=name, description="x", args_schema={"type": "object"},
                          func=lambda: None, metadata=metadata or None)


# -- policy (no server) -----------------------------------------------------------------
def test_sensitivity_rules() -> None:
    server = parse_server("s", {"command": "x"})
    read_only = {"readOnlyHint": True}
    # A write-like name is sensitive even when the server calls the tool harmless.
    assert all(server.is_sensitive(stub(n, **read_only), DEFAULT_SENSITIVE_MCP) for n in
               (*WRITERS, "git_push", "delete_file", "write_file", "remove_item"))
    assert not any(server.is_sensitive(stub(n, **read_only), DEFAULT_SENSITIVE_MCP)
                   for n in READERS)
    assert server.is_sensitive(stub("drop_it", destructiveHint=True), DEFAULT_SENSITIVE_MCP)
    custom = parse_server("s", {"command": "x", "sensitive_tools": ["git_branch"],
                                "safe_tools": ["git_add"]})
    assert custom.is_sensitive(stub("git_branch", **read_only), DEFAULT_SENSITIVE_MCP)
    assert not custom.is_sensitive(stub("git_add"), DEFAULT_SENSITIVE_MCP)
    assert custom.is_sensitive(stub("git_commit", **read_only), DEFAULT_SENSITIVE_MCP)
    everything = parse_server("s", {"command": "x", "sensitive": True})
    assert everything.is_sensitive(stub("git_status"), DEFAULT_SENSITIVE_MCP)
    nothing = parse_server("s", {"command": "x", "sensitive": False,
                                 "sensitive_tools": ["git_push"]})
    assert not nothing.is_sensitive(stub("git_commit"), DEFAULT_SENSITIVE_MCP)
    assert nothing.is_sensitive(stub("git_push"), DEFAULT_SENSITIVE_MCP)
    own = parse_server("s", {"command": "x", "sensitive_patterns": ["git_c*"]})
    assert own.is_sensitive(stub("git_checkout"), DEFAULT_SENSITIVE_MCP)
    assert not own.is_sensitive(stub("git_add", **read_only), DEFAULT_SENSITIVE_MCP)


def test_policy_names_hold_with_tool_name_prefix() -> None:
    # With tool_name_prefix=True the registered names are "<server>_<tool>"; the config's
    # lists name the server's own tools, and must still apply (a read-only tool listed as
    # sensitive must not slip through as safe).
    from dataclasses import replace

    spec = {"command": "x", "sensitive_tools": ["read_note"], "safe_tools": ["tidy"]}
    server = replace(parse_server("notes", spec), prefixed=True)
    assert server.is_sensitive(stub("notes_read_note", readOnlyHint=True), DEFAULT_SENSITIVE_MCP)
    assert not server.is_sensitive(stub("notes_tidy"), DEFAULT_SENSITIVE_MCP)
    assert server.own_name("notes_read_note") == "read_note"
    # Without the prefix a name that happens to start with the server's name is its own.
    assert parse_server("notes", spec).own_name("notes_read_note") == "notes_read_note"


def test_annotations_decide_and_default_to_destructive() -> None:
    # MCP spec: destructiveHint defaults to true; only an explicit hint makes a tool safe.
    server = parse_server("s", {"command": "x"})
    for metadata in ({}, {"title": "Lookup"}, {"readOnlyHint": False},
                     {"destructiveHint": True}, {"readOnlyHint": None, "destructiveHint": None},
                     {"readOnlyHint": "yes"}):
        assert server.is_sensitive(stub("lookup", **metadata), DEFAULT_SENSITIVE_MCP), metadata
    for metadata in ({"readOnlyHint": True}, {"destructiveHint": False},
                     {"readOnlyHint": True, "destructiveHint": True}):
        assert not server.is_sensitive(stub("lookup", **metadata), DEFAULT_SENSITIVE_MCP)


def test_names_match_without_case() -> None:
    server = parse_server("s", {"command": "x", "safe_tools": ["LOOKUP", "Get_*"],
                                "sensitive_tools": ["Git_Log"]})
    safe = {"readOnlyHint": True}
    assert not server.is_sensitive(stub("lookup"), DEFAULT_SENSITIVE_MCP)
    assert not server.is_sensitive(stub("get_weather"), DEFAULT_SENSITIVE_MCP)
    assert server.is_sensitive(stub("GIT_LOG", **safe), DEFAULT_SENSITIVE_MCP)
    for name in ("Git_Commit", "DELETE_FILE", "Write_File", "git_PUSH"):
        assert server.is_sensitive(stub(name, **safe), DEFAULT_SENSITIVE_MCP), name
    own = parse_server("s", {"command": "x", "sensitive_patterns": ["*DROP*"]})
    assert own.is_sensitive(stub("drop_table", **safe), DEFAULT_SENSITIVE_MCP)


def test_connection_parsing() -> None:
    http = parse_server("web", {"transport": "http", "url": "https://example.com/mcp"})
    assert http.connection == {"transport": "streamable_http", "url": "https://example.com/mcp"}
    with pytest.raises(MCPConfigError, match="'url' must start with http"):
        parse_server("web", {"transport": "streamable_http", "url": "example.com"})
    with pytest.raises(MCPConfigError, match="'args' must be a list"):
        parse_server("s", {"command": "x", "args": "--repository /tmp"})


# -- the real server --------------------------------------------------------------------
@pytest.mark.server
def test_tools_loaded_with_policy(registry: ToolRegistry) -> None:
    assert "git_status" in registry
    for name in registry.names:
        tool = registry.get(name)
        assert tool.source == "mcp" and tool.category == "mcp:git" and tool.timeout_s == 30
    for name in WRITERS:
        assert registry.get(name).sensitive, name
    for name in READERS:
        assert not registry.get(name).sensitive, name
    # Arguments are validated against the server's own schema.
    add = registry.validate({"tool": "git_add", "args": {"repo_path": "/r", "files": []}})
    assert not add.valid and "at least 1 items" in add.error
    status = registry.validate({"tool": "git_status", "args": {"repo_path": 1}})
    assert not status.valid and "expected string, got integer 1" in status.error


@pytest.mark.server
async def test_error_results_raise(registry: ToolRegistry, repo: Path) -> None:
    # A tool error must fail the call, not come back as a "successful" error text.
    show = registry.get("git_show").runnable
    with pytest.raises(ToolException):
        await show.ainvoke({"repo_path": str(repo), "revision": "no-such-revision"})


@pytest.mark.server
def test_graph_runs_git_status(registry: ToolRegistry, repo: Path) -> None:
    model = ScriptedChatModel(script=[tool_call("git_status", {"repo_path": str(repo)}),
                                      AIMessage("Status checked [R1].")])
    agent = build_agent(model, registry)
    result = agent.invoke({"messages": [("user", "git status?")]})
    [event] = result["tool_events"]
    assert event["tool"] == "git_status" and event["ok"], event
    assert "notes_untracked.txt" in str(get_result(agent, None, event["id"]))
    assert event["summary"].startswith("[git_status] Repository status: On branch main")
    assert result["status"] == "done"
    assert result["final_answer"].startswith("Status checked [R1]")


@pytest.mark.server
async def test_sensitive_call_waits_for_approval_and_reject_skips_it(
        registry: ToolRegistry, repo: Path) -> None:
    before = git(repo, "log", "--oneline")
    model = ScriptedChatModel(script=[
        tool_call("git_commit", {"repo_path": str(repo), "message": "sneaky"}),
        AIMessage("I did not commit anything."),
    ])
    agent = build_agent(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "reject"}}
    paused = await agent.ainvoke({"messages": [("user", "commit it")]}, config)
    [pending] = paused["__interrupt__"]
    [request] = pending.value["action_requests"]
    assert request["name"] == "git_commit" and "sensitive" in request["description"]
    assert (await agent.aget_state(config)).interrupts
    result = await agent.ainvoke(Command(resume={"action": "reject"}), config)
    assert git(repo, "log", "--oneline") == before
    [event] = result["tool_events"]
    assert event["outcome"] == "denied" and not event["ok"]
    assert result["final_answer"] == "I did not commit anything."


@pytest.mark.server
def test_approved_call_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    path = tmp_path / "tools.yml"
    command = server_command(repo)
    args = ", ".join(f'"{a}"' for a in command["args"])
    path.write_text(f"mcp_servers:\n  git:\n    transport: stdio\n"
                    f"    command: {command['command']}\n    args: [{args}]\n"
                    f"    sensitive_tools: [git_status]\n")
    registry = ToolRegistry()
    load_tools_yaml(path, registry)
    assert registry.get("git_status").sensitive and registry.get("git_add").sensitive
    model = ScriptedChatModel(script=[
        tool_call("git_add", {"repo_path": str(repo), "files": ["notes_untracked.txt"]}),
        AIMessage("Staged [R1]."),
    ])
    agent = build_agent(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "approve"}}
    agent.invoke({"messages": [("user", "stage notes")]}, config)
    assert agent.get_state(config).interrupts
    result = agent.invoke(Command(resume={"action": "approve"}), config)
    assert result["tool_events"][0]["ok"], result["tool_events"]
    assert "A  notes_untracked.txt" in git(repo, "status", "--porcelain")


@pytest.mark.server
async def test_hung_server_times_out(tmp_path: Path) -> None:
    # Never answers, but exits when its stdin closes (so the cleanup is quick).
    hang = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    with pytest.raises(MCPLoadError, match="'hung' could not be loaded: TimeoutError: no "
                                           "answer within 0.5 s"):
        await load_mcp_tools_into(ToolRegistry(), {"hung": hang}, load_timeout_s=0.5)



@pytest.mark.server
async def test_a_command_that_is_no_mcp_server_is_one_error_quoting_what_it_wrote(
        caplog: pytest.LogCaptureFixture) -> None:
    # The MCP client logs each such line with an 11-line traceback; the CLI printed 55
    # lines of them before its one-line error.
    chatty = {"command": sys.executable, "args": [
        "-c", "import sys\nfor i in range(5): print('hello line', i, flush=True)\n"
              "sys.stdin.read()"]}
    with pytest.raises(MCPLoadError, match=r"no answer within 1 s; it wrote 5 lines that are "
                       r"not MCP \(JSON-RPC\), the first 'hello line 0': is its command an "
                       r"MCP server\?"):
        await load_mcp_tools_into(ToolRegistry(), {"chatty": chatty}, load_timeout_s=1)
    assert not [r for r in caplog.records if "JSONRPC" in r.getMessage()]
    echo = {"command": sys.executable, "args": ["-c", "print('usage: not a server')"]}
    with pytest.raises(MCPLoadError, match=r"it wrote 1 line that is not MCP .*'usage: not a"):
        await load_mcp_tools_into(ToolRegistry(), {"echo": echo}, load_timeout_s=5)



@pytest.mark.server
async def test_loads_at_once_each_say_their_own_servers_lines() -> None:
    # Each load's filter sits on the one MCP client logger: the first took every load's
    # lines, so one error said two, the other none.
    def server(says: str) -> dict[str, Any]:
        return {"command": sys.executable, "args": ["-c", f"print({says!r}, flush=True)"]}

    async def load(says: str) -> str:
        with pytest.raises(MCPLoadError) as caught:
            await load_mcp_tools_into(ToolRegistry(), {"files": server(says)},
                                      load_timeout_s=10)
        return str(caught.value)

    first, second = await asyncio.gather(load("A says hi"), load("B says hi"))
    assert "it wrote 1 line that is not MCP (JSON-RPC), the first 'A says hi'" in first
    assert "it wrote 1 line that is not MCP (JSON-RPC), the first 'B says hi'" in second


@pytest.mark.server
async def test_a_servers_stray_output_is_one_warning_and_its_tools_load(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    script = tmp_path / "banner_server.py"
    script.write_text(ANNOTATED_SERVER.replace(
        'if __name__ == "__main__":\n', 'if __name__ == "__main__":\n'
        '    print("notes server starting", flush=True)\n'))
    registry = ToolRegistry()
    with caplog.at_level("WARNING"):
        await load_mcp_tools_into(registry, {"notes": {
            "command": sys.executable, "args": [str(script)]}}, load_timeout_s=30)
    assert "read_note" in registry.names
    said = [r.getMessage() for r in caplog.records]
    assert [m for m in said if "not MCP" in m] == [
        "MCP server 'notes' wrote 1 line(s) that are not MCP (JSON-RPC), ignored; the first: "
        "'notes server starting'"], said
    assert not [m for m in said if "JSONRPC message" in m]


@pytest.mark.server
async def test_name_clash_registers_nothing(repo: Path) -> None:
    registry = ToolRegistry()

    def git_status(repo_path: str) -> str:
        """A local tool with an MCP tool's name."""
        return repo_path

    registry.register(git_status)
    with pytest.raises(ValueError, match="clashes"):
        await load_mcp_tools_into(registry, {"git": server_command(repo)})
    assert registry.names == ["git_status"]
    prefixed = await load_mcp_tools_into(registry, {"git": server_command(repo)},
                                         tool_name_prefix=True)
    assert "git_git_status" in {t.name for t in prefixed}


ANNOTATED_SERVER = """
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("notes")
NOTES = {"a": "first"}


@mcp.tool()
def erase_notes() -> str:
    \"\"\"Erase every note (no annotations: the spec says assume destructive).\"\"\"
    NOTES.clear()
    return "erased"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def read_note(key: str) -> str:
    \"\"\"Read one note.\"\"\"
    return NOTES.get(key, "")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def count_words(text: str) -> int:
    \"\"\"Count words.\"\"\"
    return len(text.split())


@mcp.tool(annotations=ToolAnnotations(title="Tidy", readOnlyHint=False))
def tidy() -> str:
    \"\"\"Tidy up (annotated, but not as harmless).\"\"\"
    return "tidied"


if __name__ == "__main__":
    mcp.run("stdio")
"""


@pytest.fixture(scope="module")
def annotated_server(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    script = tmp_path_factory.mktemp("fastmcp") / "notes_server.py"
    script.write_text(ANNOTATED_SERVER)
    return {"transport": "stdio", "command": sys.executable, "args": [str(script)]}


@pytest.mark.server
def test_fastmcp_annotations_over_stdio(annotated_server: dict[str, Any]) -> None:
    registry = ToolRegistry()
    load_mcp_tools_into_sync(registry, {"notes": annotated_server})
    assert registry.get("erase_notes").sensitive
    assert registry.get("tidy").sensitive
    assert not registry.get("read_note").sensitive
    assert not registry.get("count_words").sensitive
    exempt = ToolRegistry()
    load_mcp_tools_into_sync(exempt, {"notes": {**annotated_server,
                                                "safe_tools": ["ERASE_NOTES"]}})
    assert not exempt.get("erase_notes").sensitive and exempt.get("tidy").sensitive


@pytest.mark.server
def test_an_mcp_tools_structured_content_is_kept(annotated_server: dict[str, Any]) -> None:
    # FastMCP gives count_words' int as structured content too: the adapter's artifact.
    registry = ToolRegistry()
    load_mcp_tools_into_sync(registry, {"notes": annotated_server})
    model = ScriptedChatModel(script=[tool_call("count_words", {"text": "one two three"}),
                                      AIMessage("Three words [R1].")])
    agent = build_agent(model, registry)
    [event] = agent.invoke({"messages": [("user", "count")]})["tool_events"]
    assert event["ok"] and event["summary"] == "[count_words] 3", event
    item = agent.store.get(("callgate", "results", "-"), "R1")
    assert item.value["artifact"] == {"structured_content": {"result": 3}}
    assert [b["text"] for b in get_result(agent, None, "R1")] == ["3"]


@pytest.mark.server
def test_unannotated_mcp_tool_waits_for_approval(annotated_server: dict[str, Any]) -> None:
    registry = ToolRegistry()
    load_mcp_tools_into_sync(registry, {"notes": annotated_server})
    model = ScriptedChatModel(script=[tool_call("erase_notes", {}), AIMessage("Erased.")])
    agent = build_agent(model, registry, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "unannotated"}}
    paused = agent.invoke({"messages": [("user", "erase my notes")]}, config)
    [pending] = paused["__interrupt__"]
    [request] = pending.value["action_requests"]
    assert request["name"] == "erase_notes" and "sensitive" in request["description"]
    result = agent.invoke(Command(resume={"action": "reject"}), config)
    [event] = result["tool_events"]
    assert event["outcome"] == "denied" and not event["ok"]


@pytest.mark.server
def test_conversation_words_per_tool(annotated_server: dict[str, Any],
                                     tmp_path: Path) -> None:
    registry = ToolRegistry()
    load_mcp_tools_into_sync(registry, {"notes": {**annotated_server, "conversation_words":
                                                  {"count_words": ["text"]}}})
    assert registry.get("count_words").conversation_words == ("text",)
    assert registry.get("read_note").conversation_words == ()
    # With tool_name_prefix=True the server's own tool names still key the list.
    prefixed = ToolRegistry()
    load_mcp_tools_into_sync(prefixed, {"notes": {**annotated_server, "conversation_words":
                                                  {"count_words": ["text"]}}},
                             tool_name_prefix=True)
    assert prefixed.get("notes_count_words").conversation_words == ("text",)
    for words, fragment in [({"count_word": ["text"]}, "names tool 'count_word', which the "
                                                       "server does not list"),
                            ({"count_words": ["txt"]}, "names no argument of the tool")]:
        with pytest.raises(MCPConfigError, match=fragment):
            load_mcp_tools_into_sync(ToolRegistry(), {"notes": {**annotated_server,
                                                                "conversation_words": words}})
    # From tools.yml, the error names the line of the server's entry.
    config = tmp_path / "tools.yml"
    command = ", ".join(f"'{a}'" for a in annotated_server["args"])
    config.write_text(f"mcp_servers:\n  notes:\n    command: '{annotated_server['command']}'"
                      f"\n    args: [{command}]\n    conversation_words:\n"
                      "      count_words: [txt]\n")
    with pytest.raises(ToolsConfigError, match=r"tools.yml:6: .*no argument"):
        load_tools_yaml(config, ToolRegistry())
