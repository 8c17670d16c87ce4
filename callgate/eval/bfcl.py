"""BFCL through callgate: each question's functions become tools, the agent's calls are scored.

Every question gets its own tool registry, built from its BFCL functions (schemas via
:func:`to_json_schema`; names through :func:`safe_name`, as model providers need them,
mapped back for scoring). A tool only acknowledges (``"ok"``): BFCL has no
implementations.

Which calls are the agent's answer (the rule, as BFCL scores a model's reply): every call
the model emitted in the turn, in order, in the final form it took after callgate's
correction round. A call sent back for correction is replaced by the corrected reply and
does not count; every other call counts whatever callgate did with it: calls that ran
(``ok``, ``error``, ``timeout``), repeats answered from the earlier result (``repeat``),
calls refused without a correction left (``invalid``, ``ungrounded``), invented extras not
run (``skipped``), ``denied`` and ``cancelled`` ones. Replies the parser could not read as
a call are not calls (BFCL's decoder would fail on them too). So a simple question answered
with two calls is wrong, and so is a parallel one with a repeated call. That *strict*
figure is the headline; next to it, *executed calls only* scores the calls that ran
(outcome ``ok``/``error``/``timeout``: repeats answered from cache and refused calls
dropped), which is what callgate's tools actually saw.

Scoring: BFCL's own AST checker (:func:`callgate.eval.bfcl_checker.official_check`, the
optional ``bfcl-eval`` package) when it is installed, else callgate's
:func:`callgate.eval.bfcl_checker.check`; the report names the checker, and counts the
questions where the two disagree when both ran. irrelevance and live_irrelevance are
correct iff no call is made, live_relevance iff at least one is.

The run of a question stops being read once both figures are settled (a call where none
is wanted, a second call on a one-call question, a call where one is wanted...) or when
the answer text would start: the text of the answer is not scored, so it is not
generated. Scored arguments are those the model wrote, as validated: defaults that
validation injects for omitted parameters are left out (the function would apply them
itself; BFCL scores what the model supplied).

Answerers other than callgate (plain prompting, ``create_agent``) live in
:mod:`callgate.eval.baselines` and plug into the same :func:`evaluate` loop; their calls
carry no outcome and count as run.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from langchain_core.tools import StructuredTool

from callgate.eval.bfcl_checker import check, official_available, official_check
from callgate.eval.bfcl_data import (
    CATEGORIES,
    NO_CALL_CATEGORIES,
    SOME_CALL_CATEGORIES,
    BfclQuestion,
    default_data_dir,
    load_questions,
    safe_name,
    to_json_schema,
)
from callgate.eval.bfcl_stats import (
    Score,
    SummaryRow,
    difference_interval,
    summary_rows,
    wilson,
    within_noise,
)
from callgate.eval.provenance import git_commit, machine
from callgate.tools.registry import ToolRegistry

__all__ = [
    "ACK",
    "RAN",
    "Attempt",
    "BfclReport",
    "CallgateAnswerer",
    "Difference",
    "QuestionResult",
    "UnknownQuestionError",
    "choose_questions",
    "diff_reports",
    "format_merged",
    "merge_reports",
    "evaluate",
    "format_diff",
    "format_table",
    "markdown_tables",
    "named_questions",
    "prompt_groups",
    "question_registry",
    "run_bfcl",
    "settled",
    "worker_tasks",
]

ACK = "ok"
# Outcomes of a call that ran (the tool saw it); every other outcome is a call not run.
RAN = frozenset({"ok", "error", "timeout"})


def settled(question: BfclQuestion, ran: int) -> bool:
    """Whether ``ran`` executed calls settle the strict and the executed-only verdict alike.

    More calls can only turn these verdicts one way: a call where none is wanted, one
    where one is wanted, more calls than the ground truth has."""
    if question.category in NO_CALL_CATEGORIES or question.category in SOME_CALL_CATEGORIES:
        return ran >= 1
    if "parallel" in question.category:
        return ran > len(question.ground_truth or [])
    return ran >= 2


# --- tools from a question ------------------------------------------------------------------


def _ack(**_: Any) -> str:
    return ACK


def question_registry(question: BfclQuestion) -> ToolRegistry:
    """A registry with the question's functions as tools that acknowledge with ``"ok"``.

    Names go through :func:`safe_name` (``.`` → ``_``): the registry takes only names that
    model providers accept; :func:`original_name` maps them back for scoring."""
    registry = ToolRegistry()
    for fn in question.functions:
        name = safe_name(fn["name"])
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

    ``calls``: every call the model emitted in the turn, in its final form, as
    ``{name: {arg: value}}`` dicts in the order made (the module docstring says which);
    ``outcomes``: what callgate did with each (``ok``, ``repeat``, ``invalid``...; None
    when the answerer does not say, e.g. a baseline: every call counts as run).
    ``attempted`` counts every call the model tried, those replaced by a correction and
    unreadable replies included; ``invalid`` those that failed validation or parsing;
    ``ungrounded`` schema-valid calls refused because their values were not in the
    question (grounding). ``corrections``: correction rounds sent; ``fixed``: corrections
    after which the next attempt was valid. ``invalid_errors``: why each invalid one was
    refused (the validator's or parser's message)."""

    calls: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    outcomes: list[str] | None = None
    attempted: int = 0
    invalid: int = 0
    invalid_errors: list[str] = field(default_factory=list)
    ungrounded: int = 0
    corrections: int = 0
    fixed: int = 0
    error: str | None = None
    note: str | None = None

    def executed(self) -> list[dict[str, dict[str, Any]]]:
        """The calls that ran (repeats answered from cache and refused calls left out)."""
        if self.outcomes is None:
            return list(self.calls)
        return [c for c, o in zip(self.calls, self.outcomes, strict=True) if o in RAN]


