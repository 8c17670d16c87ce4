"""Argument values the model cannot invent: each one chosen among what the conversation
offers, ranked by the model's own probability.

After the grammar has decoded a call's arguments (the model's wish), each top-level
string or number argument is chosen again, left to right, among the values the
conversation supports (:mod:`callgate.tools.candidates`: spans of its words, its
numbers; an enum's members), ranked as whole values by the model
(:meth:`callgate.models.llamacpp.ChatLlamaCppText.rank`). The model's own value stays
only when the conversation supports it too, or when it is more likely than the best
supported one by ``margin`` (log-probability): then it is a value the model needs and
the conversation lacks, which grounding refuses — how callgate tells a question no tool
fits. A further call of the same turn pays ``reuse_penalty`` for each value an earlier
call of that tool gave the same argument, so that calls go through the items the user
listed instead of repeating the first. With ``distinct`` (the default), one span of the
conversation, and one number the request writes once, stands for one argument of a call
(SmolLM2 copies a span into the next argument: ``"city": "San Francisco", "state": "San
Francisco"``, the 10 of "10 Hz" into ``end_range``): an optional argument repeating
another's value is dropped, and of two required ones the argument that loses less by
moving to its next-best value moves. Likewise a span holding another argument's value
whole ("Hilton Hotel Chicago" beside ``"location": "Chicago"``) is one value copied into
two (``uncontained``).

The model's own string counts as supported only where the conversation states every word
of it (``word_for_word``) — the schema's default too, where the request names its argument
(``named_defaults``); an enum member the request names is the value
(``named_members``), and an optional enum argument none of whose options the request names
is left to the tool's default (``unnamed_options``). Last, the values take the form their
argument's description asks for: a date in the format it names (``date_formats``), a place
with the two-letter code its examples show, ranked by the model (``place_codes``:
"Petaluma" becomes "Petaluma, CA"), or with what the request writes after it to say where
it is ("Paris, France", not the ranked "Paris, CA"), a value with the comma parts the request
writes after it, as many as the format its description names has (``format_parts``: "2020
Addison Street, Berkeley, CA" becomes "..., CA, USA"), and a value an argument's ``pattern``
admits, copied from the request, the longest span of the request around it that the
pattern admits (``whole_patterns``: "144" becomes "144 divided by 16").

Free text (a search query, a message, a date in the tool's format) stays the model's,
and an optional argument with an invented value is left to grounding, which drops it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import lru_cache
from string import ascii_uppercase
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage

from callgate.models.ranking import Ranked
from callgate.tools.asks import item_key
from callgate.tools.candidates import (
    is_free_text,
    name_words,
    number_values,
    spans,
)
from callgate.tools.grounding import (
    date_in_format,
    date_time_spans,
    days_and_times,
    format_templates,
    numbers_in,
    stated,
    time_in_format,
    ungrounded_args,
)
from callgate.tools.relevance import (
    CLAUSE_END,
    PUNCTUATION_END,
    STOP_WORDS,
    affirmed_flags,
    described_members,
    flag_values,
    mentioned_arguments,
    named_members,
    number_readings,
    word_named_members,
)

__all__ = ["ValueChooser"]

STRING_END = '"'
NUMBER_END = ",}]\n"
# An argument whose description shows a place with a two-letter code ('Berkeley, CA',
# 'London, UK'), and every such code, written as it follows the comma.
_CODED_EXAMPLE = re.compile(r"'[^',]+, [A-Z]{2}'")
_EXAMPLE = re.compile(r"'([^',]+), ([^',]+)'")  # 'Tokyo, Japan', and 'City, Country'
_CODES = [f" {a}{b}" for a in ascii_uppercase for b in ascii_uppercase]
# A place as such an argument takes it (a name: capitalised): no comma, not already ending
# in a code ("Berkeley CA").
_PLACE = re.compile(r"[^,]+(?<! [A-Z]{2})")
_TIMES = re.compile(r"(?<=\d)\s*[x×]\s*(?=\d)")  # "512x512": two numbers
# What a request writes after a place and a comma to say where it is: a code ("UK",
# "USA") or one or two capitalised words ("Thailand", "New Zealand").
_PLACE_QUALIFIER = r"(?:[A-Z]{2,3}|[A-Z][a-z]+(?: [A-Z][a-z]+)?)\b(?! ?[A-Za-z]*\d)"
# A US state written whole stands for its postal code where the argument asks for codes.
_US_STATES = {
    "Alabama": "AL", "Alaska": "AK", "Arizona": "AZ", "Arkansas": "AR", "California": "CA",
    "Colorado": "CO", "Connecticut": "CT", "Delaware": "DE", "Florida": "FL",
    "Georgia": "GA", "Hawaii": "HI", "Idaho": "ID", "Illinois": "IL", "Indiana": "IN",
    "Iowa": "IA", "Kansas": "KS", "Kentucky": "KY", "Louisiana": "LA", "Maine": "ME",
    "Maryland": "MD", "Massachusetts": "MA", "Michigan": "MI", "Minnesota": "MN",
    "Mississippi": "MS", "Missouri": "MO", "Montana": "MT", "Nebraska": "NE",
    "Nevada": "NV", "New Hampshire": "NH", "New Jersey": "NJ", "New Mexico": "NM",
    "New York": "NY", "North Carolina": "NC", "North Dakota": "ND", "Ohio": "OH",
    "Oklahoma": "OK", "Oregon": "OR", "Pennsylvania": "PA", "Rhode Island": "RI",
    "South Carolina": "SC", "South Dakota": "SD", "Tennessee": "TN", "Texas": "TX",
    "Utah": "UT", "Vermont": "VT", "Virginia": "VA", "Washington": "WA",
    "West Virginia": "WV", "Wisconsin": "WI", "Wyoming": "WY",
}
_NUMBERISH = re.compile(r"[\d.,:/ +-]+")  # a value that is digits alone: "4.1", "2023.4"
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")  # "{user_id}": a template's slot
_WORDS = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")  # "1kg": 1 and kg; "1.5" one number
_FORMULA = re.compile(r"[\^*+=]")  # "3x^2 + 2x - 1" holds its numbers as a formula
_VARIABLE = re.compile(r"(?<![^\W\d_])[a-z](?![^\W_])")  # a lone letter: the x of "2x^2"
_POWER = re.compile(r"\s*(?:\^|\*)")  # what follows a variable: "x^2", "x**2", "x * y"
_EXPONENT = re.compile(r"(?:\^|\*\*)\s*-?\d+(?:\.\d+)?")  # "^2", "** 3": a power, no number


@dataclass(frozen=True)
class _Formula:
    """What the formulas a call holds mean for its number arguments (``formula_numbers``)."""

    refused: frozenset[float]  # the formulas' own numbers: no values for them
    apart: frozenset[float]  # the numbers the call's ask states outside the formulas


_NO_FORMULA = _Formula(frozenset(), frozenset())


@dataclass(frozen=True)
class _Offer:
    """One argument's candidates as the model would write them after ``"name":``."""

    texts: list[str]  # continuations of the prefill
    values: list[Any]  # the JSON values they stand for
    quoted: bool  # the prefill opens a string (``"name": "``)
    closed: bool = False  # an enum: every value the grammar allowed is an offer


