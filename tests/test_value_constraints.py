"""Values the model cannot invent: the grammar limits argument values to the conversation.

Hand-written questions (not BFCL's). The GBNF text is checked for what it allows, and
llama.cpp's own parser and sampler (the bundled model) show that decoding under it
copies values from the question.
"""

from __future__ import annotations

import json
import re

import pytest

from callgate.graph.decide_react import ReactStrategy
from callgate.models.grammar import (
    FREE_TEXT_WORDS,
    Values,
    args_grammar,
    query_rules,
    span_rules,
)
from callgate.tools.registry import ToolRegistry
from callgate.tools.relevance import mentioned_arguments, number_readings

QUESTION = "Book a table for 4 people at Chez Panisse in Berkeley, budget 120.5 dollars."
SCHEMA = {"type": "object",
          "properties": {"restaurant": {"type": "string"}, "city": {"type": "string"},
                         "people": {"type": "integer"}, "budget": {"type": "number"},
                         "note": {"type": "string", "description": "A free note."},
                         "seating": {"type": "string", "enum": ["inside", "terrace"]}},
          "required": ["restaurant", "city", "people", "budget"]}


def _rule(gbnf: str, name: str) -> str:
    return re.search(rf"^{re.escape(name)} ::= (.*)$", gbnf, re.M).group(1)


class GrammarCapable:
    """A stand-in for a llama.cpp model: the strategy only asks whether it takes a grammar
    (no model runs)."""

    text_only = True
    llama = None


def test_strings_are_spans_of_whole_words_copied_with_what_joins_them() -> None:
    rules = span_rules("Chez Panisse in Berkeley, CA.")
    assert _rule(rules, "span") == "sw0 | sw1 | sw2 | sw3 | sw4"
    assert _rule(rules, "sw0") == '"Chez" (" " sw1)?'
    assert _rule(rules, "sw3") == '"Berkeley" (", " sw4)?'
    assert _rule(rules, "sw4") == '"CA"'  # the last word: the span ends there
    # A quote or a line break between words ends a span (it would need JSON escaping
    # inside the value and is rarely part of one).
    assert _rule(span_rules('say "hi"\nthere'), "sw0") == '"say"'
    # An identifier with underscores is one word: it can be copied whole.
    assert _rule(span_rules("database main_db"), "sw1") == '"main_db"'


def test_argument_grammar_limits_strings_and_numbers_to_the_question() -> None:
    values = Values(text=QUESTION, numbers=tuple(sorted(number_readings(QUESTION))))
    gbnf = args_grammar(SCHEMA, values=values)
    assert _rule(gbnf, "restaurant") == '"\\"" cg-span "\\""'
    assert _rule(gbnf, "city") == '"\\"" cg-span "\\""'
    assert _rule(gbnf, "people") == '"4"'  # the only integer the question has
    assert set(_rule(gbnf, "budget").split(" | ")) == {'"4"', '"120.5"'}
    assert "span" not in _rule(gbnf, "seating")  # enum members stay as they are
    assert "span" not in _rule(gbnf, "note")  # free text: the documented escape


def test_free_text_arguments_keep_free_strings() -> None:
    assert {"query", "summary", "expression"} <= FREE_TEXT_WORDS
    schema = {"type": "object", "properties": {"search_query": {"type": "string"},
                                               "topic": {"type": "string"}},
              "required": ["search_query", "topic"]}
    gbnf = args_grammar(schema, values=Values(text="news about the Mars rover"))
    assert "span" not in _rule(gbnf, "search-query")
    assert _rule(gbnf, "topic") == '"\\"" cg-span "\\""'


