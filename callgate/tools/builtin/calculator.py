"""``calculator``: exact arithmetic, which small models get wrong on their own."""

from __future__ import annotations

import ast
import functools
import math
import operator
import re
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from callgate.tools.grounding import in_digits
from callgate.tools.registry import Tool, ToolRegistry
from callgate.tools.relevance import (
    ARITHMETIC_SCORE,
    CLAUSE_END,
    PERCENT_SHARES,
    PERCENT_WORD,
    SENTENCE_FORMS,
)

if TYPE_CHECKING:
    import pint

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos,
                                                        ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max, "log": math.log,
    "exp": math.exp, "sin": math.sin, "cos": math.cos}
_CONSTANTS = {"pi": math.pi, "e": math.e}
# The most binary digits a power may have: "(9^999)^999" would take minutes and memory to
# write out, with an exponent well under the bound on exponents.
RESULT_BITS = 10_000
_GROUPING = str.maketrans("{}[]", "()()")
# What the tool's schema lets a caller write, so grammar-constrained decoding (llama.cpp
# turns the pattern into grammar rules) cannot write anything else: SmolLM2 wrote
# "{12 + 8} * 3 }" and whole sentences ("15% of 80 is 15 * 80 = 100") as expressions.
# "square root" is sqrt as a question words it ("the square root of 144"): SmolLM2, held to
# the pattern without it, wrote "144" for that question and answered 144.
_NAMES = "|".join(sorted([*_FUNCTIONS, *_CONSTANTS, "square root", "Square root"], key=len,
                         reverse=True))
# Operators as the question words them, which a small model copies ("144 divided by 16",
# "15% of 80", "7 cubed"): SmolLM2, held to symbols, wrote "144" or "7 * 7 * 7 * ...".
_WORD_OPERATORS = {"to the power of": "**", "multiplied by": "*", "divided by": "/",
                   "plus": "+", "minus": "-", "times": "*", "over": "/", "of": "*",
                   "squared": "**2", "cubed": "**3"}
# A percentage "on" an amount, named or not, is that share of it, as people ask for a tip
# or a tax ("a 15% tip on 48.50": SmolLM2, with no span of the question to copy, wrote
# "15%" and answered 0.15). The pattern admits "on" only after a "%" (not "2 on 3").
# The schema's pattern has no flags, so each share word is admitted as a question writes it
# ("tip", "Tip", "VAT", "vat").
_SHARES = "|".join(dict.fromkeys(form for word in PERCENT_SHARES
                                 for form in (word.lower(), word.capitalize(), word.upper())))
_PERCENT_ON = re.compile(rf"%\s*(?:(?:{_SHARES})\s+)?on\b", re.IGNORECASE)
# "percent" as a question writes "%" ("12 percent of 250": SmolLM2, held to "%", wrote
# "12.00%" and answered 0.12): ``relevance.PERCENT_WORD``.
_WORDS = "|".join([*_WORD_OPERATORS, "mod", f"% ?(({_SHARES}) )?on ",
                   f"percent( ({_SHARES}))?( on)? ", "percent"])
_WORD_OPERATOR = re.compile(rf"\b({'|'.join(_WORD_OPERATORS)})\b")
_MOD = re.compile(r"\bmod\b")  # read after percentages: "5 mod -3" is no "5% - 3"
# "sqrt of 2" is sqrt(2), not sqrt * 2; "sqrt of (12 + 4)" is sqrt(12 + 4)
_FUNCTION_OF = re.compile(rf"\b({'|'.join(_FUNCTIONS)})\s+of\s+"
                          r"(?:(-?(?:\d+(?:\.\d+)?|\.\d+|pi|e))\b|(?=\())")
# It opens with a number or a name and may stop there, or opens with "(" or "-" and goes
# on (not ".+ 250", not a lone "-"); it ends with an operand, ")", "%", "squared" or
# "cubed" (not "7 * 7 * "): grammar-constrained decoding cannot stop halfway. The bound
# keeps a looping model from writing hundreds of tokens (a pattern is not bounded by
# maxLength).
_MIDDLE = (f"([0-9]|[-+*/%^()., ×÷]|{_NAMES}|{_WORDS}){{0,98}}"
           f"([0-9)%]|{_NAMES}|squared|cubed|percent)")
