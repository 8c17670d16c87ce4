"""The ``callgate`` command line: ask, chat, tools, stats, index, eval, bench."""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

HOME = Path(os.environ.get("CALLGATE_HOME", Path.home() / ".callgate"))


def _agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=os.environ.get("CALLGATE_MODEL", "bundled"),
                        help="model spec: bundled, gguf:PATH, openai:MODEL[@URL], "
                             "anthropic:MODEL, ollama:MODEL, or a name from models.yaml")
    parser.add_argument("--tool-format", choices=["auto", "native", "react"], default="auto")
    parser.add_argument("--no-grammar", action="store_true",
                        help="no grammar-constrained decoding for llama.cpp models")
    parser.add_argument("--max-steps", type=int, default=5)
    parser.add_argument("--tools", dest="tools_file", help="a tools.yml file")
    parser.add_argument("--no-builtins", action="store_true", help="no built-in tools")
    parser.add_argument("--mode", choices=["agent", "work", "chat"], default="agent")
    parser.add_argument("--yes", action="store_true",
                        help="approve sensitive tool calls without asking")


def _build(args: argparse.Namespace, checkpointer: Any) -> Any:
    from callgate import build_agent
    from callgate.tools.stats import UsageStats
    from callgate.toolset import default_toolset

    toolset = default_toolset(args.tools_file, builtins=not args.no_builtins)
    return build_agent(args.model, toolset.registry, tool_format=args.tool_format,
                       grammar=False if args.no_grammar else None, max_steps=args.max_steps,
                       checkpointer=checkpointer, auto_approve=args.yes,
                       stats=UsageStats(HOME / "stats.sqlite"))


def _run_turn(agent: Any, payload: Any, config: dict[str, Any], show_tools: bool) -> dict:
    """Stream one turn: answer tokens to stdout, tool events to stderr, approvals asked."""
    from langgraph.types import Command

    while True:
        for mode, chunk in agent.stream(payload, config, stream_mode=["custom", "updates"]):
            if mode == "custom" and show_tools and chunk.get("event") == "tool_start":
                print(f"  → {chunk['tool']} {json.dumps(chunk['args'], ensure_ascii=False)}",
                      file=sys.stderr)
            elif mode == "custom" and show_tools and chunk.get("event") == "tool_end":
                mark = "ok" if chunk["ok"] else f"failed: {chunk['error']}"
                print(f"  ← {chunk['tool']} {mark} ({chunk['duration_ms']:.0f} ms)",
                      file=sys.stderr)
        state = agent.get_state(config)
        if not state.interrupts:
            return state.values
        answers = {}
        for pending in state.interrupts:
            answers[pending.id] = _ask_approval(pending.value)
        payload = Command(resume=answers)


def _ask_approval(request: dict[str, Any]) -> dict[str, Any]:
    call = request["call"]
    print(f"\nApproval needed ({request['reason']}):\n  {call['name']} "
          f"{json.dumps(call['args'], ensure_ascii=False)}", file=sys.stderr)
    if not sys.stdin.isatty():
        print("  no terminal to ask on: rejected", file=sys.stderr)
        return {"action": "reject", "reason": "no one to approve it"}
    answer = input("  approve? [y]es / [n]o / [e]dit: ").strip().lower()
    if answer.startswith("y"):
        return {"action": "approve"}
    if answer.startswith("e"):
        edited = input("  new arguments as JSON: ")
        try:
            return {"action": "edit", "args": json.loads(edited)}
        except json.JSONDecodeError:
            print("  not JSON: rejected", file=sys.stderr)
    return {"action": "reject"}


