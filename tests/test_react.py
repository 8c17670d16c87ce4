"""The ReAct path, driven by a scripted text-only model.

``ScriptedChatModel(native_tools=False)`` replays fixed text replies and refuses
``bind_tools`` - a deterministic stand-in for a model that only writes text, not a
language model. It reproduces the failures seen in the wild.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage

from callgate import build_agent
from callgate.graph.builder import make_strategy
from callgate.models.scripted import ScriptedChatModel
from callgate.tools.registry import ToolRegistry

MARKUP = ("<tool_call>", "Action:", "Action Input:", "[TOOL_CALLS]", "✿FUNCTION✿", "<think>",
          "Observation:", "Thought:")


def web_search(query: str, max_results: int = 3) -> list[dict[str, str]]:
    """Search the web."""
    return [{"title": f"About {query}", "url": "https://example.org/a", "snippet": "text"}]


def system_stats() -> dict[str, float]:
    """CPU and memory usage."""
    return {"cpu_percent": 12.5, "memory_percent": 40.0}


def text_model(*replies: Any, **options: Any) -> ScriptedChatModel:
    return ScriptedChatModel(script=list(replies), native_tools=False, **options)


def run(model: ScriptedChatModel, **kwargs: Any) -> dict[str, Any]:
    agent = build_agent(model, [web_search, system_stats], **kwargs)
    return agent.invoke({"messages": [HumanMessage("question")]})


def assert_clean(out: dict[str, Any]) -> None:
    assert out["final_answer"] and not any(m in out["final_answer"] for m in MARKUP)


def test_auto_picks_react_for_text_models() -> None:
    strategy = make_strategy(text_model(), ToolRegistry([web_search]))
    assert strategy.name == "react" and strategy.grammar is False


def test_grammar_needs_a_llama_cpp_model() -> None:
    with pytest.raises(ValueError, match="llama.cpp"):
        make_strategy(text_model(), ToolRegistry([web_search]), grammar=True)


def test_prompt_lists_tools_with_schemas_and_stop_sequences() -> None:
    model = text_model("Final Answer: hi")
    run(model)
    request = model.requests[0]
    system = request["messages"][0]
    assert isinstance(system, SystemMessage)
    assert "- web_search: Search the web." in system.content
    assert "    query (string, required)" in system.content
    assert "    max_results (integer, optional, default 3)" in system.content
    assert "Action Input:" in system.content
    assert request["stop"] == ["\nObservation:", "\nObservation"]


def test_react_call_observation_and_cited_answer() -> None:
    model = text_model(
        'Thought: search\nAction: web_search\nAction Input: {"query": "langgraph"}',
        "Thought: I can answer now.\nFinal Answer: LangGraph builds agents [R1].")
    out = run(model)
    assert out["status"] == "done"
    assert out["tool_events"][0]["args"] == {"query": "langgraph", "max_results": 3}
    assert out["final_answer"].startswith("LangGraph builds agents [R1].")
    assert "Sources: [R1] web_search — About langgraph <https://example.org/a>" in (
        out["final_answer"])
    # the call and its summary came back to the model as ReAct text
    second = model.requests[1]["messages"]
    assert isinstance(second[-2], AIMessage) and second[-2].content == (
        'Thought: search\nAction: web_search\nAction Input: {"query": "langgraph"}')
    assert isinstance(second[-1], HumanMessage)
    assert second[-1].content.startswith("Observation: [R1] [web_search] results: About")
    assert_clean(out)


def test_prose_around_a_call() -> None:
    out = run(text_model(
        'Sure! I will look that up.\n<tool_call>\n{"name": "web_search", "arguments": '
        '{"query": "hiking boots"}}\n</tool_call>\nOne moment.', "Final Answer: done [R1]"))
    assert out["tool_events"][0]["args"]["query"] == "hiking boots"
    assert_clean(out)


def test_markdown_block_instead_of_the_asked_format() -> None:
    out = run(text_model('```json\n{"name": "system_stats", "arguments": {}}\n```',
                         "Final Answer: CPU is at 12.5% [R1]."))
    assert out["tool_events"][0]["tool"] == "system_stats" and out["tool_events"][0]["ok"]
    assert out["final_answer"].startswith("CPU is at 12.5% [R1].")


def test_the_same_call_repeated_is_cached_then_stopped() -> None:
    call = 'Action: web_search\nAction Input: {"query": "x"}'
    model = text_model(call, call, call, "Final Answer: x is a letter [R1]")
    out = run(model)
    events = out["tool_events"]
    assert [e["repeat_of"] for e in events] == [None, "R1", "R1"]
    assert sum(1 for e in events if not e["repeat_of"]) == 1
    assert out["status"] == "done" and out["final_answer"].startswith("x is a letter")
    # the last request is the tools-free "answer now" call
    assert "repeated" in model.requests[-1]["messages"][-1].content


def test_truncated_json_then_corrected() -> None:
    model = text_model('Action: web_search\nAction Input: {"query": "python asy',
                       'Action: web_search\nAction Input: {"query": "python asyncio"}',
                       "Final Answer: asyncio is Python's async library [R1].")
    out = run(model)
    assert [e["args"]["query"] for e in out["tool_events"]] == ["python asyncio"]
    correction = model.requests[1]["messages"][-1]
    assert isinstance(correction, HumanMessage) and "incomplete" in correction.content
    assert "Action: tool_name" in correction.content  # shows the exact format
    assert out["status"] == "done"


def test_truncated_twice_fails_cleanly() -> None:
    cut = 'Action: web_search\nAction Input: {"query": "py'
    out = run(text_model(cut, cut))
    assert out["status"] == "failed" and out["tool_events"] == []
    assert "still invalid after a correction" in out["final_answer"]
    assert_clean(out)


def test_invalid_arguments_get_the_schema_and_an_example() -> None:
    model = text_model('Action: web_search\nAction Input: {"query": "x", "max_results": "5"}',
                       'Action: web_search\nAction Input: {"query": "x", "max_results": 5}',
                       "Final Answer: ok")
    out = run(model)
    correction = model.requests[1]["messages"][-1]
    assert "argument 'max_results': expected integer, got string '5'" in correction.content
    assert 'Action: web_search\nAction Input: {"query": "..."}' in correction.content
    assert out["tool_events"][0]["args"]["max_results"] == 5


def test_invented_observation_is_discarded_when_stop_is_ignored() -> None:
    model = text_model('Action: web_search\nAction Input: {"query": "CRISPR"}\n'
                       "Observation: CRISPR is great.\nFinal Answer: CRISPR is great.",
                       "Final Answer: CRISPR edits genes [R1].", honor_stop=False)
    out = run(model)
    assert len(out["tool_events"]) == 1 and model.replies_used == 2
    assert out["final_answer"].startswith("CRISPR edits genes [R1].")


def test_several_calls_in_one_reply_run_in_one_step() -> None:
    model = text_model(
        '<tool_call>{"name": "system_stats", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "web_search", "arguments": {"query": "uptime"}}</tool_call>\n'
        '<tool_call>{"name": "system_stats", "arguments": {}}</tool_call>',
        "Final Answer: fine [R1] [R2]")
    out = run(model)
    # Every call the model wrote is recorded; the repeat is answered from the first.
    assert [(e["tool"], e["outcome"]) for e in out["tool_events"]] == [
        ("system_stats", "ok"), ("web_search", "ok"), ("system_stats", "repeat")]
    assert out["tool_events"][2]["repeat_of"] == "R1"
    assert model.replies_used == 2
    assert [c["id"] for c in out["citations"]] == ["R1", "R2"]
    history = model.requests[1]["messages"]
    assert "Action: system_stats" in history[2].content
    assert "Action: web_search" in history[2].content


def test_calls_per_step_are_capped() -> None:
    model = text_model("\n".join(
        f'Action: web_search\nAction Input: {{"query": "q{i}"}}' for i in range(6)),
        "Final Answer: done")
    agent = build_agent(model, [web_search], max_calls_per_step=2)
    out = agent.invoke({"messages": [HumanMessage("question")]})
    assert [e["args"]["query"] for e in out["tool_events"] if e["outcome"] == "ok"] == [
        "q0", "q1"]
    skipped = [e for e in out["tool_events"] if e["outcome"] == "skipped"]
    assert len(skipped) == 4 and "max_calls_per_step" in skipped[0]["error"]
    assert [p["outcome"] for p in out["problems"]] == ["skipped"] * 4  # visible, not dropped


def test_unknown_tool_is_corrected() -> None:
    model = text_model('Action: google_search\nAction Input: {"query": "x"}',
                       'Action: web_search\nAction Input: {"query": "x"}', "Final Answer: x")
    out = run(model)
    correction = model.requests[1]["messages"][-1].content
    assert "Unknown tool 'google_search'" in correction and "web_search" in correction
    assert out["tool_events"][0]["tool"] == "web_search"


def test_think_blocks_never_reach_the_user() -> None:
    out = run(text_model("<think>Maybe call Action: web_search.</think>\nFinal Answer: 4"))
    assert out["final_answer"] == "4" and out["tool_events"] == []


def test_plain_prose_is_the_answer() -> None:
    out = run(text_model("The capital of Australia is Canberra."))
    assert out["final_answer"] == "The capital of Australia is Canberra."


def test_step_limit_on_the_react_path() -> None:
    queries = iter(range(100))
    model = text_model(lambda _m: f'Action: web_search\nAction Input: {{"query": '
                                  f'"q{next(queries)}"}}', loop=True)
    out = run(model, max_steps=2)
    assert out["status"] == "step_limit" and len(out["tool_events"]) == 2
    assert_clean(out)


def test_chat_mode_has_no_tools_in_the_prompt() -> None:
    model = text_model("Hello!")
    out = build_agent(model, [web_search]).invoke({"messages": [("user", "hi")],
                                                    "mode": "chat"})
    assert out["final_answer"] == "Hello!"
    assert "web_search" not in model.requests[0]["messages"][0].content


@pytest.mark.parametrize(("replies", "answer"), [
    # Chat-tuned models bold the labels.
    (('**Thought:** look\n**Action:** web_search\n**Action Input:** {"query": "x"}',
      "**Thought:** done\n**Final Answer:** X is a **letter** [R1]."),
     "X is a **letter** [R1]."),
    # Markdown-minded models write their steps as list items or in a quote: the Action
    # Input after "- " had been lost and the call made with {}.
    (('- Thought: look\n- Action: web_search\n- Action Input: {"query": "x"}',
      "> Thought: done\n> Final Answer: X is a letter [R1]."), "X is a letter [R1]."),
], ids=["bold", "list-items-and-quoted"])
def test_set_apart_labels_are_read_and_kept_from_the_user(replies: tuple[str, str],
                                                          answer: str) -> None:
    # Scripted text model; streamed and final alike.
    tokens = [chunk.content for _ns, (chunk, _meta) in build_agent(
        text_model(*replies), [web_search]).stream(
        {"messages": [("user", "q")]}, stream_mode="messages", subgraphs=True)
        if isinstance(chunk, AIMessageChunk)]
    assert "".join(tokens).startswith(answer), tokens
    out = build_agent(text_model(*replies), [web_search]).invoke({"messages": [("user", "q")]})
    assert [(e["tool"], e["args"]["query"], e["ok"]) for e in out["tool_events"]] == [
        ("web_search", "x", True)]
    assert out["final_answer"].startswith(answer)
    assert_clean(out)


@pytest.mark.parametrize(("replies", "query", "answer"), [
    # As LangChain's ReAct prompt has models write it: the text is web_search's query, its
    # only required argument, not an error sent back to correct.
    (("Thought: search\nAction: web_search\nAction Input: latest Python release",
      "Final Answer: Python 3.14 [R1]."), "latest Python release", "Python 3.14 [R1]."),
    # DeepSeek models write their own call tokens, LangChain's structured chat agents a JSON
    # blob under "Action:".
    (('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>web_search\n'
      '```json\n{"query": "x"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
      'Action:\n```json\n{"action": "Final Answer", "action_input": "X is a letter [R1]."}'
      "\n```"), "x", "X is a letter [R1]."),
    # gpt-oss writes harmony: a message to functions.web_search is the call, the final
    # channel's text the answer, the analysis channel never shown.
    (("<|channel|>analysis<|message|>Search it.<|end|><|start|>assistant<|channel|>"
      'commentary to=functions.web_search <|constrain|>json<|message|>{"query": "x"}<|call|>',
      "<|channel|>analysis<|message|>Done.<|end|><|start|>assistant<|channel|>final"
      "<|message|>X is a letter [R1].<|return|>"), "x", "X is a letter [R1]."),
    # Functionary v3.2 (its first call without ">>>"), then its text message; a structured
    # chat agent's answer envelope after the label.
    (('web_search\n{"query": "x"}', ">>>all\nX is a letter [R1]."), "x",
     "X is a letter [R1]."),
    (('Thought: look\nAction: ```{"action": "web_search", "action_input": {"query": "x"}}```',
      'Final Answer: {"action": "Final Answer", "action_input": "X is a letter [R1]."}'), "x",
     "X is a letter [R1]."),
], ids=["plain-text-input", "deepseek-and-structured-chat", "harmony", "functionary",
        "structured-chat-on-the-labels-lines"])
def test_other_models_formats_are_read_and_kept_from_the_user(
        replies: tuple[str, str], query: str, answer: str) -> None:
    # Scripted text model: a call and an answer, no markup or reasoning shown.
    out = run(text_model(*replies))
    assert [(e["tool"], e["args"]["query"], e["ok"]) for e in out["tool_events"]] == [
        ("web_search", query, True)]
    assert out["final_answer"].startswith(answer)
    assert not any(mark in out["final_answer"] for mark in ("｜", "<|", "action_input", "Done."))
    assert_clean(out)


def streamed_answer(*replies: str) -> str:
    """The text a scripted text model's run streams in LangGraph's messages mode."""
    agent = build_agent(text_model(*replies), [web_search])
    # Tokens of model calls inside the decide subgraph come with subgraphs=True.
    return "".join(chunk.content for _ns, (chunk, _meta) in agent.stream(
        {"messages": [("user", "q")]}, stream_mode="messages", subgraphs=True)
        if isinstance(chunk, AIMessageChunk))


@pytest.mark.parametrize(("answer", "shown", "hidden"), [
    ("Thought: done\nFinal Answer: X is <tool_call>nothing</tool_call> a letter [R1].",
     ["X is", "a letter"], ["nothing"]),
    # The label later on the Thought line, as the parser reads it: its text had come only
    # whole, in the final state.
    ("Thought: I know it now. Final Answer: X is a letter [R1].", ["X is a letter"],
     ["I know it now"]),
    # A structured chat agent's envelope: its text, as in the final answer, not its JSON.
    ('Final Answer: {"action": "Final Answer", "action_input": "X is a letter [R1]."}',
     ["X is a letter"], ["action_input", "{"]),
])
def test_streamed_tokens_are_sanitized(answer: str, shown: list[str], hidden: list[str]) -> None:
    streamed = streamed_answer(
        'Thought: look\nAction: web_search\nAction Input: {"query": "x"}', answer)
    assert all(text in streamed for text in shown)
    assert not any(text in streamed for text in [*hidden, *MARKUP])


# --- parallel calls: the request's numbers decide whether a further call is due ------------


def _hypot_strategy(**options: Any):
    from callgate.graph.decide_react import ReactStrategy

    registry = ToolRegistry()

    @registry.tool()
    def hypot(a: int, b: int) -> float:
        """Length of the hypotenuse."""
        return (a * a + b * b) ** 0.5

    return ReactStrategy(text_model(), registry, **options)


def _after_calls(*args: dict[str, int], request: str) -> dict[str, Any]:
    lines = [f"Action: hypot\nAction Input: {{\"a\": {a['a']}, \"b\": {a['b']}}}" for a in args]
    return {"messages": [HumanMessage(request)], "reply_text": "\n".join(lines),
            "calls_written": len(args), "chosen_tool": "hypot"}


def test_the_turn_ends_once_every_number_of_the_request_is_used() -> None:
    from callgate.graph.decide_react import FORCE_BIAS

    strategy = _hypot_strategy()
    request = "Hypotenuse for sides 3 and 4, and for 5 and 12."
    one = strategy._next_kwargs(_after_calls({"a": 3, "b": 4}, request=request))
    assert one["logit_bias"] == {"Observation": 0.0}  # 5 and 12 left: the model decides
    both = _after_calls({"a": 3, "b": 4}, {"a": 5, "b": 12}, request=request)
    assert strategy._next_kwargs(both)["logit_bias"] == {"Observation": FORCE_BIAS}


def test_without_coverage_the_end_of_turn_bias_applies() -> None:
    off = _hypot_strategy(end_turn_bias=2.5, coverage=False)
    state = _after_calls({"a": 3, "b": 4}, request="sides 3 and 4, then 5 and 12")
    assert off._next_kwargs(state)["logit_bias"] == {"Observation": 2.5}


def test_a_request_of_one_ask_without_numbers_or_items_ends_after_its_first_call() -> None:
    """``one_call_unlisted`` (the default, on the grammar path): nothing in "the usual
    triangle, please" asks for a second call in the same reply; a request that asks for
    several things keeps the end-of-turn bias, and one with numbers lets them decide."""
    from callgate.graph.decide_react import FORCE_BIAS

    strategy = _hypot_strategy(end_turn_bias=2.5)
    strategy.grammar = True  # as a llama.cpp model has it; nothing is decoded here
    state = _after_calls({"a": 3, "b": 4}, request="the usual triangle, please")
    assert strategy._next_kwargs(state)["logit_bias"] == {"Observation": FORCE_BIAS}
    several = ("Find the hypotenuse of the usual triangle. "
               "Then find the hypotenuse of the big triangle.")
    assert len(strategy.plan(_after_calls({"a": 3, "b": 4}, request=several))) == 2
    state = _after_calls({"a": 3, "b": 4}, request=several)
    assert strategy._next_kwargs(state)["logit_bias"] == {"Observation": 2.5}
    state = _after_calls({"a": 3, "b": 4}, request="sides 3 and 4, then 5 and 12")
    assert strategy._next_kwargs(state)["logit_bias"] == {"Observation": 0.0}
    strategy.one_call_unlisted = False
    state = _after_calls({"a": 3, "b": 4}, request="the usual triangle, please")
    assert strategy._next_kwargs(state)["logit_bias"] == {"Observation": 2.5}


def test_quoted_values_no_call_holds_yet_leave_the_further_call_to_the_model() -> None:
    """Hand-written requests: two quoted values, one ask, no numbers, no list the list
    reader reads. While a quoted value is left, ``one_call_unlisted`` does not end the
    reply (the quotes may be a list it misses); once the calls hold them all, or with one
    quoted value, it does."""
    from callgate.graph.decide_react import FORCE_BIAS, ReactStrategy

    registry = ToolRegistry()

    @registry.tool()
    def exhibition(name: str, museum: str) -> str:
        """Details of an exhibition."""
        return name

    strategy = ReactStrategy(text_model(), registry, end_turn_bias=2.5)
    strategy.grammar = True  # as a llama.cpp model has it; nothing is decoded here

    def after(*calls: tuple[str, str], request: str) -> dict[str, Any]:
        lines = [f'Action: exhibition\nAction Input: {{"name": "{name}", "museum": "{museum}"}}'
                 for name, museum in calls]
        return {"messages": [HumanMessage(request)], "reply_text": "\n".join(lines),
                "calls_written": len(calls), "chosen_tool": "exhibition"}

    two = ("Tell me about the exhibition 'Night Skies' at the city gallery, and 'Old Maps' "
           "at the harbour museum.")
    first = after(("Night Skies", "city gallery"), request=two)
    assert strategy._next_kwargs(first)["logit_bias"] == {"Observation": 2.5}
    both = after(("Night Skies", "city gallery"), ("Old Maps", "harbour museum"), request=two)
    assert strategy._next_kwargs(both)["logit_bias"] == {"Observation": FORCE_BIAS}
    one = after(("Night Skies", "city gallery"),
                request="Tell me about the exhibition 'Night Skies' at the city gallery.")
    assert strategy._next_kwargs(one)["logit_bias"] == {"Observation": FORCE_BIAS}


def test_a_further_call_is_decoded_without_a_bias() -> None:
    # A digit bias towards the unused numbers wrote "2222222222" into free strings; the
    # value chooser's reuse penalty (callgate.graph.choose_values) steers further calls.
    strategy = _hypot_strategy()
    state = _after_calls({"a": 3, "b": 4}, request="sides 3 and 4, then 5 and 12")
    assert "logit_bias" not in strategy._args_kwargs(state)


def test_the_turn_ends_when_the_last_call_used_no_number_left() -> None:
    from callgate.graph.decide_react import FORCE_BIAS

    strategy = _hypot_strategy()
    request = "Hypotenuse for sides 3 and 4, and for 5 and 12."
    # The second call repeats the first: no progress on 5 and 12, so the turn ends.
    state = _after_calls({"a": 3, "b": 4}, {"a": 3, "b": 4}, request=request)
    assert strategy._next_kwargs(state)["logit_bias"] == {"Observation": FORCE_BIAS}
    # A first call that takes none of the request's numbers ends the turn too.
    state = _after_calls({"a": 1, "b": 1}, request=request)
    assert strategy._next_kwargs(state)["logit_bias"] == {"Observation": FORCE_BIAS}


def test_the_prompt_shows_the_reply_format_as_it_is_decoded() -> None:
    """The system prompt only (a scripted model; nothing is decoded). Where the grammar
    writes no Thought, the format has no Thought or Observation lines; elsewhere it keeps
    them, and ``terse_format=False`` brings them back."""
    from callgate.graph.decide_react import ReactStrategy
    from callgate.prompts.react import REACT_SYSTEM, REACT_SYSTEM_TERSE

    registry = ToolRegistry()
    registry.register(web_search)
    strategy = ReactStrategy(text_model(), registry)
    assert not strategy.grammar  # free text: the model writes its own Thought lines
    assert "Thought: <one short sentence>" in strategy.system
    assert "Observation: [R1]" in strategy.system

    strategy.grammar = True  # the grammar starts a reply at "Action:" or "Final Answer:"
    terse = strategy.system
    assert "Thought" not in terse and "Observation" not in terse
    assert "- web_search: Search the web." in terse
    for line in ("Action: <one tool name from the list>", "Action Input: <a JSON object",
                 "To make several calls at once", "Final Answer: <your answer"):
        assert line in terse
    # The same instructions, less the lines about Thoughts and Observations.
    assert set(REACT_SYSTEM_TERSE.splitlines()) < set(REACT_SYSTEM.splitlines())

    strategy.thought = True
    assert "Thought: <one short sentence>" in strategy.system
    strategy.thought = False
    strategy.terse_format = False
    assert "Thought: <one short sentence>" in strategy.system
    strategy.terse_format = True
    assert strategy.system == terse


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"sunny in {city}"


def todo_list() -> list[str]:
    """The open tasks on my todo list."""
    return ["buy milk"]


def test_the_strategy_plans_with_the_asks_of_the_request() -> None:
    """The plan is :func:`callgate.tools.asks.asks` of the latest request (the opening
    sentence's "tasks" makes todo_list the first ask's tool); the CPU clause stays with the
    ask before it."""
    from callgate.graph.decide_react import ReactStrategy
    from callgate.tools.asks import asks

    registry = ToolRegistry()
    for function in (web_search, system_stats, get_weather, todo_list):
        registry.register(function)
    strategy = ReactStrategy(text_model(), registry)
    strategy.grammar = True  # asks are read only under the grammar
    request = ("Can you help me with a few tasks? First, get the weather in Paris. "
               "Then search the web for hotels, and show the CPU usage.")
    plan = strategy.plan({"messages": [HumanMessage(request)]})
    assert [ask.tools for ask in plan] == [("todo_list",), ("web_search",)]
    assert plan == asks(registry, request)


def test_an_answer_with_numbers_no_tool_gave_goes_back_for_a_call() -> None:
    # The bundled model, in a chat, answered "How much disk is used?" with "1.25 GB" and no
    # call. Under the grammar (set here by hand: the scripted model decodes none), such a
    # first answer goes back once, naming the offered tool, and the correction round's
    # choice is a call.
    from langchain_core.messages import ToolMessage

    from callgate.graph.decide_react import ReactStrategy
    from callgate.prompts.correction import UNSUPPORTED_ANSWER
    from callgate.tools.grounding import CORRECTION_MARK

    def disk_usage() -> dict[str, float]:
        """Disk usage of this computer, in percent."""
        return {"disk_percent": 22.4}

    strategy = ReactStrategy(text_model(), ToolRegistry([web_search, disk_usage]))
    strategy.grammar = True
    state = {"messages": [HumanMessage("How much disk is used?")]}
    sent_back = strategy._unsupported_answer(state, "It uses 1.25 GB.")
    assert sent_back is not None and sent_back["name"] == "disk_usage"
    assert sent_back["kind"] == UNSUPPORTED_ANSWER and "(1.25)" in sent_back["error"]
    # Numbers the conversation holds, no numbers, no tool offered: the answer stands.
    assert strategy._unsupported_answer(state, "It is a disk.") is None
    assert strategy._unsupported_answer(
        {"messages": [HumanMessage("Is 1.25 GB of disk used?")]}, "Yes, 1.25 GB.") is None
    assert strategy._unsupported_answer(
        {"messages": [HumanMessage("Tell me a joke")]}, "3 men walk into a bar.") is None
    # Not in the BFCL harness (no answer text is written there), not in a correction's
    # reply, and not after a call of the turn.
    strategy.calls_only = True
    assert strategy._unsupported_answer(state, "It uses 1.25 GB.") is None
    strategy.calls_only = False
    correction = HumanMessage(sent_back["error"], additional_kwargs={
        **CORRECTION_MARK, "callgate_refusal": UNSUPPORTED_ANSWER})
    correcting = {"messages": [*state["messages"], correction]}
    assert strategy._unsupported_answer(correcting, "It uses 1.25 GB.") is None
    assert strategy._calls_for(correcting)  # the correction round's choice is a call
    called = {"messages": [*state["messages"],
                           AIMessage("", tool_calls=[{"name": "disk_usage", "args": {},
                                                      "id": "c1"}]),
                           ToolMessage("[R1] disk 22.4%", tool_call_id="c1")]}
    assert strategy._unsupported_answer(called, "It uses 1.25 GB.") is None
    strategy.checked_answers = False
    assert strategy._unsupported_answer(state, "It uses 1.25 GB.") is None
    # The correct node sends it back as it is, marked with its kind (which _calls_for reads).
    from callgate.graph.correct import make_correct
    from callgate.graph.settings import LoopSettings

    correct = make_correct(LoopSettings(registry=strategy.registry), strategy)
    update = correct({**state, "step": 1, "validation_errors": [sent_back]})
    [message] = update["messages"]
    assert isinstance(message, HumanMessage) and message.content == sent_back["error"]
    assert message.additional_kwargs["callgate_refusal"] == UNSUPPORTED_ANSWER
    # With no correction left (``corrections=0``), the answer stands, its number flagged.
    # (The scripted model ignores the grammar: its two replies are the choice and the rest.)
    from callgate.graph.builder import assemble

    model = text_model("Final Answer: It uses", " 1.25 GB.")
    strategy = ReactStrategy(model, strategy.registry)
    strategy.grammar = True
    graph = assemble(LoopSettings(registry=strategy.registry, corrections=0), strategy)
    out = graph.compile().invoke({"messages": [HumanMessage("How much disk is used?")]})
    assert out["status"] == "done" and "1.25 GB" in out["final_answer"]
    assert out["answer_checks"] == ["numbers in no result or question: 1.25"]


def test_the_history_leaves_out_a_tool_result_that_answers_no_call() -> None:
    # The text-only model reads results as "Observation:" turns; one answering no call (a
    # refused run's input, kept in the thread) is no observation of its own calls.
    from langchain_core.messages import ToolMessage

    from callgate.graph.decide_react import render_history

    call = AIMessage("", tool_calls=[{"name": "web_search", "args": {"query": "x"},
                                      "id": "c1"}])
    history = render_history([HumanMessage("find x"), ToolMessage("stray", tool_call_id="c0"),
                              call, ToolMessage("found x", tool_call_id="c1")])
    assert [m.text for m in history] == [
        "find x", 'Action: web_search\nAction Input: {"query": "x"}', "Observation: found x"]



def test_tool_choice_on_the_react_path_needs_the_grammar_and_a_tool_it_names() -> None:
    # It was ignored there: "required" answered without a call, a name of no tool was built.
    from callgate.graph.decide_native import ToolChoiceError

    text_only = ScriptedChatModel(script=["Final Answer: 4"], native_tools=False)
    with pytest.raises(ValueError, match="tool_choice 'required' needs a model with native "
                                         "tool calling, or a llama.cpp model under the grammar"):
        build_agent(text_only, [web_search], tool_choice="required")
    with pytest.raises(ToolChoiceError, match="'no_such_tool' is no tool"):
        build_agent(text_only, [web_search], tool_choice="no_such_tool")
    build_agent(text_only, [web_search], tool_choice="auto")  # nothing to force


def test_a_correction_without_a_format_example_for_its_tool_says_what_to_do() -> None:
    # A strategy's format_example may give none (str | None): one giving an example for
    # some tools only made the correction raise TypeError for the others.
    from callgate.prompts.correction import correction_message

    def example(tool: str, schema: dict) -> str | None:
        return None if tool == "plain" else f"Action: {tool}"

    schema = {"type": "object", "properties": {}}
    assert "Action: shaped" in correction_message("bad", "shaped", schema, example)
    message = correction_message("bad", "plain", schema, example)
    assert "Call the tool again with corrected arguments" in message
