"""Grounding: does each argument value of a call come from the conversation?

A small model that is offered a tool nearly always calls it, and when the question gives
no value for an argument it invents one (``weight=10`` for a body-mass-index tool asked
about a triangle). A value that appears nowhere in what the user wrote or the tools
returned, and that the schema does not supply (an enum member, a default, a constant),
is flagged (see ``callgate.graph.validate`` for what the loop does with it). What a tool
returned is its result without the loop's labels (``[R1]``, ``[tool_name]``), and never
the loop's note on a call it refused, which quotes the refused values (``returned``).

What counts as "appears" (measured on ``tests/data/grounding_paraphrases.jsonl``, see
``tests/test_grounding_paraphrases.py``):

- **Numbers**: the same number written in digits (``5``, ``-4``, ``1e-9``, ``1,000``), the
  same in percent (``5%`` for ``0.05``), spelled out (``twenty-five``, ``a hundred``,
  ``three hundred fifty``, ``two dozen``, ``half a dozen``, ``one and a half``, ``a couple``),
  with a multiplier (``1k``, ``1.5 million``, ``$2.5M``, ``10bn``), a fraction (``3/4``), the
  hour of a written clock time (``5pm`` for 17), the year of ``last/this/next year``, the
  number of a month named (``December`` for 12).
- **Dates** (a string value that is an ISO date or date-time, ``2026-11-24T15:00``): its
  day must be one the conversation names: written out (``2026-11-24``, ``24 Nov 2026``,
  ``December 5th``, ``12/25/2026`` read both ways, a month alone for its first and last
  day; without a year: this year, next year or a year the text names), or relative to
  today: ``today``, ``now``, ``tonight``, ``tomorrow``, ``yesterday``, ``the day after
  tomorrow``, ``the day before yesterday``, a weekday (``Friday``: this week's or the
  coming one; ``next Monday``: the coming one or the one after; ``last Monday``),
  ``this/next weekend``, ``this/next/last week`` (any day of it), ``this/next/last month``
  (its first and last day, the same day), ``in N days/weeks/months``, ``N days ago``,
  ``the 24th`` (of this month or the next). Its time, when not midnight, must be a time
  the conversation names (below). Today is the date the conversation states (``Today is
  2025-02-27``), else the ``today`` argument, else the real current date (``date.today()``,
  the machine's local date). Dates in other forms are checked as other strings.
- **Clock times** (a string value such as ``15:00``, ``3:00 PM``, ``06:30:00``): ``3pm``,
  ``3:30 p.m.``, ``15:00``, ``noon``, ``midnight``, ``half past 3``, ``3 o'clock`` and
  ``at 3`` (both 03:00 and 15:00).
- **Other strings**: compared without case, accents and punctuation, in any script: at
  least half of their words are in the conversation (``Paris, France``; a plural counts
  as its singular), or the whole value is, without spaces (``LosAngeles``, ``肯德基``); a
  number written as a string (``"24"``) is checked as a number. Words of the synonym
  table (``_SYNONYMS``: places, currencies, units, languages) count as written when
  another name of the same thing is (``NYC`` gives ``New York City``, ``km`` gives
  ``kilometers``, ``£`` gives ``GBP``).

Booleans and nulls are never flagged. Known misses: knowledge the user did not write
(``Apple`` -> ``AAPL``, ``San Francisco`` -> ``California``), unit conversions (``5 km``
-> ``5000`` m, ``100µF`` -> ``0.0001``), ``quarter past``.

No library does this: date parsers (dateparser) turn one phrase into one date and entity
linkers (spaCy) need a model; the question here is the reverse, "could this value have
been read off this text", over every reading of the text at once, on every call. The
tables are small on purpose: each entry also grounds values a model might invent.
"""

from __future__ import annotations

import calendar
import copy
import math
import re
import unicodedata
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

__all__ = ["CORRECTION_MARK", "Grounded", "conversation_text", "date_form",
           "date_in_format", "day_of", "days_and_times", "fold", "format_templates", "ground",
           "grounding_error", "in_digits", "numbers_in", "returned", "stated",
           "ungrounded_args", "unused_numbers", "user_texts", "word_forms"]

# On the loop's own correction messages, which quote the values they reject.
CORRECTION_MARK = {"callgate_correction": True}

_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d+(?:[,_]\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_UNIT_EXPONENT = re.compile(r"(?:[A-Za-z)]|(?<!\d)10)\^$")  # ends just before such an exponent
_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script
_DOTTED = re.compile(r"(?<!\d)\d+(?:\.\d+){2,}(?!\.?\d)")  # "2.1.3", "192.168.0.1"
_PERCENT_AFTER = re.compile(r"\s*(?:%|per\s?cent\b)", re.IGNORECASE)

# --- tables -------------------------------------------------------------------------------

_UNITS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen"))}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
# Words that are a number on their own (besides _UNITS and _TENS).
_NUMBER_WORDS = _UNITS | _TENS | {
    "hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000,
    "dozen": 12, "half": 0.5, "quarter": 0.25, "once": 1, "twice": 2, "single": 1,
    "double": 2, "triple": 3, "couple": 2, "pair": 2, "first": 1, "second": 2, "third": 3,
    "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10,
}
# Multipliers after digits: "1k", "1.5 million", "$2.5M" ("m" may be metres: a spare
# candidate number costs nothing), "10bn".
_SCALE = {"k": 1e3, "thousand": 1e3, "grand": 1e3, "m": 1e6, "mn": 1e6, "mm": 1e6,
          "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9, "dozen": 12, "hundred": 100}
_SCALED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(" + "|".join(sorted(_SCALE, key=len,
                     reverse=True)) + r")(?![a-z])")
_FRACTION = re.compile(r"(?<![\w./])(\d+)\s*/\s*(\d+)(?![\w/])")
_AND_A_HALF = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|an?|one)\s+(?:[a-z]+\s+)?and\s+a\s+half")