@dataclass
class QuestionResult:
    """One question scored. ``ok``: the strict verdict (every call of the turn) by the
    reference checker (``checker``); ``ok_executed``: the same checker on the calls that
    ran; ``own_ok``: callgate's own checker on the strict calls (for the agreement)."""

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
    invalid_errors: list[str] = field(default_factory=list)
    error: str | None = None
    split: str = ""
    outcomes: list[str] | None = None
    ok_executed: bool | None = None
    own_ok: bool | None = None
    checker: str = "own"
    ungrounded: int = 0

    @property
    def repeats(self) -> int:
        return sum(o == "repeat" for o in self.outcomes or [])


class Answerer(Protocol):
    """Answers BFCL questions with tool calls (callgate, plain prompting, create_agent...)."""

    name: str

    def __call__(self, question: BfclQuestion) -> Attempt: ...


ANSWER_TOKENS = 1  # the answer's length under the grammar (see CallgateAnswerer.graph)


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
            import inspect

            from callgate.graph.decide_react import ReactStrategy
            from callgate.prompts import react as prompts

            strategy = ReactStrategy(self.model, ToolRegistry(), grammar=self.grammar)
            # Every knob ReactStrategy takes (its signature, not a list kept by hand).
            knobs = [name for name in inspect.signature(ReactStrategy).parameters
                     if name not in ("model", "registry", "grammar")]
            out["react"] = {k: self.react_options.get(k, getattr(strategy, k, None))
                            for k in knobs}
            react = out["react"]
            terse = bool(react["terse_format"]) and self.grammar and not react["thought"]
            prompt = prompts.react_system([("tool", "description", {"type": "object"})],
                                          thoughts=not terse)
            out["react"]["prompt_sha1"] = hashlib.sha1(prompt.encode()).hexdigest()[:10]
            if self.grammar:
                out["react"]["answer_tokens"] = self.react_options.get("answer_tokens",
                                                                       ANSWER_TOKENS)
                out["react"]["calls_only"] = self.react_options.get("calls_only", True)
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

        registry = question_registry(question)
        strategy = make_strategy(self.model, registry, tool_format=self.tool_format,
                                 grammar=self.grammar if self.tool_format == "react" else None,
                                 tool_choice=self._forced(registry))
        if self.tool_format == "react" and self.grammar:
            # BFCL scores calls only, and under the grammar a chosen "Final Answer:" ends
            # the turn whatever text follows (a final answer parses as no call): the answer
            # is left unwritten (``calls_only``), and one token where a path still writes one.
            from callgate.graph.decide_react import ReactStrategy

            assert isinstance(strategy, ReactStrategy)  # make_strategy's for tool_format react
            strategy.answer_tokens = ANSWER_TOKENS
            strategy.calls_only = True
        for key, value in self.react_options.items():
            if not hasattr(strategy, key):
                raise ValueError(f"unknown ReAct option {key!r}")
            setattr(strategy, key, value)
        settings = LoopSettings(registry=registry, max_steps=self.max_steps, auto_approve=True,
                                grounding=self.grounding)
        return assemble(settings, strategy).compile(name="callgate-bfcl")

    def __call__(self, question: BfclQuestion) -> Attempt:
        graph = self.graph(question)
        attempt = Attempt(outcomes=[])
        made: list[tuple[dict[str, dict[str, Any]], str]] = []  # (call, outcome), in order
        step: list[dict[str, Any]] = []  # the last checked calls, not yet turned into events
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
                    update = update or {}
                    if node == "decide":
                        for call in update.get("pending_calls") or []:
                            raw_args[call["id"]] = call.get("args")
                    elif node == "validate":
                        step = self._validated(update, attempt, corrected)
                        corrected = False
                    elif node == "correct":
                        attempt.corrections += 1
                        corrected = True
                        step = []  # replaced by the corrected reply
                    elif node == "summarize":
                        for event in update.get("tool_events") or []:
                            args = strip_injected(event.get("args") or {},
                                                  raw_args.get(event.get("call_id")) or {})
                            made.append(({original_name(question, event["tool"]): args},
                                         event_outcome(event)))
                        step = []
                if settled(question, sum(o in RAN for _, o in made)):
                    break
        finally:
            stream.close()
        # Checked calls that never became events: a step with refused calls and no
        # correction left (the loop went straight to the answer). They are the model's
        # final form: they count, the refused ones and the valid ones not run alike.
        for call in step:
            if call.get("name"):
                args = strip_injected(call.get("args") or {}, raw_args.get(call["id"]) or {})
                outcome = call.get("outcome") or (
                    ("ungrounded" if call.get("kind") == "ungrounded" else "invalid")
                    if call.get("error") else "skipped")
                made.append(({original_name(question, call["name"]): args}, outcome))
        attempt.calls = [call for call, _ in made]
        attempt.outcomes = [outcome for _, outcome in made]
        return attempt

    @staticmethod
    def _validated(update: dict[str, Any], attempt: Attempt,
                   corrected: bool) -> list[dict[str, Any]]:
        """Count a validate step; where it refused calls, return the step's calls (they are
        the final form if no correction follows)."""
        checked = update.get("pending_calls") or []
        errors = update.get("validation_errors") or []
        loose = [e for e in errors if not e.get("id")]  # replies the parser could not read
        attempt.attempted += len(checked) + len(loose)
        # Refused calls carry an ``outcome`` (the loop's newer form) or an ``error`` with
        # ``kind`` "ungrounded" for grounding (the older one).
        ungrounded = [c for c in checked
                      if c.get("kind") == "ungrounded" or c.get("outcome") == "ungrounded"]
        invalid = [c for c in checked if c.get("outcome") == "invalid" or (
            c.get("error") and not c.get("outcome") and c.get("kind") != "ungrounded")]
        attempt.invalid += len(loose) + len(invalid)
        attempt.invalid_errors += [str(c.get("error") or "")[:300] for c in [*loose, *invalid]]
        attempt.ungrounded += len(ungrounded)
        valid = [c for c in checked if not c.get("error") and not c.get("skipped")
                 and c.get("outcome") in (None, "repeat")]
        if corrected and valid and not errors:
            attempt.fixed += 1
        return list(checked) if errors else []


