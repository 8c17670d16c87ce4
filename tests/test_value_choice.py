"""Values the model cannot invent: candidates from the conversation, ranked by the model.

The search (`callgate.models.ranking.best_first`) is checked against brute force on a
made-up distribution; the chooser's policy (`callgate.graph.choose_values`) with a ranker
that replays fixed scores — a stand-in, not a language model; the ranking itself on the
real bundled model (llama marker), against each candidate scored token by token.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from callgate.graph.choose_values import ValueChooser
from callgate.models.ranking import Ranked, TokenTrie, best_first, log_softmax
from callgate.tools.asks import sibling_lists
from callgate.tools.candidates import is_free_text, number_values, spans

# --- the search -------------------------------------------------------------------------------

VOCAB = 6
END = 5  # the token that ends a value


def table_model(seed: int) -> Any:
    """Log-probabilities of the next token after each path: random, but fixed per path."""

    def expand(path: tuple[int, ...]) -> np.ndarray:
        rng = np.random.default_rng(abs(hash((seed, path))) % 2**32)
        return log_softmax(rng.normal(0, 2, VOCAB))

    return expand


def brute_force(tokenized: list[list[int]], expand: Any) -> list[float]:
    scores = []
    for tokens in tokenized:
        total, path = 0.0, ()
        for token in tokens:
            total += float(expand(path)[token])
            path = (*path, token)
        scores.append(total + float(expand(path)[END]))
    return scores


@pytest.mark.parametrize("seed", range(8))
def test_best_first_ranks_exactly_as_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tokenized = [list(rng.integers(0, END, rng.integers(1, 5))) for _ in range(12)]
    texts = [f"c{i}" for i in range(len(tokenized))]
    expand = table_model(seed)
    ranked = best_first(texts, TokenTrie(tokenized), expand(()), expand,
                        np.array([END]), max_expansions=1000)
    expected = brute_force(tokenized, expand)
    # Candidates with the same tokens are the same value: each ranked once per text.
    assert sorted(r.text for r in ranked) == sorted(texts)
    for item in ranked:
        assert math.isclose(item.logprob, expected[texts.index(item.text)], abs_tol=1e-9)
    assert [r.logprob for r in ranked] == sorted((r.logprob for r in ranked), reverse=True)


def test_best_first_stops_when_told_and_spends_fewer_decodes() -> None:
    tokenized = [[0, 1, 2], [0, 1, 3], [1], [2, 2], [3, 4, 4, 4]]
    texts = ["a", "b", "c", "d", "e"]
    expand = table_model(3)
    calls: list[tuple[int, ...]] = []

    def counted(path: tuple[int, ...]) -> np.ndarray:
        calls.append(path)
        return expand(path)

    everything = best_first(texts, TokenTrie(tokenized), expand(()), expand, np.array([END]))
    first = best_first(texts, TokenTrie(tokenized), expand(()), counted, np.array([END]),
                       until=lambda item: True)
    assert first == everything[:1]
    assert len(calls) < sum(len(t) for t in tokenized)


def test_best_first_out_of_budget_returns_what_is_complete() -> None:
    expand = table_model(5)
    ranked = best_first(["a", "b"], TokenTrie([[0], [1, 2, 3, 4]]), expand(()), expand,
                        np.array([END]), max_expansions=1)
    assert len(ranked) <= 1


# --- the candidates -----------------------------------------------------------------------------


def test_spans_are_runs_of_whole_words_as_written() -> None:
    found = spans("Find 5 restaurants in Manhattan, NY with C++ for 'ABC Ltd.'")
    for value in ("Manhattan", "Manhattan, NY", "restaurants in Manhattan", "C++", "ABC Ltd",
                  "5"):
        assert value in found
    assert "anhattan" not in found and "Manhattan," not in found
    assert all(len(v.split()) <= 8 for v in found)


def test_spans_keep_identifiers_hosts_and_paths_whole() -> None:
    found = spans("host pg.example.org, db main_db, path /foo/bar, key secure*pass123")
    assert {"pg.example.org", "main_db", "foo/bar", "secure*pass123"} <= set(found)


def test_spans_do_not_cross_quotes_or_lines() -> None:
    found = spans('say "hello" now\nthen stop')
    assert not any('"' in v or "\n" in v for v in found)


def test_number_values_fit_the_argument() -> None:
    text = "a 5% rate on 1,000 dollars for twenty years, 2.5 times"
    assert number_values(text, {"type": "number"}) == [0.05, 2.5, 5, 20, 1000]
    assert number_values(text, {"type": "integer"}) == [5, 20, 1000]
    assert number_values(text, {"type": "integer", "minimum": 10, "maximum": 100}) == [20]
    assert number_values("1e999 or 7", {"type": "number"}) == [7]  # no infinity


def test_free_text_arguments_are_the_models_to_write() -> None:
    assert is_free_text("query", {})
    assert is_free_text("searchQuery", {})
    assert is_free_text("x", {"description": "A free-form summary"})
    assert not is_free_text("city", {"description": "The city name"})
    assert is_free_text("statement", {"description": "The query the user made"})
    # "search" and the verb "to query" say what the tool does, not that the value is
    # composed: a city, a book's name, a version are copied from the request.
    assert not is_free_text("city", {"description": "The city to search within."})
    assert not is_free_text("location", {
        "description": "The location where user wants to search for a restaurant."})
    assert not is_free_text("version", {"description": "The version of the project to query."})
    assert is_free_text("statement", {"description": "The SQL statement to query the database"})


# --- the chooser's policy, with a ranker that replays fixed scores -------------------------------


class FixedRanker:
    """Ranks candidates by a fixed table of log-probabilities (unknown texts: -50)."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[list[str]] = []

    def rank(self, prompt: Any, candidates: list[str], end: str, *, until: Any = None,
             max_expansions: int = 64) -> list[Ranked]:
        self.calls.append(list(candidates))
        ranked = sorted((Ranked(c, self.scores.get(c, -50.0)) for c in candidates),
                        key=lambda r: -r.logprob)
        out = []
        for item in ranked:
            out.append(item)
            if until is not None and until(item):
                break
        return out


SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"}, "count": {"type": "integer"},
    "query": {"type": "string"}, "unit": {"type": "string"},
    "mode": {"type": "string", "enum": ["fast", "slow"]}},
    "required": ["city", "count", "query"]}
REQUEST = "Find 5 Thai restaurants in Manhattan, slow please"
PROMPT = [SystemMessage("tools"), HumanMessage(REQUEST), AIMessage("Action: find\n")]


def choose(ranker: FixedRanker, args: dict[str, Any], earlier: list[dict[str, Any]] | None = None,
           **options: Any) -> dict[str, Any]:
    chooser = ValueChooser(ranker, **options)
    return chooser.choose(PROMPT, "Action Input: ", args, SCHEMA, REQUEST,
                          earlier or [])


def test_an_invented_value_gives_way_to_the_best_supported_one() -> None:
    ranker = FixedRanker({"Manchester": -2.8, "Manhattan": -3.2, "Thai": -6.0})
    assert choose(ranker, {"city": "Manchester", "count": 5, "query": "x"})["city"] == (
        "Manhattan")


def test_an_offer_below_the_floor_does_not_replace_an_invented_value() -> None:
    # Nothing the conversation offers is a likely value: the question lacks it.
    ranker = FixedRanker({"Manchester": -5.0, "Manhattan": -6.5})
    out = choose(ranker, {"city": "Manchester", "count": 5, "query": "x"}, floor=-4.0)
    assert out["city"] == "Manchester"


def test_an_invented_value_far_more_likely_than_any_offer_stays() -> None:
    # The conversation lacks what the model needs: grounding will refuse the call.
    ranker = FixedRanker({"Paris": -1.0, "Manhattan": -9.0})
    out = choose(ranker, {"city": "Paris", "count": 5, "query": "x"}, margin=3.0)
    assert out["city"] == "Paris"


def test_supported_values_and_free_text_stay_without_a_ranking() -> None:
    ranker = FixedRanker({})
    args = {"city": "Manhattan", "count": 5, "query": "best thai food"}
    assert choose(ranker, args) == args
    assert ranker.calls == []


def test_a_value_only_half_stated_is_ranked_with_word_for_word() -> None:
    # "Manhattan Beach" has half its words in the request: grounding takes it, so by default
    # it stays unranked; stated word for word it is not, and a span beats it.
    ranker = FixedRanker({"Manhattan Beach": -3.0, "Manhattan": -1.0})
    args = {"city": "Manhattan Beach", "count": 5, "query": "x"}
    assert choose(ranker, args, word_for_word=False)["city"] == "Manhattan Beach"
    assert ranker.calls == []
    assert choose(ranker, args, word_for_word=True)["city"] == "Manhattan"


def test_an_identifier_joined_from_scattered_words_is_ranked_with_the_spans() -> None:
    # "thai_manhattan_slow" takes words from three places of the request: grounding and a
    # bag of words take it; the words do not stand that way, and a span beats it.
    ranker = FixedRanker({"thai_manhattan_slow": -3.0, "Manhattan": -1.0})
    args = {"city": "thai_manhattan_slow", "count": 5, "query": "x"}
    assert choose(ranker, args)["city"] == "Manhattan"
    # Words the request writes one after another stay the model's choice, unranked.
    ranker = FixedRanker({})
    args = {"city": "thai_restaurants_in_manhattan", "count": 5, "query": "x"}
    assert choose(ranker, args)["city"] == "thai_restaurants_in_manhattan"
    assert ranker.calls == []


def test_a_placeholder_in_braces_is_no_value_the_user_gave() -> None:
    # The bundled model wrote {"user_id": "{user_id}"} for "My user ID is 123456789" and
    # {"order_id": "{123123}"} for "id was 123123"; grounding read the words inside the
    # braces and took both, and a second call with the real id followed.
    ranker = FixedRanker({"{Manhattan}": -0.5, "Manhattan": -2.0, "Thai": -3.0})
    assert choose(ranker, {"city": "{Manhattan}", "count": 5, "query": "x"})["city"] == (
        "Manhattan")
    ranker = FixedRanker({"{city}": -0.5, "Manhattan": -2.0, "Thai": -3.0})
    assert choose(ranker, {"city": "{city}", "count": 5, "query": "x"})["city"] == "Manhattan"