# Names of one thing. A form in capitals matches only in capitals, dots aside ("US" and
# "U.S.", "LA": "us" and "la" are ordinary words); "#x" matches only right after a number
# ("5m", "72 °F", "12 in"); a symbol anywhere; any other form in any case as whole words.
# Every form of a group found in the conversation counts as written there.
_SYNONYMS: tuple[str, ...] = (
    # places
    "nyc | new york city", "LA | los angeles", "SF | san francisco",
    "DC | D.C. | washington dc | washington d.c. | washington",
    "US | USA | U.S. | U.S.A. | united states | united states of america | america",
    "UK | U.K. | united kingdom | great britain | britain", "UAE | united arab emirates",
    "CA | california", "NY | new york", "TX | texas", "FL | florida",
    "st | saint", "mt | mount", "ave | avenue",
    # currencies
    "usd | $ | us dollar | us dollars | dollar | dollars | buck | bucks",
    "eur | € | euro | euros", "gbp | £ | pound sterling | british pound | pound | pounds",
    "jpy | ¥ | yen", "inr | ₹ | rupee | rupees", "cny | rmb | yuan | renminbi",
    "chf | swiss franc | swiss francs", "cad | canadian dollar | canadian dollars",
    "aud | australian dollar | australian dollars", "btc | bitcoin", "eth | ether | ethereum",
    # units
    "km | kms | kilometer | kilometre", "#m | meter | metre", "cm | centimeter | centimetre",
    "mm | millimeter | millimetre", "mi | mile", "ft | foot | feet", "#in | inch | inches",
    "yd | yard", "kg | kgs | kilo | kilogram | kilogramme", "#g | gram | gramme",
    "mg | milligram", "lb | lbs | pound | pounds", "oz | ounce", "#l | liter | litre",
    "ml | milliliter | millilitre", "gal | gallon",
    "°c | #c | C | celsius | centigrade | degrees c",
    "°f | #f | F | fahrenheit | degrees f",
    "% | percent | per cent | percentage | pct", "mph | miles per hour",
    "km/h | kph | kmh | kilometers per hour | kilometres per hour",
    "#h | hr | hrs | hour", "min | mins | minute", "#s | sec | secs | second",
    "ms | millisecond", "kb | kilobyte", "mb | megabyte", "gb | gigabyte", "tb | terabyte",
    # languages
    "en | english", "fr | french", "es | spanish", "de | german", "IT | italian",
    "ja | jp | japanese", "zh | chinese | mandarin", "pt | portuguese", "ru | russian",
)

_MONTHS = {name: n for n in range(1, 13) for name in
           (calendar.month_name[n].lower(), calendar.month_abbr[n].lower())} | {"sept": 9}
_WEEKDAYS = {calendar.day_name[n].lower(): n for n in range(7)}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
# A period after the year ends the sentence ("on 05/01/2022."); one before a digit does not.
_NUMERIC_DATE = re.compile(r"(?<![\d/.-])(\d{1,2})[/.-](\d{1,2})[/.-](\d{4}|\d{2})"
                           r"(?![\d/-]|\.\d)")
_MONTH_DAY = re.compile(r"(?<![a-z])" + _MONTH + r"\s*" + _DAY + r"(?![\d:])" + _YEAR)
_DAY_MONTH = re.compile(r"(?<![\w.])" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?![a-z])"
                        + _YEAR)
_MONTH_ALONE = re.compile(r"(?<![a-z])" + _MONTH + r"(?![a-z])" + _YEAR)
_THE_NTH = re.compile(r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b")
_STATED_TODAY = re.compile(r"\b(?:today|current date|today's date|date today)\s*(?:is|:|=)"
                           r"\s*(?:[a-z]+day,?\s*)?(.{6,30})")
_AMOUNT = r"(\d{1,4}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen)"
_IN_DAYS = re.compile(r"\bin\s+" + _AMOUNT + r"\s+(day|week|month)s?\b|\b" + _AMOUNT
                      + r"\s+(day|week|month)s?\s+from\s+(?:now|today)\b")
_DAYS_AGO = re.compile(r"\b" + _AMOUNT + r"\s+(day|week|month)s?\s+ago\b")
_WEEKDAY = re.compile(r"(?:\b(next|this|coming|upcoming|last|past)\s+)?\b("
                      + "|".join(_WEEKDAYS) + r")s?\b")
_SHIFT = {"next": 1, "coming": 1, "upcoming": 1, "this": 0, "last": -1, "past": -1}
_PERIOD = re.compile(r"\b(next|this|last|coming|upcoming|past)\s+(week|weekend|month|year)\b")

_CLOCK_12 = re.compile(r"(?<![\d:])(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?")
_CLOCK_24 = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?(?!\s*[ap]\.?\s?m\b)")
_CLOCK_LOOSE = re.compile(r"\b(?:at|around|by|until|half\s+past)\s+(\d{1,2}|"
                          + "|".join(list(_UNITS)[1:13]) + r")(?![\d:.,%]|\s*[ap]\.?\s?m\b)"
                          r"|\b(\d{1,2}|[a-z]+)\s+o'?clock\b")
_VALUE_DATETIME = re.compile(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[t ](\d{1,2}):(\d{2})"
                             r"(?::(\d{2})(?:\.\d+)?)?)?(?:z|[+-]\d{2}:?\d{2})?")
_VALUE_TIME = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(?:([ap])\.?\s?m\.?)?")


@dataclass(frozen=True)
class _Group:
    """One line of ``_SYNONYMS``: how to find it in a conversation, what it then adds."""

    phrases: tuple[str, ...]  # lower-case forms as " word word " (searched in _Text.joined)
    capitals: frozenset[str]  # capital forms without dots: "US", "USA", "DC"
    after_number: frozenset[str]  # "#m" forms: "m"
    symbols: tuple[str, ...]  # "$", "€", "°f"
    words: frozenset[str]
    squashed: tuple[str, ...]

    def found_in(self, text: _Text) -> bool:
        return (any(p in text.joined for p in self.phrases)
                or bool(self.capitals & text.capitals)
                or bool(self.after_number & text.after_number)
                or any(s in text.folded for s in self.symbols))


def _group(line: str) -> _Group:
    forms = [f.strip() for f in line.split("|")]
    tokens = [_WORD.findall(f.lstrip("#").lower()) for f in forms]
    return _Group(
        phrases=tuple(f" {' '.join(t)} " for f, t in zip(forms, tokens, strict=True)
                      if t and not f.startswith(("#", "°")) and not f.isupper()),
        capitals=frozenset(f.replace(".", "") for f in forms if f.isupper()),
        after_number=frozenset(f[1:] for f in forms if f.startswith("#")),
        symbols=tuple(f for f in forms if f.startswith("°") or not _WORD.search(f)),
        words=frozenset(w for t in tokens for w in t),
        squashed=tuple("".join(t) for t in tokens if t))


@dataclass(frozen=True)
class _Text:
    """A conversation prepared for the synonym table (one pass over it, not one a form)."""

    folded: str  # lower case, no accents
    joined: str  # its letter and digit runs, " "-separated: " run 400 m in 80 s "
    capitals: frozenset[str]  # its words in capitals, without dots: "US", "DC"
    after_number: frozenset[str]  # the unit right after each number: "m", "km", "%"

    @classmethod
    def of(cls, text: str) -> _Text:
        folded = fold(text)
        runs = re.findall(r"\d+|[^\W\d_]+", folded)
        capitals = re.findall(r"(?<![A-Za-z.])(?:[A-Z]\.?)+(?![a-z])", text)
        units = re.findall(r"\d\s*°?\s*([a-z]+|%)", folded)
        return cls(folded=folded, joined=f" {' '.join(runs)} ",
                   capitals=frozenset(c.replace(".", "") for c in capitals),
                   after_number=frozenset(units))


_GROUPS = tuple(_group(line) for line in _SYNONYMS)

# --- the conversation ---------------------------------------------------------------------


def user_texts(messages: Iterable[AnyMessage]) -> list[str]:
    """What the user wrote, in order: the human messages less the loop's corrections."""
    return [m.text for m in messages if isinstance(m, HumanMessage)
            and not m.additional_kwargs.get("callgate_correction")]


def conversation_text(messages: Iterable[AnyMessage]) -> str:
    """What the user wrote and the tools returned: where argument values may come from."""
    return "\n".join(returned(m) if isinstance(m, ToolMessage) else m.text for m in messages
                     if isinstance(m, HumanMessage | ToolMessage)
                     and not m.additional_kwargs.get("callgate_correction"))


# The loop's own labels on a result (``callgate.graph.summarize``): its id, the note on a
# repeat, the tool's name.
_RESULT_LABEL = re.compile(r"\[R\d+\]\s*(?:\(repeat of R\d+[^)]*\)\s*)?")


def returned(message: ToolMessage) -> str:
    """What a tool returned, without the loop's labels: a value is not grounded by a result
    id or by the name of the tool that was called ("Movies_3_FindMovies" for a cast); and
    nothing of the loop's note on a call it did not run, which quotes the refused values."""
    label = _RESULT_LABEL.match(message.text)
    text = message.text[label.end():] if label else message.text
    if message.name and text.startswith(f"[{message.name}]"):
        text = text[len(message.name) + 2:].lstrip()
    return "" if text.startswith("failed: not run (") else text


def fold(text: str) -> str:
    """Lower case without accents: ``Zürich`` -> ``zurich``."""
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c)).lower()