def event_outcome(event: dict[str, Any]) -> str:
    """A tool event's outcome: its ``outcome`` field, else read from the older flags."""
    if event.get("outcome"):
        return str(event["outcome"])
    if event.get("repeat_of"):
        return "repeat"
    for flag in ("skipped", "denied"):
        if event.get(flag):
            return flag
    if event.get("timed_out"):
        return "timeout"
    if event.get("error") == "cancelled":
        return "cancelled"
    return "ok" if event.get("ok", True) else "error"


# --- the evaluation loop --------------------------------------------------------------------

SPLIT_PARTS = ("tune", "validate")
STRICT = ("strict: every call the model emitted in the turn, in its final form after the "
          "correction round (repeats, refused and skipped calls included), as BFCL scores a "
          "reply")
EXECUTED = ("executed calls only: the calls that ran (repeats answered from cache, refused "
            "and skipped calls dropped); not BFCL's rule")


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
    split: str = "all"
    commit: str = ""
    machine: dict[str, Any] = field(default_factory=dict)

    def categories(self) -> list[str]:
        return list(dict.fromkeys(r.category for r in self.results))

    def parts(self) -> list[str]:
        """The split parts present in this run (``tune``, ``validate``)."""
        return [p for p in SPLIT_PARTS if any(r.split == p for r in self.results)]

    def rows(self, category: str | None = None, part: str | None = None
             ) -> list[QuestionResult]:
        return [r for r in self.results
                if category in (None, r.category) and part in (None, r.split)]

    def score(self, category: str | None = None, part: str | None = None, *,
              executed: bool = False) -> Score:
        """The strict (or executed-only) score of a category and split part."""
        rows = self.rows(category, part)
        return Score(sum(bool(r.ok_executed if executed else r.ok) for r in rows), len(rows))

    def figures(self, category: str | None = None, part: str | None = None) -> dict[str, Any]:
        return summarize(self.rows(category, part))

    def summary(self, part: str | None = None, *,
                executed: bool = False) -> list[SummaryRow]:
        """BFCL's summary rows (non-live AST, live, irrelevance, relevance, overall)."""
        return summary_rows({c: self.score(c, part, executed=executed)
                             for c in self.categories()})

    def tune_vs_validate(self, category: str | None = None) -> dict[str, Any]:
        """Tune minus validate accuracy, its 95 % interval (Newcombe) and whether the
        difference is inside the noise (None where a part has no question)."""
        tune, validate = (self.score(category, p) for p in SPLIT_PARTS)
        if not tune.total or not validate.total:  # a part without questions: nothing to say
            return {"difference": None, "ci95": None, "within_noise": None}
        return {"difference": round(tune.accuracy - validate.accuracy, 4),
                "ci95": _interval(difference_interval(tune, validate)),
                "within_noise": within_noise(tune, validate)}

    def checker(self) -> str:
        return next((r.checker for r in self.results), "own")

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        parts = [None, *self.parts()]
        out: dict[str, Any] = {
            "name": self.name, "date": self.date, "command": self.command,
            "commit": self.commit, "model": self.model, "data_dir": self.data_dir,
            "split": self.split, "machine": self.machine, "settings": self.settings,
            "scoring": {"accuracy": STRICT, "accuracy_executed": EXECUTED,
                        "checker": self.checker(),
                        "ci95": "Wilson score interval (95 %)"},
            "categories": {c: {part or "all": self.figures(c, part) for part in parts}
                           for c in self.categories()},
            "tune_vs_validate": {c: self.tune_vs_validate(c) for c in self.categories()}
            if self.parts() == list(SPLIT_PARTS) else None,
            "summary": {part or "all": [_row_dict(row, executed)
                                        for row, executed in zip(
                                            self.summary(part),
                                            self.summary(part, executed=True), strict=True)]
                        for part in parts},
            "all_questions": self.figures(),
        }
        if details:
            out["questions"] = [
                {"id": r.id, "category": r.category, "split": r.split, "ok": int(r.ok),
                 "ok_executed": None if r.ok_executed is None else int(r.ok_executed),
                 "own_ok": None if r.own_ok is None else int(r.own_ok),
                 "calls": r.calls, "outcomes": r.outcomes, "s": r.seconds,
                 "why": f"error: {r.error[:100]}" if r.error else r.reason[:100],
                 **({"invalid": r.invalid_errors} if r.invalid_errors else {})}
                for r in self.results]
        return out

    def write(self, path: str | Path, *, details: bool = True) -> Path:
        """Write the JSON report: figures indented, one line per question."""
        data = _strict_json(self.to_dict(details=details))
        rows = data.pop("questions", None)
        text = json.dumps(data, ensure_ascii=False, indent=1)
        if rows is not None:
            body = ",\n".join("  " + json.dumps(r, ensure_ascii=False, separators=(",", ":"))
                              for r in rows)
            text = f'{text[:-2]},\n "questions": [\n{body}\n ]\n}}'
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
        return path