@dataclass
class ValueChooser:
    """Chooses a call's argument values (see the module docstring)."""

    model: Any  # a ChatLlamaCppText: it has ``rank``
    margin: float = 3.0
    floor: float = -4.0  # an unsupported value gives way only to an offer this likely
    reuse_penalty: float = 2.0
    # The model's own value stays when the conversation has it (enums are ranked anyway:
    # greedy decoding picked a member by its first token).
    keep_supported: bool = True
    distinct: bool = True  # one span, one number written once, per argument (module docstring)
    # A string the model wrote counts as supported only when the conversation states it
    # word for word (``grounding.stated``), not when grounding finds half of its words:
    # "Liverly Football Club", "Manchester City" (for Manchester United) and "SAN DIO"
    # were kept as supported, and are then ranked against the spans like any other wish.
    word_for_word: bool = True
    # An enum member the request names ("in the kitchen": ``Kitchen``) is the value; where
    # it names several, the model ranks those (``relevance.named_members``). The model
    # ranked every member and often took the first or the default ("Living room").
    named_members: bool = True
    # Where the request names no member of a required enum argument whole, the one member
    # it names by a word of that member's own ("a family therapist": ``Family Counselor``;
    # ``relevance.word_named_members``). SmolLM2 ranked "Psychiatrist" first. Not for an
    # optional one: a word is weaker evidence than the whole name, and "attractions in
    # Paris" asks for no ``category`` "Tourist Attraction" (tune: 3 such downs).
    member_words: bool = True
    # Where the request names no member of a required enum argument, by its name or a word
    # of it, the one member it names by a word the argument's description says of that
    # member alone ("remove the task" names ``delete`` of "'add' to add a new task, 'delete'
    # to remove an existing task"; ``relevance.described_members``). SmolLM2 wrote "add".
    described_members: bool = True
    # A place whose argument asks for a two-letter code ("in the format 'City, State', such
    # as 'Berkeley, CA'") and lacks one gets the code the model ranks first among all
    # two-capital-letter codes: "Petaluma" becomes "Petaluma, CA". The model wrote the
    # city alone, as the user did. Where the user said where the place is ("Paris,
    # France"), that stays, a US state whole as its code (``_stated_qualifier``): a fix
    # against an invented code ("Paris, CA"); tune 2 up, 0 down; validate no reply changed.
    place_codes: bool = True
    # A date written in the format its argument's description names ("in the format
    # 'YYYY-MM-DD'": "April 15th, 2023" becomes "2023-04-15"; ``grounding.date_in_format``).
    date_formats: bool = True
    # An optional enum argument with a default whose options are words (not "True"/"False",
    # not numbers, which a request says otherwise: "free", "two rooms"), where the request
    # names none of them, is left out: the tool's default applies. SmolLM2 picked an option
    # by taste ("genre": "Drama", "category": "Museum" for "attractions in Paris").
    unnamed_options: bool = True
    # An optional boolean argument the request neither names nor asks for
    # (``relevance.mentioned_arguments``, ``relevance.affirmed_flags``) is left out: the
    # tool's default applies. SmolLM2 set flags nobody asked about (``"private": true``).
    unstated_flags: bool = True
    # A flag the request says no to (``relevance.flag_values``) is asked about too: the
    # strategy's grammar writes it false (``ReactStrategy.said_flags``).
    said_flags: bool = True
    # An optional argument the request names ("directed by Wes Anderson" for
    # ``directed_by``) whose value the model wrote as the schema's default ("dontcare"), a
    # default the conversation does not state, is chosen among the conversation's values
    # like an invented one: the default stays only where no offer is likely
    # (``mentioned_arguments``). SmolLM2 wrote the default for a director, a cast member or
    # a theater the request named.
    named_defaults: bool = True
    # The part of the request this call is for (``callgate.tools.asks``), when the request
    # asks for several things: a value it does not hold pays ``focus_penalty``, so that
    # the call for "Then get the fibonacci series upto 150" takes 150, not the 50 of "prime
    # numbers between 50 and 150" before it.
    focus: str | None = None
    focus_penalty: float = 2.0
    # A rate the request gives in percent ("an interest rate of 5%") is written as the
    # fraction its argument takes (0.05): a ``number`` argument named or described as a
    # rate, a yield, a return or a decimal, whose description does not ask for a
    # percentage. SmolLM2 copied the 5.
    percent_rates: bool = True
    # A clock time written as the 24-hour 'HH:MM' its argument's description names ("9 am"
    # becomes "09:00", "2pm" "14:00"; ``grounding.time_in_format``).
    time_formats: bool = True
    # A value for an argument with a ``pattern`` (the calculator's expression), copied from
    # the request, becomes the longest span of the request around it that the pattern
    # admits: SmolLM2 stopped at "144" of "144 divided by 16", "12 + 8" of "(12 + 8) * 3"
    # and "7" of "7 cubed" (the answer-quality set), and the calculator computed that.
    whole_patterns: bool = True
    # A span holding another argument's value whole ("Hilton Hotel Chicago" beside the
    # location "Chicago", "C major" beside the key "C", "2022/AL2562" beside the court
    # "AL2562") is one value copied into two arguments: of the two, the one that loses
    # less by moving to its next-best offer (a span not holding the other's value, or one
    # the other does not hold) moves; where neither can, both stay (a hotel's name may hold
    # its city). Tune: all 13 questions with such a call were wrong.
    uncontained: bool = True
    # A formula another argument of the call holds ("2x^2", "5y^3 - 4y + 2") holds its own
    # numbers: those the conversation writes nowhere else are no values for the call's
    # number arguments (``_formula_numbers``): not offered, no support for the model's
    # value, and given way to an offer above the floor or, for a required argument, to a
    # number the call's ask states apart from the formula however unlikely; else the
    # model's value stays, or an optional argument is left to the tool's default. SmolLM2
    # took the 2 of "the derivative of 2x^2 at x = 1" for ``value``, the 5 of "'5y^3 - 4y +
    # 2' at the value of 3". BFCL's tools beside a formula take points and limits, never
    # its coefficients.
    formula_numbers: bool = True
    # A value the request goes on from with more comma parts, where its argument's
    # description names a format of comma parts ("in the format of 'Street Address, City,
    # State (abbr), Country'"), takes as many of them as the format has (``_in_parts``).
    format_parts: bool = True
    # The arguments a request names by their role count as mentioned
    # (``relevance.ROLE_WORDS``), here as where the grammar reads them.
    role_words: bool = True
    max_expansions: int = 48

    def choose(self, prompt: list[AnyMessage], head: str, args: dict[str, Any],
               schema: dict[str, Any], context: str, earlier: list[dict[str, Any]], *,
               request: str = "", settled: dict[str, Any] | None = None) -> dict[str, Any]:
        """``args`` with each value chosen again. ``prompt`` ends with the reply so far;
        ``head`` is what the reply has before the arguments (``Action Input: ``);
        ``earlier``: the arguments of this turn's earlier calls to the same tool;
        ``request``: the user's request, whose spans are offered even where long tool
        results have pushed it out of the conversation's latest words; ``settled``: the
        leading arguments, taken as they are."""
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        chosen: dict[str, Any] = dict(settled or {})
        # The open offers (spans, numbers) of the arguments chosen among them.
        offers_of: dict[str, tuple[list[AnyMessage], _Offer]] = {}
        wishes = dict(args)  # the model's values, less those a formula holds
        asked: set[str] | None = None
        # The arguments the request names: read only by the two rules that ask about them.
        mentioned = set(mentioned_arguments(schema, request, roles=self.role_words)) if (
            request and (self.unstated_flags or self.named_defaults)) else set()
        if self.unstated_flags and request:
            asked = {*mentioned, *affirmed_flags(schema, request)}
            if self.said_flags:
                asked |= set(flag_values(schema, request))
        for name, value in args.items():
            if name in chosen:
                continue
            if asked is not None and isinstance(value, bool) and name not in required | asked:
                continue  # a flag nobody asked about: the tool's default
            spec = properties.get(name)
            offer = self._offer(name, spec, context, request) if isinstance(spec, dict) else None
            if offer is None or (name not in required
                                 and ungrounded_args({name: value}, schema, context)):
                chosen[name] = value
                continue
            assert isinstance(spec, dict)  # an offer is made only for a schema (above)
            formula = _NO_FORMULA
            if self.formula_numbers and not (offer.quoted or offer.closed):
                strings = [v for n, v in {**args, **chosen}.items()
                           if n != name and isinstance(v, str)]
                formula = _formula_numbers(strings, self.focus or request, request, context)
            if formula.refused:
                kept = [(t, v) for t, v in zip(offer.texts, offer.values, strict=True)
                        if float(v) not in formula.refused]
                offer = _Offer([t for t, _ in kept], [v for _, v in kept], quoted=False)
                if _as_float(value) in formula.refused:
                    wishes[name] = None
            # A member another argument of the call holds is not named for this one
            # ("100 USD to euros": ``to_currency`` is not USD too).
            held = {v for v in chosen.values() if isinstance(v, str)}
            named = [m for m in named_members(offer.values, request) if m not in held] if (
                self.named_members and offer.closed and offer.quoted) else []
            if (not named and self.member_words and offer.closed and offer.quoted
                    and name in required):
                named = [m for m in word_named_members(offer.values, request) if m not in held]
            if (not named and self.described_members and offer.closed and offer.quoted
                    and name in required):
                named = [m for m in described_members(offer.values, spec.get("description"),
                                                      request) if m not in held]
            if len(named) == 1:
                chosen[name] = named[0]
                continue
            if not named and self.unnamed_options and _left_to_default(name, spec, required):
                continue  # the request names none of its options: the tool's default
            if named:  # the request names several: the model ranks those
                offer = _Offer([_inner(m) for m in named], named, quoted=True, closed=True)
                value = value if value in named else named[0]
            prefill = _prefill(prompt, head, chosen, name, offer)
            # An enum's other member is another option, not another item the user listed.
            used = [] if offer.closed else [call[name] for call in earlier if name in call]
            best = self._best(prefill, offer, value, used, name, schema, context,
                              formula=formula,
                              default_stands=not (self.named_defaults and name in mentioned))
            if _as_float(best) in formula.refused and name not in required:
                continue  # an optional number the request states only in a formula: the default
            chosen[name] = best
            if not offer.closed:
                offers_of[name] = (prefill, offer)
        if self.distinct:
            chosen = self._distinct(wishes, chosen, offers_of, required, self.focus or request)
        if self.uncontained:
            chosen = self._uncontained(wishes, chosen, offers_of)
        if self.date_formats:
            chosen = {name: _in_format(value, properties.get(name))
                      for name, value in chosen.items()}
        if self.time_formats:
            chosen = {name: _in_time_format(value, properties.get(name))
                      for name, value in chosen.items()}
        if self.percent_rates:
            chosen = {name: _as_rate(name, value, properties.get(name), request)
                      for name, value in chosen.items()}
        if self.whole_patterns:
            chosen = {name: whole_span(value, properties.get(name), self.focus or request,
                                       context)
                      for name, value in chosen.items()}
        if self.format_parts:
            chosen = {name: _in_parts(value, properties.get(name), request)
                      for name, value in chosen.items()}
        return self._coded(prompt, head, chosen, properties, request) if (
            self.place_codes) else chosen

    def vary(self, prompt: list[AnyMessage], head: str, args: dict[str, Any],
             schema: dict[str, Any], context: str, earlier: list[dict[str, Any]], *,
             items: Sequence[Callable[[Any], bool]], request: str = "",
             siblings: Sequence[set[str]] = (), members: frozenset[str] = frozenset()
             ) -> dict[str, Any]:
        """A further call that restates earlier ones made to move on. ``items``: the
        request's items no call has used, in the user's order, each as a test of a value.
        The first item some argument holding an earlier call's value can take goes to the
        argument holding one of its siblings (``siblings``: the request's lists, as
        ``asks.item_key`` keys them: "for 10, 20 and 30 years" moves 20 into the argument
        that held 10), else to the argument for which it costs least (the log-probability
        of its value less that of the item), and the arguments after that one are chosen
        again with it in place (the model then reads on from the item: "60 kilograms"
        brings "1.65 meters"). An enum argument may take only an item of ``members`` (the
        options the user listed). ``args`` as they are when no argument can take any item."""
        properties = schema.get("properties") or {}
        ranked: dict[str, tuple[float, dict[str, float], dict[str, Any]]] = {}
        for index, (name, value) in enumerate(args.items()):
            spec = properties.get(name)
            offer = self._offer(name, spec, context, request) if isinstance(spec, dict) else None
            used = [call[name] for call in earlier if name in call]
            if offer is None or (offer.closed and not members) or value not in used or isinstance(
                    value, bool) or isinstance(value, str) != offer.quoted:
                continue
            # A number the user listed moves into a number, or into a string that holds one
            # (an id, a version), not into a name ("Los Angeles, CA" to "4.1").
            values = {t: v for t, v in zip(offer.texts, offer.values, strict=True)
                      if any(item(v) for item in items) and (not offer.closed or v in members)
                      and not (
                          isinstance(v, str) and _NUMBERISH.fullmatch(v)
                          and not re.search(r"\d", str(value)))}
            if not values:
                continue
            own = _text(value, offer.quoted)
            prefill = _prefill(prompt, head, dict(list(args.items())[:index]), name, offer)
            scores = {r.text: r.logprob for r in self.model.rank(
                prefill, [own, *values], STRING_END if offer.quoted else NUMBER_END,
                max_expansions=self.max_expansions)}
            ranked[name] = (scores.get(own, 0.0), scores, values)
        for item in items:
            # The model's wish is to copy: no floor here; the order of the items decides.
            moves = [(own - logprob, name, values[text])
                     for name, (own, scores, values) in ranked.items()
                     for text, logprob in scores.items() if text in values and item(values[text])]
            if moves:
                kin = [move for move in moves if any(
                    item_key(args[move[1]]) in group and item_key(move[2]) in group
                    for group in siblings)]
                _, name, moved = min(kin or moves, key=lambda move: move[0])
                names = list(args)
                settled = {**{n: args[n] for n in names[:names.index(name)]}, name: moved}
                return replace(self, keep_supported=False).choose(
                    prompt, head, args, schema, context, earlier, request=request,
                    settled=settled)
        return args

    def _distinct(self, wishes: dict[str, Any], chosen: dict[str, Any],
                  offers_of: dict[str, tuple[list[AnyMessage], _Offer]],
                  required: set[str], request: str = "") -> dict[str, Any]:
        """One span per argument (see the module docstring): where two arguments of the
        call hold the same string, or the same number ``request`` writes once, and one of
        them was chosen among the conversation's offers, an optional one of them is dropped,
        or the one that loses less by moving to its next-best value (an offer no argument
        holds, or the model's own wish) moves."""
        out = dict(chosen)
        once = _written_once(request)
        held = [n for n in out if isinstance(out[n], str) and out[n].strip() or (
            _as_float(out[n]) in once)]
        for index, name in enumerate(held):
            holder = next((n for n in held[:index] if n in out and name in out
                           and _same_value(out[n], out[name])), None)
            pair = [n for n in (holder, name) if n is not None and n in offers_of
                    and offers_of[n][1].quoted == isinstance(out[n], str)]
            if holder is None or not pair:
                continue
            optional = [n for n in pair if n not in required]
            if optional:
                del out[optional[-1]]
                continue
            # Ranked at their own prefills, which hold the call as first chosen: close
            # enough to settle which of the two the span fits worse.
            moves = [(*self._next_best(*offers_of[n], out[n], wishes.get(n), out), n)
                     for n in pair]
            _, value, mover = min(moves, key=lambda move: move[0])
            if value is not None:
                out[mover] = value
        return out

    def _uncontained(self, wishes: dict[str, Any], chosen: dict[str, Any],
                     offers_of: dict[str, tuple[list[AnyMessage], _Offer]]) -> dict[str, Any]:
        """No span holding another argument's value (see ``uncontained``)."""
        out = dict(chosen)
        for name in list(out):
            for other in list(out):
                outer = out[name]
                if other == name or not (
                        isinstance(outer, str) and name in offers_of
                        and offers_of[name][1].quoted and _holds(outer, out[other])):
                    continue
                pair = [name]
                if other in offers_of and offers_of[other][1].quoted == isinstance(
                        out[other], str):
                    pair.append(other)
                inner = out[other]
                avoid = {name: lambda value, inner=inner: _holds(value, inner),
                         other: lambda value, outer=outer: _holds(outer, value)}
                moves = [(*self._next_best(*offers_of[n], out[n], wishes.get(n), out,
                                           avoid=avoid[n]), n) for n in pair]
                _, value, mover = min(moves, key=lambda move: move[0])
                if value is not None:
                    out[mover] = value
        return out

    def _coded(self, prompt: list[AnyMessage], head: str, chosen: dict[str, Any],
               properties: dict[str, Any], request: str = "") -> dict[str, Any]:
        """``chosen`` with a place whose argument asks for a two-letter code ("in the format
        'City, State', such as 'Berkeley, CA'") given the code the model ranks first, or
        where ``request`` says where the place is ("Paris, France"), what it says."""
        out = dict(chosen)
        for index, (name, value) in enumerate(chosen.items()):
            spec = properties.get(name)
            if not (isinstance(value, str) and value.strip()[:1].isupper()
                    and _PLACE.fullmatch(value.strip())
                    and isinstance(spec, dict) and spec.get("type") == "string"
                    and not {"enum", "pattern", "format"} & spec.keys()
                    and value != spec.get("default")
                    and _CODED_EXAMPLE.search(str(spec.get("description") or ""))):
                continue
            qualifier = _stated_qualifier(value.strip(), request,
                                          str(spec.get("description") or ""))
            if qualifier:
                out[name] = f"{value.strip()}, {qualifier}"
                continue
            before = dict(list(out.items())[:index])
            prefill = _prefill(prompt, head, before, name, _Offer([], [], quoted=True))
            prefill[-1] = AIMessage(prefill[-1].text + _inner(value) + ",")
            ranked = self.model.rank(prefill, _CODES, STRING_END, until=lambda _: True,
                                     max_expansions=self.max_expansions)
            if ranked:
                out[name] = f"{value},{ranked[0].text}"
        return out

    def _next_best(self, prefill: list[AnyMessage], offer: _Offer, value: str | float,
                   wish: Any, chosen: dict[str, Any],
                   avoid: Callable[[Any], bool] | None = None) -> tuple[float, Any]:
        """What moving off ``value`` (a span, or a number where ``offer`` holds numbers)
        costs (its log-probability less that of the best offer no argument of the call
        holds, or of the model's own ``wish``) and where it moves; ``(inf, None)`` when
        there is nowhere to go. ``avoid``: values it may not move to."""
        held = {_held_key(_text(v, offer.quoted), offer.quoted) for v in chosen.values()
                if (isinstance(v, str) if offer.quoted else _is_number(v))}
        values = dict(zip(offer.texts, offer.values, strict=True))
        own = _text(value, offer.quoted)
        wished = _text(wish, offer.quoted) if (
            isinstance(wish, str) if offer.quoted else _is_number(wish)) else None
        if wished is not None and _held_key(wished, offer.quoted) not in held:
            values.setdefault(wished, wish)
        else:
            wished = None
        texts = [t for t in dict.fromkeys([own, *values])
                 if t == own or (_held_key(t, offer.quoted) not in held
                                 and not (avoid is not None and avoid(values[t])))]
        ranked = {r.text: r.logprob for r in self.model.rank(
            prefill, texts, STRING_END if offer.quoted else NUMBER_END,
            max_expansions=self.max_expansions)}
        others = [(logprob, text) for text, logprob in ranked.items() if text != own
                  and (logprob >= self.floor or text == wished)]
        if own not in ranked or not others:
            return float("inf"), None
        logprob, text = max(others)
        return ranked[own] - logprob, values[text]

    def _in_focus(self, value: Any) -> bool:
        """Whether the part of the request this call is for holds ``value`` (True when the
        call has no such part)."""
        if self.focus is None or isinstance(value, bool):
            return True
        if isinstance(value, list):
            return all(self._in_focus(item) for item in value)
        if isinstance(value, int | float):
            return float(value) in _numbers_of(self.focus)
        return isinstance(value, str) and _folded(value) in _folded(self.focus)

    def _offer(self, name: str, spec: dict[str, Any], context: str,
               request: str = "") -> _Offer | None:
        kind = spec.get("type")
        if isinstance(spec.get("enum"), list) and spec["enum"]:
            members = spec["enum"]
            if all(isinstance(m, str) for m in members):
                return _Offer([_inner(m) for m in members], list(members), quoted=True,
                              closed=True)
            return _Offer([" " + json.dumps(m, ensure_ascii=False) for m in members],
                          list(members), quoted=False, closed=True)
        if {"const", "pattern", "format", "$ref", "anyOf", "oneOf", "allOf"} & spec.keys():
            return None
        if kind == "string" and not is_free_text(name, spec):
            # The latest words first, as ever; the request's own spans where they fell out.
            found = list(dict.fromkeys([*spans(context), *spans(request)]))
            return _Offer([_inner(s) for s in found], found, quoted=True) if found else None
        if kind in ("integer", "number"):
            numbers = number_values(context, spec)
            return _Offer([" " + json.dumps(n) for n in numbers], numbers,
                          quoted=False) if numbers else None
        return None

    def _best(self, prefill: list[AnyMessage], offer: _Offer, wish: Any, used: list[Any],
              name: str, schema: dict[str, Any], context: str,
              formula: _Formula = _NO_FORMULA, default_stands: bool = True) -> Any:
        """The supported value with the highest score, or the model's own ``wish`` when it
        is unsupported yet ``margin`` more likely than every supported one. A number
        ``formula`` refuses is no support for the wish, nor a candidate: it stays where no
        offer is above the floor, but for a required argument a number the formula's ask
        states apart from it (the point of "the derivative of 2x^2 at x = 1"). Without
        ``default_stands``, a string wish that is the schema's default needs the
        conversation's support too (``named_defaults``)."""
        refused, apart = formula.refused, formula.apart
        if isinstance(wish, str) != offer.quoted or isinstance(wish, bool):
            return wish  # a value of another kind than the offer: not ours to replace
        own = _text(wish, offer.quoted)
        values = dict(zip(offer.texts, offer.values, strict=True))
        supported = own in values or (
            _as_float(wish) not in refused
            and not ungrounded_args({name: wish}, schema, context)
            and not (self.word_for_word and isinstance(wish, str) and (
                wish != _default(schema, name) or not default_stands)
                and not stated(wish, context)))
        if isinstance(wish, str) and _PLACEHOLDER.search(wish) and own not in values:
            # A template's placeholder, not a value: "{user_id}" for "My user ID is
            # 123456789", "{123123}" for "id was 123123"; grounding reads the words inside.
            supported = False
        if supported and self.keep_supported and not used and not offer.closed and (
                self._in_focus(wish)):
            return wish
        refused_wish = _as_float(wish) in refused
        if own not in values:
            values[own] = wish
        repeated = {_text(u, offer.quoted) for u in used if isinstance(u, str) == offer.quoted}

        def penalty(text: str) -> float:
            unsupported = text == own and not supported
            elsewhere = not offer.closed and not self._in_focus(values[text])
            return (self.margin if unsupported else 0.0) + (
                self.reuse_penalty if text in repeated else 0.0) + (
                self.focus_penalty if elsewhere else 0.0)

        def settled(item: Ranked) -> bool:
            # Scores only fall from here on: an item with no penalty beats all the rest.
            return penalty(item.text) == 0.0

        candidates = [t for t in values if not (refused_wish and t == own)]
        ranked = self.model.rank(prefill, candidates, STRING_END if offer.quoted
                                 else NUMBER_END, until=settled,
                                 max_expansions=self.max_expansions)
        if not ranked:
            return wish
        best = max(ranked, key=lambda item: item.logprob - penalty(item.text))
        if not supported and best.text != own and best.logprob < self.floor and not (
                refused_wish and _as_float(values[best.text]) in apart
                and name in (schema.get("required") or ())):
            best = Ranked(own, 0.0)  # nothing the conversation offers fits: keep the wish
        return values[best.text]