# Plurals not made with "s" that requests use for people and things ("children and adult").
_IRREGULAR_PLURALS = {"children": "child", "people": "person", "men": "man", "women": "woman",
                      "feet": "foot", "teeth": "tooth", "mice": "mouse", "geese": "goose"}


def word_forms(word: str) -> set[str]:
    """A word and its singular guesses (``miles`` -> ``mile``, ``inches`` -> ``inch``,
    ``children`` -> ``child``)."""
    out = {word}
    if word in _IRREGULAR_PLURALS:
        out.add(_IRREGULAR_PLURALS[word])
    if len(word) > 3 and word.endswith("s") and not word.isdigit():
        out |= {word[:-1], word[:-2] if word.endswith("es") else word[:-1]}
    return out


def _to_float(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError:
        return None


# A run of number words ("one hundred and five", "twenty-five", "nineteen eighty-four",
# "negative three", "zero point five"): words joined by blanks, a hyphen (no blanks: "one -
# three" is a range) or "and"; ASCII letters only, as the words are.
_SCALES = {"thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_RUN_WORD = "|".join([*_UNITS, *_TENS, "hundred", *_SCALES])
_SPELLED_RUN = re.compile(
    rf"\b(?:negative\s+)?(?:{_RUN_WORD})(?:(?:\s+and\s+|\s+|-)(?:point\s+)?(?:{_RUN_WORD}))*\b",
    re.IGNORECASE | re.ASCII)
_RUN_TOKEN = re.compile(r"(\s+and\s+|\s+|-)?([A-Za-z]+)")
# The kinds of number word each kind may follow within one number: "hundred" after "two",
# not after "twenty"; nothing after "zero" but a point; a teen's tens a year's
# ("nineteen eighty-four"); "and" only after "hundred" or a scale ("one hundred and five",
# not "twenty and five").
_GOES_AFTER = {"unit": ("tens", "hundred", "scale", "year"), "teen": ("hundred", "scale"),
               "tens": ("hundred", "scale"), "hundred": ("unit", "teen"),
               "scale": ("unit", "teen", "tens", "hundred", "year"), "zero": (),
               "point": ("unit", "teen", "tens", "hundred", "scale", "zero", "year")}


def in_digits(text: str) -> str:
    """``text`` with each number written as words written in digits: "What is one hundred
    minus twenty-five?" is "What is 100 minus 25?", "negative three" "-3", "zero point
    five" "0.5", "nineteen eighty-four" "1984". Words that make no one number stay apart,
    and what joins them stays ("one two" is "1 2", "twenty and five" "20 and 5", "one
    hundred one hundred" "100 100")."""
    return _SPELLED_RUN.sub(lambda m: _spelled_values(m.group()), text)


def _spelled_values(run: str) -> str:
    """``run``, a run of number words (``_SPELLED_RUN``), with each number it writes in
    digits: a word that cannot go on the number before it starts another."""
    out: list[str] = []
    number: _Spelled | None = None
    sign = ""
    tokens = [(m.group(1) or "", m.group(2).lower(), m.group(2)) for m in _RUN_TOKEN.finditer(run)]
    for i, (joint, word, written) in enumerate(tokens):
        if word == "negative":
            sign = "-"
            continue
        if number is not None and number.takes(word, joint) and not _opens_next(
                number, word, tokens[i + 1:i + 2]):
            number.add(word)
            continue
        if number is not None:
            out.append(number.digits())
            out.append(joint)
        number = _Spelled(sign) if word != "point" else None
        sign = ""
        if number is None:  # a point that opens nothing: the word as written
            out.append(written)
            continue
        number.add(word)
    if number is not None:
        out.append(number.digits())
    return "".join(out)


def _opens_next(number: _Spelled, word: str, after: list[tuple[str, str, str]]) -> bool:
    """Whether ``word`` opens the next number rather than going on ``number``: the word after
    it goes on a number it opens, not on ``number`` with it ("one hundred one hundred": the
    second "one" is the next hundred's)."""
    if not after:
        return False
    joint, following, _ = after[0]
    alone, trial = _Spelled(""), copy.copy(number)
    alone.add(word)
    trial.add(word)
    return alone.takes(following, joint) and not trial.takes(following, joint)


class _Spelled:
    """One number as its words come (``_spelled_values``)."""

    def __init__(self, sign: str) -> None:
        self.sign, self.total, self.current, self.last = sign, 0, 0, ""
        self.scale = 0  # the last scale word's value: a later one must be smaller
        self.decimals = ""

    @staticmethod
    def kind(word: str) -> str:
        return ("scale" if word in _SCALES else "hundred" if word == "hundred" else
                "point" if word == "point" else "zero" if word == "zero" else
                "tens" if word in _TENS else "teen" if _UNITS[word] >= 10 else "unit")

    def takes(self, word: str, joint: str) -> bool:
        """Whether ``word``, after ``joint``, goes on this number."""
        kind = self.kind(word)
        if self.last == "point" or self.decimals:  # digits after the point, one by one
            return kind in ("unit", "zero")
        if "and" in joint.lower() and self.last not in ("hundred", "scale"):
            return False
        if kind == "tens" and self.last == "teen" and not self.total:
            return True  # a year: "nineteen eighty"
        if kind == "hundred" and not 0 < self.current < 100:
            return False  # "one hundred one hundred" is two
        if kind == "scale" and self.scale and _SCALES[word] >= self.scale:
            return False  # "one thousand one thousand" is two
        return self.last in _GOES_AFTER[kind] or (kind == "unit" and self.last == "year")

    def add(self, word: str) -> None:
        kind = self.kind(word)
        if self.last == "point" or self.decimals:
            self.decimals += str(_UNITS[word])
        elif kind == "scale":
            self.total, self.current = self.total + (self.current or 1) * _SCALES[word], 0
            self.scale = _SCALES[word]
        elif kind == "hundred":
            self.current = (self.current or 1) * 100
        elif kind == "tens" and self.last == "teen" and not self.total:
            self.current, kind = self.current * 100 + _TENS[word], "year"
        elif kind != "point":
            self.current += _UNITS.get(word, 0) + _TENS.get(word, 0)
        self.last = kind

    def digits(self) -> str:
        whole = f"{self.sign}{self.total + self.current}"
        return f"{whole}.{self.decimals}" if self.decimals else whole


def _amount(word: str) -> int:
    return int(word) if word.isdigit() else 1 if word in ("a", "an") else _UNITS.get(word, 0)


def _spelled_numbers(words: list[str]) -> set[float]:
    """Values of runs of number words: ``twenty five`` 25, ``a hundred`` 100, ``two
    dozen`` 24, ``half a dozen`` 6, ``one and a half`` 1.5, ``three quarters`` 0.75."""
    found: set[float] = set()
    total = current = 0.0
    active = False  # inside a run; "a"/"an" opens one only before a number word
    for i, word in enumerate([*words, ""]):
        after = words[i + 1] if i + 1 < len(words) else ""
        if word in _UNITS or word in _TENS:
            current += _UNITS.get(word, 0) + _TENS.get(word, 0)
            active = True
        elif word in ("a", "an") and (active or after in _NUMBER_WORDS):
            active = True
        elif word == "and" and active and (after in _NUMBER_WORDS or after == "a"):
            continue
        elif word in ("hundred", "dozen", "couple", "pair"):
            current, active = (current or 1) * _NUMBER_WORDS[word], True
        elif word in ("half", "halves", "quarter", "quarters"):
            part = 0.5 if word.startswith("hal") else 0.25
            if words[i - 1:i] == ["a"] and total + current > 0:
                current += part  # "one and a half"
            else:
                current = current * part if current else part  # "three quarters", "half"
            active = True
        elif word in ("thousand", "million", "billion"):
            total, current, active = total + (current or 1) * _NUMBER_WORDS[word], 0.0, True
        elif active:
            if total + current:
                found.add(total + current)
            total = current = 0.0
            active = False
    return found


def _add_months(day: date, months: int) -> date:
    year, month = divmod(day.month - 1 + months, 12)
    year += day.year
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _month_ends(year: int, month: int) -> set[date]:
    if not 1 <= year <= 9999:
        return set()
    return {date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])}


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _explicit_dates(text: str, years: tuple[int, ...]) -> set[date]:
    """Dates written out in lowered ``text``; ``years``: for those written without one."""
    found: set[date | None] = set()
    for m in _ISO_DATE.finditer(text):
        found.add(_safe_date(int(m[1]), int(m[2]), int(m[3])))
    for m in _NUMERIC_DATE.finditer(text):
        year = int(m[3]) + (2000 if len(m[3]) == 2 else 0)
        found |= {_safe_date(year, int(m[1]), int(m[2])), _safe_date(year, int(m[2]), int(m[1]))}
    for pattern, month_at, day_at in ((_MONTH_DAY, 1, 2), (_DAY_MONTH, 2, 1)):
        for m in pattern.finditer(text):
            month = _MONTHS[m[month_at]]
            for year in ((int(m[3]),) if m[3] else years):
                found.add(_safe_date(year, month, int(m[day_at])))
    # a month on its own ("in November 2026"): its first and last day
    alone = _DAY_MONTH.sub(" ", _MONTH_DAY.sub(" ", text))
    for m in _MONTH_ALONE.finditer(alone):
        if m[1] not in ("may", "mar", "jan", "jun") or m[2]:  # "may", "mar": ordinary words
            for year in ((int(m[2]),) if m[2] else years):
                found |= _month_ends(year, _MONTHS[m[1]])
    return {d for d in found if d is not None}


