"""What a request asks for (``callgate.tools.asks``): its asks, the lists it gives, and how
the grammar path goes through them.

Hand-written requests, not BFCL's. The strategy is driven through its methods with
hand-written states: no language model decodes here (``ScriptedChatModel`` only fills the
model slot; grammar decoding is switched on by hand, as a llama.cpp model would have it).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from callgate.graph.decide_react import FORCE_BIAS, ReactStrategy
from callgate.models.scripted import ScriptedChatModel
from callgate.tools.asks import (
    asks,
    counted_calls,
    crossed_lists,
    items_left,
    list_items_left,
    listed_items,
    listed_members,
    listed_numbers,
    pairs_held,
    pairs_left,
    quoted_left,
    quoted_values,
    segments,
)
from callgate.tools.registry import ToolRegistry


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def find_primes(start: int, end: int) -> str:
        """Find the prime numbers between two numbers."""
        return "ok"

    @registry.tool()
    def fibonacci_series(count: int) -> str:
        """Get the fibonacci series up to a number."""
        return "ok"

    @registry.tool()
    def weather(city: str) -> str:
        """Current weather of a city."""
        return "ok"

    @registry.tool()
    def entropy_change(initial_temp: int, final_temp: int, isothermal: bool = True) -> str:
        """Calculate the entropy change of a process."""
        return "ok"

    return registry


def _texts(request: str) -> list[str]:
    return [request[s:e].strip() for s, e in segments(request)]


def test_a_request_is_cut_into_sentences_and_clauses_but_not_at_titles_or_initials() -> None:
    assert _texts("Find the primes between 5 and 50. Then get the fibonacci series upto 50.") == [
        "Find the primes between 5 and 50.", "Then get the fibonacci series upto 50."]
    assert _texts("Calculate the factorial of 8 and generate the primes from 1 to 50.") == [
        "Calculate the factorial of 8", "generate the primes from 1 to 50."]
    # "Mr. Doe", "L.A Lakers" and "U.S. history" end no sentence; "5.6" is a number.
    assert len(segments("Ask Mr. Doe about the L.A Lakers and U.S. history at 5.6 pm.")) == 1


def test_a_segment_that_moves_on_to_another_tool_starts_an_ask() -> None:
    request = "Find the primes between 50 and 150. Then get the fibonacci series upto 150."
    found = asks(_registry(), request)
    assert [a.tools for a in found] == [("find_primes",), ("fibonacci_series",)]
    assert found[1].text == "Then get the fibonacci series upto 150."
    assert request[found[0].start:found[0].end].strip() == found[0].text


def test_a_single_request_and_an_afterthought_about_the_same_tool_are_one_ask() -> None:
    registry = _registry()
    assert len(asks(registry, "What is the weather in Paris? Also in Celsius please.")) == 1
    assert len(asks(registry, "Find the primes between 5 and 50.")) == 1
    # A segment about no tool joins the ask it follows.
    assert len(asks(registry, "Find the primes between 5 and 50. Also, thank you!")) == 1


def test_the_same_tool_again_with_items_of_its_own_or_changed_is_an_ask() -> None:
    registry = _registry()
    twice = asks(registry, "What is the weather in Paris? Also check the weather in Rome.")
    assert [a.tools for a in twice] == [("weather",), ("weather",)]
    changed = asks(registry, "Calculate the entropy change from 300 to 350 Kelvin. "
                             "What if the process is not isothermal, how does the entropy change?")
    assert len(changed) == 2 and changed[1].again and not changed[0].again


def test_tools_a_sentence_names_one_and_apart_are_an_ask_each() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def museum_opening_hours(museum: str) -> str:
        """Opening hours of a museum."""
        return "ok"

    @registry.tool()
    def museum_waiting_time(museum: str) -> str:
        """Current waiting time at a museum's entrance."""
        return "ok"

    # One clause naming both tools, each by a word of its own name, "and" between them.
    request = "Get the opening hours of the City Museum and the waiting time there."
    found = asks(registry, request)
    assert [a.tools for a in found] == [("museum_opening_hours",), ("museum_waiting_time",)]
    assert found[0].text == found[1].text == request and not found[1].again
    # In the order the request names them.
    found = asks(registry, "Tell me the waiting time and the opening hours of the Prado.")
    assert [a.tools for a in found] == [("museum_waiting_time",), ("museum_opening_hours",)]
    # A tool named in passing, with no "and" between, is no ask of its own.
    passing = asks(registry, "Get the opening hours of the Prado, to save waiting time.")
    assert [a.tools for a in passing] == [("museum_opening_hours", "museum_waiting_time")]