@lru_cache(maxsize=64)
def _numbers_of(text: str) -> frozenset[float]:
    return frozenset(number_readings(text))


def _formula_numbers(values: Sequence[str], ask: str, request: str, context: str) -> _Formula:
    """The numbers of the formulas among ``values`` (a variable and an operator: "2x^2",
    "5y^3 - 4y + 2"; an exponent is no number) that the conversation writes nowhere outside
    them: not ``ask`` (the part of ``request`` the call is for), nor, where the ask states
    no number apart, the rest of ``request``, nor ``context`` beyond the request (tool
    results). A formula the ask does not hold word for word gives none: its numbers may be
    the user's too."""
    formulas = [v for v in values if _FORMULA.search(v) and _has_variable(v) and v in ask]
    if not formulas:
        return _NO_FORMULA

    def outside(text: str) -> frozenset[float]:
        for formula in formulas:
            text = text.replace(formula, " ")
        return _numbers_of(text)

    apart = outside(ask)
    elsewhere = apart or outside(request)
    elsewhere |= outside(context.replace(request, " ")) if request else frozenset()
    written = {float(n.replace(",", "").replace("_", "")) for f in formulas
               for n in numbers_in(_EXPONENT.sub(" ", f))}
    # Either sign: "x^2 - 4" writes 4, which a call may take as -4 too; a sign the
    # conversation writes elsewhere ("between -1 and 3") stays offered.
    refused = {r for n in written for r in (n, -n) if r not in elsewhere}
    return _Formula(frozenset(refused), apart)


