"""A LangChain chat model over llama-cpp-python for text-only (ReAct) tool calling.

Why not `langchain_community.chat_models.ChatLlamaCpp` (0.4.x)? It lacks what the
constrained ReAct loop needs:
  * with `streaming=True` (its default) `invoke(..., stop=[...])` drops the per-call `stop`
    (`_generate` calls `_stream` without it);
  * a per-call `grammar` must already be a `LlamaGrammar`; GBNF text is only compiled when
    given to the constructor, and is never validated (an invalid grammar crashes llama.cpp);
  * every instance loads its own `Llama` (no sharing between tests/evals), `verbose=True`;
  * no assistant prefill (continuing a partial `Thought/Action` turn, which phase 2 needs)
    and no context-window handling.
Per-call `max_tokens`/`temperature`/`seed` and the GGUF chat template it does handle, via
`create_chat_completion`; we use the same template through llama-cpp's `Jinja2ChatFormatter`
so that we can render prefills and count prompt tokens ourselves.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field

from callgate.models.grammar import compile_grammar, grammar_error
from callgate.models.ranking import Ranked, TokenTrie, best_first, log_softmax

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar, StoppingCriteriaList
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from callgate.graph.cancellation import CancelToken

__all__ = ["ChatLlamaCppText", "ContextOverflowError", "DEFAULT_N_CTX", "clear_llama_cache"]

# SmolLM2 (the bundled model) was trained with an 8192-token context; 4096 keeps the KV
# cache small (~95 MB for 135M) and still fits long ReAct transcripts. Pass a smaller
# n_ctx for GGUFs trained on shorter contexts.
DEFAULT_N_CTX = 4096

# Used only when a GGUF carries no `tokenizer.chat_template`.
_CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_PREFILL_SENTINEL = "\x00CALLGATE_PREFILL\x00"


class ContextOverflowError(ValueError):
    """The prompt cannot fit the model's context window, even after truncation."""


@dataclass
class _Loaded:
    """One loaded GGUF, shared by every chat model with the same load options."""

    llama: Llama
    formatter_gen: Jinja2ChatFormatter  # renders with the assistant generation prompt
    formatter_raw: Jinja2ChatFormatter  # renders as is (for prefill)
    lock: threading.Lock = field(default_factory=threading.Lock)
    valid_grammars: set[str] = field(default_factory=set)
    prompt_cached: int = 0  # leading KV-cache tokens that were decoded as part of a prompt
    end_ids: dict[str, np.ndarray] = field(default_factory=dict)  # see tokens_starting

    def tokens_starting(self, chars: str) -> np.ndarray:
        """Ids of the tokens whose text starts with one of ``chars`` (cached)."""
        if chars not in self.end_ids:
            llama = self.llama
            texts = (llama.detokenize([i]) for i in range(llama.n_vocab()))
            starts = tuple(c.encode("utf-8") for c in chars)
            self.end_ids[chars] = np.array(
                [i for i, text in enumerate(texts) if text.startswith(starts)], dtype=np.intc)
        return self.end_ids[chars]

    def limit_prefix_reuse(self, tokens: list[int]) -> None:
        """Let llama-cpp reuse only cached KV that a fresh run would compute identically.

        llama.cpp's numbers for a token decoded alone (generated tokens, or the one prompt
        token llama-cpp-python replays on an exact cache hit) differ slightly from the same
        token decoded in a batch, which is enough to flip greedy choices of a small model.
        So reuse only the part of the previous *prompt* and re-decode at least two tokens:
        greedy output then no longer depends on what ran before.
        """
        llama = self.llama
        llama.n_tokens = max(0, min(llama.n_tokens, self.prompt_cached, len(tokens) - 2))
        self.prompt_cached = len(tokens)


