"""Accuracy with its noise: Wilson intervals, differences, and BFCL's summary rows.

Hand-written (a few lines each) rather than a scipy/statsmodels dependency for two formulas:
the Wilson score interval for one accuracy and Newcombe's interval (method 10, built from
two Wilson intervals) for the difference of two independent accuracies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile

NON_LIVE_AST = ("simple_python", "multiple", "parallel", "parallel_multiple")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
IRRELEVANCE = ("irrelevance", "live_irrelevance")
RELEVANCE = ("live_relevance",)


@dataclass(frozen=True)
class Score:
    """``passed`` of ``total`` questions."""

    passed: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.passed / self.total if self.total else 0.0


def wilson(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``passed / total`` (95 % by default)."""
    if total <= 0:
        return (0.0, 1.0)
    p = passed / total
    denominator = 1 + z * z / total
    center = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return (max(0.0, center - half), min(1.0, center + half))


def difference_interval(a: Score, b: Score, z: float = Z95) -> tuple[float, float]:
    """Newcombe's 95 % interval for ``a.accuracy - b.accuracy`` (independent samples)."""
    pa, pb = a.accuracy, b.accuracy
    la, ua = wilson(a.passed, a.total, z)
    lb, ub = wilson(b.passed, b.total, z)
    d = pa - pb
    return (d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2),
            d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2))


def within_noise(a: Score, b: Score) -> bool:
    """Whether two accuracies differ by no more than their noise (the 95 % interval of the
    difference contains 0): such a difference is not evidence of a change."""
    low, high = difference_interval(a, b)
    return low <= 0.0 <= high


@dataclass(frozen=True)
class SummaryRow:
    """One of BFCL's summary rows. ``accuracy`` is None where a category it needs was not
    run (BFCL shows "N/A" there); ``ci95`` is Wilson's for a pooled row, else a normal
    approximation of the mean of independent accuracies (``interval`` says which)."""

    name: str
    accuracy: float | None
    ci95: tuple[float, float] | None
    categories: tuple[str, ...]
    how: str
    interval: str
    missing: tuple[str, ...] = ()


def _variance(score: Score) -> float:
    # Agresti–Coull-style (x+2)/(n+4) keeps the variance of 0 % and 100 % above zero.
    p = (score.passed + 2) / (score.total + 4)
    return p * (1 - p) / score.total if score.total else 0.25


def _mean(parts: Sequence[tuple[float, float]]) -> tuple[float, tuple[float, float]]:
    """(mean of accuracies, normal-approximation interval) for (accuracy, variance) parts."""
    k = len(parts)
    mean = sum(acc for acc, _ in parts) / k
    half = Z95 * math.sqrt(sum(var for _, var in parts)) / k
    return mean, (max(0.0, mean - half), min(1.0, mean + half))


def summary_rows(scores: Mapping[str, Score]) -> list[SummaryRow]:
    """BFCL v4's summary rows from per-category scores (``eval_runner_helper``'s rules).

    * non-live AST: unweighted mean of simple, multiple, parallel, parallel_multiple
      (BFCL's simple also averages simple_java and simple_javascript, which this data has
      not: simple = simple_python);
    * live: live_simple, live_multiple, live_parallel, live_parallel_multiple weighted by
      their question counts (the pooled accuracy);
    * irrelevance: unweighted mean of irrelevance and live_irrelevance;
      relevance: live_relevance;
    * overall (single-turn): BFCL weighs non-live, live and irrelevance 10 % each (plus
      multi-turn 30 % and agentic 40 %, not single-turn): renormalised, their mean.
    """
    rows: list[SummaryRow] = []
    stats: dict[str, tuple[float, float]] = {}  # row name -> (accuracy, variance)

    def missing(cats: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(c for c in cats if c not in scores or not scores[c].total)

    def unweighted(name: str, cats: tuple[str, ...], how: str) -> None:
        gone = missing(cats)
        if gone:
            rows.append(SummaryRow(name, None, None, cats, how, "normal approximation", gone))
            return
        parts = [(scores[c].accuracy, _variance(scores[c])) for c in cats]
        acc, ci = _mean(parts)
        stats[name] = (acc, sum(v for _, v in parts) / len(parts) ** 2)
        rows.append(SummaryRow(name, acc, ci, cats, how, "normal approximation"))

    def pooled(name: str, cats: tuple[str, ...], how: str) -> None:
        gone = missing(cats)
        if gone:
            rows.append(SummaryRow(name, None, None, cats, how, "wilson", gone))
            return
        total = Score(sum(scores[c].passed for c in cats), sum(scores[c].total for c in cats))
        stats[name] = (total.accuracy, _variance(total))
        rows.append(SummaryRow(name, total.accuracy, wilson(total.passed, total.total), cats,
                               how, "wilson"))

    unweighted("non_live_ast", NON_LIVE_AST, "unweighted mean of the categories")
    pooled("live", LIVE_AST, "weighted by question counts")
    unweighted("irrelevance", IRRELEVANCE, "unweighted mean of the categories")
    pooled("relevance", RELEVANCE, "live_relevance")
    parts = ("non_live_ast", "live", "irrelevance")
    cats = NON_LIVE_AST + LIVE_AST + IRRELEVANCE
    how = "mean of non_live_ast, live and irrelevance (BFCL's 10/10/10 weights)"
    if all(p in stats for p in parts):
        acc, ci = _mean([stats[p] for p in parts])
        rows.append(SummaryRow("overall", acc, ci, cats, how, "normal approximation"))
    else:
        rows.append(SummaryRow("overall", None, None, cats, how, "normal approximation",
                               missing(cats)))
    return rows
