"""Rank candidate continuations of a prompt by the model's own probability.

Greedy grammar-constrained decoding commits to a value's first token before it sees the
rest: offered the spans of "restaurants in Manhattan", SmolLM2 may start "Man", then close
the string after "Manchester" is ruled out, or pick "San" and stop. Ranking the complete
candidates instead compares whole values — ``P(value, then the end of the value)`` — as
beam search would, but exactly: a best-first search over the token trie of the candidates.
Log-probabilities only fall along a path, so the first complete candidate taken from the
queue is the most likely one, the next the second, and so on; each node costs one decode.

llama-cpp-python decodes and samples but has no such ranking (its ``logprobs`` need
``logits_all=True``, a 4096 x 49152 float matrix for the bundled model, and score one
sampled text, not a set), so it is written here over its decode calls.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Ranked", "TokenTrie", "best_first", "log_softmax"]


@dataclass(frozen=True)
class Ranked:
    """One candidate and its log-probability, the end of the value included."""

    text: str
    logprob: float


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # candidates whose tokens end here


class TokenTrie:
    """The candidates' token sequences, sharing common prefixes."""

    def __init__(self, tokenized: Sequence[Sequence[int]]) -> None:
        self.root = _Node()
        for index, tokens in enumerate(tokenized):
            if not tokens:
                continue  # an empty continuation is not a value
            node = self.root
            for token in tokens:
                node = node.children.setdefault(int(token), _Node())
            node.ends.append(index)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities of one row of logits."""
    top = float(logits.max())
    return logits - (top + float(np.log(np.exp(logits - top).sum())))


def best_first(
    texts: Sequence[str],
    trie: TokenTrie,
    root: np.ndarray,
    expand: Callable[[tuple[int, ...]], np.ndarray],
    end_ids: np.ndarray,
    *,
    until: Callable[[Ranked], bool] | None = None,
    max_expansions: int = 64,
) -> list[Ranked]:
    """Candidates in falling probability until ``until`` accepts one (or all are ranked,
    or ``max_expansions`` decodes are spent).

    ``root``: log-probabilities of the first token after the prompt; ``expand(path)``: the
    log-probabilities after the prompt followed by ``path``; ``end_ids``: the tokens that
    end a value (a string's closing quote, the comma after a number)."""
    queue: list[tuple[float, int, tuple[int, ...], _Node | None, int]] = []
    order = 0  # ties pop in insertion order

    def push_children(node: _Node, path: tuple[int, ...], logprobs: np.ndarray,
                      base: float) -> None:
        nonlocal order
        for token, child in node.children.items():
            order += 1
            heapq.heappush(queue, (-(base + float(logprobs[token])), order, (*path, token),
                                   child, -1))

    push_children(trie.root, (), root, 0.0)
    ranked: list[Ranked] = []
    expansions = 0
    while queue:
        negative, _, path, node, index = heapq.heappop(queue)
        if node is None:  # a complete candidate: its score is final
            ranked.append(Ranked(texts[index], -negative))
            if until is not None and until(ranked[-1]):
                break
            continue
        if expansions >= max_expansions:
            # Out of budget: what is complete so far, best first (no longer exact).
            rest = sorted((q for q in queue if q[3] is None), key=lambda q: q[0])
            ranked += [Ranked(texts[q[4]], -q[0]) for q in rest]
            break
        expansions += 1
        logprobs = expand(path)
        if node.ends:
            done = -negative + float(np.logaddexp.reduce(logprobs[end_ids]))
            for index in node.ends:
                order += 1
                heapq.heappush(queue, (-done, order, path, None, index))
        push_children(node, path, logprobs, -negative)
    return ranked