def test_an_opening_about_no_tool_opens_the_first_ask() -> None:
    request = ("Can you help me with a few things? First, find the primes between 5 and 9. "
               "Lastly, get the fibonacci series upto 40.")
    found = asks(_registry(), request)
    assert [a.tools for a in found] == [("find_primes",), ("fibonacci_series",)]
    assert found[0].text.startswith("Can you help me")


def test_a_sentence_of_questions_is_an_ask_per_question() -> None:
    request = ("What is the weather in Paris, what are the primes between 5 and 9, and what "
               "is the fibonacci series upto 40?")
    assert [a.tools for a in asks(_registry(), request)] == [
        ("weather",), ("find_primes",), ("fibonacci_series",)]
    # A question after a clause that is no question is part of its task: "If ..., what is".
    conditional = "If the weather in Paris is bad, what are the primes between 5 and 9?"
    assert len(asks(_registry(), conditional)) == 1
    # "who", "which" and "where" open relative clauses as well as questions.
    relative = "What is the weather in Paris, where the primes between 5 and 9 are found?"
    assert len(asks(_registry(), relative)) == 1


def test_a_units_slash_ends_no_initial() -> None:
    # "J/K." ends a sentence: its "K" is no initial ("J. K. Rowling").
    assert _texts("The heat capacity is 1.5 J/K. Lastly, get the weather in Rome.") == [
        "The heat capacity is 1.5 J/K.", "Lastly, get the weather in Rome."]
    assert len(segments("A book by J. K. Rowling.")) == 1


def test_items_left_are_the_numbers_names_and_quoted_values_no_call_holds() -> None:
    text = "Also check the weather in Rome and in 'Ostia Antica' for 3 days."
    assert set(items_left(text, [])) >= {"Rome", "Ostia Antica", "3"}
    assert items_left(text, [{"city": "Rome"}, {"city": "Ostia Antica", "days": 3}]) == []


def test_quoted_values_are_read_once_and_left_until_a_call_holds_them() -> None:
    text = "Compare 'Old Maps' with 'Night Skies', then 'old maps' again."
    assert quoted_values(text) == ["Old Maps", "Night Skies"]
    assert quoted_left(text, [{"name": "Old Maps"}]) == ["Night Skies"]
    assert quoted_left(text, [{"names": ["Night Skies", "OLD MAPS"]}]) == []


def test_a_month_of_a_named_day_is_no_list_item() -> None:
    # Hand-written requests: the day says when; it is no place beside the city.
    assert listed_items("Rent a car in Denver, CO, from May 14, at 9 am until May 16.") == []
    assert listed_items("Book Paris on May 5 and Rome on May 9.") == []
    assert listed_items("A flight on the 2nd of June with Delta and United?") == [
        ["Delta", "United"]]
    assert listed_items("Weather in Seattle and Los Angeles on March 3rd.") == [
        ["Seattle", "Los Angeles"]]


def test_lists_of_names_and_quoted_values_are_found_and_a_place_keeps_its_code() -> None:
    assert listed_items("Play songs from Taylor Swift and Maroon 5 for 20 minutes.") == [
        ["Taylor Swift", "Maroon 5"]]
    assert listed_items("The weather in Seattle, WA and in Los Angeles, CA?") == [
        ["Seattle, WA", "Los Angeles, CA"]]
    assert listed_items("Cases '67813', '71249' of type 'Civil' or 'Criminal'.") == [
        ["67813", "71249"], ["Civil", "Criminal"]]
    # A place and its region, with a comma alone between them, are no list.
    assert listed_items("The sales tax in Chicago, Illinois.") == []


