"""Tool preselection: the ReAct grammar offers the tools the request is about.

``relevant_tools`` is plain text scoring (no model); the strategy test builds a
``ReactStrategy`` around ``ScriptedChatModel(native_tools=False)``, a scripted text-only
model whose replies are never asked for here.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool

from callgate.graph.decide_react import ReactStrategy
from callgate.models.scripted import ScriptedChatModel
from callgate.tools.registry import ToolRegistry
from callgate.tools.relevance import (
    PRESELECT,
    callable_for,
    named_members,
    relevant_tools,
    tool_scores,
)


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def population_by_state_year(state: str, year: int) -> str:
        """Historical population of a US state in a given year."""
        return "ok"

    @registry.tool()
    def gdp_by_state_year(state: str, year: int) -> str:
        """Gross domestic product of a US state in a given year."""
        return "ok"

    @registry.tool()
    def legal_case_fetch(case_id: str, details: bool = False) -> str:
        """Fetch the detailed information of a legal case."""
        return "ok"

    return registry


def test_the_tool_the_request_names_scores_highest() -> None:
    scores = tool_scores(_registry(), "What was the population of California in 1970?")
    assert max(scores, key=scores.__getitem__) == "population_by_state_year"
    assert scores["legal_case_fetch"] == 0


def test_close_scores_are_kept_and_far_ones_dropped() -> None:
    registry = _registry()
    assert relevant_tools(registry, "What was the population of California in 1970?") == [
        "population_by_state_year"]
    both = "Population and GDP of a state in a given year"
    assert relevant_tools(registry, both) == ["population_by_state_year", "gdp_by_state_year"]
    assert relevant_tools(registry, both, keep=1.0) == ["population_by_state_year"]


def test_a_tool_sharing_only_the_topic_is_not_offered_by_default() -> None:
    # Both tools are about restaurants; only one is about searching by cuisine. Its
    # neighbour scores 4.5 of 8.5: offered at half the best score, not at PRESELECT.
    registry = ToolRegistry()

    @registry.tool()
    def restaurant_search(city: str, cuisine: str) -> str:
        """Find restaurants in a city by cuisine."""
        return "ok"

    @registry.tool()
    def restaurant_reviews(restaurant: str) -> str:
        """Read the reviews of a restaurant."""
        return "ok"

    request = "Search for Thai restaurants in Boston by cuisine"
    assert tool_scores(registry, request) == {"restaurant_search": 8.5,
                                              "restaurant_reviews": 4.5}
    assert PRESELECT == 0.75
    assert relevant_tools(registry, request) == ["restaurant_search"]
    assert relevant_tools(registry, request, keep=0.5) == [
        "restaurant_search", "restaurant_reviews"]


def test_words_are_compared_on_a_crude_stem() -> None:
    # "populations" ~ "population", "cases" ~ "case", camelCase and "_"/"-" split.
    assert relevant_tools(_registry(), "Populations, please") == ["population_by_state_year"]
    registry = ToolRegistry()

    @registry.tool(name="legal-caseFetch")
    def fetch(case_id: str) -> str:
        """Look something up."""
        return "ok"

    @registry.tool()
    def weather(city: str) -> str:
        """Current weather."""
        return "ok"

    assert relevant_tools(registry, "details of the R vs Adams legal case") == [
        "legal-caseFetch"]


def test_no_shared_word_keeps_every_tool_or_none() -> None:
    assert relevant_tools(_registry(), "17 * 23 = ?") == [
        "population_by_state_year", "gdp_by_state_year", "legal_case_fetch"]
    assert relevant_tools(ToolRegistry(), "anything") == []
    assert relevant_tools(_registry(), "17 * 23 = ?", unmatched="none") == []
    # A request that shares a word with a tool is offered it either way.
    assert relevant_tools(_registry(), "GDP of Ohio", unmatched="none") == ["gdp_by_state_year"]


def test_a_request_about_no_tool_is_answered_without_a_call() -> None:
    model = ScriptedChatModel(script=[], native_tools=False)
    state = {"messages": [HumanMessage("What is the capital of France?")]}
    strategy = ReactStrategy(model, _registry())  # the default: unmatched="none"
    assert strategy.offered(state) == []
    grammar = strategy._choice_kwargs(state)["grammar"]
    assert grammar.startswith("root ::= (final)") and "Action" not in grammar
    assert ReactStrategy(model, _registry(), unmatched="all").offered(state) == [
        "population_by_state_year", "gdp_by_state_year", "legal_case_fetch"]


def test_the_strategy_offers_the_relevant_tools_of_the_latest_request() -> None:
    model = ScriptedChatModel(script=[], native_tools=False)
    strategy = ReactStrategy(model, _registry(), preselect=0.5)
    state = {"messages": [HumanMessage("Fetch the legal case R vs Adams"), AIMessage("done"),
                          HumanMessage("Now the GDP of Ohio in 2001")]}
    assert strategy.offered(state) == ["gdp_by_state_year"]
    # The loop's own correction messages are not requests.
    corrected = {"messages": [*state["messages"], HumanMessage(
        "legal case legal case", additional_kwargs={"callgate_correction": True})]}
    assert strategy.offered(corrected) == ["gdp_by_state_year"]
    assert ReactStrategy(model, _registry(), preselect=None).offered(state) == [
        "population_by_state_year", "gdp_by_state_year", "legal_case_fetch"]


def test_the_choice_grammar_names_only_the_offered_tools() -> None:
    model = ScriptedChatModel(script=[], native_tools=False)
    state = {"messages": [HumanMessage("What was the population of Ohio in 2001?")]}
    grammar = ReactStrategy(model, _registry())._choice_kwargs(state)["grammar"]
    assert '"population_by_state_year"' in grammar
    assert "gdp_by_state_year" not in grammar and "legal_case_fetch" not in grammar
    # The prompt still lists every tool.
    system = ReactStrategy(model, _registry()).messages(state)[0].text
    assert "gdp_by_state_year" in system and "legal_case_fetch" in system


def _builtin_like() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def calculator(expression: str) -> str:
        """Exact arithmetic: powers and roots. Numbers, + - * / % and parentheses."""
        return "0"

    @registry.tool()
    def system_stats() -> str:
        """Current CPU, memory and disk usage of this computer (percent)."""
        return "ok"

    @registry.tool()
    def web_search(query: str, max_results: int = 5) -> str:
        """Search the web; returns up to max_results (1-10) results."""
        return "ok"

    return registry


def test_arithmetic_operators_count_as_words() -> None:
    assert relevant_tools(_builtin_like(), "What is 15% of 80?") == ["calculator"]
    assert relevant_tools(_builtin_like(), "What is 3.5 * 4.2?") == ["calculator"]


def test_a_request_written_as_arithmetic_calls_the_tool_that_does_arithmetic() -> None:
    from callgate.tools.relevance import ARITHMETIC_SCORE, does_arithmetic, is_arithmetic

    # The bundled model answered the word forms itself ("What is 45 minus 18?": "17").
    for request in ("What is 45 minus 18?", "How much is 60 times 7?", "What is 12 squared?",
                    "What is 144 divided by 16?", "Compute 2 to the power of 10.",
                    "What is (12 + 8) * 3?", "What is 100/8?", "What is 15% of 80?",
                    "What's a 15% tip on 48.50?", "What is 8% tax on 120?",
                    "What's a 15% Tip on 48.50?", "What is 8% vat on 120?",
                    # `callgate ask "What is sqrt(81)?"` was answered "81 is the square root of 81".
                    "What is the square root of 2?", "sqrt(2)", "Square root of 144.5?",
                    # In words: SmolLM2 answered "What is the sum of 12 and 30?" with
                    # "12 + 30 = 32" itself.
                    "What is the sum of 12 and 30?", "Add 3.5 and 4.25", "add 4 to 6",
                    "Subtract 15 from 100.", "Multiply 6 by 7.", "Divide 144 by 12.",
                    "What is the difference between 2020 and 2024?",
                    # A negative number (a user walkthrough: "What is -5 times 3?" got no call
                    # and the answer 15).
                    "What is -5 times 3?", "-5 times 3", "3 times -5", "What is 5 - -3?"):
        assert is_arithmetic(request), request
        assert tool_scores(_builtin_like(), request)["calculator"] >= ARITHMETIC_SCORE
    # Dates, ranges, clock times and counts are no arithmetic.
    for request in ("Book it for 2023-04-15", "on 4/15/2023", "pages 1-10",
                    "I go 5 times a week", "2 tickets for 5:30pm", "the square root of it",
                    "Is that 5% off?", "My CPU is at 95% on 4 cores, is that bad?",
                    "I scored 90% on 2 exams", "Save 20% on 3 items", "50% chance of 3 heads",
                    "Add 2 eggs and 200 grams of sugar", "add 4 items to my list",
                    # a connective the calculator's sentence forms do not take
                    "divide 10 with 2", "the sum of 3 to 4",
                    # a hyphen in a name or a range is no sign
                    "covid-19 times 2", "pages 5-10 times two", "Is 2 -3 bigger?"):
        assert not is_arithmetic(request), request
    registry = _builtin_like()
    assert [t.name for t in registry if does_arithmetic(t)] == ["calculator"]
    # The first choice is a call, to the calculator.
    model = ScriptedChatModel(script=[], native_tools=False)
    state = {"messages": [HumanMessage("What is 45 minus 18?")]}
    strategy = ReactStrategy(model, registry)
    assert strategy._calls_for(state) and strategy.offered(state) == ["calculator"]


def test_numbers_are_not_what_a_request_is_about() -> None:
    # "10" of the request is not the "10" of web_search's "(1-10)".
    assert tool_scores(_builtin_like(), "Raise 2 to 10")["web_search"] == 0


def test_a_plural_meets_its_singular() -> None:
    assert relevant_tools(_builtin_like(), "What is the square root of 2?") == ["calculator"]


def test_an_operator_inside_a_word_or_address_is_not_arithmetic() -> None:
    from callgate.tools.registry import ToolRegistry

    registry = ToolRegistry()

    @registry.tool()
    def wind(station: str) -> str:
        """Wind speed in km/h and/or knots, from https://wind.example.org **live**."""
        return "ok"

    for request in ("What is 3/4 of 80?", "What is 2 * 3?", "Is 15% a lot?"):
        assert tool_scores(registry, request)["wind"] == 0, request