def _strict_json(value: Any) -> Any:
    """``value`` with every float that JSON cannot hold (``-inf`` as an option's value, NaN)
    written as a string: Python's json writes ``-Infinity``, which other readers refuse."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, dict):
        return {k: _strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict_json(v) for v in value]
    return value


def _row_dict(row: SummaryRow, executed: SummaryRow) -> dict[str, Any]:
    return {"name": row.name, "accuracy": _round(row.accuracy),
            "ci95": _interval(row.ci95), "accuracy_executed": _round(executed.accuracy),
            "how": row.how, "interval": row.interval, "categories": list(row.categories),
            "missing": list(row.missing)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [round(ci[0], 4), round(ci[1], 4)]


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=10, method="inclusive")[-1]


def summarize(rows: Sequence[QuestionResult]) -> dict[str, Any]:
    """Accuracy (strict, with its 95 % Wilson interval), the executed-only figure, the
    checkers' agreement, valid-call rate, corrections and seconds per question (rates and
    times are None over no questions)."""
    n = len(rows)
    passed = sum(r.ok for r in rows)
    attempted = sum(r.attempted for r in rows)
    invalid = sum(r.invalid for r in rows)
    corrections = sum(r.corrections for r in rows)
    seconds = [r.seconds for r in rows]
    executed = sum(bool(r.ok_executed) for r in rows)
    compared = [r for r in rows if r.own_ok is not None and r.checker == "official"]
    outcomes: dict[str, int] = {}
    for r in rows:
        for o in r.outcomes or []:
            outcomes[o] = outcomes.get(o, 0) + 1
    return {
        "questions": n,
        "passed": passed,
        "accuracy": round(passed / n, 4) if n else None,
        "ci95": _interval(wilson(passed, n)) if n else None,
        "passed_executed": executed,
        "accuracy_executed": round(executed / n, 4) if n else None,
        "checker_disagreements": sum(r.own_ok != r.ok for r in compared) if compared else None,
        "calls": sum(len(r.calls) for r in rows),
        "call_outcomes": dict(sorted(outcomes.items())),
        "attempted_calls": attempted,
        "valid_calls": attempted - invalid,
        "valid_call_rate": round((attempted - invalid) / attempted, 4) if attempted else None,
        "ungrounded_calls": sum(r.ungrounded for r in rows),
        "corrections": corrections,
        "correction_rate": round(sum(r.corrections > 0 for r in rows) / n, 4) if n else None,
        "corrections_fixed": sum(r.fixed for r in rows),
        "repeats": sum(r.repeats for r in rows),
        "errors": sum(r.error is not None for r in rows),
        "s_mean": round(statistics.fmean(seconds), 3) if seconds else None,
        "s_median": round(statistics.median(seconds), 3) if seconds else None,
        "s_p90": round(_p90(seconds), 3) if seconds else None,
    }


_OFFICIAL: bool | None = None


def _use_official(checker: str) -> bool:
    global _OFFICIAL
    if checker == "own":
        return False
    if _OFFICIAL is None:
        _OFFICIAL = official_available()
    if checker == "official" and not _OFFICIAL:
        raise ImportError("the official checker needs bfcl-eval: pip install --no-deps "
                          "bfcl-eval")
    return _OFFICIAL


def answer_question(answerer: Callable[[BfclQuestion], Attempt], question: BfclQuestion,
                    *, checker: str = "auto") -> QuestionResult:
    """Run one question through ``answerer`` and score it (strict, and executed-only).

    ``checker``: ``auto`` (BFCL's own when bfcl-eval is installed, else callgate's),
    ``official`` or ``own``."""
    started = time.perf_counter()
    try:
        attempt = answerer(question)
    except Exception as exc:  # one broken question must not end the evaluation
        attempt = Attempt(error=f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    official = _use_official(checker)
    score = official_check if official else check
    own = check(question, attempt.calls)
    strict = score(question, attempt.calls) if official else own
    # callgate's reason where both checkers agree (it names counts and values), else BFCL's.
    why = own.reason if own.ok == strict.ok else strict.reason
    reason = "" if strict.ok else (attempt.error or why or "no call")
    return QuestionResult(id=question.id, category=question.category, ok=strict.ok,
                          reason=reason, calls=attempt.calls, outcomes=attempt.outcomes,
                          attempted=attempt.attempted, invalid=attempt.invalid,
                          invalid_errors=attempt.invalid_errors,
                          corrections=attempt.corrections, fixed=attempt.fixed,
                          seconds=round(seconds, 3), error=attempt.error,
                          ungrounded=attempt.ungrounded, split=question.split,
                          ok_executed=score(question, attempt.executed()).ok,
                          own_ok=own.ok, checker="official" if official else "own")


class UnknownQuestionError(ValueError):
    """A question id that is not among the questions chosen (category, split)."""


def choose_questions(categories: Iterable[str] | None = None, *, limit: int | None = None,
                     data_dir: str | Path | None = None, split: str = "all",
                     ids: Collection[str] | None = None) -> list[BfclQuestion]:
    """The first ``limit`` questions of each category's ``split``; of those, only the ones
    ``ids`` names, when given (each must be among them)."""
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    questions = [q for c in (categories or CATEGORIES)
                 for q in load_questions(c, root, limit, split=split)]
    return named_questions(questions, ids)


def named_questions(questions: Sequence[BfclQuestion],
                    ids: Collection[str] | None) -> list[BfclQuestion]:
    """Of ``questions``, the ones ``ids`` names (all when None); each id must be there."""
    if ids is None:
        return list(questions)
    wanted = set(ids)
    missing = wanted - {q.id for q in questions}
    if missing:
        shown = ", ".join(sorted(missing)[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise UnknownQuestionError(
            f"no such BFCL question in the categories and split chosen: {shown}{more}")
    return [q for q in questions if q.id in wanted]


def evaluate(answerer: Callable[[BfclQuestion], Attempt], *,
             categories: Iterable[str] | None = None, limit: int | None = None,
             data_dir: str | Path | None = None, name: str | None = None,
             settings: dict[str, Any] | None = None, model: str = "",
             progress: Callable[[QuestionResult], None] | None = None,
             questions: Sequence[BfclQuestion] | None = None, jobs: int = 1,
             split: str = "all", checker: str = "auto",
             ids: Collection[str] | None = None) -> BfclReport:
    """Score ``answerer`` on the first ``limit`` questions of each category's ``split``,
    or the ``questions`` given; only those named in ``ids``, when given (the questions a
    change can touch).

    ``jobs`` > 1 answers questions in that many worker processes, each with its own copy
    of the answerer (a ``CallgateAnswerer`` built from a model spec); results keep the
    questions' order."""
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    if questions is None:
        questions = choose_questions(categories, limit=limit, data_dir=root, split=split,
                                     ids=ids)
    else:
        questions = named_questions(questions, ids)
    _use_official(checker)  # fail before the run, not after it
    if jobs > 1:
        results = _answer_in_workers(answerer, questions, jobs, progress, checker)
    else:
        answered: dict[int, QuestionResult] = {}
        for group in prompt_groups(questions):
            for index in group:
                answered[index] = answer_question(answerer, questions[index], checker=checker)
                if progress is not None:
                    progress(answered[index])
        results = [answered[index] for index in range(len(questions))]
    label: str = name if name else getattr(answerer, "name", type(answerer).__name__)
    if settings is None and hasattr(answerer, "describe"):
        settings = answerer.describe()
    chosen = {"ids": sorted(ids)} if ids is not None else {}
    return BfclReport(name=label, settings={**(settings or {}), "limit": limit, **chosen},
                      results=results, date=datetime.now(UTC).isoformat(timespec="seconds"),
                      data_dir=str(root), model=model, split=split, commit=git_commit(),
                      machine=machine())