def _has_variable(text: str) -> bool:
    """Whether ``text`` writes a variable: a lone lowercase letter glued to a coefficient,
    a power or a bracket ("2x", "x^2", "x**2", "3*y", "(x"), not an article ("a") or a
    letter with a digit after it ("2d6")."""
    return any(m.start() and text[m.start() - 1] in "0123456789^*(" or _POWER.match(text, m.end())
               for m in _VARIABLE.finditer(text))


_RATE_WORDS = frozenset({"rate", "yield", "return", "decimal", "fraction", "ratio"})


def _as_rate(name: str, value: Any, spec: Any, request: str) -> Any:
    """``value``, as a fraction where it is a percent the request gives for a rate (see
    ``percent_rates``)."""
    if not isinstance(spec, dict) or spec.get("type") != "number" or isinstance(
            value, bool) or not isinstance(value, int | float):
        return value
    described = str(spec.get("description") or "").lower()
    words = set(name_words(name)) | set(re.findall(r"[a-z]+", described))
    if not words & _RATE_WORDS or "percent" in described:
        return value
    written = re.findall(r"(-?\d+(?:\.\d+)?)\s?%", request)
    return value / 100 if any(float(w) == value for w in written) else value


def _left_to_default(name: str, spec: dict[str, Any], required: set[str]) -> bool:
    """An optional enum argument with a default whose options are words (see
    ``unnamed_options``)."""
    members = spec.get("enum") or []
    return bool(members) and name not in required and "default" in spec and all(
        isinstance(m, str) and not m.strip().isdigit()
        and m.strip().lower() not in ("true", "false") for m in members)