def test_a_word_ending_in_s_that_is_not_a_plural_keeps_it() -> None:
    from callgate.tools.registry import ToolRegistry

    registry = ToolRegistry()

    @registry.tool()
    def list_classes(school: str) -> str:
        """The classes of a school."""
        return "ok"

    assert tool_scores(registry, "Which class is this?")["list_classes"] > 0


def test_the_builtin_tools_route_questions_to_the_tool_they_are_about() -> None:
    from callgate.eval.answers import builtin_registry, load_set

    with builtin_registry(load_set()) as registry:
        tools = [registry.get(name) for name in registry.names]
        assert relevant_tools(tools, "What is the guest Wi-Fi password in my notes?") == [
            "rag_search"]
        assert relevant_tools(tools, "How busy is this computer's CPU?") == ["system_stats"]
        # Their descriptions name what people ask them for: news, RAM.
        assert relevant_tools(tools, "What's the latest news on the Mars rover?") == [
            "web_search"]
        assert relevant_tools(tools, "How much RAM is free?") == ["system_stats"]
        assert relevant_tools(tools, "How full is my SSD?", unmatched="none") == [
            "system_stats"]
        # "drive" is no synonym of system_stats' "disk": a drive to Boston is not its.
        assert relevant_tools(tools, "How long is the drive to Boston?", unmatched="none") == []
        assert relevant_tools(tools, "What is the capital of France?", unmatched="none") == []
        # A quantity to convert is the calculator's (`calculator.conversion_relevance`).
        assert relevant_tools(tools, "Convert 5 miles to kilometers.", unmatched="none") == [
            "calculator"]