# Arithmetic worded as a sentence (``relevance.SENTENCE_FORMS``: "Add 3.5 and 4.25", "the
# sum of 12 and 30"): SmolLM2 called the calculator with "3.5", then "4.25", for the first;
# the schema's pattern admits these forms, so a span of the request replaces such a value
# (``choose_values.whole_span``), and the calculator reads them. The pattern has no flags:
# a form's first word in either case ("Add", "add").
_OPERAND = r"(-?(?:\d+(?:\.\d+)?|\.\d+))"
_BLANKS = r"\s+"


def _sentence_form(opening: str, the_first: bool, joins: tuple[str, ...]) -> re.Pattern[str]:
    """The reading of one of ``SENTENCE_FORMS``: the whole expression, any case."""
    words = _BLANKS.join(opening.split())
    the = r"(?:the\s+)?" if the_first else ""
    return re.compile(rf"{the}{words}\s+{_OPERAND}\s+(?:{'|'.join(joins)})\s+{_OPERAND}",
                      re.IGNORECASE)


_SENTENCES = [(_sentence_form(opening, the_first, joins), symbols)
              for opening, the_first, joins, symbols in SENTENCE_FORMS]
_NUMBER = "-?[0-9]{1,15}(,[0-9]{3}){0,4}([.][0-9]{1,15})?"  # "1,000" too
_SENTENCE_PATTERN = "|".join(
    ("([Tt]he )?" if the_first else "") + f"[{opening[0].upper()}{opening[0]}]{opening[1:]} "
    f"{_NUMBER} ({'|'.join(joins)}) {_NUMBER}"
    for opening, the_first, joins, _ in SENTENCE_FORMS)
# A quantity converted to another unit, as a question writes it ("5 miles to kilometers",
# "100 Fahrenheit in Celsius"): `callgate ask "Convert 5 miles to kilometers."` was offered
# no tool and answered with made-up code. Each unit word a question may use, with pint's
# name for it; pint does the conversion (cups, pints, quarts and gallons are US measures).
# "in" is no unit (it joins the two), nor is "C" (coulomb) or "F".
UNITS = {
    **dict.fromkeys(["mm", "millimeter", "millimeters", "millimetre", "millimetres"],
                    "millimeter"),
    **dict.fromkeys(["cm", "centimeter", "centimeters", "centimetre", "centimetres"],
                    "centimeter"),
    **dict.fromkeys(["m", "meter", "meters", "metre", "metres"], "meter"),
    **dict.fromkeys(["km", "kilometer", "kilometers", "kilometre", "kilometres"], "kilometer"),
    **dict.fromkeys(["inch", "inches"], "inch"),
    **dict.fromkeys(["ft", "foot", "feet"], "foot"),
    **dict.fromkeys(["yd", "yard", "yards"], "yard"),
    **dict.fromkeys(["mi", "mile", "miles"], "mile"),
    **dict.fromkeys(["mg", "milligram", "milligrams"], "milligram"),
    **dict.fromkeys(["g", "gram", "grams"], "gram"),
    **dict.fromkeys(["kg", "kilogram", "kilograms", "kilo", "kilos"], "kilogram"),
    **dict.fromkeys(["lb", "lbs", "pound", "pounds"], "pound"),
    **dict.fromkeys(["oz", "ounce", "ounces"], "ounce"),
    **dict.fromkeys(["fl oz", "fluid ounce", "fluid ounces"], "fluid_ounce"),
    **dict.fromkeys(["stone", "stones"], "stone"),
    **dict.fromkeys(["ml", "mL", "milliliter", "milliliters", "millilitre", "millilitres"],
                    "milliliter"),
    **dict.fromkeys(["l", "L", "liter", "liters", "litre", "litres"], "liter"),
    **dict.fromkeys(["gallon", "gallons"], "gallon"),
    **dict.fromkeys(["quart", "quarts"], "quart"),
    **dict.fromkeys(["pint", "pints"], "pint"),
    **dict.fromkeys(["cup", "cups"], "cup"),
    **dict.fromkeys(["celsius", "Celsius", "°C", "degrees Celsius", "degrees celsius"],
                    "degC"),
    **dict.fromkeys(["fahrenheit", "Fahrenheit", "°F", "degrees Fahrenheit",
                     "degrees fahrenheit"], "degF"),
    **dict.fromkeys(["kelvin", "Kelvin", "K"], "kelvin"),
    **{word: unit for unit in ("second", "minute", "hour", "day", "week")
       for word in (unit, f"{unit}s")},
    **dict.fromkeys(["sec", "secs"], "second"), **dict.fromkeys(["min", "mins"], "minute"),
    **dict.fromkeys(["hr", "hrs"], "hour"),
    **dict.fromkeys(["mph", "miles per hour"], "mile / hour"),
    **dict.fromkeys(["km/h", "kph", "kmh", "kilometers per hour", "kilometres per hour"],
                    "kilometer / hour"),
    **dict.fromkeys(["m/s", "meters per second", "metres per second"], "meter / second"),
    **dict.fromkeys(["knot", "knots"], "knot"),
    **dict.fromkeys(["acre", "acres"], "acre"),
    **dict.fromkeys(["hectare", "hectares"], "hectare"),
}
# The schema's pattern has no flags: a unit is admitted as written here, capitalised, and,
# up to three letters, in capitals ("5 Miles to Kilometers", "5 KM to miles", "250 mL").
_UNIT_FORMS = {form: unit for word, unit in UNITS.items()
               for form in (word, word[:1].upper() + word[1:],
                            *([word.upper()] if len(word) <= 3 else []))}