def _default(schema: dict[str, Any], name: str) -> Any:
    """The default the schema gives argument ``name`` (None when it gives none)."""
    spec = (schema.get("properties") or {}).get(name)
    return spec.get("default") if isinstance(spec, dict) else None


def _holds(outer: Any, inner: Any) -> bool:
    """Whether string ``outer`` holds ``inner`` (a string, or a number as written) as a run
    of its whole words, and more: not a number inside a formula, a date or a clock time."""
    if not isinstance(outer, str):
        return False
    if isinstance(inner, str):
        written = inner
    elif (number := _as_float(inner)) is not None and not _FORMULA.search(outer):
        written = str(int(number)) if number.is_integer() else str(number)
        for start, end in date_time_spans(outer):
            outer = outer[:start] + " " * (end - start) + outer[end:]
    else:
        return False
    words, part = _WORDS.findall(outer.casefold()), _WORDS.findall(written.casefold())
    return 0 < len(part) < len(words) and any(
        words[i:i + len(part)] == part for i in range(len(words) - len(part) + 1))


def _prefill(prompt: list[AnyMessage], head: str, chosen: dict[str, Any], name: str,
             offer: _Offer) -> list[AnyMessage]:
    """``prompt`` with its last message continued by the call so far, up to where the value
    of ``name`` starts."""
    prefix = json.dumps(chosen, ensure_ascii=False)[:-1] if chosen else "{"
    prefix += (", " if chosen else "") + json.dumps(name) + ":"
    return [*prompt[:-1], AIMessage(prompt[-1].text + head + prefix
                                    + (' "' if offer.quoted else ""))]