def test_word_for_word_leaves_stated_values_and_schema_defaults_alone() -> None:
    ranker = FixedRanker({})
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"],
                                       "unit": {"type": "string", "default": "dontcare"}}}
    chooser = ValueChooser(ranker, word_for_word=True)
    for args in ({"city": "Manhattan, NY", "count": 5, "query": "x"},
                 {"city": "Manhattan", "count": 5, "query": "x", "unit": "dontcare"}):
        assert chooser.choose(PROMPT, "Action Input: ", args, schema, REQUEST, []) == args
    assert ranker.calls == []


def test_a_default_written_for_an_argument_the_request_names_is_chosen_again() -> None:
    # SmolLM2 wrote "dontcare" for the director of "a comedy directed by Wes Anderson".
    schema = {"type": "object", "properties": {
        "genre": {"type": "string"},
        "directed_by": {"type": "string", "default": "dontcare"},
        "cast": {"type": "string", "default": "dontcare"}}, "required": ["genre"]}
    request = "Find a comedy directed by Wes Anderson"
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: find\n")]
    args = {"genre": "comedy", "directed_by": "dontcare", "cast": "dontcare"}

    def chosen(scores: dict[str, float], **options: Any) -> dict[str, Any]:
        return ValueChooser(FixedRanker(scores), **options).choose(
            prompt, "Action Input: ", args, schema, request, [], request=request)

    likely = {"dontcare": -0.5, "Wes Anderson": -2.0, "comedy": -3.0}
    # The request names the director, not the cast: the cast's default stands.
    assert chosen(likely) == {**args, "directed_by": "Wes Anderson"}
    assert chosen(likely, named_defaults=False)["directed_by"] == "dontcare"
    # As for an invented value: the default stays where no offer is likely.
    assert chosen({"dontcare": -0.5, "Wes Anderson": -6.0})["directed_by"] == "dontcare"


def test_an_enum_member_the_request_names_is_the_value() -> None:
    # "slow please": the model's ranking would keep "fast"; the user named "slow".
    ranker = FixedRanker({"fast": -0.5, "slow": -3.0})
    args = {"city": "Manhattan", "count": 5, "query": "x", "mode": "fast"}
    chooser = ValueChooser(ranker, named_members=True)
    out = chooser.choose(PROMPT, "Action Input: ", args, SCHEMA, REQUEST, [], request=REQUEST)
    assert out["mode"] == "slow" and ranker.calls == []
    off = ValueChooser(ranker, named_members=False)
    assert off.choose(PROMPT, "Action Input: ", args, SCHEMA, REQUEST, [],
                      request=REQUEST)["mode"] == "fast"


def test_a_member_another_argument_holds_is_not_named_again() -> None:
    currencies = {"type": "string", "enum": ["USD", "EUR", "GBP"]}
    schema = {"type": "object", "properties": {"from_currency": currencies,
                                               "to_currency": currencies}}
    request = "Convert 100 USD to euros"
    ranker = FixedRanker({"USD": -1.0, "EUR": -0.5, "GBP": -6.0})
    out = ValueChooser(ranker, named_members=True).choose(
        PROMPT, "Action Input: ", {"from_currency": "USD", "to_currency": "EUR"}, schema,
        request, [], request=request)
    assert out == {"from_currency": "USD", "to_currency": "EUR"}


def test_of_several_named_members_the_model_ranks_only_those() -> None:
    schema = {"type": "object", "properties": {
        "room": {"type": "string", "enum": ["Living room", "Kitchen", "Patio"]}}}
    request = "Play it in the kitchen, then on the patio"
    ranker = FixedRanker({"Living room": -0.1, "Kitchen": -4.0, "Patio": -2.0})
    out = ValueChooser(ranker, named_members=True).choose(
        PROMPT, "Action Input: ", {"room": "Living room"}, schema, request, [],
        request=request)
    assert out["room"] == "Patio"
    assert ranker.calls == [["Kitchen", "Patio"]]


CITY_SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string", "description": "The city, in the format 'City, State', such as "
             "'Berkeley, CA' or 'New York, NY'."},
    "date": {"type": "string"}}, "required": ["city"]}


def test_a_place_whose_argument_shows_a_code_gets_the_code_the_model_ranks_first() -> None:
    request = "What is the weather in Petaluma on 2023-04-09?"
    ranker = FixedRanker({" CA": -0.7, " NY": -2.5, "Petaluma": -0.1})
    args = {"city": "Petaluma", "date": "2023-04-09"}
    out = ValueChooser(ranker, place_codes=True).choose(
        PROMPT, "Action Input: ", args, CITY_SCHEMA, request, [], request=request)
    assert out == {"city": "Petaluma, CA", "date": "2023-04-09"}
    # Every two capital letters is a candidate, written after the comma as the model would.
    codes = ranker.calls[-1]
    assert len(codes) == 26 * 26 and " CA" in codes and " ZZ" in codes


def test_a_place_with_a_qualifier_or_an_argument_without_the_format_stays() -> None:
    ranker = FixedRanker({" CA": -0.7})
    chooser = ValueChooser(ranker, place_codes=True)
    coded = {"city": "Santa Rosa, CA"}
    assert chooser.choose(PROMPT, "Action Input: ", coded, CITY_SCHEMA, "Santa Rosa, CA", [],
                          request="Santa Rosa, CA") == coded
    plain = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert chooser.choose(PROMPT, "Action Input: ", {"city": "Petaluma"}, plain, "Petaluma",
                          [], request="Petaluma") == {"city": "Petaluma"}
    for place in ("Berkeley CA", "94704", "current location"):  # a code, no name
        assert chooser.choose(PROMPT, "Action Input: ", {"city": place}, CITY_SCHEMA, place,
                              [], request=place) == {"city": place}
    assert all(" CA" not in call for call in ranker.calls)


def test_a_place_the_request_says_where_it_is_keeps_what_the_user_wrote() -> None:
    # Hand-written requests: the model wrote the city alone, and the ranker's first code
    # (here " CA", as SmolLM2 ranked "Paris, CA") would put it in the wrong country.
    ranker = FixedRanker({" CA": -0.5, " FR": -3.0, " AU": -2.0})
    chooser = ValueChooser(ranker, place_codes=True)
    by_country = {"type": "object", "properties": {"city": {
        "type": "string", "description": "The place, as 'City, State (abbr)' or 'City, "
        "Country', such as 'San Francisco, CA' or 'Tokyo, Japan'."}}}

    def coded(request: str, city: str, schema: dict[str, Any] = by_country) -> Any:
        return chooser.choose(PROMPT, "Action Input: ", {"city": city}, schema, request, [],
                              request=request)["city"]

    assert coded("Will it rain in Paris, France tomorrow?", "Paris") == "Paris, France"
    assert coded("Weather for Auckland, New Zealand.", "Auckland") == "Auckland, New Zealand"
    assert coded("Any rain in London, UK?", "London") == "London, UK"
    # A US state written whole takes its code, as the argument shows states.
    assert coded("Homes in Austin, Texas with a garage", "Austin") == "Austin, TX"
    assert coded("Homes in Austin, Texas with a garage", "Austin", CITY_SCHEMA) == "Austin, TX"
    # No qualifier, or a new sentence after the comma: the ranked code, as before.
    assert coded("Weather in Petaluma today", "Petaluma") == "Petaluma, CA"
    assert coded("I'm in Berkeley, Can you find a cafe?", "Berkeley") == "Berkeley, CA"
    # A list going on, a day, a possessive: not where the place is.
    assert coded("Weather in Boston, Chicago and Denver today?", "Boston") == "Boston, CA"
    assert coded("What's the weather in Paris, Tomorrow?", "Paris") == "Paris, CA"
    assert coded("Hotels in Springfield, Homer Simpson's town", "Springfield") == (
        "Springfield, CA")
    # Where the argument takes no countries, only a state or a code says where a place is.
    assert coded("Homes in Portland, OR with a garage", "Portland", CITY_SCHEMA) == (
        "Portland, OR")
    assert coded("Homes in Austin, Downtown", "Austin", CITY_SCHEMA) == "Austin, CA"
    # Where the examples write countries as codes ('Paris, FR'), the model ranks the code.
    by_code = {"type": "object", "properties": {"city": {
        "type": "string", "description": "The city, as 'City, State' or 'City, Country'; "
        "for example, 'New York, NY' or 'Paris, FR'."}}}
    ranker.scores = {" AU": -0.5, " CA": -2.0}
    assert coded("A hotel in Sydney, Australia", "Sydney", by_code) == "Sydney, AU"


def test_dates_are_written_in_the_format_their_argument_names() -> None:
    schema = {"type": "object", "properties": {
        "date": {"type": "string", "description": "Date of travel, in the format 'YYYY-MM-DD'"},
        "note": {"type": "string"}}}
    args = {"date": "April 15th, 2023", "note": "April 15th, 2023"}
    out = ValueChooser(FixedRanker({}), date_formats=True).choose(
        PROMPT, "Action Input: ", args, schema, "on April 15th, 2023", [],
        request="on April 15th, 2023")
    assert out == {"date": "2023-04-15", "note": "April 15th, 2023"}


ATTRACTIONS = {"type": "object", "properties": {
    "location": {"type": "string"},
    "category": {"type": "string", "enum": ["Museum", "Park", "dontcare"], "default": "dontcare"},
    "free_entry": {"type": "string", "enum": ["True", "False", "dontcare"],
                   "default": "dontcare"},
    "rooms": {"type": "string", "enum": ["1", "2", "dontcare"], "default": "dontcare"},
    "kind": {"type": "string", "enum": ["Museum", "Park"]}},
    "required": ["location", "kind"]}


def choose_attraction(request: str, args: dict[str, Any], **options: Any) -> dict[str, Any]:
    ranker = FixedRanker({"Park": -0.1, "Museum": -2.0, "True": -0.1, "2": -0.1,
                          "Paris": -0.1})
    return ValueChooser(ranker, **options).choose(
        PROMPT, "Action Input: ", args, ATTRACTIONS, request, [], request=request)