def test_a_list_asks_for_a_call_per_item_only_once_a_call_took_one_item_alone() -> None:
    lists = [["Seattle", "Los Angeles"]]
    assert list_items_left(lists, [{"city": "Seattle"}]) == ["Los Angeles"]
    assert list_items_left(lists, [{"city": "Seattle, WA"}]) == ["Los Angeles"]
    assert list_items_left(lists, [{"city": "Seattle"}, {"city": "Los Angeles, CA"}]) == []
    # Both in one argument: no call per item; in none alone: no call per item either.
    assert list_items_left(lists, [{"cities": ["Seattle", "Los Angeles"]}]) is None
    # An array holds its items together, whichever of them the list gives ("Retrieve
    # Personal Info and Job History" reads as the list "Retrieve Personal Info", "Job
    # History"); an array of one item holds it alone.
    data = [["Retrieve Personal Info", "Job History"]]
    assert list_items_left(data, [{"data_field": ["Personal Info", "Job History"]}]) is None
    assert list_items_left(lists, [{"cities": ["Seattle"]}]) == ["Los Angeles"]
    assert list_items_left(lists, [{"route": "Seattle to Los Angeles"}]) is None


# --- the grammar path going through the asks ---------------------------------------------------

def _strategy(**options: Any) -> ReactStrategy:
    strategy = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), _registry(),
                             **options)
    strategy.grammar = True
    return strategy


def _state(request: str, *calls: tuple[str, dict[str, Any]], tool: str | None = None
           ) -> dict[str, Any]:
    reply = "\n".join(f"Action: {name}\nAction Input: {json.dumps(args)}"
                      for name, args in calls)
    return {"messages": [HumanMessage(request)], "reply_text": reply,
            "calls_written": len(calls), "chosen_tool": tool}


TWO = "Find the primes between 50 and 150. Then get the fibonacci series upto 150."


def test_each_call_is_offered_the_tools_of_the_first_ask_no_call_served() -> None:
    strategy = _strategy()
    assert strategy.offered(_state(TWO)) == ["find_primes"]
    after = _state(TWO, ("find_primes", {"start": 50, "end": 150}))
    assert [a.tools for a in strategy.open_asks(after)] == [("fibonacci_series",)]
    assert strategy.offered(after) == ["fibonacci_series"]
    both = _state(TWO, ("find_primes", {"start": 50, "end": 150}),
                  ("fibonacci_series", {"count": 150}))
    assert strategy.open_asks(both) == [] and strategy.next_ask(both) is None
    # Without the rule the offer is the whole request's.
    assert set(_strategy(asks=False).offered(_state(TWO))) == {"find_primes", "fibonacci_series"}


def test_a_call_for_an_open_ask_is_new_though_it_repeats_earlier_values() -> None:
    strategy = _strategy()
    request = "What is the weather in Paris? Then compare it with the weather again."
    state = _state(request, ("weather", {"city": "Paris"}), tool="weather")
    assert strategy.open_asks(state)  # "again": the same tool once more
    assert not strategy._restates(state, {"city": "Paris"})
    assert _strategy(asks=False)._restates(state, {"city": "Paris"})


def test_the_turn_goes_on_while_a_list_has_items_no_call_took() -> None:
    strategy = _strategy()
    request = "What is the weather in Seattle and Los Angeles?"
    one = _state(request, ("weather", {"city": "Seattle"}))
    assert strategy._numbers_left(one) == ["Los Angeles"]
    both = _state(request, ("weather", {"city": "Seattle"}), ("weather", {"city": "Los Angeles"}))
    assert strategy._numbers_left(both) == []
    assert _strategy(listed_items=False)._numbers_left(one) is None


def test_a_strong_match_makes_the_first_choice_a_call() -> None:
    request = "Find the prime numbers between two numbers: 10 and 20."
    kwargs = _strategy(call_score=6.0)._choice_kwargs(_state(request))
    assert "Final Answer" not in kwargs["grammar"]
    assert "Final Answer" in _strategy(call_score=None)._choice_kwargs(_state(request))["grammar"]
    weak = "What do you think about prime numbers?"
    assert "Final Answer" in _strategy(call_score=6.0)._choice_kwargs(_state(weak))["grammar"]