def _today(text: str, today: date | None) -> date:
    stated = _STATED_TODAY.search(text)
    if stated:
        dates = _explicit_dates(stated[1], ())
        if len(dates) == 1 and 1900 <= (stated_day := dates.pop()).year <= 2999:
            return stated_day  # (far from date.min and date.max: no overflow below)
    return today or date.today()


def _relative_dates(text: str, today: date) -> set[date]:
    """The days ``text`` names relative to ``today`` (see the module docstring)."""
    day = timedelta(days=1)
    found: set[date | None] = set()
    words = set(_WORD.findall(text))
    if words & {"today", "now", "tonight", "current", "currently", "todays"}:
        found.add(today)
    if "tomorrow" in words:
        found |= {today + day, today + 2 * day} if "after tomorrow" in text else {today + day}
    if "yesterday" in words:
        found |= ({today - day, today - 2 * day} if "before yesterday" in text
                  else {today - day})
    monday = today - today.weekday() * day
    for m in _WEEKDAY.finditer(text):
        weekday = _WEEKDAYS[m[2]]
        this_week = monday + weekday * day
        upcoming = today + ((weekday - today.weekday()) % 7 or 7) * day
        if m[1] in ("last", "past"):
            found |= {this_week if this_week < today else this_week - 7 * day}
        elif m[1] == "next":
            found |= {upcoming, upcoming + 7 * day}
        else:
            found |= {this_week, upcoming}
    for m in _PERIOD.finditer(text):
        shift = _SHIFT[m[1]]
        if m[2] == "week":
            found |= {monday + (7 * shift + n) * day for n in range(7)} | {today + 7 * shift * day}
        elif m[2] == "weekend":
            saturday = monday + (5 + 7 * shift) * day
            if shift == 1 and today.weekday() < 5:
                found |= {saturday - 7 * day, saturday - 6 * day}  # "next" = the coming one
            found |= {saturday, saturday + day}
        elif m[2] == "month":
            other = _add_months(today, shift)
            found |= _month_ends(other.year, other.month) | {other}
        else:
            found |= {date(today.year + shift, 1, 1), date(today.year + shift, 12, 31)}
    for m in _IN_DAYS.finditer(text):
        amount, unit = (m[1], m[2]) if m[1] else (m[3], m[4])
        found.add(_shift(today, _amount(amount), unit))
    for m in _DAYS_AGO.finditer(text):
        found.add(_shift(today, -_amount(m[1]), m[2]))
    for m in _THE_NTH.finditer(text):
        for month_start in (today.replace(day=1), _add_months(today.replace(day=1), 1)):
            found.add(_safe_date(month_start.year, month_start.month, int(m[1])))
    return {d for d in found if d is not None}