def test_the_one_member_a_request_names_by_a_word_of_its_own() -> None:
    from callgate.tools.relevance import word_named_members

    types = ["Psychologist", "Family Counselor", "Psychiatrist"]
    assert word_named_members(types, "I need help looking for a Family Therapist.") == [
        "Family Counselor"]
    assert word_named_members(types, "a therapist for my family in berkeley") == [
        "Family Counselor"]
    assert word_named_members(types, "help with my mental health") == []  # no word of one
    assert word_named_members(types, "not for my family") == []  # a negation
    # A word two members share names neither; nor does a short or a stop word.
    assert word_named_members(["Credit card", "Debit card"], "pay by card") == []
    assert word_named_members(["Go kart", "Boat"], "let's go") == []
    assert word_named_members(["Credit card", "Debit card", "App balance"],
                              "Pay Jamie $50 from my debit account") == ["Debit card"]


def test_the_one_member_a_request_names_by_a_word_its_description_says_of_it() -> None:
    # Hand-written descriptions in the style tool authors write.
    from callgate.tools.relevance import described_members, member_phrases

    actions = ["add", "delete", "complete"]
    todo = ("What to do with the list. 'add' to add a new task, 'delete' to remove an "
            "existing task, or 'complete' to mark a task as done. Required.")
    assert member_phrases(actions, todo) == {
        "add": " to add a new task, ", "delete": " to remove an existing task, or ",
        "complete": " to mark a task as done"}  # the phrase stops at its sentence's end
    assert described_members(actions, todo, "Please remove 'milk' from my list.") == ["delete"]
    assert described_members(actions, todo, "Take 'milk' off the list.") == []  # no word
    assert described_members(actions, todo, "'milk' is done.") == ["complete"]
    # A word every phrase has ("task") names none; a negated sentence names nothing; a word
    # after the sentence ("Required") is no member's.
    assert described_members(actions, todo, "The task 'milk'.") == []
    assert described_members(actions, todo, "Don't remove 'milk'. Keep it.") == []
    assert described_members(actions, todo, "It is required.") == []
    # Two members named: neither wins.
    assert described_members(actions, todo, "remove 'milk' and mark 'eggs' done") == []
    order = ["asc", "desc"]
    sort = "Sort order: `asc` for ascending, `desc` for descending."
    assert described_members(order, sort, "newest first, in descending order") == ["desc"]
    # A member the description does not quote has no phrase; one quoted member tells
    # nothing apart.
    assert member_phrases(["up", "down"], "Direction, up or down.") == {}
    assert described_members(["up", "down"], "Use 'up' to climb.", "climb the hill") == []
    assert member_phrases(actions, None) == {}  # a schema without a description