def test_an_optional_option_the_request_names_none_of_is_left_to_the_default() -> None:
    args = {"location": "Paris", "category": "Museum", "free_entry": "True", "rooms": "2",
            "kind": "Park"}
    request = "Something to do in Paris, free to enter, for two"
    out = choose_attraction(request, dict(args), unnamed_options=True)
    # "category": none named, left out (the tool's default). A flag written as a string and
    # numbers are said otherwise ("free", "two"): ranked as before. A required one stays.
    assert out == {"location": "Paris", "free_entry": "True", "rooms": "2", "kind": "Park"}
    assert choose_attraction(request, dict(args), unnamed_options=False)["category"] == "Park"
    # An option the request names is the value, as ever.
    named = choose_attraction("A museum in Paris", dict(args), unnamed_options=True)
    assert named["category"] == "Museum"


FLAGS = {"type": "object", "properties": {
    "city": {"type": "string"},
    "include_forecast": {"type": "boolean", "default": False},
    "private": {"type": "boolean", "default": False},
    "has_garage": {"type": "boolean"},
    "metric": {"type": "boolean"}},
    "required": ["city", "metric"]}


def test_an_optional_flag_the_request_does_not_ask_for_is_left_to_the_default() -> None:
    """``unstated_flags`` (the default): a boolean nobody asked about goes (the tool's
    default applies); a flag the request names ("forecast"), asks for ("with a garage") or
    the schema requires stays, whatever its value."""
    args = {"city": "Oslo", "include_forecast": False, "private": True, "has_garage": True,
            "metric": True}

    def chosen(request: str, **options: Any) -> dict[str, Any]:
        return ValueChooser(FixedRanker({"Oslo": -0.1}), **options).choose(
            PROMPT, "Action Input: ", dict(args), FLAGS, request, [], request=request)

    request = "Weather in Oslo without the forecast, and a flat with a garage"
    assert chosen(request) == {
        "city": "Oslo", "include_forecast": False, "has_garage": True, "metric": True}
    assert chosen("Weather in Oslo") == {"city": "Oslo", "metric": True}
    assert chosen("Weather in Oslo", unstated_flags=False) == args  # off: the model's flags


def test_an_invented_optional_value_is_left_to_grounding() -> None:
    ranker = FixedRanker({"Thai": -1.0})
    out = choose(ranker, {"city": "Manhattan", "count": 5, "query": "x", "unit": "miles"})
    assert out["unit"] == "miles" and ranker.calls == []


def test_enum_members_are_ranked_whole() -> None:
    ranker = FixedRanker({"fast": -2.0, "slow": -0.5})
    out = choose(ranker, {"city": "Manhattan", "count": 5, "query": "x", "mode": "fast"})
    assert out["mode"] == "slow"
    assert ranker.calls == [["fast", "slow"]]


def test_numbers_come_from_the_conversation() -> None:
    ranker = FixedRanker({" 10": -0.5, " 5": -1.0})
    out = choose(ranker, {"city": "Manhattan", "count": 10, "query": "x"})
    assert out["count"] == 5 and " 5" in ranker.calls[0]


def test_a_further_call_pays_for_repeating_an_earlier_value() -> None:
    request_scores = {"Manhattan": -1.0, "Thai": -2.0}
    earlier = [{"city": "Manhattan", "count": 5, "query": "x"}]
    args = {"city": "Manhattan", "count": 5, "query": "x"}
    assert choose(FixedRanker(request_scores), args, earlier, reuse_penalty=2.0)["city"] == (
        "Thai")
    assert choose(FixedRanker(request_scores), args, earlier, reuse_penalty=0.5)["city"] == (
        "Manhattan")


class PerArgumentRanker(FixedRanker):
    """Fixed scores per argument: the argument is read off the prefill's last ``"name":``."""

    def __init__(self, scores: dict[str, dict[str, float]]) -> None:
        super().__init__({})
        self.by_argument = scores

    def rank(self, prompt: Any, candidates: list[str], end: str, *, until: Any = None,
             max_expansions: int = 64) -> list[Ranked]:
        argument = prompt[-1].text.rsplit('"', 3)[-3] if prompt[-1].text.endswith(
            ' "') else prompt[-1].text.rsplit('"', 2)[-2]
        self.scores = self.by_argument.get(argument, {})
        return super().rank(prompt, candidates, end, until=until,
                            max_expansions=max_expansions)


PLACES = {"type": "object", "properties": {
    "city": {"type": "string"}, "state": {"type": "string"},
    "item": {"type": "string"}, "material": {"type": "string", "enum": ["bronze", "marble"]},
    "region": {"type": "string"}},
    "required": ["city", "state", "item"]}
PLACES_REQUEST = "Crime in San Francisco, California, and a bronze horse for the hall"
PLACES_PROMPT = [SystemMessage("tools"), HumanMessage(PLACES_REQUEST),
                 AIMessage("Action: find\n")]


def choose_places(ranker: FixedRanker, args: dict[str, Any], **options: Any) -> dict[str, Any]:
    chooser = ValueChooser(ranker, **options)
    return chooser.choose(PLACES_PROMPT, "Action Input: ", args, PLACES,
                          PLACES_REQUEST, [])


def test_two_required_arguments_holding_one_span_settle_it_by_what_each_loses() -> None:
    # The model copied the city into the state. The state loses 1.5 by moving to its next
    # best offer, the city 4.0: the state moves.
    ranker = PerArgumentRanker({
        "state": {"San Francisco": -1.0, "California": -2.5, "horse": -6.0},
        "city": {"San Francisco": -0.5, "California": -4.5}})
    args = {"city": "San Francisco", "state": "San Francisco", "item": "horse"}
    out = choose_places(ranker, args, distinct=True)
    assert out == {"city": "San Francisco", "state": "California", "item": "horse"}
    # Off, the copy stays.
    assert choose_places(ranker, args, distinct=False) == args


def test_the_earlier_argument_moves_when_the_span_fits_it_worse() -> None:
    ranker = PerArgumentRanker({
        "city": {"California": -0.8, "San Francisco": -1.0},
        "state": {"California": -0.2, "San Francisco": -5.0}})
    args = {"city": "California", "state": "California", "item": "horse"}
    out = choose_places(ranker, args, distinct=True)
    assert out["city"] == "San Francisco" and out["state"] == "California"


ADDRESS_SCHEMA = {"type": "object", "properties": {
    "loc": {"type": "string", "description": "The starting location, in the format of "
            "'Street Address, City, State (abbr), Country'."},
    "seats": {"type": "integer"}}, "required": ["loc"]}


def test_a_value_takes_the_parts_its_format_names_that_the_request_writes_after_it() -> None:
    # Hand-written requests; the ranker scores nothing (an invented value stays).
    ranker = FixedRanker({})
    chooser = ValueChooser(ranker)

    def loc(request: str, value: str, schema: dict[str, Any] = ADDRESS_SCHEMA) -> Any:
        return chooser.choose(PROMPT, "Action Input: ", {"loc": value}, schema, request, [],
                              request=request)["loc"]

    request = "I need a ride from 12 Oak Road, Dayton, OH, USA, and I can wait 5 minutes."
    assert loc(request, "12 Oak Road, Dayton, OH") == "12 Oak Road, Dayton, OH, USA"
    assert loc(request, "12 Oak Road") == "12 Oak Road, Dayton, OH, USA"
    assert loc("Pick me up at 9 Elm St, Springfield, IL with two seats", "9 Elm St") == (
        "9 Elm St, Springfield, IL")  # the parts the request has
    # A sentence ends a part; a list going on is no place's parts; nor a value the request
    # does not hold.
    assert loc("Pick me up at 9 Elm St, Springfield. I have bags", "9 Elm St") == (
        "9 Elm St, Springfield")
    assert loc("Rides from Boston, Chicago and Denver", "Boston") == "Boston"
    assert loc("A ride from 12 Oak Road, Dayton, OH", "12 Oak Rd") == "12 Oak Rd"
    # More parts than the format takes: which to leave out is not this rule's to say.
    in_city = {"type": "object", "properties": {"loc": {
        "type": "string", "description": "The city, in the format 'City, State'."}}}
    assert loc("Weather in Dayton, OH today", "Dayton", in_city) == "Dayton, OH"
    assert loc("Weather in Dayton, OH, USA today", "Dayton", in_city) == "Dayton"
    # No format named, or examples that write a place with a code ('Paris, FR'), which
    # ``place_codes`` writes: the value stays.
    plain = {"type": "object", "properties": {"loc": {"type": "string"}}}
    assert loc(request, "12 Oak Road", plain) == "12 Oak Road"
    coded = {"type": "object", "properties": {"loc": {
        "type": "string", "description": "The city, in the format of 'City, State'; for "
        "example, 'New York, NY' or 'Paris, FR'."}}}
    assert ValueChooser(ranker, place_codes=False).choose(
        PROMPT, "Action Input: ", {"loc": "Sydney"}, coded, "a hotel in Sydney, Australia", [],
        request="a hotel in Sydney, Australia") == {"loc": "Sydney"}
    assert ValueChooser(ranker, format_parts=False).choose(
        PROMPT, "Action Input: ", {"loc": "12 Oak Road"}, ADDRESS_SCHEMA, request, [],
        request=request) == {"loc": "12 Oak Road"}


def test_the_models_own_value_is_a_place_to_move_to() -> None:
    # The state's wish is not in the conversation and gives way to the city's span; with
    # that span taken, the wish is the state's next-best value (grounding judges it).
    ranker = PerArgumentRanker({
        "state": {"San Francisco": -2.0, "Golden State": -9.0, "horse": -12.0},
        "city": {"San Francisco": -0.5, "horse": -14.0}})
    args = {"city": "San Francisco", "state": "Golden State", "item": "horse"}
    assert choose_places(ranker, args, distinct=False)["state"] == "San Francisco"
    assert choose_places(ranker, args)["state"] == "Golden State"


def test_an_optional_argument_repeating_another_value_is_dropped() -> None:
    ranker = PerArgumentRanker({})
    args = {"city": "San Francisco", "state": "California", "item": "horse",
            "region": "San Francisco"}
    out = choose_places(ranker, args, distinct=True)
    assert "region" not in out and out["city"] == "San Francisco"


