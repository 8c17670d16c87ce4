"""Grounding: argument values the conversation never gave are sent back once.

The loop tests drive the graph with ``ScriptedChatModel(native_tools=False)``, a scripted
text-only model (fixed replies, not a language model), with grounding switched on as it is
for local llama.cpp models.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from callgate import build_agent
from callgate.models.scripted import ScriptedChatModel
from callgate.tools.grounding import (
    conversation_text,
    date_in_format,
    ground,
    in_digits,
    stated,
    ungrounded_args,
)

QUESTION = ("What is the potential between charges of 1e-9 and 2e-9 at a distance of 0.05 m? "
            "Coefficients 2, 3 and -4; interest of 5% over five years on $1,000 in Paris.")


@pytest.mark.parametrize("value", [1e-9, 2e-09, 0.05, -4, 3, 5, 0.05, 1000, 1000.0])
def test_numbers_from_the_question_are_grounded(value: float) -> None:
    assert ungrounded_args({"x": value}, {}, QUESTION) == []


@pytest.mark.parametrize("value", [7, 9.81, 100, -8])
def test_invented_numbers_are_flagged(value: float) -> None:
    assert ungrounded_args({"x": value}, {}, QUESTION) == [("x", value)]


@pytest.mark.parametrize(("value", "expected"), [
    (0.07, True),  # "7%" as its fraction
    (3, True),  # "a yield of 0.03" as its percent
    (1.5, True), (20, True),  # "150%", and "2000%" past the bound: written as percents
    (0.16, True),  # the hundredth of "$16": a rate may be written without its sign
    (100000, False),  # a hundredth of "$10,000,000" (BFCL simple_python_132 ran with it)
    (1600, False), (700, False),  # nor a hundred times "$16" or the 7 of "7%"
    (100, False)])  # nor a hundred times "1 year": only a number below 1 is a fraction
def test_a_percent_reading_is_only_of_a_percent_or_a_fraction(value: float,
                                                              expected: bool) -> None:
    text = ("Equity of $10,000,000, a fee of $16, a rate of 7%, a yield of 0.03, 150% growth, "
            "sales up 2000% in 1 year.")
    assert (ungrounded_args({"x": value}, {}, text) == []) is expected


def test_strings_need_half_their_words_in_the_conversation() -> None:
    assert ungrounded_args({"city": "Paris, France"}, {}, QUESTION) == []
    assert ungrounded_args({"q": "potential between charges"}, {}, QUESTION) == []
    assert ungrounded_args({"substance": "hexagon"}, {}, QUESTION) == [("substance", "hexagon")]
    assert ungrounded_args({"value": ""}, {}, QUESTION) == [("value", "")]


def test_a_version_or_an_address_is_grounded_only_whole() -> None:
    # Hand-written: SmolLM2 wrote ".1.2.2" for "version 2.1.3", each of whose digits the
    # request holds; a run of dotted digits must be written as the conversation writes it.
    said = "Show project Orion, version 2.1.3. The server is at 10.0.4.17 (port 8080)."
    for value in ("2.1.3", "v2.1.3", "Orion 2.1.3", "10.0.4.17", "http://10.0.4.17:8080"):
        assert ungrounded_args({"x": value}, {}, said) == [], value
    for value in (".1.2.2", "1.2.2", "2.1.3.4", "10.0.4.1", "10.0.17.4"):
        assert ungrounded_args({"x": value}, {}, said) == [("x", value)], value
    assert ungrounded_args({"x": 2.1}, {}, said) == []  # a number is read as a number
    # A date written with dots is a day, whichever way the conversation writes it.
    for value in ("17.04.2023", "2023.04.17"):
        assert ungrounded_args({"date": value}, {}, "Book a table on April 17th, 2023") == []
    assert ungrounded_args({"date": "18.04.2023"}, {}, "Book a table on April 17th, 2023") == [
        ("date", "18.04.2023")]



@pytest.mark.parametrize(("text", "digits"), [
    ("What is two plus two?", "What is 2 plus 2?"),
    ("Twenty-five times Forty two", "25 times 42"),
    ("one hundred and five", "105"), ("one thousand and one nights", "1001 nights"),
    ("three thousand two hundred", "3200"), ("fifteen hundred", "1500"),
    ("two million five hundred thousand", "2500000"), ("a hundred", "a 100"),
    # Words that make no one number stay apart, and what joins them stays.
    ("one two three", "1 2 3"), ("twenty ten", "20 10"), ("zero zero", "0 0"),
    ("Add two and three", "Add 2 and 3"), ("one of them and two of those",
                                           "1 of them and 2 of those"),
    ("someone alone", "someone alone"), ("No numbers here.", "No numbers here."),
    # A review's cases: one number ends where the next begins; "and" joins only after a
    # hundred or a scale, a hyphen only unspaced; signs, points and years; ASCII words only.
    ("one hundred one hundred", "100 100"), ("one thousand one thousand", "1000 1000"),
    ("two thousand and three thousand", "2000 and 3000"), ("twenty and five", "20 and 5"),
    ("twenty - five", "20 - 5"), ("negative five plus three", "-5 plus 3"),
    ("zero point five times four", "0.5 times 4"), ("one point two five", "1.25"),
    ("two point", "2 point"), ("nineteen eighty-four plus one", "1984 plus 1"),
    ("twenty one hundred", "2100"), ("ONE HUNDRED", "100"),
    ("\u017fix plus two", "\u017fix plus 2"),
])
def test_numbers_written_as_words_are_written_in_digits(text: str, digits: str) -> None:
    assert in_digits(text) == digits


def test_a_long_run_of_number_words_is_read_one_number_at_a_time() -> None:
    # "one hundred" 3,000 times had been one number of 6,000 digits, past Python's limit.
    assert in_digits("one hundred " * 3000) == "100 " * 3000


@pytest.mark.parametrize(("value", "expected"), [
    ("Liverpool Football Club", True), ("Liverly Football Club", False),
    ("San Diego", True), ("SAN DIO", False), ("Manchester City", False),
    ("Paris, France", True),  # a qualifier after the comma aside
    ("SanDiego", True),  # a run of words written without their spaces
    ("Verpool", False), ("Pool Football", False), ("ted in San", False),  # not whole words
    ("$1,000 USD", False),  # a comma inside a number is no qualifier
    ("2026-04-15", True), ("15", True), ("16", False), ("", False)])
def test_stated_needs_every_word_of_a_string(value: str, expected: bool) -> None:
    context = ("Rank Liverpool Football Club and Manchester United in San Diego or "
               "Paris on April 15th 2026")
    assert stated(value, context) is expected


@pytest.mark.parametrize(("value", "expected"), [
    ("chai_tea", True),  # two words: any of the user's
    ("16_ounces_of_chai_tea", True), ("chai-tea-snack", False),  # a run, or the model's own
    (" chai-tea-snack ", False),  # spaces around it aside
    ("chai_tea_snack_16_ounces_of_chai_tea", False),
    ("2026-04-15", True)])  # a date is no joined identifier
def test_an_identifier_joined_from_the_users_words_needs_them_as_a_run(
        value: str, expected: bool) -> None:
    # Hand-written after a SmolLM2 call: "food_name": "chai_tea_snack_16_ounces_of_chai_tea".
    context = ("I enjoyed a cup of chai tea for my snack. Record that I drank 16 ounces of "
               "chai tea as a snack on 2026-04-15.")
    assert stated(value, context) is expected


@pytest.mark.parametrize(("value", "description", "expected"), [
    ("April 15th, 2023", "The date, in the format 'YYYY-MM-DD'.", "2023-04-15"),
    ("2023.4.17", "Date (yyyy-mm-dd)", "2023-04-17"),
    ("May 5, 2023", "The day of travel, formatted as MM/DD/YYYY", "05/05/2023"),
    ("2023-05-05", "Date in DD-MM-YYYY format", "05-05-2023"),
    ("2023-04-15", "The date, in the format 'YYYY-MM-DD'.", None),  # already in it
    ("04/05/2023", "in the format 'YYYY-MM-DD'", None),  # April 5 or May 4: not one date
    ("April 15", "in the format 'YYYY-MM-DD'", None),  # no year
    ("2023-04-15T10:00", "in the format 'YYYY-MM-DD'", None),  # a clock time too
    ("April 15th, 2023", "The date of the visit.", None),  # no format named
    ("on April 15, 2023", "in the format 'YYYY-MM-DD'", None),  # not a date alone
    ("April 15 to April 20, 2023", "in the format 'YYYY-MM-DD'", None),  # a range
    ("April 15, 2023", "in the format 'YYYY-MM-DDTHH:MM:SS'", None),  # a date-time format
    ("April 15, 2023", "in the format 'YYYY-MM-DD HH:MM'", None)])
def test_a_date_is_written_in_the_format_its_description_names(
        value: str, description: str, expected: str | None) -> None:
    assert date_in_format(value, description) == expected


def test_schema_supplied_values_booleans_and_nulls_are_never_flagged() -> None:
    schema = {"type": "object", "properties": {
        "unit": {"type": "string", "enum": ["celsius", "kelvin"]},
        "g": {"type": "number", "default": 9.81},
        "exact": {"type": "boolean"}, "note": {"type": ["string", "null"]}}}
    args = {"unit": "kelvin", "g": 9.81, "exact": True, "note": None}
    assert ungrounded_args(args, schema, "nothing here") == []


def test_nested_values_are_checked_with_their_paths() -> None:
    schema = {"type": "object", "properties": {"points": {"type": "array", "items": {
        "type": "object", "properties": {"x": {"type": "number"}}}}}}
    args = {"points": [{"x": 3}, {"x": 42}]}
    assert ungrounded_args(args, schema, QUESTION) == [("points[1].x", 42)]


def test_tool_results_count_as_conversation() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    text = conversation_text([HumanMessage("find the id"), AIMessage("ignored 77"),
                              ToolMessage("id is 4242", tool_call_id="c1")])
    assert ungrounded_args({"id": 4242}, {}, text) == []
    assert ungrounded_args({"id": 77}, {}, text) == [("id", 77)]


def test_the_loops_labels_on_a_result_ground_nothing() -> None:
    from langchain_core.messages import ToolMessage

    def result(text: str, tool: str = "Movies_3_FindMovies") -> ToolMessage:
        return ToolMessage(text, tool_call_id="c1", name=tool)

    # The result id, the repeat note and the tool's name are the loop's (summarize), not
    # what the tool returned: a value is not grounded by them.
    text = conversation_text([HumanMessage("movies with Pete Davidson"),
                              result("[R1] [Movies_3_FindMovies] ok"),
                              result("[R2] (repeat of R1, already called at step 1; the result "
                                     "will not change) [Movies_3_FindMovies] ok")])
    assert ungrounded_args({"cast": "Movies_3_FindMovies"}, {}, text) == [
        ("cast", "Movies_3_FindMovies")]
    assert ungrounded_args({"cast": "Pete Davidson"}, {}, text) == []
    # What the tool returned still counts, brackets and all; the loop's note on a call it
    # did not run, which quotes the refused value, does not.
    text = conversation_text([HumanMessage("find it"),
                              result("[R1] [find] [4242, 17]", "find"),
                              result("[R2] [find] failed: not run (ungrounded): 'find' was "
                                     "called with values that appear nowhere in the "
                                     "conversation (city='Paris')", "find"),
                              result("[R3] [find] failed: city Lyon not found", "find")])
    assert ungrounded_args({"id": 4242, "city": "Lyon"}, {}, text) == []
    assert ungrounded_args({"city": "Paris"}, {}, text) == [("city", "Paris")]


# --- in the loop --------------------------------------------------------------------------


def body_mass_index(weight_kg: float, height_m: float) -> str:
    """Body mass index from weight and height."""
    return f"{weight_kg / height_m ** 2:.1f}"


def run(*replies: str, grounding: bool | None = True) -> tuple[dict[str, Any], ScriptedChatModel]:
    model = ScriptedChatModel(script=list(replies), native_tools=False)
    agent = build_agent(model, [body_mass_index], grounding=grounding)
    return agent.invoke({"messages": [HumanMessage(
        "What is the area of a triangle with base 10 and height 5?")]}), model


INVENTED = 'Action: body_mass_index\nAction Input: {"weight_kg": 70, "height_m": 1.8}'


def test_an_invented_call_gets_one_correction_then_the_answer() -> None:
    out, model = run(INVENTED, "Final Answer: The area is 25.")
    assert out["final_answer"] == "The area is 25." and out["status"] == "done"
    # The corrected reply gave the call up: it is still a call the model made, refused, and
    # the turn's record says so (it had left none, beside an answer about the refusal).
    assert [(e["outcome"], e["tool"]) for e in out["tool_events"]] == [
        ("ungrounded", "body_mass_index")]
    assert [p["outcome"] for p in out["problems"]] == ["ungrounded"]
    correction = model.requests[1]["messages"][-1].content
    assert "weight_kg=70" in correction and "appear nowhere in the conversation" in correction


def test_insisting_on_invented_values_ends_with_a_tools_free_answer() -> None:
    out, model = run(INVENTED, INVENTED, "The area is 25.")
    assert [e["outcome"] for e in out["tool_events"]] == ["ungrounded"]  # refused, visibly
    assert out["status"] == "done" and out["problems"][0]["outcome"] == "ungrounded"
    assert out["final_answer"] == "The area is 25."
    assert "No tool fits this question" in model.requests[2]["messages"][-1].content


def test_giving_up_after_a_refusal_tells_the_user_what_was_refused() -> None:
    # SmolLM2's usual reply to a refusal: the answer label and nothing after it.
    out, _ = run(INVENTED, "Final Answer:")
    assert out["status"] == "failed" and out["answer_source"] == "loop"
    assert out["final_answer"] == (
        "I could not complete this request: 'body_mass_index' was called with values that "
        "appear nowhere in the conversation (weight_kg=70.0, height_m=1.8). After the "
        "correction, the model's answer was empty.")
    # The advice the loop gives the model is for the model, not the user.
    assert "Use only values" not in out["final_answer"]
    assert "after the label" not in out["final_answer"]


def test_grounded_calls_run() -> None:
    out, _ = run('Action: body_mass_index\nAction Input: {"weight_kg": 10, "height_m": 5}',
                 "Final Answer: 0.4 [R1]")
    assert [e["tool"] for e in out["tool_events"]] == ["body_mass_index"]


def test_grounding_is_off_by_default_for_models_that_are_not_local() -> None:
    out, _ = run(INVENTED, "Final Answer: 21.6 [R1]", grounding=None)
    assert [e["tool"] for e in out["tool_events"]] == ["body_mass_index"]


def test_an_invented_extra_call_is_skipped_and_the_others_run() -> None:
    out, model = run('Action: body_mass_index\nAction Input: {"weight_kg": 10, "height_m": 5}\n'
                     'Action: body_mass_index\nAction Input: {"weight_kg": 70, "height_m": 5}',
                     "Final Answer: 0.4 [R1]")
    ran, skipped = out["tool_events"]
    assert ran["ok"] and ran["args"] == {"weight_kg": 10.0, "height_m": 5.0}
    assert skipped["outcome"] == "ungrounded" and not skipped["ok"]
    assert "weight_kg=70" in skipped["error"]
    assert out["tools_used"] == ["body_mass_index"] and model.replies_used == 2
    observation = model.requests[1]["messages"][-1].content
    assert "[R2]" in observation and "appear nowhere" in observation


def test_unused_numbers_are_those_no_call_has_taken() -> None:
    from callgate.tools.grounding import numbers_in, unused_numbers

    request = "BMI for 6 feet and 80 kg, then 5.6 feet and 60 kg; tax of 5% on $1,000."
    assert numbers_in(request) == ["6", "80", "5.6", "60", "5", "1,000"]
    assert unused_numbers(request, [{"height": 6.0, "weight": 80}]) == [
        "5.6", "60", "5", "1,000"]
    # As a number, in percent, or inside a string.
    assert unused_numbers(request, [{"height": 6, "weight": 80}, {"h": "5.6", "w": 60},
                                    {"rate": 0.05, "amount": 1000}]) == []
    # A call that took 1000 did not take 10: only a fraction and its percent stand for each
    # other (0.05 for 5%, 5 for 0.05).
    assert unused_numbers("Invest $1000 for 10 years.", [{"amount": 1000}]) == ["10"]
    assert unused_numbers("A yield of 0.05 on 300.", [{"rate": 5, "base": 300}]) == []
    # Nor a hundredth of a number past any percent: 100000 did not take $10,000,000; a
    # number written as a percent is one however large.
    assert unused_numbers("Equity of $10,000,000.", [{"equity": 100000}]) == ["10,000,000"]
    assert unused_numbers("Returns of 2000% on $50.", [{"growth": 20, "base": 50}]) == []
    # A number written in percent and bare is two items: the rate's 0.05 does not take the
    # bare 5 of a list of years (BFCL parallel: the turn ended without the 5-year call).
    years = "An investment of $1000 at 5% for 1,5 and 10 years."
    calls = [{"amount": 1000, "rate": 0.05, "years": 1}, {"amount": 1000, "rate": 0.05,
                                                          "years": 10}]
    assert unused_numbers(years, calls) == ["5"]
    assert unused_numbers(years, [*calls, {"amount": 1000, "rate": 0.05, "years": 5}]) == []
    assert unused_numbers("A rate of 5 percent.", [{"rate": 0.05}]) == []
    # A day or a clock time is one value, not items: the call that booked the tickets
    # leaves nothing for a further call, whatever it did with the date and the time.
    tickets = "Book 3 tickets for Dune on the 15th of April, 2023 at 7:30 pm (or 2023-04-16 19:30)."
    assert unused_numbers(tickets, [{"number_of_tickets": 3}]) == []
    assert unused_numbers(tickets, []) == ["3"]
    assert unused_numbers("Rooms for 2 adults and 1 child on 05/01/2022 please.",
                          [{"adults": 2}]) == ["1"]


def test_an_exponent_is_an_item_unless_it_belongs_to_a_unit_or_a_power_of_ten() -> None:
    from callgate.tools.grounding import numbers_in, unused_numbers

    assert numbers_in("What is 2^10 and 2^20?") == ["2", "10", "2", "20"]
    assert unused_numbers("What is 2^10 and 2^20?", [{"expression": "2^10"}]) == ["20"]
    assert numbers_in("g is 9.8 m/s^2; f(x) = x^2 + 3; (a+b)^2") == ["9.8", "3"]
    assert numbers_in("The constant is 8.854 × 10^-12 F/m") == ["8.854", "10"]


def test_search_queries_and_prompts_are_free_text() -> None:
    from callgate.tools.grounding import ungrounded_args

    context = "Find me something about the latest Python release."
    assert ungrounded_args({"query": "python 3.14 changelog"}, {}, context) == []
    assert ungrounded_args({"prompt": "a watercolour fox"}, {}, context) == []
    assert ungrounded_args({"city": "Atlantis"}, {}, context) == [("city", "Atlantis")]



def test_a_file_path_must_name_a_file_or_folder_the_user_named() -> None:
    # Hand-written: SmolLM2 wrote "/path/to/file.txt" for "Delete the file notes.txt", whose
    # "file" and "txt" grounded it (half its words); the delete went to the user for
    # approval as if it were theirs. The folders before the name may be the model's own.
    said = "Delete the file notes.txt from my desktop, then open the project in /srv/app."
    for value in ("/path/to/file.txt", "/home/me/file.txt", "./output.txt",
                  "C:\\Users\\me\\report.pdf", "/srv/app/my_project", "~/Downloads"):
        assert ungrounded_args({"path": value}, {}, said) == [("path", value)], value
    for value in ("notes.txt", "/home/me/notes.txt", "~/notes.txt", "C:\\notes.txt", "~/Desktop",
                  "/srv/app", "/srv/app/"):
        assert ungrounded_args({"path": value}, {}, said) == [], value
    # Not paths: units, fractions, dates, URLs (read as before), commands with spaces.
    assert ungrounded_args({"unit": "km/h", "rate": "3/4", "day": "12/03/2024",
                            "url": "https://example.com/notes.txt"}, {},
                           "3/4 of the way at 60 km/h on 12/03/2024, "
                           "from https://example.com/notes.txt") == []
    assert ungrounded_args({"command": "del /F notes.txt"}, {}, said) == []
    # A name as the user calls it (a review's cases): without its dot, a folder's one word
    # in any form, a file's stem where no file of its kind is named; a pattern is no name.
    for value, request in (("./README.md", "Summarize the README"),
                           ("~/.bashrc", "show my bashrc"),
                           ("~/Documents", "open my document folder"),
                           ("~/Documents/*.pdf", "Find all PDF files in ~/Documents"),
                           ("docs/*.txt", "the txt files in the docs folder")):
        assert ungrounded_args({"path": value}, {}, request) == [], value
    assert ungrounded_args({"path": "/x/notes.txt"}, {}, "open the-notes.txt") == [
        ("path", "/x/notes.txt")]


def test_a_format_the_description_names_is_no_value() -> None:
    # SmolLM2 searched Spotify for "track:Song Name artist:Artist Name", the format its
    # description names, for "Can you search for 'Baby Shark'?": free text or not, a copy of
    # the format is invented, unless the conversation writes it or the schema offers it.
    from callgate.tools.grounding import ungrounded_args

    schema = {"type": "object", "properties": {
        "query": {"type": "string", "description": (
            "The search query. It should be formatted as 'track:Song Name artist:Artist "
            "Name', or just 'Song Name' if the artist is unknown.")},
        "destination": {"type": "string", "description": "formatted as 'Street, City'."},
        "date_format": {"type": "string", "default": "YYYY-MM-DD",
                        "description": "in the format 'YYYY-MM-DD'"}}}
    request = "Can you search for 'Baby Shark' and take me to 123 Beijing Street, San Francisco?"
    template = "track:Song Name artist:Artist Name"
    assert ungrounded_args({"query": template}, schema, request) == [("query", template)]
    assert ungrounded_args({"destination": "Street, City"}, schema, request) == [
        ("destination", "Street, City")]  # "Street" alone had grounded it
    assert ungrounded_args({"query": "Baby Shark", "date_format": "YYYY-MM-DD",
                            "destination": "123 Beijing Street, San Francisco"},
                           schema, request) == []
    assert ungrounded_args({"query": template}, schema, f"Search for {template} please") == []
    assert ungrounded_args({"query": template.lower()}, schema, request) == [
        ("query", template.lower())]
    assert ungrounded_args({"destination": "Street, City"}, schema,
                           "Take me to Main Street, Cityville") == [("destination", "Street, City")]
    # A quoted example is a value, which the user may write another way (a review's cases).
    examples = {"type": "object", "properties": {
        "display": {"type": "string", "description": "The time display format: '12h' or '24h'."},
        "version": {"type": "string", "description": "formatted as 'v1', 'v2', etc."},
        "city": {"type": "string", "description": "in the format 'New York, NY'"}}}
    assert ungrounded_args({"display": "12h", "version": "v1", "city": "New York, NY"},
                           examples, "Show New York City, NY, in 12 hour format, v1 please") == []


def test_only_the_last_corrections_refusal_is_what_failed() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    from callgate.graph.finalize import last_refusals
    from callgate.tools.grounding import CORRECTION_MARK

    refusal = ToolMessage("'f' was called with values that appear nowhere (x=1).",
                          tool_call_id="c1", status="error",
                          additional_kwargs={**CORRECTION_MARK,
                                             "callgate_refusal": "ungrounded"})
    request, call = HumanMessage("question"), AIMessage("Action: f")
    assert last_refusals([request, call, refusal, AIMessage("Final Answer:")]) == [refusal.text]
    # Refused in an earlier step, then corrected into a call that ran: not what failed now.
    ran = ToolMessage("[f] 2", tool_call_id="c2")
    assert last_refusals([request, call, refusal, AIMessage("Action: f"), ran,
                      AIMessage("Action Input: {")]) == []


@pytest.mark.parametrize("text", ["Book a room on 05/01/2022.", "Book a room on 5.1.2022.",
                                  "Book a room on 05/01/2022 for two.", "On 05-01-22."])
def test_a_numeric_date_is_read_where_it_ends_a_sentence(text: str) -> None:
    # "05/01/2022." had its period read as part of the number, so the date was not read
    # and a call with the user's own date was refused as invented.
    schema = {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}
    assert ground({"day": "2022-05-01"}, schema, text).refused == []
    assert ground({"day": "2022-05-02"}, schema, text).refused == [("day", "2022-05-02")]