def test_the_value_chooser_gets_the_floor_of_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from callgate.graph.choose_values import ValueChooser

    floors: list[float] = []

    def choose(self: ValueChooser, prompt: Any, head: str, args: dict[str, Any],
               *rest: Any, **kwargs: Any) -> dict[str, Any]:
        floors.append(self.floor)
        return args

    monkeypatch.setattr(ValueChooser, "choose", choose)
    strong = "Find the prime numbers between two numbers: 10 and 20."
    state = {**_state(strong, tool="find_primes"), "reply_text": "Action: find_primes\n"}
    raw = '{"start": 10, "end": 20}'
    _strategy(value_floor=-9.0)._values_chosen(state, raw)
    _strategy()._values_chosen(state, raw)
    assert floors == [-9.0, -4.0]


def test_a_choice_the_grammar_leaves_one_reply_is_written_not_decoded() -> None:
    # The scripted model has no reply to give: the choice must not ask it for one.
    request = "Find the prime numbers between two numbers: 10 and 20."
    strategy = _strategy(call_score=6.0)
    assert strategy.offered(_state(request)) == ["find_primes"]
    chosen = strategy.choose(_state(request), {})
    assert chosen["reply_text"] == "Action: find_primes\n"
    assert chosen["chosen_tool"] == "find_primes" and chosen["cut_off"] is False
    # The model chooses where the answer is allowed, or where a thought comes first.
    assert _strategy(call_score=None)._only_choice(_state(request)) is None
    assert _strategy(call_score=6.0, thought=True)._only_choice(_state(request)) is None
    weak = "What do you think about prime numbers?"
    assert _strategy(call_score=6.0)._only_choice(_state(weak)) is None


def test_lists_of_numbers_are_found_but_not_the_ends_of_a_range() -> None:
    assert listed_numbers("for 10, 20 and 30 years") == [["10", "20", "30"]]
    assert listed_numbers("the pairs (45, 60) and (81, 63)") == [["45", "60", "81", "63"]]
    assert listed_numbers("for 20 minutes and 15 minutes respectively") == [["20", "15"]]
    assert listed_numbers("the primes between 1 and 1000, from 5 to 9") == []
    assert listed_numbers("$30.45 in Chicago, Illinois, $52.33 in Sacramento") == []


def test_a_dropped_repeat_takes_the_thought_that_opened_it_along() -> None:
    # With a thought before each call (``thought=True``), a call that turns out a repeat
    # goes with the thought that opened it: the reply ends with the call before it.
    first = 'Action: weather\nAction Input: {"city": "Paris"}'
    state = {"reply_text": first + '\nThought: Also in Rome.\nAction: weather\n'
                                   'Action Input: {"city": "Paris"}\n', "calls_written": 1}
    assert ReactStrategy._drop_repeat(state)["reply_text"] == first


def test_enum_members_the_request_names_are_a_list() -> None:
    genotype = {"type": "string", "enum": ["AA", "Aa", "aa"]}
    listed = "Give the frequency of genotype (AA), genotype (Aa), and genotype (aa)."
    assert listed_members(genotype, listed) == ["AA", "Aa", "aa"]
    # Alike but for case, a member counts only as written; one member is no list.
    assert listed_members(genotype, "What is the frequency of the AA genotype?") == []
    details = {"type": "string", "enum": ["status", "trial_date"]}
    assert listed_members(details, "the status and trial date of case 12") == [
        "status", "trial_date"]
    assert listed_members({"type": "string"}, "the status and trial date") == []
    # Named apart, or as a choice, they are no list; a member the request writes only in
    # another case is not named, and the others still are.
    assert listed_members(details, "the status report of case 12, and its trial date") == []
    assert listed_members(details, "the status, or the trial date of case 12") == []
    assert listed_members(genotype, "the frequency of AA and aa genotypes") == ["AA", "aa"]
    # A member in capitals is found as written ("us" in "Tell us" is not "US"); numbers
    # are items of their own; a nullable enum is read for its strings.
    places = {"type": "string", "enum": ["US", "UK", "2", "3", None]}
    assert listed_members(places, "Tell us the GDP for the US and UK") == ["US", "UK"]
    assert listed_members(places, "2 and 3 rooms in the US") == []


