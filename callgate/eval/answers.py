"""``callgate eval answers``: is the final answer something a user can read?

Runs a small question set over the built-in tools (calculator, system_stats, rag_search over
a temporary index, web_search over a fake SearxNG on 127.0.0.1) through ``build_agent`` and
scores each final answer: does it hold the key result, does it state a number found in no
tool result nor in the question, does it echo the loop's own instructions, is it
degenerate (empty, or a sentence repeated), did it come from the results fallback
(``answer_source="results"``). It also times ``callgate ask`` end to end, as a user runs it.

The number and echo checks are :mod:`callgate.answer_checks`' own, applied to the final
answer the user reads (after the loop's checks), so the figures say what got through.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs, urlparse

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field, TypeAdapter

from callgate.answer_checks import (
    cut_repetition,
    drop_echoes,
    false_equations,
    invented_numbers,
    misattributed_numbers,
    ngrams,  # the n-gram echo test of answer_checks, reused on the loop's other messages
    numbers_in,
)
from callgate.eval.bfcl_stats import wilson

ASK_QUESTION = "How busy is this computer's CPU right now?"
STAT_KEYS = ("cpu_percent", "cpu_count", "memory_percent", "disk_percent", "load_average")


# -- the question set --------------------------------------------------------------------
class Key(BaseModel):
    """How to recognise the key result in an answer: any of ``text`` (case-insensitive), the
    number ``number`` (rounded to at least ``digits`` decimals), or a ``system_stats`` field
    ``stat`` whose value is read at run time."""

    text: list[str] = Field(default_factory=list)
    number: float | None = None
    digits: int = 0
    # Literal over the tuple's members: pydantic reads it at run time; mypy wants literals.
    stat: Literal[STAT_KEYS] | None = None  # type: ignore[valid-type]


class Document(BaseModel):
    """A file put in the temporary rag_search index."""

    kind: Literal["document"]
    name: str
    text: str


class SearchHit(BaseModel):
    title: str
    url: str
    content: str


class Search(BaseModel):
    """What the fake SearxNG answers to a query containing most of ``match``."""

    kind: Literal["search"]
    match: list[str]
    results: list[SearchHit]


class Case(BaseModel):
    """One question, the built-in tool meant to answer it, and its key result."""

    kind: Literal["case"]
    id: str
    tool: str
    question: str
    key: Key


Record = Annotated[Document | Search | Case, Field(discriminator="kind")]
_RECORD = TypeAdapter(Record)


@dataclass
class AnswerSet:
    """The documents, search results and questions of one data file."""

    documents: list[Document] = field(default_factory=list)
    searches: list[Search] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)


def default_set_path() -> Path:
    return Path(str(resources.files("callgate.eval") / "data" / "answer_quality.jsonl"))


def load_set(path: str | Path | None = None) -> AnswerSet:
    """Read a JSONL answer set (default: the packaged one); a bad line is one clear error."""
    path = Path(path) if path else default_set_path()
    found = AnswerSet()
    lists = {"document": found.documents, "search": found.searches, "case": found.cases}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = _RECORD.validate_json(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: not an answer-set record: "
                             f"{str(exc).splitlines()[0]}") from None
        # ``_RECORD`` parses a union of the three record types, each with its ``kind``.
        lists[record.kind].append(record)  # type: ignore[attr-defined]
    return found


# -- the tools' backends -----------------------------------------------------------------
def search_reply(searches: Sequence[Search], query: str) -> list[SearchHit]:
    """The results whose ``match`` words the query holds most of (none when it holds none)."""
    words = query.lower()
    best = max(searches, key=lambda s: sum(w in words for w in s.match), default=None)
    if best is None or not any(w in words for w in best.match):
        return []
    return best.results


@contextmanager
def fake_searxng(searches: Sequence[Search]) -> Iterator[str]:
    """A SearxNG-compatible JSON server on 127.0.0.1 (http.server), yielding its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            url = urlparse(self.path)
            query = (parse_qs(url.query).get("q") or [""])[0]
            if url.path.rstrip("/") != "/search":
                self.send_error(404)
                return
            hits = [{**h.model_dump(), "engine": "fake", "category": "general"}
                    for h in search_reply(searches, query)]
            body = json.dumps({"query": query, "number_of_results": len(hits),
                               "results": hits, "answers": [], "suggestions": [],
                               "infoboxes": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.block_on_close = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def builtin_registry(answer_set: AnswerSet) -> Iterator[Any]:
    """The built-in tools as a user gets them, with rag_search over a temporary index of the
    set's documents and web_search over a fake SearxNG; generate_image is left out."""
    from callgate.tools.builtin import BuiltinSettings, builtin_tools
    from callgate.tools.index import DocumentIndex
    from callgate.tools.registry import ToolRegistry

    with tempfile.TemporaryDirectory(prefix="callgate-answers-") as tmp, \
            fake_searxng(answer_set.searches) as url:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for doc in answer_set.documents:
            (docs / doc.name).write_text(doc.text, encoding="utf-8")
        index = Path(tmp) / "index.sqlite"
        DocumentIndex(index).add_folder(docs)
        tools, _ = builtin_tools(BuiltinSettings(searxng_url=url, search_backend="searxng",
                                                 http_timeout_s=5.0, index_path=index))
        registry = ToolRegistry()
        for tool in tools:
            registry.add(tool)
        yield registry


# -- scoring -----------------------------------------------------------------------------
@dataclass
class AnswerScore:
    """What the checks found in one final answer."""

    key_result: bool
    invented_numbers: list[str]
    echoed: bool
    degenerate: bool
    loop_message: bool = False
    misattributed_numbers: list[str] = field(default_factory=list)
    false_equations: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """The key result, in an answer that passes every check (an answer spraying numbers
        can hold the key by chance)."""
        return (self.key_result and not self.invented_numbers and not self.echoed
                and not self.degenerate and not self.loop_message
                and not self.misattributed_numbers and not self.false_equations)


_FAILED_SUMMARY = re.compile(r"\[\w+\] failed: ")  # how summaries.py shows a failed call


def _loop_message_ngrams() -> set[tuple[str, ...]]:
    from callgate.tools.grounding import GROUNDING_ADVICE

    return ngrams(GROUNDING_ADVICE)


def loop_message(text: str) -> bool:
    """Whether the answer repeats what the loop tells the model about its calls (a failed
    call's summary, the grounding refusal's advice): text for the model, not for the user.
    (What was refused may be told: the loop's failure message says it.)"""
    return bool(_FAILED_SUMMARY.search(text) or ngrams(text) & _loop_message_ngrams())


def answer_text(final_answer: str) -> str:
    """The answer without the ``Sources:`` paragraph callgate appends (its own, not the
    model's: the loop removes model-written ones)."""
    head, sep, tail = final_answer.rpartition("\n\nSources: ")
    return head if sep and "\n" not in tail else final_answer


def contains_key(text: str, texts: Sequence[str], numbers: Sequence[float], *,
                 digits: int = 0, integer: bool = False) -> bool:
    """Whether ``text`` holds any of ``texts`` or any of ``numbers`` (written exactly or
    rounded to ``digits`` or more decimals; ``integer``: written without decimals)."""
    lower = text.lower()
    if any(t.lower() in lower for t in texts):
        return True
    for token in numbers_in(text):
        if integer and "." in token:
            continue
        try:
            value = float(token.replace(",", "").replace("_", ""))
        except ValueError:
            continue
        for key in numbers:
            if abs(value - key) <= 1e-9 * max(1.0, abs(key)) or any(
                    abs(round(key, d) - value) <= 1e-9 * max(1.0, abs(key))
                    for d in range(digits, 10)):
                return True
    return False


def score_answer(final_answer: str, *, question: str, evidence: Sequence[str],
                 texts: Sequence[str] = (), numbers: Sequence[float] = (), digits: int = 0,
                 integer: bool = False) -> AnswerScore:
    """Score one final answer; ``evidence`` is every tool result of the question (summaries,
    previews, arguments, full data). A number in no result and not in the question is
    invented, whether or not the loop called a tool."""
    text = answer_text(final_answer)
    repeated = cut_repetition(text, most=1)[1]
    return AnswerScore(
        key_result=contains_key(text, texts, numbers, digits=digits, integer=integer),
        invented_numbers=invented_numbers(text, [*evidence, question]),
        misattributed_numbers=misattributed_numbers(text, evidence),
        false_equations=false_equations(text),
        echoed=drop_echoes(text)[1],
        degenerate=not any(ch.isalnum() for ch in text) or repeated,
        loop_message=loop_message(text),
    )


def stat_values(stat: str, results: Sequence[Any]) -> list[float]:
    """The key values of ``stat``: ``cpu_count`` from psutil now; a usage figure from the
    ``system_stats`` results of the run (it changes by the second), else psutil now."""
    import psutil

    if stat == "cpu_count":
        return [float(psutil.cpu_count() or 0)]
    values: list[float] = []
    for data in results:
        if isinstance(data, dict):
            got = data.get(stat)
            values.extend(float(v) for v in (got if isinstance(got, list) else [got])
                          if isinstance(v, int | float))
    if values:
        return values
    from callgate.tools.builtin.system_stats import system_stats

    now = system_stats().get(stat)
    return [float(v) for v in (now if isinstance(now, list) else [now])
            if isinstance(v, int | float)]


# -- running -----------------------------------------------------------------------------
@dataclass
class CaseResult:
    """One question's run and its scores."""

    id: str
    tool: str
    question: str
    final_answer: str
    answer_source: str
    answer_checks: list[str]
    status: str
    tools_ok: list[str]
    expected_tool_ok: bool
    calls: list[str]  # every call of the turn: ``tool {args} -> outcome (error)``
    key: list[str]
    key_result: bool
    clean_key_result: bool
    invented_numbers: list[str]
    echoed: bool
    loop_message: bool
    degenerate: bool
    fallback: bool
    seconds: float
    error: str | None = None
    misattributed_numbers: list[str] = field(default_factory=list)
    false_equations: list[str] = field(default_factory=list)


def _evidence(agent: Any, config: RunnableConfig, events: Sequence[dict[str, Any]]
              ) -> tuple[list[str], dict[str, list[Any]]]:
    """Every ok result's texts, and the full data per tool (from the agent's store)."""
    from callgate.graph.results import get_result

    texts: list[str] = []
    data: dict[str, list[Any]] = {}
    for event in events:
        if event.get("outcome") != "ok":
            continue
        texts += [event.get("summary") or "", event.get("preview") or "",
                  json.dumps(event.get("args"), default=str)]
        try:
            full = get_result(agent, config, event["id"])
        except (KeyError, ValueError):
            continue
        texts.append(json.dumps(full, default=str))
        data.setdefault(event["tool"], []).append(full)
    return texts, data


def run_case(agent: Any, case: Case) -> CaseResult:
    """Ask one question and score the answer."""
    config: RunnableConfig = {
        "configurable": {"thread_id": f"answers-{case.id}-{uuid.uuid4().hex[:6]}"},
        "recursion_limit": 100}
    started = time.perf_counter()
    error = None
    try:
        out = agent.invoke({"messages": [("user", case.question)]}, config)
    except Exception as exc:  # a crash is a failed answer, reported, not the end of the run
        out, error = {}, f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    events = out.get("tool_events") or []
    evidence, data = _evidence(agent, config, events)
    key = case.key
    numbers = [key.number] if key.number is not None else []
    if key.stat:
        numbers = stat_values(key.stat, data.get("system_stats", []))
    final = out.get("final_answer") or ""
    score = score_answer(final, question=case.question, evidence=evidence, texts=key.text,
                         numbers=numbers, digits=key.digits, integer=key.stat == "cpu_count")
    tools_ok = list(dict.fromkeys(e["tool"] for e in events if e.get("outcome") == "ok"))
    return CaseResult(
        id=case.id, tool=case.tool, question=case.question, final_answer=final,
        answer_source=out.get("answer_source") or "", answer_checks=list(
            out.get("answer_checks") or []), status=out.get("status") or "error",
        tools_ok=tools_ok, expected_tool_ok=case.tool in tools_ok,
        calls=[_call_line(e) for e in events],
        key=[*key.text, *(f"{n:g}" for n in numbers)], key_result=score.key_result,
        clean_key_result=score.clean,
        invented_numbers=score.invented_numbers,
        misattributed_numbers=score.misattributed_numbers,
        false_equations=score.false_equations, echoed=score.echoed,
        loop_message=score.loop_message,
        degenerate=score.degenerate, fallback=out.get("answer_source") == "results",
        seconds=round(seconds, 3), error=error)


def _call_line(event: dict[str, Any]) -> str:
    args = json.dumps(event.get("args"), ensure_ascii=False, default=str)
    error = f" ({event['error'][:160]})" if event.get("error") else ""
    return f"{event.get('tool')} {args} -> {event.get('outcome')}{error}"


@dataclass
class AskTiming:
    """End-to-end seconds of ``callgate ask QUESTION`` as a subprocess (load included)."""

    question: str
    command: list[str]
    seconds: list[float]
    median_s: float | None
    returncodes: list[int]
    answer: str
    load_average: list[float]


@dataclass
class AnswersReport:
    """Every question's result, the totals, and the ``callgate ask`` timing."""

    model: str
    date: str
    commit: str
    command: str = ""
    data: str = ""
    n_threads: str = ""
    cpus: int = 0
    host: dict[str, Any] = field(default_factory=dict)  # provenance.machine()
    load_before: list[float] = field(default_factory=list)
    load_after: list[float] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)
    ask: AskTiming | None = None

    def totals(self, tool: str | None = None) -> dict[str, Any]:
        """Counts, rates with 95 % Wilson intervals, and seconds (median, p90)."""
        rows = [r for r in self.results if tool is None or r.tool == tool]
        n = len(rows)
        counts = {
            "key_result": sum(r.key_result for r in rows),
            "clean_key_result": sum(r.clean_key_result for r in rows),
            "invented_number": sum(bool(r.invented_numbers) for r in rows),
            "misattributed_number": sum(bool(r.misattributed_numbers) for r in rows),
            "false_equation": sum(bool(r.false_equations) for r in rows),
            "echoed_instructions": sum(r.echoed for r in rows),
            "echoed_loop_messages": sum(r.loop_message for r in rows),
            "degenerate": sum(r.degenerate for r in rows),
            "results_fallback": sum(r.fallback for r in rows),
            "expected_tool_ok": sum(r.expected_tool_ok for r in rows),
            "errors": sum(r.error is not None for r in rows),
        }
        seconds = [r.seconds for r in rows]
        out: dict[str, Any] = {"questions": n, **counts}
        out["rates"] = {k: {"rate": round(v / n, 4), "ci95": [round(x, 4) for x in wilson(v, n)]}
                        for k, v in counts.items() if k != "errors"} if n else {}
        out["s_median"] = round(statistics.median(seconds), 3) if seconds else None
        out["s_p90"] = round(_p90(seconds), 3) if seconds else None
        return out

    def to_dict(self) -> dict[str, Any]:
        tools = list(dict.fromkeys(r.tool for r in self.results))
        return {
            "name": "answer quality", "model": self.model, "date": self.date,
            "commit": self.commit, "command": self.command, "data": self.data,
            "machine": {**self.host, "cpus": self.cpus, "n_threads": self.n_threads,
                        "load_before": self.load_before, "load_after": self.load_after},
            "totals": self.totals(), "per_tool": {t: self.totals(t) for t in tools},
            "ask": asdict(self.ask) if self.ask else None,
            "results": [asdict(r) for r in self.results],
        }

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        return path


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=10, method="inclusive")[-1]


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return []


