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


def test_a_request_without_numbers_or_items_is_covered_by_a_steps_call() -> None:
    """``covered_unlisted`` (the default): "Play some Nina Simone" gives nothing a further
    step could take a new value from; once a step of the turn called tools successfully
    (and no ask of the request is open) the turn answers. Not after a failed call, nor in
    the reply to a correction, which makes the refused call again."""
    strategy = _strategy()
    request = "Play some Nina Simone please."
    call = {"id": "c0", "name": "play", "args": {"artist": "Nina Simone"}, "type": "tool_call"}
    step = [HumanMessage(request), AIMessage("", tool_calls=[call]),
            ToolMessage("ok", tool_call_id="c0")]
    assert strategy.offered({"messages": step[:1]}) == ["play"]
    assert strategy.covered({"messages": step})
    assert not strategy.covered({"messages": step[:1]})  # nothing called yet
    failed = ToolMessage("[play] failed: unknown artist", tool_call_id="c0", status="error")
    assert not strategy.covered({"messages": [*step[:2], failed]})
    correction = ToolMessage("'play' is missing 'minutes'", tool_call_id="c0",
                             additional_kwargs={"callgate_correction": True})
    assert not strategy.covered({"messages": [*step[:2], correction]})
    # A request with a list (or numbers) is covered only once every item is used.
    listed = [HumanMessage("I want to hear Nina Simone and Miles Davis."), *step[1:]]
    assert not strategy.covered({"messages": listed})
    strategy.covered_unlisted = False
    assert not strategy.covered({"messages": step})


def test_a_chained_request_gets_its_second_call_where_it_is_an_ask_of_its_own() -> None:
    """"Find my city, then tell me its weather": after ``locate`` ran, the weather is an
    ask no call has served, so the turn is not covered and ``weather`` is offered. Said in
    one clause ("... and tell me the weather there") it is one ask, and the turn answers
    after ``locate``: offering the other tools there cost BFCL verdicts (README)."""
    registry = ToolRegistry()

    @registry.tool()
    def locate() -> str:
        """Find the city the user is in."""
        return "Paris"

    @registry.tool()
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    strategy = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry)
    strategy.grammar = True
    call = {"id": "c0", "name": "locate", "args": {}, "type": "tool_call"}

    def after_locate(request: str) -> dict[str, Any]:
        return {"messages": [HumanMessage(request), AIMessage("", tool_calls=[call]),
                             ToolMessage("Paris", tool_call_id="c0")]}

    chained = after_locate("Find my city, then tell me its weather.")
    assert not strategy.covered(chained)
    assert strategy.offered(chained) == ["weather"]
    assert strategy.covered(after_locate("Find my city and tell me the weather there."))


# --- speed: only the tokens the model chooses are decoded; a shared prompt prefix ---------


def _fast(*replies: str, tools: int = 1) -> tuple[ReactStrategy, ScriptedChatModel]:
    registry = ToolRegistry()

    @registry.tool()
    def play(artist: str, minutes: int) -> str:
        """Play songs of an artist for some minutes."""
        return "ok"

    if tools > 1:
        @registry.tool()
        def pause(minutes: int) -> str:
            """Pause the music for some minutes."""
            return "ok"

    model = ScriptedChatModel(script=list(replies), native_tools=False)
    strategy = ReactStrategy(model, registry, preselect=None)
    strategy.grammar = True
    return strategy, model


def test_by_default_a_choice_among_tools_is_decoded_whole_and_tools_come_first() -> None:
    # Scripted model (deterministic): as measured on BFCL (README), among several tools
    # the choice and the tool's name are decoded in one reply; the tools come first.
    strategy, model = _fast("Action: pause\n", tools=2)
    out = strategy.choose({"messages": [HumanMessage(REQUEST)]}, {})
    assert out["chosen_tool"] == "pause"
    assert len(model.requests) == 1 and model.requests[0]["max_tokens"] > 1
    assert strategy.system.index("Tools:\n- play") < strategy.system.index("Final Answer:")


