"""Answers that state no number the results do not hold (grammar-constrained, llama.cpp).

The grammar text is checked directly; that it holds the real bundled model to the
results' numbers is checked on the model itself (llama marker), with a prompt that makes
it want to write another figure.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from callgate.answer_checks import invented_numbers
from callgate.graph.decide_react import ReactStrategy
from callgate.models.grammar import answer_grammar, choice_grammar
from callgate.tools.registry import ToolRegistry


def calculator(expression: str) -> str:
    """Evaluate arithmetic."""
    return "0"


class GrammarCapable:
    """Stands in for a llama.cpp chat model where only the strategy's own logic runs."""

    text_only: ClassVar[bool] = True
    llama = None


def strategy(**options: Any) -> ReactStrategy:
    return ReactStrategy(GrammarCapable(), ToolRegistry([calculator]),  # type: ignore[arg-type]
                         grammar=True, **options)


def turn_with_result() -> list[Any]:
    return [HumanMessage("What is 17 * 23?"),
            AIMessage("", tool_calls=[{"id": "c1", "name": "calculator",
                                       "args": {"expression": "17 * 23"}}]),
            ToolMessage("[R1] calculator: 391", tool_call_id="c1", name="calculator")]


def test_the_answer_may_state_the_results_and_the_users_numbers() -> None:
    numbers = strategy(grounded_answers=True).answer_numbers(turn_with_result())
    assert numbers is not None and {"17", "23", "391"} <= set(numbers)


def test_the_digits_a_results_word_ends_in_may_be_written() -> None:
    # A user walkthrough: notes saying "the password is sunflower42" were answered
    # "sunflower4" (then "sunflower45,000"): the grammar allowed no "42" after the word.
    messages = [HumanMessage("What is the guest Wi-Fi password in my notes?"),
                AIMessage("", tool_calls=[{"id": "c1", "name": "calculator",
                                           "args": {"expression": "x"}}]),
                ToolMessage("[R1] The password is sunflower42, the router an RT-AX58U.",
                            tool_call_id="c1", name="calculator")]
    numbers = strategy(grounded_answers=True).answer_numbers(messages)
    assert numbers is not None and {"42", "58"} <= set(numbers)
    assert "1" not in numbers  # a citation id's digits are no word's
    assert not invented_numbers("It is sunflower42.", ["sunflower42"])


def test_numbers_are_free_before_any_result_or_when_switched_off() -> None:
    assert strategy(grounded_answers=True).answer_numbers(
        [HumanMessage("What is 17 * 23?")]) is None
    assert strategy(grounded_answers=False).answer_numbers(turn_with_result()) is None


def test_a_new_request_starts_without_the_earlier_turns_results() -> None:
    messages = [*turn_with_result(), AIMessage("391 [R1]"), HumanMessage("And 2 + 2?")]
    assert strategy(grounded_answers=True).answer_numbers(messages) is None


def test_a_refused_call_and_the_loops_reply_to_it_are_not_results() -> None:
    from callgate.tools.grounding import CORRECTION_MARK

    refused = [HumanMessage("What is 17 * 23?"),
               AIMessage("", tool_calls=[{"id": "c0", "name": "calculator",
                                          "args": {"expression": "3333 * 23"}}]),
               ToolMessage("'3333' is not in the conversation", tool_call_id="c0",
                           status="error", additional_kwargs=CORRECTION_MARK)]
    assert strategy(grounded_answers=True).answer_numbers(refused) is None
    numbers = strategy(grounded_answers=True).answer_numbers(
        [*refused, *turn_with_result()[1:]])
    assert numbers is not None and "391" in numbers and "3333" not in numbers


def test_grammar_text_offers_only_the_listed_numbers_and_citations() -> None:
    text = answer_grammar(["391", "17"])
    assert '"391"' in text and '"17"' in text and '"[R"' in text
    assert "text ::= [^0-9" in text  # every other character is free, digits are not
    assert "num ::=" not in answer_grammar([])
    assert 'final ::= "Final Answer: " answer' in choice_grammar(["calc"], numbers=["5"])


@pytest.fixture(scope="module")
def bundled() -> Any:
    from callgate.models.spec import load_model

    return load_model("bundled")[0]


def answering(question: str, begun: str = "Final Answer:") -> list[Any]:
    """A prompt at the answer, after the calculator returned 391."""
    return [SystemMessage("Answer with numbers."), HumanMessage(question),
            HumanMessage("Observation: [R1] calculator: 391"), AIMessage(begun)]


@pytest.mark.llama
def test_the_bundled_model_states_only_the_results_numbers(bundled: Any) -> None:
    model = bundled
    prompt = answering("List the first ten prime numbers, then the result.")
    free = model.invoke(prompt, max_tokens=40, temperature=0.0).text
    held = model.invoke(prompt, max_tokens=40, temperature=0.0,
                        grammar=answer_grammar(["391", "10"], rest=True)).text
    assert invented_numbers(free, ["391", "10"]), free  # the prompt makes it invent some
    assert not invented_numbers(held, ["391", "10"]), held
    assert re.search(r"\w", held)


def test_the_rest_of_an_answer_finishes_a_number_or_citation_cut_off_mid_way() -> None:
    numbers = ["391", "17", "3.5"]
    assert '"91"' in answer_grammar(numbers, rest=True, after="Final Answer: It is 3")
    # "17" is whole and no literal goes on from it: the rest starts with a non-digit.
    assert answer_grammar(numbers, rest=True, after="Final Answer: 17").startswith(
        "root ::= (text part* num?)?\n")
    # "3" may be "3.5" or "391" in progress, never a number of its own.
    assert answer_grammar(numbers, rest=True, after="= 3").startswith(
        'root ::= (".5" | "91") (text part* num?)?\n')
    assert '".5"' in answer_grammar(numbers, rest=True, after="It is 3")
    assert "[0-9] [0-9]? \"]\"" in answer_grammar(numbers, rest=True, after="It is [R")
    assert answer_grammar(numbers, rest=True, after="It is").startswith("root ::= part*")


@pytest.mark.llama
@pytest.mark.parametrize("after", ["Final Answer: It is 3", "Final Answer: 17", "See [R",
                                   "See [R1", "Final Answer: It is", "x 3.", "[R1] 2-3"])
def test_every_resumed_answer_grammar_compiles(after: str, bundled: Any) -> None:
    from callgate.models.grammar import grammar_error

    assert grammar_error('root ::= ("a" | ', bundled.llama) is not None  # the parser checks
    gbnf = answer_grammar(["391", "17", "3.5", "-35"], rest=True, after=after)
    assert grammar_error(gbnf, bundled.llama) is None, gbnf


@pytest.mark.llama
def test_the_bundled_model_finishes_the_number_it_was_cut_off_in(bundled: Any) -> None:
    begun = "Final Answer: 17 * 23 = 3"
    rest = bundled.invoke(answering("What is 17 * 23?", begun), max_tokens=12,
                          temperature=0.0, grammar=answer_grammar(
                              ["391", "17", "23"], rest=True, after=begun)).text
    assert rest.startswith("91"), rest