def _shift(today: date, amount: int, unit: str) -> date:
    if unit == "month":
        return _add_months(today, amount)
    return today + timedelta(days=amount * (7 if unit == "week" else 1))


def _clock_times(text: str, loose: bool = True) -> set[tuple[int, int]]:
    """``(hour, minute)`` of the clock times named in lowered ``text``; ``loose``: with
    those of ``at 3`` and ``3 o'clock`` (03:00 and 15:00)."""
    found: set[tuple[int, int]] = set()
    for m in _CLOCK_12.finditer(text):
        hour, minute = int(m[1]), int(m[2] or 0)
        if 1 <= hour <= 12 and minute < 60:
            found.add((hour % 12 + (12 if m[3] == "p" else 0), minute))
    for m in _CLOCK_24.finditer(text):
        if int(m[1]) < 24 and int(m[2]) < 60:
            found.add((int(m[1]), int(m[2])))
    for m in _CLOCK_LOOSE.finditer(text) if loose else ():
        said = m[1] or m[2]
        hour = int(said) if said.isdigit() else _UNITS.get(said, 0)
        minute = 30 if m[0].startswith("half") else 0
        if 1 <= hour <= 12:
            found |= {(hour % 12, minute), (hour % 12 + 12, minute)}
    if re.search(r"\b(?:noon|midday)\b", text):
        found.add((12, 0))
    if "midnight" in text:
        found.add((0, 0))
    return found


# The largest percent whose fraction counts as the number the text gives (1000% is 10).
PERCENT_LIMIT = 1000.0


def _hundredth_reads(number: float, written_as_percent: bool) -> bool:
    """Whether ``number``'s hundredth is a reading of it: a percent's fraction, where it is
    written with a percent sign, or is small enough to be a rate written without one."""
    return written_as_percent or abs(number) <= PERCENT_LIMIT


def _hundredfold_reads(number: float) -> bool:
    """Whether a hundred times ``number`` is a reading of it: a fraction's percent."""
    return abs(number) < 1


class _Context:
    """Everything ``text`` gives: words, numbers, days and clock times."""

    def __init__(self, text: str, today: date | None = None) -> None:
        prepared = _Text.of(text)
        lowered = prepared.folded
        words = _WORD.findall(lowered)
        # "5km" is "5" and "km" too
        self.words = {s for w in {*words, *prepared.joined.split()} for s in word_forms(w)}
        squashed = ["".join(words)]
        for group in _GROUPS:
            if group.found_in(prepared):
                self.words |= {s for w in group.words for s in word_forms(w)}
                squashed.extend(group.squashed)
        self.squashed = "|".join(squashed)  # "|": no value matches across two forms
        self.folded = lowered
        # Runs of digits joined by dots, as written: versions, addresses ("2.1.3").
        self.dotted = {m.group() for m in _DOTTED.finditer(text)}

        self.numbers: set[float] = {v for m in _NUMBER.finditer(text)
                                    if (v := _to_float(m.group())) is not None}
        # written with a percent sign or word ("2000%", "5 percent")
        self.percents = {v for m in _NUMBER.finditer(text) if _PERCENT_AFTER.match(text, m.end())
                         and (v := _to_float(m.group())) is not None}
        plain = set(prepared.joined.split())  # as written: not stems, not synonyms
        self.numbers |= {float(v) for w, v in _NUMBER_WORDS.items() if w in plain}
        self.numbers |= _spelled_numbers(re.findall(r"[a-z]+", lowered))
        self.numbers |= {float(m[1]) * _SCALE[m[2]] for m in _SCALED.finditer(lowered)}
        self.numbers |= {int(m[1]) / int(m[2]) for m in _FRACTION.finditer(lowered)
                         if int(m[2])}
        for m in _AND_A_HALF.finditer(lowered):
            whole = _to_float(m[1])
            self.numbers.add((1.0 if whole is None else whole) + 0.5)

        now = _today(lowered, today)
        # a date written without its year: this year, next year, or a year the text names
        years = {now.year, now.year + 1} | {
            int(y) for y in re.findall(r"(?<!\d)(?:19|20)\d\d(?!\d)", lowered)}
        self.days = _explicit_dates(lowered, tuple(sorted(years)))
        with suppress(OverflowError, ValueError):  # a "today" at the edge of the calendar
            self.days |= _relative_dates(lowered, now)
        self.times = _clock_times(lowered)
        self.numbers |= {float(now.year + _SHIFT[m[1]]) for m in _PERIOD.finditer(lowered)
                         if m[2] == "year"}
        # the hour of a written clock time ("5pm" 17), not of "at 5" (any "at one point")
        self.numbers |= {float(h) for h, _ in _clock_times(lowered, loose=False)}
        self.numbers |= {float(_MONTHS[m[1]]) for m in _MONTH_ALONE.finditer(lowered)
                         if m[1] not in ("may", "mar", "jan", "jun") or m[2]}

    def has_number(self, value: float) -> bool:
        """Whether the text gives ``value``: as written (or its magnitude), or read in
        percent — the hundredth of a number written with a percent sign, or of any number up
        to ``PERCENT_LIMIT`` (a rate may be written without its sign: "a rate of 5" for
        0.05), and a hundred times a number below 1 ("a yield of 0.05" for 5). A bound on
        magnitude, not a percent check: "$16" still gives 0.16; but "equity of $10,000,000"
        no longer gives 100000, nor "$16" 1600, nor "in 5 years" 500 (BFCL calls that
        grounding let through)."""
        if not math.isfinite(value):
            return False

        def same(a: float, b: float) -> bool:
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

        return any(same(value, n) or same(abs(value), n)
                   or _hundredth_reads(n, n in self.percents) and same(value * 100, n)
                   or _hundredfold_reads(n) and same(value / 100, n) for n in self.numbers)

    def has_string(self, value: str) -> bool:
        stripped = value.strip()
        moment = _datetime_value(stripped)
        if moment is not None:
            day, clock = moment
            return ((day is None or day in self.days)
                    and (clock is None or clock == (0, 0) and day is not None
                         or clock in self.times))
        bare = stripped.strip("$€£%")
        if _NUMBER.fullmatch(bare):
            return self.has_number(_to_float(bare) or 0.0)
        # A version or an address is given whole, not by its parts: SmolLM2 wrote
        # ".1.2.2" for "version 2.1.3", whose 1s and 2s grounded it word by word. A date
        # written with dots ("17.04.2023") is a day the conversation names, in any form.
        if any(m.group() not in self.dotted and day_of(m.group()) not in self.days
               for m in _DOTTED.finditer(value)):
            return False
        words = _WORD.findall(fold(value))
        if not words:
            return False  # an empty (or punctuation-only) value: nothing was given
        if "".join(words) in self.squashed:
            return True
        return sum(self.has_word(w) for w in words) * 2 >= len(words)

    def has_word(self, word: str) -> bool:
        if word_forms(word) & self.words:
            return True
        return word.isdigit() and self.has_number(float(word))