def build_answer_agent(model: Any, registry: Any, *, max_steps: int = 5) -> Any:
    """The agent ``callgate ask`` builds for ``model`` (a spec or a chat model), loaded now."""
    from callgate import build_agent
    from callgate.models.spec import load_model

    chat, config = load_model(model)
    if hasattr(chat, "loaded"):  # our llama.cpp model: load the GGUF before timing
        _ = chat.loaded
    return build_agent(chat, registry, tool_format=config.tool_format, grammar=config.grammar,
                       max_steps=max_steps, auto_approve=True)


def run_answers(model: Any = "bundled", *, limit: int | None = None,
                data: str | Path | None = None, max_steps: int = 5,
                progress: Callable[[CaseResult], None] | None = None) -> AnswersReport:
    """Run the answer set (its first ``limit`` questions) through ``build_agent`` with the
    built-in tools, one question at a time."""
    from callgate.eval.provenance import git_commit, machine

    answer_set = load_set(data)
    cases = answer_set.cases[:limit] if limit is not None else answer_set.cases
    report = AnswersReport(
        model=model if isinstance(model, str) else type(model).__name__,
        date=datetime.now(UTC).isoformat(timespec="seconds"), commit=git_commit(),
        data=str(Path(data) if data else default_set_path()),
        n_threads=os.environ.get("CALLGATE_N_THREADS", "default"), cpus=os.cpu_count() or 0,
        host=machine(), load_before=_load())
    with builtin_registry(answer_set) as registry:
        agent = build_answer_agent(model, registry, max_steps=max_steps)
        for case in cases:
            result = run_case(agent, case)
            report.results.append(result)
            if progress:
                progress(result)
    report.load_after = _load()
    return report


