"""The native ``decide`` node: ``bind_tools`` and structured ``tool_calls``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import RunnableConfig

from callgate.graph.history import model_history
from callgate.graph.settings import LoopSettings
from callgate.graph.state import AgentState
from callgate.graph.streaming import stream_reply
from callgate.parsing import parse_model_output, whole_json
from callgate.prompts.system import CHAT_SYSTEM, NATIVE_SYSTEM
from callgate.tools.registry import ToolRegistry
from callgate.tools.summaries import clip


class ToolChoiceError(ValueError):
    """A ``tool_choice`` that names no tool of the registry, or that the model cannot be
    held to (a ReAct model without the grammar)."""


def check_tool_choice(tool_choice: str | None, registry: ToolRegistry) -> None:
    """Refuse a ``tool_choice`` that names no tool when the agent is built: a provider says
    so only at the first request, as an HTTP error."""
    if tool_choice and tool_choice not in {"required", "any", "auto", "none", *registry.names}:
        raise ToolChoiceError(f"tool_choice {tool_choice!r} is no tool and none of 'required', "
                              f"'any', 'auto', 'none'; the tools are "
                              f"{', '.join(sorted(registry.names))}")


def tools_allowed(state: AgentState, registry: ToolRegistry) -> bool:
    return state.get("turn_mode", "agent") != "chat" and len(registry) > 0


# Call markup no prose writes: a server left it in the text. A JSON call envelope counts
# only as the whole reply (Llama 3.x writes one so); a call named in prose ("call
# add(a=2, b=3)", a JSON example in an explanation) and ReAct labels are the answer's text.
_CALL_MARKUP = frozenset({"xml", "mistral", "python_tag", "qwen", "deepseek", "harmony",
                          "functions", "functionary"})


def text_calls(ai: AIMessage, raw: str, registry: ToolRegistry) -> AIMessage | dict[str, Any]:
    """A reply (sanitized; ``raw``: its text as the model wrote it) without structured calls
    whose text holds call markup (a server that did not parse it: ``<tool_call>{…}
    </tool_call>``, ``[TOOL_CALLS] […]``, a reply that is a JSON call envelope), read by the
    text parser: the reply with those calls, or, where the markup cannot be read (cut off),
    the correction's state update. The reply as it is otherwise. Without this the loop took
    the markup for the answer, or its empty remainder for "no answer", and said it was
    done."""
    if ai.tool_calls or ai.invalid_tool_calls or not raw.strip():
        return ai
    parsed = parse_model_output(raw, registry.names, single_inputs=registry.single_inputs)
    markup = parsed.format in _CALL_MARKUP or (
        parsed.format in ("json", "fenced_json") and whole_json(raw))
    if parsed.calls and markup:
        calls = [{"name": c["name"], "args": c["args"], "id": f"call_{uuid.uuid4().hex[:12]}",
                  "type": "tool_call"} for c in parsed.calls]
        return ai.model_copy(update={"tool_calls": calls})
    if parsed.error and parsed.format in _CALL_MARKUP:
        return {"pending_calls": [], "validation_errors": [
            {"id": None, "name": None, "error": parsed.error}]}
    return ai


def decision(ai: AIMessage, step: int, taken: Iterable[str] = ()) -> dict[str, Any]:
    """State update for a model reply: its tool calls (ids ensured, none of them one of the
    ``taken`` ids of the thread's earlier calls), or a draft answer."""
    calls: list[dict[str, Any]] = []
    tool_calls = []
    seen: set[str] = set(taken)
    for tc in ai.tool_calls:
        tc = {**tc, "id": _own_id(tc.get("id"), seen)}
        tool_calls.append(tc)
        calls.append({"id": tc["id"], "name": tc["name"], "args": tc["args"]})
    invalid = []
    for bad in ai.invalid_tool_calls:
        bad = {**bad, "id": _own_id(bad.get("id"), seen)}
        invalid.append(bad)
        name = bad.get("name") or "?"
        calls.append({"id": bad["id"], "name": bad.get("name"), "args": bad.get("args"),
                      "error": f"the arguments of '{name}' are not valid JSON "
                               f"({clip(str(bad.get('args')), 120)})"})
    if calls and ai.response_metadata.get("finish_reason") in ("length", "max_tokens"):
        # Streamed arguments cut off by the token limit parse "successfully" as partial
        # JSON; never run a call whose arguments were not finished.
        for call in calls:
            call.setdefault("error", f"the call to '{call.get('name')}' was cut off by the "
                                     "token limit before its arguments were complete")
    if not calls:
        return {"draft_answer": ai.text, "step": step + 1, "pending_calls": [],
                "validation_errors": []}
    ai = ai.model_copy(update={"tool_calls": tool_calls, "invalid_tool_calls": invalid})
    return {"messages": [ai], "pending_calls": calls, "validation_errors": [],
            "step": step + 1}


def call_ids(messages: list[AnyMessage]) -> set[str]:
    """The ids of the thread's tool calls and tool answers."""
    ids = {getattr(m, "tool_call_id", None) for m in messages}
    ids.update(c.get("id") for m in messages if isinstance(m, AIMessage)
               for c in [*m.tool_calls, *m.invalid_tool_calls])
    return {i for i in ids if i}


def _own_id(call_id: str | None, seen: set[str]) -> str:
    """The call's id, or a new one where it has none or shares it with an earlier call of
    the reply or the thread (a server that numbers every call 'call_0'): results are joined
    to their call by id, and two calls on one id had both shown the second call's result;
    an id an earlier turn's answer already carried left an interrupted call unanswered."""
    if not call_id or call_id in seen:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
    seen.add(call_id)
    return call_id


class NativeStrategy:
    """Decide with the model's own tool calling."""

    name = "native"

    def __init__(self, model: BaseChatModel, registry: ToolRegistry,
                 system_prompt: str = NATIVE_SYSTEM, tool_choice: str | None = None) -> None:
        self.model = model
        self.registry = registry
        self.system_prompt = system_prompt
        tools = registry.as_langchain_tools()
        check_tool_choice(tool_choice, registry)
        self.bound = model.bind_tools(tools) if tools else model
        # ``tool_choice`` ("required", "any" or a tool name) applies to the first step of a
        # turn only: forcing every step would leave the model no way to answer.
        self.bound_first = (model.bind_tools(tools, tool_choice=tool_choice)
                            if tools and tool_choice else self.bound)

    def _inputs(self, state: AgentState) -> tuple[Any, list[AnyMessage]]:
        if tools_allowed(state, self.registry):
            model = self.bound_first if state.get("step", 0) == 0 else self.bound
            return model, [SystemMessage(self.system_prompt), *model_history(state["messages"])]
        return self.model, [SystemMessage(CHAT_SYSTEM), *model_history(state["messages"])]

    def call_model(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        model, messages = self._inputs(state)
        reply, raw = stream_reply(model, messages, config, tool_names=self.registry.names)
        if not tools_allowed(state, self.registry):
            # Chat mode binds no tools, yet a model may still call one the thread shows it
            # (the ReAct path reads no call there either): its text is the answer.
            reply = reply.model_copy(update={"tool_calls": [], "invalid_tool_calls": []})
            return decision(reply, state.get("step", 0))
        read = text_calls(reply, raw, self.registry)
        if isinstance(read, dict):
            return {**read, "step": state.get("step", 0) + 1}
        return decision(read, state.get("step", 0), call_ids(state["messages"]))

    def subgraph(self, settings: LoopSettings) -> Any:
        # One model call needs no subgraph: a plain node spares a nested graph run per step.
        return self.call_model

    def _final_inputs(self, messages: list[AnyMessage], instruction: str) -> list[AnyMessage]:
        return [SystemMessage(self.system_prompt), *model_history(messages),
                HumanMessage(instruction)]

    def answer_now(self, messages: list[AnyMessage], instruction: str,
                   config: RunnableConfig) -> str:
        # The bound model, since some providers refuse tool messages without tool specs;
        # any call it still makes is ignored, only its text is kept.
        reply, _ = stream_reply(self.bound, self._final_inputs(messages, instruction), config,
                                tool_names=self.registry.names)
        return reply.text

    def format_example(self, tool_name: str, schema: dict[str, Any]) -> str | None:
        return None
