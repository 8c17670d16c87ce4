"""Baselines on the same model and BFCL questions, and the side-by-side comparison.

Rows of ``callgate eval compare`` (each a path through the same GGUF):

* ``react`` — callgate, ReAct path, grammar-constrained (two-phase) decoding;
* ``react-nogrammar`` — callgate, ReAct path, free text (validation and correction on);
* ``plain`` — the model prompted plainly: callgate's ReAct system prompt, one model call,
  no grammar, no validation, no correction; :func:`parse_model_output` reads the calls,
  which are scored as they are;
* ``native`` — callgate's native path against llama-cpp-python's OpenAI-compatible server
  (``chat_format=chatml-function-calling``), ``tool_choice="auto"``;
* ``native-forced`` — the same with the first call forced where the server can force it:
  it forces only a *named* tool (``"required"`` is rejected), so the question's function
  is forced when it offers exactly one, and nothing is forced when it offers several;
* ``create_agent`` — LangChain's ``create_agent`` with the same server model.

A path a model cannot take (native tool calls on a text-only model with no server)
gets a row that says why instead of figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from callgate.eval.bfcl import (
    Attempt,
    BfclReport,
    CallgateAnswerer,
    _messages,
    evaluate,
    original_name,
    question_registry,
    settled,
)
from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion

__all__ = [
    "PATHS",
    "CreateAgentAnswerer",
    "PlainPromptAnswerer",
    "compare",
    "format_comparison",
    "llama_server",
    "server_chat_model",
]

PATHS = ("react", "react-nogrammar", "plain", "native", "native-forced", "create_agent")
SERVER_PATHS = frozenset({"native", "native-forced", "create_agent"})
SERVER_CHAT_FORMAT = "chatml-function-calling"


# --- llama-cpp-python's OpenAI-compatible server -------------------------------------------


@contextmanager
def llama_server(model_path: str | Path, *, n_ctx: int = 2048,
                 n_threads: int | None = None) -> Iterator[str]:
    """llama-cpp-python's server (``chatml-function-calling``) for ``model_path``.

    ``n_threads`` defaults to what callgate's in-process llama.cpp model uses, so that
    times of the in-process and the server paths compare. ``n_ctx`` 2048 holds every BFCL
    prompt here (the longest is ~1600 tokens with the server's function-calling template)
    and bounds the server's tool arguments, which it generates without a token limit."""
    from callgate.models.llama_server import llama_cpp_server
    from callgate.models.llamacpp import default_threads

    with llama_cpp_server(str(model_path), chat_format=SERVER_CHAT_FORMAT, n_ctx=n_ctx,
                          n_threads=n_threads or default_threads(), ready_s=120) as url:
        yield url


def server_chat_model(base_url: str, *, max_tokens: int = 256) -> Any:
    """``ChatOpenAI`` for llama-cpp-python's server (greedy, with the compat HTTP shim).

    Never streaming: the server's streamed chunks of a forced tool call each repeat the
    function name, which LangChain concatenates (``math_hypotmath_hypot...``)."""
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    from callgate.models.compat import compat_http_clients

    # ``max_completion_tokens``: ChatOpenAI's alias of its ``max_tokens`` field.
    return ChatOpenAI(base_url=base_url, api_key=SecretStr("not-needed"), model="local",
                      temperature=0, max_completion_tokens=max_tokens, timeout=300,
                      max_retries=0,
                      disable_streaming=True, **compat_http_clients(300))


# --- plain prompting -------------------------------------------------------------------------


class PlainPromptAnswerer:
    """One model call with callgate's ReAct prompt; the parsed calls are the answer.

    No grammar, no validation, no correction. The valid-call figure is informational:
    how many of the parsed calls would pass callgate's strict validation."""

    name = "plain prompt (ReAct prompt, 1 call)"

    def __init__(self, model: Any = "bundled", *, max_tokens: int = 256) -> None:
        from callgate.models.spec import load_model

        self.model, _ = load_model(model)
        self.max_tokens = max_tokens

    def describe(self) -> dict[str, Any]:
        return {"answerer": "plain", "max_tokens": self.max_tokens, "grammar": False,
                "validation": False, "correction": False}

    def __call__(self, question: BfclQuestion) -> Attempt:
        from langchain_core.messages import SystemMessage

        from callgate.parsing import parse_model_output
        from callgate.prompts import react as prompts

        registry = question_registry(question)
        system = prompts.react_system((t.name, t.description, t.schema) for t in registry)
        kwargs: dict[str, Any] = {"stop": prompts.STOP}
        if getattr(self.model, "text_only", False):
            kwargs.update(temperature=0.0, max_tokens=self.max_tokens)
        reply = self.model.invoke([SystemMessage(system), *_messages(question)], **kwargs)
        parsed = parse_model_output(reply.text, registry.names)
        attempt = Attempt()
        attempt.attempted = len(parsed.calls) + (1 if parsed.error else 0)
        attempt.invalid = (1 if parsed.error else 0) + sum(
            not registry.validate(c).valid for c in parsed.calls)
        attempt.calls = [{original_name(question, c["name"]): c["args"]} for c in parsed.calls]
        return attempt


# --- LangChain's create_agent -------------------------------------------------------------------


class CreateAgentAnswerer:
    """``langchain.agents.create_agent`` with the question's functions as tools.

    Every tool call the model makes is scored as made (create_agent does not validate
    arguments against the schema); the valid-call figure says how many would pass
    callgate's validation. A run ends at the model's answer or after ``max_steps`` model
    turns (create_agent has no step limit of its own, only LangGraph's recursion limit)."""

    name = "create_agent"

    def __init__(self, model: Any, *, max_steps: int = 5) -> None:
        self.model = model
        self.max_steps = max_steps

    def describe(self) -> dict[str, Any]:
        return {"answerer": "create_agent", "max_steps": self.max_steps}

    def __call__(self, question: BfclQuestion) -> Attempt:
        from langchain.agents import create_agent

        registry = question_registry(question)
        agent = create_agent(self.model, registry.as_langchain_tools())
        attempt = Attempt()
        turns = 0
        # ``add_messages`` reads (role, content) pairs too; ``InputAgentState`` types only
        # messages and dicts.
        stream = agent.stream({"messages": _messages(question)},  # type: ignore[call-overload]
                              {"recursion_limit": 2 * self.max_steps + 2},
                              stream_mode="updates")
        try:
            for chunk in stream:
                update = chunk.get("model")
                if not update:
                    continue
                turns += 1
                for message in update.get("messages") or []:
                    calls = getattr(message, "tool_calls", None) or []
                    bad = getattr(message, "invalid_tool_calls", None) or []
                    attempt.attempted += len(calls) + len(bad)
                    attempt.invalid += len(bad) + sum(
                        not registry.validate({"tool": c["name"], "args": c["args"]}).valid
                        for c in calls)
                    attempt.calls += [{original_name(question, c["name"]): c["args"]}
                                      for c in calls]
                if turns >= self.max_steps or settled(question, len(attempt.calls)):
                    break
        finally:
            stream.close()
        return attempt


# --- the comparison --------------------------------------------------------------------------


@dataclass
class Row:
    path: str
    report: BfclReport | None = None
    why_not: str | None = None


def _can_serve(model: Any) -> Path | None:
    """The GGUF file behind a model spec, if it is one llama-cpp-python's server can load."""
    from callgate.models.spec import ModelConfig, load_model, parse_spec

    if isinstance(model, str):
        try:
            cfg = parse_spec(model)
        except ValueError:
            return None
        return cfg.model_path if cfg.provider == "gguf" else None
    if isinstance(model, ModelConfig):
        return model.model_path if model.provider == "gguf" else None
    _, cfg = load_model(model)
    return cfg.model_path if cfg.provider == "gguf" else None


def _answerer(path: str, model: Any, server_model: Any, max_steps: int) -> Callable[
        [BfclQuestion], Attempt]:
    if path == "react":
        return CallgateAnswerer(model, tool_format="react", grammar=True, max_steps=max_steps)
    if path == "react-nogrammar":
        return CallgateAnswerer(model, tool_format="react", grammar=False,
                                max_steps=max_steps)
    if path == "plain":
        return PlainPromptAnswerer(model)
    if path == "native":
        return CallgateAnswerer(server_model, tool_format="native", max_steps=max_steps)
    if path == "native-forced":
        return CallgateAnswerer(server_model, tool_format="native", tool_choice="single",
                                max_steps=max_steps,
                                name="callgate native, forced (single-function questions)")
    if path == "create_agent":
        return CreateAgentAnswerer(server_model, max_steps=max_steps)
    raise ValueError(f"unknown path {path!r}; known: {', '.join(PATHS)}")


def compare(model: Any = "bundled", *, paths: Sequence[str] = PATHS,
            categories: Sequence[str] | None = None, limit: int | None = None,
            data_dir: str | Path | None = None, max_steps: int = 5,
            server_url: str | None = None,
            progress: Callable[[str, Any], None] | None = None,
            split: str = "all") -> list[Row]:
    """Evaluate each path on the same questions; server paths start llama-cpp's server for
    a GGUF model (or use ``server_url``, an OpenAI-compatible ``/v1`` URL)."""
    from callgate.eval.bfcl_data import default_data_dir, load_questions

    root = Path(data_dir) if data_dir is not None else default_data_dir()
    questions = [q for c in (categories or CATEGORIES)
                 for q in load_questions(c, root, limit, split=split)]
    rows: list[Row] = []
    with ExitStack() as stack:
        server_model = None
        for path in paths:
            if path in SERVER_PATHS and server_model is None:
                url = server_url
                if url is None:
                    gguf = _can_serve(model)
                    if gguf is None:
                        rows.append(Row(path, why_not="no OpenAI-compatible server for this "
                                        "model: pass --server-url"))
                        continue
                    url = stack.enter_context(llama_server(gguf))
                server_model = server_chat_model(url)
            try:
                answerer = _answerer(path, model, server_model, max_steps)
            except (ValueError, NotImplementedError, FileNotFoundError) as exc:
                rows.append(Row(path, why_not=str(exc)))
                continue
            report = evaluate(answerer, questions=questions, data_dir=root,
                              settings={"path": path, **getattr(answerer, "describe",
                                                                dict)()},
                              progress=partial(progress, path) if progress else None,
                              model=model if isinstance(model, str) else type(model).__name__)
            report.settings["limit"] = limit
            report.split = split
            rows.append(Row(path, report))
    return rows


def comparison_dict(rows: Sequence[Row], *, command: str = "") -> dict[str, Any]:
    """The comparison as a JSON-able summary (figures only, no per-question rows)."""
    out: dict[str, Any] = {"command": command, "rows": []}
    for row in rows:
        if row.report is None:
            out["rows"].append({"path": row.path, "why_not": row.why_not})
            continue
        data = row.report.to_dict(details=False)
        out.setdefault("date", data["date"])
        out.setdefault("model", data["model"])
        out.setdefault("data_dir", data["data_dir"])
        out["rows"].append({"path": row.path, "name": row.report.name,
                            "settings": data["settings"], "categories": data["categories"],
                            "summary": data["summary"],
                            "all_questions": data["all_questions"]})
    return out


def format_comparison(rows: Sequence[Row]) -> str:
    """Accuracy per category, valid-call rate and time per question, one row per path."""
    cats = next((r.report.categories() for r in rows if r.report), [])
    short = {"simple_python": "simple", "parallel_multiple": "par_mult",
             "irrelevance": "irrel", "live_parallel_multiple": "live_par_mult",
             "live_irrelevance": "live_irrel", "live_relevance": "live_rel"}
    head = ["path", *(short.get(c, c) for c in cats), "valid calls", "median s/q"]
    table = []
    for row in rows:
        if row.report is None:
            table.append([row.path, f"not run: {row.why_not}"])
            continue
        cells = [row.path]
        for c in cats:
            f = row.report.figures(c)
            cells.append(f"{100 * f['accuracy']:.1f}")
        overall = row.report.figures()
        rate = overall["valid_call_rate"]
        cells.append("-" if rate is None else
                     f"{100 * rate:.1f}% ({overall['valid_calls']}/{overall['attempted_calls']})")
        cells.append(f"{overall['s_median']:.2f}")
        table.append(cells)
    widths = [max(len(head[i]), *(len(r[i]) for r in table if len(r) == len(head)))
              for i in range(len(head))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    for r in table:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True))
                     if len(r) == len(head) else "  ".join(r))
    first = next((r.report for r in rows if r.report), None)
    n = {c: sum(1 for q in (first.results if first else []) if q.category == c) for c in cats}
    lines.append("accuracy in % per category (strict: every call of the turn counts); "
                 "questions per category: "
                 + ", ".join(f"{short.get(c, c)} {k}" for c, k in n.items()))
    return "\n".join(lines)