def _edges(text: str) -> list[int]:
    """Where a span of ``text`` may start or end: at its ends and wherever a run of letters
    and digits or a run of blanks meets other characters: not inside a word or a number."""
    return [i for i in range(len(text) + 1)
            if i in (0, len(text)) or text[i - 1].isalnum() != text[i].isalnum()
            or text[i - 1].isspace() != text[i].isspace()]


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


# How far a span may reach beyond the copy it grows from, each way, and how many copies are
# tried: every pair of edges is matched against the pattern, so a long request pasted with
# many copies of "12" would otherwise take minutes.
SPAN_REACH = 80
MAX_COPIES = 8
ONLY_SPAN_CHARS = 2000


def whole_span(value: Any, spec: Any, request: str, conversation: str = "") -> Any:
    """``value``, or the longest span of ``request`` around a copy of it (within
    ``SPAN_REACH`` characters) that ``spec``'s ``pattern`` admits whole (a pattern describes
    a whole value, so a span is matched in full) and that opens no bracket it does not
    close. A value the request does not hold, written as arithmetic of the request's
    numbers, is the model's rewriting of the user's arithmetic, which it gets wrong
    ("2*sqrt(2)" for "the square root of 2", "7 + 5 * 4" for "(7 + 5) * 4"), or cut short
    ("sqrt" for "the square root of 144", "sqrt2"): the longest such span holding each of
    its numbers replaces it, where there is one, more than a number, and no other ("17 * 23
    and also 23 + 17" has two for "23+17": it stays). Other
    values are the model's own, left as they are, but for a value with numbers the
    conversation does not write, which the one span of three words or more the pattern
    admits in the request, ending a clause, replaces (``_only_span``). ``request``: the
    part of the request the call is for, where it asks for several things;
    ``conversation``: what the user wrote and the tools returned."""
    if not (isinstance(value, str) and value.strip() and isinstance(spec, dict)
            and isinstance(spec.get("pattern"), str)):
        return value
    try:
        pattern = re.compile(spec["pattern"])
    except re.error:
        return value
    edges = set(_edges(request))
    copies = [c for c in re.finditer(re.escape(value), request)
              if c.start() in edges and c.end() in edges]  # not "7" inside "17"
    if copies:
        return _longest_span(copies, value, request, edges, pattern)
    numbers = _unsigned(_GLUED_NUMBER.sub(" ", value))  # "sqrt2" writes 2
    lone = numbers_in(value) == [value.strip()]
    if (numbers and not numbers <= _unsigned(request) | _unsigned(conversation)
            and not (lone and _unsigned(request))):
        # A value with numbers the conversation does not write is no rewriting of the
        # user's words but junk grounding refuses ("1.0fahrenheit to celsius" for "How many
        # feet in a mile?", "3.00g into acres" for "How many grams are in 3 pounds?",
        # "12.00%" for "What's 12 percent of 250?", "100" for "How many cups are in a
        # gallon?"): the request's one span the pattern admits, where it has one. A lone
        # number where the request has numbers grows a span from them (below).
        return _only_span(request, edges, pattern, _first_number(value)) or value
    if lone and not numbers <= _unsigned(request):
        # A lone number the request does not write is the model's own result, or a copy
        # gone wrong ("66.0000000000001" for "What is 66 squared?" after an answer of 66).
        numbers = set()
    elif not (_ARITHMETIC_VALUE.fullmatch(value) and numbers <= _unsigned(request)):
        return value
    # A value with no number of the request's ("sqrt" for "the square root of 144") is an
    # expression cut short: the request's spans around any of its numbers are the candidates.
    copies = [c for n in numbers or _unsigned(request) for c in re.finditer(re.escape(n), request)
              if c.start() in edges and c.end() in edges]
    spans = {span for c in copies
             if numbers <= _unsigned(span := _longest_span([c], "", request, edges, pattern))
             and numbers_in(span) != [span]}  # more than a number
    return spans.pop() if len(spans) == 1 else value


