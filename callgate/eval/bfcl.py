"""BFCL through callgate: each question's functions become tools, the agent's calls are scored.

Every question gets its own tool registry, built from its BFCL functions (schemas via
:func:`to_json_schema`; names through :func:`safe_name` on paths that need OpenAI-style
names, mapped back for scoring). A tool only acknowledges (``"ok"``): BFCL has no
implementations. The calls that pass callgate's validation before the final answer are the
agent's answer: the first one for ``simple_python``, ``multiple`` and ``live_simple``, all
of them for ``parallel*``; ``irrelevance`` is correct iff no call passes. Scoring is
:func:`callgate.eval.bfcl_checker.check`.

The run of a question stops being read once its answer is settled (the first valid call,
where only the first counts; a final answer; the step limit): the text of the answer is
not scored, so it is not generated. Scored arguments are those the model wrote, as
validated: defaults that validation injects for omitted parameters are left out (the
function would apply them itself; BFCL scores what the model supplied).

Answerers other than callgate (plain prompting, ``create_agent``) live in
:mod:`callgate.eval.baselines` and plug into the same :func:`evaluate` loop.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from langchain_core.tools import StructuredTool

from callgate.eval.bfcl_checker import check
from callgate.eval.bfcl_data import (
    CATEGORIES,
    BfclQuestion,
    default_data_dir,
    load_questions,
    safe_name,
    to_json_schema,
)
from callgate.tools.registry import ToolRegistry

__all__ = [
    "ACK",
    "Attempt",
    "BfclReport",
    "CallgateAnswerer",
    "QuestionResult",
    "evaluate",
    "format_table",
    "question_registry",
    "run_bfcl",
]

ACK = "ok"
FIRST_CALL_ONLY = frozenset({"simple_python", "multiple", "live_simple"})
# Where the first valid call settles the score (irrelevance: any call is wrong).
SETTLED_BY_FIRST_CALL = FIRST_CALL_ONLY | {"irrelevance"}


# --- tools from a question ------------------------------------------------------------------


def _ack(**_: Any) -> str:
    return ACK


def question_registry(question: BfclQuestion, *, safe_names: bool = False) -> ToolRegistry:
    """A registry with the question's functions as tools that acknowledge with ``"ok"``.

    ``safe_names`` maps ``.`` to ``_`` (OpenAI-style APIs forbid dots in names)."""
    registry = ToolRegistry()
    for fn in question.functions:
        name = safe_name(fn["name"]) if safe_names else fn["name"]
        tool = StructuredTool(name=name, description=fn.get("description") or name,
                              args_schema=to_json_schema(fn.get("parameters") or {}),
                              func=_ack)
        registry.register(tool, source="bfcl")
    return registry


def original_name(question: BfclQuestion, name: str) -> str:
    """The BFCL name of a (possibly safe-named) tool."""
    for fn in question.functions:
        if name in (fn["name"], safe_name(fn["name"])):
            return fn["name"]
    return name


def strip_injected(normalized: Any, raw: Any) -> Any:
    """``normalized`` without the keys validation added (defaults the model did not give)."""
    if isinstance(normalized, dict) and isinstance(raw, dict):
        return {k: strip_injected(v, raw[k]) for k, v in normalized.items() if k in raw}
    if isinstance(normalized, list) and isinstance(raw, list | tuple) and len(raw) == len(
            normalized):
        return [strip_injected(v, r) for v, r in zip(normalized, raw, strict=True)]
    return normalized


def _messages(question: BfclQuestion) -> list[tuple[str, str]]:
    return [(m.get("role") or "user", m.get("content") or "") for m in question.messages]


# --- one question's outcome -----------------------------------------------------------------


@dataclass
class Attempt:
    """What an answerer did with one question.

    ``calls``: the answer, as ``{name: {arg: value}}`` dicts in the order made (every valid
    call; the runner keeps the first where only the first counts). ``repeats``: valid calls
    that repeated an earlier one exactly, which callgate answers from the earlier result
    instead of running the tool again; they are not in ``calls`` (``calls_with_repeats``
    has them, in order, for the stricter count). ``attempted`` counts
    every call the model tried, invalid ones and unreadable replies included; ``invalid``
    those that failed validation or parsing; ``ungrounded`` schema-valid calls sent back
    because their values were not in the question (grounding). ``corrections``:
    correction rounds sent; ``fixed``: corrections after which the next attempt was valid."""

    calls: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    calls_with_repeats: list[dict[str, dict[str, Any]]] | None = None
    repeats: int = 0
    attempted: int = 0
    invalid: int = 0
    ungrounded: int = 0
    corrections: int = 0
    fixed: int = 0
    error: str | None = None
    note: str | None = None


@dataclass
class QuestionResult:
    id: str
    category: str
    ok: bool
    reason: str
    calls: list[dict[str, dict[str, Any]]]
    attempted: int
    invalid: int
    corrections: int
    fixed: int
    seconds: float
    error: str | None = None
    repeats: int = 0
    ok_counting_repeats: bool | None = None
    ungrounded: int = 0


class Answerer(Protocol):
    """Answers BFCL questions with tool calls (callgate, plain prompting, create_agent...)."""

    name: str

    def __call__(self, question: BfclQuestion) -> Attempt: ...


# --- callgate as an answerer -----------------------------------------------------------------


class CallgateAnswerer:
    """Runs each question through callgate's graph (native or ReAct path).

    ``model``: a chat model or a spec (``bundled``, ``gguf:PATH``, ``openai:M@URL``...).
    ``tool_choice`` (native path): ``"required"``, a tool name, or ``"single"`` = force the
    function when a question offers exactly one (for servers, like llama-cpp-python's,
    that only force a named tool). ``react_options`` set ReAct strategy knobs
    (``include_optional``, ``max_tokens``...)."""

    def __init__(self, model: Any = "bundled", *, tool_format: str = "react",
                 grammar: bool | None = None, tool_choice: str | None = None,
                 max_steps: int = 5, react_options: dict[str, Any] | None = None,
                 grounding: bool | None = None, name: str | None = None) -> None:
        from callgate.models.spec import load_model, resolve_tool_format

        # What a worker process needs to build the same answerer (``evaluate(jobs=N)``).
        self.spawn_kwargs: dict[str, Any] | None = dict(
            model=model, tool_format=tool_format, grammar=grammar, tool_choice=tool_choice,
            max_steps=max_steps, react_options=react_options, grounding=grounding,
            name=name) if isinstance(model, str) else None
        self.model, config = load_model(model)
        if tool_format == "auto":
            tool_format = config.tool_format
        self.tool_format = resolve_tool_format(self.model, tool_format)
        if grammar is None and self.tool_format == "react":
            grammar = bool(config.grammar) and getattr(self.model, "text_only", False)
        self.grammar = bool(grammar) if self.tool_format == "react" else False
        self.tool_choice = tool_choice
        self.max_steps = max_steps
        self.grounding = grounding  # None: the loop's default for the strategy
        self.react_options = dict(react_options or {})
        self.safe_names = self.tool_format == "native"
        self.name = name or self._default_name()

    def _default_name(self) -> str:
        if self.tool_format == "native":
            forced = f", tool_choice={self.tool_choice}" if self.tool_choice else ""
            return f"callgate native{forced}"
        return f"callgate react{'+grammar' if self.grammar else ', no grammar'}"

    def describe(self) -> dict[str, Any]:
        """Settings for the report, with the ReAct knobs in effect and the prompt's hash."""
        out: dict[str, Any] = {"answerer": "callgate", "tool_format": self.tool_format,
                               "grammar": self.grammar, "tool_choice": self.tool_choice,
                               "max_steps": self.max_steps, "react_options": self.react_options,
                               "grounding": self.grounding}
        if self.tool_format == "react":
            import hashlib

            from callgate.graph.decide_react import ReactStrategy
            from callgate.prompts import react as prompts

            strategy = ReactStrategy(self.model, ToolRegistry(), grammar=self.grammar)
            knobs = ("include_optional", "thought", "max_tokens", "args_tokens",
                     "end_turn_bias", "preselect", "coverage")
            out["react"] = {k: self.react_options.get(k, getattr(strategy, k, None))
                            for k in knobs}
            prompt = prompts.react_system([("tool", "description", {"type": "object"})])
            out["react"]["prompt_sha1"] = hashlib.sha1(prompt.encode()).hexdigest()[:10]
            if self.grounding is None:
                out["grounding"] = strategy.grounding
        elif self.grounding is None:
            out["grounding"] = False
        return out

    def _forced(self, registry: ToolRegistry) -> str | None:
        if self.tool_choice == "single":
            return registry.names[0] if len(registry) == 1 else None
        return self.tool_choice

    def graph(self, question: BfclQuestion) -> Any:
        from callgate.graph.builder import assemble, make_strategy
        from callgate.graph.settings import LoopSettings

        registry = question_registry(question, safe_names=self.safe_names)
        strategy = make_strategy(self.model, registry, tool_format=self.tool_format,
                                 grammar=self.grammar if self.tool_format == "react" else None,
                                 tool_choice=self._forced(registry))
        for key, value in self.react_options.items():
            if not hasattr(strategy, key):
                raise ValueError(f"unknown ReAct option {key!r}")
            setattr(strategy, key, value)
        settings = LoopSettings(registry=registry, max_steps=self.max_steps, auto_approve=True,
                                grounding=self.grounding)
        return assemble(settings, strategy).compile(name="callgate-bfcl")

    def __call__(self, question: BfclQuestion) -> Attempt:
        graph = self.graph(question)
        first_only = question.category in SETTLED_BY_FIRST_CALL
        attempt = Attempt()
        made: list[tuple[str, dict[str, Any]]] = []  # (call id, call), valid ones in order
        repeated: set[str] = set()
        raw_args: dict[str, Any] = {}
        corrected = False  # the last validate was followed by a correction
        stream = graph.stream({"messages": _messages(question)},
                              {"recursion_limit": 100},
                              stream_mode=["updates", "tasks"], subgraphs=True)
        try:
            for namespace, mode, chunk in stream:
                if mode == "tasks":
                    # Task starts arrive before the node runs: stop before the answer text.
                    if "result" not in chunk and chunk.get("name") in (
                            "finalize", "cite", "write_answer"):
                        break
                    continue
                if namespace:
                    continue
                for node, update in chunk.items():
                    if node == "decide":
                        for call in (update or {}).get("pending_calls") or []:
                            raw_args[call["id"]] = call.get("args")
                    elif node == "validate":
                        if self._validated(question, update or {}, raw_args, attempt,
                                           corrected, made):
                            corrected = False
                    elif node == "execute":
                        repeated.update(r["call_id"] for r in (update or {}).get(
                            "step_results") or [] if "repeat_step" in r)
                    elif node == "correct":
                        attempt.corrections += 1
                        corrected = True
                if first_only and made:
                    break
        finally:
            stream.close()
        attempt.calls = [call for cid, call in made if cid not in repeated]
        attempt.calls_with_repeats = [call for _, call in made]
        attempt.repeats = len(made) - len(attempt.calls)
        return attempt

    def _validated(self, question: BfclQuestion, update: dict[str, Any],
                   raw_args: dict[str, Any], attempt: Attempt, corrected: bool,
                   made: list[tuple[str, dict[str, Any]]]) -> bool:
        checked = update.get("pending_calls") or []
        errors = update.get("validation_errors") or []
        loose = [e for e in errors if not e.get("id")]  # replies the parser could not read
        attempt.attempted += len(checked) + len(loose)
        ungrounded = sum(c.get("kind") == "ungrounded" for c in checked)
        attempt.invalid += len(errors) - sum(e.get("kind") == "ungrounded" for e in errors)
        attempt.ungrounded += ungrounded
        valid = [c for c in checked if not c.get("error") and not c.get("skipped")]
        for call in valid:
            args = strip_injected(call.get("args") or {}, raw_args.get(call["id"]) or {})
            made.append((call["id"], {original_name(question, call["name"]): args}))
        if corrected and valid and not errors:
            attempt.fixed += 1
        return bool(valid or errors)


