"""Model replies that stream only sanitized text.

LangGraph's ``stream_mode="messages"`` forwards the tokens of every chat model called in a
node. callgate calls the real model with the ``nostream`` tag (LangGraph skips it) and
re-emits its reply through :class:`SanitizedRelay`, a pass-through chat model whose tokens
have tool-call markup removed. LangGraph has no hook to filter streamed tokens, hence
this small model. A run nobody observes (no callback handler: a plain ``invoke``, no
tracing) skips the relay and merges the same sanitized chunks itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    BaseCallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, BaseMessageChunk
from langchain_core.messages.tool import ToolCallChunk, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig

from callgate.answer_checks import runs_away
from callgate.graph.cancellation import token_for
from callgate.models.errors import unreachable
from callgate.sanitize import StreamSanitizer

NOSTREAM = {"tags": ["nostream"]}
LOOP_CHECK_EVERY = 8  # chunks between checks for a looping reply


class SanitizedRelay(BaseChatModel):
    """Re-emits chunks handed to it as ``source=``; callgate internal."""

    @property
    def _llm_type(self) -> str:
        return "callgate-relay"

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        # BaseChatModel reports each yielded chunk to the callbacks (LangGraph's
        # messages stream among them); nothing to emit here.
        for chunk in kwargs["source"]:
            yield ChatGenerationChunk(message=chunk)

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        async for chunk in kwargs["source"]:
            yield ChatGenerationChunk(message=chunk)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        merged: BaseMessageChunk | None = None
        for generation in self._stream(messages, stop, run_manager, **kwargs):
            merged = generation.message if merged is None else merged + generation.message
        return _result(merged)

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None,
                         **kwargs: Any) -> ChatResult:
        merged: BaseMessageChunk | None = None
        async for generation in self._astream(messages, stop, run_manager, **kwargs):
            merged = generation.message if merged is None else merged + generation.message
        return _result(merged)


def _result(merged: BaseMessageChunk | None) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=_merged_message(merged))])


def _merged_message(merged: BaseMessageChunk | None) -> AIMessage:
    return AIMessage("") if merged is None else _to_message(merged)


def _to_message(chunk: BaseMessageChunk) -> AIMessage:
    from langchain_core.messages import message_chunk_to_message

    # A chat model streams AIMessageChunks, which become AIMessages; the function is
    # typed for any chunk.
    return message_chunk_to_message(chunk)  # type: ignore[return-value]


_RELAY = SanitizedRelay()


class Reply:
    """A model reply: ``message`` (sanitized text, tool calls intact) and ``raw`` text."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.whole: AIMessage | None = None  # from a model that cannot stream
        self.id: str | None = None  # the real model's message id

    @property
    def raw(self) -> str:
        return "".join(self.parts)

    def result(self, relayed: AIMessage) -> AIMessage:
        """The relayed (sanitized) message; a whole message keeps its exact tool calls,
        since merging chunks would run partial-JSON repair on broken arguments."""
        if self.whole is None:
            return relayed
        return self.whole.model_copy(update={"content": relayed.content})

    def clean(self, chunk: BaseMessage, sanitizer: StreamSanitizer) -> AIMessageChunk:
        text = chunk.content if isinstance(chunk.content, str) else chunk.text
        self.parts.append(text)
        self.id = self.id or chunk.id
        if isinstance(chunk, AIMessage) and not isinstance(chunk, AIMessageChunk):
            self.whole = chunk
        return AIMessageChunk(content=sanitizer.feed(text),
                              tool_call_chunks=_call_chunks(chunk),
                              usage_metadata=getattr(chunk, "usage_metadata", None),
                              response_metadata=chunk.response_metadata)