def test_a_span_equal_to_another_arguments_option_moves() -> None:
    # "material" is an enum (an option, not a span); the item copied it and moves.
    ranker = PerArgumentRanker({
        "item": {"bronze": -0.5, "horse": -1.5},
        "material": {"bronze": -0.1, "marble": -3.0}})
    args = {"city": "San Francisco", "state": "California", "item": "bronze",
            "material": "bronze"}
    out = choose_places(ranker, args, distinct=True)
    assert out["item"] == "horse" and out["material"] == "bronze"


def test_a_shared_span_stays_when_neither_argument_has_anywhere_to_go() -> None:
    ranker = PerArgumentRanker({"city": {"San Francisco": -0.1},
                                "state": {"San Francisco": -0.1}})
    args = {"city": "San Francisco", "state": "San Francisco", "item": "horse"}
    out = choose_places(ranker, args, distinct=True, floor=-4.0)
    assert out["city"] == out["state"] == "San Francisco"


BOOKING = {"type": "object", "properties": {
    "venue": {"type": "string"}, "city": {"type": "string"}, "photo": {"type": "string"},
    "place": {"type": "string"}, "guests": {"type": "integer"}, "day": {"type": "string"},
    "curve": {"type": "string"}, "x": {"type": "integer"}},
    "required": ["venue", "city"]}


def choose_booking(ranker: FixedRanker, request: str, args: dict[str, Any],
                   **options: Any) -> dict[str, Any]:
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: book\n")]
    return ValueChooser(ranker, **options).choose(prompt, "Action Input: ", args, BOOKING,
                                                  request, [], request=request)


def test_a_span_holding_another_arguments_value_moves_off_it() -> None:
    # SmolLM2 read on past the venue into the city the next argument holds. The venue
    # loses 0.4 by moving to a span without "Denver"; the city has nowhere else to go.
    request = "Book a table at the Blue Door Bistro in Denver for our team"
    ranker = PerArgumentRanker({
        "venue": {"Blue Door Bistro in Denver": -0.5, "Blue Door Bistro": -0.9,
                  "Denver": -3.0},
        "city": {"Denver": -0.1, "Blue Door Bistro": -6.0}})
    args = {"venue": "Blue Door Bistro in Denver", "city": "Denver"}
    assert choose_booking(ranker, request, args) == {"venue": "Blue Door Bistro",
                                                     "city": "Denver"}
    assert choose_booking(ranker, request, args, uncontained=False) == args


def test_the_held_value_moves_where_it_fits_worse() -> None:
    # The place copied a part of the photo's title; the title has no other span above
    # the floor, the place moves to the one the request gives it.
    request = "Print my photo Lake Como Sunset, taken at Bellagio near Milan, for the hall"
    ranker = PerArgumentRanker({
        "photo": {"Lake Como Sunset": -0.3, "Bellagio": -8.0},
        "place": {"Lake Como": -0.9, "Bellagio": -1.2, "Lake": -2.0}})
    args = {"venue": "hall", "city": "Milan", "photo": "Lake Como Sunset",
            "place": "Lake Como"}
    out = choose_booking(ranker, request, args, distinct=False)
    assert out["photo"] == "Lake Como Sunset" and out["place"] == "Bellagio"


def test_numbers_in_a_date_or_a_formula_are_not_held() -> None:
    # Each container has a cheap span to move to, so only the rule's reading of "holds"
    # keeps them: the 1 of "May 1, 2022" and the 2 of "3x^2 + 2x" are not the guests' 1
    # or the point's 2.
    ranker = PerArgumentRanker({
        "day": {"May 1, 2022": -0.5, "May": -0.6}, "guests": {" 1": -0.1},
        "curve": {"3x^2 + 2x": -0.5, "3x": -0.6}, "x": {" 2": -0.1}})
    request = "Book the Moonlight Room in Austin on May 1, 2022 to plot 3x^2 + 2x at 2, 1 guest"
    args = {"venue": "Moonlight Room", "city": "Austin", "day": "May 1, 2022",
            "guests": 1, "curve": "3x^2 + 2x", "x": 2}
    assert choose_booking(ranker, request, args, distinct=False) == args
    # A number the span holds as a word of its own is held ("Room 1": the guests' 1).
    ranker = PerArgumentRanker({"venue": {"Moonlight Room 1": -0.2, "Moonlight Room": -0.3},
                                "guests": {" 1": -0.1}})
    request = "Book the Moonlight Room 1 in Austin for 1 guest"
    args = {"venue": "Moonlight Room 1", "city": "Austin", "guests": 1}
    assert choose_booking(ranker, request, args, distinct=False)["venue"] == "Moonlight Room"


SLOPE = {"type": "object", "properties": {
    "function": {"type": "string"}, "value": {"type": "integer"},
    "precision": {"type": "integer"}},
    "required": ["function", "value"]}


def choose_slope(ranker: FixedRanker, request: str, args: dict[str, Any],
                 **options: Any) -> dict[str, Any]:
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: slope\n")]
    return ValueChooser(ranker, **options).choose(prompt, "Action Input: ", args, SLOPE,
                                                  request, [], request=request)


def test_a_formula_the_call_holds_keeps_its_numbers() -> None:
    # Hand-written after SmolLM2's slip: the 2 of "2x^2" taken for the point, which the
    # model ranks first; the formula holds it, so the point is the 1 the user gives.
    ranker = PerArgumentRanker({"value": {" 2": -0.1, " 1": -0.5, " 7": -0.6}})
    request = "What is the slope of 2x^2 + 7 where x is 1?"
    args = {"function": "2x^2 + 7", "value": 2}
    assert choose_slope(ranker, request, args) == {"function": "2x^2 + 7", "value": 1}
    assert choose_slope(ranker, request, args, formula_numbers=False) == args
    # However unlikely the model finds the point the request states apart from the formula.
    unlikely = PerArgumentRanker({"value": {" 2": -0.1, " 1": -9.0}})
    assert choose_slope(unlikely, request, args)["value"] == 1
    # An optional number the request writes only in the formula is left to the default,
    # not moved to the point (one span per argument is off, so this rule alone decides).
    args = {"function": "2x^2 + 7", "value": 1, "precision": 7}
    assert choose_slope(ranker, request, args, distinct=False) == {
        "function": "2x^2 + 7", "value": 1}


def test_one_span_per_argument_does_not_bring_a_formulas_number_back() -> None:
    # "order 1" and the point, first chosen as 1, hold one number written once: the point
    # moves on, to the 3, not back to the model's 2 that the formula holds.
    schema = {"type": "object", "properties": {
        "function": {"type": "string"}, "value": {"type": "integer"},
        "order": {"type": "integer"}}, "required": ["function", "value", "order"]}
    request = "The slope of order 1 of 2x^2 + 7 at x = 3?"
    ranker = PerArgumentRanker({"value": {" 2": -0.1, " 1": -0.5, " 3": -3.0}})
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: slope\n")]
    args = {"function": "2x^2 + 7", "value": 2, "order": 1}
    out = ValueChooser(ranker).choose(prompt, "Action Input: ", args, schema, request, [],
                                      request=request)
    assert out == {"function": "2x^2 + 7", "value": 3, "order": 1}


def test_a_formulas_number_stays_where_nothing_else_fits() -> None:
    # With no other number at all, a required argument keeps the model's value.
    ranker = PerArgumentRanker({"value": {" 2": -0.1}})
    args = {"function": "2x^2 + 7", "value": 2}
    assert choose_slope(ranker, "The slope of 2x^2 + 7?", args) == args
    # Where the call's ask states no number apart, a number of another part of the request
    # takes its place only above the floor: the floor, not the refusal, decides.
    request = "Round to 4 places. Then give the slope of 2x^2 + 7."
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: slope\n")]
    for score, value in ((-5.0, 2), (-1.0, 4)):
        ranker = PerArgumentRanker({"value": {" 2": -0.1, " 4": score}})
        chooser = ValueChooser(ranker, focus="Then give the slope of 2x^2 + 7.")
        out = chooser.choose(prompt, "Action Input: ", args, SLOPE, request, [],
                             request=request)
        assert out["value"] == value, score


def test_a_number_written_outside_the_formula_is_offered() -> None:
    ranker = PerArgumentRanker({"value": {" 2": -0.1, " 1": -0.5}})
    # 2 stated apart from the formula: the model's 2 stays.
    args = {"function": "2x^2 + 1", "value": 2}
    assert choose_slope(ranker, "The slope of 2x^2 + 1 where x is 2?", args) == args
    # A tool's result writing it counts too.
    request = "The slope of 2x^2 + 1 where x is the root."
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: slope\n")]
    context = request + "\nroot: x = 2"
    out = ValueChooser(ranker).choose(prompt, "Action Input: ", args, SLOPE, context, [],
                                      request=request)
    assert out == args
    # A formula with no power is one too; a formula the model rewrote ("2*x**2" for
    # "2x^2") is not the request's, and takes no number from the user.
    args = {"function": "2x + 1", "value": 2}
    assert choose_slope(ranker, "The slope of 2x + 1 where x is 1?", args)["value"] == 1
    args = {"function": "2*x**2", "value": 2}
    assert choose_slope(ranker, "The slope of 2x^2 where x is 1?", args) == args


def test_formula_numbers_read_a_formula_not_words_or_dice() -> None:
    from callgate.graph.choose_values import _formula_numbers

    def refused(formula: str, request: str) -> set[float]:
        return set(_formula_numbers([formula], request, request, request).refused)

    # Its numbers in either sign, not its powers.
    assert refused("x**3 - 6x + 1", "Roots of x**3 - 6x + 1?") == {6, -6, 1, -1}
    assert refused("5y^3 - 4y + 2", "'5y^3 - 4y + 2' at 3") == {5, -5, 4, -4, 2, -2}
    # A sign written elsewhere stays offered: -1 is a limit, 1 only the formula's.
    assert refused("2x^2+3x-1", "'2x^2+3x-1' between -1 and 3") == {2, -2, -3, 1}
    # No variable: an article, dice, a name.
    for text in ("Romeo + a 2nd act", "2d6+3", "Room 12 + 3"):
        assert refused(text, f"Book {text} for 3") == set(), text
    # Not written as the request writes it.
    assert refused("2x^2", "The slope of 2 x^2") == set()