# --- the evaluation loop --------------------------------------------------------------------


@dataclass
class BfclReport:
    """Per-category figures plus every question's outcome."""

    name: str
    settings: dict[str, Any]
    results: list[QuestionResult]
    date: str = ""
    command: str = ""
    data_dir: str = ""
    model: str = ""

    def categories(self) -> list[str]:
        return list(dict.fromkeys(r.category for r in self.results))

    def figures(self, category: str | None = None) -> dict[str, Any]:
        rows = [r for r in self.results if category in (None, r.category)]
        return summarize(rows)

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name, "date": self.date, "command": self.command,
            "model": self.model, "data_dir": self.data_dir, "settings": self.settings,
            "categories": {c: self.figures(c) for c in self.categories()},
            "overall": self.figures(),
        }
        if details:
            # Compact rows: id, passed, calls made, why not (short).
            out["questions"] = [[r.id, int(r.ok), r.calls, r.reason[:100]]
                                if not r.error else [r.id, int(r.ok), r.calls,
                                                     f"error: {r.error[:100]}"]
                                for r in self.results]
        return out

    def write(self, path: str | Path, *, details: bool = True) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(details=details), ensure_ascii=False,
                                   separators=(",", ":") if details else None,
                                   indent=None if details else 2) + "\n", encoding="utf-8")
        return path