def _datetime_value(value: str) -> tuple[date | None, tuple[int, int] | None] | None:
    """``(day, (hour, minute))`` of a value that is a date, a date-time or a clock time."""
    lowered = value.lower()
    if m := _VALUE_DATETIME.fullmatch(lowered):
        day = _safe_date(int(m[1]), int(m[2]), int(m[3]))
        if day is None:
            return None
        return day, (int(m[4]), int(m[5])) if m[4] else None
    m = _VALUE_TIME.fullmatch(lowered)
    if m and (m[2] or m[4]):  # "15:00", "3pm"; a bare "15" is a number
        hour = int(m[1]) % 12 + (12 if m[4] == "p" else 0) if m[4] else int(m[1])
        if hour < 24 and int(m[2] or 0) < 60:
            return None, (hour, int(m[2] or 0))
    return None


@lru_cache(maxsize=32)
def _context(text: str, today: date) -> _Context:
    # The loop checks every call of a step against the same conversation.
    return _Context(text, today)


# --- the checks ---------------------------------------------------------------------------


def _supplied(schema: dict[str, Any], value: Any) -> bool:
    """The schema itself offers this value (enum member, const, default)."""
    if not isinstance(schema, dict):
        return False
    return (value in (schema.get("enum") or []) or ("const" in schema
            and schema["const"] == value) or ("default" in schema
                                              and schema["default"] == value))


def _sub_schema(schema: Any, key: str | int) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    if isinstance(key, int):
        items = schema.get("items")
        return items if isinstance(items, dict) else {}
    props = schema.get("properties") or {}
    return props.get(key) or {}


def _walk(value: Any, schema: dict[str, Any], path: str, context: _Context,
          found: list[tuple[str, Any]]) -> None:
    if value is None or isinstance(value, bool) or _supplied(schema, value):
        return
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # a digit loop past a float's range: no number given
            found.append((path, value))
            return
        if not context.has_number(number):
            found.append((path, value))
    elif isinstance(value, str):
        if (not context.has_string(value) or _template_copy(value, schema, context)
                or _invented_path(value, context)):
            found.append((path, value))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, _sub_schema(schema, i), f"{path}[{i}]", context, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, _sub_schema(schema, key), f"{path}.{key}", context, found)


# A file path: one word (no spaces, not a URL) with a root ("/", "~", "./", "C:\\") or a
# file name ("notes.txt") after a folder separator.
_PATH = re.compile(r"(?:[/\\~]|\.{1,2}[/\\]|[A-Za-z]:[/\\])\S*|\S*[/\\][^/\\\s]*\.[A-Za-z0-9]{1,5}")
_PATH_PARTS = re.compile(r"[/\\]+")
_FILE_NAME = re.compile(r"(?<![\w.-])[\w-]+\.([A-Za-z0-9]{1,5})(?![\w-])")


def _invented_path(value: str, context: _Context) -> bool:
    """Whether ``value`` is a file path whose last part (the file or folder it names) the
    conversation does not write. The folders before it may be the model's (a home or
    working folder); the name it acts on must be the user's. Half its words ground a
    template's path: "/path/to/file.txt" for "Delete the file notes.txt" has "file" and
    "txt" (a sensitive tool's call, put to the user for approval as if it were theirs).
    The name counts as written without a leading dot ("~/.bashrc" for "my bashrc"), a
    folder's as any form of its one word ("~/Documents" for "my document folder"), and a
    file's by its stem where the conversation names no file of its kind ("./README.md" for
    "Summarize the README", not "file.txt" beside "notes.txt"); a pattern ("*.pdf") names
    no one file."""
    if "://" in value or not _PATH.fullmatch(value):
        return False
    last = _PATH_PARTS.split(value.rstrip("/\\"))[-1]
    if (not re.search(r"[^\W\d_]", last) or last.endswith(":") or last in ("~", ".", "..")
            or any(c in last for c in "*?[")):
        return False  # a root, a drive, the home folder or a pattern: no name to check

    def written(name: str) -> bool:
        return re.search(rf"(?<![\w.-]){re.escape(fold(name))}(?![\w-])",
                         context.folded) is not None

    name = last.lstrip(".") or last
    if written(last) or written(name):
        return False
    stem, dot, kind = name.rpartition(".")
    if not dot:  # a folder (or a file without a kind): its one word, in any form
        words = _WORD.findall(fold(name))
        return not (len(words) == 1 and context.has_word(words[0]))
    named_kinds = {m[1].lower() for m in _FILE_NAME.finditer(context.folded)}
    return not (stem and written(stem) and kind.lower() not in named_kinds)


# Top-level string arguments whose value the model legitimately composes rather than copies
# (a search query, an image prompt): they are never flagged.
FREE_TEXT = frozenset({"query", "q", "search_query", "search", "prompt", "keywords"})


def ungrounded_args(args: dict[str, Any], schema: dict[str, Any], context: str, *,
                    today: date | None = None) -> list[tuple[str, Any]]:
    """``(path, value)`` of every argument value that ``context`` does not contain.

    ``today`` anchors relative dates (``tomorrow``) when the conversation states no date;
    by default the real current date."""
    found: list[tuple[str, Any]] = []
    ctx = _context(context, today or date.today())  # the real date is part of the key
    for key, value in args.items():
        spec = _sub_schema(schema, key)
        if key.lower() in FREE_TEXT and isinstance(value, str) and not _template_copy(
                value, spec, ctx):
            continue  # the escape for text the model composes: a search query, a prompt
        _walk(value, spec, key, ctx, found)
    return found