def test_the_enum_members_a_request_names() -> None:
    rooms = ["Living room", "Kitchen", "Patio"]
    assert named_members(rooms, "Play it in the KITCHEN, please") == ["Kitchen"]
    assert named_members(rooms, "play it in the living room") == ["Living room"]
    assert named_members(rooms, "play it in my room") == []  # every word of a member
    assert named_members(["Music", "Theater"], "any theaters or music near me?") == [
        "Music", "Theater"]  # a plural names its singular
    # A named member inside a fuller one that is named too: only the fuller one.
    assert named_members(["Comedy", "Comedy-drama", "Drama"], "a comedy drama") == [
        "Comedy-drama"]
    assert named_members([1, 2, True], "1 or 2") == []  # strings only
    assert named_members(rooms, "Not in the kitchen. Play it loud.") == []  # negated
    # A member in capitals is named only in capitals: "us" and "it" are words.
    assert named_members(["US", "IT"], "Tell us if it rains.") == []
    assert named_members(["US", "IT"], "Weather in the US") == ["US"]
    assert named_members(["Kids", "Café"], "a kid-friendly cafe") == ["Kids", "Café"]
    # Plurals not made with "s" name their singular too.
    assert named_members(["adult", "child"], "the cost for children and adults") == [
        "adult", "child"]


def _booking_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def find_therapist(city: str, kind: str) -> str:
        """Find a therapist in a city."""
        return "ok"

    string = {"type": "string"}
    registry.register(StructuredTool(
        name="book_therapist_appointment", description="Book an appointment with a therapist.",
        func=lambda **_: "ok", args_schema={
            "type": "object", "required": ["therapist_name", "appointment_date",
                                           "appointment_time"],
            "properties": {
                "therapist_name": string,
                "appointment_date": {**string, "description": "The day, 'YYYY-MM-DD'."},
                "appointment_time": {**string, "description": "In 24-hour format 'HH:MM'."},
                "note": {**string, "description": "Anything else, e.g. 'after 17:00'."}}}))
    return registry


def test_a_tool_whose_required_date_or_time_the_request_lacks_is_not_callable() -> None:
    registry = _booking_registry()
    book = registry.get("book_therapist_appointment")
    assert book is not None
    assert not callable_for(book, "I need a therapist in Berkeley")
    assert not callable_for(book, "Book a therapist in Berkeley on 2024-05-02")  # no time
    assert callable_for(book, "Book Dr. Lee on May 2nd at 3pm")
    assert callable_for(book, "Book Dr. Lee tomorrow at 15:30")
    # A tool without required dates or times is callable whatever the request gives.
    find = registry.get("find_therapist")
    assert find is not None and callable_for(find, "I need a therapist in Berkeley")