WAVE = {"type": "object", "properties": {
    "start": {"type": "integer"}, "end": {"type": "integer"},
    "frequency": {"type": "integer"}, "amplitude": {"type": "integer"}},
    "required": ["start", "end", "frequency"]}


def choose_wave(ranker: FixedRanker, request: str, args: dict[str, Any],
                **options: Any) -> dict[str, Any]:
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: plot\n")]
    return ValueChooser(ranker, **options).choose(prompt, "Action Input: ", args, WAVE,
                                                  request, [], request=request)


def test_a_number_written_once_is_one_arguments_value() -> None:
    # Hand-written: the model copied the 10 of "10 Hz" into the range's end and the
    # amplitude. The end loses 0.5 by moving to its next-best number, the frequency 4.8:
    # the end moves (to 20, not to the 0 the start holds); the optional amplitude goes.
    ranker = PerArgumentRanker({
        "end": {" 10": -0.5, " 0": -0.1, " 20": -1.0},
        "frequency": {" 10": -0.2, " 20": -5.0}})
    request = "Plot a sine wave at 10 Hz from 0 to 20 radians."
    args = {"start": 0, "end": 10, "frequency": 10, "amplitude": 10}
    assert choose_wave(ranker, request, args) == {"start": 0, "end": 20, "frequency": 10}
    # Off, the copies stay.
    assert choose_wave(ranker, request, args, distinct=False) == args


def test_a_number_written_as_a_float_is_held_as_the_same_number() -> None:
    # The model wrote 10.0 for a number argument, the offers hold 10: moving to " 10"
    # would be no move at all.
    wave = {"type": "object", "properties": {
        "end": {"type": "number"}, "frequency": {"type": "number"}},
        "required": ["end", "frequency"]}
    ranker = PerArgumentRanker({"end": {" 10.0": -0.4, " 10": -0.5, " 20": -1.0},
                                "frequency": {" 10.0": -0.2, " 20": -5.0}})
    request = "Plot a sine wave at 10 Hz up to 20 radians."
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: plot\n")]
    out = ValueChooser(ranker).choose(prompt, "Action Input: ", {"end": 10.0, "frequency": 10.0},
                                      wave, request, [], request=request)
    assert out == {"end": 20, "frequency": 10.0}


def test_a_number_the_request_writes_twice_may_stand_for_two_arguments() -> None:
    # The end could move to the 3, and would if 10 were written once.
    ranker = PerArgumentRanker({"end": {" 10": -0.5, " 0": -0.6, " 3": -1.0}})
    args = {"start": 0, "end": 10, "frequency": 10}
    for request in ("Plot 3 sine waves at 10 Hz from 0 to 10 radians.",
                    "Plot 3 sine waves on a 10x10 grid."):  # "10x10" writes 10 twice
        assert choose_wave(ranker, request, args) == args, request
    moved = choose_wave(ranker, "Plot 3 sine waves at 10 Hz from 0 radians.", args)
    assert moved == {"start": 0, "end": 3, "frequency": 10}


def test_an_integer_past_a_floats_range_is_left_as_it_is() -> None:
    # A digit loop the model wrote into a number argument no offer serves.
    huge = int("9" * 400)
    out = choose_wave(PerArgumentRanker({}), "Plot a sine wave at 10 Hz.",
                      {"start": huge, "end": huge, "frequency": 10})
    assert out["start"] == huge and out["frequency"] == 10


# --- the ranking on the real model ---------------------------------------------------------------


@pytest.mark.llama
def test_rank_on_the_bundled_model_is_exact_and_leaves_the_model_as_it_was() -> None:
    import llama_cpp

    from callgate.models.spec import load_model

    model, _ = load_model("bundled")
    prompt = [SystemMessage("You fill in tool arguments."),
              HumanMessage("I want 5 Thai restaurants near Manhattan, New York."),
              AIMessage('Action: find_restaurants\nAction Input: {"location": "')]
    before = model.invoke(prompt, max_tokens=8, temperature=0.0, stop=['"']).text
    candidates = ["Manhattan", "Manhattan, New York", "Thai", "New York"]
    ranked = model.rank(prompt, candidates, '"')
    assert sorted(r.text for r in ranked) == sorted(candidates)
    assert [r.logprob for r in ranked] == sorted((r.logprob for r in ranked), reverse=True)

    # Each candidate scored on its own, one token at a time from a fresh context.
    llama = model.llama
    tokens = model._prompt_tokens(prompt, model.loaded, 1)
    ends = model.loaded.tokens_starting('"')

    def row() -> np.ndarray:
        logits = llama_cpp.llama_get_logits_ith(llama.ctx, -1)
        return log_softmax(np.ctypeslib.as_array(logits, shape=(llama.n_vocab(),)))

    with model.loaded.lock:
        for item in ranked:
            llama.reset()
            llama.eval(tokens)
            total = 0.0
            for token in llama.tokenize(item.text.encode(), add_bos=False, special=False):
                total += float(row()[token])
                llama.eval([token])
            total += float(np.logaddexp.reduce(row()[ends]))
            assert math.isclose(item.logprob, total, abs_tol=0.05), (item, total)
        llama.reset()
        model.loaded.prompt_cached = 0
    # Greedy decoding after a ranking writes what it wrote before.
    model.rank(prompt, candidates, '"')
    assert model.invoke(prompt, max_tokens=8, temperature=0.0, stop=['"']).text == before
    assert json.dumps(ranked[0].text)  # a plain string


@pytest.mark.llama
def test_rank_stops_decoding_once_the_run_is_cancelled() -> None:
    from callgate.graph.cancellation import CancelToken
    from callgate.models.spec import load_model

    model, _ = load_model("bundled")
    prompt = [HumanMessage("Weather in Paris, Rome or Oslo?"),
              AIMessage('Action: get_weather\nAction Input: {"city": "')]
    candidates = ["Paris", "Rome", "Oslo", "Paris, Rome"]
    token = CancelToken()
    token.cancel()
    assert model.rank(prompt, candidates, '"', cancel_token=token) == []

    # Cancelled while ranking (here: as the first candidate completes): no further decode.
    token = CancelToken()

    def cancel_at_first(_item: object) -> bool:
        token.cancel()
        return False

    assert model.rank(prompt, candidates, '"', until=cancel_at_first,
                      cancel_token=token) == []
    assert len(model.rank(prompt, candidates, '"')) == len(candidates)


@pytest.mark.llama
def test_rank_keeps_room_for_its_longest_candidate_in_a_full_context() -> None:
    from callgate.models.bundled import runtime_model_path
    from callgate.models.llamacpp import ChatLlamaCppText

    # 256: llama.cpp pads a smaller n_ctx up to 256 while llama-cpp-python keeps the
    # requested size for its token buffer.
    model = ChatLlamaCppText(model_path=str(runtime_model_path()), n_ctx=256)
    history: list[Any] = []
    for i in range(20):  # more earlier turns than n_ctx holds: the oldest are dropped
        history += [HumanMessage(f"Earlier question number {i} about the weather?"),
                    AIMessage(f"Earlier answer number {i}.")]
    prompt = [*history, HumanMessage("Weather in Paris?"),
              AIMessage('Action: get_weather\nAction Input: {"city": "')]
    long = "Paris, " + ", ".join(f"district {i}" for i in range(12))  # ~40 tokens
    ranked = model.rank(prompt, ["Paris", long], '"')
    assert sorted(r.text for r in ranked) == sorted(["Paris", long])


# --- a further call must bring something new ------------------------------------------------------


def get_weather(city: str, unit: str = "celsius") -> str:
    """Weather for a city."""
    return "sunny"


def cpu_load() -> str:
    """The CPU's load."""
    return "12%"


def restates(raw: str, reply: str, *, earlier_steps: list[Any] | None = None,
             tool: str = "get_weather", **options: Any) -> bool:
    from callgate.graph.decide_react import ReactStrategy
    from callgate.tools.registry import ToolRegistry

    class GrammarCapable:
        text_only = True
        llama = None

    registry = ToolRegistry([get_weather, cpu_load])
    registry.get("get_weather").schema["properties"]["unit"]["enum"] = ["celsius", "fahrenheit"]
    strategy = ReactStrategy(GrammarCapable(), registry, grammar=True,  # type: ignore[arg-type]
                             new_items=True, **options)
    messages = [HumanMessage("Weather in Paris and Rome?"), *(earlier_steps or [])]
    state = {"messages": messages, "reply_text": reply, "chosen_tool": tool,
             "calls_written": reply.count("Action Input:")}
    return strategy._restates(state, raw)


def test_a_further_call_with_a_new_item_is_kept() -> None:
    reply = 'Action: get_weather\nAction Input: {"city": "Paris"}\nAction: get_weather\n'
    assert not restates('{"city": "Rome"}', reply)


def test_a_further_call_that_only_restates_is_dropped() -> None:
    reply = 'Action: get_weather\nAction Input: {"city": "Paris"}\nAction: get_weather\n'
    assert restates('{"city": "paris"}', reply)
    # another enum member is another option, not another item the user listed
    assert restates('{"city": "Paris", "unit": "fahrenheit"}', reply)


def test_with_part_items_a_shorter_copy_of_an_earlier_string_restates_it() -> None:
    reply = ('Action: get_weather\nAction Input: {"city": "Paris, Texas, not France"}\n'
             'Action: get_weather\n')
    assert restates('{"city": "Paris, Texas"}', reply)  # the default
    assert not restates('{"city": "Paris, Texas"}', reply, part_items=False)
    # Whole words only, and a longer or another string is new.
    assert not restates('{"city": "Pari"}', reply, part_items=True)
    assert not restates('{"city": "Paris, Texas, not France, USA"}', reply, part_items=True)
    assert not restates('{"city": "Rome"}', reply, part_items=True)
    # A number is part neither of a longer one (5 of 15 or of -5) nor of a string holding it.
    for earlier in ("15", "-5", '"5 kg"', "5e+20"):
        numbers = ('Action: get_weather\nAction Input: {"city": ' + earlier + '}\n'
                   'Action: get_weather\n')
        assert not restates('{"city": 5}', numbers), earlier
    # Nor is a blank string part of anything.
    assert not restates('{"city": "  "}', reply)
    # Only the same tool's strings: a call of another tool with a word of it is its own.
    other = ('Action: get_weather\nAction Input: {"city": "Paris, Texas"}\n'
             'Action: cpu_load\n')
    assert not restates('{"city": "Paris"}', other, tool="cpu_load")
    assert restates('{"city": "Paris"}', other.replace("cpu_load", "get_weather"))