_UNIT_NAMES = "|".join(sorted((re.escape(u).replace("\\ ", " ") for u in _UNIT_FORMS),
                              key=len, reverse=True))
# An amount written as words, as a question often writes one unit's worth ("Convert a mile
# to feet": offered no tool, SmolLM2 answered with made-up code; "How many feet in a mile?":
# "1.000000000000001"), in the cases a pattern without flags admits.
_WORD_AMOUNTS = {form: amount for word, amount in (("a", "1"), ("an", "1"), ("one", "1"),
                                                    ("half a", "1/2"), ("half an", "1/2"))
                 for form in (word, word.capitalize())}
_WORD_AMOUNT = "|".join(sorted(_WORD_AMOUNTS, key=len, reverse=True))
_WORD_AMOUNT_READ = _WORD_AMOUNT.replace(" ", r"\s+")  # in a request: any blanks
# "and a half" after the unit adds half of one ("an hour and a half": 1.5 hours).
_AND_A_HALF = " and a half"
_CONVERSION_PATTERN = (f"({_NUMBER} ?|({_WORD_AMOUNT}) )({_UNIT_NAMES})({_AND_A_HALF})? "
                       f"(to|in|into) ({_UNIT_NAMES})")
# In a request, the amount is no fraction's or power's part ("1/2 cup to ml" is not "2 cup")
# and the target unit ends a clause: "3 days into week two", "0.5 seconds in second place"
# and "5 days to day 3" are no conversions. A word amount stands apart from its unit ("a m"
# is no "am").
_CONVERSION = re.compile(rf"(?<![\w.,/^–-])(?:({_NUMBER.replace('(', '(?:')})\s*|"
                         rf"\b({_WORD_AMOUNT_READ})\s+)({_UNIT_NAMES})(\s+and\s+a\s+half)?"
                         rf"\s+(?:to|in|into)\s+({_UNIT_NAMES})(?![\w/])")
# The question form, which asks how many of one unit another amount holds ("How many feet in
# a mile?"). The pattern admits it whole, so a copy of it is the expression
# (``choose_values.whole_span``).
_HOW_MANY_PATTERN = (f"([Hh]ow many )?({_UNIT_NAMES}) (are )?(there )?in "
                     f"({_WORD_AMOUNT}|{_NUMBER}) ({_UNIT_NAMES})({_AND_A_HALF})?")
_HOW_MANY = re.compile(rf"(?:\b([Hh]ow)\s+many\s+)?({_UNIT_NAMES})\s+(?:are\s+)?(?:there\s+)?in\s+"
                       rf"({_WORD_AMOUNT_READ}|{_NUMBER.replace('(', '(?:')})"
                       rf"\s+({_UNIT_NAMES})(?![\w/])(\s+and\s+a\s+half\b)?")


