"""A scripted chat model: replays fixed replies. For deterministic tests, notebooks and
benchmarks of the loop itself; it is not a language model and says so in its type."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

Reply = AIMessage | str | Callable[[list[BaseMessage]], "AIMessage | str"]


class ScriptedChatModel(BaseChatModel):
    """Replays ``script`` in order; strings are text replies (cut at ``stop`` like a server
    would), AIMessages may carry ``tool_calls``, callables compute a reply from the
    messages. ``native_tools=False`` makes ``bind_tools`` unsupported, like a text-only
    model; ``honor_stop=False`` ignores stop sequences, like some servers do. Every request
    is kept in ``requests`` for assertions."""

    script: list[Any] = Field(default_factory=list)
    loop: bool = False
    native_tools: bool = True
    honor_stop: bool = True
    requests: list[dict[str, Any]] = Field(default_factory=list)
    _position: int = PrivateAttr(default=0)
    _served: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "callgate-scripted"

    def _next(self, messages: list[BaseMessage]) -> AIMessage | str:
        with self._lock:
            if self._position >= len(self.script):
                if not self.loop or not self.script:
                    raise RuntimeError(f"ScriptedChatModel: script exhausted after "
                                       f"{self._position} replies")
                self._position = 0
            item = self.script[self._position]
            self._position += 1
            self._served += 1
        return item(messages) if callable(item) else item

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        self.requests.append({"messages": list(messages), "stop": stop, **kwargs})
        reply = self._next(messages)
        if isinstance(reply, str):
            stops = stop if self.honor_stop else []
            cut = min((reply.find(s) for s in stops or [] if s in reply), default=-1)
            reply = AIMessage(reply[:cut] if cut >= 0 else reply)
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy())])

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        if not self.native_tools:
            raise NotImplementedError("this scripted model writes text only")
        specs = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=specs, tool_choice=tool_choice or "auto", **kwargs)

    @property
    def replies_used(self) -> int:
        return self._served


def tool_call(name: str, args: dict[str, Any] | None = None, call_id: str | None = None,
              content: str = "") -> AIMessage:
    """An AIMessage with one tool call, for scripts."""
    call_id = call_id or f"call_{uuid.uuid4().hex[:10]}"
    return AIMessage(content, tool_calls=[{"name": name, "args": args or {}, "id": call_id,
                                           "type": "tool_call"}])
