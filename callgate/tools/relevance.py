"""Which tools a request is about: lexical relevance of each tool to the user's words.

Offered several tools, a small model often picks the wrong one (SmolLM2-135M picked a
tool that shares no word with the question on many of BFCL's ``multiple`` questions),
while the words of the request nearly always point at the right one. The ReAct path uses
this ranking to narrow the grammar's choice of tool to the tools whose score is close to
the best (``relevant_tools``); the prompt still lists every tool.

A tool's score counts the distinct words it shares with the request: three for a word of
its name, one for a word of its description, a half for a word of an argument name.
Words are compared on their first five letters (a crude stem: "standardization" and
"standardize", "populations" and "population"); the arithmetic operators ``+ - * / % ^``
count as words too. SQLite FTS5's ``bm25`` was the library
candidate, but its inverse document frequency vanishes over a handful of documents (a
word in one of two tools scores zero), which is exactly the case here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from callgate.tools.grounding import date_form, days_and_times, fold, in_digits, word_forms
from callgate.tools.registry import Tool

__all__ = ["ARITHMETIC_SCORE", "CLAUSE_END", "PERCENT_WORD", "PRESELECT", "PUNCTUATION_END",
           "SENTENCE_FORMS", "affirmed_flags", "as_arithmetic", "callable_for",
           "described_members", "does_arithmetic", "flag_values", "in_tool_words",
           "is_arithmetic", "member_phrases", "mentioned_arguments", "named_members",
           "names_in", "number_readings", "relevant_tools", "shared_words", "tool_scores",
           "unused_names", "with_earlier_result", "word_named_members", "word_positions"]

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"([a-z])([A-Z])")
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "get",
    "give", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please",
    "show", "that", "the", "this", "to", "use", "using", "what", "when", "where", "which",
    "with", "you", "your",
})


# "17 * 23", "15% of 80": arithmetic is about them. An operator counts where it stands
# between numbers or blanks, not inside "km/h", "and/or", a URL or markdown's "**"; a
# minus only between blanks ("999 - 457", and a dash in prose too, which costs little: a
# tool needs more than one word to stand out), as "1-10", "x-ray" and "-5" are no operators.
_OPERATOR = re.compile(r"(?:(?<=[\s\d()])|^)[+*/%^×÷](?=[\s\d().,;:?!]|$)|(?<= )-(?= )")
_NOT_PLURAL = ("ss", "us", "is")  # "class", "virus", "analysis" keep their "s"


def _stems(text: str) -> set[str]:
    words = _WORD.findall(_CAMEL.sub(r"\1 \2", text).lower())
    # Numbers are values, not what a request is about ("10" in a description's "1-10").
    # A plural's "s" goes first ("roots" and "root" meet).
    return {(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith(_NOT_PLURAL)
             else w)[:5] for w in words
            if len(w) > 1 and w not in STOP_WORDS and not w.isdigit()} | set(
        _OPERATOR.findall(text))


def word_positions(text: str) -> dict[str, int]:
    """The words of ``text`` as :func:`tool_scores` compares them, each with the offset
    where it first stands."""
    out: dict[str, int] = {}
    for token in re.finditer(r"[A-Za-z0-9]+", text):
        for stem in _stems(token.group()):
            out.setdefault(stem, token.start())
    return out


# Arithmetic as a request writes it: two numbers joined by an operator or its word ("17 *
# 23", "45 minus 18", "144 divided by 16", "15% of 80", "a 15% tip on 48.50"), a number
# squared or cubed, or its square root ("What is sqrt(81)?", which SmolLM2 answered "81 is
# the square root of 81" without a call). A minus stands between blanks and a slash joins
# two numbers only (not "2023-04-15", "4/15/2023" or "pages 1-10"). A share "on" an amount
# is named ("a 15% tip on 48.50"): "95% on 4 cores" or "20% on 3 items" is no sum.
PERCENT_SHARES = ("tip", "tax", "VAT", "discount", "interest", "commission", "fee", "markup")
_SHARE = "|".join(PERCENT_SHARES)
# Arithmetic as a sentence words it, two numbers to a verb or noun ("Add 3.5 and 4.25",
# "the sum of 12 and 30", "Subtract 15 from 100"; SmolLM2 answered "What is the sum of 12
# and 30?" with "12 + 30 = 32" itself): each form's opening words (the calculator also
# takes them after "the" where ``the_first``), its connectives, and its reading as symbols
# of the numbers in order. "The difference between" two numbers is the larger less the
# smaller; "the difference of" a and b is a - b. The calculator reads and admits these
# forms (``calculator._sentence``, its schema's pattern).
SentenceForm = tuple[str, bool, tuple[str, ...], str]  # opening, the_first, connectives, symbols
SENTENCE_FORMS: tuple[SentenceForm, ...] = (
    ("sum of", True, ("and",), "({0} + {1})"),
    ("add", False, ("and", "to"), "({0} + {1})"),
    ("difference between", True, ("and",), "abs({0} - {1})"),
    ("difference of", True, ("and",), "({0} - {1})"),
    ("subtract", False, ("from",), "({1} - {0})"),
    ("product of", True, ("and",), "({0} * {1})"),
    ("multiply", False, ("by", "and", "with"), "({0} * {1})"),
    ("quotient of", True, ("and",), "({0} / {1})"),
    ("divide", False, ("by",), "({0} / {1})"),
)
_OPERAND = r"-?\d+(?:[.,]\d+)*(?![\d/-])"
_BLANKS = r"\s+"
_SENTENCE = "|".join(
    rf"\b{_BLANKS.join(opening.split())}\s+{_OPERAND}\s+(?:{'|'.join(joins)})\s+{_OPERAND}"
    for opening, _, joins, _ in SENTENCE_FORMS)
# "percent" as a question writes "%" ("15 percent of 80"); the calculator reads it so too.
PERCENT_WORD = re.compile(r"\s*\bper\s?cent\b", re.IGNORECASE)
_PERCENT = rf"(?:%|{PERCENT_WORD.pattern})"  # "15% of 80", "15 percent of 80"
_ARITHMETIC = re.compile(
    r"(?<![\w./-])-?\d+(?:\.\d+)?\s*(?:\*\*|[+*×÷^]|(?<=\s)-(?=\s)|/(?!\d+/)|plus|minus|"
    rf"times|multiplied by|divided by|to the power of|{_PERCENT}\s*(?:(?:{_SHARE})\s+)?of"
    rf"|{_PERCENT}\s*(?:{_SHARE})\s+on)"
    r"\s*\(?\s*-?\d+(?:\.\d+)?(?![\d/-])"
    r"|(?<![\w.])\d+(?:\.\d+)?\s+(?:squared|cubed)\b"
    r"|\b(?:square root|sqrt)\s*(?:of\s+)?\(?\s*\d+(?:\.\d+)?(?![\d/-])"
    rf"|{_SENTENCE}", re.IGNORECASE)
# What a request written as arithmetic gives a tool that does arithmetic: as much as three
# words of its name, enough for the ReAct path to call it (``ReactStrategy.call_score``).
ARITHMETIC_SCORE = 9.0


def is_arithmetic(request: str) -> bool:
    """Whether ``request`` holds arithmetic ("What is 45 minus 18?"), its numbers written in
    digits or as words (``as_arithmetic``)."""
    return _ARITHMETIC.search(as_arithmetic(request)) is not None


def as_arithmetic(request: str) -> str:
    """``request`` with its numbers written as words in digits, where only so it holds
    arithmetic: "What is seven squared?" is "What is 7 squared?" (SmolLM2 answered "What is
    two plus two?" itself; asked the words, it called the calculator with "7" and "sqrt").
    ``request`` as it is otherwise."""
    if _ARITHMETIC.search(request) is None:
        digits = in_digits(request)
        if digits != request and any(
                PUNCTUATION_END.match(digits, m.end()) and not _RANGE.fullmatch(m.group())
                for m in _ARITHMETIC.finditer(digits)):
            return digits
    return request


# Prose holds number words beside arithmetic's words ("I visited Paris two times five years
# ago", "The two squared off", "Season two plus three episodes", "chapters one - three"):
# arithmetic written in words ends at a punctuation mark or the end ("two times five and
# loved it" is prose too), and a dash between two numbers is a range.
PUNCTUATION_END = re.compile(r"\s*(?:[.,;:!?)]|$)")
_RANGE = re.compile(r"\S+\s+-\s+\S+")
# Where what a request asks for ends: a punctuation mark, the end, a closing "please", "for
# me" or "then", or an "and" — not "and a half" ("How many hours in a day and a half?" is no
# "in a day").
CLAUSE_END = re.compile(r"\s*(?:[.,;:!?)]|$|(?:please|for me|then)\b"
                        r"|and\b(?!\s+a\s+(?:half|quarter|third)\b))")


# The words a follow-up uses for the previous answer ("And divide that by 4?").
_EARLIER_RESULT = re.compile(r"\b(?:that|it|this|the (?:result|answer))\b", re.IGNORECASE)


def with_earlier_result(request: str, number: str | None) -> str:
    """``request`` with a "that", "it", "this", "the result" or "the answer" read as
    ``number`` (the one number the previous answer stated), where the request holds no
    arithmetic of its own and reads as arithmetic so: "And divide that by 4?" after "144" is
    "And divide 144 by 4?". ``request`` as it is otherwise ("Is it raining?")."""
    if number is None or is_arithmetic(request):
        return request
    for match in _EARLIER_RESULT.finditer(request):
        resolved = request[:match.start()] + number + request[match.end():]
        if is_arithmetic(resolved):
            return resolved
    return request


def does_arithmetic(tool: Tool) -> bool:
    """Whether ``tool``'s description lists arithmetic operators (two or more: "Operators:
    + - * /"), as a calculator's does."""
    return len(set(_OPERATOR.findall(tool.description))) >= 2


_LETTERS_OR_DIGITS = re.compile(r"[^\W_]+")  # a word of any script, as synonyms are written


def in_tool_words(text: str, synonyms: Mapping[str, str]) -> str:
    """``text`` with each word ``synonyms`` holds (case aside) replaced by the tool's
    own name for it (``Tool.synonyms``): "How much RAM is in use?" is "How much memory is
    in use?" for system_stats, whose description and results say "memory"."""
    if not synonyms:
        return text
    lowered = {k.lower(): v for k, v in synonyms.items()}
    return _LETTERS_OR_DIGITS.sub(lambda m: lowered.get(m[0].lower(), m[0]), text)


def tool_scores(tools: Iterable[Tool], request: str) -> dict[str, float]:
    """Each tool's lexical relevance to ``request`` (0 when they share no word); a tool that
    does arithmetic scores ``ARITHMETIC_SCORE`` more for a request written as arithmetic:
    SmolLM2 answered "What is 45 minus 18?" itself ("17"), where it called the calculator
    for "45 - 18"; a tool with its own ``relevance`` (rag_search: the request's words in an
    indexed passage) adds that. A request's words count in each tool's own words too
    (``in_tool_words``): "What is the rpm?" is about a tool whose ``synonyms`` make "rpm" its
    "speed"."""
    plain = _stems(request)
    arithmetic = is_arithmetic(request)
    scores = {}
    for tool in tools:
        asked = plain | _stems(in_tool_words(request, tool.synonyms)) if tool.synonyms else plain
        properties = tool.schema.get("properties") or {}
        # An argument's enum members count as its name does: "Get start date on the
        # American Civil War" is about a tool whose ``specific_info`` offers "Start Date".
        members = " ".join(_enum_members(properties))
        scores[tool.name] = (3 * len(asked & _stems(tool.name.replace(".", " ")))
                             + len(asked & _stems(tool.description))
                             + 0.5 * len(asked & _stems(" ".join(properties)))
                             + 0.5 * len(asked & _stems(members))
                             + (ARITHMETIC_SCORE if arithmetic and does_arithmetic(tool)
                                else 0.0)
                             + (tool.relevance(request) if tool.relevance else 0.0))
    return scores


def _enum_members(schema: Any) -> list[str]:
    """The string enum members anywhere in ``schema`` (an argument's, a list's items')."""
    if isinstance(schema, list):
        return [m for item in schema for m in _enum_members(item)]
    if not isinstance(schema, dict):
        return []
    members = schema.get("enum")  # a list; not an argument named "enum" in ``properties``
    own = [m for m in members if isinstance(m, str)] if isinstance(members, list) else []
    return own + [m for value in schema.values() for m in _enum_members(value)]


def shared_words(request: str, text: str) -> set[str]:
    """The words (stems, stop words aside) ``request`` and ``text`` share, as
    :func:`tool_scores` counts them; operators are no words here (a list's "* " bullets)."""
    return {w for w in _stems(request) & _stems(text) if w[:1].isalnum()}


# The share of the best score a tool needs to be offered. Decided on BFCL's tune questions
# and confirmed on validate (README, rules table): 0.75 rather than 0.5 left out tools
# the bundled model picked wrongly, and on the tune questions it got right, never the
# right one.
PRESELECT = 0.75


def relevant_tools(tools: Iterable[Tool], request: str, keep: float = PRESELECT, *,
                   unmatched: Literal["all", "none"] = "all") -> list[str]:
    """The tools scoring at least ``keep`` times the best score, in their order. When none
    shares a word with the request, ``unmatched`` says what: ``all`` of them (nothing to
    go by), or ``none`` (no tool is about the request)."""
    scores = tool_scores(tools, request)
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return list(scores) if unmatched == "all" else []
    return [name for name, score in scores.items() if score >= keep * best]


# A clock-time argument's description: "in 24-hour format 'HH:MM'", "e.g., '14:00'".
_CLOCK_FORMAT = re.compile(r"HH:MM|24-hour|\b\d{1,2}:\d{2}\b")


def callable_for(tool: Tool, conversation: str) -> bool:
    """Whether ``conversation`` (what the user wrote and the tools returned: where grounding
    takes values from) gives what ``tool``'s required date and clock-time arguments need: a
    day for its date arguments, a clock time for its time arguments
    (``grounding.days_and_times``). A call without them invents its date or time, which
    grounding refuses whatever else the call holds: "Find a hotel in New York" is no
    request to reserve one (``check_in_date``)."""
    properties = tool.schema.get("properties") or {}
    needs_day = needs_time = False
    for name in tool.schema.get("required") or []:
        spec = properties.get(name)
        if not isinstance(spec, dict) or spec.get("type") != "string" or "enum" in spec:
            continue
        words = set(_WORD.findall(_CAMEL.sub(r"\1 \2", name).lower()))
        description = str(spec.get("description") or "")
        if "date" in words or date_form(description):
            needs_day = True
        elif "time" in words and _CLOCK_FORMAT.search(description):
            needs_time = True
    if not (needs_day or needs_time):
        return True
    days, clock = days_and_times(conversation)
    # A day at all, not one per argument: "a pickup date and end date of 2023-04-12".
    return (bool(days) or not needs_day) and (bool(clock) or not needs_time)


# The words a request names an argument's role by, where the argument's own name is rarely
# written: "songs by Sabaton" names the ``artist``, "a movie featuring Jack Carson" the
# ``cast``. SmolLM2 left such optional arguments out of its calls (``mentioned_arguments``'s
# ``roles``; decided on BFCL's tune questions, confirmed on validate: reports/rules.md).
_BY_NAME = re.compile(r"\bby\s+[A-Z0-9]")
_PERFORMERS = re.compile(r"\b(?:featuring|starring|stars|acted by|actors?|actress(?:es)?)\b",
                         re.IGNORECASE)
ROLE_WORDS: dict[str, re.Pattern[str]] = {
    "artist": _BY_NAME, "author": _BY_NAME,
    "cast": _PERFORMERS, "starring": _PERFORMERS, "actors": _PERFORMERS}


def mentioned_arguments(schema: dict[str, Any], request: str, *,
                        roles: bool = True) -> list[str]:
    """The optional arguments of ``schema`` the request mentions: a word of the argument's
    name, or one of its enum members (or, for a list, its items'), is in the request, or
    (``roles``) the words its role goes by (``ROLE_WORDS``: "by Sabaton" for ``artist``);
    the rule for which optional arguments the grammar offers."""
    asked = _stems(request)
    lowered = request.lower()
    required = set(schema.get("required") or [])
    out = []
    for name, spec in (schema.get("properties") or {}).items():
        if name in required:
            continue
        enum = spec.get("enum") if isinstance(spec, dict) else None
        items = spec.get("items") if isinstance(spec, dict) else None
        if isinstance(items, dict) and isinstance(items.get("enum"), list):
            # A list's members are its own: "the price and ratings" names ``features``.
            enum = [*(enum if isinstance(enum, list) else []), *items["enum"]]
        named = bool(asked & _stems(name.replace("_", " "))) or bool(
            roles and (cue := ROLE_WORDS.get(name.lower())) and cue.search(request))
        members = enum if isinstance(enum, list) else []  # a malformed enum names nothing
        if named or any(str(member).lower() in lowered for member in members):
            out.append(name)
    return out


def named_members(members: Iterable[Any], request: str) -> list[str]:
    """The string enum members the request names, every word of each (any case, accents
    aside, plural or singular): "in the kitchen" names ``Kitchen``, "theater events"
    ``Theater``; not in a sentence with a negation ("not in the kitchen"), and a member
    written in capitals ("US", "IT") only in capitals. Where one named member's words hold
    another's ("Comedy" and "Comedy-drama" in "a comedy drama"), only the fuller one counts."""
    said = [s for s in _CLAUSE.findall(request) if not _NEGATION.search(s)]
    asked = {f for s in said for w in re.findall(r"[^\W_]+", fold(s)) for f in word_forms(w)}
    exact = {w for s in said for w in re.findall(r"[^\W_]+", s)}
    hits: dict[str, set[str]] = {}
    for member in members:
        if not isinstance(member, str):
            continue
        words = re.findall(r"[^\W_]+", fold(member))
        if words and (exact.issuperset(re.findall(r"[^\W_]+", member)) if member.isupper()
                      else all(word_forms(w) & asked for w in words)):
            hits[member] = set(words)
    return [m for m, words in hits.items() if not any(words < other for other in hits.values())]


def word_named_members(members: Iterable[Any], request: str) -> list[str]:
    """The one string enum member the request names by a word of its own (four letters or
    more, not a stop word, in no other member; "a family therapist" names ``Family
    Counselor`` of Psychologist / Family Counselor / Psychiatrist), where no member is named
    whole (``named_members``); [] where none or several are. Not in a sentence with a
    negation."""
    strings = [m for m in members if isinstance(m, str)]
    said = [s for s in _CLAUSE.findall(request) if not _NEGATION.search(s)]
    asked = {f for s in said for w in re.findall(r"[^\W_]+", fold(s)) for f in word_forms(w)}
    words = {m: {w for w in re.findall(r"[^\W_]+", fold(m))
                 if len(w) >= 4 and w not in STOP_WORDS} for m in strings}
    hits = [m for m in strings if any(
        word_forms(w) & asked for w in words[m]
        if not any(w in words[o] for o in strings if o != m))]
    return hits if len(hits) == 1 else []


# A member the description quotes: 'delete', "Theater", `asc`.
_QUOTE = "['\"`]"
_PHRASE_END = re.compile(r"[.;](?:\s|$)")


def member_phrases(members: Iterable[Any], description: str | None) -> dict[str, str]:
    """What an argument's description says of each string enum member it quotes: "'add' to
    add a new task, 'delete' to remove an existing task" gives ``delete`` "to remove an
    existing task" (from the member's first quote to the next member's, within the
    sentence)."""
    if not isinstance(description, str):  # a malformed schema's description says nothing
        return {}
    spots = []
    for member in members:
        if isinstance(member, str) and member:
            quoted = re.search(f"({_QUOTE}){re.escape(member)}\\1", description)
            if quoted:
                spots.append((quoted.start(), quoted.end(), member))
    spots.sort()
    phrases: dict[str, str] = {}
    for index, (_, end, member) in enumerate(spots):
        upto = spots[index + 1][0] if index + 1 < len(spots) else len(description)
        phrase = description[end:upto]
        phrases[member] = phrase[:stop.start()] if (stop := _PHRASE_END.search(phrase)) else phrase
    return phrases


def described_members(members: Iterable[Any], description: str | None,
                      request: str) -> list[str]:
    """The one string enum member the request names by a word the argument's description
    says of that member alone (four letters or more, not a stop word, in no other member's
    phrase or name): "remove the task" names ``delete`` of "'add' to add a new task,
    'delete' to remove an existing task, or 'complete' to mark a task as completed"; []
    where the description tells fewer than two members apart, or the request names none
    or several. Not in a sentence with a negation."""
    phrases = member_phrases(members, description)
    if len(phrases) < 2:
        return []
    said = [s for s in _CLAUSE.findall(request) if not _NEGATION.search(s)]
    asked = {f for s in said for w in re.findall(r"[^\W_]+", fold(s)) for f in word_forms(w)}

    def forms(text: str) -> set[str]:
        return {f for w in re.findall(r"[^\W_]+", fold(text)) if len(w) >= 4
                and w not in STOP_WORDS for f in word_forms(w)}

    own = {m: forms(p) for m, p in phrases.items()}
    others = {m: set().union(*(own[o] | forms(o) for o in phrases if o != m)) for m in phrases}
    hits = [m for m in phrases if own[m] - others[m] & asked]
    return hits if len(hits) == 1 else []


# Words a flag's name shares with flags of every kind ("include_forecast", "has_garage"):
# they say it is a flag, not what it is about.
_FLAG_WORDS = frozenset({"inclu", "has", "have", "allow", "enabl", "retur", "reque", "need",
                         "flag", "optio"})
# "no", but not the abbreviation of "number" ("Case No 28473", "no. 5").
_NEGATIONS = r"not|no(?!\.?\s*\d)|without|don['’]?t|doesn['’]?t|exclude|excluding|never|nor"
_NEGATION = re.compile(rf"(?i)\b(?:{_NEGATIONS})\b")
_CLAUSE = re.compile(r"[^.!?\n]+")
# A flag's own negation stands before it in its part of the sentence: "less" and "non" say
# less of it ("a less detailed description", "non-smoking"); "but", "then" and the marks
# between clauses end that part ("a detailed one, and then a less detailed one"), but
# not the point or comma of a number ("2.5 kg", "1,000 rooms").
_FLAG_NEGATION = re.compile(rf"(?i)\b(?:{_NEGATIONS}|less|non)\b")
_INDIFFERENCE = re.compile(r"(?i)\b(?:care|concerned|matter|mind|bother|worry)\b")
_FLAG_CLAUSE = re.compile(r"(?i)(?:[^.!?\n,;:]|[.,](?=\d))+?(?=[.,](?!\d)|[!?\n;:]|"
                          r"\b(?:but|then|however|whereas|instead)\b|$)")


def _flag_words(schema: dict[str, Any]) -> dict[str, set[str]]:
    """Each boolean argument of ``schema`` with the words of its name that no other flag of
    the tool shares ("garage" of ``has_garage``, "home" of ``is_cleaning_home``), or all
    its words where every one is shared."""
    flags = [n for n, spec in (schema.get("properties") or {}).items()
             if isinstance(spec, dict) and spec.get("type") == "boolean"]
    words = {n: _stems(n.replace("_", " ")) - _FLAG_WORDS for n in flags}
    own = {}
    for name in flags:
        shared = set().union(*(words[o] for o in flags if o != name))
        own[name] = (words[name] - shared) or words[name]
    return own


def affirmed_flags(schema: dict[str, Any], request: str) -> list[str]:
    """The boolean arguments the request asks for: a word of the flag's own name
    (``_flag_words``) is in a sentence of the request with no negation ("not", "without",
    "don't"...)."""
    sentences = [(_stems(s), _NEGATION.search(s) is not None) for s in _CLAUSE.findall(request)]
    out = []
    for name, own in _flag_words(schema).items():
        said = next((negated for stems, negated in sentences if own & stems), None)
        if said is False:
            out.append(name)
    return out


def flag_values(schema: dict[str, Any], request: str) -> dict[str, tuple[bool, ...]]:
    """The boolean arguments the request speaks of, each with the values it gives them in
    the order it says them: a word of the flag's own name (``_flag_words``) is false after
    a negation in its part of the sentence ("not isothermal", "without trip protection", "a
    less detailed description"), true elsewhere. "I don't care about a garage" gives no
    value; nor do two words of one flag saying both ("available on Monday ... does not have
    pets" of ``available_for_pet``)."""
    clauses = [(word_positions(c), c) for c in _FLAG_CLAUSE.findall(request)]
    out: dict[str, tuple[bool, ...]] = {}
    for name, own in _flag_words(schema).items():
        said: dict[str, set[bool]] = {}
        order: list[bool] = []
        for at, clause in clauses:
            first = min((at[stem] for stem in own if stem in at), default=None)
            if first is None or _INDIFFERENCE.search(clause[:first]):
                continue
            value = _FLAG_NEGATION.search(clause[:first]) is None
            for stem in own & at.keys():
                said.setdefault(stem, set()).add(value)
            order.append(value)
        values = tuple(dict.fromkeys(order))
        if len(values) == 1 or any(len(both) == 2 for both in said.values()):
            out[name] = values
    return out


def number_readings(text: str) -> set[float]:
    """Every number ``text`` gives (digits, percents, number words...), as grounding reads
    them (``callgate.tools.grounding``): the numbers an argument may take."""
    from callgate.tools.grounding import _Context  # one reading of numbers for the project

    context = _Context(text)
    return context.numbers | {n / 100 for n in context.numbers
                              if f"{n:g}%" in text.replace(" %", "%")}


_NAME = re.compile(r"[A-Z][\w'&.-]*(?:[ ]+(?:of |de |la |del |von |van )?[A-Z0-9][\w'&.-]*)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")
_LOOK_BACK = 64


def names_in(text: str) -> list[str]:
    """The names a request lists (people, places, titles): runs of capitalised words. A
    single word opening a sentence ("Play", "Find") is an instruction, not a name."""
    out = []
    for match in _NAME.finditer(text):
        name = match.group().rstrip(".")
        # Only the few characters before the name decide (a window keeps long texts linear).
        before = text[max(0, match.start() - _LOOK_BACK):match.start()]
        opening = match.start() == 0 or _SENTENCE_START.search(before) is not None
        if (opening and " " not in name) or name in ("I", "I'm", "I'd"):
            continue
        out.append(name)
    return list(dict.fromkeys(out))


def unused_names(request: str, values_text: str) -> list[str]:
    """The names of ``request`` none of whose words appears in ``values_text`` (the
    arguments of the calls so far): what a further call could be for."""
    used = {w.lower() for w in _WORD.findall(values_text.lower())}
    return [name for name in names_in(request)
            if not {w for w in _WORD.findall(name.lower()) if len(w) > 1} & used]