_TEMPERATURES = {"degC", "degF", "kelvin"}
# What each unit measures: a request converts between units of one kind ("How much water
# should I drink a day in liters?" and "How long does it take to walk a mile in minutes?"
# are no conversions).
_MEASURES = {
    **dict.fromkeys(["millimeter", "centimeter", "meter", "kilometer", "inch", "foot", "yard",
                     "mile"], "length"),
    **dict.fromkeys(["milligram", "gram", "kilogram", "pound", "ounce", "stone"], "mass"),
    **dict.fromkeys(["fluid_ounce", "milliliter", "liter", "gallon", "quart", "pint", "cup"],
                    "volume"),
    **dict.fromkeys(_TEMPERATURES, "temperature"),
    **dict.fromkeys(["second", "minute", "hour", "day", "week"], "time"),
    **dict.fromkeys(["mile / hour", "kilometer / hour", "meter / second", "knot"], "speed"),
    **dict.fromkeys(["acre", "hectare"], "area"),
}
# What before a word amount makes it part of a larger one: "thirty one miles", "three
# quarters of a cup", "half of a cup", "two hundred and one miles", "twenty-one".
_MORE_AMOUNT = re.compile(r"(?:\b(?:of|half|and|point|negative)|[\d–-])\s*$", re.IGNORECASE)
_SINGULARS = {"feet": "foot", "inches": "inch", "fluid ounces": "fluid ounce"}


class TooLarge(ValueError):
    """An expression whose result is too large to work out or to hold as a number."""


EXPRESSION_PATTERN = (f"^(([0-9]|{_NAMES})({_MIDDLE})?|[(-]{_MIDDLE}|{_SENTENCE_PATTERN}"
                      f"|{_CONVERSION_PATTERN}|{_HOW_MANY_PATTERN})$")
# "15%" is a percentage where no operand follows the "%" ("15% * 80", "50%"); "15 % 4"
# stays the remainder.
_PERCENT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*%(?!\s*[\w(.])")
# A percentage added to or taken from a number that stands alone on its left, or a group
# (a comma's: "20 plus 30, minus 10%"), changes it, as on a desk calculator: "100 + 10%" is
# 110, not 100.1, and that group's 45 ("10 + 5% of 200" stays 10 + 10).
_PERCENT_CHANGE = re.compile(r"(?:^|(?<=\())(\s*(?:\d+(?:\.\d+)?|\.\d+|"
                             r"\((?:[^()]|\([^()]*\))*\))\s*)([-+])"
                             r"\s*(\d+(?:\.\d+)?|\.\d+)\s*%(?=\s*(?:$|[-+)]))")
# "2^3 squared" squares 2^3 (64), where "^" would otherwise bind the 2 of "**2" first.
_POWER_THEN_WORD = re.compile(r"(\d+(?:\.\d+)?(?:\s*(?:\^|\*\*)\s*\d+(?:\.\d+)?)+)"
                              r"\s+(squared|cubed)\b")
# "1,200": a thousands separator, where the comma is no argument separator ("max(1,200)").
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d.])")


