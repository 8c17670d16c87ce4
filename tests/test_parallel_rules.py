"""The parallel-call rules of the grammar path: calls so far, no repeats, coverage.

The strategy is driven through its node functions with hand-written states (no language
model decodes here: the rules act on what the model wrote). ``ScriptedChatModel`` is only
the strategy's model slot; grammar decoding is switched on by hand, as a llama.cpp model
would have it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from callgate.graph.decide_react import FINAL, ReactStrategy, turn_calls
from callgate.models.scripted import ScriptedChatModel
from callgate.tools.registry import ToolRegistry


def _strategy() -> ReactStrategy:
    registry = ToolRegistry()

    @registry.tool()
    def play(artist: str, minutes: int) -> str:
        """Play songs of an artist for some minutes."""
        return "ok"

    strategy = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry)
    strategy.grammar = True
    return strategy


REQUEST = "Play Nina Simone for 20 minutes and then Miles Davis for 35 minutes."


def _earlier_step(*calls: dict[str, Any]) -> list[Any]:
    tool_calls = [{"id": f"c{i}", "name": "play", "args": a, "type": "tool_call"}
                  for i, a in enumerate(calls)]
    return [HumanMessage(REQUEST), AIMessage("", tool_calls=tool_calls),
            *(ToolMessage("ok", tool_call_id=f"c{i}") for i in range(len(calls)))]


def test_calls_so_far_span_the_earlier_steps_and_this_reply() -> None:
    strategy = _strategy()
    state = {"messages": _earlier_step({"artist": "Nina Simone", "minutes": 20}),
             "reply_text": 'Action: play\nAction Input: {"artist": "Miles Davis", "minutes": 35}',
             "calls_written": 1}
    assert strategy.calls_so_far(state) == [
        {"name": "play", "args": {"artist": "Nina Simone", "minutes": 20}},
        {"name": "play", "args": {"artist": "Miles Davis", "minutes": 35}}]
    # A new request starts a new turn: the earlier turn's calls are not "so far".
    later = [*state["messages"], AIMessage("done"), HumanMessage("And now?")]
    assert turn_calls(later) == []


def test_a_call_repeating_an_earlier_step_is_not_written_and_the_turn_answers() -> None:
    strategy = _strategy()
    state = {"messages": _earlier_step({"artist": "Nina Simone", "minutes": 20}),
             "reply_text": "Action: play\n", "chosen_tool": "play", "calls_written": 0}
    out = strategy._after_args(state, '{"artist": "Nina Simone", "minutes": 20}')
    assert out["repeat_dropped"] and out["reply_text"] == FINAL
    # Other arguments are a new call, written as usual.
    out = strategy._after_args(state, '{"artist": "Miles Davis", "minutes": 35}')
    assert not out["repeat_dropped"]
    assert out["reply_text"].endswith('Action Input: {"artist": "Miles Davis", "minutes": 35}')


def test_a_repeat_within_one_reply_is_dropped_and_the_calls_before_it_kept() -> None:
    strategy = _strategy()
    first = 'Action: play\nAction Input: {"artist": "Nina Simone", "minutes": 20}'
    state = {"messages": [HumanMessage(REQUEST)], "reply_text": first + "\nAction: play\n",
             "chosen_tool": "play", "calls_written": 1}
    out = strategy._after_args(state, '{"artist": "Nina Simone", "minutes": 20}')
    assert out == {"reply_text": first, "chosen_tool": None, "repeat_dropped": True}


def test_once_the_turn_used_every_number_it_answers_without_a_choice() -> None:
    strategy = _strategy()
    both = _earlier_step({"artist": "Nina Simone", "minutes": 20},
                         {"artist": "Miles Davis", "minutes": 35})
    assert strategy.covered({"messages": both})
    out = strategy.choose({"messages": both}, {})
    assert out["reply_text"] == FINAL and out["cut_off"]  # no model call was needed
    one = _earlier_step({"artist": "Nina Simone", "minutes": 20})
    assert not strategy.covered({"messages": one})  # 35 is left: the model chooses
    assert not strategy.covered({"messages": [HumanMessage(REQUEST)]})  # nothing called yet