def test_numbers_fall_back_to_digits_when_none_fits() -> None:
    schema = {"type": "object", "properties": {"count": {"type": "integer"}},
              "required": ["count"]}
    # 2.5 is no integer: the integer argument stays free digits.
    gbnf = args_grammar(schema, values=Values(numbers=(2.5,)))
    assert "[0-9]" in gbnf
    assert _rule(args_grammar(schema, values=Values(numbers=(2.5, 7.0))), "count") == '"7"'
    # Bounds of the schema still hold: a number outside them is not offered.
    bounded = {"type": "object", "properties": {"count": {"type": "integer", "minimum": 10}},
               "required": ["count"]}
    assert _rule(args_grammar(bounded, values=Values(numbers=(7.0, 12.0))), "count") == '"12"'


def test_numbers_the_conversation_gives_in_other_forms() -> None:
    readings = number_readings("Split 5% of three hundred dollars among 2 people")
    assert {5.0, 0.05, 300.0, 2.0} <= readings


def test_optional_arguments_only_when_the_request_mentions_them() -> None:
    assert mentioned_arguments(SCHEMA, QUESTION) == []
    assert mentioned_arguments(SCHEMA, QUESTION + " Put a note: birthday.") == ["note"]
    assert mentioned_arguments(SCHEMA, "A terrace table at Chez Panisse") == ["seating"]
    # A list's item members are its own: "vegan" names ``diets``, whose items offer it.
    listed = {"type": "object", "properties": {
        "diets": {"type": "array", "items": {"type": "string", "enum": ["vegan", "halal"]}}}}
    assert mentioned_arguments(listed, "A vegan place at Chez Panisse") == ["diets"]
    assert mentioned_arguments(listed, QUESTION) == []
    # A malformed enum (a string, not a list) names nothing and raises nothing.
    odd = {"type": "object", "properties": {
        "mode": {"type": "string", "enum": "vegan"},
        "diets": {"type": "array", "items": {"type": "string", "enum": "vegan"}}}}
    assert mentioned_arguments(odd, "A vegan place") == []
    gbnf = args_grammar(SCHEMA, include_optional=["seating"])
    assert "seating-kv" in gbnf and "note-kv" not in gbnf


def test_optional_arguments_the_request_names_by_their_role() -> None:
    # Hand-written requests: "songs by Sabaton" names the artist and "featuring Jack Carson"
    # the cast, though neither writes the argument's name; SmolLM2 left them out.
    schema = {"type": "object", "required": [], "properties": {
        "genre": {"type": "string"}, "artist": {"type": "string"},
        "cast": {"type": "string"}}}
    assert mentioned_arguments(schema, "Find me metal songs by Sabaton") == ["artist"]
    assert mentioned_arguments(schema, "A comedy featuring Jack Carson") == ["cast"]
    assert mentioned_arguments(schema, "A film where Ana de Armas is a lead actress") == [
        "cast"]
    # "by" before a word in lower case names nobody; without ``roles`` no role counts.
    assert mentioned_arguments(schema, "Play songs by the sea") == []
    assert mentioned_arguments(schema, "Find me metal songs by Sabaton", roles=False) == []


def test_a_required_list_has_an_item_with_filled_lists() -> None:
    schema = {"type": "object", "properties": {
        "chords": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "notes": {"type": "array", "items": {"type": "string"}, "default": []}},
        "required": ["chords", "notes"]}
    values = Values(text="Compose a melody with a progression of C, F and G.")
    filled = args_grammar(schema, values=values, filled_lists=True)
    # The first item is not optional: "[" cannot close at once.
    assert _rule(filled, "chords").startswith('"[" space chords-item ("," space')
    # An optional list, and a required one whose default is a list, may stay empty.
    assert _rule(filled, "tags").startswith('"[" space (tags-item')
    assert _rule(filled, "notes").startswith('"[" space (notes-item')
    plain = args_grammar(schema, values=values)
    assert _rule(plain, "chords").startswith('"[" space (chords-item')
    # An array without a type but with items is an array too; maxItems 0 stays empty.
    typeless = {"type": "object", "properties": {
        "chords": {"items": {"type": "string"}},
        "none": {"type": "array", "items": {"type": "string"}, "maxItems": 0}},
        "required": ["chords", "none"]}
    gbnf = args_grammar(typeless, values=values, filled_lists=True)
    assert _rule(gbnf, "chords").startswith('"[" space chords-item')
    assert _rule(gbnf, "none").split() == ['"["', "space", '"]"', "space"]