def callgate_command() -> list[str]:
    """How a user runs callgate: the ``callgate`` script beside this Python, else ``-m``."""
    script = Path(sys.executable).parent / ("callgate.exe" if os.name == "nt" else "callgate")
    if script.is_file():
        return [str(script)]
    found = shutil.which("callgate")
    return [found] if found else [sys.executable, "-m", "callgate.cli"]


def time_ask(model: str, *, runs: int = 3, question: str = ASK_QUESTION,
             timeout_s: float = 600.0) -> AskTiming:
    """Wall seconds of ``callgate ask QUESTION --model MODEL``, ``runs`` times, each a fresh
    process (Python start, imports and model load included), in a fresh ``CALLGATE_HOME``
    with the user's other settings."""
    command = [*callgate_command(), "ask", question, "--model", model, "--quiet"]
    seconds: list[float] = []
    codes: list[int] = []
    answer = ""
    load = _load()
    with tempfile.TemporaryDirectory(prefix="callgate-ask-") as home:
        env = {**os.environ, "CALLGATE_HOME": home,
               "CALLGATE_INDEX": str(Path(home) / "index.sqlite")}
        for _ in range(runs):
            started = time.perf_counter()
            try:
                done = subprocess.run(command, env=env, capture_output=True, text=True,
                                      timeout=timeout_s, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                seconds.append(round(time.perf_counter() - started, 3))
                codes.append(-1)
                continue
            seconds.append(round(time.perf_counter() - started, 3))
            codes.append(done.returncode)
            answer = done.stdout.strip() or (done.stderr.strip().splitlines() or [""])[-1]
    return AskTiming(question=question, command=command, seconds=seconds,
                     median_s=round(statistics.median(seconds), 3) if seconds else None,
                     returncodes=codes, answer=answer, load_average=load)


# -- output ------------------------------------------------------------------------------
def print_progress(result: CaseResult) -> None:
    marks = "".join(m for m, on in (("K", result.key_result), ("N", result.invented_numbers),
                                    ("M", result.misattributed_numbers),
                                    ("Q", result.false_equations), ("E", result.echoed),
                                    ("D", result.degenerate), ("F", result.fallback)) if on)
    answer = " ".join(result.final_answer.split())[:90]
    print(f"{result.id:16} {result.seconds:6.2f}s {marks or '-':5} {answer}", file=sys.stderr)


def format_answers(report: AnswersReport) -> str:
    """A table: one row per tool and the total; then the ``callgate ask`` timing."""
    heads = ["tool", "n", "key result", "clean key", "invented number", "misattributed",
             "false equation", "echoed", "loop msg",
             "degenerate", "from results", "tool ok", "median s", "p90 s"]
    rows = [[t, *_cells(report.totals(t))] for t in dict.fromkeys(r.tool
                                                                     for r in report.results)]
    rows.append(["all", *_cells(report.totals())])
    widths = [max(len(str(c)) for c in col) for col in zip(heads, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [heads, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if report.load_before:
        lines.append(f"load average {report.load_before} before, {report.load_after} after, "
                     f"on {report.cpus} CPUs")
    if report.ask:
        ask = report.ask
        lines.append(f"callgate ask {ask.question!r}: median {ask.median_s} s of "
                     f"{ask.seconds} (exit {ask.returncodes}; load {ask.load_average})")
    return "\n".join(lines)


def _cells(totals: dict[str, Any]) -> list[str]:
    n = totals["questions"]
    keys = ("key_result", "clean_key_result", "invented_number", "misattributed_number",
            "false_equation", "echoed_instructions",
            "echoed_loop_messages", "degenerate", "results_fallback", "expected_tool_ok")
    return [str(n), *(f"{totals[k]} ({100 * totals[k] / n:.0f}%)" if n else "0" for k in keys),
            f"{totals['s_median']:.2f}" if totals["s_median"] is not None else "-",
            f"{totals['s_p90']:.2f}" if totals["s_p90"] is not None else "-"]
