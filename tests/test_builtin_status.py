"""builtin_tools: which built-in tools are offered for a given environment, and why not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import callgate.tools.builtin as builtin
from callgate.persistence import callgate_home
from callgate.tools.builtin import BUILTIN_NAMES, BuiltinSettings, builtin_tools
from callgate.tools.index import DocumentIndex
from callgate.tools.registry import ToolRegistry


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A clean environment: no CALLGATE_* settings, an index path with nothing in it."""
    for name in list(os.environ):
        if name.startswith("CALLGATE_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("CALLGATE_INDEX", str(tmp_path / "index.sqlite"))
    return monkeypatch


def statuses() -> dict[str, builtin.BuiltinStatus]:
    return {s.name: s for s in builtin_tools()[1]}


def test_nothing_configured(env: pytest.MonkeyPatch) -> None:
    env.setattr(builtin, "ddgs_installed", lambda: False)
    tools, found = builtin_tools()
    assert [s.name for s in found] == list(BUILTIN_NAMES)
    assert [t.name for t in tools] == ["system_stats", "calculator"]
    by_name = {s.name: s for s in found}
    assert str(by_name["web_search"]) == (
        "web_search: no backend: set CALLGATE_SEARXNG_URL or install ddgs")
    assert "no documents indexed: run `callgate index PATH`" in by_name["rag_search"].reason
    assert "set CALLGATE_IMAGE_URL" in by_name["generate_image"].reason
    assert not any(by_name[n].available for n in BUILTIN_NAMES[:3])
    assert by_name["calculator"].available
    assert by_name["system_stats"].available


def test_ddgs_is_the_default_search_backend(env: pytest.MonkeyPatch) -> None:
    env.setattr(builtin, "ddgs_installed", lambda: True)
    assert statuses()["web_search"].reason == "ddgs (DuckDuckGo)"
    env.setenv("CALLGATE_SEARCH_BACKEND", "searxng")
    status = statuses()["web_search"]
    assert not status.available and "CALLGATE_SEARXNG_URL is not set" in status.reason
    env.setenv("CALLGATE_SEARCH_BACKEND", "bing")
    assert "unknown CALLGATE_SEARCH_BACKEND 'bing'" in statuses()["web_search"].reason


def test_everything_configured(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Some notes worth finding.")
    DocumentIndex(tmp_path / "index.sqlite").add_folder(docs)
    env.setenv("CALLGATE_SEARXNG_URL", "http://127.0.0.1:8888")
    env.setenv("CALLGATE_IMAGE_URL", "http://127.0.0.1:9000/v1")
    env.setenv("OPENAI_API_KEY", "sk-x")
    env.setenv("CALLGATE_IMAGE_DIR", str(tmp_path / "images"))
    env.setenv("CALLGATE_HTTP_TIMEOUT", "3")

    settings = BuiltinSettings.from_env()
    assert settings.search_backend == "auto" and settings.http_timeout_s == 3
    assert settings.image_api == "openai" and settings.image_api_key == "sk-x"
    tools, found = builtin_tools(settings)
    assert all(s.available for s in found), found
    assert [t.name for t in tools] == list(BUILTIN_NAMES)
    assert all(t.source == "builtin" and t.category for t in tools)
    assert found[0].reason == "searxng at http://127.0.0.1:8888"
    assert "1 chunks" in found[1].reason
    assert next(t for t in tools if t.name == "web_search").timeout_s == 8
    registry = ToolRegistry(tools)  # ready to add, names unique
    assert registry.names == list(BUILTIN_NAMES)
    assert not (tmp_path / "images").exists()  # created only when an image is saved


def test_image_backend_problems_are_reported(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("CALLGATE_IMAGE_URL", "http://127.0.0.1:8188")
    env.setenv("CALLGATE_IMAGE_API", "midjourney")
    assert "unknown CALLGATE_IMAGE_API 'midjourney'" in statuses()["generate_image"].reason
    env.setenv("CALLGATE_IMAGE_API", "comfyui")
    assert "set CALLGATE_COMFYUI_WORKFLOW" in statuses()["generate_image"].reason
    env.setenv("CALLGATE_COMFYUI_WORKFLOW", str(tmp_path / "missing.json"))
    status = statuses()["generate_image"]
    assert not status.available and "cannot read the ComfyUI workflow" in status.reason
    workflow = tmp_path / "wf.json"
    workflow.write_text(json.dumps({
        "1": {"class_type": "KSampler", "inputs": {"positive": ["2", 0],
                                                   "latent_image": ["3", 0]}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"text": ""}},
        "3": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512}},
    }))
    env.setenv("CALLGATE_COMFYUI_WORKFLOW", str(workflow))
    assert statuses()["generate_image"].available
    env.setenv("CALLGATE_IMAGE_API", "a1111")
    assert statuses()["generate_image"].reason.startswith("a1111 at http://127.0.0.1:8188")