# The form a description gives its argument's values: the quoted strings of the clause
# after "format", "formatted as" or "in the form" ("in the format 'YYYY-MM-DD' or
# 'MM/DD/YYYY'", "formatted as 'Street, City'", "It can be in the format 'track:Song Name
# artist:Artist Name'") that hold a placeholder — a date or time code, a brace or bracket, or
# a word that stands for a value ("City", "Name", "value"). SmolLM2 searched Spotify for
# "track:Song Name artist:Artist Name" for "Can you search for 'Baby Shark'?". A quoted
# example ("'12h' or '24h'", "'v1'", "'New York, NY'") is a value, which the user may write
# another way: not a template.
_FORMAT_WORD = re.compile(r"\b(?:format(?:ted)?|in the form)\b", re.IGNORECASE)
_CLAUSE_CUT = re.compile(r"\.\s|\n|;")
_QUOTED = re.compile(r"(['\"])(.+?)\1")
_PLACEHOLDER = re.compile(
    r"\{[^{}]*\}|\[[^\[\]]*\]|\b(?:YYYY|YY|MMM|MM|DD|HH|hh|mm|ss|SS)\b|"
    r"\b(?i:name|city|state|street|country|address|zip|postal|location|region|latitude"
    r"|longitude|first|last|value|field|hostname|username|width|height)\b")


def format_templates(description: str) -> set[str]:
    """The format templates ``description`` names (``_FORMAT_WORD``), folded."""
    out = set()
    for match in _FORMAT_WORD.finditer(description):
        clause = _CLAUSE_CUT.split(description[match.end():match.end() + 160], maxsplit=1)[0]
        out |= {fold(q[2].strip()) for q in _QUOTED.finditer(clause) if _PLACEHOLDER.search(q[2])}
    return out


def _template_copy(value: str, schema: dict[str, Any], context: _Context) -> bool:
    """Whether ``value`` is a format template its argument's description names, which the
    conversation does not write (nor the schema offer: a default stays one)."""
    description = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(description, str) or _supplied(schema, value):
        return False
    folded = fold(value.strip())
    return folded in format_templates(description) and re.search(
        rf"(?<!\w){re.escape(folded)}(?!\w)", context.folded) is None


def stated(value: str, context: str, *, today: date | None = None) -> bool:
    """Whether ``context`` states the string ``value`` word for word: every word of it is
    in the conversation, a qualifier after its first comma aside (``Paris, France``), or it
    is a run of the conversation's words written without their spaces (``LosAngeles``); an
    identifier joined with "_" or "-" of three words or more only where those words stand
    one after another (``chai_tea_snack`` is not stated by "chai tea for my snack").
    Stricter than grounding, which takes half of the words ("Liverly Football Club" is
    grounded in "Liverpool Football Club", not stated); dates, times and numbers are read
    as grounding reads them."""
    ctx = _context(context, today or date.today())
    if _datetime_value(value.strip()) is not None or _NUMBER.fullmatch(
            value.strip().strip("$€£%")):
        return ctx.has_string(value)
    head, comma, tail = value.partition(",")
    if comma and re.search(r"[^\W\d_]", head) and re.match(r"\s*[^\W\d_]", tail):
        value = head  # "Paris, France": the place, its qualifier aside
    words = _WORD.findall(fold(value))
    if not words:
        return False
    token = value.strip()
    if _JOINED.fullmatch(token) and len(_LETTERED.findall(token)) >= 2:
        # An identifier the model joined from the user's words ("chai_tea_snack_16_ounces"
        # for "... chai tea ... as a snack ... 16 ounces"): the words as the user wrote
        # them, one after another, or it is the model's own.
        return _in_run(words, context)
    if all(ctx.has_word(w) for w in words):
        return True
    squashed = "".join(words)
    if not squashed.isascii():  # scripts written without spaces: any run of the text
        return squashed in ctx.squashed
    spaced = r"\s?".join(map(re.escape, squashed))
    return re.search(rf"(?<![^\W_]){spaced}(?![^\W_])", _spaced_words(context)) is not None


@lru_cache(maxsize=32)
def _spaced_words(context: str) -> str:
    return " ".join(_WORD.findall(fold(context)))


# One token of three words or more joined by "_" or "-" ("to-do-with-content"), not a date
# ("2023-04-22": two of its parts at least have letters).
_JOINED = re.compile(r"[^\W_]+(?:[_-][^\W_]+){2,}")
_LETTERED = re.compile(r"(?:^|[_-])[^\W_]*[^\W\d_][^\W_]*")


def _in_run(words: list[str], context: str) -> bool:
    """Whether the conversation writes ``words`` one after another."""
    return re.search(rf"(?<![^ ]){re.escape(' '.join(words))}(?![^ ])",
                     _spaced_words(context)) is not None


# The date formats a description may name, and how each is written.
_DATE_FORMATS = {"YYYY-MM-DD": "%Y-%m-%d", "MM/DD/YYYY": "%m/%d/%Y", "DD/MM/YYYY": "%d/%m/%Y",
                 "MM-DD-YYYY": "%m-%d-%Y", "DD-MM-YYYY": "%d-%m-%Y"}
_DATE_FORMAT = re.compile(r"(?<![A-Za-z])(?:" + "|".join(_DATE_FORMATS) + r")(?![A-Za-z])",
                          re.IGNORECASE)
_DATE_ALONE = (_ISO_DATE, _NUMERIC_DATE, _MONTH_DAY, _DAY_MONTH)


def date_form(description: str) -> str | None:
    """The ``strftime`` form of the first date format ``description`` names ("in the
    format 'YYYY-MM-DD'": ``%Y-%m-%d``); None when it names none, or a time of day too."""
    named = [_DATE_FORMATS[m.upper()] for m in _DATE_FORMAT.findall(description)]
    return named[0] if named and not re.search(r"(?i)\bhh\b", description) else None


def days_and_times(text: str) -> tuple[set[date], set[tuple[int, int]]]:
    """The days and clock times (hour, minute) ``text`` gives, as grounding reads them: a
    date or time value no other text gives is invented."""
    ctx = _context(text, date.today())
    return set(ctx.days), set(ctx.times)


def day_of(value: str) -> date | None:
    """The day ``value`` is when it is one date alone with its year ("2023-04-15", "April
    15th, 2023"); None otherwise (a range, a date-time, a date read two ways)."""
    alone = value.strip().lower().rstrip(".")
    if not any(pattern.fullmatch(alone) for pattern in _DATE_ALONE):
        return None
    days = _explicit_dates(alone, ())
    return days.pop() if len(days) == 1 else None