_WORKER_ANSWERER: CallgateAnswerer | None = None


_WORKER_CHECKER = "auto"


def _start_worker(kwargs: dict[str, Any], threads: int, checker: str) -> None:
    global _WORKER_ANSWERER, _WORKER_CHECKER
    _WORKER_CHECKER = checker
    # The workers share the cores: each llama.cpp model gets its share, for decoding and
    # prompt processing alike, unless $CALLGATE_N_THREADS says otherwise.
    os.environ.setdefault("CALLGATE_N_THREADS", str(threads))
    _WORKER_ANSWERER = CallgateAnswerer(**kwargs)


def prompt_groups(questions: Sequence[BfclQuestion]) -> list[list[int]]:
    """The questions' indexes, those offering the same functions together (in the order
    each set is first seen): answered one after another by one model, they share the
    prompt's tool list, which llama.cpp then reads once and keeps in its KV cache. A third
    of the shared half repeats an earlier question's functions (live_multiple,
    live_irrelevance, live_simple); in separate workers, each would read the tool list
    again."""
    groups: dict[str, list[int]] = {}
    for index, question in enumerate(questions):
        key = json.dumps(question.functions, sort_keys=True)
        groups.setdefault(key, []).append(index)
    return list(groups.values())


def worker_tasks(questions: Sequence[BfclQuestion], jobs: int) -> list[list[int]]:
    """The ``prompt_groups`` as tasks for ``jobs`` workers: none larger than an even share
    of the questions, the largest first, so that no worker is left with a long group
    while the others are idle."""
    share = max(1, -(-len(questions) // jobs))
    tasks = [group[start:start + share] for group in prompt_groups(questions)
             for start in range(0, len(group), share)]
    return sorted(tasks, key=len, reverse=True)  # stable: equal sizes keep their order


def _answer_in_worker(questions: list[BfclQuestion]) -> list[QuestionResult]:
    assert _WORKER_ANSWERER is not None
    return [answer_question(_WORKER_ANSWERER, q, checker=_WORKER_CHECKER) for q in questions]


def _answer_in_workers(answerer: Any, questions: Sequence[BfclQuestion], jobs: int,
                       progress: Callable[[QuestionResult], None] | None,
                       checker: str = "auto") -> list[QuestionResult]:
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
                             initargs=(kwargs, threads, checker)) as pool:
        futures = {pool.submit(_answer_in_worker, [questions[i] for i in group]): group
                   for group in worker_tasks(questions, jobs)}
        for future in as_completed(futures):
            group = futures[future]
            for index, result in zip(group, _task_results(future, [questions[i] for i in group],
                                                          checker), strict=True):
                results[index] = result
                if progress is not None:
                    progress(result)
    return [r for r in results if r is not None]


def _task_results(future: Future[list[QuestionResult]], questions: list[BfclQuestion],
                  checker: str) -> list[QuestionResult]:
    """A worker task's results; where the worker died (``BrokenProcessPool``: a crash in
    llama.cpp, the memory killer), each of its questions is a scored miss with the error,
    so the other tasks' results still make the report."""
    try:
        return future.result()
    except Exception as exc:  # any way a worker can fail: the run must not lose the rest
        why = f"the worker answering it failed: {type(exc).__name__}: {exc}"

        def failed(_: BfclQuestion) -> Attempt:
            raise RuntimeError(why)

        return [answer_question(failed, q, checker=checker) for q in questions]


def run_bfcl(model: Any = "bundled", *, tool_format: str = "react", grammar: bool | None = None,
             categories: Iterable[str] | None = None, limit: int | None = None,
             data_dir: str | Path | None = None, report: str | Path | None = None,
             tool_choice: str | None = None, max_steps: int = 5,
             react_options: dict[str, Any] | None = None,
             progress: Callable[[QuestionResult], None] | None = None,
             command: str = "", jobs: int = 1, split: str = "all",
             checker: str = "auto") -> BfclReport:
    """``callgate eval bfcl`` from Python: evaluate callgate on BFCL, optionally write JSON."""
    answerer = CallgateAnswerer(model, tool_format=tool_format, grammar=grammar,
                                tool_choice=tool_choice, max_steps=max_steps,
                                react_options=react_options)
    result = evaluate(answerer, categories=categories, limit=limit, data_dir=data_dir,
                      progress=progress, jobs=jobs, split=split, checker=checker,
                      model=model if isinstance(model, str) else type(model).__name__)
    result.command = command
    if report is not None:
        result.write(report)
    return result


# --- printing -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:5.1f}%"


# The figures printed are computed from the counts, never from a report's rounded fractions:
# 0.5645 (of 0.56446) printed 56.5 where the run's accuracy rounds to 56.4.
def _acc(score: Score, *, markdown: bool = False) -> str:
    lo, hi = wilson(score.passed, score.total)
    if markdown:
        return f"{100 * score.accuracy:.1f} [{100 * lo:.1f}–{100 * hi:.1f}]"
    return f"{100 * score.accuracy:5.1f} [{100 * lo:4.1f}-{100 * hi:5.1f}]"


def _gap(tune: Score, validate: Score) -> str:
    if not tune.total or not validate.total:
        return "-"
    noise = " (noise)" if within_noise(tune, validate) else " (!)"
    return f"{100 * (tune.accuracy - validate.accuracy):+.1f}{noise}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                         for i, (v, w) in enumerate(zip(cells, widths, strict=True)))

    return [line(head), *(line(r) for r in rows)]


def format_table(report: BfclReport) -> str:
    """Per-category figures, then BFCL's summary rows, as plain-text tables."""
    parts = report.parts() if len(report.parts()) > 1 else []
    noise = ["tune-validate"] if parts else []
    head = ["category", "n", "accuracy % [95% CI]", "executed-only %",
            *(f"{p} %" for p in parts), *noise, "valid calls", "corrected", "median s",
            "p90 s"]
    rows = []
    for cat in [*report.categories(), None]:
        f = report.figures(cat)
        rows.append([cat or "all questions", str(f["questions"]), _acc(report.score(cat)),
                     f"{100 * report.score(cat, executed=True).accuracy:.1f}",
                     *(_acc(report.score(cat, p)) if report.rows(cat, p) else "-"
                       for p in parts),
                     *([_gap(*(report.score(cat, p) for p in parts))] if parts else []),
                     f"{_pct(f['valid_call_rate'])} ({f['valid_calls']}/{f['attempted_calls']})",
                     f"{f['corrections_fixed']}/{f['corrections']}",
                     f"{f['s_median']:.2f}", f"{f['s_p90']:.2f}"])
    lines = _table(head, rows)
    head = ["BFCL summary", "accuracy % [95% CI]", "executed-only %",
            *(f"{p} %" for p in parts)]
    summary = []
    by_part = {p: report.summary(p) for p in parts}
    for row, executed in zip(report.summary(), report.summary(executed=True), strict=True):
        def cell(r: Any) -> str:
            if r.accuracy is None:
                return "N/A"
            return f"{100 * r.accuracy:5.1f} [{100 * r.ci95[0]:4.1f}-{100 * r.ci95[1]:5.1f}]"

        summary.append([row.name, cell(row), "N/A" if executed.accuracy is None else
                        f"{100 * executed.accuracy:.1f}",
                        *(cell(next(r for r in by_part[p] if r.name == row.name))
                          for p in parts)])
    lines += ["", *_table(head, summary),
              f"accuracy: {STRICT}; checker: {report.checker()}",
              *(["tune-validate: (noise) = inside the 95% interval of the difference, "
                 "(!) = outside it"] if parts else []),
              "N/A: a category of the row was not run (as BFCL shows it)"]
    return "\n".join(lines)


def markdown_tables(report: dict[str, Any]) -> str:
    """A written BFCL report (:meth:`BfclReport.write`) as the README's two Markdown tables:
    a row per category and one for all questions, then BFCL's summary rows. Accuracies,
    intervals and the tune − validate gaps come from the report's per-question verdicts;
    the calls, corrections and seconds are the report's own figures."""
    if not isinstance(report, dict) or "all_questions" not in report:
        raise ValueError("not a report of 'callgate eval bfcl'")
    questions = report.get("questions")
    if not questions:
        raise ValueError("the report lists no questions (it was written without them)")
    categories = list(report.get("categories") or {})

    def score(category: str | None = None, part: str | None = None, *,
              executed: bool = False) -> Score:
        return verdict_score(questions, category, part,
                             key="ok_executed" if executed else "ok")

    parts = [p for p in SPLIT_PARTS if any(q.get("split") == p for q in questions)]
    split = parts == list(SPLIT_PARTS)

    def cells(*values: str) -> str:
        return "| " + " | ".join(values) + " |"

    head = ["category", "n", "accuracy % [95% CI]",
            *(["tune %", "validate %", "tune − validate"] if split else []),
            "executed only %", "schema-valid calls", "corrections fixed", "median / p90 s"]
    lines = [cells(*head), "|" + "---|" * len(head)]
    for category in [*categories, None]:
        f = report["categories"][category]["all"] if category else report["all_questions"]
        valid = ("-" if f["valid_call_rate"] is None else
                 f"{100 * f['valid_call_rate']:.1f}% ({f['valid_calls']}/{f['attempted_calls']})")
        tune, validate = score(category, "tune"), score(category, "validate")
        lines.append(cells(
            category or "all", str(f["questions"]), _acc(score(category), markdown=True),
            *([_acc(tune, markdown=True) if tune.total else "-",
               _acc(validate, markdown=True) if validate.total else "-",
               _gap(tune, validate)] if split else []),
            f"{100 * score(category, executed=True).accuracy:.1f}", valid,
            f"{f['corrections_fixed']}/{f['corrections']}",
            f"{f['s_median']:.2f} / {f['s_p90']:.2f}"))

    def accuracy(row: SummaryRow, interval: bool = True) -> str:
        if row.accuracy is None:
            return "N/A"
        if not interval or row.ci95 is None:
            return f"{100 * row.accuracy:.1f}"
        low, high = row.ci95
        return f"{100 * row.accuracy:.1f} [{100 * low:.1f}–{100 * high:.1f}]"

    def summary(part: str | None = None, executed: bool = False) -> list[SummaryRow]:
        return summary_rows({c: score(c, part, executed=executed) for c in categories})

    head = ["BFCL summary", "how", "accuracy % [95% CI]",
            *(["tune %", "validate %"] if split else []), "executed only %"]
    lines += ["", cells(*head), "|" + "---|" * len(head)]
    by_part = [summary(p) for p in (parts if split else [])]
    for i, (row, executed) in enumerate(zip(summary(), summary(executed=True), strict=True)):
        lines.append(cells(row.name, row.how, accuracy(row),
                           *(accuracy(rows[i]) for rows in by_part),
                           accuracy(executed, interval=False)))
    return "\n".join(lines)


def print_progress(result: QuestionResult) -> None:
    mark = "ok  " if result.ok else "MISS"
    why = f" ({result.error or result.reason})" if not result.ok else ""
    print(f"{mark} {result.id:<28} {result.seconds:6.2f}s {json.dumps(result.calls)[:120]}"
          f"{why[:120]}", file=sys.stderr, flush=True)


def result_dict(result: QuestionResult) -> dict[str, Any]:
    return asdict(result)


# --- two reports side by side -----------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One category (or summary row) in one split part: B minus A, and whether that is
    inside the noise (Newcombe's 95 % interval of the difference contains 0). Where both
    reports list their questions, both scores are over the questions they share, and
    ``up``/``down`` count those that turned right/wrong."""

    row: str
    part: str
    before: Score
    after: Score
    difference: float
    ci95: tuple[float, float]
    within_noise: bool
    up: int | None = None
    down: int | None = None


def _shared_scores(before: dict[str, Any], after: dict[str, Any]
                   ) -> dict[tuple[str, str], tuple[Score, Score, int, int]]:
    """Per (category, part): both reports' scores over the questions both answered, and
    how many went up and down."""
    old = {q["id"]: q for q in before.get("questions") or []}
    tally: dict[tuple[str, str], list[int]] = {}
    for q in after.get("questions") or []:
        if q["id"] not in old:
            continue
        was, now = bool(old[q["id"]]["ok"]), bool(q["ok"])
        for part in ("all", q.get("split") or ""):
            if part:
                counts = tally.setdefault((q["category"], part), [0, 0, 0, 0, 0])
                counts[0] += was
                counts[1] += now
                counts[2] += 1
                counts[3] += now and not was
                counts[4] += was and not now
    return {key: (Score(a, n), Score(b, n), up, down)
            for key, (a, b, n, up, down) in tally.items()}


def diff_reports(before: dict[str, Any], after: dict[str, Any]) -> list[Difference]:
    """Per category and split part (``all``, ``tune``, ``validate``), ``after`` minus
    ``before`` (two ``callgate eval bfcl`` JSON reports): the check that a change decided
    on tune also shows on validate, and is more than noise. A report of some questions
    only (``--ids``) is compared on those questions."""
    out: list[Difference] = []
    if before.get("questions") and after.get("questions"):
        shared = _shared_scores(before, after)
        categories = list(dict.fromkeys(category for category, _ in shared))
        order = [(c, p) for c in categories for p in ("all", *SPLIT_PARTS) if (c, p) in shared]
        for category, part in order:
            a, b, up, down = shared[category, part]
            low, high = difference_interval(b, a)
            out.append(Difference(category, part, a, b, b.accuracy - a.accuracy,
                                  (low, high), low <= 0.0 <= high, up, down))
        return out
    for category, parts in after.get("categories", {}).items():
        old_parts = before.get("categories", {}).get(category, {})
        for part, figures in parts.items():
            old = old_parts.get(part)
            if not old or not old.get("questions") or not figures.get("questions"):
                continue
            a = Score(old["passed"], old["questions"])
            b = Score(figures["passed"], figures["questions"])
            low, high = difference_interval(b, a)
            out.append(Difference(category, part, a, b, b.accuracy - a.accuracy,
                                  (low, high), low <= 0.0 <= high))
    return out


def format_diff(differences: Sequence[Difference]) -> str:
    """The differences as a plain-text table."""
    rows = [[d.row, d.part, f"{100 * d.before.accuracy:.1f} ({d.before.passed}/"
             f"{d.before.total})", f"{100 * d.after.accuracy:.1f} ({d.after.passed}/"
             f"{d.after.total})", f"{100 * d.difference:+.1f}",
             f"[{100 * d.ci95[0]:+.1f}, {100 * d.ci95[1]:+.1f}]",
             "-" if d.up is None else f"{d.up} / {d.down}",
             "noise" if d.within_noise else "REAL"] for d in differences]
    head = ["category", "part", "before %", "after %", "change", "95% CI", "up / down",
            "verdict"]
    lines = _table(head, rows) if rows else ["(no category in both reports)"]
    return "\n".join([*lines, "verdict: noise = the 95% interval of the change contains 0"])


def merge_reports(base: dict[str, Any], overlays: Sequence[dict[str, Any]]
                  ) -> dict[str, dict[str, Score]]:
    """Per split part (``all``, ``tune``, ``validate``) and category, the scores of ``base``
    (a full run's report) with the verdicts of ``overlays`` (reports of the questions a
    change can touch, ``--ids``) put in, later ones last: what the full run would score
    with the change, derived without running the questions it cannot touch."""
    verdicts = {q["id"]: q for q in base.get("questions") or []}
    for overlay in overlays:
        for q in overlay.get("questions") or []:
            if q["id"] not in verdicts:
                raise ValueError(f"question {q['id']} is not in the base report")
            verdicts[q["id"]] = q
    scores: dict[str, dict[str, Score]] = {}
    for part in ("all", *SPLIT_PARTS):
        for category in CATEGORIES:
            score = verdict_score(verdicts.values(), category, None if part == "all" else part)
            if score.total:
                scores.setdefault(part, {})[category] = score
    return scores


def verdict_score(questions: Iterable[dict[str, Any]], category: str | None = None,
                  part: str | None = None, *, key: str = "ok") -> Score:
    """The score of a written report's questions (their ``key`` verdicts) in a category and
    split part (None: all of them)."""
    rows = [q for q in questions if category in (None, q["category"])
            and part in (None, q.get("split"))]
    return Score(sum(bool(q.get(key)) for q in rows), len(rows))


def format_merged(scores: dict[str, dict[str, Score]]) -> str:
    """Merged scores (:func:`merge_reports`) per category and BFCL's summary rows, each
    part a column with its 95% interval."""
    parts = [p for p in ("all", *SPLIT_PARTS) if p in scores]

    def _pc(value: float) -> str:
        return f"{100 * value:.1f}"

    def cell(score: Score | None) -> str:
        if score is None or not score.total:
            return "-"
        low, high = wilson(score.passed, score.total)
        return f"{_pc(score.accuracy)} [{_pc(low)}-{_pc(high)}]"

    categories = [c for c in CATEGORIES if any(c in scores[p] for p in parts)]
    rows = [[c, str(scores["all"][c].total if c in scores.get("all", {}) else "-"),
             *(cell(scores[p].get(c)) for p in parts)] for c in categories]
    lines = _table(["category", "n", *(f"{p} %" for p in parts)], rows)
    summaries = {p: {r.name: r for r in summary_rows(scores[p])} for p in parts}
    names = list(summaries[parts[0]])
    summary = [[name, *(f"{_pc(r.accuracy)} [{_pc(r.ci95[0])}-{_pc(r.ci95[1])}]"
                        if (r := summaries[p][name]).accuracy is not None and r.ci95
                        else "N/A" for p in parts)] for name in names]
    return "\n".join([*lines, "", *_table(["BFCL summary", *(f"{p} %" for p in parts)],
                                           summary)])