def test_the_react_path_fills_required_lists_by_default() -> None:
    from langchain_core.messages import HumanMessage

    def compose(chords: list[str], measures: int) -> str:
        """Compose a melody."""
        return "composed"

    registry = ToolRegistry([compose])
    state = {"messages": [HumanMessage("A melody on C, F and G for 4 measures.")],
             "chosen_tool": "compose"}
    strategy = ReactStrategy(GrammarCapable(), registry, grammar=True)  # type: ignore[arg-type]
    assert strategy.filled_lists  # the default
    assert _rule(strategy._args_kwargs(state)["grammar"], "chords").startswith(
        '"[" space chords-item')
    strategy.filled_lists = False
    assert _rule(strategy._args_kwargs(state)["grammar"], "chords").startswith(
        '"[" space (chords-item')


@pytest.mark.llama
def test_decoding_under_the_grammar_copies_values_from_the_question() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from callgate.models.spec import load_model

    model, _ = load_model("bundled")
    question = "Find flights from Lisbon to Oslo for 3 adults."
    schema = {"type": "object", "properties": {"origin": {"type": "string"},
                                               "destination": {"type": "string"},
                                               "adults": {"type": "integer"}},
              "required": ["origin", "destination", "adults"]}
    values = Values(text=question, numbers=tuple(sorted(number_readings(question))))
    messages = [SystemMessage("Tools: find_flights(origin, destination, adults)"),
                HumanMessage(question), AIMessage("Action: find_flights\nAction Input: ")]
    out = model.invoke(messages, grammar=args_grammar(schema, values=values),
                       max_tokens=60, temperature=0.0, stop=[])
    args = json.loads(out.text)
    assert args["adults"] == 3
    for key in ("origin", "destination"):
        assert args[key] and args[key] in question  # copied, not invented


def test_optional_arguments_the_request_names_can_be_made_required() -> None:
    from langchain_core.messages import HumanMessage

    def book(restaurant: str, city: str, people: int, budget: float,
             seating: str = "inside") -> str:
        """Book a table."""
        return "booked"

    registry = ToolRegistry([book])
    registry.get("book").schema["properties"]["seating"]["enum"] = ["inside", "terrace"]
    schema = registry.get("book").schema
    request = "Book a terrace table for 4 at Chez Panisse in Berkeley, budget 120.5 dollars."
    state = {"messages": [HumanMessage(request)], "chosen_tool": "book"}
    strategy = ReactStrategy(GrammarCapable(), registry, grammar=True)  # type: ignore[arg-type]
    assert strategy.mentioned_required  # the default
    named = {**schema, "required": [*schema["required"], "seating"]}
    assert strategy._args_kwargs(state)["grammar"] == args_grammar(named)
    # Off, or for a request that does not name it, the argument stays optional.
    strategy.mentioned_required = False
    assert strategy._args_kwargs(state)["grammar"] == args_grammar(schema)
    strategy.mentioned_required = True
    plain = {**state, "messages": [HumanMessage(request.replace("terrace ", ""))]}
    assert strategy._args_kwargs(plain)["grammar"] == args_grammar(schema)
    assert args_grammar(named) != args_grammar(schema)


def test_an_argument_named_by_its_role_is_written_in_the_call() -> None:
    from langchain_core.messages import HumanMessage

    def find_songs(genre: str, artist: str = "dontcare") -> str:
        """Find songs."""
        return "songs"

    registry = ToolRegistry([find_songs])
    schema = registry.get("find_songs").schema
    state = {"messages": [HumanMessage("Find me metal songs by Sabaton")],
             "chosen_tool": "find_songs"}
    strategy = ReactStrategy(GrammarCapable(), registry, grammar=True)  # type: ignore[arg-type]
    assert strategy.role_words  # the default
    named = {**schema, "required": [*schema["required"], "artist"]}
    assert strategy._args_kwargs(state)["grammar"] == args_grammar(named)
    strategy.role_words = False
    assert strategy._args_kwargs(state)["grammar"] == args_grammar(schema)