def date_in_format(value: str, description: str) -> str | None:
    """``value``, a date alone with its year ("April 15th, 2023", "2023.4.17"), written in
    the first format ``description`` names ("in the format 'YYYY-MM-DD'"); None when it
    names none or a time of day too (``HH:MM``), when the value already has a named format,
    or when it is not one date alone (a date read two ways, "on April 15, 2023", a range)."""
    named = [_DATE_FORMATS[m.upper()] for m in _DATE_FORMAT.findall(description)]
    form = date_form(description)
    day = day_of(value)
    if form is None or day is None or any(day.strftime(f) == value.strip() for f in named):
        return None
    return day.strftime(form)


_TIME_ALONE = re.compile(r"(?i)\s*\d{1,2}(?::\d{2})?(?::00)?\s*(?:[ap]\.?m\.?)?\s*")


def time_in_format(value: str, description: str) -> str | None:
    """``value``, a clock time alone ("9 am", "2pm", "10:00 AM", "9:00"), written as the
    24-hour ``HH:MM`` its argument's ``description`` names; None when it names another
    form (``AM/PM``, a date too) or the value is not one clock time alone."""
    if not re.search(r"\bHH:MM\b", description) or re.search(
            r"(?i)\b(?:AM/PM|a\.?m\.?/p\.?m\.?|YYYY|DD)\b", description):
        return None
    if not _TIME_ALONE.fullmatch(value) or not re.search(r"(?i)[:apm]", value):
        return None
    times = _clock_times(value.lower(), loose=False)
    if len(times) != 1:
        return None
    hour, minute = times.pop()
    return f"{hour:02d}:{minute:02d}"


# What the refusal tells the model to do (not repeated to the user).
GROUNDING_ADVICE = ("Use only values the user gave; if no tool fits the question, answer "
                    "directly without a tool.")


@dataclass(frozen=True)
class Grounded:
    """A call's arguments as grounding leaves them (:func:`ground`)."""

    args: dict[str, Any]  # invented optional values set to their default, or left out
    dropped: list[str]  # those optional arguments, sorted
    refused: list[tuple[str, Any]]  # invented values of required arguments: no call


def ground(args: dict[str, Any], schema: dict[str, Any], context: str) -> Grounded:
    """``args`` as the loop runs them with grounding on: a call with an invented required
    value is refused (``refused``, the arguments as they were); an invented optional
    value gives way to the argument's default, or the argument is left out."""
    found = ungrounded_args(args, schema, context)
    required = set(schema.get("required") or [])
    refused = [f for f in found if _top(f[0]) in required]
    top = {_top(path) for path, _ in found}
    if refused or not top:
        return Grounded(dict(args), [], refused)
    out = dict(args)
    props = schema.get("properties") or {}
    for key in top:
        spec = props.get(key)
        default = spec.get("default") if isinstance(spec, dict) else None
        if default is not None:
            out[key] = default
        else:
            out.pop(key, None)
    return Grounded(out, sorted(top), [])


def _top(path: str) -> str:
    """The argument a value path (``items[2].qty``) belongs to."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def grounding_error(tool: str, found: list[tuple[str, Any]]) -> str:
    """The message for a call whose arguments were not in the conversation."""
    shown = ", ".join(f"{path}={_short(value)}" for path, value in found[:4])
    return (f"'{tool}' was called with values that appear nowhere in the conversation "
            f"({shown}). {GROUNDING_ADVICE}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _values_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(_values_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_values_text(v) for v in value)
    return "" if value is None or isinstance(value, bool) else str(value)


def numbers_in(text: str) -> list[str]:
    """The numbers written in ``text`` (``5``, ``-4``, ``1,000``, ``2.5e-3``), as written;
    not a unit's exponent (the ``2`` of ``m/s^2`` or ``x^2``), part of the unit, nor a
    power of ten's (``8.854 × 10^-12``), part of the number. Other numbers' exponents are
    items: "2^10 and 2^20" lists 10 and 20."""
    return [m.group() for m in _number_matches(text)]


def _number_matches(text: str) -> list[re.Match[str]]:
    """The matches of :func:`numbers_in`'s numbers."""
    return [m for m in _NUMBER.finditer(text)
            if not _UNIT_EXPONENT.search(text, max(0, m.start() - 4), m.start())]


def date_time_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` names a day (with its month) or a clock time, as offsets."""
    folded = fold(text)
    same = len(folded) == len(text)  # offsets of the folded text hold for ``text``
    found = [(m.start(), m.end()) for p in (_ISO_DATE, _NUMERIC_DATE) for m in p.finditer(text)]
    if same:
        found += [(m.start(), m.end()) for p in (_MONTH_DAY, _DAY_MONTH, _CLOCK_12, _CLOCK_24)
                  for m in p.finditer(folded)]
    return found


def unused_numbers(request: str, calls_args: Iterable[dict[str, Any]]) -> list[str]:
    """The numbers of ``request`` that no call's arguments contain (as a number, in
    percent, or inside a string): what a further call in the same step could be for. A
    number the request writes both in percent and bare ("a rate of 5% for 1, 5 and 10
    years") is two items: 0.05 uses the percent, only 5 uses the bare one. The numbers of a
    day or clock time (``date_time_spans``) are no items."""
    used = _Context(" ".join(_values_text(args) for args in calls_args)).numbers
    matches = _number_matches(request)
    # A day or a clock time the request names is one argument's value, not items further
    # calls are for: "2 tickets on the 15th of April, 2023, at 19:00" had a second call
    # with 15 tickets, a third with 2023.
    moments = date_time_spans(request)
    matches = [m for m in matches if not any(a <= m.start() < b for a, b in moments)]
    value = {m.start(): float(m.group().replace(",", "").replace("_", "")) for m in matches}
    in_percent = {m.start() for m in matches if _PERCENT_AFTER.match(request, m.end())}
    percents = {value[start] for start in in_percent}

    def found(start: int) -> bool:
        number = value[start]
        # "5%" as 0.05, and "0.05" as 5 (a fraction written in percent): the readings
        # grounding accepts (``has_number``). A call's 1000 does not use the request's 10,
        # nor does its 100000 use "$10,000,000".
        # A bare number written elsewhere in percent too is the bare item only.
        fraction = [number / 100] if start in in_percent or (
            number not in percents and _hundredth_reads(number, False)) else []
        readings = {number, abs(number), *fraction,
                    *([number * 100] if _hundredfold_reads(number) else [])}
        return any(math.isclose(r, u, rel_tol=1e-9, abs_tol=1e-12)
                   for r in readings for u in used)

    return [m.group() for m in matches if not found(m.start())]
