"""Robustness benchmark: the parser and the sanitizer over a corpus of real model outputs.

Corpus format (JSON Lines, like the packaged ``data/model-outputs/dev.jsonl``): one case a line,
``{"id", "output", "expect": {"kind": "tool_calls", "calls": [{name, args}]} |
{"kind": "final", "final_contains": "..."} | {"kind": "invalid"}, "note"?}``.

A case passes when :func:`parse_model_output` gives the expected outcome: exactly the
expected calls, a final answer containing the expected text, or a correctable error.
Independently, every text a user could see (the final answer, and the sanitized output as
it would stream) is searched for tool-call markup; each marker found is a leak. The goal
is 100% passed and 0 leaks.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callgate.parsing import ParsedOutput, parse_model_output
from callgate.sanitize import sanitize

__all__ = [
    "PACKAGED_CORPUS",
    "CaseResult",
    "OutputsReport",
    "default_corpus",
    "find_leaks",
    "format_outputs",
    "load_corpus",
    "run_outputs",
]

KINDS = ("tool_calls", "final", "invalid")

PACKAGED_CORPUS = Path(__file__).resolve().parent / "data" / "model-outputs" / "dev.jsonl"
"""The corpus of real-world output shapes that ships with callgate (see its README)."""

# Markup that must never reach a user (any case).
INLINE_MARKERS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
                  "<think>", "</think>", "<thinking>", "</thinking>", "[TOOL_CALLS]",
                  "[ARGS]", "<|", "<｜", "✿FUNCTION✿", "✿ARGS✿", "✿RESULT✿",
                  "✿RETURN✿", "</s>", "[INST]", "[/INST]")
LINE_MARKER_RE = re.compile(
    r"^[ \t]*(?:thought|action|action[ _]input|observation|final[ _]answer)[ \t]*:",
    re.IGNORECASE | re.MULTILINE,
)


def default_corpus() -> Path:
    """``$CALLGATE_SHARED_DATA/model-outputs/dev.jsonl`` when that variable names a (larger)
    data folder, else the corpus that ships with the package (:data:`PACKAGED_CORPUS`)."""
    env = os.environ.get("CALLGATE_SHARED_DATA")
    return Path(env) / "model-outputs" / "dev.jsonl" if env else PACKAGED_CORPUS


def load_corpus(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL corpus; each case needs ``id``, ``output`` and ``expect.kind``."""
    path = Path(path)
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        kind = (case.get("expect") or {}).get("kind") if isinstance(case, dict) else None
        if kind not in KINDS or "output" not in case:
            raise ValueError(f"{path}:{number}: a case needs 'output' and 'expect.kind' in "
                             f"{', '.join(KINDS)}")
        case.setdefault("id", f"line-{number}")
        cases.append(case)
    return cases


def find_leaks(text: str | None) -> list[str]:
    """The tool-call markers found in ``text`` (one entry per occurrence)."""
    if not text:
        return []
    low = text.lower()
    found = [m for m in INLINE_MARKERS for _ in range(low.count(m.lower()))]
    found += [m.group(0).strip() for m in LINE_MARKER_RE.finditer(text)]
    return found


@dataclass
class CaseResult:
    id: str
    kind: str
    passed: bool
    got: str
    why: str = ""
    leaks: list[str] = field(default_factory=list)


def _judge(case: dict[str, Any], result: ParsedOutput) -> str:
    """Why ``result`` does not meet the case's expectation ("" if it does)."""
    expect = case["expect"]
    outcomes = [bool(result.calls), result.final_answer is not None, result.error is not None]
    if outcomes.count(True) != 1:
        return f"not exactly one outcome: {result!r}"
    if result.kind != expect["kind"]:
        detail = result.error or result.final_answer or json.dumps(result.calls)
        return f"expected {expect['kind']}, got {result.kind}: {detail[:120]}"
    if expect["kind"] == "tool_calls" and result.calls != expect.get("calls"):
        return f"calls {json.dumps(result.calls)[:160]} != {json.dumps(expect.get('calls'))}"
    if expect["kind"] == "final":
        want = expect.get("final_contains", "")
        if want not in (result.final_answer or ""):
            return f"final answer {result.final_answer!r:.120} lacks {want!r}"
    if expect["kind"] == "invalid" and not (result.error or "").strip():
        return "empty error message"
    return ""


def check_case(case: dict[str, Any]) -> CaseResult:
    """Parse one output, judge it, and look for markup in what a user would see."""
    result = parse_model_output(case["output"], case.get("tool_names"))
    why = _judge(case, result)
    leaks = find_leaks(result.final_answer) + find_leaks(sanitize(case["output"]))
    return CaseResult(id=str(case["id"]), kind=case["expect"]["kind"], passed=not why,
                      got=result.kind, why=why, leaks=leaks)


@dataclass
class OutputsReport:
    corpus: str
    results: list[CaseResult]
    seconds: float

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def leaks(self) -> int:
        return sum(len(r.leaks) for r in self.results)

    @property
    def ok(self) -> bool:
        return self.passed == len(self.results) and self.leaks == 0

    def per_kind(self) -> dict[str, dict[str, Any]]:
        out = {}
        for kind in KINDS:
            rows = [r for r in self.results if r.kind == kind]
            if rows:
                passed = sum(r.passed for r in rows)
                out[kind] = {"cases": len(rows), "passed": passed,
                             "pass_rate": round(passed / len(rows), 4)}
        return out

    def to_dict(self) -> dict[str, Any]:
        n = len(self.results)
        return {
            "corpus": self.corpus, "cases": n, "passed": self.passed,
            "pass_rate": round(self.passed / n, 4) if n else 0.0,
            "leaked_markers": self.leaks, "per_kind": self.per_kind(),
            "ms_per_case": round(1000 * self.seconds / n, 3) if n else 0.0,
            "failures": [{"id": r.id, "why": r.why} for r in self.results if not r.passed],
            "leaks": [{"id": r.id, "markers": r.leaks} for r in self.results if r.leaks],
        }


def run_outputs(path: str | Path | None = None,
                cases: Iterable[dict[str, Any]] | None = None) -> OutputsReport:
    """Run the benchmark over a corpus file (default: :func:`default_corpus`) or cases."""
    source = "(cases)"
    if cases is None:
        path = Path(path) if path is not None else default_corpus()
        if not path.is_file():
            raise FileNotFoundError(f"model-output corpus not found: {path}")
        cases, source = load_corpus(path), str(path)
    started = time.perf_counter()
    results = [check_case(case) for case in cases]
    return OutputsReport(corpus=source, results=results,
                         seconds=time.perf_counter() - started)


def format_outputs(report: OutputsReport) -> str:
    """Pass rate per kind, leaks, and each failure."""
    n = len(report.results)
    lines = [f"corpus: {report.corpus}"]
    for kind, f in report.per_kind().items():
        lines.append(f"  {kind:<11} {f['passed']:>3}/{f['cases']:<3} passed "
                     f"({100 * f['pass_rate']:.1f}%)")
    rate = 100 * report.passed / n if n else 0.0
    lines.append(f"  {'all':<11} {report.passed:>3}/{n:<3} passed ({rate:.1f}%)")
    lines.append(f"leaked markers in user-facing text: {report.leaks}")
    for r in report.results:
        if not r.passed:
            lines.append(f"FAIL {r.id}: {r.why}")
        if r.leaks:
            lines.append(f"LEAK {r.id}: {', '.join(r.leaks)}")
    return "\n".join(lines)