def test_bad_numbers_in_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("CALLGATE_HTTP_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="CALLGATE_HTTP_TIMEOUT must be a number"):
        BuiltinSettings.from_env()
    assert BuiltinSettings.from_env({}).index_path == callgate_home() / "index.sqlite"


def test_calculator_is_exact_and_safe() -> None:
    from callgate.tools.builtin.calculator import calculator

    assert calculator("17 * 23") == 391
    assert calculator("{17} * 23") == calculator("[17 * 23]") == 391  # brackets group
    assert calculator("2 ^ 10") == 1024
    assert abs(calculator("sqrt(2) / 3") - 0.4714045207910317) < 1e-12
    for bad in ("__import__('os')", "{17: 1}", "2 ** 100000", "True + 1", "1e308 * 10"):
        with pytest.raises(ValueError):
            calculator(bad)
    assert calculator("15% * 80") == 12 and calculator("50%") == 0.5  # percentages
    assert calculator("15 % 4") == 3  # an operand after "%": the remainder
    # operators as a question words them, which small models copy
    assert calculator("144 divided by 16") == 9 and calculator("15% of 80") == 12
    assert calculator("7 cubed") == 343 and calculator("2 to the power of 10") == 1024
    assert calculator("3 squared plus 4 squared") == 25 and calculator("10 mod 3") == 1
    assert calculator("5 mod -3") == -1  # the remainder, not 5% - 3
    assert calculator("sqrt of 16") == 4 and calculator("15% of 80") == 12  # "of" twice
    # "square root" as a question words it; a function "of" a bracket takes the bracket.
    assert calculator("square root of 144") == 12 and calculator("sqrt of (12 + 4)") == 4
    assert calculator("2 * square root of 9 + 1") == 7 and calculator("Square root of 4") == 2
    # beyond fifteen digits a float is rounded: it stays a float, not an exact-looking int
    assert isinstance(calculator("1234567890123456 * 1.0"), float)
    assert repr(calculator("15% of 80")) == "12"  # a whole result reads as one
    # Written as people write it: thousands separators outside a function's arguments,
    # a percentage added to a lone number changes it, "squared" after a power squares it.
    assert calculator("15% of 1,200") == 180 and calculator("1,200 + 2,000,000") == 2001200
    assert calculator("max(1,200)") == 200
    # A comma before an operator closes what came before it, as a sentence groups
    # arithmetic (`callgate ask "What is 100 minus 37, times 2?"`: the calculator refused
    # "100 minus 37, times 2"); not inside a function's arguments, not before a signed number.
    assert calculator("100 minus 37, times 2") == 126
    assert calculator("2 plus 3, times 4, minus 1") == 19 and calculator("3 + 4, * 2") == 14
    assert calculator("max(1, -2)") == 1 and calculator("round(2.567, 2)") == 2.57
    with pytest.raises(ValueError):
        calculator("5, -3")
    # Arithmetic worded as a sentence, two numbers to a verb or noun (`callgate ask "Add 3.5
    # and 4.25"`): a difference is the larger less the smaller.
    assert calculator("Add 3.5 and 4.25") == 7.75 and calculator("add 4 to 6") == 10
    assert calculator("the sum of 12 and 30") == 42 and calculator("Product of 3 and 4") == 12
    assert calculator("the difference between 2020 and 2024") == 4
    assert calculator("Subtract 15 from 100") == 85 and calculator("multiply 6 by 7") == 42
    assert calculator("Divide 144 by 12") == 12 and calculator("quotient of 10 and 4") == 2.5
    assert calculator("add 1,200 and 5") == 1205
    assert calculator("the difference of 3 and 10") == -7  # of: a - b; between: the gap
    # A group a comma closes takes a percentage as a lone number does (a second reader's
    # review: "20 plus 30, minus 10%" had been 49.9, against "50 minus 10%", 45).
    assert calculator("20 plus 30, minus 10%") == 45 and calculator("100, plus 10%") == 110
    assert calculator("(20 + 30) - 10%") == 45 and calculator("10 + 5% of 200") == 20
    assert calculator("10 plus 3, mod 4") == 1
    with pytest.raises(ValueError):  # a connective the verb does not take
        calculator("add 3 by 4")
    assert calculator("100 + 10%") == 110 and calculator("100 - 10%") == 90
    assert calculator("10 + 5% of 200") == 20 and calculator("100 + 10 % 3") == 101
    assert calculator("2^3 squared") == 64 and calculator("2 + 3 squared") == 11
    # A percentage on an amount, named as people name it, is that share of it.
    assert calculator("15% tip on 48.50") == 7.275 and calculator("15% on 200") == 30
    assert calculator("8% VAT on 120") == 9.6 and calculator("20% discount on 80") == 16
    assert calculator("15 % on 4") == 0.6 and calculator("15 % 4") == 3  # "on" takes a share
    # The share's word as a question may write it: capitalised, upper or lower case.
    assert calculator("15% Tip on 48.50") == 7.275 and calculator("8% vat on 120") == 9.6
    with pytest.raises(ValueError):  # "on" without a percentage is no operator
        calculator("15 on 48")
    for bad in ("round(1,234.5)", "sqrt(-1)", "log(0)"):  # a clear error, not a TypeError
        with pytest.raises(ValueError, match="has no result"):
            calculator(bad)
    # A power whose result would take minutes to write out, or overflows a float, is a
    # clear error too, not a hang or an OverflowError.
    for huge in ("((9^999)^999)^999", "(2^999)^999", "10.0^400", "2^1000 * 2^1000 / 3"):
        with pytest.raises(ValueError, match="too large"):
            calculator(huge)
    assert calculator("2^1000 * 2^1000") == 2 ** 2000 and calculator("0.5^999") > 0
    for no_real in ("(-8)^0.5", "(-8)^(1/3)"):  # a complex number is no answer
        with pytest.raises(ValueError, match="has no real result"):
            calculator(no_real)
    assert calculator("-8^0.5") == -2.82842712474619 and calculator("(-8)^3") == -512
    # Given directly (the schema's pattern bounds a model's), an expression may be any
    # length: the error quotes its start, and thousands of operators or brackets are a
    # clear error, not Python's RecursionError.
    with pytest.raises(ValueError, match=r"^unsupported in an arithmetic expression: 'x{80}…'$"):
        calculator("x" * 5000)
    with pytest.raises(ValueError, match="nested too deeply"):
        calculator("1+" * 5000 + "1")
    with pytest.raises(ValueError, match="not an arithmetic expression|nested too deeply"):
        calculator("(" * 300 + "1" + ")" * 300)  # Python's parser refuses it first


def test_calculator_schema_admits_only_arithmetic() -> None:
    """The expression's pattern is what a grammar lets a model write (llama.cpp compiles
    it) and what validation holds every caller to: no braces, words or "=" signs."""
    from callgate.models.grammar import args_grammar, compile_grammar
    from callgate.tools.builtin.calculator import calculator, calculator_tool
    from callgate.tools.validation import compile_schema

    tool = calculator_tool()
    check = compile_schema(tool.schema).check
    for good in ("17 * 23", "(12 + 8) * 3", "sqrt(2)", "2^10 + pi", "15% * 80", "17 × 23",
                 "144 divided by 16", "7 cubed", "7", "-5", "pi", "square root of 144",
                 "Square root of 144", "15% tip on 48.50", "8% tax on 120",
                 "15% Tip on 48.50", "8% vat on 120", "8% VAT on 120",
                 "100 minus 37, times 2", "Add 3.5 and 4.25", "the sum of 12 and 30",
                 "The difference between 2020 and 2024", "Subtract 15 from 100",
                 "multiply 6 by 7", "Divide 144 by 12", "quotient of 10 and 4",
                 "Add 1,000 and 2,000", "10 plus 3, mod 4", "20 plus 30, minus 10%",
                 "5 miles to kilometers", "100 Fahrenheit in Celsius", "60 mph to km/h",
                 "1,000 feet in meters", "100 °F to °C", "3.5 kg into pounds", "2L to gallons",
                 "5 Miles to Kilometers", "5 KM to miles", "250 mL to cups", "8 fl oz to ml",
                 "90 min to hrs", "12 percent of 250", "15 percent tip on 48.50", "50 percent",
                 "How many feet in a mile", "how many cups are in 2 gallons",
                 "a mile to feet", "Half a cup to ml", "How many feet in half a mile",
                 "How many hours in a day and a half", "an hour and a half in minutes"):
        assert check({"expression": good}).ok, good
    # "percent" as a question writes "%" (`callgate ask "What's 12 percent of 250?"` had
    # "12.00%" and answered 0.12).
    for expression, value in [("12 percent of 250", 30), ("15 percent tip on 48.50", 7.275),
                              ("100 + 10 percent", 110), ("12 per cent of 250", 30)]:
        assert calculator(expression) == value, expression
    for bad in ("{12 + 8} * 3 }", "15% of 80 is 12", "17 * 23 = 391", "7 * 7 * ", "1" * 101,
                "7 plus", "-", "(", "", "2 on 3", "15 tip on 48", "15% on",
                "add 3 and", "add three and four", "3 and 4", "sum of 3 and 4 and 5",
                "5 miles", "miles to km", "5 miles to", "5 parsecs to km", "5 miles in 3 days",
                "5 miLes to km", "amile to feet", "a  mile to feet", "two miles to feet"):
        assert not check({"expression": bad}).ok, bad
    gbnf = args_grammar(tool.schema)
    rule = next(line for line in gbnf.splitlines() if line.startswith("expression ::="))
    assert "[0-9]" in rule and "{" not in rule  # the pattern, compiled (not dropped)
    compile_grammar(gbnf)


def test_a_request_names_the_built_ins_it_asks_for_that_are_not_offered(
        env: pytest.MonkeyPatch) -> None:
    env.setattr(builtin, "ddgs_installed", lambda: False)
    found = builtin_tools()[1]

    def asked(request: str) -> list[str]:
        return [s.name for s in builtin.not_offered_for(request, found)]

    assert asked("What do my notes say about the car?") == ["rag_search"]
    assert asked("Search my documents and the web for the launch date") == [
        "web_search", "rag_search"]
    assert asked("Draw a picture of a cat") == ["generate_image"]
    assert asked("Draw me a fox") == ["generate_image"]
    # whole words only; the user's documents, not any notes or files; "draw" with an object
    for request in ["Explain photosynthesis in a notebook-free way", "What is 17 * 23?",
                    "How many CPUs does it have?", "What notes are in a C major chord?",
                    "How many files are in /tmp?", "Who won the draw?"]:
        assert asked(request) == [], request
    # a built-in that is offered is never named
    on = [builtin.BuiltinStatus("rag_search", True, "index i.sqlite (3 chunks)")]
    assert builtin.not_offered_for("What do my notes say?", on) == []


def test_calculator_converts_units() -> None:
    # `callgate ask "Convert 5 miles to kilometers."` was offered no tool and answered with
    # made-up code; a quantity in another unit is now the calculator's (pint converts).
    from callgate.tools.builtin.calculator import calculator, conversion_relevance

    # The result names its unit as the expression does (the answer was "8.04672").
    for expression, value in [("5 miles to kilometers", "8.04672 kilometers"),
                              ("100 Fahrenheit in Celsius", "37.7777777777778 Celsius"),
                              ("100 °F to °C", "37.7777777777778 °C"),
                              ("0 celsius to kelvin", "273.15 kelvin"),
                              # Exact: floats left 5.7e-14 and 98.5999999999999 (a review's).
                              ("32 fahrenheit to celsius", "0 celsius"),
                              ("37 Celsius to Fahrenheit", "98.6 Fahrenheit"),
                              ("-40 celsius to fahrenheit", "-40 fahrenheit"),
                              ("3.5 kg into pounds", "7.71617917647072 pounds"),
                              ("1,000 feet in meters", "304.8 meters"),
                              ("60 mph to km/h", "96.56064 km/h"),
                              ("90 min to hours", "1.5 hours"),
                              ("2 L to ml", "2000 ml"),  # a whole result reads as one
                              ("5 KM to Miles", "3.10685596118667 Miles"),
                              ("8 fl oz to mL", "236.5882365 mL"),
                              # How many of a unit one of another holds, as a question asks.
                              ("How many feet in a mile", "5280 feet"),
                              ("how many cups are in a gallon", "16 cups"),
                              ("How many seconds are there in 2 days", "172800 seconds"),
                              ("ounces in one pound", "16 ounces"),
                              # An amount as a word ("Convert a mile to feet." had made-up
                              # code for its answer).
                              ("a mile to feet", "5280 feet"), ("an hour in minutes",
                                                                "60 minutes"),
                              ("One gallon to liters", "3.785411784 liters"),
                              ("half a mile in meters", "804.672 meters"),
                              ("How many feet in half a mile", "2640 feet"),
                              # "and a half" after the unit ("How many hours in a day and a
                              # half?" had been offered no tool).
                              ("How many hours in a day and a half", "36 hours"),
                              ("How many minutes are in an hour and a half", "90 minutes"),
                              ("2 hours and a half to minutes", "150 minutes"),
                              # One of a unit reads as one (a review's "1 feet").
                              ("12 inches to feet", "1 foot"), ("5280 feet to miles", "1 mile"),
                              ("60 mins to hrs", "1 hr"), ("1 m/s to m/s", "1 m/s"),
                              ("32 fahrenheit to celsius", "0 celsius")]:
        assert calculator(expression) == value, expression
    # How many of a temperature scale's degrees are in another's is no conversion.
    with pytest.raises(ValueError, match="a degree of one temperature scale is no amount"):
        calculator("How many fahrenheit in a celsius")
    with pytest.raises(ValueError, match="cannot convert miles to kg: they measure different"):
        calculator("5 miles to kg")
    # A request converting a quantity is about the calculator, as arithmetic is; a number
    # inside another, or a unit that is not the next word, is no conversion.
    for request in ["Convert 5 miles to kilometers.", "What is 100 Fahrenheit in Celsius?",
                    "How much is 3.5 kg in pounds?", "How many feet in a mile?",
                    "how many cups are there in a gallon, please", "Convert a mile to feet.",
                    "What is half a mile in meters?", "How many hours in a day and a half?",
                    "How many minutes are in an hour and a half?"]:
        assert conversion_relevance(request) > 0, request
    for request in ["I ran 115 miles to Boston", "I have 5 g in my bag", "What is 12 * 3?",
                    "5 miles to kmh2",
                    # A target unit that does not end its clause, a fraction's denominator or
                    # a power's exponent (a review's cases: each had forced a calculator call).
                    "We were 3 days into week two of the trial, what happened?",
                    "He finished 0.5 seconds in second place.", "Add 5 days to day 3 of my plan",
                    "Pick 2 cups in cup holders", "Convert 1/2 cup to ml",
                    "What is 3/4 mile in feet?", "Convert 2^10 m to km",
                    # Units in a question that asks how many of them, without "how many",
                    # or not of a unit, or not ending its clause.
                    "I ran 100 feet in a mile race", "How many people are in a room?",
                    "How many feet in a mile race are there?",
                    "How many hours in a day and a quarter?",  # "and a quarter" goes on
                    # A word amount whose "unit" is no unit, or not the next word.
                    "I walked a mile to the store", "Give me a second to think.",
                    "Take a minute in silence, then go",
                    # A review's cases: a word amount inside a larger one ("one miles to km",
                    # "a cup to ml" had been read), units of two kinds (a rate).
                    "Convert thirty one miles to km", "Convert two hundred and one miles to km",
                    "Convert three quarters of a cup to ml", "Convert half of a cup to ml",
                    "Convert a third of a mile to feet", "Convert Half A cup to ml",
                    "twenty\u2013one miles to km", "How much water should I drink a day in liters?",
                    "How far can I walk in an hour in km?",
                    "How long does it take to walk a mile in minutes?", "5 miles to kg"]:
        assert conversion_relevance(request) == 0, request
    assert conversion_relevance("What is 10 km in miles and 5 kg in pounds?") > 0