def test_a_call_with_nothing_to_list_is_new_once_per_tool() -> None:
    reply = 'Action: get_weather\nAction Input: {"city": "Paris"}\nAction: cpu_load\n'
    assert not restates("{}", reply, tool="cpu_load")
    again = reply + "Action Input: {}\nAction: cpu_load\n"
    assert restates("{}", again, tool="cpu_load")


def test_numbers_are_items_to_the_last_digit() -> None:
    reply = 'Action: get_weather\nAction Input: {"city": 1234567}\nAction: get_weather\n'
    assert not restates('{"city": 1234568}', reply)
    assert restates('{"city": 1234567.0}', reply)


def test_the_turns_first_call_and_calls_after_earlier_steps() -> None:
    assert not restates('{"city": "Paris"}', "Action: get_weather\n")
    earlier = [AIMessage("", tool_calls=[{"id": "c1", "name": "get_weather",
                                          "args": {"city": "Paris"}}])]
    assert restates('{"city": "Paris"}', "Action: get_weather\n", earlier_steps=earlier)


def test_a_valid_call_sent_back_unrun_is_made_again_by_the_corrected_reply() -> None:
    from langchain_core.messages import ToolMessage

    from callgate.graph.decide_react import turn_calls
    from callgate.prompts.correction import NOT_RUN
    from callgate.tools.grounding import CORRECTION_MARK

    reply = AIMessage("", tool_calls=[
        {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}},
        {"id": "c2", "name": "get_weather", "args": {"city": "Lyon"}}])
    answers = [ToolMessage(NOT_RUN, tool_call_id="c1", status="error",
                           additional_kwargs=CORRECTION_MARK),
               ToolMessage("'Lyon' is not in the conversation", tool_call_id="c2",
                           status="error",
                           additional_kwargs={**CORRECTION_MARK, "callgate_refusal": "ungrounded"})]
    messages = [HumanMessage("Weather in Paris and Rome?"), reply, *answers]
    # The refused call was made; the valid one beside it was not run, so not made.
    assert turn_calls(messages) == [{"name": "get_weather", "args": {"city": "Lyon"}}]
    assert not restates('{"city": "Paris"}', "Action: get_weather\n",
                        earlier_steps=[reply, *answers])
    assert restates('{"city": "Lyon"}', "Action: get_weather\n", earlier_steps=[reply, *answers])


def test_the_requests_spans_are_offered_after_a_long_tool_result() -> None:
    # The latest 400 words are all the result's: the request's own words stay on offer.
    context = REQUEST + "\n[R1] " + " ".join(f"word{i}" for i in range(500))
    chooser = ValueChooser(FixedRanker({"Manchester": -2.8, "Manhattan": -3.2}))
    args = {"city": "Manchester", "count": 5, "query": "x"}
    assert chooser.choose(PROMPT, "Action Input: ", args, SCHEMA, context,
                          [])["city"] == "Manchester"  # nothing of the request offered
    assert chooser.choose(PROMPT, "Action Input: ", args, SCHEMA, context, [],
                          request=REQUEST)["city"] == "Manhattan"


# --- a further call that restates earlier ones moves on to the items left -------------------------


class ReadingRanker(FixedRanker):
    """Scores per argument, and per argument after a value the prefill already holds: the
    way a model reads on from an item of a list ("21 km" brings "115 minutes")."""

    def __init__(self, scores: dict[str, dict[str, float]],
                 after: dict[tuple[str, str], dict[str, float]] | None = None) -> None:
        super().__init__({})
        self.by_argument = scores
        self.after = after or {}

    def rank(self, prompt: Any, candidates: list[str], end: str, *, until: Any = None,
             max_expansions: int = 64) -> list[Ranked]:
        call = prompt[-1].text.rsplit("Action Input: ", 1)[-1]
        argument = call.rstrip(' "').rsplit('"', 2)[-2]
        self.scores = dict(self.by_argument.get(argument, {}))
        for (held, name), scores in self.after.items():
            if name == argument and held in call:
                self.scores.update(scores)
        return super().rank(prompt, candidates, end, until=until,
                            max_expansions=max_expansions)


RUNS = {"type": "object", "properties": {
    "km": {"type": "number"}, "minutes": {"type": "number"},
    "surface": {"type": "string", "enum": ["road", "trail"]}},
    "required": ["km", "minutes"]}
RUNS_REQUEST = "My pace for a 10 km road run in 50 minutes and a 21 km run in 115 minutes?"
RUNS_PROMPT = [SystemMessage("tools"), HumanMessage(RUNS_REQUEST),
               AIMessage('Action: pace\nAction Input: {"km": 10, "minutes": 50}\n'
                         "Action: pace\n")]
FIRST_RUN = {"km": 10, "minutes": 50, "surface": "road"}


def _is(number: float) -> Any:
    return lambda value: not isinstance(value, bool) and value == number


def vary(ranker: FixedRanker, args: dict[str, Any], items: list[float]) -> dict[str, Any]:
    chooser = ValueChooser(ranker)
    return chooser.vary(RUNS_PROMPT, "Action Input: ", args, RUNS, RUNS_REQUEST,
                        [FIRST_RUN], items=[_is(n) for n in items])


def test_a_restating_call_moves_to_the_first_item_left_and_reads_on_from_it() -> None:
    # The model copies its first call. The first item left (21) costs "km" 2.9 and
    # "minutes" 5.9: "km" moves, and "minutes", chosen again after "km": 21, reads on.
    ranker = ReadingRanker(
        {"km": {" 10": -0.1, " 21": -3.0, " 115": -7.0},
         "minutes": {" 50": -0.1, " 21": -6.0, " 115": -4.0}},
        after={(" 21", "minutes"): {" 115": -0.3}})
    out = vary(ranker, FIRST_RUN, [21, 115])
    assert out == {"km": 21, "minutes": 115, "surface": "road"}


def test_the_users_order_of_items_decides_not_the_cheapest_move() -> None:
    # 115 would be the cheaper move ("minutes": 0.5), but 21 comes first in the request.
    ranker = ReadingRanker(
        {"km": {" 10": -0.1, " 21": -3.0}, "minutes": {" 50": -0.1, " 115": -0.6}})
    out = vary(ranker, FIRST_RUN, [21, 115])
    assert out["km"] == 21
    # Once 21 is used, 115 is the first item left, and the cheaper argument takes it.
    assert vary(ranker, FIRST_RUN, [115])["minutes"] == 115


def test_options_never_move_and_a_call_with_nothing_to_move_to_stays() -> None:
    ranker = ReadingRanker({"surface": {"trail": -0.1}})
    # No argument can take 7 (not in the conversation): the call stays as it was, and
    # the no-repeat rule drops it.
    assert vary(ranker, FIRST_RUN, [7]) == FIRST_RUN
    assert all("trail" not in call for call in ranker.calls)


def test_a_number_left_moves_into_a_number_or_an_id_not_into_a_name() -> None:
    schema = {"type": "object", "properties": {"where_to": {"type": "string"},
                                               "version": {"type": "string"}},
              "required": ["where_to", "version"]}
    request = "Book Austin, TX for version 2.1, then 4.1"
    first = {"where_to": "Austin, TX", "version": "2.1"}
    ranker = FixedRanker({"Austin, TX": -0.1, "4.1": -0.5, "2.1": -0.2})
    out = ValueChooser(ranker).vary(PROMPT, "Action Input: ", dict(first), schema, request,
                                    [first], items=[_is_text("4.1")], request=request)
    assert out == {"where_to": "Austin, TX", "version": "4.1"}
    # With no such argument left the call stays as it was (and the no-repeat rule drops it).
    place = {"type": "object", "properties": {"where_to": {"type": "string"}}}
    assert ValueChooser(ranker).vary(PROMPT, "Action Input: ", {"where_to": "Austin, TX"},
                                     place, request, [{"where_to": "Austin, TX"}],
                                     items=[_is_text("4.1")], request=request) == {
        "where_to": "Austin, TX"}


def _is_text(text: str) -> Any:
    return lambda value: str(value) == text


def _pace_strategy(ranker: FixedRanker, **options: Any) -> Any:
    from callgate.graph.decide_react import ReactStrategy
    from callgate.tools.registry import ToolRegistry

    def pace(km: float, minutes: float) -> str:
        """Running pace for a distance and a time."""
        return "5:00 /km"

    class GrammarRanker:  # a llama.cpp model as the strategy sees it: grammar and ranking
        text_only = True
        llama = None
        rank = ranker.rank

    return ReactStrategy(GrammarRanker(), ToolRegistry([pace]), grammar=True,  # type: ignore[arg-type]
                         **options)


def test_the_strategy_moves_a_restating_call_on_while_the_request_lists_items_left() -> None:
    ranker = ReadingRanker(
        {"km": {" 10": -0.1, " 21": -3.0, " 115": -7.0},
         "minutes": {" 50": -0.1, " 21": -6.0, " 115": -4.0}},
        after={(" 21", "minutes"): {" 115": -0.3}})
    reply = 'Action: pace\nAction Input: {"km": 10, "minutes": 50}\nAction: pace\n'
    state = {"messages": [HumanMessage(RUNS_REQUEST)], "reply_text": reply,
             "chosen_tool": "pace", "calls_written": 1}
    copy = '{"km": 10, "minutes": 50}'
    moved = _pace_strategy(ranker)._values_chosen(state, copy)
    assert json.loads(moved) == {"km": 21, "minutes": 115}
    # Off, the copy stays (and the no-repeat rule drops it).
    assert json.loads(_pace_strategy(ranker, move_on=False)._values_chosen(state, copy)) == (
        {"km": 10, "minutes": 50})
    # Once every item of the request is used, a restating call is not moved anywhere.
    both = ('Action: pace\nAction Input: {"km": 10, "minutes": 50}\n'
            'Action: pace\nAction Input: {"km": 21, "minutes": 115}\nAction: pace\n')
    done = {**state, "reply_text": both, "calls_written": 2}
    assert json.loads(_pace_strategy(ranker)._values_chosen(done, copy)) == (
        {"km": 10, "minutes": 50})