SEARCH_QUESTION = "Search the web for the latest Python release, please."


def test_search_arguments_are_told_from_settings_of_a_search() -> None:
    from callgate.tools.candidates import is_search_text

    for name in ("query", "search_query", "searchQuery", "q", "keywords", "keyword",
                 "search", "search_string", "query_string", "search_term", "user_query"):
        assert is_search_text(name, {"type": "string"}), name
    for name in ("search_type", "search_scope", "safe_search", "city", "loan_term",
                 "payment_term", "title"):
        assert not is_search_text(name, {"type": "string"}), name
    assert not is_search_text("query", {"type": "integer"})


def test_a_search_query_is_composed_of_the_conversations_words() -> None:
    schema = {"type": "object",
              "properties": {"query": {"type": "string"}, "region": {"type": "string"},
                             "search_type": {"type": "string"},
                             "keywords": {"type": "array", "items": {"type": "string"}},
                             "mode": {"type": "string", "enum": ["web", "news"]}},
              "required": ["query", "region", "search_type", "keywords", "mode"]}
    gbnf = args_grammar(schema, values=Values(words=SEARCH_QUESTION))
    assert _rule(gbnf, "query") == '"\\"" cg-query "\\""'
    assert "cg-query" in _rule(gbnf, "keywords-item")  # an array's items too
    for other in ("region", "search-type", "mode"):  # not a search, or an enum
        assert "cg-query" not in _rule(gbnf, other)
    # Spans of the question, up to eight, one space between them: "latest Python release"
    # is one span; "latest_python_release" or "R1" is none.
    assert _rule(gbnf, "cg-query") == 'cg-query-span (" " cg-query-span){0,7}'
    assert _rule(gbnf, "cg-query-w5") == '"latest" (" " cg-query-w6)?'
    assert _rule(gbnf, "cg-query-w7") == '"release"'  # ", please" (a stop word) is no end
    assert '"R1"' not in gbnf and "_" not in _rule(gbnf, "cg-query-span")
    # A span does not end on a stop word: "At" alone was once the bundled model's whole
    # query for "At what mileage is the car's next service due?".
    rules = query_rules("At what mileage is it? Ask me.")
    assert _rule(rules, "query-w0") == '"At" " " query-w1'  # leads on, may not end there
    # "is it?" leads nowhere ("it" may not end a span, and "?" ends it), nor does "me."
    assert _rule(rules, "query-span") == "query-w0 | query-w1 | query-w2 | query-w5"
    assert _rule(rules, "query-w2") == '"mileage"'
    assert _rule(rules, "query-w5") == '"Ask"'
    assert not re.search(r"query-w[346]", rules)
    # Without words (the option off) the query is free text, as before.
    assert "cg-query" not in args_grammar(schema, values=Values(text=SEARCH_QUESTION))
    assert "cg-query" not in args_grammar(schema)


def find_news(query: str, max_results: int = 5) -> str:
    """Search the news."""
    return "results"


def _word_tools() -> tuple[ToolRegistry, ReactStrategy]:
    """The built-in web_search, which declares its query made of the conversation's words,
    beside a tool that declares none, and a ReAct strategy over them for a grammar-capable
    stand-in model (no model runs)."""
    from callgate.tools.builtin.web_search import web_search_tool

    registry = ToolRegistry([find_news, web_search_tool("searxng",
                                                        searxng_url="http://127.0.0.1:9")])
    return registry, ReactStrategy(GrammarCapable(), registry, grammar=True)  # type: ignore[arg-type]