_CACHE: dict[tuple[Any, ...], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


def clear_llama_cache() -> None:
    """Forget every cached `Llama` (they are freed once no chat model holds them)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _close_all() -> None:
    # Free the models while the interpreter still works: llama-cpp-python's finalizers
    # fail with "'NoneType' object is not callable" when they run during shutdown.
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.llama.close()
        _CACHE.clear()


atexit.register(_close_all)


def _load(path: str, n_ctx: int, n_threads: int, n_batch: int, extra: dict[str, Any],
          n_threads_batch: int | None = None, full_grammar: bool = False) -> _Loaded:
    key = (str(Path(path).resolve()), n_ctx, n_threads, n_batch, n_threads_batch,
           tuple(sorted(extra.items())), full_grammar)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        if not Path(path).is_file():
            raise FileNotFoundError(f"GGUF model file not found: {path}")
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from callgate.models.greedy_grammar import GreedyGrammarLlama

        # ``full_grammar``: llama-cpp-python's own sampling, which applies a grammar to the
        # whole vocabulary at every token (the same tokens, slower: for comparison).
        kind = Llama if full_grammar else GreedyGrammarLlama
        llama = kind(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads_batch,
            n_batch=n_batch,
            verbose=False,
            **extra,
        )
        template = llama.metadata.get("tokenizer.chat_template") or _CHATML_TEMPLATE
        eos_id, bos_id = llama.token_eos(), llama.token_bos()
        eos = llama._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llama._model.token_get_text(bos_id) if bos_id != -1 else ""
        loaded = _Loaded(
            llama=llama,
            formatter_gen=Jinja2ChatFormatter(template, eos, bos, add_generation_prompt=True),
            formatter_raw=Jinja2ChatFormatter(template, eos, bos, add_generation_prompt=False),
        )
        _CACHE[key] = loaded
        return loaded


def _llama_cpp_version() -> str:
    import llama_cpp

    return str(getattr(llama_cpp, "__version__", ""))


def default_threads() -> int:
    """$CALLGATE_N_THREADS, else half the logical cores (llama-cpp-python's default), max 8."""
    if env := os.environ.get("CALLGATE_N_THREADS"):
        return max(1, int(env))
    # Using every core is fastest on an idle machine, but ggml's threads spin-wait at each
    # op barrier: when another process takes a core, decoding slows down 10-100x.
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def _default_batch_threads() -> int | None:
    """$CALLGATE_N_THREADS, else None: llama-cpp-python's default (every core) for prompt
    processing, fastest when nothing else runs. Set the variable where other work shares
    the cores: spin-waiting prompt threads collapse too (two eval workers on 2 cores ran
    3x slower per question with every core each)."""
    env = os.environ.get("CALLGATE_N_THREADS")
    return max(1, int(env)) if env else None


def _text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else p.get("text", "") for p in content]
    return "".join(p for p in parts if isinstance(p, str))


def _to_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages -> chat-template dicts, in the ReAct text a text model understands."""
    out: list[dict[str, str]] = []
    for m in messages:
        content = _text(m.content)
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": content})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": content})
        elif isinstance(m, AIMessage):
            # A native tool call (e.g. from a history recorded with another model) is
            # shown to the text model as the ReAct lines it would have written.
            for tc in m.tool_calls:
                args = json.dumps(tc["args"], ensure_ascii=False)
                content += f"\nAction: {tc['name']}\nAction Input: {args}"
            out.append({"role": "assistant", "content": content.lstrip("\n")})
        elif isinstance(m, ToolMessage):
            # Most small-model templates never saw a "tool" role.
            out.append({"role": "user", "content": f"Observation: {content}"})
        elif isinstance(m, ChatMessage):
            out.append({"role": m.role, "content": content})
        else:
            out.append({"role": "user", "content": content})
    return out


def _formatted(formatter: Jinja2ChatFormatter, dicts: list[dict[str, str]]) -> str:
    """The prompt ``formatter``'s chat template renders for ``dicts``."""
    # llama_cpp types OpenAI's message TypedDicts only; a ChatMessage keeps its own role,
    # which the template renders as any other.
    return formatter(messages=dicts).prompt  # type: ignore[arg-type]


def _run_cancel_token() -> CancelToken | None:
    """The cancel token of the LangGraph run this model call belongs to, if any."""
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:  # called outside a LangGraph run
        return None
    from callgate.graph.cancellation import token_for

    return token_for(config)


class _RankingCancelled(Exception):
    """Raised between the decodes of a ranking once its run is cancelled."""


def _abort_criteria(token: CancelToken | None) -> StoppingCriteriaList | None:
    """Stop decoding at the next token once ``token`` is cancelled (checked per token)."""
    if token is None:
        return None
    from llama_cpp import StoppingCriteriaList

    return StoppingCriteriaList([lambda _ids, _logits: token.cancelled])


class ChatLlamaCppText(BaseChatModel):
    """llama.cpp chat model that only writes text: callgate drives it with ReAct prompts.

    Per-call kwargs: `stop`, `grammar` (GBNF text or `LlamaGrammar`), `max_tokens`,
    `temperature` (0 = greedy), `seed`, `cancel_token` (else the LangGraph run's own token:
    decoding stops at the next token once it is cancelled). If the last message is an
    `AIMessage`, the model continues it (assistant prefill) instead of starting a new turn.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Tells callgate's `auto` tool format to use ReAct text for this model.
    text_only: ClassVar[bool] = True

    model_path: str
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = Field(default_factory=default_threads)
    n_threads_batch: int | None = Field(default_factory=_default_batch_threads)
    n_batch: int = 512
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    seed: int | None = None
    stop: list[str] | None = None
    grammar: str | None = None
    on_overflow: Literal["truncate", "error"] = "truncate"
    """`truncate`: drop the oldest non-system messages (never the last) until the prompt
    fits; `error`: raise `ContextOverflowError`."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra `llama_cpp.Llama` constructor arguments."""
    full_grammar: bool = Field(
        default_factory=lambda: os.environ.get("CALLGATE_FULL_GRAMMAR") == "1")
    """Greedy grammar decoding as llama-cpp-python does it (the grammar filters the whole
    vocabulary at every token), not callgate's check of the best token first: the same
    tokens, slower; for comparison. Default: ``$CALLGATE_FULL_GRAMMAR=1``."""

    prefix_cache: str | None = None
    """A folder where the KV state after the system message is kept for later processes
    (:mod:`callgate.models.prefix_cache`); callgate's CLI sets one. None: kept in memory
    only, for the life of the process."""

    @property
    def _llm_type(self) -> str:
        return "callgate-llamacpp-text"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "n_ctx": self.n_ctx,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    @property
    def loaded(self) -> _Loaded:
        """The shared, lazily loaded llama.cpp model."""
        return _load(self.model_path, self.n_ctx, self.n_threads, self.n_batch, self.model_kwargs,
                     self.n_threads_batch, self.full_grammar)

    @property
    def llama(self) -> Llama:
        """The underlying `llama_cpp.Llama` (shared per path and load options)."""
        return self.loaded.llama

    def count_tokens(self, text: str) -> int:
        """Number of tokens `text` takes for this model."""
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def rank(
        self,
        messages: Sequence[BaseMessage],
        candidates: Sequence[str],
        end: str,
        *,
        until: Callable[[Ranked], bool] | None = None,
        max_expansions: int = 64,
        cancel_token: CancelToken | None = None,
    ) -> list[Ranked]:
        """``candidates`` (continuations of the last, prefilled message) from the most
        likely down, each with ``log P(candidate, then a token starting with one of end)``,
        until ``until`` accepts one (:func:`callgate.models.ranking.best_first`).

        Each candidate is tokenized on its own: the prefill should end where a new token
        starts in any case (after ``: "`` for a string, after ``:`` for a number written
        with its leading space). Once ``cancel_token`` (else the run's own) is cancelled,
        no further decode is made and nothing is ranked."""
        import llama_cpp

        token = cancel_token or _run_cancel_token()
        if token is not None and token.cancelled:
            return []
        loaded = self.loaded
        llama = loaded.llama
        texts = list(dict.fromkeys(c for c in candidates if c))
        if not texts:
            return []
        paths = [llama.tokenize(t.encode("utf-8"), add_bos=False, special=False)
                 for t in texts]
        trie = TokenTrie(paths)
        end_ids = loaded.tokens_starting(end)
        n_vocab = llama.n_vocab()

        def last_logprobs() -> np.ndarray:
            row = llama_cpp.llama_get_logits_ith(llama.ctx, -1)
            return log_softmax(np.ctypeslib.as_array(row, shape=(n_vocab,)))

        with loaded.lock:
            # Room for the longest candidate and its end: its decode must fit in n_ctx.
            prompt = self._prompt_tokens(messages, loaded, max(map(len, paths)) + 1)
            self._start(messages, prompt, loaded)
            loaded.limit_prefix_reuse(prompt)
            llama.n_tokens = llama.longest_token_prefix(
                llama.input_ids[:llama.n_tokens].tolist(), prompt)
            llama.eval(prompt[llama.n_tokens:])
            root = last_logprobs()

            def expand(path: tuple[int, ...]) -> np.ndarray:
                if token is not None and token.cancelled:
                    raise _RankingCancelled
                llama.n_tokens = len(prompt)
                llama.eval(path)
                return last_logprobs()

            try:
                return best_first(texts, trie, root, expand, end_ids, until=until,
                                  max_expansions=max_expansions)
            except _RankingCancelled:
                return []
            finally:
                # Back to the prompt alone: what the next call may reuse.
                llama.n_tokens = len(prompt)

    def _start(self, messages: Sequence[BaseMessage], tokens: list[int],
               loaded: _Loaded) -> None:
        """On a fresh context with ``prefix_cache`` set, put the system message's tokens in
        the KV cache first (from the folder when there), for ``tokens`` to continue."""
        llama = loaded.llama
        if self.prefix_cache is None or llama.n_tokens or not messages or not isinstance(
                messages[0], SystemMessage):
            return
        from callgate.models.prefix_cache import PrefixCache

        system = _formatted(loaded.formatter_raw, _to_dicts(messages[:1]))
        prefix = llama.tokenize(system.encode("utf-8"), add_bos=False, special=True)
        if len(prefix) + 2 > len(tokens) or tokens[:len(prefix)] != prefix:
            return
        model = Path(self.model_path).resolve()
        stat = model.stat()
        identity = json.dumps([str(model), stat.st_size, stat.st_mtime_ns, self.n_ctx,
                               self.n_batch, sorted(map(str, self.model_kwargs.items())),
                               self.full_grammar, _llama_cpp_version()])
        PrefixCache(Path(self.prefix_cache)).start(llama, identity, prefix)
        loaded.prompt_cached = len(prefix)

    # -- prompt -----------------------------------------------------------------------

    def render_prompt(self, messages: Sequence[BaseMessage]) -> str:
        """The exact prompt text the model sees (chat template, prefill applied)."""
        return self._render(_to_dicts(messages), self.loaded)

    @staticmethod
    def _render(dicts: list[dict[str, str]], loaded: _Loaded) -> str:
        if dicts and dicts[-1]["role"] == "assistant":
            # Prefill: render the partial turn followed by a sentinel and cut there, which
            # drops whatever end-of-turn marker the template adds, for any template.
            last = {**dicts[-1], "content": dicts[-1]["content"] + _PREFILL_SENTINEL}
            prompt = _formatted(loaded.formatter_raw, [*dicts[:-1], last])
            return prompt[: prompt.rindex(_PREFILL_SENTINEL)]
        return _formatted(loaded.formatter_gen, dicts)

    def _prompt_tokens(
        self, messages: Sequence[BaseMessage], loaded: _Loaded, max_tokens: int
    ) -> list[int]:
        dicts = _to_dicts(messages)
        n_ctx = loaded.llama.n_ctx()
        budget = n_ctx - max(1, min(max_tokens, n_ctx // 4))
        while True:
            prompt = self._render(dicts, loaded)
            tokens = loaded.llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) <= budget:
                return tokens
            droppable = [i for i, d in enumerate(dicts[:-1]) if d["role"] != "system"]
            if self.on_overflow == "error" or not droppable:
                raise ContextOverflowError(
                    f"prompt is {len(tokens)} tokens but only {budget} fit in n_ctx={n_ctx} "
                    f"after reserving room to generate; shorten the input or raise n_ctx (in "
                    f"models.yaml: an entry's n_ctx)"
                )
            del dicts[droppable[0]]

    # -- generation -------------------------------------------------------------------

    def _grammar(self, grammar: str | LlamaGrammar | None, loaded: _Loaded) -> LlamaGrammar | None:
        if grammar is None or not isinstance(grammar, str):
            return grammar
        if grammar not in loaded.valid_grammars:
            error = grammar_error(grammar, loaded.llama)
            if error:
                raise ValueError(f"{error}:\n{grammar[:2000]}")
            loaded.valid_grammars.add(grammar)
        return compile_grammar(grammar)

    def _completion(
        self,
        messages: Sequence[BaseMessage],
        stop: list[str] | None,
        loaded: _Loaded,
        kwargs: dict[str, Any],
    ) -> Iterator[dict[str, Any]]:
        unknown = set(kwargs) - {
            "grammar",
            "max_tokens",
            "temperature",
            "seed",
            "top_p",
            "top_k",
            "min_p",
            "repeat_penalty",
            "logit_bias",
            "cancel_token",
        }
        if unknown:
            raise TypeError(f"unsupported arguments for {type(self).__name__}: {sorted(unknown)}")
        max_tokens = kwargs.get("max_tokens", self.max_tokens)
        tokens = self._prompt_tokens(messages, loaded, max_tokens)
        grammar = self._grammar(kwargs.get("grammar", self.grammar), loaded)
        stops = [s for s in (stop if stop is not None else self.stop) or [] if s]
        self._start(messages, tokens, loaded)
        loaded.limit_prefix_reuse(tokens)
        abort = _abort_criteria(kwargs.get("cancel_token"))
        # stream=True: an iterator of chunks (``create_completion`` has no overload to say so).
        return loaded.llama.create_completion(  # type: ignore[return-value]
            prompt=tokens,
            max_tokens=max_tokens,
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            top_k=kwargs.get("top_k", self.top_k),
            min_p=kwargs.get("min_p", self.min_p),
            repeat_penalty=kwargs.get("repeat_penalty", self.repeat_penalty),
            seed=kwargs.get("seed", self.seed),
            stop=stops,
            grammar=grammar,
            logit_bias=self._logit_bias(kwargs.get("logit_bias"), loaded),
            stopping_criteria=abort,
            stream=True,
        )

    @staticmethod
    def _logit_bias(
        bias: dict[int | str, float] | None, loaded: _Loaded
    ) -> dict[int, float] | None:
        """Token ids to biases; a text key stands for its first token."""
        if not bias:
            return None
        out: dict[int, float] = {}
        for key, value in bias.items():
            if isinstance(key, str):
                ids = loaded.llama.tokenize(key.encode("utf-8"), add_bos=False, special=False)
                if not ids:
                    continue
                key = ids[0]
            out[int(key)] = out.get(int(key), 0.0) + float(value)
        return out

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        loaded = self.loaded
        token = kwargs.pop("cancel_token", None) or _run_cancel_token()
        if token is not None and token.cancelled:  # the run was cancelled: decode nothing
            meta = {"finish_reason": "cancelled"}
            yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata=meta),
                                      generation_info=meta)
            return
        kwargs = {**kwargs, "cancel_token": token}
        # One llama.cpp context cannot decode two prompts at once.
        with loaded.lock:
            for part in self._completion(messages, stop, loaded, kwargs):
                choice = part["choices"][0]
                text = choice.get("text") or ""
                finish = choice.get("finish_reason")
                if finish and token is not None and token.cancelled:
                    finish = "cancelled"
                if not text and not finish:
                    continue
                meta = {"finish_reason": finish} if finish else {}
                chunk = ChatGenerationChunk(
                    message=AIMessageChunk(content=text, response_metadata=meta),
                    generation_info=meta or None,
                )
                if run_manager and text:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Same decoding path as streaming, so invoke and stream agree token for token.
        texts: list[str] = []
        finish = None
        for chunk in self._stream(messages, stop, run_manager, **kwargs):
            texts.append(chunk.text)
            finish = (chunk.generation_info or {}).get("finish_reason", finish)
        meta = {"finish_reason": finish, "model_path": self.model_path}
        message = AIMessage(content="".join(texts), response_metadata=meta)
        return ChatResult(generations=[ChatGeneration(message=message, generation_info=meta)])