def cmd_ask(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.memory import InMemorySaver

    agent = _build(args, InMemorySaver())
    config = {"configurable": {"thread_id": f"ask-{uuid.uuid4().hex[:8]}"}}
    out = _run_turn(agent, {"messages": [("user", args.question)], "mode": args.mode},
                    config, show_tools=not args.json)
    if args.json:
        keep = ("final_answer", "status", "tools_used", "citations", "tool_events")
        print(json.dumps({k: out.get(k) for k in keep}, ensure_ascii=False, indent=2,
                         default=str))
    else:
        print(out["final_answer"])
        if out.get("status") != "done":
            print(f"[status: {out['status']}]", file=sys.stderr)
    return 0 if out.get("status") in ("done", "step_limit") else 1


def cmd_chat(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlite import SqliteSaver

    HOME.mkdir(parents=True, exist_ok=True)
    with SqliteSaver.from_conn_string(str(Path(args.db or HOME / "threads.sqlite"))) as saver:
        agent = _build(args, saver)
        thread = args.thread or f"chat-{uuid.uuid4().hex[:8]}"
        config = {"configurable": {"thread_id": thread}}
        pending = agent.get_state(config)
        print(f"thread {thread} (resume it with --thread {thread}); empty line to quit",
              file=sys.stderr)
        if pending.next:  # a run stopped midway: finish it first
            print(_run_turn(agent, None, config, True).get("final_answer"))
        while True:
            try:
                line = input("you> ").strip()
            except EOFError:
                break
            if not line:
                break
            out = _run_turn(agent, {"messages": [("user", line)], "mode": args.mode},
                            config, show_tools=True)
            print(out["final_answer"])
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    from callgate.toolset import default_toolset

    toolset = default_toolset(args.tools_file)
    print("Tools offered to the model:")
    for tool in toolset.registry:
        flags = [tool.source]
        if tool.sensitive:
            flags.append("needs approval")
        if tool.timeout_s:
            flags.append(f"timeout {tool.timeout_s:g}s")
        first_line = tool.description.strip().splitlines()[0] if tool.description else ""
        print(f"  {tool.name:<18} {first_line[:70]}  [{', '.join(flags)}]")
    missing = [s for s in toolset.statuses if not s.available]
    if missing:
        print("\nBuilt-in tools not offered:")
        for status in missing:
            print(f"  {status.name:<18} {status.reason}")
    if toolset.tools_file:
        print(f"\nFrom {toolset.tools_file}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from callgate.tools.stats import UsageStats

    stats = UsageStats(Path(args.db or HOME / "stats.sqlite"))
    if args.reset:
        stats.reset()
        print("statistics reset")
        return 0
    print(json.dumps(stats.summary(), indent=2) if args.json else stats.table())
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from callgate.tools.builtin import BuiltinSettings
    from callgate.tools.index import DocumentIndex

    index_path = Path(args.index) if args.index else BuiltinSettings.from_env().index_path
    index_path.parent.mkdir(parents=True, exist_ok=True)
    index = DocumentIndex(index_path)
    target = Path(args.path)
    if target.is_dir():
        report = index.add_folder(target, scope=args.scope)
        print(f"indexed {len(report.files)} file(s), {report.chunks} chunk(s) into {index_path} "
              f"(scope {args.scope}); {len(report.skipped)} skipped")
        for skipped in report.skipped:
            print(f"  skipped {skipped}")
    else:
        done = index.add_file(target, scope=args.scope)
        print(f"indexed {done.path}: {done.chunks} chunk(s) into {index_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="callgate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer one question, using tools")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print the whole result as JSON")
    _agent_options(ask)
    ask.set_defaults(func=cmd_ask)

    chat = sub.add_parser("chat", help="a conversation, persisted and resumable")
    chat.add_argument("--thread", help="thread id to resume")
    chat.add_argument("--db", help="SQLite file for threads (default ~/.callgate)")
    _agent_options(chat)
    chat.set_defaults(func=cmd_chat)

    tools = sub.add_parser("tools", help="list the tools and why some are not offered")
    tools.add_argument("--tools", dest="tools_file", help="a tools.yml file")
    tools.set_defaults(func=cmd_tools)

    stats = sub.add_parser("stats", help="usage statistics per tool")
    stats.add_argument("--db", help="statistics file (default ~/.callgate/stats.sqlite)")
    stats.add_argument("--json", action="store_true")
    stats.add_argument("--reset", action="store_true")
    stats.set_defaults(func=cmd_stats)

    index = sub.add_parser("index", help="add documents to the rag_search index")
    index.add_argument("path", help="a file or folder (.md, .txt, .pdf)")
    index.add_argument("--scope", default="global", help="a thread id, or 'global'")
    index.add_argument("--index", help="index file (default $CALLGATE_INDEX)")
    index.set_defaults(func=cmd_index)

    from callgate.eval.cli import add_commands

    add_commands(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