def calculator(
    expression: Annotated[str, Field(
        pattern=EXPRESSION_PATTERN,
        description="numbers, + - * / // % ^ ** and parentheses, with sqrt, log, exp, sin, "
                    "cos, round, abs, min, max, pi and e; or the words plus, minus, times, "
                    "divided by, of, on, squared, cubed, square root of, to the power of")],
) -> float | int | str:
    """Exact arithmetic: add, subtract, multiply, divide, percentages, powers
    (squared, cubed) and roots. Operators: + - * / // % ^ **."""
    # No sample expression here: small models copied one ("17 * 23") into other tools'
    # arguments (rag_search queries in `callgate eval answers`).
    # Braces and square brackets group like parentheses in written arithmetic ("{17} * 23")
    # when the function is called directly; the schema's pattern keeps them out of calls.
    if conversion := _CONVERSION.fullmatch(expression.strip()):
        number, words, unit, half, target = conversion.groups()
        return _converted(number or _word_amount(words), unit, target, half=bool(half))
    if question := _HOW_MANY.fullmatch(expression.strip()):
        _, target, amount, unit, half = question.groups()
        if {_UNIT_FORMS[target], _UNIT_FORMS[unit]} & _TEMPERATURES:
            raise ValueError("a degree of one temperature scale is no amount of another: give "
                             "a temperature to convert ('30 Celsius to Fahrenheit')")
        return _converted(_word_amount(amount) if amount[:1].isalpha() else amount, unit, target,
                          half=bool(half))
    text = _comma_groups(_without_thousands_separators(expression.translate(_GROUPING)))
    text = _sentence(PERCENT_WORD.sub("%", text).strip())
    text = _FUNCTION_OF.sub(lambda m: f"{m[1]}({m[2]})" if m[2] else m[1],
                            re.sub(r"\b[Ss]quare root\b", "sqrt", text))
    text = _POWER_THEN_WORD.sub(r"(\1) \2", text)
    text = _PERCENT_ON.sub("% of", text)
    text = _WORD_OPERATOR.sub(lambda m: f" {_WORD_OPERATORS[m.group(1)]} ", text)
    text = _PERCENT_CHANGE.sub(r"\1*(1\2\3/100)", text)
    text = _MOD.sub("%", _PERCENT.sub(r"(\1/100)", text))
    text = text.replace("^", "**").replace("×", "*").replace("÷", "/")
    try:
        tree = ast.parse(text, mode="eval")
        value = _eval(tree.body)
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {_quoted(expression)}") from exc
    except RecursionError as exc:  # thousands of operators or brackets, given directly
        raise ValueError(f"{_quoted(expression)} is nested too deeply to work out") from exc
    if isinstance(value, complex):  # (-8) ** 0.5: Python answers with a complex number
        raise ValueError(f"{_quoted(expression)} has no real result")
    if isinstance(value, float) and not math.isfinite(value):
        raise TooLarge(f"the result of {_quoted(expression)} is too large for a number")
    return _tidy(value)


def _tidy(value: float | int) -> float | int:
    """3.5 * 4.2 is 14.7, not 14.700000000000001: fifteen significant digits (all a float
    holds exactly) hide the binary rounding without changing a figure the float states; a
    whole result reads as one ("12", not "12.0", for 15% of 80)."""
    if not isinstance(value, float):
        return value
    value = float(f"{value:.15g}")
    return int(value) if value.is_integer() and abs(value) < 1e15 else value


@functools.cache
def _units() -> pint.UnitRegistry:
    import pint  # under a second to load its definitions: only when a conversion is asked

    # Exact fractions: with floats, the offsets of temperatures left "32 fahrenheit to
    # celsius" at 5.7e-14 and "37 celsius to fahrenheit" at 98.5999999999999.
    return pint.UnitRegistry(non_int_type=Fraction)


def _word_amount(words: str) -> str:
    """The number an amount written as words stands for ("a", "half an": "1", "1/2")."""
    return _WORD_AMOUNTS[" ".join(words.split())]


def _converted(amount: str, unit: str, target: str, *, half: bool = False) -> str:
    """``amount`` ``unit`` (and a half, with ``half``) in ``target`` units, named as the
    request names them ("5", "miles", "kilometers": "8.04672 kilometers"): with the bare
    number SmolLM2 answered "The answer is 8.04672.", and the user had to know the unit."""
    import pint

    registry = _units()
    try:
        quantity = registry.Quantity(Fraction(amount.replace(",", "")) + Fraction(half, 2),
                                     _UNIT_FORMS[unit])
        value = quantity.to(_UNIT_FORMS[target]).magnitude
    except pint.DimensionalityError:
        raise ValueError(f"cannot convert {unit} to {target}: they measure different "
                         "things") from None
    result = _tidy(float(value))
    if result == 1 and _UNIT_FORMS[target] not in _TEMPERATURES and "/" not in target:
        target = _SINGULARS.get(target.lower(), target.removesuffix("s"))  # "1 foot"
    return f"{result} {target}"


def _without_thousands_separators(text: str) -> str:
    """``text`` with "1,200" read as 1200 outside a function's parentheses."""
    depth: list[bool] = []  # per open parenthesis: whether it opened a function's arguments
    inside = [False] * (len(text) + 1)
    for index, char in enumerate(text):
        if char == "(":
            depth.append(bool(re.search(rf"\b({'|'.join(_FUNCTIONS)})\s*$", text[:index])))
        elif char == ")" and depth:
            depth.pop()
        inside[index] = any(depth)
    grouped = [m for m in _THOUSANDS.finditer(text) if not inside[m.start()]]
    for match in reversed(grouped):
        text = text[:match.start()] + match.group().replace(",", "") + text[match.end():]
    return text