def _unsigned(text: str) -> set[str]:
    """The numbers ``text`` writes (``grounding.numbers_in``), without their signs: "7 - 3"
    and "7-3" write the same two."""
    return {n.lstrip("+-") for n in numbers_in(text)}


# A number written right after a function's name ("sqrt2"), read as a number of its own;
# not the exponent of scientific notation ("2e5").
_GLUED_NUMBER = re.compile(r"(?<=[^\W\d_])(?<![\d.][eE])(?=\d)")
# A value written as arithmetic: numbers, operators (signs or words), brackets and the
# words of functions and constants ("2*sqrt(2)", "7 + 5 * 4", "10 times 56" for "add 10 to
# 56"), not a phrase that holds numbers.
_ARITHMETIC_VALUE = re.compile(
    r"(?:[\d\s.,+\-*/%^()×÷]|sqrt|log|exp|sin|cos|tan|abs|round|min|max|pi|e|plus|minus"
    r"|times|multiplied by|divided by|squared|cubed|to the power of|square root of)+",
    re.IGNORECASE)


def _longest_span(copies: list[re.Match[str]], best: str, request: str, edges: set[int],
                  pattern: re.Pattern[str]) -> str:
    """The longest span of ``request`` around one of ``copies`` that ``pattern`` admits and
    that closes every bracket it opens; ``best`` where none is longer."""
    for copy in copies[:MAX_COPIES]:
        starts = [e for e in range(max(0, copy.start() - SPAN_REACH), copy.start() + 1)
                  if e in edges and not request[e:e + 1].isspace()]
        ends = [e for e in range(copy.end(), min(len(request), copy.end() + SPAN_REACH) + 1)
                if e in edges and not request[e - 1:e].isspace()]
        for start in starts:
            for end in ends:
                span = request[start:end]
                if len(span) > len(best) and _balanced(span) and pattern.fullmatch(span):
                    best = span
    return best


def _only_span(request: str, edges: set[int], pattern: re.Pattern[str],
               first: float | None = None) -> str | None:
    """The one span of ``request`` of three words or more that ``pattern`` admits whole, that
    ends a clause, and that no longer such span holds (within ``SPAN_REACH`` characters of
    its start), if there is exactly one; where there are several, the one that
    holds ``first``, the number the model's value opens with, if one alone does ("10 km in
    miles" of "What is 10 km in miles and 5 kg in pounds?" for SmolLM2's "10.0000000000000001,
    5.00000000000000001, …"). None for a request of over ``ONLY_SPAN_CHARS`` characters:
    every pair of edges is tried."""
    if len(request) > ONLY_SPAN_CHARS:
        return None
    found: set[tuple[int, int]] = set()
    for start in sorted(e for e in edges if not request[e:e + 1].isspace()):
        ends = [e for e in range(start + 1, min(len(request), start + SPAN_REACH) + 1)
                if e in edges and not request[e - 1:e].isspace()
                and _balanced(request[start:e]) and pattern.fullmatch(request[start:e])]
        if ends:
            found.add((start, max(ends)))
    # Three words or more: a name the pattern admits alone ("square root" of "the square
    # root of two", "pi", a "30") is a piece of what the user asks, not the whole of it.
    widest = [(a, b) for a, b in found if len(request[a:b].split()) >= 3
              and not any(c <= a and b <= d and (c, d) != (a, b) for c, d in found)]
    # It ends a clause. One span alone ends at a punctuation mark or the end ("How many
    # minutes are in 2 hours" is no span of "... in 2 hours and 30 minutes?"); one of
    # several, at an "and" too (``relevance.CLAUSE_END``: "10 km in miles and 5 kg ...").
    clause_end = PUNCTUATION_END
    if len(widest) > 1 and first is not None:
        widest = [(a, b) for a, b in widest if any(  # "10.00000000000001" holds 10
            abs(first - n) <= 1e-9 * max(1.0, n) for n in _floats(request[a:b]))]
        clause_end = CLAUSE_END
    if len(widest) != 1:
        return None
    start, end = widest[0]
    return request[start:end] if clause_end.match(request, end) else None