def test_a_reply_to_a_correction_that_restates_the_refused_call_is_not_moved() -> None:
    # Repeating the refused call is how the model gives up; moved on, it would become a
    # new call where no tool fits (BFCL's irrelevance questions).
    from langchain_core.messages import ToolMessage

    from callgate.tools.grounding import CORRECTION_MARK

    ranker = ReadingRanker({"km": {" 10": -0.1, " 21": -3.0}, "minutes": {" 50": -0.1}})
    refused = AIMessage("", tool_calls=[{"id": "c1", "name": "pace",
                                         "args": {"km": 10, "minutes": 50}}])
    answer = ToolMessage("not in the conversation", tool_call_id="c1", status="error",
                         additional_kwargs={**CORRECTION_MARK, "callgate_refusal": "ungrounded"})
    state = {"messages": [HumanMessage(RUNS_REQUEST), refused, answer],
             "reply_text": "Action: pace\n", "chosen_tool": "pace", "calls_written": 0}
    copy = '{"km": 10, "minutes": 50}'
    assert json.loads(_pace_strategy(ranker)._values_chosen(state, copy)) == (
        {"km": 10, "minutes": 50})
    # The same call after a step that ran is moved on.
    ran = ToolMessage("5:00 /km", tool_call_id="c1")
    after_results = {**state, "messages": [HumanMessage(RUNS_REQUEST), refused, ran]}
    assert json.loads(_pace_strategy(ranker)._values_chosen(after_results, copy))["km"] == 21


# --- values in the form their argument takes, and values of the ask a call is for ---------------

def test_a_rate_given_in_percent_is_written_as_the_fraction_its_argument_takes() -> None:
    schema = {"type": "object", "properties": {
        "interest_rate": {"type": "number", "description": "The annual interest rate."},
        "lightness": {"type": "number", "description": "Lightness in percentage."},
        "years": {"type": "integer"}}}
    request = "Invest at an interest rate of 5% for 5 years, lightness 70%."
    args = {"interest_rate": 5.0, "lightness": 70, "years": 5}
    out = ValueChooser(FixedRanker({}), keep_supported=True).choose(
        PROMPT, "Action Input: ", args, schema, request, [], request=request)
    # The rate becomes a fraction; a percentage argument and an integer stay as written.
    assert out == {"interest_rate": 0.05, "lightness": 70, "years": 5}
    off = ValueChooser(FixedRanker({}), percent_rates=False).choose(
        PROMPT, "Action Input: ", args, schema, request, [], request=request)
    assert off["interest_rate"] == 5.0


def test_a_clock_time_is_written_as_the_24_hour_form_its_argument_names() -> None:
    schema = {"type": "object", "properties": {
        "pickup_time": {"type": "string", "description": "Pickup time, 24-hour 'HH:MM'."},
        "show_time": {"type": "string", "description": "The time as 'HH:MM AM/PM'."},
        "note": {"type": "string"}}}
    request = "Pick me up at 2pm for the 9 pm show."
    args = {"pickup_time": "2pm", "show_time": "9 pm", "note": "2pm"}
    out = ValueChooser(FixedRanker({}), time_formats=True).choose(
        PROMPT, "Action Input: ", args, schema, request, [], request=request)
    assert out == {"pickup_time": "14:00", "show_time": "9 pm", "note": "2pm"}


def test_a_pattern_value_copied_short_becomes_the_whole_span_the_pattern_admits() -> None:
    # The built-in calculator's expression pattern; SmolLM2 wrote the first operand alone.
    from callgate.graph.choose_values import whole_span
    from callgate.tools.builtin.calculator import EXPRESSION_PATTERN

    spec = {"type": "string", "pattern": EXPRESSION_PATTERN}
    schema = {"type": "object", "properties": {"expression": spec}, "required": ["expression"]}
    for request, written, whole in [
            ("What is 144 divided by 16?", "144", "144 divided by 16"),
            ("What is (12 + 8) * 3?", "12 + 8", "(12 + 8) * 3"),  # no bracket left open
            ("What is 7 cubed?", "7", "7 cubed"),
            # Not a copy ("7" is inside "17"): a lone number the request does not write,
            # which gives way to the request's one span.
            ("What is 17 cubed?", "7", "17 cubed"),
            ("Compute 2 to the power of 10.", "2^10", "2 to the power of 10"),  # same value
            ("What is 3 + 4 and 5 * 6?", "3 + 4", "3 + 4"),  # "and" is no operator
            # Arithmetic worded as a sentence (`callgate ask "Add 3.5 and 4.25"` made a call
            # with "3.5", then one with "4.25").
            ("Add 3.5 and 4.25", "3.5", "Add 3.5 and 4.25"),
            ("What is the sum of 12 and 30?", "12 + 30", "the sum of 12 and 30"),
            ("What is the difference between 2020 and 2024?", "2020",
             "the difference between 2020 and 2024"),
            # The model's rewriting of the request's numbers (SmolLM2's "2*sqrt(2)",
            # "4*sqrt(81) + 4", "7 + 5 * 4"): the request's words, where the pattern admits
            # a span holding each of its numbers.
            ("What is the square root of 2?", "2*sqrt(2)", "square root of 2"),
            ("Take the square root of 81 plus 4.", "4*sqrt(81) + 4", "square root of 81 plus 4"),
            ("Work out (7 + 5) * 4.", "7 + 5 * 4", "(7 + 5) * 4"),
            ("What is 7 cubed?", "7 * 7 * 7", "7 cubed"),
            ("What is 7 times 7?", "7 * 7", "7 times 7"),
            # Rewritten in words as well (`callgate chat`: "Now add 10 to it." after 56 was
            # called as "10 times 56").
            ("Now add 10 to 56.", "10 times 56", "add 10 to 56"),
            # A lone number the request does not write: the model's own result, or junk
            # (`callgate chat`: "What is the result squared?" after 66, "66.0000000000001").
            ("What is 66 squared?", "66.0000000000001", "66 squared"),
            ("What is 17 * 23?", "391", "17 * 23"),
            ("What is 2 + 2, and 3 + 3?", "4", "4"),  # two spans: which one is not known
            ("What's a 15% tip on 48.50?", "15%", "15% tip on 48.50"),  # a share "on"
            ("What's a 15% Tip on 48.50?", "15%", "15% Tip on 48.50"),  # in any case
            # Arithmetic with a number the conversation does not write: the request's one
            # span ("3,000,000,…" for "How many minutes are in 3 hours?"; "12.00%" for
            # "What's 12 percent of 250?", answered 0.12); kept where there are two.
            ("What is 3 + 4?", "3 * 3 + 8", "3 + 4"),
            ("What is 3 + 4 or 5 + 6?", "3 * 3 + 8", "3 * 3 + 8"),
            ("What's 12 percent of 250?", "12.00%", "12 percent of 250"),
            ("How many minutes are in 3 hours?", "3,000,000,000,000,000",
             "How many minutes are in 3 hours"),
            # A phrase with numbers the conversation does not write, which grounding would
            # refuse, gives way to the request's one span the pattern admits (`callgate ask
            # "How many grams are in 3 pounds?"`: "3.00g into acres"); not one that ends no
            # clause ("in a day" of "in a day and a quarter"); "a day and a half" is one.
            ("How many grams are in 3 pounds?", "3.00g into acres",
             "How many grams are in 3 pounds"),
            ("How many hours in a day and a quarter?", "1.25days to hours", "1.25days to hours"),
            ("How many hours in a day and a half?", "1.5days to hours",
             "How many hours in a day and a half"),
            ("What is the square root of pi over two?", "0.886", "0.886"),
            ("What is the square root of pi over two?", "sqrt(pi)/2", "sqrt(pi)/2"),
            ("Is 3 more than 2.5?", "3*3", "3*3"),  # no span but the number: kept
            # Two spans hold its numbers: which one the model meant is not known.
            ("What is 17 * 23 and also 23 + 17?", "23+17", "23+17"),
            ("10 divided by 2, and 2 divided by 10", "2/10", "2/10"),
            # Cut short (`callgate ask "What's the square root of 144?"`: "sqrt", which
            # grounding refused, then the model's own "1.578265358237"): the one span of the
            # request around its numbers; where there are two, it stays.
            ("What's the square root of 144?", "sqrt", "square root of 144"),
            ("What is the square root of 2?", "sqrt2", "square root of 2"),
            ("What is the square root of 10, then 5 plus 5?", "sqrt", "sqrt"),
            ("Hello there", "sqrt", "sqrt"),
            ("What is 2e5 plus 1?", "2e5+1", "2e5 plus 1"),  # 2e5 is one number
            # A conversion, as the request writes it.
            ("Convert 5 miles to kilometers.", "5", "5 miles to kilometers"),
            # A request with no number: the one span of it the pattern admits (`callgate
            # ask "How many feet in a mile?"`: SmolLM2 wrote "1.0fahrenheit to celsius");
            # not a name alone, and nothing where no span of three words is admitted.
            ("How many feet in a mile?", "1.0fahrenheit to celsius", "How many feet in a mile"),
            ("How many cups are in a gallon?", "100", "How many cups are in a gallon"),
            ("What is the square root of two?", "sqrt(2)", "sqrt(2)"),
            ("What is pi?", "3.14", "3.14"),
            # Junk with numbers the request writes otherwise, where it has several such
            # spans: the one holding the number the junk opens with (`callgate ask`: the
            # calculator had failed on "10.0000000000000001, 5.00000000000000001, …").
            ("What is 10 km in miles and 5 kg in pounds?",
             "10.0000000000000001, 10.0000000000000001, 5.00000000000000001",
             "10 km in miles"),
            ("Convert 10 km to miles and 5 kg to pounds.", "5.00000000000001, 10.0",
             "5 kg to pounds"),
            ("What is 3 + 4 or 3 + 6?", "3.0000000000001 + 4", "3.0000000000001 + 4"),
            # One span alone ends at a punctuation mark: "2 hours" of "2 hours and 30
            # minutes" is no whole amount (a review's case: it had become 120 minutes).
            ("How many minutes are in 2 hours and 30 minutes?", "2.00000000000001 hours",
             "2.00000000000001 hours")]:
        out = ValueChooser(FixedRanker({})).choose(
            PROMPT, "Action Input: ", {"expression": written}, schema, request, [],
            request=request)
        assert out == {"expression": whole}, request
    # A number of an earlier result is the conversation's: a follow-up's value stays.
    assert whole_span("56 miles to km", spec, "Now convert 5 miles to km.",
                      "How far is it?\n= 56\nNow convert 5 miles to km.") == "56 miles to km"
    assert whole_span("57 miles to km", spec, "Now convert 5 miles to km.",
                      "How far is it?\n= 56\nNow convert 5 miles to km.") == "5 miles to km"
    # Any pattern: a value without numbers is left alone (a review's case: "Rome" had
    # become the whole request), and a long request is not searched.
    city = {"type": "string", "pattern": "^[A-Za-z ]+$"}
    assert whole_span("Rome", city, "tell me the weather in rome") == "Rome"
    assert whole_span("3.0g into acres", spec, "How many grams are in 3 pounds? " * 70) == (
        "3.0g into acres")
    # The pattern is matched whole, and an argument without one is left alone.
    assert whole_span("12", {"type": "string", "pattern": "[0-9]+"}, "12 34") == "12"
    assert whole_span("12", {"type": "string", "pattern": "^[0-9 ]+$"}, "12 34") == "12 34"
    assert whole_span("12", {"type": "string"}, "12 34") == "12"
    # Only arithmetic is rewritten: a phrase holding a number is the model's own.
    assert whole_span("hotels for 2 in Paris", {"type": "string", "pattern": "^[A-Za-z0-9 ,]+$"},
                      "Find hotels in Paris for 2 people, please") == "hotels for 2 in Paris"
    # A long pasted request with the value a hundred times: the search stays near the first
    # copies (it matched every pair of edges of the whole request before, for minutes).
    assert whole_span("12", spec, "What is 12 + 8 and then " * 100) == "12 + 8"
    off = ValueChooser(FixedRanker({}), whole_patterns=False).choose(
        PROMPT, "Action Input: ", {"expression": "144"}, schema, "What is 144 divided by 16?",
        [], request="What is 144 divided by 16?")
    assert off == {"expression": "144"}


