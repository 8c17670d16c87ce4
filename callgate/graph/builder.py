"""``build_agent``: the whole tool loop as one compiled LangGraph graph.

    START → start → decide ─┬─ calls/parse error → validate ─┬─ ok → approve → execute
                            │                                ├─ invalid → correct → decide
                            │                                └─ invalid twice → finalize
                            └─ answer → cite → END
    execute → summarize ─┬─ guard ok → decide
                         └─ step limit / cancelled / repeats → finalize → cite → END
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, RetryPolicy

from callgate.graph.approve import make_approve
from callgate.graph.cite import make_cite
from callgate.graph.correct import make_correct
from callgate.graph.execute import make_execute
from callgate.graph.finalize import make_finalize
from callgate.graph.guards import guard
from callgate.graph.nodes import dual_node, inline
from callgate.graph.settings import DecideStrategy, LoopSettings, _transient
from callgate.graph.start import make_start
from callgate.graph.state import AgentState, InputState, OutputState
from callgate.graph.summarize import make_summarize
from callgate.graph.validate import make_validate
from callgate.tools.registry import ToolRegistry

MODEL_RETRY = RetryPolicy(max_attempts=3, initial_interval=1.0, retry_on=_transient)


def build_agent(
    model: BaseChatModel | str | Any,
    tools: ToolRegistry | Iterable[Any] = (),
    *,
    max_steps: int = 5,
    tool_timeout_s: float = 12.0,
    summary_char_limit: int = 900,
    tool_format: str = "auto",
    grammar: bool | None = None,
    tool_choice: str | None = None,
    checkpointer: Checkpointer = None,
    auto_approve: bool | Callable[[dict[str, Any]], bool] = False,
    stats: Any = None,
    name: str = "callgate",
    **options: Any,
) -> CompiledStateGraph:
    """Compile the callgate tool loop for ``model`` (a chat model or a spec like
    ``"bundled"``, ``"gguf:PATH"``, ``"openai:gpt-4o-mini"``) over ``tools``.

    ``tool_format`` is ``native``, ``react`` or ``auto`` (native when the model's
    ``bind_tools`` allows free tool choice). ``grammar`` turns grammar-constrained decoding
    on or off for llama.cpp models on the ReAct path (on by default there).
    ``tool_choice`` (native path: ``"required"`` or a tool name) forces a tool call on the
    first step of each turn, for models that rarely call tools on their own.
    """
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    settings = LoopSettings(registry=registry, max_steps=max_steps,
                            tool_timeout_s=tool_timeout_s,
                            summary_char_limit=summary_char_limit, auto_approve=auto_approve,
                            stats=stats, **options)
    strategy = make_strategy(model, registry, tool_format=tool_format, grammar=grammar,
                             tool_choice=tool_choice)
    return assemble(settings, strategy).compile(checkpointer=checkpointer, name=name)


def make_strategy(model: Any, registry: ToolRegistry, *, tool_format: str = "auto",
                  grammar: bool | None = None, tool_choice: str | None = None) -> DecideStrategy:
    """The decide strategy for ``model``: native tool calling or ReAct text."""
    if not isinstance(model, BaseChatModel):
        from callgate.models.spec import load_model

        model, config = load_model(model)
        if tool_format == "auto":
            tool_format = config.tool_format
        if grammar is None:
            grammar = config.grammar
    from callgate.models.spec import resolve_tool_format

    if resolve_tool_format(model, tool_format) == "native":
        from callgate.graph.decide_native import NativeStrategy

        return NativeStrategy(model, registry, tool_choice=tool_choice)
    from callgate.graph.decide_react import ReactStrategy

    return ReactStrategy(model, registry, grammar=grammar)


def assemble(settings: LoopSettings, strategy: DecideStrategy) -> StateGraph:
    """The uncompiled graph (for callers that compile it their own way)."""
    if settings.grounding is None:
        settings = replace(settings, grounding=getattr(strategy, "grounding", False))
    graph = StateGraph(AgentState, input_schema=InputState, output_schema=OutputState)
    execute, aexecute = make_execute(settings)
    finalize, afinalize = make_finalize(settings, strategy)
    graph.add_node("start", inline(make_start(settings), "start"))
    graph.add_node("decide", strategy.subgraph(settings), retry_policy=MODEL_RETRY)
    graph.add_node("validate", inline(make_validate(settings), "validate"))
    graph.add_node("correct", inline(make_correct(settings, strategy), "correct"))
    graph.add_node("approve", inline(make_approve(settings), "approve"))
    graph.add_node("execute", dual_node(execute, aexecute, name="execute"))
    graph.add_node("summarize", inline(make_summarize(settings), "summarize"))
    graph.add_node("finalize", dual_node(finalize, afinalize, name="finalize"))
    graph.add_node("cite", inline(make_cite(), "cite"))

    def after_start(state: dict[str, Any], config: RunnableConfig) -> str:
        return "finalize" if guard(state, config, settings) == "cancelled" else "decide"

    def after_decide(state: dict[str, Any]) -> str:
        busy = state.get("pending_calls") or state.get("validation_errors")
        return "validate" if busy else "cite"

    def after_validate(state: dict[str, Any], config: RunnableConfig) -> str:
        if state.get("validation_errors"):
            return "correct" if state.get("corrections_left", 0) > 0 else "finalize"
        return "finalize" if guard(state, config, settings) == "cancelled" else "approve"

    def after_correct(state: dict[str, Any], config: RunnableConfig) -> str:
        return "finalize" if guard(state, config, settings) else "decide"

    def after_approve(state: dict[str, Any], config: RunnableConfig) -> str:
        return "finalize" if guard(state, config, settings) == "cancelled" else "execute"

    def after_summarize(state: dict[str, Any], config: RunnableConfig) -> str:
        if state.get("stop_reason") or state.get("repeats", 0) >= settings.max_repeats:
            return "finalize"
        return "finalize" if guard(state, config, settings) else "decide"

    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", inline(after_start), ["decide", "finalize"])
    graph.add_conditional_edges("decide", inline(after_decide), ["validate", "cite"])
    graph.add_conditional_edges("validate", inline(after_validate),
                                ["correct", "approve", "finalize"])
    graph.add_conditional_edges("correct", inline(after_correct), ["decide", "finalize"])
    graph.add_conditional_edges("approve", inline(after_approve), ["execute", "finalize"])
    graph.add_edge("execute", "summarize")
    graph.add_conditional_edges("summarize", inline(after_summarize), ["decide", "finalize"])
    graph.add_edge("finalize", "cite")
    graph.add_edge("cite", END)
    return graph