def _first_number(value: str) -> float | None:
    """The number ``value`` opens with, read as a float (None where it has none)."""
    numbers = numbers_in(value)
    return next(iter(_floats(numbers[0])), None) if numbers else None


def _floats(text: str) -> set[float]:
    """The numbers ``text`` writes, as floats, signs aside."""
    out = set()
    for number in numbers_in(text):
        with suppress(ValueError, OverflowError):
            out.add(abs(float(number.replace(",", ""))))
    return out


def _in_format(value: Any, spec: Any) -> Any:
    """``value``, a date written in the format ``spec``'s description names."""
    if not isinstance(value, str) or not isinstance(spec, dict):
        return value
    return date_in_format(value, str(spec.get("description") or "")) or value


def _in_time_format(value: Any, spec: Any) -> Any:
    """``value``, a clock time written as the 'HH:MM' ``spec``'s description names."""
    if not isinstance(value, str) or not isinstance(spec, dict):
        return value
    return time_in_format(value, str(spec.get("description") or "")) or value


def _text(value: Any, quoted: bool) -> str:
    """A value as the model writes it after its argument's prefill."""
    return _inner(value) if quoted else " " + json.dumps(value, ensure_ascii=False)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_float(value: Any) -> float | None:
    """A number argument's value as a float; None for anything else, or an integer past
    a float's range (a digit loop)."""
    if not _is_number(value):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return _folded(a) == _folded(b)
    return _as_float(a) is not None and _as_float(a) == _as_float(b)


def _held_key(text: str, quoted: bool) -> str | float:
    """What a value's text stands for when telling whether an argument holds it: a
    number's value (" 10" and " 10.0" are one), a string's folded text ("1.10" is not
    "1.1")."""
    if not quoted:
        try:
            return float(text)
        except (ValueError, OverflowError):
            pass
    return _folded(text)


def _written_once(text: str) -> frozenset[float]:
    """The numbers ``text`` writes in digits exactly once: one of them held by two
    arguments of a call is one number copied into the next argument ("10 Hz" as the
    ``end_range`` too), as SmolLM2 copies a span. "512x512" writes 512 twice."""
    counts: dict[float, int] = {}
    for written in numbers_in(_TIMES.sub(" x ", text)):
        try:
            number = float(written.replace(",", ""))
        except ValueError:
            continue
        counts[number] = counts.get(number, 0) + 1
    return frozenset(n for n, count in counts.items() if count == 1)


# A part a request writes after a comma: capitalised words ("Berkeley", "CA", "New York").
_PART_WORD = r"[A-Z](?:[\w()'-]|\.(?=\w))*"  # "Thailand" of "Thailand. I", "D.C"
_NEXT_PART = re.compile(rf",\s*({_PART_WORD}(?:\s+{_PART_WORD})*)")
_LIST_GOES_ON = re.compile(r"\s*(?:,|&|\band\b|\bor\b)\s*[A-Z]")


def _in_parts(value: Any, spec: Any, request: str) -> Any:
    """``value``, with the comma parts ``request`` writes after it, where its argument's
    description names a format of more comma parts than it has: as many as the format has
    ("2020 Addison Street, Berkeley, CA" for the user's "2020 Addison Street, Berkeley, CA,
    USA", in the format 'Street Address, City, State (abbr), Country', is the whole
    address; SmolLM2 stopped before the country). Not where the request goes on with more
    parts than the format takes, or a list ("Boston, Chicago and Denver"), nor where the
    description's examples write a place with a code ('Paris, FR'): ``place_codes`` writes
    those."""
    if not (isinstance(value, str) and value.strip() and isinstance(spec, dict)
            and spec.get("type") == "string" and not {"enum", "pattern"} & spec.keys()):
        return value
    description = str(spec.get("description") or "")
    # The format templates grounding reads ('Street Address, City, State (abbr), Country').
    formats = [] if _CODED_EXAMPLE.search(description) else [
        t for t in format_templates(description) if "," in t]
    written = re.search(rf"(?<![\w,]){re.escape(value.strip())}(?!\w)", request)
    if not formats or written is None:
        return value
    wanted = max(t.count(",") + 1 for t in formats) - len(value.split(","))
    parts: list[str] = []
    end = written.end()
    while len(parts) < wanted and (part := _NEXT_PART.match(request, end)):
        parts.append(part[1])
        end = part.end()
    if not parts or _LIST_GOES_ON.match(request, end):
        return value
    return ", ".join([value.strip(), *parts])


def _stated_qualifier(place: str, request: str, description: str) -> str | None:
    """What ``request`` writes after ``place`` and a comma to say where it is, in the form
    the argument's ``description`` shows: a code as written ("London, UK"), a US state
    whole as its code ("Austin, Texas": "TX"), a country whole as written ("Bangkok,
    Thailand") where the description takes countries ('City, Country', 'Tokyo, Japan') and
    its examples do not write them as codes ('Paris, FR'). None otherwise, and the model
    ranks the code. SmolLM2 wrote the city alone and ranked "Bangkok, TN" and "Paris, CA"
    for the user's "Bangkok, Thailand" and "Paris, France"."""
    found = re.search(rf"(?<!\w){re.escape(place)},\s*({_PLACE_QUALIFIER})", request)
    if found is None:
        return None
    qualifier, after = found.group(1), request[found.end():]
    if re.match(r"'s\b|\s*(?:,|&|\band\b|\bor\b)\s*[A-Z]", after):
        return None  # "Boston, Chicago and Denver": a list goes on; "Homer's": a possessive
    if qualifier.isupper() or qualifier in _US_STATES:
        return _US_STATES.get(qualifier, qualifier)
    if STOP_WORDS & set(qualifier.casefold().split()) or any(days_and_times(qualifier)):
        return None  # "in Berkeley, Can you …", "in Paris, Tomorrow": not where it is
    # The examples' qualifiers, not the format's names ('City, Country').
    shown = [q for city, q in _EXAMPLE.findall(description)
             if city.casefold() not in ("city", "town")]
    takes_countries = re.search(r"(?i)\bcountry\b", description) or any(
        q not in _US_STATES.values() and not q.isupper() for q in shown)
    if not takes_countries or any(q.isupper() and q not in _US_STATES.values() for q in shown):
        return None
    return qualifier


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _inner(value: str) -> str:
    """A string as it stands between the quotes of its JSON text."""
    return json.dumps(value, ensure_ascii=False)[1:-1]
