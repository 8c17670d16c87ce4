"""The ReAct path end to end with the real bundled model (SmolLM2-135M via llama.cpp).

The model is tiny: these tests assert structure and behaviour (termination, validation,
clean answers, schema-valid calls under grammar), not the model's wisdom.
"""

from __future__ import annotations

from typing import Literal

import pytest

from callgate import ToolRegistry, build_agent
from callgate.tools.stats import UsageStats

pytestmark = pytest.mark.llama

MARKUP = ("<tool_call>", "Action:", "Action Input:", "[TOOL_CALLS]", "✿FUNCTION✿", "<think>",
          "Observation:", "<|im_start|>", "<|im_end|>")


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """Current weather for a city."""
    return {"city": city, "temperature": 21, "unit": unit}


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict:
    """Convert an amount of money from one currency to another (ISO codes like EUR)."""
    return {"amount": round(amount * 1.1, 2), "currency": to_currency}


def set_timer(minutes: int, label: str = "timer") -> str:
    """Start a countdown timer."""
    return f"{label} set for {minutes} min"


def search_notes(query: str, limit: int = 3, tags: list[str] | None = None) -> list[dict]:
    """Search the user's notes."""
    return [{"title": f"Note about {query}", "text": "..."}][:limit]


PROMPTS = [
    "What is the weather in Paris?",
    "How warm is it in Tokyo right now, in fahrenheit?",
    "Is it raining in London?",
    "Weather for Berlin please.",
    "Convert 100 dollars to euros.",
    "How many yen is 50 EUR?",
    "Change 20 GBP into USD.",
    "Set a timer for 10 minutes.",
    "Remind me in 25 minutes to take the pasta out.",
    "Start a 3 minute tea timer.",
    "Find my notes about the project kickoff.",
    "Search my notes for 'budget', show 2 results.",
    "Do I have notes tagged travel about Rome?",
    "What is the temperature in Madrid?",
    "Convert 9.99 EUR to CHF.",
    "Set a timer of 45 minutes labelled laundry.",
    "Look up notes on LangGraph.",
    "Weather in New York in celsius.",
    "What's 15 USD in euros?",
    "Say hello to me.",
    "Tell me a short joke.",
    "Search notes for dentist appointment.",
]


def registry() -> ToolRegistry:
    return ToolRegistry([get_weather, convert_currency, set_timer, search_notes])


def run_prompts(prompts: list[str], *, grammar: bool,
                max_steps: int = 2) -> tuple[UsageStats, list[dict]]:
    stats = UsageStats(None)
    tools = registry()
    agent = build_agent("bundled", tools, grammar=grammar, max_steps=max_steps, stats=stats)
    outputs = []
    for prompt in prompts:
        out = agent.invoke({"messages": [("user", prompt)]})
        outputs.append(out)
        assert out["status"] in {"done", "step_limit", "failed"}
        assert len({e["step"] for e in out["tool_events"]}) <= max_steps  # the step limit
        assert out["final_answer"] and not any(m in out["final_answer"] for m in MARKUP)
        for event in out["tool_events"]:  # every executed call passed validation first
            assert tools.validate({"tool": event["tool"], "args": event["args"]}).valid
    return stats, outputs


def call_counts(stats: UsageStats) -> tuple[int, int]:
    rows = stats.summary()
    valid = sum(r["calls"] for r in rows)
    invalid = sum(r["invalid"] for r in rows)
    return valid, invalid


@pytest.mark.slow  # 20 questions on the real model: minutes, over 5 on a busy machine
@pytest.mark.timeout(1500)
def test_grammar_makes_every_tool_call_schema_valid() -> None:
    assert len(PROMPTS) >= 20
    stats, outputs = run_prompts(PROMPTS, grammar=True)
    valid, invalid = call_counts(stats)
    attempted = valid + invalid
    rate = valid / attempted if attempted else 0.0
    used = sum(1 for out in outputs if out["tool_events"])
    print(f"\nReAct + grammar, {len(PROMPTS)} prompts: {attempted} tool calls, {valid} "
          f"schema-valid ({rate:.0%}); {used} runs used a tool; statuses "
          f"{sorted({o['status'] for o in outputs})}")
    assert attempted > 0 and invalid == 0 and rate == 1.0


@pytest.mark.slow  # unconstrained decoding runs to the token limit: minutes
@pytest.mark.timeout(1500)
def test_without_grammar_the_loop_still_ends_cleanly() -> None:
    stats, outputs = run_prompts(PROMPTS[:4], grammar=False)
    valid, invalid = call_counts(stats)
    print(f"\nReAct without grammar, 4 prompts: {valid} valid, {invalid} invalid calls; "
          f"statuses {[o['status'] for o in outputs]}")
    for out in outputs:  # an invalid reply never leaks: it is corrected or fails cleanly
        if out["status"] == "failed":
            assert "still invalid after a correction" in out["final_answer"]


def test_streaming_the_real_model_leaks_no_markup() -> None:
    from langchain_core.messages import AIMessageChunk

    agent = build_agent("bundled", registry(), max_steps=2)
    streamed = "".join(
        chunk.content for _ns, (chunk, _meta) in agent.stream(
            {"messages": [("user", "Say hello, then tell me the weather in Rome.")]},
            stream_mode="messages", subgraphs=True)
        if isinstance(chunk, AIMessageChunk) and isinstance(chunk.content, str))
    assert not any(m in streamed for m in MARKUP)


def calls_made(agent: object, question: str) -> list[str]:
    """The tools of every call the model wrote in the run, run or refused (stream events)."""
    made = []
    for event in agent.stream({"messages": [("user", question)]},  # type: ignore[attr-defined]
                              stream_mode="custom", subgraphs=True):
        _ns, data = event
        if data.get("event") in ("tool_start", "call_refused"):
            made.append(data["tool"])
    return made


def test_tool_choice_forces_the_first_call_through_the_grammar() -> None:
    # "Say hello to me." shares no word with any tool: unforced, no tool is offered and the
    # model answers. Forced, the grammar admits only a call (of the named tool, where one is
    # named) as the turn's first choice; grounding still refuses what it invents.
    tools = {"get_weather", "convert_currency", "set_timer", "search_notes"}
    assert calls_made(build_agent("bundled", registry(), max_steps=2), "Say hello to me.") == []
    for choice, allowed in (("set_timer", {"set_timer"}), ("required", tools)):
        agent = build_agent("bundled", registry(), max_steps=2, tool_choice=choice)
        made = calls_made(agent, "Say hello to me.")
        assert made and made[0] in allowed, made
    agent = build_agent("bundled", registry(), max_steps=2, tool_choice="set_timer")
    assert calls_made(agent, "What is the weather in Paris?")[:1] == ["set_timer"]
    agent = build_agent("bundled", registry(), max_steps=2, tool_choice="none")
    assert calls_made(agent, "What is the weather in Paris?") == []


def test_a_forced_tool_stays_forced_in_the_correction_of_its_call() -> None:
    # A user walkthrough: `callgate ask "How much memory is free?" --tool-choice calculator`
    # had the calculator call refused (an invented expression), and the correction then
    # called system_stats, which the user had not chosen. The native path binds the choice
    # for the correction too (the loop counts it as the same step).
    from callgate.tools.builtin.calculator import calculator
    from callgate.tools.builtin.system_stats import system_stats

    agent = build_agent("bundled", [calculator, system_stats], max_steps=2,
                        tool_choice="calculator")
    made = calls_made(agent, "How much memory is free?")
    assert made and set(made) == {"calculator"}, made