def test_the_strategy_offers_only_callable_tools_where_any_is() -> None:
    model = ScriptedChatModel(script=[], native_tools=False)
    registry = _booking_registry()
    ask = {"messages": [HumanMessage("I need a therapist appointment in Berkeley")]}
    assert ReactStrategy(model, registry, callable_tools=False).offered(ask) == [
        "book_therapist_appointment"]
    assert ReactStrategy(model, registry, callable_tools=True).offered(ask) == [
        "find_therapist"]
    dated = {"messages": [HumanMessage(
        "Book a therapist appointment with Dr. Lee on 2024-05-02 at 15:00")]}
    assert ReactStrategy(model, registry, callable_tools=True).offered(dated) == [
        "book_therapist_appointment"]
    # A day and time the user gave earlier in the conversation count: grounding takes
    # values from the whole conversation, not the latest request alone.
    follow_up = {"messages": [
        HumanMessage("I'd like to see a therapist on 2024-05-02 at 15:00"),
        AIMessage("Which therapist?"), HumanMessage("Book the therapist appointment with Dr. Lee")]}
    assert ReactStrategy(model, registry, callable_tools=True).offered(follow_up) == [
        "book_therapist_appointment"]


def test_an_arguments_enum_members_make_a_request_about_its_tool() -> None:
    # "Start Date" is only an enum member of ``detail``: the request shares no word with
    # the tool's name or description, so without the members no tool would be offered.
    registry = ToolRegistry()

    @registry.tool()
    def treaty_facts(treaty: str, detail: Literal["Start Date", "Signatories"]) -> str:
        """Facts about an international agreement."""
        return "ok"

    @registry.tool()
    def recipe_lookup(dish: str) -> str:
        """Ingredients of a dish."""
        return "ok"

    request = "Give me the start date of the Treaty of Paris."
    scores = tool_scores(registry, request)
    assert scores["recipe_lookup"] == 0
    # "treaty": 3 in the name, 0.5 as an argument; "start" and "date": 0.5 each as members
    assert scores["treaty_facts"] == 3 + 0.5 + 0.5 * 2
    assert relevant_tools(registry, "When did the Warsaw Pact start?",
                          unmatched="none") == ["treaty_facts"]


def test_an_argument_named_enum_is_no_list_of_members() -> None:
    from callgate.tools.relevance import _enum_members

    properties = {"enum": {"type": "string", "description": "A type name."},
                  "mode": {"type": "array", "items": {"enum": ["fast", 3, "slow"]}}}
    assert _enum_members(properties) == ["fast", "slow"]


def test_arithmetic_on_the_previous_answer_reads_its_number() -> None:
    # `callgate chat`: "What is 12 * 12?" (144), then "And divide that by 4?" was called as
    # "12 * 12" again and answered 144.
    from callgate.tools.relevance import with_earlier_result

    assert with_earlier_result("And divide that by 4?", "144") == "And divide 144 by 4?"
    assert with_earlier_result("Now add 10 to it.", "56") == "Now add 10 to 56."
    assert with_earlier_result("What is the result squared?", "560") == "What is 560 squared?"
    assert with_earlier_result("Is it possible to divide that by 4?", "144") == (
        "Is it possible to divide 144 by 4?")  # the "that" arithmetic reads, not the "it"
    # Not where the request has arithmetic of its own, reads as none so, or there is no
    # one number to read.
    assert with_earlier_result("Divide 10 by 2, not that.", "144") == "Divide 10 by 2, not that."
    for request in ("Is it raining in Paris?", "Thanks, that helps!", "What is it?"):
        assert with_earlier_result(request, "144") == request
    assert with_earlier_result("And divide that by 4?", None) == "And divide that by 4?"