def test_a_tool_declares_its_word_arguments_and_the_option_extends_them() -> None:
    from langchain_core.messages import HumanMessage

    registry, strategy = _word_tools()
    assert registry.get("web_search").conversation_words == ("query",)  # the built-in's
    with pytest.raises(ValueError, match="names no argument"):
        ToolRegistry().register(find_news, conversation_words=("topic",))

    def grammar(tool: str) -> str:
        state = {"messages": [HumanMessage(SEARCH_QUESTION)], "chosen_tool": tool}
        return strategy._args_kwargs(state)["grammar"]

    assert "cg-query-span" in grammar("web_search")  # declared by the tool
    assert "cg-query" not in grammar("find_news")  # only what a tool declares


def test_a_query_that_says_too_little_takes_the_requests_words() -> None:
    from langchain_core.messages import HumanMessage

    from callgate.tools.candidates import fuller_query

    # The bundled model's queries in the answer-quality set (141b3fe), each of which found
    # nothing: fewer than two words saying what to look for.
    for query, request, fuller in [
            ("latest", SEARCH_QUESTION, "latest Python release"),
            ("my notes", "What is the guest Wi-Fi password in my notes?",
             "guest Wi-Fi password"),
            ("At what mileage", "At what mileage is the car's next service due? Check my notes.",
             "mileage car's next service due"),
            # Two words or more, or nothing more in the request: the model's query stays.
            ("Harbor Lane", "When does the Harbor Lane office open? Check my documents.",
             "Harbor Lane"),
            ("Falcon X9", "Search the web for the release date of the Falcon X9 phone.",
             "Falcon X9"),
            ("python", "python", "python"),
            # A looping query keeps each word once (the bundled model's, on a fresh question).
            ("Python Python Python Python version", "Search the web for the newest Python "
             "version.", "Python version")]:
        assert fuller_query(query, request) == fuller, query

    _, strategy = _word_tools()

    def written(tool: str) -> str:
        state = {"messages": [HumanMessage(SEARCH_QUESTION)], "chosen_tool": tool}
        return strategy._fuller_queries(state, '{"query": "latest"}')

    assert json.loads(written("web_search")) == {"query": "latest Python release"}
    assert json.loads(written("find_news")) == {"query": "latest"}  # declares no word args


@pytest.mark.llama
def test_decoding_a_search_query_writes_only_the_questions_words() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from callgate.models.grammar import grammar_error
    from callgate.models.spec import load_model

    model, _ = load_model("bundled")
    schema = {"type": "object", "properties": {"query": {"type": "string"}},
              "required": ["query"]}
    gbnf = args_grammar(schema, values=Values(words=SEARCH_QUESTION))
    assert grammar_error(gbnf, model.llama) is None
    messages = [SystemMessage("Tools: web_search(query)"), HumanMessage(SEARCH_QUESTION),
                AIMessage("Action: web_search\nAction Input: ")]
    out = model.invoke(messages, grammar=gbnf, max_tokens=40, temperature=0.0, stop=[])
    query = json.loads(out.text)["query"]
    words = set(re.findall(r"\w+", SEARCH_QUESTION))
    assert query and set(re.findall(r"\w+", query)) <= words