def test_with_one_tool_offered_only_the_choosing_tokens_are_decoded_by_default() -> None:
    # Scripted model: one tool. The grammar fixes "Action: play\n" once "Action" is
    # chosen, so one token is decoded for the choice and two for the next action ("\n",
    # then "Action" or "Observation"); the rest of the line is written, not decoded.
    strategy, model = _fast("Action", "\nAction")
    strategy.asks = strategy.coverage = False  # the model, not the request, picks the next
    state: dict[str, Any] = {"messages": [HumanMessage(REQUEST)]}
    out = strategy.choose(state, {})
    assert out["reply_text"] == "Action: play\n" and out["chosen_tool"] == "play"
    state.update(out, reply_text='Action: play\nAction Input: {"artist": "Nina Simone", '
                 '"minutes": 20}', calls_written=1)
    out = strategy.next_action(state, {})
    assert out["chosen_tool"] == "play" and out["reply_text"].endswith("\nAction: play\n")
    assert [r["max_tokens"] for r in model.requests] == [1, 2]
    strategy, model = _fast("Final")
    out = strategy.choose({"messages": [HumanMessage(REQUEST)]}, {})
    assert out["reply_text"] == FINAL and out["cut_off"]  # write_answer writes the answer
    assert [r["max_tokens"] for r in model.requests] == [1]


def test_a_tool_without_arguments_is_no_repeat_of_itself() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def system_stats() -> str:
        """CPU and memory usage."""
        return "ok"

    strategy = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry)
    strategy.grammar = True
    state = {"messages": [HumanMessage("How busy is the CPU?")],
             "reply_text": "Action: system_stats\n", "chosen_tool": "system_stats",
             "calls_written": 0}
    assert strategy.calls_so_far(state) == []  # the chosen tool has no arguments yet
    assert not strategy._after_args(state, "{}")["repeat_dropped"]


def test_a_string_written_twice_in_a_list_is_kept_once() -> None:
    # SmolLM2 loops inside lists; the scripted model writes what it wrote on BFCL.
    registry = ToolRegistry()

    @registry.tool()
    def find_lawyer(city: str, specialty: list[str], fees: list[int]) -> str:
        """Lawyers in a city by specialty."""
        return "ok"

    looped = ('{"city": "Chicago", "specialty": ["Divorce", "Divorce", "divorce", "Family", '
              '"Divorce"], "fees": [200, 200, 400]}')
    strategy = ReactStrategy(ScriptedChatModel(script=[AIMessage(looped)] * 2,
                                               native_tools=False), registry)
    strategy.grammar = True
    state = {"messages": [HumanMessage("A divorce lawyer in Chicago?")],
             "reply_text": "Action: find_lawyer\n", "chosen_tool": "find_lawyer",
             "calls_written": 0}
    out = strategy.fill_args(state, {})
    assert out["reply_text"].endswith(
        'Action Input: {"city": "Chicago", "specialty": ["Divorce", "Family"], '
        '"fees": [200, 200, 400]}')  # numbers are data: they may repeat
    strategy.unique_items = False
    assert strategy.fill_args(state, {})["reply_text"].endswith(f"Action Input: {looped}")


def test_a_flag_said_both_ways_takes_each_value_in_a_call_of_its_own() -> None:
    """"... with breakfast, and then ... without breakfast": the first call takes true,
    and false is then an item a further call is for (``said_flags``)."""
    registry = ToolRegistry()

    @registry.tool()
    def book_room(city: str, breakfast_included: bool = False) -> str:
        """Book a hotel room in a city."""
        return "ok"

    strategy = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry)
    strategy.grammar = True
    request = HumanMessage("Book a room in Lyon with breakfast, and then the same room "
                           "without breakfast.")
    first = {"city": "Lyon", "breakfast_included": True}
    assert strategy._said_flags({"messages": [request], "chosen_tool": "book_room"}) == {
        "breakfast_included": True}
    call = {"id": "c0", "name": "book_room", "args": first, "type": "tool_call"}
    step = [request, AIMessage("", tool_calls=[call]), ToolMessage("ok", tool_call_id="c0")]
    state = {"messages": step, "reply_text": "Action: book_room\n", "chosen_tool": "book_room",
             "calls_written": 0}
    assert not strategy.covered(state)  # false is left: the turn goes on
    assert strategy._said_flags(state) == {"breakfast_included": False}
    # The same values with the other flag are a call of its own, not a restatement.
    out = strategy._after_args(state, '{"city": "Lyon", "breakfast_included": false}')
    assert not out["repeat_dropped"]
    both = [*step[:1], AIMessage("", tool_calls=[
        call, {**call, "id": "c1", "args": {**first, "breakfast_included": False}}]),
        ToolMessage("ok", tool_call_id="c0"), ToolMessage("ok", tool_call_id="c1")]
    assert strategy.covered({"messages": both})  # both said values have a call
    strategy.said_flags = False
    assert strategy.covered(state)  # off: one call covers the request's one city