def test_a_listed_option_no_call_took_keeps_the_turn_going() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def case_info(case_number: str,
                  details: Literal["status", "trial_date"] = "status") -> str:
        """The status or trial date of a court case."""
        return "ok"

    request = "What is the status and trial date of case XY12?"
    strategy = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry)
    strategy.grammar = True
    one = _state(request, ("case_info", {"case_number": "XY12", "details": "status"}),
                 tool="case_info")
    assert strategy._numbers_left(one) == ["trial_date"]
    # The same case with the other option is a new call, not a restatement.
    assert not strategy._restates(one, {"case_number": "XY12", "details": "trial_date"})
    assert strategy._restates(one, {"case_number": "XY12", "details": "status"})
    both = _state(request, ("case_info", {"case_number": "XY12", "details": "status"}),
                  ("case_info", {"case_number": "XY12", "details": "trial_date"}))
    assert strategy._numbers_left(both) == []
    off = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry,
                        member_items=False)
    off.grammar = True
    assert off._numbers_left(one) is None


# --- two lists the request crosses: a call for each pair ------------------------------------

CROSSED = "Find the winning percentage of Lakers and Bulls in NBA seasons 2018 and 2020."


def test_two_lists_with_no_item_in_common_are_crossed_unless_paired_off() -> None:
    assert crossed_lists(CROSSED) == [(["2018", "2020"], ["Lakers", "Bulls"])]
    paired = ("Play songs from Taylor Swift and Maroon 5, with a play time of 20 minutes and "
              "15 minutes respectively.")
    assert crossed_lists(paired) == []
    assert crossed_lists("Weather in Paris and Rome?") == []  # one list
    # Lists sharing an item are one list read twice, not two to cross.
    assert crossed_lists("Compare 10 and 20 with 20 and 30.") == []


def test_the_pairs_left_are_those_no_call_holds_together() -> None:
    lists = crossed_lists(CROSSED)
    assert pairs_held({"team": "Lakers", "season": 2018}, lists) == {("2018", "Lakers")}
    # Both items in one argument, or one of them alone, is no pair.
    assert pairs_held({"team": "Lakers", "note": "Bulls"}, lists) == set()
    assert pairs_held({"team": "Lakers"}, lists) == set()
    two = [{"team": "Lakers", "season": 2018}, {"team": "Bulls", "season": 2020}]
    assert pairs_left(CROSSED, two) == [("2018", "Bulls"), ("2020", "Lakers")]
    four = [*two, {"team": "Bulls", "season": 2018}, {"team": "lakers", "season": 2020.0}]
    assert pairs_left(CROSSED, four) == []
    # No call holds a pair: the lists go into one argument, or a call each on their own.
    assert pairs_left(CROSSED, [{"teams": ["Lakers", "Bulls"], "seasons": [2018, 2020]}]) is None
    assert pairs_left(CROSSED, [{"team": "Lakers"}, {"team": "Bulls"}]) is None