# A comma before an operator closes what came before it, as a sentence groups arithmetic:
# "100 minus 37, times 2" is (100 - 37) * 2 (a question's wording; the calculator refused
# it and the bundled model answered "100 - 37 * 2" itself). A sign glued to its number
# ("5, -3") is no operator.
_COMMA_OPERATOR = re.compile(
    rf",\s*(?=(?:{'|'.join(w for w in _WORD_OPERATORS if w != 'of')}|mod)\b|[*/^×÷%]|[-+]\s)")


def _sentence(text: str) -> str:
    """``text`` as symbols where it is arithmetic worded as a sentence ("Add 3.5 and 4.25")."""
    for form, symbols in _SENTENCES:
        if match := form.fullmatch(text):
            return symbols.format(*match.groups())
    return text


def _comma_groups(text: str) -> str:
    """``text`` with each comma before an operator, outside parentheses, closing a group of
    everything before it: "a, * b, - c" is "((a) * b) - c"."""
    depth, cuts = 0, []
    for index, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0 and _COMMA_OPERATOR.match(text, index):
            cuts.append(index)
    if not cuts:
        return text
    parts = [text[start + 1:end].lstrip() for start, end in zip([-1, *cuts], [*cuts, len(text)],
                                                                  strict=True)]
    return "(" * len(cuts) + ") ".join(parts)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(
            node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            huge = abs(left) > 1 and right * math.log2(abs(left)) > RESULT_BITS
            if huge or abs(right) > 1000:
                error = TooLarge if huge else ValueError  # 0.5 ^ 2000 is small, but as slow
                raise error(f"{_quoted(ast.unparse(node), repr_=False)} is too large to work "
                            "out")
        try:
            return _BINARY[type(node.op)](left, right)
        except OverflowError as exc:  # 10.0 ** 400; a huge int divided into a float
            raise TooLarge(f"{_quoted(ast.unparse(node), repr_=False)} is too large for a "
                           "number") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS and not node.keywords):
        arguments = [_eval(a) for a in node.args]
        try:
            return _FUNCTIONS[node.func.id](*arguments)
        except (TypeError, ValueError, OverflowError) as exc:  # round(1, 2.5), sqrt(-1)
            raise ValueError(f"{_quoted(ast.unparse(node), repr_=False)} has no result: "
                             f"{exc}") from exc
    raise ValueError(f"unsupported in an arithmetic expression: {_quoted(ast.unparse(node))}")


def _quoted(text: str, *, repr_: bool = True, limit: int = 80) -> str:
    """``text`` for an error message: its first ``limit`` characters and "…" past them (an
    expression given to the function directly may be any length)."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    return repr(shown) if repr_ else shown


def conversion_relevance(request: str) -> float:
    """As much as a request written as arithmetic scores (``ARITHMETIC_SCORE``) for one
    that converts a quantity to another unit ("Convert 5 miles to kilometers."), 0 for any
    other: no word of the tool's description is about units."""
    converts = any(CLAUSE_END.match(request, m.end()) and _one_kind(m[3], m[5])
                   and not (m[2] and _in_larger_amount(request[:m.start()]))
                   for m in _CONVERSION.finditer(request))
    asks = any(m[1] and CLAUSE_END.match(request, m.end()) and _one_kind(m[2], m[4])
               for m in _HOW_MANY.finditer(request))
    return ARITHMETIC_SCORE if converts or asks else 0.0


def _one_kind(unit: str, other: str) -> bool:
    """Whether two unit words measure one kind of thing (``_MEASURES``)."""
    return _MEASURES[_UNIT_FORMS[unit]] == _MEASURES[_UNIT_FORMS[other]]


def _in_larger_amount(before: str) -> bool:
    """Whether a word amount ("a", "one") written after ``before`` is part of a larger one
    ("thirty one miles", "three quarters of a cup", "two hundred and one")."""
    last = re.search(r"[A-Za-z]+\s*$", before)
    return bool(_MORE_AMOUNT.search(before) or (last and in_digits(last[0]) != last[0]))


def calculator_tool() -> Tool:
    return ToolRegistry().register(calculator, category="math", source="builtin",
                                   summarizer=lambda name, data: f"[{name}] = {data}",
                                   relevance=conversion_relevance)