def summarize(rows: Sequence[QuestionResult]) -> dict[str, Any]:
    """Accuracy, valid-call rate, correction figures and timing over ``rows``."""
    n = len(rows)
    attempted = sum(r.attempted for r in rows)
    invalid = sum(r.invalid for r in rows)
    corrections = sum(r.corrections for r in rows)
    seconds = [r.seconds for r in rows]
    return {
        "questions": n,
        "passed": sum(r.ok for r in rows),
        "accuracy": round(sum(r.ok for r in rows) / n, 4) if n else 0.0,
        "attempted_calls": attempted,
        "valid_calls": attempted - invalid,
        "valid_call_rate": round((attempted - invalid) / attempted, 4) if attempted else None,
        "ungrounded_calls": sum(r.ungrounded for r in rows),
        "corrections": corrections,
        "correction_rate": round(sum(r.corrections > 0 for r in rows) / n, 4) if n else 0.0,
        "corrections_fixed": sum(r.fixed for r in rows),
        "repeats": sum(r.repeats for r in rows),
        "accuracy_counting_repeats": round(
            sum(bool(r.ok_counting_repeats) for r in rows) / n, 4) if n else 0.0,
        "errors": sum(r.error is not None for r in rows),
        "s_per_question": round(statistics.fmean(seconds), 3) if seconds else 0.0,
        "s_median": round(statistics.median(seconds), 3) if seconds else 0.0,
    }