def test_the_turn_goes_on_while_a_pair_of_crossed_items_has_no_call() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def winning_percentage(team: str, season: int) -> str:
        """The winning percentage of a basketball team in a season."""
        return "ok"

    def strategy(**options: Any) -> ReactStrategy:
        made = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry,
                             **options)
        made.grammar = True
        return made

    lakers_2018 = ("winning_percentage", {"team": "Lakers", "season": 2018})
    bulls_2020 = ("winning_percentage", {"team": "Bulls", "season": 2020})
    two = _state(CROSSED, lakers_2018, bulls_2020, tool="winning_percentage")
    # Every number and name is used, the pairs are not: the turn is not covered.
    assert strategy()._numbers_left(two) == [("2018", "Bulls"), ("2020", "Lakers")]
    ran = AIMessage("", tool_calls=[
        {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
        for i, (name, args) in enumerate([lakers_2018, bulls_2020])])
    after_step = {"messages": [HumanMessage(CROSSED), ran,
                               *(ToolMessage("ok", tool_call_id=f"c{i}") for i in range(2))],
                  "reply_text": "", "calls_written": 0, "chosen_tool": None}
    assert not strategy().covered(after_step)
    assert strategy(crossed_items=False).covered(after_step)
    # A call for a pair no call holds is new; a pair made already restates.
    assert not strategy()._restates(two, {"team": "Lakers", "season": 2020})
    assert strategy()._restates(two, {"team": "Bulls", "season": 2020})
    # Off, the turn ends once every item is used, and a new pair restates.
    assert strategy(crossed_items=False)._numbers_left(two) == []
    assert strategy(crossed_items=False)._restates(two, {"team": "Lakers", "season": 2020})
    four = _state(CROSSED, lakers_2018, bulls_2020,
                  ("winning_percentage", {"team": "Bulls", "season": 2018}),
                  ("winning_percentage", {"team": "Lakers", "season": 2020}))
    assert strategy()._numbers_left(four) == []


TABLES = ("Run a chi-squared test on two 2x2 tables at a significance level of 0.05. The first "
          "table is [10, 20, 30, 40] and the second table is [15, 25, 35, 45].")


def test_ordinals_count_the_items_a_request_asks_calls_for() -> None:
    assert counted_calls(TABLES) == 2
    assert counted_calls("Price a flat of 50 m2 in Oslo, then one of 70 m2 in Bergen, and "
                         "finally a third flat of 90 m2 in Trondheim.") == 3
    # No count: "first" alone, a date, a second of time, a last item after the counted ones.
    assert counted_calls("Solve the first equation, x + 2 = 5.") is None
    assert counted_calls("Book rooms in Rome, Oslo and Lima for the second of June.") is None
    assert counted_calls("Wait a second and then fetch the weather in Paris.") is None
    assert counted_calls("The first box weighs 2 kg, the second box 3 kg, and the last box "
                         "4 kg.") is None
    # An ordinal of a kind of thing the request did not write before counts nothing.
    assert counted_calls("Find the second derivative of x^2, x^3 and x^4.") is None
    assert counted_calls("Two classes: the first class at 9, the second class at 10.") == 2


def test_the_turn_ends_once_it_has_as_many_calls_as_the_request_counts() -> None:
    registry = ToolRegistry()

    @registry.tool()
    def chi_squared_test(table: list[int], alpha: float = 0.05) -> str:
        """A chi-squared test for independence on a contingency table."""
        return "ok"

    def strategy(**options: Any) -> ReactStrategy:
        made = ReactStrategy(ScriptedChatModel(script=[], native_tools=False), registry,
                             **options)
        made.grammar = True
        return made

    first = ("chi_squared_test", {"table": [10, 20, 30, 40], "alpha": 0.05})
    second = ("chi_squared_test", {"table": [15, 25, 35, 45], "alpha": 0.05})
    two = _state(TABLES, first, second)
    # The "2" of "2x2" is a number no call used: without the count the model chooses.
    assert strategy()._numbers_left(two) == ["2"]
    assert strategy()._next_kwargs(two)["logit_bias"] == {"Observation": FORCE_BIAS}
    assert strategy(ordinal_counts=False)._next_kwargs(two)["logit_bias"] == {
        "Observation": 0.0}
    # One call of the two counted: the count does not end the turn.
    one = _state(TABLES, first)
    assert strategy()._next_kwargs(one)["logit_bias"] == {"Observation": 0.0}
    # After a step with both calls, the turn answers.
    ran = AIMessage("", tool_calls=[
        {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
        for i, (name, args) in enumerate([first, second])])
    after_step = {"messages": [HumanMessage(TABLES), ran,
                               *(ToolMessage("ok", tool_call_id=f"c{i}") for i in range(2))],
                  "reply_text": "", "calls_written": 0, "chosen_tool": None}
    assert strategy().covered(after_step)
    assert not strategy(ordinal_counts=False).covered(after_step)
