"""The answer step is checked like the call step: the bad answers quoted in the accuracy
issue, produced by a ``ScriptedChatModel`` (fixed replies, not a language model)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from callgate import build_agent
from callgate.answer_checks import (
    check_answer,
    copies_summary,
    cut_repetition,
    drop_answer_labels,
    drop_echoes,
    drop_empty_items,
    drop_question,
    drop_source_lines,
    drop_tool_talk,
    drop_unfinished,
    false_equations,
    gives_way,
    invented_numbers,
    left_out,
    misattributed_numbers,
    missed_figure,
    others_figure,
    runs_away,
)
from callgate.models.scripted import ScriptedChatModel, tool_call
from callgate.prompts.system import answer_now_instruction
from callgate.tools.summaries import asked_fields


def system_stats() -> dict[str, Any]:
    """CPU, memory and disk usage of this computer."""
    return {"cpu_percent": 12.5, "cpu_count": 2, "memory_percent": 41.0}


def calculator(expression: str) -> str:
    """Exact arithmetic."""
    if "{" in expression:
        raise ValueError(f"cannot evaluate {expression!r}")
    return "391"


def failing_web_search(error: str) -> Any:
    """A web_search tool that fails with ``error``, as ddgs does without internet."""

    def web_search(query: str) -> str:
        """Search the web."""
        raise RuntimeError(error)

    return web_search


def run(script: list[Any], tools: list[Any], question: str) -> dict[str, Any]:
    agent = build_agent(ScriptedChatModel(script=script), tools)
    return agent.invoke({"messages": [HumanMessage(question)]})


def test_invented_numbers_give_way_to_the_results() -> None:
    invented = "CPU usage: " + ", ".join(f"core {i}: {i * 7 % 100}%" for i in range(50))
    out = run([tool_call("system_stats", {}), AIMessage(invented)], [system_stats],
              "How busy is this computer's CPU right now?")
    assert out["answer_source"] == "results"
    assert out["final_answer"].startswith("Here is what the tools returned: [system_stats]")
    assert "cpu_percent: 12.5" in out["final_answer"] and "core 49" not in out["final_answer"]
    assert any(note.startswith("numbers in no result") for note in out["answer_checks"])


def test_a_number_of_an_earlier_turns_result_is_not_invented() -> None:
    # Scripted model, one thread, two turns (`callgate chat`: "What is 12 * 12?", then "And
    # divide that by 4", which the bundled model answered "144" without a call): the answer
    # is wrong, but its number is the conversation's, not made up; only this turn's results
    # could stand in for it.
    def square(expression: str) -> str:
        """Exact arithmetic."""
        return "144"

    agent = build_agent(ScriptedChatModel(script=[
        tool_call("square", {"expression": "12 * 12"}), AIMessage("144 [R1]"),
        AIMessage("144")]), [square], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "earlier-results"}}
    agent.invoke({"messages": [HumanMessage("What is 12 * 12?")]}, config)
    out = agent.invoke({"messages": [HumanMessage("And divide that by 4")]}, config)
    assert out["final_answer"] == "144" and out["answer_checks"] == []
    assert check_answer("144", results=[], user=["And divide that by 4"]).invented_numbers == [
        "144"]  # without the earlier turn, nothing holds it
    assert check_answer("145", results=[], user=["q"], earlier=["[square] 144"]
                        ).invented_numbers == ["145"]


def test_numbers_the_question_writes_as_words_are_not_invented() -> None:
    # "I have three cats and two dogs": an answer stating 3 and 2 invents neither.
    check = check_answer("You have 5 pets: 3 cats and 2 dogs.", results=[],
                         user=["I have three cats and two dogs; how many pets?"])
    assert check.invented_numbers == ["5"]


def test_arithmetic_asked_in_words_is_checked_as_the_loop_read_it() -> None:
    # Scripted model: the ReAct path reads "What is two plus two?" as "2 plus 2" and calls
    # the calculator with it. The call's "2 plus 2" is the question's input, not a "plus"
    # figure the answer "4" leaves out (the checks had said "the answer gives no plus
    # figure of the results").
    from callgate.tools.builtin.calculator import calculator

    out = run([tool_call("calculator", {"expression": "2 plus 2"}), AIMessage("4 [R1]")],
              [calculator], "What is two plus two?")
    assert out["answer_source"] == "model" and out["answer_checks"] == []
    assert out["final_answer"].startswith("4")


def test_a_number_written_past_a_floats_digits_is_known_only_as_written() -> None:
    # SmolLM2 writes float noise: "10.0000000000000001" for the user's 10, "1.000000000000001"
    # for how many feet are in a mile. Such a number is invented unless a text writes it so.
    assert invented_numbers("10.0000000000000001, 5.00000000000000001",
                            ["What is 10 km in miles and 5 kg in pounds?"]) == [
        "10.0000000000000001", "5.00000000000000001"]
    assert invented_numbers("It is 1.000000000000001", ["How many feet in a mile?"]) == [
        "1.000000000000001"]
    assert invented_numbers("It is 14.700000000000001.", ["= 14.700000000000001"]) == []
    assert invented_numbers("It is 14.7.", ["= 14.700000000000001"]) == []
    # Long decimals that are no float noise keep their reading by value (a review's cases).
    assert invented_numbers("pi is 3.1415926535897932384626",
                            ["3.14159265358979323846264338"]) == []
    assert invented_numbers("It is 10.50000000000000000.", ["10.5"]) == []
    assert invented_numbers("0.000012345678901234567", ["1.2345678901234567e-05"]) == []


def test_an_answer_restating_a_failed_calls_numbers_gives_way_to_the_failure() -> None:
    # Scripted model: the call fails on a junk expression and the answer is the junk
    # (`callgate ask "What is 10 km in miles and 5 kg in pounds?"` on the bundled model).
    junk = "10.0000000000000001, 10.0000000000000001, 5.00000000000000001"

    def convert(expression: str) -> str:
        """Convert units."""
        raise ValueError(f"unsupported in an arithmetic expression: {expression!r}")

    out = run([tool_call("convert", {"expression": junk}), AIMessage(f"{junk}, {junk}")],
              [convert], "What is 10 km in miles and 5 kg in pounds?")
    assert out["final_answer"].startswith(
        "I could not answer: the call to convert did not complete (error: ValueError")
    assert out["answer_source"] == "loop"  # the loop's words, not the model's
    assert "an answer with invented numbers after a failed call removed" in out[
        "answer_checks"]


def test_a_result_given_another_unit_gives_way_to_the_results() -> None:
    # Scripted model: "10 km in miles" ran, and the answer gave its figure the unit of the
    # question's other conversion (the bundled model's "6.21371192237334 pounds").
    def convert(expression: str) -> str:
        """Convert units."""
        return "6.21371192237334 miles"

    out = run([tool_call("convert", {"expression": "10 km in miles"}),
               AIMessage("6.21371192237334 pounds")],
              [convert], "What is 10 km in miles and 5 kg in pounds?")
    assert out["answer_source"] == "results"
    assert out["final_answer"].startswith(
        "Here is what the tools returned: [convert] 6.21371192237334 miles")
    assert "results given another unit: 6.21371192237334 pounds" in out["answer_checks"]
    # The unit the result writes, in any form, or a word the user did not write, is fine.
    for answer in ("6.21 miles", "It is 6.2137 mile.", "6.21371192237334 in all"):
        assert check_answer(answer, results=["= 6.21371192237334 miles"],
                            user=["What is 10 km in miles and 5 kg in pounds?"],
                            outputs=["6.21371192237334 miles"]).wrong_units == [], answer
    # A review's cases: the user's own amount ("1 km", not the result rounded to 1), a unit
    # of two words, any word of the result's, another tool's count.
    for answer, output, question in [
            ("1 km is about 0.62 miles.", "0.621371192237334 miles", "Convert 1 km to miles."),
            ("That's 86 degrees Fahrenheit.", "86 Fahrenheit",
             "Convert 30 degrees Celsius to Fahrenheit."),
            ("33.81 ounces", "33.814022701843 fluid ounces", "1 liter to fluid ounces?"),
            ("42 users signed up.", "42 new users", "How many users signed up?")]:
        assert check_answer(answer, results=[output], user=[question],
                            outputs=[output]).wrong_units == [], answer


def test_numbers_from_the_results_or_the_question_are_fine() -> None:
    out = run([tool_call("system_stats", {}),
               AIMessage("The CPU is at 12.5% on 2 cores [R1].")], [system_stats],
              "CPU now?")
    assert out["answer_source"] == "model" and out["answer_checks"] == []
    assert out["final_answer"].startswith("The CPU is at 12.5% on 2 cores [R1].")


def test_a_dotted_run_is_one_figure() -> None:
    # SmolLM2's "2.0.52 CPU cores" for "2 CPUs": not the results' 2.
    results = ["[system_stats] cpu 0.0%, memory 2.4%, 2 CPUs"]
    assert invented_numbers("It has 2.0.52 CPU cores, 2.0.0 in all.", results) == [
        "2.0.52", "2.0.0"]
    assert invented_numbers("Python 3.14.1 is out.", ["[web_search] Python 3.14.1"]) == []
    assert invented_numbers("Version 3.14.1.", ["Python 3.14.1 is out"]) == []  # a full stop
    # the whole run, not a part of a longer one
    assert invented_numbers("Python 3.14.1", ["Python 3.14.10"]) == ["3.14.1"]
    assert invented_numbers("IP 10.0.0.1", ["IP 110.0.0.12"]) == ["10.0.0.1"]
    # and it is no figure of the question's name: the answer gives way to the results
    stats = "[system_stats] cpu 0.0%, memory 2.4%, disk 22.4% (/), 2 CPUs"
    question = "How many CPU cores does this machine have?"
    assert missed_figure("It has 2.0.52 CPU cores.", question, [stats]) == "cpus"
    check = check_answer("It has 2.0.52 CPU cores.", results=[stats], user=[question])
    assert check.invented_numbers == ["2.0.52"] and gives_way(check, has_results=True)


def test_a_number_cut_short_by_a_clipped_preview_is_no_figure() -> None:
    # The real system_stats preview is clipped inside "load_average": "[0.…" is no load of 0
    # (it matched "cpu 0.0%" and passed "What is the load average?" answered "0.04").
    from callgate.tools.builtin.system_stats import summarize_stats
    from callgate.tools.summaries import preview

    data = {"cpu_percent": 0.0, "cpu_count": 2, "memory_percent": 1.5,
            "memory_free_gib": 23.2, "memory_total_gib": 23.5, "disk_percent": 22.9,
            "disk_free_gib": 78.2, "disk_total_gib": 252.0, "disk_path": "/",
            "load_average": [0.04, 0.24, 0.4], "uptime_s": 3600}
    results = [summarize_stats("system_stats", data), preview(data)]
    assert results[1].endswith("…")
    question = "What is the load average of this computer?"
    assert missed_figure("0.04, 0.24, 0.4", question, results) is None
    assert missed_figure("1.5%", question, results) == "load"
    # the free memory, where the preview holds it
    assert missed_figure("1.5%", "How much free memory is there?", results) == "free memory"
    assert missed_figure("23.2 GiB", "How much free memory is there?", results) is None


def test_a_number_with_its_unit_is_still_a_number() -> None:
    from callgate.answer_checks import numbers_in

    assert numbers_in("15C, 20km/h, up 3d 4h, [R1], v2 and 1,000.") == [
        "15", "20", "3", "4", "1,000"]


def test_a_failed_call_is_not_cited_and_the_answer_says_so() -> None:
    bad = tool_call("calculator", {"expression": "{17} * 23"})
    out = run([bad, tool_call("calculator", {"expression": "{17} * 23"}),
               tool_call("calculator", {"expression": "{17} * 23"}), AIMessage("")],
              [calculator], "What is 17 * 23?")
    assert out["citations"] == [] and "Sources:" not in out["final_answer"]
    assert out["final_answer"].startswith("I could not answer: the call to calculator")
    assert {p["outcome"] for p in out["problems"]} == {"error"}


def test_an_answer_retelling_a_failed_call_gives_way_to_the_loops_own_words() -> None:
    # The bundled model retold web_search's failure line, and its copy drifted ("Falcon
    # X10" for X9); with no call ok, the loop states what failed instead.
    web_search = failing_web_search("DNSError: no route to search.example for Falcon X9")
    retold = "[web_search] failed: DNSError: no route to search.example for Falcon X10"
    out = run([tool_call("web_search", {"query": "Falcon X9"}), AIMessage(retold)],
              [web_search], "When does the Falcon X9 go on sale?")
    assert out["final_answer"].startswith("I could not answer: the call to web_search")
    assert "X10" not in out["final_answer"]
    assert "the answer copied a failed call's summary line" in out["answer_checks"]


def test_an_answer_after_every_call_failed_says_first_that_no_result_supports_it() -> None:
    # Scripted model. The bundled model's answer to `callgate ask "What is the weather in
    # Paris?"` on a machine without internet: web_search failed, and the model answered
    # anyway, as if it knew. A failure is not disguised as an answer.
    web_search = failing_web_search("DNSError: no route to search.example")
    claim = "The weather in Paris is indeed quite beautiful."
    out = run([tool_call("web_search", {"query": "weather Paris"}), AIMessage(claim)],
              [web_search], "What is the weather in Paris?")
    assert out["final_answer"] == ("(Not from a tool: the call to web_search failed, so this "
                                   f"is the model's own answer.)\n\n{claim}")
    assert out["answer_source"] == "model" and out["status"] == "done"
    assert "no call succeeded: the answer is the model's own" in out["answer_checks"]
    assert [p["outcome"] for p in out["problems"]] == ["error"]
    # An answer that says the call failed disguises nothing: no note.
    out = run([tool_call("web_search", {"query": "weather Paris"}),
               AIMessage("The search failed, so I cannot tell.")], [web_search],
              "What is the weather in Paris?")
    assert out["final_answer"] == "The search failed, so I cannot tell."
    # One call ok is a result to stand on: no note.
    out = run([tool_call("web_search", {"query": "weather Paris"}),
               tool_call("system_stats", {}), AIMessage("The CPU is at 12.5% [R2].")],
              [web_search, system_stats], "Weather in Paris, and how busy is the CPU?")
    assert out["final_answer"].startswith("The CPU is at 12.5% [R2].")
    assert out["answer_checks"] == []


def test_a_looping_answer_with_its_own_sources_line_is_cut() -> None:
    looping = "Stats: " + "System.Stats.getStats()" * 55 + "\nSources: [R9] made up"
    out = run([tool_call("system_stats", {}), AIMessage(looping)], [system_stats], "CPU?")
    assert out["final_answer"].count("getStats") <= 2
    assert "made up" not in out["final_answer"]
    assert out["final_answer"].count("Sources:") == 1  # callgate's own
    assert "repetition cut" in out["answer_checks"]


def test_an_answer_that_leaves_out_a_result_gives_way_to_the_results() -> None:
    # Scripted: the bundled model's answer to `callgate ask "What is 7 + 8, and what is
    # 9 * 9?"` after both calculator calls had run: "15", the second result left out.
    def calculator(expression: str) -> str:
        """Exact arithmetic."""
        return {"7 + 8": "15", "9 * 9": "81"}[expression]

    script = [AIMessage("", tool_calls=[
        {"name": "calculator", "args": {"expression": "7 + 8"}, "id": "c1"},
        {"name": "calculator", "args": {"expression": "9 * 9"}, "id": "c2"}]),
        AIMessage("15")]
    out = run(script, [calculator], "What is 7 + 8, and what is 9 * 9?")
    assert out["answer_source"] == "results"
    assert "results the answer leaves out: 81" in out["answer_checks"]
    assert out["final_answer"].startswith(
        "Here is what the tools returned: [calculator] 15 [R1]; [calculator] 81 [R2]")
    # Both stated (one rounded), or one result alone: the model's answer stands.
    assert left_out("7 + 8 = 15 and 9 * 9 = 81.0", ["15", "81"]) == []
    assert left_out("It is 3.33.", ["3.3333333333", "81"]) == ["81"]
    assert left_out("Fifteen.", ["15"]) == [] and left_out("15", ["15", "15"]) == []
    assert left_out("Both are done.", ["15", "81"]) == ["15", "81"]
    assert left_out("15 and 81", ["15", "[1, 2]"]) == []  # one result is one number
    # A result with its unit (a conversion's) is one number too (a review's case).
    assert left_out("10 km is about 6.21 miles.", ["6.21371192237334 miles",
                                                   "11.0231131092439 pounds"]) == [
        "11.0231131092439"]
    # A result a later call took is a step: "What is 15% of 240, plus 10?" called
    # "0.15 * 240" (36), then "36 + 10" (46); "46" answers it.
    steps = {"0.15 * 240": "36", "36 + 10": "46"}

    def calc(expression: str) -> str:
        """Exact arithmetic."""
        return steps[expression]

    chained = run([tool_call("calc", {"expression": "0.15 * 240"}),
                   tool_call("calc", {"expression": "36 + 10"}), AIMessage("46 [R2]")],
                  [calc], "What is 15% of 240, plus 10?")
    assert chained["answer_source"] == "model" and chained["final_answer"].startswith("46")
    # A conversion a later call took is a step as well: its number, not its unit, was taken.
    units = {"5 miles to km": "8.04672 km", "8.04672 * 2": "16.09344"}

    def convert(expression: str) -> str:
        """Exact arithmetic and units."""
        return units[expression]

    chained = run([tool_call("convert", {"expression": "5 miles to km"}),
                   tool_call("convert", {"expression": "8.04672 * 2"}),
                   AIMessage("16.09344 [R2]")], [convert], "Twice 5 miles in km?")
    assert chained["answer_source"] == "model" and chained["final_answer"].startswith(
        "16.09344")


def test_an_answer_that_opens_with_another_names_figure_gives_way() -> None:
    # Scripted: the bundled model's answer to the answer set's "How full is the disk of
    # this computer?" (2026-11-30, the CPU and the memory both at 2.5%): it opens with the
    # memory's figures, and the disk's percentage is nowhere.
    def system_stats() -> dict[str, Any]:
        """CPU, memory and disk usage of this computer."""
        return {"cpu_percent": 2.5, "memory_percent": 2.5, "memory_total_gib": 23.5,
                "disk_percent": 22.9, "disk_free_gib": 78.2, "disk_total_gib": 252.0}

    answer = "2.5% of 23.5 GiB, 78.2 GiB of 252.0 GiB"
    out = run([tool_call("system_stats", {}), AIMessage(answer)], [system_stats],
              "How full is the disk of this computer?")
    assert out["answer_source"] == "results" and "disk_percent: 22.9" in out["final_answer"]
    assert ("the answer opens with 2.5, a figure of something the question does not ask "
            "about") in out["answer_checks"]
    summary = ("[system_stats] cpu 2.5%, memory 2.5%, disk 22.9% (/), load 0.96 0.9 0.8, "
               "2 CPUs, memory free 22.9 of 23.5 GiB, disk free 78.2 of 252.0 GiB")
    results = [summary, '{"memory_total_gib":23.5,"disk_total_gib":252.0}']
    disk = "How full is the disk of this computer?"
    assert others_figure(answer, disk, results) == "2.5"
    # The asked name's figure first, a name beside the figure, a question about no name
    # of the results, or a number no result holds: not this check's.
    for said, question in [("22.9%, 78.2 GiB of 252.0 GiB free", disk),
                           ("Memory 2.5%, disk 22.9%", disk), ("2 CPUs, load 0.96",
                                                               "What is the load average?"),
                           ("2.5%", "How busy is the CPU right now?"),
                           ("2.5% of 23.5 GiB", "How is this computer doing?"),
                           ("42% full", disk)]:
        assert others_figure(said, question, results) is None, said
    assert others_figure("2.5%", "What is the load average?", results) == "2.5"
    # A list's marker is no figure, and a whole number is another name's only as written:
    # "1" is not the load's 0.96.
    for said in ["1. Disk usage: 22.9%\n2. Free: 78.2 GiB of 252.0 GiB",
                 "Over the last 1 minute the disk was 22.9% full"]:
        assert others_figure(said, disk, results) is None, said
    # A figure the question gives is an input: the calculator's "7 cubed" makes "cubed" no
    # name of 343 (the answer set's "What is 7 cubed?", answered "343").
    calc = ["[calculator] = 343", "343", '{"expression": "7 cubed"}']
    assert others_figure("343", "What is 7 cubed?", calc) is None


def test_a_loop_that_counts_is_cut() -> None:
    # Scripted: the bundled model's reply to `callgate ask "Write a haiku about autumn."`
    # (no tool fits): "1", then "FinaL 1" to "FinaL 36", a line each. No line repeats, but
    # each is the one before with its number one up: a loop, kept once and noted.
    counted = "1\n" + "\n".join(f"FinaL {n}" for n in range(1, 37))
    out = run([AIMessage(counted)], [system_stats], "Write a haiku about autumn.")
    assert out["final_answer"] == "1\nFinaL 1"
    assert "repetition cut" in out["answer_checks"]
    eight = "1\n" + "\n".join(f"FinaL {n}" for n in range(1, 9))
    assert runs_away(eight)  # decoding stops at the eighth
    # Eight in a row make the loop (a short list that counts is content: "iPhone 12" to
    # "iPhone 15"); so is a list whose lines differ in more than one number, in words, or
    # that does not count up ("Floor -1", "Floor -2": down).
    assert not runs_away(eight[:eight.rindex("\n")])
    for kept in ["- iPhone 12\n- iPhone 13\n- iPhone 14\n- iPhone 15",
                 "CPU 1: 5%\nCPU 2: 7%\nCPU 3: 2%\nCPU 4: 9%",
                 "Step 1: mix. Step 2: bake. Step 3: cool. Step 4: eat.",
                 "Room 4\nRoom 2\nRoom 7\nRoom 9",
                 "\n".join(f"Floor -{n}" for n in range(1, 10))]:
        assert cut_repetition(kept, most=1) == (kept, False), kept
    days = "\n".join(f"Day {n}" for n in range(1, 9))
    assert cut_repetition(f"{days}\nDone.", most=1) == ("Day 1\nDone.", True)


def test_a_long_phrase_said_twice_at_once_is_a_loop() -> None:
    # The bundled model's answer to the answer set's "How full is the disk of this
    # computer?" (2026-11-30): its list twice over, one sentence, which no sentence repeats.
    said = "2.5% of 23.5 GiB, 78.2 GiB of 252.0 GiB"
    assert cut_repetition(f"{said}, {said}", most=1) == (said, True)
    assert runs_away(f"{said}, {said}")
    # Four words at least ("Massachusetts Avenue" twice is an address, said at length),
    # said again at once, inside one sentence: a sentence said twice is the sentence
    # count's (``most``).
    for kept in ["Massachusetts Avenue, Massachusetts Avenue", "New York, New York is a song.",
                 "The answer is 42 and the answer is 42"]:
        assert cut_repetition(kept, most=1) == (kept, False), kept
    twice = "I do not know the answer. I do not know the answer."
    assert cut_repetition(twice) == (twice, False) and not runs_away(twice)


def test_the_loops_own_instruction_is_never_the_answer() -> None:
    echoed = "no, no tool fits this question. " + answer_now_instruction("step_limit")
    out = run([AIMessage(echoed)], [system_stats], "Search the web for the latest Python")
    assert "Answer the user's last question now" not in out["final_answer"]
    assert "echoed instructions removed" in out["answer_checks"]


def test_the_checks_one_by_one() -> None:
    assert cut_repetition("A. B. A. A. A.")[0] == "A. B. A."
    # After a cut loop, an unfinished sentence is the loop's next round, stopped ("Fin" of
    # "Final Answer"); the blank lines the cut sentences leave go too.
    assert cut_repetition("A joke. B.\n\nB.\n\nB.\n\nFin", most=1) == ("A joke. B.", True)
    assert cut_repetition("B. B. B. Done.", most=1) == ("B. Done.", True)
    assert cut_repetition("It is 5. Fin") == ("It is 5. Fin", False)  # no loop: kept
    # Without a loop, a last fragment that starts an earlier sentence or list item is where
    # decoding stopped (the bundled model's `callgate ask "What can you do?"`); other short
    # text is content.
    helps = "I can help with:\n- Searching for news, facts and anything recent"
    assert cut_repetition(f"{helps}\n- Searching for") == (helps, False)
    check = check_answer(f"{helps}\n- Searching for", results=[], user=["What can you do?"])
    assert check.text == helps and check.notes == ["unfinished sentence removed"]
    assert cut_repetition("The answer is Paris. The answer") == ("The answer is Paris.", False)
    for kept in ["It is raining. Thanks", "It is 5. It is.", "Paris"]:
        assert cut_repetition(kept) == (kept, False), kept
    assert cut_repetition("It is fine. It is fine. It is", most=1) == ("It is fine.", True)
    # The bundled model's reply to "Hi!" ended, after its loop, in the next round's "I'm".
    hello = "I'm glad to help. I'm here to help you. I'm here to help you. I'm"
    assert cut_repetition(hello, most=1) == ("I'm glad to help. I'm here to help you.", True)
    # Other text after a loop is content, and a cut line takes its break along.
    assert cut_repetition("Hope it helps\nHope it helps\nThanks", most=1)[0] == (
        "Hope it helps\nThanks")
    assert cut_repetition("- CPU 3%\n- CPU 3%\n- Disk 7%", most=1)[0] == "- CPU 3%\n- Disk 7%"
    assert cut_repetition("ok ok")[1] is False
    # Decimal points end no sentence: "15 1." twice in "0.15 1.15 1.71" is no repetition.
    load = "[system_stats] load 0.15 1.15 1.71, up 3h 55m, 2 CPUs [R1]"
    assert cut_repetition(load, most=1) == (load, False)
    assert drop_echoes("Fine. Answer the user's last question now, as well as you can.")[
        0] == "Fine."
    assert drop_echoes("Do not call me now.")[1] is False  # a short phrase is not an echo
    # ... but an instruction's whole sentence is, however short (the answer to `callgate
    # ask hi --max-steps 0` was "Do not call any tools.").
    assert drop_echoes("Hi there. Do not call any tools.") == ("Hi there.", True)
    assert drop_echoes("Do not call any tool.")[1] is False  # not the instruction's sentence
    assert drop_echoes("Call for them.")[1] is False  # an instruction's, but under 4 words
    echoed = ("'Rag_search' was called with values that appear nowhere in the conversation "
              "(query='x'). Use only values the user gave; if no tool fits the question, "
              "answer directly without a tool.")
    # The loop's grounding message: its advice to the model goes; what was refused is a
    # fact the user may read (the loop's failure message states it).
    assert drop_echoes(echoed) == (echoed[:echoed.index(" Use only")], True)
    assert drop_source_lines("x\n**Sources:** [R1] fake\ny")[0] == "x\n\ny"
    assert invented_numbers("It is 391 [R1], or 12.", ["[calc] 391"]) == ["12"]
    assert invented_numbers("1. first\n2. second", []) == []
    assert invented_numbers("3. third\n4. fourth", []) == []  # a list's later part
    # A number opening a line with no list around it is an answer, not a marker.
    assert invented_numbers("42.\nThat is all.", []) == ["42"]
    assert invented_numbers("42. It is booked.", []) == ["42"]
    assert invented_numbers("about 21.6", ["bmi 21.58"]) == []
    assert check_answer("plain words", results=[], user=[]).notes == []


def test_one_computed_number_is_flagged_not_replaced() -> None:
    out = run([tool_call("system_stats", {}), AIMessage("2 to the power of 10 is 1024.")],
              [system_stats], "Compute 2 to the power of 10.")
    assert out["answer_source"] == "model" and out["final_answer"].startswith("2 to the")
    assert out["answer_checks"] == ["numbers in no result or question: 1024"]


def test_numbers_without_any_result_are_flagged() -> None:
    out = run([AIMessage("Your Wi-Fi password is 1234567890.")], [system_stats],
              "What is the guest Wi-Fi password?")
    assert out["answer_checks"] == ["numbers in no result or question: 1234567890"]


def test_a_reply_that_starts_to_loop_stops_decoding() -> None:
    """Streamed word by word (langchain-core's ``GenericFakeChatModel``): the reply stops
    a few repeats in, not after the 200 the model would write."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from callgate.graph.streaming import stream_reply

    looping = "Final Answer: The CPU is busy. " + "CPU: 2.7% RAM: 3.6% " * 200
    model = GenericFakeChatModel(messages=iter([AIMessage(looping)]))
    _, raw = stream_reply(model, [HumanMessage("CPU?")], {}, "Final Answer:")
    assert raw.startswith("Final Answer: The CPU is busy.")
    assert raw.count("RAM: 3.6%") < 10


def test_a_reply_with_tool_calls_is_never_cut_for_looping_text() -> None:
    """A native reply whose text loops but which carries a tool call streams to its end."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk

    from callgate.graph.streaming import stream_reply

    class LoopingThenCall(GenericFakeChatModel):
        def _stream(self, *args: Any, **kwargs: Any):
            from langchain_core.outputs import ChatGenerationChunk
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[
                {"name": "system_stats", "args": "{}", "id": "c1", "index": 0}]))
            for _ in range(100):
                yield ChatGenerationChunk(message=AIMessageChunk(content="Checking. "))

    model = LoopingThenCall(messages=iter([]))
    message, raw = stream_reply(model, [HumanMessage("CPU?")], {})
    assert raw.count("Checking.") == 100
    assert [c["name"] for c in message.tool_calls] == ["system_stats"]


def test_a_long_number_is_not_a_loop() -> None:
    from callgate.answer_checks import cut_repetition

    assert cut_repetition("It is 14.700000000000001 or 1000000000.") == (
        "It is 14.700000000000001 or 1000000000.", False)
    assert cut_repetition("sorted: [1, 1, 1, 1, 2]") == ("sorted: [1, 1, 1, 1, 2]", False)


def test_a_number_written_over_and_over_is_a_loop() -> None:
    # The bundled model's answer to the README's question, once (5.8 s of decoding).
    looped = "[system_stats] CPU: 0.0% 2.5% 0.83%" + " 2.5%" * 30
    assert cut_repetition(looped) == ("[system_stats] CPU: 0.0% 2.5% 0.83% 2.5%", True)
    assert runs_away(looped)
    # Another answer to it (`callgate eval answers`, 83ba9de): a number can hold one
    # decimal point, not forty.
    dotted = "2.0.0.2.1.29" + ".0" * 40
    assert cut_repetition(dotted)[1] and runs_away(dotted)
    assert len(cut_repetition(dotted)[0]) < 20
    assert cut_repetition("version 10.0.0.1 of 1.000000001")[1] is False
    # What is left of a looped number is no answer: the results' summaries stand in for it.
    check = check_answer(dotted, results=["CPU: 2.1% of 2 cores"], user=["How busy?"])
    assert check.degenerate and gives_way(check, has_results=True)
    assert not check_answer("391", results=["391"], user=["17 * 23?"]).degenerate


def test_the_calculator_hides_float_rounding() -> None:
    from callgate.tools.builtin.calculator import calculator

    assert calculator("3.5 * 4.2") == 14.7
    assert calculator("1234567890123 * 1.0") == 1234567890123.0  # every digit a float holds
    assert calculator("10 / 4") == 2.5 and calculator("2 ** 10") == 1024


def test_an_answer_copying_the_summary_line_gives_way_to_the_summary() -> None:
    # What the bundled model wrote for the README's question: the summary line copied,
    # then the load average's figures relabelled as memory percentages.
    garbled = "[system_stats] cpu_percent: 12.5 RAM 2.56% (RAM 2.44%) 2.44% (RAM 1.61%) 2."
    out = run([tool_call("system_stats", {}), AIMessage(garbled)], [system_stats],
              "How busy is this computer's CPU right now?")
    assert out["answer_source"] == "results"
    assert out["final_answer"].startswith("Here is what the tools returned: [system_stats]")
    assert "RAM" not in out["final_answer"]
    assert "the answer copied a result's summary line" in out["answer_checks"]
    # After citation ids too; an answer in the model's own words stays.
    assert check_answer("[R1] [system_stats] cpu 3%", results=["[system_stats] cpu 3%"],
                        user=[]).copied_summary
    assert not check_answer("The CPU is at 3% [R1].", results=["[system_stats] cpu 3%"],
                            user=[]).copied_summary
    assert not check_answer("[note] cpu 3%", results=["[system_stats] cpu 3%"],
                            user=[]).copied_summary
    # Further in, the summary's opening (seen in a bundled-model answer to a web question:
    # "461,000 [R1] [web_search] results: ..."); not a tag named in a sentence.
    search = "[web_search] results: Python 3.14.1 is now available — Released 2 December"
    assert check_answer("461,000 [R1] [web_search] results: Python 3.14.1", results=[search],
                        user=[]).copied_summary
    for fine in ("Python 3.14.1, says [web_search], is the newest.",
                 "According to the [web_search] results, Python 3.14.1 is the newest.",
                 "The [web_search] results say Python 3.14.1 is out."):
        assert not check_answer(fine, results=[search], user=[]).copied_summary, fine
    stats = "[system_stats] cpu 0.0%, memory 2.0%"
    assert not copies_summary("The [system_stats] CPU figure is 0.0%, so it is idle.", [stats])
    # A line labelled with a result's tool name, as its summary is (`callgate chat` at
    # 78598d1: "2\n\nSystem_Stats: 2"); a figure's label is no tool's.
    assert copies_summary("2\n\nSystem_Stats: 2", [stats])
    assert copies_summary("- system stats: cpu 0%", [stats])
    assert not copies_summary("CPU: 0.0%\nMemory: 2.0%", [stats])


def test_the_results_answer_keeps_the_fields_the_question_asks_about() -> None:
    # `callgate ask "What is the disk usage?"` (bundled model, 9eb6dbc) gave way to the whole
    # summary line: CPU, memory, load, uptime and CPU count around the disk's two figures.
    out = run([tool_call("system_stats", {}), AIMessage("The memory is at 12.5%.")],
              [system_stats], "How much memory is used?")
    assert out["answer_source"] == "results"
    assert out["final_answer"].startswith(
        "Here is what the tools returned: [system_stats] memory_percent: 41.0 [R1]")
    stats = ("[system_stats] cpu 0.0%, memory 2.5%, disk 23.7% (/), load 0.84 0.84 0.92, "
             "uptime 8h 27m, 2 CPUs, memory free 23.0 of 23.5 GiB, disk free 77.4 of 252.0 GiB")
    assert asked_fields(stats, "What is the disk usage?") == (
        "[system_stats] disk 23.7% (/), disk free 77.4 of 252.0 GiB")
    # The fields sharing the most words: "memory free", not "disk free" nor "memory 2.5%".
    assert asked_fields(stats, "How much memory is free?") == (
        "[system_stats] memory free 23.0 of 23.5 GiB")
    assert asked_fields(stats, "What's the load average?") == "[system_stats] load 0.84 0.84 0.92"
    # A plural meets its singular: the count of CPUs is a field about the CPU.
    assert asked_fields(stats, "How many CPU cores does this machine have?") == (
        "[system_stats] cpu 0.0%, 2 CPUs")
    # A "key: value" field is named by its key: the README's example, "Weather in Paris?",
    # gave way to "[get_weather] city: Paris" alone, the value the question gives.
    weather = "[get_weather] city: Paris; temperature: 21; unit: celsius"
    assert asked_fields(weather, "Weather in Paris?") == weather
    assert asked_fields(weather, "What temperature is it in Paris?") == (
        "[get_weather] temperature: 21")
    # Each word of a question of two parts names its fields (a second reader's review: the
    # CPU was dropped for the memory's "free", which shares two words).
    assert asked_fields(stats, "What is the free memory and the CPU usage?") == (
        "[system_stats] cpu 0.0%, 2 CPUs, memory free 23.0 of 23.5 GiB")
    assert asked_fields(stats, "How much memory is free and what's the load?") == (
        "[system_stats] load 0.84 0.84 0.92, memory free 23.0 of 23.5 GiB")
    # "How long" with no field named: the fields of a duration (`callgate ask "How long
    # has this computer been running?"` was given the whole record).
    uptime = ("[system_stats] cpu 0.0%, memory 2.5%, load 0.88 1.04 1.0, uptime 15h 27m, "
              "2 CPUs")
    assert asked_fields(uptime, "How long has this computer been running?") == (
        "[system_stats] uptime 15h 27m")
    assert asked_fields("[t] a: 5 minutes; b: 3; c: 4", "How long will it take?") == (
        "[t] a: 5 minutes")
    assert asked_fields(uptime, "How busy is it?") == uptime
    # A dict's value holding "; " stays whole; one holding ", " makes no record.
    assert asked_fields("[t] note: a; b c; price: 3; size: 4", "What is the price?") == (
        "[t] price: 3")
    forecast = "[get_forecast] forecast: Mon 18C, Tue 20C, Wed 17C"
    assert asked_fields(forecast, "What is the forecast for Tue?") == forecast
    # A list of results is no record, though its items hold commas: "price=1.2" is the apple's.
    prices = "[get_prices] results: item=apple, price=1.2 | item=pear, price=2.5 | item=fig"
    assert asked_fields(prices, "What is the price of a pear?") == prices
    # No field named, or every one: the whole line.
    assert asked_fields(stats, "Is this machine healthy?") == stats
    assert asked_fields("[t] cpu 1%, cpu 2%, cpu 3%", "cpu?") == "[t] cpu 1%, cpu 2%, cpu 3%"
    # Prose, a list of search results, two fields: no record to choose from.
    prose = "[web_search] results: Python 3.14.1 is out, with fixes, and more on the disk"
    assert asked_fields(prose, "What is on the disk?") == prose
    assert asked_fields("[t] disk 2%, cpu 3%", "disk?") == "[t] disk 2%, cpu 3%"
    assert asked_fields("disk 2%, cpu 3%, load 1", "disk?") == "disk 2%, cpu 3%, load 1"


def test_an_answer_that_only_names_its_label_gives_way_to_the_results() -> None:
    # The bundled model's answer to a notes question (the answer-quality set): it echoes
    # the loop's "The Final Answer was empty" instead of reading the result.
    out = run([tool_call("system_stats", {}), AIMessage("The final answer is empty.")],
              [system_stats], "How busy is the CPU?")
    assert out["answer_source"] == "results" and "answer label removed" in out["answer_checks"]
    assert out["final_answer"].startswith("Here is what the tools returned: [system_stats]")
    # The label goes; what follows it is the answer.
    assert drop_answer_labels("The final answer is: 391.") == ("391.", True)
    assert drop_answer_labels("Final Answer: Paris. It is big.") == ("Paris. It is big.", True)
    assert drop_answer_labels("Our final answers differ.") == ("Our final answers differ.",
                                                               False)
    assert drop_answer_labels("The answer is 4.") == ("The answer is 4.", False)
    assert drop_answer_labels("The final answer isn't known.") == (
        "The final answer isn't known.", False)
    assert drop_answer_labels("The final answer was empty.") == ("", True)
    # Without "final" only with a colon: "The answer is 4." above is a sentence.
    assert drop_answer_labels("The answer is: 4") == ("4", True)
    assert drop_answer_labels("It is Paris.\n\nThe answer is:") == ("It is Paris.", True)
    # The label garbled, "Final 2:" (the bundled model, `callgate ask "What is the capital
    # of France?"`): it goes, and so does the sentence after it, which only says the
    # answer again; a label-like "Final score:" is a sentence's.
    assert drop_answer_labels("Paris is the capital.\n\nFinal 2: Paris is the capital.") == (
        "Paris is the capital.", True)
    assert drop_answer_labels("Final: 42") == ("42", True)
    # Garbled into one word, or "final" misspelt (the bundled model's `callgate ask "Tell me
    # a joke"` wrote "FenlAnswer:"); other words before "answer:" are a sentence's.
    for label in ["FenlAnswer:", "FinalAnswer :", "finalanswer:", "Fenl Answer:"]:
        assert drop_answer_labels(f"{label} 42") == ("42", True), label
    for sentence in ["Final score: 3-1.", "The final: Spain won.", "Finally: yes.",
                     "Short answer: yes.", "Questions and answers: many.", "My answer: no.",
                     "First answer: yes.", "Full answer: it depends."]:
        assert drop_answer_labels(sentence) == (sentence, False), sentence
    # A two-word loop label in capitals at a sentence's end: the model starting the reply
    # format again; what comes before it stays.
    assert drop_answer_labels("42 FINAL ANSWER:") == ("42", True)
    assert drop_answer_labels("It rains. ACTION INPUT:") == ("It rains.", True)
    # One capital word is no label (found in review): "All sales are FINAL." is a sentence,
    # and so, lexically, is the bundled model's "The weather in Paris is FINAL." (`callgate
    # ask "What is the weather in Paris?"`, no tool offered), which stays.
    for sentence in ["All sales are FINAL.", "Lakers 110, Celtics 102, FINAL.",
                     "The FINAL score was 3-1.", "It is the final.", "He shouted: ACTION!"]:
        assert drop_answer_labels(sentence) == (sentence, False), sentence


def test_a_garbled_label_and_the_quotes_of_cut_sentences_leave_nothing_behind() -> None:
    # The bundled model's answer to `callgate ask "Tell me a joke"` (no tool offered): a
    # sentence in quotes, then twice again after a garbled "Final Answer:" label.
    said = '"What\'s the most important thing you can do to your life?"'
    draft = f"{said}\n\nFenlAnswer: {said}\n\nFenlAnswer: {said}"
    check = check_answer(draft, results=[], user=["Tell me a joke"])
    assert check.text == said
    assert "answer label removed" in check.notes and "repetition cut" in check.notes
    # A sentence cut takes its closing quote or bracket along, not the next sentence.
    assert cut_repetition('"Go." "Go." "Go." (Stop.)') == ('"Go." "Go." (Stop.)', True)
    assert drop_answer_labels('"Go."\nAnswer: "Go."\nNext.') == ('"Go."\n\nNext.', True)


def test_empty_items_that_end_a_numbered_list_go_and_its_markers_are_no_figures() -> None:
    # The bundled model's answer to `callgate ask "What do my notes say about the car?"`
    # with no documents indexed (so no rag_search): it numbers on after its one item.
    check = check_answer("1. The car was a 2018 Ferrari 420 GTB. 2. 3. 4.", results=[],
                         user=["What do my notes say about the car?"])
    assert check.text == "1. The car was a 2018 Ferrari 420 GTB."
    assert "empty list items removed" in check.notes
    assert check.invented_numbers == ["2018", "420"]  # the markers are not figures
    # Its answer to "Summarize my documents about the car": the next item's marker, cut off.
    said = "1. The car is red. 2. It is a luxury vehicle."
    assert drop_empty_items(f"{said} 3.") == (said, True)
    assert check_answer(said, results=[], user=["q"]).invented_numbers == []
    assert drop_empty_items("1. Red.\n2. Blue.\n3.") == ("1. Red.\n2. Blue.", True)
    # Not in a list that starts with "1.", nor an item with words: kept.
    for kept in ["42.", "It is 12. 3.", "Version 2.0. 3. Next", "1. Red. 2. Blue.",
                 "Scores: 1. 2. 3."]:
        assert drop_empty_items(kept) == (kept, False), kept


def test_the_question_said_again_goes_and_a_label_leaves_no_double() -> None:
    # The bundled model's chat answers (no tool fits): it says the question again, and
    # writes its answer twice, once after a label.
    question = "When does our flight to Lisbon leave?"
    draft = f"{question}\n\nIt leaves at 06:40.\n\nThe answer is:\n\n{question}"
    check = check_answer(draft, results=[], user=[question])
    assert check.text == "It leaves at 06:40."
    assert check.notes == ["repetition cut", "the question said again removed",
                           "answer label removed", "numbers in no result or question: 06, 40"]
    assert drop_question("Where is it? It is here.", "where is it?")[0] == "It is here."
    assert drop_question("Where is it now?", "Where is it?") == ("Where is it now?", False)
    # Not a greeting said back, nor an answer that is only the question (nothing is left).
    assert drop_question("Hello!", "Hello") == ("Hello!", False)
    assert drop_question("Where is it?", "Where is it?") == ("Where is it?", False)
    twice = check_answer("2.4%\n\nThe answer is: 2.4%", results=["[system_stats] memory 2.4%"],
                         user=["How much memory is in use?"])
    assert twice.text == "2.4%" and twice.notes == ["answer label removed"]


def test_how_many_asks_for_the_count_written_before_the_name() -> None:
    # The answer set's "How many CPU cores does this machine have?" with the CPU at 4.8%:
    # SmolLM2 answered "The machine has 4.8% CPU cores."
    stats = "[system_stats] cpu 4.8%, memory 2.7%, disk 22.6% (/), up 4h 9m, 2 CPUs"
    question = "How many CPU cores does this machine have?"
    assert missed_figure("The machine has 4.8% CPU cores.", question, [stats]) == "cpus"
    assert missed_figure("It has 2.", question, [stats]) is None
    assert missed_figure("4.8%", "How busy is the CPU?", [stats]) is None  # no count asked
    # A percentage is no count, whatever the question calls the thing counted (the fresh
    # set's "How many processors does this computer have?" answered "2.7%").
    processors = "How many processors does this computer have?"
    assert missed_figure("2.7%", processors, [stats]) == "cpus"
    assert missed_figure("It has 2 processors.", processors, [stats]) is None
    # Nor is another named figure of the results (the fresh set's run at cbdd3ca: "2.5",
    # memory's figure without its "%"), nor a number the results hold nowhere (its run at
    # 8e4abe6: "2.5" with the CPU at 0.0%, flagged as invented and kept; now it misses the
    # count and gives way).
    with_memory = stats.replace("memory 2.7%", "memory 2.5%")
    assert missed_figure("2.5", processors, [with_memory]) == "cpus"
    assert missed_figure("2.5 and 2", processors, [with_memory]) is None
    assert missed_figure("It has 16.", processors, [with_memory]) == "cpus"
    assert missed_figure("2.5\n\nThis is a summary.", processors, [stats]) == "cpus"
    assert missed_figure("It has 2 processors and 16 threads.", processors, [stats]) is None



def test_a_percentage_answers_only_a_figure_written_as_one() -> None:
    # What the bundled model answered with the CPU at 0.0% (answer set, cbdd3ca): "2.0%",
    # which passed as the CPU's figure because the preview's "cpu_count": 2 names the CPU
    # too; and "2.0% CPU cores" for how many cores, a percentage passing as the count.
    stats = ("[system_stats] cpu 0.0%, memory 2.4%, disk 22.8% (/), uptime 0h 22m, 2 CPUs, "
             "memory free 23.0 of 23.5 GiB")
    preview = '{"cpu_percent": 0.0, "cpu_count": 2, "memory_percent": 2.4}'
    busy = "How busy is this computer's CPU right now?"
    answer = "2.0%\n\nThe CPU is currently 2.0% busy."
    assert missed_figure(answer, busy, [stats, preview]) == "cpu"
    assert gives_way(check_answer(answer, results=[stats, preview], user=[busy]), True)
    cores = "How many CPU cores does this machine have?"
    answer = "The machine has 2.0% CPU cores."
    assert missed_figure(answer, cores, [stats, preview]) == "cpus"
    assert misattributed_numbers(answer, [stats, preview]) == ["2.0"]
    # Only the asked name's percentages: memory at 2.0% does not make "2.0%" the CPU's
    # (found in review).
    memory_at_2 = stats.replace("memory 2.4%", "memory 2.0%")
    assert missed_figure("The CPU is 2.0% busy.", busy, [memory_at_2, preview]) == "cpu"
    # A question about a share asks for the percentage however the answer writes it: what
    # `callgate chat` answered to "How busy is the CPU right now?" (78598d1), the CPUs' 2.
    assert missed_figure("2", busy, [stats, preview]) == "cpu"
    assert missed_figure("0.0", busy, [stats, preview]) is None
    assert missed_figure("2", "How many CPUs are there?", [stats, preview]) is None
    for fine, question in [("0.0%", busy), ("The CPU is idle at 0%.", busy),
                           ("It has 2 CPU cores.", cores), ("2.4%", "How much memory is used?"),
                           ("It has 2 CPUs and the CPU is at 0.0%.", cores)]:
        assert missed_figure(fine, question, [stats, preview]) is None, fine
        assert misattributed_numbers(fine, [stats, preview]) == [], fine


def test_a_results_number_given_to_the_wrong_name_gives_way_to_the_results() -> None:
    # What the bundled model answered to the README's question with the CPU at 2.4%: each
    # number is one of the results', but "2.6% disk" is memory's, and "2.6% load" no load.
    def system_stats() -> dict[str, Any]:
        """CPU, memory and disk usage of this computer."""
        return {"cpu_percent": 2.4, "memory_percent": 2.6, "disk_percent": 23.1,
                "load_average": [0.63, 0.16, 0.05]}

    answer = "2.4% CPU, 2.6% RAM, 2.6% disk, 2.6% load, 0.63% load"
    out = run([tool_call("system_stats", {}), AIMessage(answer)], [system_stats],
              "How busy is this computer's CPU right now?")
    assert out["answer_source"] == "results"
    assert "numbers given to a name the results give another: 2.6" in out["answer_checks"]
    assert out["final_answer"].startswith("Here is what the tools returned: [system_stats]")
    summary = "[system_stats] cpu 2.4%, memory 2.6%, disk 23.1% (/), load 0.63 0.16 0.05, up 3m"
    assert misattributed_numbers(answer, [summary]) == ["2.6"]
    # Each number next to its own name, in either order, or next to a name the results do
    # not use ("RAM", "of memory"), or to no name: nothing to say.
    for fine in ("cpu 2.4%, memory 2.6%, disk: 23.1%, load 0.16", "2.4% CPU, 23.1% disk",
                 "2.6% RAM", "2.4% CPU, 2.6% of memory", "The CPU is at 2.4% now",
                 "up 3 minutes", "cpu 2.4%, memory 2.6%"):
        assert misattributed_numbers(fine, [summary]) == [], fine
    # "is" between a name and its percentage: "The disk is 2.6%" (memory's) was read as
    # no name's; "is at", "usage is" the same.
    assert misattributed_numbers("The disk is 2.6% full.", [summary]) == ["2.6"]
    assert misattributed_numbers("Disk usage is at 2.6%.", [summary]) == ["2.6"]
    for fine in ("The disk is 23.1% full and memory is 2.6%.", "Disk usage is at 23.1%.",
                 "It is 2.6%.", "The machine is 2.4% busy."):
        assert misattributed_numbers(fine, [summary]) == [], fine
    # A number no result holds is an invented one, not this check's.
    assert misattributed_numbers("disk 99%", [summary]) == []
    # A number glued to a unit the results glue to other numbers only: the bundled model
    # answered "How long has this machine been up?" with "2h 9m, 2 CPUs" for "up 4h 9m".
    uptime = "[system_stats] cpu 0.0%, memory 2.7%, load 0.89 1.15 0.99, up 4h 9m, 2 CPUs"
    assert misattributed_numbers("2h 9m, 2 CPUs", [uptime]) == ["2"]
    for fine in ("up 4h 9m", "4 hours", "16GB of 2 CPUs"):  # its own, spelt out, unknown
        assert misattributed_numbers(fine, [uptime]) == [], fine
    # The unit spelt out is that unit ("How long has this computer been running?" answered
    # "2 hours 22.9 seconds." at c4d466e: the CPUs and the disk's percentage).
    assert misattributed_numbers("2 hours 22.9 seconds.", [uptime]) == ["2"]
    assert misattributed_numbers("It has been up 4 hours and 9 minutes.", [uptime]) == []
    # A name with a number of its own after it is that number's: a date is not "12 March".
    news = "[web_search] Falcon X9 on sale from 12 March 2027; March 2027 sales"
    assert misattributed_numbers("It goes on sale on 12 March 2027.", [news]) == []
    # Only percentages are read: a unit, a month or a version after or before a number is
    # not its name (ordinary answers the review tried).
    for answer, result in [
            ("100 USD is 92.5 EUR.", "100 USD = 92.5 EUR"),
            ("Python 3.13.1 was released on December 3, 2024.",
             "Python 3.13.1 released 3 December 2024"),
            ("The latest is Python 3.13.1.", "Python 3.12.8 and 3.13.1"),
            ("There are 10 sick days and 25 days of annual leave.",
             "25 days of annual leave and 10 sick days"),
            ("Wind in Paris: 12 km/h, 18°C.", "Paris 18°C, wind 12 km/h"),
            ("Growth was 7% in 2024 and 5% in 2023.", "growth 7% in 2024, 5% in 2023")]:
        assert misattributed_numbers(answer, [result]) == [], answer
    # "Of the total" between the percentage and the name (answer set, ab0938b: "2 CPUs, 2.4%
    # of the total CPU cores, 2.4% of the total memory, 2.4% of the total disk").
    assert misattributed_numbers("2.6% of the total disk", [summary]) == ["2.6"]
    assert misattributed_numbers("2.6% of the memory, 23.1% of disk", [summary]) == []
    # Or "of the available" (`callgate ask "Which processes use the most memory?"`, 9eb6dbc:
    # "The system uses 2.5% of the available CPU cores.", the memory's 2.5%).
    assert misattributed_numbers("It uses 2.6% of the available disk.", [summary]) == ["2.6"]
    assert misattributed_numbers("23.1% of the available disk", [summary]) == []
    # A name on the line before is not the number's.
    assert misattributed_numbers("Memory\n23.1% of disk used", [summary]) == []


def test_a_line_labelled_with_another_names_figure_gives_way_to_the_results() -> None:
    # What the bundled model answered to "What is the CPU usage of this machine at the
    # moment?" (answer set, f8cea6f): every number is the results', but on lines labelled
    # with a name the results give other numbers ("Load: 252.0 GiB" is the disk's size).
    stats = ("[system_stats] cpu 0.0%, memory 2.4%, disk 22.4% (/), load 0.92 0.3 0.37, up "
             "10h 50m, 2 CPUs, memory free 23.0 of 23.5 GiB, disk free 78.7 of 252.0 GiB")
    answer = ("System_Stats:\nCPU usage: 0.0%\nMemory usage: 2.4%\nDisk usage: 22.4%\n"
              "Load: 0.92%\nUp 10h 50m\nLoad: 252.0 GiB\nDisk: 78.7 GiB\n"
              "Disk usage: 252.0 GiB\nDisk usage: 78.7 GiB")
    assert misattributed_numbers(answer, [stats]) == ["252.0", "78.7"]
    check = check_answer(answer, results=[stats], user=["What is the CPU usage?"])
    assert gives_way(check, True)
    # Each on its own label's line, with a bullet, or a label the results do not use.
    for fine in ("Load: 0.92\nMemory free: 23.0 GiB\nDisk free: 78.7 GiB",
                 "- Load: 0.92 0.3 0.37\n- CPUs: 2", "Size: 252.0 GiB", "Total = 23.5 GiB",
                 "Uptime: 0 days, 10 hours and 50 minutes"):
        assert misattributed_numbers(fine, [stats]) == [], fine
    # The words after the number name it, where the line's label does not.
    assert misattributed_numbers("Paris: 12 km/h winds", ["Paris 18°C, wind 12 km/h"]) == []
    assert misattributed_numbers("Paris: 12 degrees", ["Paris 18°C, wind 12 km/h"]) == ["12"]
    # A label inside a sentence need not be the number's name.
    assert misattributed_numbers("Wind in Paris: 12 km/h, 18°C.",
                                 ["Paris 18°C, wind 12 km/h"]) == []
    assert misattributed_numbers("It is sunny in Paris: 12 km/h of wind.",
                                 ["Paris 18°C, wind 12 km/h"]) == []


def test_how_long_asks_for_a_figure_written_with_a_unit_of_time() -> None:
    # What the bundled model answered to "How long has this computer been running?", asked
    # as a new user would (c4d466e): a percentage, with system_stats' uptime in the results.
    stats = "[system_stats] cpu 0.0%, memory 2.4%, disk 22.9% (/), uptime 15h 2m, 2 CPUs"
    question = "How long has this computer been running?"
    answer = "The computer has been running for 2.4% of the total available resources."
    assert missed_figure(answer, question, [stats]) == "duration"
    assert gives_way(check_answer(answer, results=[stats], user=[question]), True)
    for fine in ("15 hours and 2 minutes", "It has been up 15h 2m.", "A long while."):
        assert missed_figure(fine, question, [stats]) is None, fine
    recipe = "Bake the lemon cake at 175 degrees Celsius for 40 minutes."
    assert missed_figure("175 degrees", "How long does the lemon cake bake?", [recipe]) == (
        "duration")
    assert missed_figure("40 minutes", "How long does the lemon cake bake?", [recipe]) is None
    # Results without a unit of time leave "how long" to the other rules.
    assert missed_figure("2.4%", "How long is the queue?", ["[jobs] 12 waiting"]) is None


def test_a_results_figure_counting_what_the_results_count_with_another_gives_way() -> None:
    # What the bundled model answered to "How many CPUs does this computer have?" (answer
    # set, 65e865d): "2.5 CPUs" where the results say "memory 2.5%, … 2 CPUs"; a "2" at its
    # end held the count, so no other check saw it.
    stats = ("[system_stats] cpu 0.0%, memory 2.5%, disk 22.7% (/), load 0.52 0.25 0.39, up "
             "14h 42m, 2 CPUs, memory free 23.0 of 23.5 GiB, disk free 78.5 of 252.0 GiB")
    answer = "2.5\n\nThe computer has 2.5 CPUs, 2.5 GiB of RAM, 252.0 GiB of disk, 2"
    assert misattributed_numbers(answer, [stats]) == ["2.5"]
    check = check_answer(answer, results=[stats], user=["How many CPUs does it have?"])
    assert gives_way(check, True)
    # The count's word written short (answer set at a9c3176, the load average 2.17 when the
    # machine had been busy): "2.17 CPU cores" where the results say "load … 2.17, 2 CPUs".
    busy = stats.replace("0.52 0.25 0.39", "0.61 1.28 2.17")
    assert misattributed_numbers("The computer has 2.17 CPU cores, 2.", [busy]) == ["2.17"]
    # A whole number before a short word need not count what the results count (found in
    # review: "1 CPU is busy" beside a load of 1.28).
    assert misattributed_numbers("The load is 2.17, so about 1 CPU is busy out of 2 CPUs.",
                                 [busy]) == []
    recipe = "Bake the lemon cake at 175 degrees Celsius for 40 minutes. It needs 3 eggs."
    assert misattributed_numbers("It bakes at 40 degrees for 175 minutes.", [recipe]) == [
        "40", "175"]
    # Its own count, singular or plural; a unit of three letters or fewer shared by several
    # numbers ("23.0 of 23.5 GiB": 23.0 GiB free); a word the results count nothing with.
    for fine, result in [("It has 2 CPUs and 23.0 GiB free.", stats), ("2 CPU cores", stats),
                         ("It bakes for 40 minutes at 175 degrees.", recipe),
                         ("Use 3 eggs, bake 40 minutes.", recipe),
                         ("There are 10 sick days and 25 days of annual leave.",
                          "25 days of annual leave and 10 sick days"),
                         ("It ships on 14 March for 48,000 euros.",
                          "Its budget is 48,000 euros and it ships on 14 March."),
                         # the number's count is the word after the next ("10 sick days")
                         ("You get 10 days of sick leave.",
                          "25 days of annual leave and 10 sick days")]:
        assert misattributed_numbers(fine, [result]) == [], fine
    # A word after the count's own clears a count, but counts nothing by itself (found in
    # review: "1.37 million people" made Tallinn's 461,000 people give way).
    towns = ("[web_search] results: Tallinn has 461,000 inhabitants | Estonia: 1.37 million "
             "people live in Estonia")
    answer = "About 461,000 people live in Tallinn."
    assert misattributed_numbers(answer, [towns]) == []
    assert missed_figure(answer, "How many people live in Tallinn?", [towns]) is None
    # A spelt-out unit on a number no result holds is invented, not misattributed.
    assert misattributed_numbers("The load over the last 1, 5 and 15 minutes is low.",
                                 [stats]) == []


def test_a_last_sentence_the_token_budget_cut_short_is_removed() -> None:
    # What the bundled model answered to "What percentage of memory is in use right now?"
    # (answer set, f8cea6f and f3e7df0): the figure, then a sentence it had no tokens left
    # to finish.
    assert drop_unfinished("2.4%\n\nThe reason for the") == ("2.4%", True)
    assert drop_unfinished("2.\n\nThe machine has") == ("2.", True)  # 61a57a8's set
    assert drop_unfinished("The CPU is at 2.4%. It is low and [R1]") == (
        "The CPU is at 2.4%.", True)
    check = check_answer("2.4%\n\nThe reason for the", results=["[system_stats] memory 2.4%"],
                         user=["What percentage of memory is in use?"])
    assert check.text == "2.4%" and "unfinished sentence removed" in check.notes
    # A lone sentence with a figure loses only its open end (the bundled model's "How full
    # is the disk of this computer?", answer set at 0780a52, with memory at 2.5%).
    assert drop_unfinished("2.5% of 23.7% of 252.0 GiB of") == (
        "2.5% of 23.7% of 252.0 GiB", True)
    assert drop_unfinished("It is 12 and") == ("It is 12", True)
    assert drop_unfinished("Load 0.5 (low) and the") == ("Load 0.5 (low)", True)
    # A finished sentence, one that ends on a content word, a lone sentence without a
    # figure (all there is), or the rest of an address after its dot: kept.
    for fine in ("It is 12.", "The answer is 391", "It is the", "2.4%\n\nMemory is low",
                 "See https://example.org/the", "192.168.1.1/the",
                 "2.4%\n\nThe machine is switched on", "2.4%. You may want to work on this",
                 "2.4%\n\nIt is time to upgrade to"):
        assert drop_unfinished(fine) == (fine, False), fine
    # A last line that is a label with nothing after it (`callgate chat` at 78598d1:
    # "2\n\nSystem_Stats: 2\nSystem_Stats:"), not a label whose value follows.
    assert drop_unfinished("2\n\nSystem_Stats:") == ("2", True)
    assert drop_unfinished("2.4%\n- Disk usage:") == ("2.4%", True)
    for fine in ("Memory:", "It is 2. Reason:", "Load:\n0.5"):
        assert drop_unfinished(fine) == (fine, False), fine
    # A last sentence holding a figure loses only the words that leave it open.
    assert drop_unfinished("The CPU is idle. Memory usage is 2.4% of the") == (
        "The CPU is idle. Memory usage is 2.4%", True)


def test_sentences_about_a_tools_record_are_removed() -> None:
    # What the bundled model answered to a fresh-set memory question (f3e7df0): the figure,
    # then sentences about the summary's "[system_stats]" tag, one of them made up.
    stats = "[system_stats] cpu 0.0%, memory 2.7%, disk 22.6% (/)"
    answer = ("2.7%\n\nThis is a summary of the results of the [system_stats] command. The "
              "[system_stats] command is available in all Linux distributions.")
    assert drop_tool_talk(answer, [stats]) == ("2.7%", True)
    check = check_answer(answer, results=[stats], user=["How much memory is used?"])
    assert check.text == "2.7%" and "sentences about a tool's record removed" in check.notes
    # A sentence with a figure stays ("The [system_stats] summary gives 2.7%." is talk
    # about the record, but holds the answer); so does an answer that is nothing but such
    # talk, a tag no result has, and a sentence that names the tool to answer with it.
    for fine in ("[system_stats] memory 2.7%, so it is low.",
                 "2.7%. The [system_stats] summary gives 2.7%.",
                 "The [system_stats] command says nothing.", "2.7%. See [calculator] too."):
        assert drop_tool_talk(fine, [stats]) == (fine, False), fine
    search = "[web_search] Paris - Wikipedia: Paris is the capital of France."
    answer = "Paris. According to [web_search], Paris is the capital of France."
    assert drop_tool_talk(answer, [search]) == (answer, False)
    # A reply copying a summary line is seen as one before its tool talk goes.
    check = check_answer("[web_search] results:\nParis is big.", results=[search],
                         user=["What is the capital of France?"])
    assert check.copied_summary and gives_way(check, True)


def test_arithmetic_that_does_not_hold_gives_way_to_the_results() -> None:
    # What the bundled model answered to "What is 1234 + 5678?" (answer set, f8cea6f): the
    # result, then sums that are false, one of them with a number no result holds.
    answer = "6912 + 5678 = 1234 + 5678 = 1234.5678"
    assert false_equations(answer) == ["6912 + 5678 = 1234 + 5678", "1234 + 5678 = 1234.5678"]
    out = run([tool_call("calculator", {"expression": "1234 + 5678"}), AIMessage(answer)],
              [calculator], "What is 1234 + 5678?")
    assert out["answer_source"] == "results"
    assert any(n.startswith("arithmetic that does not hold: 6912 + 5678 = 1234 + 5678")
               for n in out["answer_checks"])
    # True arithmetic, a rounded result, words around it, or no arithmetic at all: nothing.
    for fine in ("17 * 23 = 391", "1234 + 5678 = 6912.", "100 / 3 = 33.33", "2^10 = 1024",
                 "(12 + 8) * 3 = 60", "sqrt(2) = 1.41421", "15% of 80 = 12", "7 cubed = 343",
                 "x = 5", "Set a = 2 and b = 3.", "The date is 2026-11-28.", "1,234 + 1 = 1,235",
                 "12.5% = 0.125"):
        assert false_equations(fine) == [], fine
    assert false_equations("The answer: 2 + 2 = 5.") == ["2 + 2 = 5"]
    assert false_equations("100 / 3 = 33.4") == ["100 / 3 = 33.4"]  # not a rounding of it
    assert false_equations("12 + 8 * 3 = 60") == ["12 + 8 * 3 = 60"]  # as written: 36
    # A word before the equation is read past unless it is an operator's.
    assert false_equations("The answer is 1234 + 5678 = 1234.5678") == [
        "1234 + 5678 = 1234.5678"]
    # A list's bullet, a time, a percentage or a leading point as a rounded side, a span of
    # years: not false arithmetic.
    for fine in ("- 17 * 23 = 391", "+ 17 * 23 = 391", "7:45 + 15 = 8:00", "2 / 3 = 66.7%",
                 "2/3 = .67", "2020 - 2025 = 5 years", "sqrt(16) = 4", "3 times 4 = 12"):
        assert false_equations(fine) == [], fine
    assert false_equations("- 2 + 2 = 5") == ["2 + 2 = 5"]


def test_arithmetic_written_in_words_is_checked_too() -> None:
    # A user walkthrough, chat mode: "45 minus 18 equals 21." was not flagged.
    assert false_equations("45 minus 18 equals 21.") == ["45 minus 18 equals 21"]
    assert false_equations("6 times 7 is 43, I think.") == ["6 times 7 is 43"]
    assert false_equations("2 plus 2 is 4 and 3 plus 3 is 7") == ["3 plus 3 is 7"]
    for fine in ("45 minus 18 equals 27.", "6 times 7 is 42, I think", "10 divided by 4 is 2.5",
                 "1,000 plus 1 is 1,001", "100 divided by 3 is 33.33", "I ran 5 times 3 is odd",
                 "2 multiplied by 8 makes 16",
                 # a chain's last step, a range, algebra, another base or a modulus (a review)
                 "2 plus 3 times 4 is 14.", "10 minus 2 minus 3 is 5", "1 plus 2 plus 3 equals 6",
                 "2 times 3 times 4 is 24", "2 to 3 times 4 is 8 to 12",
                 "So 2x + 3 = 7, so 2x = 4 and x = 2.", "1 + 1 = 10 in binary.", "10 mod 3 = 1",
                 "7 + 5 = 0 (mod 12)", "√16 = 4", "e^1 = 2.718"):
        assert false_equations(fine) == [], fine


@pytest.mark.parametrize("answer", ["17 * 23 = 341", "17 times 23 is 341."])
def test_false_arithmetic_without_a_result_is_not_handed_on(answer: str) -> None:
    # Scripted model: a user walkthrough's `callgate ask "What is 17 times 23?" --no-grammar`
    # answered "17 * 23 = 341" without calling the calculator; the check flagged it, and the
    # answer still reached the user with status done.
    out = run([AIMessage(answer)], [calculator], "What is 17 times 23?")
    assert out["final_answer"].startswith(
        "I could not answer: the model's arithmetic does not hold (17")
    assert "341" not in out["final_answer"].split("(")[0]
    assert out["answer_source"] == "loop"
    assert "an answer whose arithmetic does not hold, with no result, removed" in out[
        "answer_checks"]


def test_false_arithmetic_on_other_numbers_without_a_result_stays_flagged() -> None:
    # Scripted model: an equation on numbers the user did not give is flagged, the answer
    # kept (a review: a step of algebra read as "3 = 7" had replaced a right answer).
    out = run([AIMessage("A spider has 4 + 4 = 9 legs.")], [calculator],
              "How many legs does a spider have?")
    assert out["final_answer"].startswith("A spider has 4 + 4 = 9 legs.")
    assert out["answer_source"] == "model"
    assert any(n.startswith("arithmetic that does not hold: 4 + 4 = 9")
               for n in out["answer_checks"])


def test_a_result_too_long_for_a_float_vouches_for_no_number() -> None:
    # What the bundled model answered to "What is 2^1000 * 2^1000?" (2026-11-29, e57c3f0):
    # the first 190 digits of the 603-digit result. The result read as an infinity, which
    # every number was "near", so nothing was flagged.
    result = f"[calculator] = {2 ** 2000}"
    answer = str(2 ** 2000)[:185] + "824004"
    assert invented_numbers(answer, [result]) == [answer]
    assert invented_numbers(str(2 ** 2000), [result]) == []  # the whole of it, digit for digit
    wrong = str(2 ** 2000)[:-1] + "7"
    assert invented_numbers(wrong, [result]) == [wrong]
    # So is any whole number longer than a float holds (found in review: 2^1000, 302
    # digits, passed with its last 290 digits wrong), but near a figure written as a float.
    result = f"[calculator] = {2 ** 1000}"
    for wrong in (str(2 ** 1000)[:12] + "9" * 290, str(2 ** 1000)[:-1] + "7"):
        assert invented_numbers(wrong, [result]) == [wrong]
    assert invented_numbers("121,932,631,112,635,269", ["= 121932631112635269"]) == []
    assert invented_numbers("121932631112635000", ["= 1.21932631112635e+17"]) == []
    # A long number rounded into scientific notation is that number (found in review).
    result = f"[calculator] = {2 ** 2000}"
    for fine in ("about 1.148 × 10^602", "about 1.15 x 10^602", "1.148e602"):
        assert invented_numbers(fine, [result]) == [], fine
    assert invented_numbers("about 1.2 × 10^603", [result]) == ["1.2", "10", "603"]


def test_arithmetic_too_large_to_work_out_does_not_hang_and_equals_no_number() -> None:
    # An equation whose side overflows a float or would take minutes to write out (found in
    # review): the check returns at once, and such a side equals no number written out
    # (`callgate ask "What is 66 squared?"` was answered "4356 = 66^4356", unflagged: the
    # side was not read).
    for huge in ("2^1000 * 2^1000 = 5", "10^400 = 1", "((9^999)^999)^999 = 1",
                 "10.0^400 = 1", "4356 = 66^4356"):
        assert false_equations(huge) == [huge], huge
        assert check_answer(huge, results=["[calculator] = 5"], user=["?"]).text == huge
    assert false_equations("1" * 5000 + " = 2") == []  # a long run, in bounded time
    # Two sides past a float's range are not told apart; slow to work out is not large.
    assert false_equations("66^4356 = 67^4356") == [] and false_equations("1 = 1^5000") == []


def test_an_answer_without_the_figure_asked_about_gives_way_to_the_results() -> None:
    # What the bundled model answered to the answer-quality set's disk and memory questions
    # (141b3fe): the first percentage of the summary, whatever the question named.
    def system_stats() -> dict[str, Any]:
        """CPU, memory and disk usage of this computer."""
        return {"cpu_percent": 2.0, "cpu_count": 2, "memory_percent": 5.8,
                "disk_percent": 23.1}

    out = run([tool_call("system_stats", {}),
               AIMessage("2.0%\n\nThe disk of this computer is 2.0% full.")],
              [system_stats], "How full is the disk of this computer?")
    assert out["answer_source"] == "results"
    assert "the answer gives no disk figure of the results" in out["answer_checks"]
    assert "disk_percent: 23.1" in out["final_answer"]
    out = run([tool_call("system_stats", {}), AIMessage("The disk is 23.1% full [R1].")],
              [system_stats], "How full is the disk of this computer?")
    assert out["answer_source"] == "model" and out["answer_checks"] == []
    summary = "[system_stats] cpu 2.0%, memory 5.8%, disk 23.1% (/), load 0.5 0.3 0.2, 2 CPUs"
    for question, answer, missed in [
            ("What percentage of memory is in use right now?", "2.0%", "memory"),
            ("What percent of memory is in use?", "2.0% [R1]", "memory"),
            ("What percentage of memory is in use right now?", "About 6% [R1].", None),
            ("How many CPUs does this computer have?", "It has 2 CPUs.", None),  # after it
            ("How many CPUs does this computer have?", "It has 5.8 CPUs.", "cpus"),
            ("How busy is the CPU?", "The CPU is busy.", None),  # no number stated
            ("Is it busy?", "2.0% now", None),  # no figure named
            ("How much memory and disk are in use?", "Disk: 23.1%", None)]:  # one of them
        assert missed_figure(answer, question, [summary]) == missed, (question, answer)
    # Two names ask for the figure both name, here through the preview's keys: SmolLM2
    # answered "How much free memory is there?" with the memory used.
    summary = "[system_stats] cpu 0.0%, memory 2.8%, disk 22.3% (/), 2 CPUs, " \
              "memory free 22.9 of 23.5 GiB, disk free 78.8 of 252.0 GiB"
    preview = json.dumps({"cpu_percent": 0.0, "memory_percent": 2.8, "memory_free_gib": 22.9,
                          "memory_total_gib": 23.5, "disk_percent": 22.3,
                          "disk_free_gib": 78.8, "disk_total_gib": 252.0})
    for question, answer, missed in [
            ("How much free memory is there?", "2.8%", "free memory"),
            ("How much free memory is there?", "78.8 GiB", "free memory"),  # the disk's
            ("How much free memory is there?", "22.9 GiB of 23.5 GiB [R1]", None),
            ("How much disk space is free?", "22.3%", "disk free"),
            # one name asks for any of its figures: the percentage used or a size
            ("How full is the disk of this computer?", "22.3% [R1]", None),
            ("How full is the disk of this computer?", "78.8 GiB of 252.0 GiB", None),
            ("How much memory does this computer have?", "23.5 GiB", None),
            ("How big is the disk?", "252 GiB", None),
            # A question about how much a thing has asks for its size: `callgate ask "How
            # much RAM does this machine have?"` was answered "2.5%", the memory in use.
            ("How much memory does this computer have?", "2.8%", "memory total"),
            ("How much memory does this computer have?", "22.9 GiB", "memory total"),
            ("How big is the disk?", "22.3%", "disk total"),
            ("What size is the disk?", "78.8 GiB", "disk total"),
            ("How much free memory does it have?", "22.9 GiB [R1]", None),  # free stays free
            ("How much free memory does it have?", "23.5 GiB", "free memory"),
            ("How much memory is in use?", "2.8%", None),
            # A part of it, not its size (a review's cases).
            ("How much memory has been used?", "2.8%", None),
            ("How much disk space do I have left?", "78.8 GiB left [R1]", None),
            ("How much memory does it have available?", "22.9 GiB", None),
            ("How large is the memory usage?", "2.8%", None),
            ("How full is the disk of this computer?", "2.8%", "disk"),  # the memory's
            ("How much disk space is free?", "About 79 GiB.", None),
            ("What percent of memory is in use?", "2.8%", None),
            ("How much memory and disk are in use?", "Disk: 22.3%", None)]:
        assert missed_figure(answer, question, [summary, preview]) == missed, (question, answer)
    # The figures the question gives are the call's inputs, not what it asks for.
    call = '{"expression": "7 cubed"}'
    assert missed_figure("343", "What is 7 cubed?", ["[calculator] = 343", call]) is None


def test_the_question_the_checks_read_is_the_users_not_a_loop_correction() -> None:
    # The correction round speaks to the model as a human message; the checks (and the ReAct
    # path's "request") read what the user wrote.
    from callgate.tools.grounding import CORRECTION_MARK, user_texts

    messages = [HumanMessage("How full is the disk?"), AIMessage("..."),
                HumanMessage("The Final Answer was empty. Write the answer for the user after "
                             "the label.", additional_kwargs=CORRECTION_MARK)]
    assert user_texts(messages) == ["How full is the disk?"]


def test_a_failed_calls_long_error_is_cut_short_in_the_answer_and_kept_whole_in_the_event(
) -> None:
    # ddgs's DNS failure ran to a whole query record in the answer ("… Query { name:
    # Name(\"html.duckduckgo.com.\"), query_type: A, … }"); the answer gives its first line.
    record = "DNSError: error resolving DNS > no records found for " + "Query { name } " * 30

    web_search = failing_web_search(record + "\nsecond line")
    out = run([tool_call("web_search", {"query": "Python release"}), AIMessage("")],
              [web_search], "Search the web for the latest Python release")
    answer = out["final_answer"]
    assert answer.startswith("I could not answer: the call to web_search did not complete")
    assert answer.endswith(" …).") and "second line" not in answer and len(answer) < 300
    assert "second line" in out["problems"][0]["error"]


def test_a_failed_calls_error_that_heads_its_reason_keeps_the_reason_in_the_answer() -> None:
    # pydantic's error names the model on its first line and the field and reason on the
    # lines after: the first line alone told the user nothing of what went wrong.
    from pydantic import BaseModel

    class Forecast(BaseModel):
        city: str
        days: int

    def weather(city: str) -> str:
        """The forecast for a city."""
        return Forecast.model_validate({"city": city}).model_dump_json()

    out = run([tool_call("weather", {"city": "Paris"}), AIMessage("")],
              [weather], "What is the weather in Paris?")
    answer = out["final_answer"]
    assert "1 validation error for Forecast: days Field required" in answer, answer
    assert len(answer) < 300
    # Several fields: each reason, without pydantic's "[type=…]" detail and link (review).
    from callgate.graph.cite import _brief

    try:
        Forecast.model_validate({"city": 3})
    except ValueError as exc:
        brief = _brief(f"{type(exc).__name__}: {exc}")
    assert brief == ("ValidationError: 2 validation errors for Forecast: city Input should be a "
                     "valid string days Field required")


def test_an_answer_restating_a_refused_value_gives_way_to_the_refusal() -> None:
    # Scripted model: the bundled model's reply to `callgate ask "How many grams are in 3
    # pounds?"` (2026-11-30, 35e54b9): grounding refused "3.00g into acres", and the model
    # answered with it — no number invented (3 is the question's), so it had stood.
    script = [tool_call("calculator", {"expression": "3.00g into acres"}),
              AIMessage("3.00g into acres.")]
    agent = build_agent(ScriptedChatModel(script=script), [calculator], grounding=True)
    out = agent.invoke({"messages": [HumanMessage("How many grams are in 3 pounds?")]})
    assert out["final_answer"].startswith("I could not answer: 'calculator' was called with "
                                          "values that appear nowhere in the conversation")
    assert out["answer_source"] == "loop"
    assert "an answer restating a refused call's value removed" in out["answer_checks"]


def _refused_then(answer: str, tool: Any, value: str, question: str) -> dict[str, Any]:
    # Scripted model: a call grounding refuses for an invented value, then an answer.
    script = [tool_call(tool.__name__, {"name": value}), AIMessage(answer)]
    agent = build_agent(ScriptedChatModel(script=script), [tool], grounding=True)
    return agent.invoke({"messages": [HumanMessage(question)]})


def get_wifi_password(name: str) -> str:
    """The Wi-Fi password of a network."""
    return "hunter2"


def author_of(name: str) -> str:
    """Facts about an author."""
    return "a writer"


def test_an_answer_stating_a_refused_string_says_no_tool_gave_it() -> None:
    # The bundled model's run of `callgate ask "What is the Wi-Fi password of the network
    # guest?"` with a get_wifi_password tool (2026-12-02, a user walkthrough): grounding
    # refused the invented network 'Ghosting', and the model then told it as fact.
    out = _refused_then('The Wi-Fi password of the network guest was set to "Ghosting" by '
                        "the user.", get_wifi_password, "Ghosting",
                        "What is the Wi-Fi password of the network guest?")
    assert out["final_answer"].startswith(
        "(Not from a tool: the call to get_wifi_password was refused, its value 'Ghosting' "
        "appearing nowhere in the conversation, so this is the model's own answer.)\n\nThe "
        "Wi-Fi password")
    assert "the answer states a refused call's value: 'Ghosting'" in out["answer_checks"]
    # The model may know the value (a review: a refused "Shakespeare", then a right answer):
    # the answer stays, with the note.
    out = _refused_then("Hamlet was written by William Shakespeare.", author_of,
                        "Shakespeare", "Who wrote Hamlet?")
    assert out["final_answer"].endswith("Hamlet was written by William Shakespeare.")
    assert out["final_answer"].startswith("(Not from a tool: the call to author_of")
    # An answer that states no refused value has no note.
    out = _refused_then("I do not know the password of the network guest.", get_wifi_password,
                        "Ghosting", "What is the Wi-Fi password of the network guest?")
    assert out["final_answer"].startswith("I do not know the password")
    assert out["answer_source"] == "model"


def test_a_two_word_loop_label_at_the_end_never_reaches_the_user() -> None:
    # Scripted model: an answer that starts the reply format again after its content.
    out = run([AIMessage("It is 15 degrees in Paris. FINAL ANSWER:")], [system_stats],
              "What is the weather in Paris?")
    assert out["final_answer"] == "It is 15 degrees in Paris."
    assert "answer label removed" in out["answer_checks"]


def test_an_answer_with_invented_numbers_after_a_refused_call_gives_way_to_the_refusal(
) -> None:
    # Scripted model: the bundled model's reply to `callgate ask "Compute the tax on my
    # salary with the calculator"`. Grounding refused its call, and answering the refusal it
    # wrote the refused value as the answer, which no result holds.
    def run_refused(answer: str) -> dict[str, Any]:
        script = [tool_call("calculator", {"expression": "1.00000000000000001"}),
                  AIMessage(answer)]
        agent = build_agent(ScriptedChatModel(script=script), [calculator], grounding=True)
        return agent.invoke({"messages": [HumanMessage(
            "Compute the tax on my salary with the calculator")]})

    out = run_refused("1.00000000000000001")
    assert out["final_answer"] == (
        "I could not answer: 'calculator' was called with values that appear nowhere in the "
        "conversation (expression='1.00000000000000001').")
    assert out["answer_source"] == "loop"  # the refused call, given up, is on record:
    assert [e["outcome"] for e in out["tool_events"]] == ["ungrounded"]
    assert "an answer with invented numbers after a refused call removed" in out["answer_checks"]
    # An answer that states no invented number is the model's to give; so is a figure it
    # worked out itself, not the refused value (found in review), flagged as elsewhere.
    out = run_refused("I need your salary to compute the tax.")
    assert out["final_answer"] == "I need your salary to compute the tax."
    assert out["answer_source"] == "model"
    # An answer with nothing left to say (a citation of no result) gives way to it too.
    out = run_refused("[R9]")
    assert out["final_answer"].startswith("I could not answer: 'calculator' was called")
    assert out["answer_source"] == "loop"
    out = run_refused("There are 86,400 seconds in a day.")
    assert out["final_answer"] == "There are 86,400 seconds in a day."
    assert out["answer_source"] == "model" and out["answer_checks"] == [
        "numbers in no result or question: 86,400"]


def test_a_question_in_other_words_than_the_results_is_read_in_theirs() -> None:
    # Scripted: the bundled model's answer to the fresh answer set's "How much RAM is in
    # use right now?" (2026-11-30, 4dde251): "2.25", the load's figure, which the results
    # hold, so no check saw it — the results name the memory, never "RAM". A tool's
    # synonyms say which of its names a question's word stands for (system_stats':
    # ``SYNONYMS``); the checks and the results' answer read the question so.
    from callgate.tools.builtin.system_stats import SYNONYMS, summarize_stats
    from callgate.tools.registry import ToolRegistry
    from callgate.tools.relevance import in_tool_words

    def stats() -> dict[str, Any]:
        """CPU, memory (RAM) and disk usage of this computer."""
        return {"cpu_percent": 5.0, "cpu_count": 2, "memory_percent": 2.5,
                "memory_free_gib": 20.1, "memory_total_gib": 23.4, "disk_percent": 23.9,
                "disk_free_gib": 70.0, "disk_total_gib": 252.0, "disk_path": "/",
                "load_average": [2.25, 2.1, 1.9]}

    def answered(synonyms: dict[str, str] | None) -> dict[str, Any]:
        registry = ToolRegistry()
        registry.register(stats, name="system_stats", summarizer=summarize_stats,
                          synonyms=synonyms)
        agent = build_agent(ScriptedChatModel(script=[tool_call("system_stats", {}),
                                                      AIMessage("2.25")]), registry)
        return agent.invoke({"messages": [HumanMessage("How much RAM is in use right now?")]})

    out = answered(SYNONYMS)
    assert out["answer_source"] == "results"
    assert out["final_answer"].startswith(
        "Here is what the tools returned: [system_stats] memory 2.5%, memory free 20.1 of "
        "23.4 GiB [R1]")
    assert "the answer gives no memory figure of the results" in out["answer_checks"]
    # Without them the same answer passes: nothing in the question names a result's figure.
    plain = answered(None)
    assert plain["answer_source"] == "model" and plain["final_answer"].startswith("2.25")
    # Whole words only, case aside; the question is otherwise as written.
    assert in_tool_words("How much RAM? Ramp up the cores.", SYNONYMS) == (
        "How much memory? Ramp up the cpus.")
    assert in_tool_words("How much RAM?", {}) == "How much RAM?"


def test_an_answers_words_for_a_result_name_are_read_as_that_name() -> None:
    # Scripted: the bundled model's answer to the README's question on a fresh
    # CALLGATE_HOME (2026-11-30, e0f0cfd): "2.5% CPU, 2.5% RAM, 2.5% SSD, 2.5%", the CPU's
    # figure given to the memory and the disk too. The results name them "memory" and
    # "disk", so "RAM" and "SSD" said nothing to the check; a tool's synonyms read them so.
    from callgate.tools.builtin.system_stats import SYNONYMS, summarize_stats
    from callgate.tools.registry import ToolRegistry

    def stats() -> dict[str, Any]:
        """CPU, memory (RAM) and disk usage of this computer."""
        return {"cpu_percent": 2.5, "cpu_count": 2, "memory_percent": 1.9,
                "memory_free_gib": 23.1, "memory_total_gib": 23.5, "disk_percent": 24.3,
                "disk_free_gib": 76.8, "disk_total_gib": 252.0, "disk_path": "/"}

    def answered(answer: str, synonyms: dict[str, str] | None) -> dict[str, Any]:
        registry = ToolRegistry()
        registry.register(stats, name="system_stats", summarizer=summarize_stats,
                          synonyms=synonyms)
        agent = build_agent(ScriptedChatModel(script=[tool_call("system_stats", {}),
                                                      AIMessage(answer)]), registry)
        return agent.invoke({"messages": [
            HumanMessage("How busy is this computer's CPU right now?")]})

    out = answered("2.5% CPU, 2.5% RAM, 2.5% SSD, 2.5%", SYNONYMS)
    assert out["answer_source"] == "results"
    assert "numbers given to a name the results give another: 2.5" in out["answer_checks"]
    assert out["final_answer"].startswith(
        "Here is what the tools returned: [system_stats] cpu 2.5%")
    # Without them the same answer passes, as it did.
    assert answered("2.5% CPU, 2.5% RAM, 2.5% SSD, 2.5%", None)["answer_source"] == "model"
    # Each figure next to its own name in the answer's words: nothing to say. The answer
    # shown is the model's, as written.
    fine = answered("2.5% CPU, 1.9% RAM, 24.3% SSD.", SYNONYMS)
    assert fine["answer_source"] == "model"
    assert fine["final_answer"].startswith("2.5% CPU, 1.9% RAM, 24.3% SSD.")


def test_a_question_about_how_much_a_thing_has_asks_for_its_size() -> None:
    # Scripted: the bundled model's answer to `callgate ask "How much RAM does this machine
    # have?"` (2026-11-30, 328c550): "2.5%", the memory in use, which passed as a memory
    # figure. A question about how much of a thing there is asks for its total where the
    # results name one; the results' answer gives the memory's fields, the total among them.
    from callgate.tools.builtin.system_stats import SYNONYMS, summarize_stats
    from callgate.tools.registry import ToolRegistry

    def stats() -> dict[str, Any]:
        """CPU, memory (RAM) and disk usage of this computer."""
        return {"cpu_percent": 5.0, "cpu_count": 2, "memory_percent": 2.5,
                "memory_free_gib": 20.1, "memory_total_gib": 23.4, "disk_percent": 23.9,
                "disk_free_gib": 70.0, "disk_total_gib": 252.0, "disk_path": "/"}

    def answered(question: str, answer: str) -> dict[str, Any]:
        registry = ToolRegistry()
        registry.register(stats, name="system_stats", summarizer=summarize_stats,
                          synonyms=SYNONYMS)
        agent = build_agent(ScriptedChatModel(script=[tool_call("system_stats", {}),
                                                      AIMessage(answer)]), registry)
        return agent.invoke({"messages": [HumanMessage(question)]})

    out = answered("How much RAM does this machine have?", "2.5%")
    assert out["answer_source"] == "results"
    assert "the answer gives no memory total figure of the results" in out["answer_checks"]
    assert "memory free 20.1 of 23.4 GiB [R1]" in out["final_answer"]
    for question, answer in [("How much RAM does this machine have?", "It has 23.4 GiB [R1]."),
                             ("How much RAM is in use?", "2.5% [R1]"),
                             ("How much free RAM does it have?", "20.1 GiB [R1]")]:
        out = answered(question, answer)
        assert out["answer_source"] == "model" and out["answer_checks"] == [], question