def _call_chunks(message: BaseMessage) -> list[ToolCallChunk]:
    """Tool-call chunks of a streamed chunk, or of a whole message from a model that
    cannot stream (``BaseChatModel.stream`` then yields one complete AIMessage)."""
    if isinstance(message, AIMessageChunk):
        return list(message.tool_call_chunks)
    if not isinstance(message, AIMessage):
        return []
    chunks = [tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
              for i, c in enumerate(message.tool_calls)]
    start = len(chunks)
    chunks += [tool_call_chunk(name=c.get("name"), args=c.get("args"), id=c.get("id"),
                               index=start + i)
               for i, c in enumerate(message.invalid_tool_calls)]
    return chunks


def _observed(config: RunnableConfig | None) -> bool:
    """Whether any callback handler (a ``messages`` stream, ``astream_events``, a tracer)
    would see the relay's tokens; without one the relay is skipped."""
    callbacks = (config or {}).get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        return bool(callbacks.handlers)
    return bool(callbacks)


def _merge(chunks: Iterable[AIMessageChunk], reply: Reply) -> AIMessage:
    """What the relay would return, without a model run: the merged sanitized chunks."""
    merged: AIMessageChunk | None = None
    for chunk in chunks:
        merged = chunk if merged is None else merged + chunk
    message = _merged_message(merged)
    if message.id is None and reply.id is not None:
        message.id = reply.id
    return message


def _nostream(config: RunnableConfig | None) -> RunnableConfig:
    return {**(config or {}), "tags": [*((config or {}).get("tags") or []), "nostream"],
            "callbacks": (config or {}).get("callbacks")}


def stream_reply(model: Runnable, messages: Sequence[BaseMessage], config: RunnableConfig,
                 answer_marker: str | None = None, *, silent: bool = False,
                 tool_names: Iterable[str] = (), unwrap: Callable[[str], str] | None = None,
                 **kwargs: Any) -> tuple[AIMessage, str]:
    """Call ``model``; stream its sanitized tokens; return (sanitized message, raw text).

    With ``answer_marker`` only the text after that marker is streamed; ``silent`` streams
    nothing (tool arguments, for instance); ``tool_names`` tells the sanitizer which
    ``Action:`` lines are calls rather than prose; ``unwrap`` reads an answer written
    wholly as a JSON envelope as the parser does (``StreamSanitizer``). A server that
    cannot be reached raises the client's error, named with its URL
    (:mod:`callgate.models.errors`)."""
    try:
        return _stream_reply(model, messages, config, answer_marker, silent=silent,
                             tool_names=tool_names, unwrap=unwrap, **kwargs)
    except Exception as exc:
        named = unreachable(exc, model)
        if named is None:
            raise
        raise named from exc


def _stream_reply(model: Runnable, messages: Sequence[BaseMessage], config: RunnableConfig,
                  answer_marker: str | None, *, silent: bool, tool_names: Iterable[str],
                  unwrap: Callable[[str], str] | None, **kwargs: Any
                  ) -> tuple[AIMessage, str]:
    if silent:
        message = model.invoke(messages, _nostream(config), **kwargs)
        return message, message.text
    reply = Reply()
    sanitizer = StreamSanitizer(answer_marker, tool_names=tool_names, unwrap=unwrap)

    token = token_for(config)

    def source() -> Iterator[AIMessageChunk]:
        calling = False  # a reply with tool calls streams to its end: never cut them off
        for n, chunk in enumerate(model.stream(messages, _nostream(config), **kwargs), 1):
            cleaned = reply.clean(chunk, sanitizer)
            calling = calling or bool(cleaned.tool_call_chunks)
            yield cleaned
            if token.cancelled:  # honoured between tokens, also while the answer is written
                break
            if not calling and n % LOOP_CHECK_EVERY == 0 and runs_away(reply.raw):
                break  # a looping reply: the answer checks would cut the rest anyway
        tail = sanitizer.flush()
        if tail:
            yield AIMessageChunk(content=tail)

    if _observed(config):
        message = _RELAY.invoke(messages, config, source=source())
    else:
        message = _merge(source(), reply)
    return reply.result(message), reply.raw