def answer_question(answerer: Callable[[BfclQuestion], Attempt],
                    question: BfclQuestion) -> QuestionResult:
    """Run one question through ``answerer`` and score it."""
    started = time.perf_counter()
    try:
        attempt = answerer(question)
    except Exception as exc:  # one broken question must not end the evaluation
        attempt = Attempt(error=f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    calls = attempt.calls
    strict = attempt.calls_with_repeats if attempt.calls_with_repeats is not None else calls
    if question.category in FIRST_CALL_ONLY:
        calls, strict = calls[:1], strict[:1]
    result = check(question, calls)
    reason = "" if result.ok else (attempt.error or result.reason or "no call")
    return QuestionResult(id=question.id, category=question.category, ok=result.ok,
                          reason=reason, calls=calls,
                          attempted=attempt.attempted, invalid=attempt.invalid,
                          corrections=attempt.corrections, fixed=attempt.fixed,
                          seconds=round(seconds, 3), error=attempt.error,
                          repeats=attempt.repeats, ungrounded=attempt.ungrounded,
                          ok_counting_repeats=check(question, strict).ok)


def evaluate(answerer: Callable[[BfclQuestion], Attempt], *,
             categories: Iterable[str] | None = None, limit: int | None = None,
             data_dir: str | Path | None = None, name: str | None = None,
             settings: dict[str, Any] | None = None, model: str = "",
             progress: Callable[[QuestionResult], None] | None = None,
             questions: Sequence[BfclQuestion] | None = None, jobs: int = 1) -> BfclReport:
    """Score ``answerer`` on the first ``limit`` questions of each category.

    ``jobs`` > 1 answers questions in that many worker processes, each with its own copy
    of the answerer (a ``CallgateAnswerer`` built from a model spec); results keep the
    questions' order."""
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    if questions is None:
        questions = [q for c in (categories or CATEGORIES)
                     for q in load_questions(c, root, limit)]
    if jobs > 1:
        results = _answer_in_workers(answerer, questions, jobs, progress)
    else:
        results = []
        for question in questions:
            result = answer_question(answerer, question)
            results.append(result)
            if progress is not None:
                progress(result)
    label = name or getattr(answerer, "name", type(answerer).__name__)
    if settings is None and hasattr(answerer, "describe"):
        settings = answerer.describe()
    return BfclReport(name=label, settings={**(settings or {}), "limit": limit},
                      results=results, date=datetime.now(UTC).isoformat(timespec="seconds"),
                      data_dir=str(root), model=model)


_WORKER_ANSWERER: CallgateAnswerer | None = None


def _start_worker(kwargs: dict[str, Any], threads: int) -> None:
    global _WORKER_ANSWERER
    # The workers share the cores: each llama.cpp model gets its share, for decoding and
    # prompt processing alike, unless $CALLGATE_N_THREADS says otherwise.
    os.environ.setdefault("CALLGATE_N_THREADS", str(threads))
    _WORKER_ANSWERER = CallgateAnswerer(**kwargs)


def _answer_in_worker(question: BfclQuestion) -> QuestionResult:
    assert _WORKER_ANSWERER is not None
    return answer_question(_WORKER_ANSWERER, question)


def _answer_in_workers(answerer: Any, questions: Sequence[BfclQuestion], jobs: int,
                       progress: Callable[[QuestionResult], None] | None
                       ) -> list[QuestionResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    kwargs = getattr(answerer, "spawn_kwargs", None)
    if kwargs is None:
        raise ValueError("jobs > 1 needs a CallgateAnswerer built from a model spec "
                         "(a string such as 'bundled' or 'gguf:PATH')")
    # Spawned, not forked: the parent may hold a loaded model and background threads.
    context = multiprocessing.get_context("spawn")
    results: list[QuestionResult | None] = [None] * len(questions)
    threads = max(1, (os.cpu_count() or jobs) // jobs)
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker,
                             initargs=(kwargs, threads)) as pool:
        futures = {pool.submit(_answer_in_worker, q): i for i, q in enumerate(questions)}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if progress is not None:
                progress(result)
    return [r for r in results if r is not None]


def run_bfcl(model: Any = "bundled", *, tool_format: str = "react", grammar: bool | None = None,
             categories: Iterable[str] | None = None, limit: int | None = None,
             data_dir: str | Path | None = None, report: str | Path | None = None,
             tool_choice: str | None = None, max_steps: int = 5,
             react_options: dict[str, Any] | None = None,
             progress: Callable[[QuestionResult], None] | None = None,
             command: str = "", jobs: int = 1) -> BfclReport:
    """``callgate eval bfcl`` from Python: evaluate callgate on BFCL, optionally write JSON."""
    answerer = CallgateAnswerer(model, tool_format=tool_format, grammar=grammar,
                                tool_choice=tool_choice, max_steps=max_steps,
                                react_options=react_options)
    result = evaluate(answerer, categories=categories, limit=limit, data_dir=data_dir,
                      progress=progress, jobs=jobs, model=model if isinstance(model, str) else
                      type(model).__name__)
    result.command = command
    if report is not None:
        result.write(report)
    return result


# --- printing -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:5.1f}%"


def format_table(report: BfclReport) -> str:
    """Per-category figures as a plain-text table."""
    head = ("category", "n", "accuracy", "valid calls", "ungrounded", "corrected",
            "s/question")
    rows = []
    for cat in [*report.categories(), None]:
        f = report.figures(cat)
        rows.append((cat or "overall", str(f["questions"]), _pct(f["accuracy"]),
                     f"{_pct(f['valid_call_rate'])} ({f['valid_calls']}/{f['attempted_calls']})",
                     str(f.get("ungrounded_calls", 0)),
                     f"{_pct(f['correction_rate'])} ({f['corrections_fixed']}/"
                     f"{f['corrections']})", f"{f['s_per_question']:.2f}"))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                       for i, (h, w) in enumerate(zip(head, widths, strict=True)))]
    for r in rows:
        lines.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                               for i, (v, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


def print_progress(result: QuestionResult) -> None:
    mark = "ok  " if result.ok else "MISS"
    why = f" ({result.error or result.reason})" if not result.ok else ""
    print(f"{mark} {result.id:<28} {result.seconds:6.2f}s {json.dumps(result.calls)[:120]}"
          f"{why[:120]}", file=sys.stderr, flush=True)


def result_dict(result: QuestionResult) -> dict[str, Any]:
    return asdict(result)