def test_arithmetic_with_numbers_written_as_words_reads_them_as_digits() -> None:
    # `callgate ask "What is two plus two?"` was offered no tool and answered "4" unchecked;
    # "What is seven squared?" called the calculator with "7", "the square root of sixteen"
    # with "sqrt".
    from callgate.tools.relevance import as_arithmetic, is_arithmetic

    for request, read in [("What is two plus two?", "What is 2 plus 2?"),
                          ("What is seven squared?", "What is 7 squared?"),
                          ("What's the square root of sixteen?", "What's the square root of 16?"),
                          ("What is one hundred minus twenty-five?", "What is 100 minus 25?"),
                          ("Twelve times eleven", "12 times 11"),
                          ("What is 2 plus two?", "What is 2 plus 2?"),
                          # "percent" as "%" is ("fifteen percent of eighty" had system_stats
                          # called and "2.5% of 2.5% = 0.3" answered).
                          ("What is fifteen percent of eighty?", "What is 15 percent of 80?")]:
        assert as_arithmetic(request) == read and is_arithmetic(request), request
    for request in ("What is 15 percent of 80?", "a 15 per cent tip on 48.50"):
        assert is_arithmetic(request), request
    for request in ("What percent of people like pie?", "The CPU is at 15 percent of capacity"):
        assert not is_arithmetic(request), request
    # No arithmetic, or arithmetic already in digits: the words stay as the user wrote them.
    for request in ("Show one of them", "What is 17 * 23?", "What is 17 * 23 for two?"):
        assert as_arithmetic(request) == request, request
    for request in ("Tell me a story about three little pigs.", "I have two times more work",
                    # Prose (a review's cases): arithmetic in words ends its clause, and a
                    # dash between two numbers is a range or a score.
                    "The two squared off in the final round.",
                    "Add two cubed potatoes and simmer.",
                    "I visited Paris two times five years ago.", "Buy two plus one free",
                    "Season two plus three episodes", "Summarise chapters one - three",
                    "Expect twenty - thirty guests", "The score was two - one to Arsenal"):
        assert as_arithmetic(request) == request and not is_arithmetic(request), request


def test_the_strategy_reads_and_shows_arithmetic_written_in_words_in_digits() -> None:
    registry = _builtin_like()
    model = ScriptedChatModel(script=[], native_tools=False)
    state = {"messages": [HumanMessage("What is seven squared?")]}
    strategy = ReactStrategy(model, registry)
    assert strategy._request(state) == "What is 7 squared?"
    assert strategy._calls_for(state) and strategy.offered(state) == ["calculator"]
    assert strategy.messages(state)[-1].text == "What is 7 squared?"
    assert state["messages"][-1].text == "What is seven squared?"  # the state keeps the words


def test_the_strategy_reads_and_shows_a_follow_up_with_the_previous_answer_in_it() -> None:
    from langchain_core.messages import ToolMessage

    registry = _builtin_like()
    model = ScriptedChatModel(script=[], native_tools=False)
    earlier = [HumanMessage("What is 12 * 12?"),
               AIMessage("", tool_calls=[{"name": "calculator", "id": "c1", "type": "tool_call",
                                          "args": {"expression": "12 * 12"}}]),
               ToolMessage("[R1] [calculator] = 144", tool_call_id="c1"),
               AIMessage("144 [R1]\n\nSources: [R1] calculator", name="callgate")]
    state = {"messages": [*earlier, HumanMessage("And divide that by 4?")]}
    strategy = ReactStrategy(model, registry)
    assert strategy.earlier_results  # the default
    assert strategy._request(state) == "And divide 144 by 4?"
    assert strategy._calls_for(state) and strategy.offered(state) == ["calculator"]
    shown = strategy.messages(state)
    assert shown[-1].text == "And divide 144 by 4?" and shown[1].text == "What is 12 * 12?"
    assert state["messages"][-1].text == "And divide that by 4?"  # the state keeps the words
    # An earlier answer with two numbers says nothing about which one "that" is.
    two = [*earlier[:-1], AIMessage("144, or 12 squared", name="callgate")]
    assert ReactStrategy(model, registry)._request(
        {"messages": [*two, HumanMessage("And divide that by 4?")]}) == "And divide that by 4?"
    strategy.earlier_results = False
    assert strategy._request(state) == "And divide that by 4?"
    assert strategy.messages(state)[-1].text == "And divide that by 4?"


def test_a_tools_synonyms_count_as_its_own_words() -> None:
    def thermostat() -> float:
        """Reads the room's temperature."""
        return 21.5

    tool = ToolRegistry().register(thermostat, synonyms={"warm": "temperature"})
    plain = dataclasses.replace(tool, synonyms={})
    assert tool_scores([plain], "How warm is it in here?") == {"thermostat": 0.0}
    assert tool_scores([tool], "How warm is it in here?") == {"thermostat": 1.0}
    assert relevant_tools([tool], "How warm is it in here?", unmatched="none") == ["thermostat"]
    # They add to the request's words, never take any away: a request writing both the
    # synonym and the tool's word scores as one writing the tool's word.
    assert tool_scores([tool], "Is the temperature warm?") == tool_scores(
        [plain], "Is the temperature warm?")
