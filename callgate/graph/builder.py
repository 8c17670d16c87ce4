"""``build_agent``: the whole tool loop as one compiled LangGraph graph.

    START → start → decide ─┬─ answer ───────────────────────────────→ cite → END
                            └─ calls → validate ─┬─ invalid, correction left → correct → decide
                                                 ├─ unreadable, none left ───→ finalize
                                                 └─ checked → approve ─┬─ Send per call → execute
                                                                       └─ none to run ─┐
    execute, … → summarize ←───────────────────────────────────────────────────────────┘
    summarize ─┬─ go on → decide
               └─ step limit, cancelled, refused, repeats → finalize → cite → END
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import fields, replace
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Checkpointer, RetryPolicy, Send

from callgate.graph.approve import make_approve
from callgate.graph.cancellation import is_cancelled, thread_id_of
from callgate.graph.cite import make_cite
from callgate.graph.context import Context, limits_of
from callgate.graph.correct import make_correct
from callgate.graph.execute import make_execute
from callgate.graph.finalize import make_finalize
from callgate.graph.settings import DecideStrategy, LoopSettings, _transient
from callgate.graph.start import GraphRef, make_start
from callgate.graph.state import AgentState, ExecuteInput, InputState, OutputState, ToolCall
from callgate.graph.summarize import make_summarize
from callgate.graph.validate import correction_left, make_validate
from callgate.tools.approval import DANGEROUS_PATTERNS, approval_reason
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
    store: BaseStore | None | Literal[False] = None,
    auto_approve: bool | Callable[[dict[str, Any]], bool] = False,
    stats: Any = None,
    name: str = "callgate",
    **options: Any,
) -> CompiledStateGraph[AgentState, Context, InputState, OutputState]:
    """Compile the callgate tool loop for ``model`` (a chat model or a spec like
    ``"bundled"``, ``"gguf:PATH"``, ``"openai:gpt-4o-mini"``) over ``tools``.

    ``max_steps``, ``tool_timeout_s``, ``summary_char_limit``, ``grounding`` and
    ``max_calls_per_step`` are the defaults of the per-run :class:`Context`.
    ``tool_format`` is ``native``, ``react`` or ``auto`` (native when the model's
    ``bind_tools`` allows free tool choice). ``grammar`` turns grammar-constrained decoding
    on or off for llama.cpp models on the ReAct path (on by default there).
    ``tool_choice`` (``"required"`` or a tool name) forces a tool call on the first step of
    each turn, for models that rarely call tools on their own: natively, or on the ReAct
    path through the grammar (a llama.cpp model).
    ``store`` keeps full tool results (default: an ``InMemoryStore``; ``False``: none of
    its own, for LangGraph Server, which supplies one); ``checkpointer`` keeps threads.
    """
    if callable(tools) or isinstance(tools, str | BaseTool | dict):
        raise TypeError(f"tools is a list of functions or tools (or a ToolRegistry), got "
                        f"{tools!r}: put it in a list")
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        named = set(inspect.signature(build_agent).parameters) - {"model", "tools", "options"}
        raise TypeError(f"build_agent() got an unexpected keyword argument {unknown[0]!r}; "
                        f"its options are {', '.join(sorted(named | _OPTIONS))}")
    if not (store is None or store is False or isinstance(store, BaseStore)):
        raise TypeError(f"store must be a LangGraph BaseStore, None (an InMemoryStore) or "
                        f"False (none, for LangGraph Server), got {store!r}")
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    settings = LoopSettings(registry=registry, max_steps=max_steps,
                            tool_timeout_s=tool_timeout_s,
                            summary_char_limit=summary_char_limit, auto_approve=auto_approve,
                            stats=stats, **options)
    strategy = make_strategy(model, registry, tool_format=tool_format, grammar=grammar,
                             tool_choice=tool_choice)
    ref = GraphRef()
    graph = assemble(settings, strategy, checkpointed=checkpointer not in (None, False),
                     ref=ref)
    if store is None:
        store = InMemoryStore()
    ref.graph = graph.compile(checkpointer=checkpointer, store=store or None, name=name)
    return ref.graph


# build_agent's keyword options passed on to LoopSettings (those it names itself aside).
_OPTIONS = frozenset(f.name for f in fields(LoopSettings)) - {
    "registry", "max_steps", "tool_timeout_s", "summary_char_limit", "auto_approve", "stats"}


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
    from callgate.models.spec import binds_tools, resolve_tool_format

    if resolve_tool_format(model, tool_format) == "native":
        from callgate.graph.decide_native import NativeStrategy

        if len(registry) and not binds_tools(model):  # without tools, any model will do
            raise ValueError(f"tool_format 'native' needs a model with native tool calling; "
                             f"{type(model).__name__} writes text only: use 'react' or "
                             "'auto'")

        return NativeStrategy(model, registry, tool_choice=tool_choice)
    from callgate.graph.decide_react import ReactStrategy

    return ReactStrategy(model, registry, grammar=grammar, tool_choice=tool_choice)


def assemble(settings: LoopSettings, strategy: DecideStrategy, *,
             checkpointed: bool = False, ref: GraphRef | None = None
             ) -> StateGraph[AgentState, Context, InputState, OutputState]:
    """The uncompiled graph (for callers that compile it their own way).

    ``checkpointed``: the graph will be compiled with a checkpointer, so approvals may
    pause it (on LangGraph Server they always may). ``ref``: set to the compiled graph,
    ``start`` reads the checkpoint a new message cut off through it."""
    if settings.grounding is None:
        settings = replace(settings, grounding=bool(getattr(strategy, "grounding", False)))
    patterns = settings.approval_patterns or DANGEROUS_PATTERNS
    graph = StateGraph(AgentState, context_schema=Context, input_schema=InputState,
                       output_schema=OutputState)
    graph.add_node("start", make_start(settings, ref))
    graph.add_node("decide", strategy.subgraph(settings), retry_policy=MODEL_RETRY)
    graph.add_node("validate", make_validate(settings))
    graph.add_node("correct", make_correct(settings, strategy))
    graph.add_node("approve", make_approve(settings, checkpointed=checkpointed))
    graph.add_node("execute", make_execute(settings), input_schema=ExecuteInput,
                   retry_policy=settings.tool_retry)
    graph.add_node("summarize", make_summarize(settings))
    graph.add_node("finalize", make_finalize(settings, strategy))
    graph.add_node("cite", make_cite(settings))

    def stop_or_go(state: AgentState, runtime: Runtime[Context],
                   config: RunnableConfig) -> Literal["decide", "finalize"]:
        """The graph's own guards: cancellation, then the step limit."""
        if is_cancelled(config, runtime.store):
            return "finalize"
        return "finalize" if state.get("step", 0) >= limits_of(
            runtime, settings.defaults).max_steps else "decide"

    def calls_or_answer(state: AgentState) -> Literal["validate", "cite"]:
        busy = state.get("pending_calls") or state.get("validation_errors")
        return "validate" if busy else "cite"

    def correct_ask_or_run(state: AgentState, runtime: Runtime[Context], config: RunnableConfig
                           ) -> list[Send] | Literal["correct", "approve", "summarize",
                                                     "finalize", "cite"]:
        if is_cancelled(config, runtime.store):
            return "finalize"
        if state.get("validation_errors") and correction_left(state, settings):
            return "correct"
        calls = state.get("pending_calls") or []
        if not calls:
            # An answer sent back with no correction left stands (validate kept it).
            kept = state.get("draft_answer") and not state.get("validation_errors")
            return "cite" if kept else "finalize"
        if any(needs_approval(call) for call in calls):
            return "approve"
        return run_each_call(state, runtime, config)  # nothing to ask: skip the approval step

    def needs_approval(call: ToolCall) -> bool:
        return not call.get("outcome") and approval_reason(call, settings.registry,
                                                           patterns) is not None

    def decide_again_or_stop(state: AgentState, runtime: Runtime[Context],
                             config: RunnableConfig) -> Literal["decide", "finalize"]:
        return "finalize" if is_cancelled(config, runtime.store) else "decide"

    def run_each_call(state: AgentState, runtime: Runtime[Context],
                      config: RunnableConfig) -> list[Send] | Literal["summarize", "finalize"]:
        """One ``execute`` task per call that may run; straight on when none may."""
        if is_cancelled(config, runtime.store):
            return "finalize"
        thread_id, step = thread_id_of(config), state.get("step", 0)
        sends = [Send("execute", ExecuteInput(call=call, step=step, thread_id=thread_id))
                 for call in state.get("pending_calls") or [] if not call.get("outcome")]
        return sends or "summarize"

    def next_step_or_finish(state: AgentState, runtime: Runtime[Context],
                            config: RunnableConfig) -> Literal["decide", "finalize"]:
        if state.get("stop_reason"):
            return "finalize"
        return stop_or_go(state, runtime, config)

    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", stop_or_go)
    graph.add_conditional_edges("decide", calls_or_answer)
    graph.add_conditional_edges("validate", correct_ask_or_run,
                                ["correct", "approve", "execute", "summarize", "finalize",
                                 "cite"])
    graph.add_conditional_edges("correct", decide_again_or_stop)
    graph.add_conditional_edges("approve", run_each_call, ["execute", "summarize", "finalize"])
    graph.add_edge("execute", "summarize")
    graph.add_conditional_edges("summarize", next_step_or_finish)
    graph.add_edge("finalize", "cite")
    graph.add_edge("cite", END)
    return graph