def test_values_outside_the_ask_a_call_is_for_pay_the_focus_penalty() -> None:
    schema = {"type": "object", "properties": {"count": {"type": "integer"}},
              "required": ["count"]}
    request = "Find all prime numbers between 50 and 150. Then get the fibonacci series upto 20."
    ranker = FixedRanker({" 50": -1.0, " 150": -1.5, " 20": -2.5})
    focused = ValueChooser(ranker, focus="Then get the fibonacci series upto 20.").choose(
        PROMPT, "Action Input: ", {"count": 50}, schema, request, [], request=request)
    assert focused == {"count": 20}
    # Without a focus the model's likeliest supported value stays.
    free = ValueChooser(ranker).choose(
        PROMPT, "Action Input: ", {"count": 50}, schema, request, [], request=request)
    assert free == {"count": 50}


def test_an_item_left_moves_into_the_argument_holding_one_of_its_siblings() -> None:
    schema = {"type": "object", "properties": {
        "payment": {"type": "number"}, "years": {"type": "integer"}},
        "required": ["payment", "years"]}
    request = "The present value of $1000 a year for 10, 20 and 30 years."
    first = {"payment": 1000, "years": 10}
    # The model would rather put 20 in "payment" (cost 1.0) than in "years" (cost 3.0).
    ranker = ReadingRanker({"payment": {" 1000": -0.5, " 20": -1.5},
                            "years": {" 10": -0.5, " 20": -3.5}})
    prompt = [SystemMessage("tools"), HumanMessage(request), AIMessage("Action: pv\n")]
    siblings = sibling_lists(request)
    out = ValueChooser(ranker).vary(prompt, "Action Input: ", dict(first), schema, request,
                                    [first], items=[_is(20), _is(30)], request=request,
                                    siblings=siblings)
    assert out == {"payment": 1000, "years": 20}
    # Without the lists the model's cheaper move stands.
    assert ValueChooser(ranker).vary(prompt, "Action Input: ", dict(first), schema, request,
                                     [first], items=[_is(20), _is(30)], request=request
                                     )["payment"] == 20


def test_a_required_enum_takes_the_one_member_the_request_names_by_a_word() -> None:
    schema = {"type": "object", "properties": {
        "type": {"type": "string", "enum": ["Psychologist", "Family Counselor", "Psychiatrist"]},
        "category": {"type": "string", "enum": ["Museum", "Tourist Attraction"],
                     "default": "dontcare"}},
        "required": ["type"]}
    request = "I need a family therapist near the attractions."
    ranker = FixedRanker({"Psychiatrist": -0.5, "Family Counselor": -3.0})
    out = ValueChooser(ranker).choose(PROMPT, "Action Input: ",
                                      {"type": "Psychiatrist", "category": "Museum"}, schema,
                                      request, [], request=request)
    # The required argument takes the member named by "family"; the optional one named only
    # by a word ("attractions") is left to its default, as before.
    assert out == {"type": "Family Counselor"}
    off = ValueChooser(ranker, member_words=False).choose(
        PROMPT, "Action Input: ", {"type": "Psychiatrist"}, schema, request, [],
        request=request)
    assert off == {"type": "Psychiatrist"}


def test_a_required_enum_takes_the_member_its_description_pairs_with_the_request() -> None:
    # Hand-written: the model ranks "add" first for "remove the task"; the description says
    # 'delete' is "to remove an existing task".
    schema = {"type": "object", "properties": {
        "type": {"type": "string", "enum": ["add", "delete", "complete"],
                 "description": "'add' to add a new task, 'delete' to remove an existing "
                                "task, or 'complete' to mark a task as completed."},
        "content": {"type": "string"}},
        "required": ["type", "content"]}
    request = "Remove the task 'call mum' from my list."
    ranker = FixedRanker({"add": -0.2, "delete": -2.0, "complete": -3.0,
                          "call mum": -0.1})
    wish = {"type": "add", "content": "call mum"}
    out = ValueChooser(ranker).choose(PROMPT, "Action Input: ", dict(wish), schema, request,
                                      [], request=request)
    assert out == {"type": "delete", "content": "call mum"}
    assert ValueChooser(ranker, described_members=False).choose(
        PROMPT, "Action Input: ", dict(wish), schema, request, [], request=request
    )["type"] == "add"


def test_a_restated_call_moves_its_enum_argument_only_to_a_listed_member() -> None:
    # Hand-written: "(AA), (Aa), and (aa)" lists three members of ``genotype``; a further
    # call that restates the first ({"genotype": "AA"}) moves to a member no call took.
    schema = {"type": "object", "properties": {
        "frequency": {"type": "number"},
        "genotype": {"type": "string", "enum": ["AA", "Aa", "aa", "XX"]}},
        "required": ["frequency", "genotype"]}
    request = "At allele frequency 0.7, give genotypes (AA), (Aa), and (aa)."
    first = {"frequency": 0.7, "genotype": "AA"}
    ranker = FixedRanker({"AA": -0.1, "Aa": -0.5, "aa": -0.9, "XX": -0.2})
    left = ["Aa", "aa"]
    tests = [lambda value, member=member: value == member for member in left]
    out = ValueChooser(ranker).vary(PROMPT, "Action Input: ", dict(first), schema, request,
                                    [first], items=tests, request=request,
                                    members=frozenset(left))
    assert out == {"frequency": 0.7, "genotype": "Aa"}
    # Without listed members an enum argument is an option, never an item to move to.
    assert ValueChooser(ranker).vary(PROMPT, "Action Input: ", dict(first), schema, request,
                                     [first], items=tests, request=request) == first
    # A member the tests take but the list does not name stays out of reach.
    everything = [lambda value: isinstance(value, str)]
    assert ValueChooser(ranker).vary(PROMPT, "Action Input: ", dict(first), schema, request,
                                     [first], items=everything, request=request,
                                     members=frozenset(left))["genotype"] in left


def test_the_strategy_moves_a_restating_call_on_to_a_pair_of_crossed_items_no_call_made() -> None:
    # Hand-written: "Lakers and Bulls in seasons 2018 and 2020" crosses two lists; after
    # Lakers 2018 and Bulls 2020 every item is used, but two pairs are not.
    from callgate.graph.decide_react import ReactStrategy
    from callgate.tools.registry import ToolRegistry

    def winning_percentage(team: str, season: int) -> str:
        """The winning percentage of a basketball team in a season."""
        return "50%"

    ranker = ReadingRanker({"team": {"Lakers": -0.1, "Bulls": -3.0},
                            "season": {" 2018": -0.1, " 2020": -1.0}})

    class GrammarRanker:  # a llama.cpp model as the strategy sees it: grammar and ranking
        text_only = True
        llama = None
        rank = ranker.rank

    def strategy(**options: Any) -> Any:
        return ReactStrategy(GrammarRanker(), ToolRegistry([winning_percentage]),  # type: ignore[arg-type]
                             grammar=True, **options)

    request = "Find the winning percentage of Lakers and Bulls in NBA seasons 2018 and 2020."
    reply = ('Action: winning_percentage\nAction Input: {"team": "Lakers", "season": 2018}\n'
             'Action: winning_percentage\nAction Input: {"team": "Bulls", "season": 2020}\n'
             'Action: winning_percentage\n')
    state = {"messages": [HumanMessage(request)], "reply_text": reply,
             "chosen_tool": "winning_percentage", "calls_written": 2}
    copy = '{"team": "Lakers", "season": 2018}'
    moved = json.loads(strategy()._values_chosen(state, copy))
    assert moved in ({"team": "Bulls", "season": 2018}, {"team": "Lakers", "season": 2020})
    assert not strategy()._restates(state, moved)
    # Off, the copy stays (and the no-repeat rule drops it).
    assert json.loads(strategy(crossed_items=False)._values_chosen(state, copy)) == (
        {"team": "Lakers", "season": 2018})
