"""What a request asks for: the parts of it that each need a call of their own.

"Find all prime numbers between 50 and 150. Then get the fibonacci series upto 150." asks
for two calls to two tools. SmolLM2 makes the first and stops, or calls the first tool
again: the words that say "and now something else" are lost on it. Here they are read
off the request: it is cut into segments (sentences; clauses after a semicolon, after
"then" or "also", after "and" before a verb or a question word), and a segment that opens
with a word that moves on to another task ("Also", "Then", "Second", "Lastly", "After
that"...), or a question after a question of the same sentence ("What is the capital of
Australia, what is the population of Canada, and ..."), starts an *ask*; every other
segment belongs to the ask before it (those before the first marked one, to the first
ask). An ask's tools are those its own words are about
(:func:`callgate.tools.relevance.relevant_tools`); a marked segment about no tool starts no
ask ("Also, consider a 2% decrease" goes with the ask before it). An ask whose opening
segment names each of its tools one "and" apart, by a word of the tool's own name ("the
Battle of Waterloo and the Treaty of Tordesillas"), is an ask per tool.

Sentences are split on ``. ! ?`` before a capital, a digit or a quote, not after a title or
an initial ("Mr. John Doe", "L.A Lakers", "U.S. history").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from itertools import combinations, pairwise
from typing import Any

from callgate.tools.grounding import date_time_spans, unused_numbers
from callgate.tools.registry import Tool
from callgate.tools.relevance import (
    PRESELECT,
    named_members,
    names_in,
    relevant_tools,
    unused_names,
    word_positions,
)

__all__ = ["Ask", "asks", "counted_calls", "crossed_lists", "holds_item", "item_key",
           "items_left", "list_items_left", "listed_items", "listed_members", "listed_numbers",
           "pairs_held", "pairs_left", "quoted_left", "quoted_values", "segments",
           "sibling_lists"]

# A sentence ends at . ! ? (and closing quotes or brackets) before a capital, a digit or
# an opening quote; not after a title, an initial or an abbreviation.
_NOT_AN_END = ("Mr", "Mrs", "Ms", "Dr", "St", "Inc", "Ltd", "Jr", "Sr", "Co", "Corp", "vs",
               "e.g", "i.e", "etc", "No", "approx", "Prof", "Mt", "Ft")
_SENTENCE_END = re.compile(r"[.!?]+[\"'’”)\]]*\s+(?=[\"'‘“(\[]?[A-Z0-9])|\n+")
# Words that start a request of their own after "and" or a comma: a verb a request opens
# with, or a question word.
_REQUEST_VERBS = (
    "find|get|calculate|compute|generate|give|tell|show|provide|book|buy|play|search|check|"
    "fetch|retrieve|list|determine|convert|predict|estimate|create|make|send|order|reserve|"
    "compare|analy[sz]e|identify|look|update|change|set|add|remove|delete|schedule|translate|"
    "plot|draw|solve|evaluate|count|sort|recommend|suggest|locate|invest|withdraw|transfer|"
    "deposit|design|simulate|measure|obtain|display|play|what|what's|how|which|who|where|when")
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*"
    r"|,?\s+and\s+(?=(?:then|also|finally|lastly|" + _REQUEST_VERBS + r")\b)"
    r"|,\s+(?=(?:then|also|plus|followed by|finally|lastly|" + _REQUEST_VERBS + r")\b)"
    r"|\s+(?=(?:then|also)\s+(?:" + _REQUEST_VERBS + r")\b)", re.IGNORECASE)
_QUOTED = re.compile(r"(?<!\w)['\"‘“]([^'\"‘’“”]{1,80})['\"’”](?!\w)")
# The opening of a segment that moves on to another task.
_MOVES_ON = re.compile(
    r"^\W*(?:and\b|(?:and\s+)?(?:then|additionally|lastly|finally|second(?:ly)?|"
    r"third(?:ly)?|fourth(?:ly)?|fifth(?:ly)?|next|after|afterwards|furthermore|moreover|"
    r"plus|in addition|followed by)\b|(?:\w+[,\s]+){0,3}also\b"
    # "The second equation has ...", "On the second day, ...", "Now, consider a third car"
    r"|(?:\w+[,\s]+){0,3}(?:the|a|an)\s+(?:second|third|fourth|fifth|last|final|next)\b)",
    re.IGNORECASE)

# A sentence of questions, each after a comma or "and": "What is the capital of Australia,
# what is the population of Canada, and what is the largest city in Brazil?" ("who", "which"
# and "where" open relative clauses too: "John, who weighs 85 kilograms").
_QUESTION = re.compile(r"^\W*(?:what|how)\b", re.IGNORECASE)  # "what's" too
_AFTER_CLAUSE = re.compile(r"(?:[,;]|\band)$", re.IGNORECASE)


def _after_clause(request: str, start: int) -> bool:
    """Whether a comma, a semicolon or "and" comes right before ``start``, blanks aside
    (read backwards: searched from the request's start, a long request took seconds)."""
    end = start
    while end and request[end - 1].isspace():
        end -= 1
    return bool(_AFTER_CLAUSE.search(request[max(0, end - 4):end]))


# Whether a segment that asks for a call made before once more starts an ask (``asks``).
AGAIN_ASKS = True
# Words that ask for the same thing once more, changed: "What if ...", "... instead",
# "do the same ...", "... again"; and "then" before a request ("then compare it with ...").
_AGAIN = re.compile(
    r"\b(?:instead|what if|again|once more|but this time|"
    r"(?:do|repeat|perform|make|run) the same|"
    r"the same (?:calculation|thing|process|analysis|query|request|operation))\b",
    re.IGNORECASE)
_THEN = re.compile(r"^\W*(?:and\s+)?(?:then|after that|afterwards|next)\b[,\s]+(?:\w+\s+){0,2}"
                   r"(?:" + _REQUEST_VERBS + r"|do|repeat|run|use)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Ask:
    """One part of a request that needs a call of its own: where it stands in the request
    and the tools its words are about, best first as the registry lists them."""

    text: str
    start: int
    end: int
    tools: tuple[str, ...]
    # It asks for a call made before once more, changed ("What if the process is not
    # isothermal?", "then do the same with the 'simpson' method"): it needs a call of its
    # own even where it names no item of its own.
    again: bool = False


def _again(text: str, about: Iterable[str]) -> bool:
    """Whether a segment about tools (``about``) asks for a call made before once more."""
    return bool(about) and bool(_AGAIN.search(text) or _THEN.match(text))


def _sentence_ends(text: str) -> list[int]:
    ends = []
    for match in _SENTENCE_END.finditer(text):
        before = text[max(0, match.start() - 64):match.start()]  # linear in long texts
        # (a unit's "/" is part of the word: the "K" of "1.5 J/K." is no initial)
        # Always a match: the pattern matches the empty string too.
        word = re.search(r"[\w./]*$", before).group()  # type: ignore[union-attr]
        if match.group().strip() and (word.endswith(_NOT_AN_END) or re.fullmatch(
                r"(?:[A-Z]\.)*[A-Z]", word)):
            continue  # "Mr. Doe", "L.A Lakers", "U.S. history"
        ends.append(match.end())
    return ends


def segments(text: str) -> list[tuple[int, int]]:
    """The request's segments as ``(start, end)`` offsets, in order (see the module
    docstring); blank ones and those without a word left out."""
    bounds = [0, *_sentence_ends(text), len(text)]
    out = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        cut = start
        for match in _CLAUSE_BREAK.finditer(text, start, end):
            if len(re.findall(r"\w+", text[cut:match.start()])) < 3:
                continue  # "First, find ...", "Lastly, get ...": one segment, marker and all
            out.append((cut, match.start()))
            # "and"/"," go; a moving-on word ("then", "also") opens the next segment.
            cut = match.end()
        out.append((cut, end))
    return [(s, e) for s, e in out if re.search(r"\w", text[s:e])]


def asks(tools: Iterable[Tool], request: str, keep: float = PRESELECT, *,
         again: bool = AGAIN_ASKS) -> list[Ask]:
    """The asks of ``request`` (see the module docstring), in order; one ask at most when
    no segment moves on to another task."""
    tools = list(tools)
    parts: list[list[tuple[int, int]]] = []
    current: set[str] = set()  # the tools of the current part's opening segment
    question = False  # whether the segment before this one opens with a question word
    for start, end in segments(request):
        text = request[start:end]
        about = set(relevant_tools(tools, text, keep, unmatched="none"))
        after_question, question = question, bool(_QUESTION.match(text))
        # A segment that moves on starts an ask when it is about other tools than the ask
        # before it, or lists items of its own ("Also, get cases where University of
        # California was a party"); "Also apply standardization" stays with its ask.
        marked = _MOVES_ON.match(text) or (
            question and after_question and _after_clause(request, start))
        moves_on = bool(about and marked and (not about & current or items_left(text, [])))
        if parts and not (moves_on or (again and _again(text, about))):
            parts[-1].append((start, end))
            current = current or about
        else:
            parts.append([(start, end)])
            current = about
    out: list[Ask] = []
    opening: int | None = None  # a first part about no tool opens the ask after it
    for part in parts:
        start, end = part[0][0], part[-1][1]
        # The tools of the segment that opens the ask, where it names any: later ones may
        # sum up the whole request ("Can you provide the price, the lawsuits and ...").
        offered = (relevant_tools(tools, request[slice(*part[0])], keep, unmatched="none")
                   or relevant_tools(tools, request[start:end], keep, unmatched="none"))
        if not offered:
            opening = start
            continue
        start = start if opening is None else opening
        ask = Ask(text=request[start:end].strip(), start=start, end=end, tools=tuple(offered),
                  again=bool(out) and again and _again(request[slice(*part[0])], offered))
        out.extend(_per_named_tool(ask, request[slice(*part[0])]))
        opening = None
    return out


_AND = re.compile(r"\band\b", re.IGNORECASE)


def _per_named_tool(ask: Ask, opening: str) -> list[Ask]:
    """``ask`` as one ask per tool where its opening segment names each of its tools, one
    "and" apart, by a word of the tool's name that no other of them has — "the Battle of
    Waterloo and the signing of the Treaty of Tordesillas" (``battle_details``,
    ``treaty_info``), "the operational hours … and the waiting time" — in the order it
    names them; else ``[ask]``. A tool named in passing ("a 3D movie … during my free
    time": ``GetTimesForMovie``) is no ask of its own."""
    if len(ask.tools) < 2:
        return [ask]
    said = word_positions(opening)
    names = {tool: word_positions(tool).keys() for tool in ask.tools}
    firsts = []
    for tool in ask.tools:
        own = names[tool] - set().union(*(names[t] for t in ask.tools if t != tool))
        named = [said[word] for word in own if word in said]
        if not named:
            return [ask]
        firsts.append((min(named), tool))
    firsts.sort()
    if not all(_AND.search(opening, a, b) for (a, _), (b, _) in pairwise(firsts)):
        return [ask]
    return [replace(ask, tools=(tool,), again=ask.again and i == 0)
            for i, (_, tool) in enumerate(firsts)]


def items_left(text: str, calls_args: Iterable[dict[str, Any]]) -> list[str]:
    """The items of ``text`` (its numbers, names and quoted values) that no call's
    arguments hold."""
    args = list(calls_args)
    values = json.dumps(args, ensure_ascii=False).casefold()
    return [*unused_numbers(text, args), *unused_names(text, values),
            *quoted_left(text, args)]


def quoted_values(text: str) -> list[str]:
    """The values ``text`` quotes ("the exhibition named 'Wonder of Nature'"), once each
    (as first written)."""
    found: dict[str, str] = {}
    for quoted in _QUOTED.findall(text):
        if quoted.strip():
            found.setdefault(quoted.strip().casefold(), quoted.strip())
    return list(found.values())


def quoted_left(text: str, calls_args: Iterable[dict[str, Any]]) -> list[str]:
    """The values ``text`` quotes that no call's arguments hold."""
    values = json.dumps(list(calls_args), ensure_ascii=False).casefold()
    return [q for q in quoted_values(text) if q.casefold() not in values]


# An item the request counts by its ordinal: "The first table is ...", "a third house"; not
# a date ("the second of June"), a second of time ("in a second") or "first" alone, and
# only a kind of thing the request wrote before (not "the second derivative of x^2, x^3 and
# x^4").
_ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10}
_COUNTED = re.compile(r"\b(?:the|a|an)\s+(" + "|".join(_ORDINALS) + r")\s+(?!of\b)([a-z]+)",
                      re.IGNORECASE)
# Words after an ordinal that name no item: "a second later", "a second opinion".
_NOT_ITEMS = {"later", "ago", "or", "and", "to", "before", "after", "time", "thought",
              "opinion", "look", "chance", "try"}
# A last item after the counted ones ("And the last equation ..."): the count says too little.
_LAST_ITEM = re.compile(r"\b(?:the|a)\s+(?:last|final)\s+[a-z]+|\b(?:lastly|finally)\b",
                        re.IGNORECASE)


def counted_calls(text: str) -> int | None:
    """How many items the request counts by ordinals ("The first table is [45, 55, 35, 65]
    and the second table is [30, 70, 50, 50]": two; "... and a third house": three), where
    it counts two or more and names no last item after them; None otherwise."""
    counted = [(_ORDINALS[m.group(1).casefold()], m.end()) for m in _COUNTED.finditer(text)
               if m.group(2).casefold() not in _NOT_ITEMS
               and _written_before(m.group(2), text[:m.start()])]
    if not counted:
        return None
    highest, end = max(counted)
    if _LAST_ITEM.search(text, end):
        return None
    return highest


def _written_before(noun: str, before: str) -> bool:
    """Whether ``before`` writes ``noun``, singular or plural ("tables" for "table")."""
    return re.search(rf"\b{re.escape(noun)}(?:e?s)?\b", before, re.IGNORECASE) is not None


# What joins the items of a list: a comma, "and", "or", "&", maybe "also" and a repeated
# preposition ("in Seattle and in Los Angeles", "Boston, USA and also in San Francisco").
_LIST_JOIN = re.compile(
    r"\s*(?:,\s*(?:(?:and|or)\s+)?|(?:and|or|&|as well as)\s+)(?:also\s+)?"
    r"(?:(?:in|for|at|of|from|on|to|with|by|about|the)\s+)?", re.IGNORECASE)
_QUALIFIER = re.compile(r",\s*[A-Z]{2,3}\b")  # "New York City, NY", "Boston, USA"


def _list_candidates(text: str) -> list[tuple[int, int, str]]:
    """The request's quoted values and names (``relevance.names_in``), with a place's code
    ("Los Angeles, CA") kept with it, in order, as ``(start, end, kind)``. A month of a day
    the request names ("from April 22", "the 6th of March") is no name: the day is when,
    not another item (SmolLM2 then called again with "city": "April 22, LA")."""
    found = [(m.start(), m.end(), "quoted") for m in _QUOTED.finditer(text)]
    taken = bytearray(len(text) + 1)  # the characters an item already covers
    for start, end, _ in found:
        taken[start:end] = b"\x01" * (end - start)
    when = bytearray(len(text) + 1)  # the characters of a day or a clock time
    for start, end in date_time_spans(text):
        when[start:end] = b"\x01" * (end - start)
    for name in dict.fromkeys(re.split(r"\.\s", name)[0] for name in names_in(text)):
        # (a run of capitals goes on past a full stop)
        for m in re.finditer(re.escape(name), text):
            if taken[m.start()] or when[m.start()]:
                continue
            end = m.end()
            if (code := _QUALIFIER.match(text, end)) and code.group().strip(", ") != name:
                end = code.end()
            found.append((m.start(), end, "name"))
            taken[m.start():end] = b"\x01" * (end - m.start())
    found.sort()
    out: list[tuple[int, int, str]] = []
    for item in found:  # a code taken into the name before it is no item of its own
        if out and item[0] < out[-1][1]:
            continue
        out.append(item)
    return out


def listed_items(text: str) -> list[list[str]]:
    """The lists of like items the request gives: two or more quoted values, or names,
    joined by commas, "and" or "or" ("Taylor Swift and Maroon 5", "'67813', '71249'",
    "in Seattle and Los Angeles"), each item as written (quotes off). Two names with only a
    comma between them are a place and its region ("Chicago, Illinois"), not a list."""
    lists: list[list[tuple[int, int, str]]] = []
    for item in _list_candidates(text):
        last = lists[-1][-1] if lists else None
        if last is not None and last[2] == item[2] and _LIST_JOIN.fullmatch(
                text, last[1], item[0]):
            lists[-1].append(item)
        else:
            lists.append([item])
    return [[text[s:e].strip("'\"‘’“” ") for s, e, _ in group] for group in lists
            if len(group) > 2 or (len(group) == 2 and (group[0][2] == "quoted" or not re.fullmatch(
                r"\s*,\s*", text[group[0][1]:group[1][0]])))]


def _strings(value: Any, *, alone: bool = False) -> list[str]:
    """The strings ``value`` holds, folded; with ``alone`` not those an array of two or more
    values holds (``["Personal Info", "Job History"]`` holds its items together)."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v, alone=alone)]
    if isinstance(value, list):
        if alone and len(value) > 1:
            return [s for v in value if not isinstance(v, str) for s in _strings(v, alone=alone)]
        return [s for v in value for s in _strings(v, alone=alone)]
    return [value.strip().casefold()] if isinstance(value, str) else []


def list_items_left(lists: Iterable[list[str]], calls_args: Iterable[dict[str, Any]]
                    ) -> list[str] | None:
    """The items of ``lists`` still to be called for: a list one of whose items a call's
    argument holds alone, as its whole value ("artist": "Taylor Swift", or "city": "Boston,
    MA" for "Boston"), asks for a call per item; its items no call holds are left. None
    when no list asks for that: its items go into one argument together ("products":
    ["milk", "bread"]), or no argument holds one alone."""
    calls_args = list(calls_args)
    held = [s for args in calls_args for s in _strings(args)]
    alone = [s for args in calls_args for s in _strings(args, alone=True)]
    left: list[str] | None = None
    for items in lists:
        folded = [item.casefold() for item in items]
        if not any(value == item or value.startswith(item + ",")
                   for value in alone for item in folded):
            continue
        left = (left or []) + [item for item, key in zip(items, folded, strict=True)
                               if not any(key in value for value in held)]
    return left


def listed_members(spec: Any, request: str) -> list[str]:
    """The members of a string enum argument the request lists, two or more of them named
    (``relevance.named_members``) one after another, a comma, "and", "&" or "/" and at
    most four words between each two, and no "or": options the user lists, a call for each
    ("the status and scheduled trial date", "(AA), heterozygous genotype (Aa), and ...
    (aa)"), not two the request names apart ("usage instructions for troubleshooting") or
    as a choice ("music concerts or theater plays"). Members alike but for case ("AA",
    "aa") count only as written; numbers are items of their own."""
    enum = spec.get("enum") if isinstance(spec, dict) else None
    members = [m for m in enum if isinstance(m, str)] if isinstance(enum, list) else []
    folded = [m.casefold() for m in members]
    found: list[tuple[int, int, str]] = []
    for member in named_members(members, request):
        if re.fullmatch(r"-?\d+(?:\.\d+)?", member):
            continue  # a number: the request's numbers are items already
        alike = folded.count(member.casefold()) > 1
        words = re.findall(r"[^\W_]+", member)
        pattern = r"(?<![^\W_])" + r"[\W_]+".join(
            re.escape(w) + r"(?:e?s)?" for w in words) + r"(?![^\W_])"
        # As written where case tells members apart, or where the member is in capitals
        # ("US" is not the "us" of "Tell us"), as ``named_members`` reads them.
        match = re.search(pattern, request,
                          0 if alike or member.isupper() else re.IGNORECASE)
        if match is None:
            if alike:
                continue  # named only through its case-alike twin ("Aa" for "aa")
            return []  # named by a form this reader does not place: no list it can vouch for
        found.append((match.start(), match.end(), member))
    found.sort()
    joined = all(_MEMBER_JOIN.search(gap) and not _CHOICE.search(gap)
                 and len(re.findall(r"[^\W_]+", gap)) <= 4
                 for gap in (request[a[1]:b[0]] for a, b in pairwise(found)))
    return [member for _, _, member in found] if len(found) > 1 and joined else []


# Not "or": "music concerts or theater plays" asks for either (tune: one call expected
# there, two for "music or theater events"; reports/README.md).
_MEMBER_JOIN = re.compile(r",|&|/|\band\b", re.IGNORECASE)
_CHOICE = re.compile(r"\bor\b", re.IGNORECASE)  # ", or" too


_LISTED_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?![\w.]*\d)")
# What joins two numbers of a list: maybe a unit after the first ("20 minutes and 15
# minutes"), a bracket ("(45, 60) and (81, 63)"), a comma, "and" or "or"; not "to" or "-"
# (a range).
_NUMBER_JOIN = re.compile(r"\s*(?:[A-Za-z%°]+\.?\s*)?[)\]]?\s*"
                          r"(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|&\s*)[(\[]?\s*[$€£]?\s*")


def listed_numbers(text: str) -> list[list[str]]:
    """The lists of numbers the request gives ("for 10, 20 and 30 years", "(45, 60) and (81,
    63)", "20 minutes and 15 minutes"), each number as written; not the two ends of a range
    ("between 1 and 1000", "from 1 to 5")."""
    lists: list[list[re.Match[str]]] = []
    for match in _LISTED_NUMBER.finditer(text):
        last = lists[-1][-1] if lists else None
        before = text[max(0, last.start() - 64):last.start()] if last is not None else ""
        if last is not None and _NUMBER_JOIN.fullmatch(text, last.end(), match.start()) and not (
                len(lists[-1]) == 1 and re.search(r"(?i)\bbetween\s+\S*$", before)):
            lists[-1].append(match)
        else:
            lists.append([match])
    return [[m.group() for m in group] for group in lists if len(group) > 1]


def sibling_lists(text: str) -> list[set[str]]:
    """The request's lists (of numbers, names and quoted values), each as a set of keys
    (``item_key``): items of one list are siblings."""
    return [{item_key(item) for item in items}
            for items in [*listed_numbers(text), *listed_items(text)]]


# Lists the request pairs off item by item ("Taylor Swift and Maroon 5, with a play time of 20
# minutes and 15 minutes respectively"), not each item with each.
_PAIRED_OFF = re.compile(r"\b(?:respectively|in that order|correspondingly)\b", re.IGNORECASE)


def crossed_lists(text: str) -> list[tuple[list[str], list[str]]]:
    """Two lists of the request (``sibling_lists``: numbers, names, quoted values) with no
    item in common, where each item of one goes with each of the other: "the winning
    percentage of Lakers and Bulls in NBA seasons 2018 and 2020" asks for four calls. None
    where the request pairs its lists off ("... respectively")."""
    if _PAIRED_OFF.search(text):
        return []
    lists = [*listed_numbers(text), *listed_items(text)]
    return [(first, second) for first, second in combinations(lists, 2)
            if not {item_key(i) for i in first} & {item_key(i) for i in second}]


def pairs_held(args: dict[str, Any], lists: Iterable[tuple[list[str], list[str]]]
               ) -> set[tuple[str, str]]:
    """The pairs (an item of the first list, one of the second) of ``lists``
    (``crossed_lists``) a call's arguments hold, each item the whole value of an argument
    of its own."""
    held: set[tuple[str, str]] = set()
    for first, second in lists:
        where = {item: {name for name, value in args.items() if holds_item(value, item)}
                 for item in (*first, *second)}
        held |= {(one, other) for one in first for other in second
                 if where[one] and where[other] and len(where[one] | where[other]) > 1}
    return held


def pairs_left(text: str, calls_args: Iterable[dict[str, Any]]
               ) -> list[tuple[str, str]] | None:
    """The pairs of items of two ``crossed_lists`` no call holds together (``pairs_held``);
    None where no call holds a pair of any two of them: their items go into one argument
    together, or a call each on their own (``list_items_left``)."""
    lists = crossed_lists(text)
    made = set().union(*(pairs_held(args, lists) for args in calls_args))
    left: list[tuple[str, str]] | None = None
    for first, second in lists:
        pairs = [(one, other) for one in first for other in second]
        if made.intersection(pairs):
            left = (left or []) + [pair for pair in pairs if pair not in made]
    return left


def holds_item(value: Any, item: str) -> bool:
    """Whether an argument's value is ``item`` as a list gives it: the number itself, the
    name folded, or the name with a place's code ("Boston, MA" for "Boston")."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    key, folded = item_key(value), item_key(item)
    return key == folded or (isinstance(value, str) and key.startswith(folded + ","))


def item_key(value: Any) -> str:
    """A value as lists compare items: a number by its value, a string folded."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return repr(float(value))
    text = str(value).strip()
    try:
        return repr(float(text.replace(",", "")))
    except ValueError:
        return text.casefold()
