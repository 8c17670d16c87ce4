"""Greedy grammar-constrained decoding that asks the grammar about the model's choice first.

llama-cpp-python applies a grammar to every token of the vocabulary (49,152 for SmolLM2)
before each greedy pick: about a tenth of a short BFCL question's time on one core. Greedy
decoding only needs the best token the grammar allows, and when the best token of all is
allowed, it is that one (the grammar only removes candidates). So the grammar is asked
about that one token first, as llama.cpp's own ``common_sampler_sample`` does, then about
the next best ones, and it is applied to the whole vocabulary only when they are refused.
llama-cpp-python has no such path (0.3.x), hence this subclass; every other kind of
sampling stays llama-cpp-python's.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import Llama, LlamaGrammar, LogitsProcessorList

__all__ = ["GreedyGrammarLlama"]

# Tokens of highest logit checked one by one before the grammar filters the vocabulary.
RUNNERS_UP = 16
_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class _Grammar:
    """A llama.cpp grammar sampler used as a filter: which tokens it allows, and its state
    advanced by the tokens chosen."""

    def __init__(self, llama: Llama, grammar: LlamaGrammar) -> None:
        # LlamaGrammar keeps its GBNF text and root in these attributes; llama-cpp-python's
        # own LlamaSampler.add_grammar reads them the same way.
        self.sampler = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self.sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        n_vocab = llama.n_vocab()
        self._all = (llama_cpp.llama_token_data * n_vocab)()
        self._all_view = np.ctypeslib.as_array(self._all).view(_TOKEN_DATA)
        self._all_view["id"] = np.arange(n_vocab, dtype=np.intc)
        self._one = (llama_cpp.llama_token_data * 1)()

    def _apply(self, data: ctypes.Array[Any], size: int) -> None:
        candidates = llama_cpp.llama_token_data_array(data, size, -1, False)
        llama_cpp.llama_sampler_apply(self.sampler, ctypes.byref(candidates))

    def allows(self, token: int) -> bool:
        self._one[0] = llama_cpp.llama_token_data(token, 0.0, 0.0)
        self._apply(self._one, 1)
        return self._one[0].logit != -np.inf

    def best(self, logits: np.ndarray) -> int:
        """The first token of highest logit among those allowed (llama.cpp's greedy pick
        after the grammar; all refused: token 0, as there)."""
        # The tokens of highest logit first, one by one, in the order the greedy pick ranks
        # them (logit, then id): the first allowed one whose logit beats every token outside
        # them is the pick. Filtering the whole vocabulary costs about 8 ms on one core, and
        # most refusals are settled among the first few (reports/README.md).
        logits = np.asarray(logits, dtype=np.single)  # ranked as the filtered copy ranks
        if len(logits) <= RUNNERS_UP:
            return self._best_of_all(logits)
        top = np.argpartition(-logits, RUNNERS_UP)[:RUNNERS_UP + 1]
        top = top[np.lexsort((top, -logits[top]))]
        outside = logits[top[-1]]  # the best logit among the tokens not checked one by one
        for token in top[:-1]:
            if logits[token] <= outside:
                break  # a token left unchecked may tie it: the whole vocabulary decides
            if self.allows(int(token)):
                return int(token)
        return self._best_of_all(logits)

    def _best_of_all(self, logits: np.ndarray) -> int:
        view = self._all_view
        view["logit"] = logits
        view["p"] = 0.0
        self._apply(self._all, len(view))
        return int(np.argmax(view["logit"]))

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self.sampler, token)

    def close(self) -> None:
        if self.sampler:
            llama_cpp.llama_sampler_free(self.sampler)
            self.sampler = None


@dataclass
class _Greedy:
    """The sampling set up by ``_init_sampler`` for one completion: its chain (which the
    base class keeps in ``_sampler``), the grammar and the logits processors."""

    chain: Any
    grammar: _Grammar
    processors: LogitsProcessorList | None


class GreedyGrammarLlama(Llama):
    """``Llama`` whose greedy grammar-constrained sampling checks the best token first
    (see the module docstring); the tokens chosen are the same."""

    _greedy: _Greedy | None = None
    _checked_first = True  # off while the base class samples on its own

    # ``Llama`` calls it with keywords only (``generate``, ``sample``).
    def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]
        if self._greedy is not None:
            self._greedy.grammar.close()
            self._greedy = None
        grammar = kwargs.get("grammar")
        plain = (kwargs.get("temp") == 0.0 and kwargs.get("repeat_penalty", 1.0) == 1.0
                 and not kwargs.get("frequency_penalty") and not kwargs.get("presence_penalty")
                 and not kwargs.get("mirostat_mode"))
        if grammar is None or not plain or not self._checked_first:
            return super()._init_sampler(**kwargs)
        # The chain only marks the completion this grammar belongs to; ``sample`` picks.
        chain = super()._init_sampler(**{**kwargs, "grammar": None, "logits_processor": None})
        self._greedy = _Greedy(chain, _Grammar(self, grammar), kwargs.get("logits_processor"))
        return chain

    def sample(self, *args: Any, **kwargs: Any) -> int:
        greedy = self._greedy
        if args or greedy is None or self._sampler is not greedy.chain:
            # Outside a completion (``sample`` called on its own), llama-cpp-python's way.
            self._checked_first = False
            try:
                return super().sample(*args, **kwargs)
            finally:
                self._checked_first = True
        idx = kwargs.get("idx")
        row = llama_cpp.llama_get_logits_ith(
            self._ctx.ctx, idx - self.n_tokens if idx is not None else -1)
        logits = np.ctypeslib.as_array(row, shape=(self.n_vocab(),)).copy()
        for processor in greedy.processors or []:
            logits = processor(self._input_ids, logits)
        token = int(np.argmax(logits))
        if not greedy.grammar.allows(token):
            token = greedy.grammar.best(logits)
        greedy.grammar.accept(token)
        return token

    def close(self) -> None:
        if self._greedy is not None:
            self._greedy.grammar.close()
            self._greedy = None
        super().close()