def test_a_flag_the_request_asks_for_is_true_and_one_it_declines_is_the_models() -> None:
    from callgate.tools.relevance import affirmed_flags

    homes = {"type": "object", "properties": {
        "city": {"type": "string"}, "has_garage": {"type": "boolean"},
        "in_unit_laundry": {"type": "boolean"}, "include_photos": {"type": "boolean"}}}
    # A word of the flag's name in the request; "include"/"has" alone say nothing.
    assert affirmed_flags(homes, "A flat in Porto with a garage, please.") == ["has_garage"]
    assert affirmed_flags(homes, "Homes in Porto, including the price.") == []
    assert affirmed_flags(homes, "Homes in Porto with photos.") == ["include_photos"]
    # A negation in the same sentence leaves the flag to the model.
    assert affirmed_flags(homes, "A flat in Porto. I don't need a garage. Laundry in the "
                                 "unit would be nice.") == ["in_unit_laundry"]
    assert affirmed_flags(homes, "Porto. I don’t need a garage.") == []  # a phone's apostrophe
    # "No" before a number abbreviates "number": no negation.
    assert affirmed_flags(homes, "House No 28 in Porto, with a garage.") == ["has_garage"]
    assert affirmed_flags(homes, "Porto, no garage.") == []
    # Words every flag of the tool shares ("cleaning") do not tell them apart.
    cleaning = {"type": "object", "properties": {
        "is_cleaning_home": {"type": "boolean"}, "is_cleaning_office": {"type": "boolean"}}}
    assert affirmed_flags(cleaning, "A cleaning service for my office.") == [
        "is_cleaning_office"]
    assert affirmed_flags(cleaning, "A cleaning service tomorrow.") == []


@pytest.mark.parametrize(("said", "written", "option"), [
    ("A flat in Porto with a garage.", '"true"', "affirmed_flags"),
    ("A flat in Porto without a garage.", '"false"', "said_flags"),
])
def test_the_grammar_writes_a_flag_as_the_request_says_it(said: str, written: str,
                                                          option: str) -> None:
    from langchain_core.messages import HumanMessage

    def find_homes(city: str, has_garage: bool = False) -> str:
        """Homes for rent in a city."""
        return city

    registry = ToolRegistry([find_homes])
    strategy = ReactStrategy(GrammarCapable(), registry, grammar=True)  # type: ignore[arg-type]
    state = {"messages": [HumanMessage(said)], "chosen_tool": "find_homes"}
    gbnf = strategy._args_kwargs(state)["grammar"]
    assert _rule(gbnf, "has-garage") == written
    assert "has-garage-kv" in _rule(gbnf, "root")  # written, not left to the default
    setattr(strategy, option, False)
    # Off: the model writes true or false.
    assert _rule(strategy._args_kwargs(state)["grammar"], "has-garage-kv").endswith("boolean")


def test_flag_values_read_the_values_a_request_says_in_order() -> None:
    from callgate.tools.relevance import flag_values

    rooms = {"type": "object", "properties": {
        "city": {"type": "string"}, "smoking_allowed": {"type": "boolean"},
        "breakfast_included": {"type": "boolean"}}}
    # A negation before the flag's word, in its part of the sentence, says false.
    assert flag_values(rooms, "A non-smoking room in Lyon.") == {"smoking_allowed": (False,)}
    assert flag_values(rooms, "A room in Lyon without breakfast, smoking is fine.") == {
        "breakfast_included": (False,), "smoking_allowed": (True,)}
    # Said both ways: both values, in the order said.
    assert flag_values(rooms, "A room with breakfast in Lyon, and then one without "
                              "breakfast in Nice.") == {"breakfast_included": (True, False)}
    # Indifference is no value; nor is "No" abbreviating "number".
    assert flag_values(rooms, "A room in Lyon. I don't care about breakfast.") == {}
    assert flag_values(rooms, "Room No 12 in Lyon with breakfast.") == {
        "breakfast_included": (True,)}
    # A number's point or comma ends no part of the sentence.
    bags = {"type": "object", "properties": {"checked_luggage": {"type": "boolean"}}}
    assert flag_values(bags, "Don't add 2.5 kg of checked luggage.") == {
        "checked_luggage": (False,)}
    assert flag_values(bags, "Don't pay 1,200 yen for checked luggage.") == {
        "checked_luggage": (False,)}
    # Two words of one flag that disagree say nothing: "available on Monday" is the date's.
    pets = {"type": "object", "properties": {"available_for_pet": {"type": "boolean"}}}
    assert flag_values(pets, "A cleaner available on Monday, who does not have pets.") == {}
