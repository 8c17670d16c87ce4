"""Checks on the final answer, as strict as the checks on calls.

A small model's answer can loop (the same line 55 times), echo the loop's own
instructions, write its own ``Sources:`` line, or state numbers that no tool returned.
:func:`check_answer` cuts repetition, removes echoed instructions, the question said again,
the answer label written again ("The final answer is: ...") and model-written source lines,
flags numbers that appear neither in the results nor in what the user wrote, and notices an
answer that copies a result's summary line (the loop's own ``[tool] ...`` format). When the
answer is left degenerate, states invented numbers or copies a summary while results exist,
the caller answers from the results' summaries instead (``cite`` does, and says so); so it
does when the answer gives a result's percentage to a name the results give another number
("2.6% disk" where they say "memory 2.6%, disk 23.1%"): a true number, falsely told; and
when the question asks about a figure the results name ("How full is the disk?") and the
answer's numbers hold none of that name's ("2.0%" where they say "disk 23.1%").
No library does this; the rules are plain text heuristics, each tested.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from callgate.prompts.correction import CORRECTION, NOT_RUN, UNSUPPORTED
from callgate.prompts.react import REACT_SYSTEM, REACT_SYSTEM_TERSE
from callgate.prompts.system import ANSWER_NOW, NATIVE_SYSTEM, REASONS
from callgate.tools.grounding import GROUNDING_ADVICE, in_digits, word_forms
from callgate.tools.relevance import STOP_WORDS, in_tool_words

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[,_]\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\d)")
_SOURCES_LINE = re.compile(r"(?im)^[ \t]*(?:\**)(?:sources?|references?|citations?)(?:\**)"
                           r"[ \t]*:.*$")
# A sentence ends at ".", "!", "?" or a line break, not at a decimal point ("load 0.15 1.15").
_SENTENCE = re.compile(r"(?:\d\.(?=\d)|[^.!?\n])+[.!?]?|\n")
_WORD = re.compile(r"\w+")
_CITATION_IDS = re.compile(r"\[R\d+(?:,\s*R\d+)*\]")  # "[R1]", "[R1, R2]": no numbers
_LOOPED = re.compile(r"(.{3,80}?)(?:\s*\1){3,}", re.DOTALL)  # a phrase back to back
# A phrase of four words or more said again at once, a comma apart at most: "2.5% of 23.5
# GiB, 78.2 GiB of 252.0 GiB, 2.5% of 23.5 GiB, 78.2 GiB of 252.0 GiB" (the answer set's
# "How full is the disk of this computer?"), which ``_LOOPED`` lets by under four rounds.
# Inside one sentence: a sentence said again is for the sentence count (``most``).
_DOUBLED = re.compile(r"(?<!\S)(\S(?:(?![.!?](?:\s|$))[^\n]){14,200}?[^\s.!?])"
                      r"(?:,?[ \t]+\1)+(?=[\s,.;:!?]|$)")
_LEADING_TAG = re.compile(r"\s*(?:\[R\d+\]\s*)*(\[[\w.:-]+\])")  # "[R1] [system_stats]"
# The loop's answer label written again inside the answer ("The final answer is: 391"),
# and what SmolLM2 writes after it when it has nothing (echoing "The Final Answer was empty").
# A label ends with a colon or "is"/"was": "The final answer isn't known" is a sentence.
# Without "final", only with a colon ("The answer is: 4", "Answer:"): "The answer is 4." is
# a sentence. "Final:" or "Final 2:" is the label garbled (the bundled model's "The capital
# of France is Paris.\n\nFinal 2: The capital of France is Paris."); "Final score: 3-1"
# is not. So is one word ending in "answer" ("FenlAnswer:", the bundled model's `callgate
# ask "Tell me a joke"`), and a misspelt "final" before "answer:" ("Fenl answer:").
_ANSWER_LABEL = re.compile(
    r"(?i)^\s*(?:(?:the\s+)?(?:final\s+answer(?:\s*:|\s+(?:is|was)\b\s*:?)"
    r"|answer(?:\s+(?:is|was))?\s*:)|final(?:[ \t]+\d+)?[ \t]*:"
    r"|[^\W\d_]{1,8}answer[ \t]*:|(?P<final>f[^\W\d_]{2,4})[ \t]+answer[ \t]*:)\s*")
# The loop's labels, as a reply the model goes on writing starts them again.
_LABEL_STARTS = ("final answer", "the final answer", "the answer is", "answer", "action input",
                 "action", "thought", "observation", "sources")
# One of the loop's two-word labels in capitals ending a sentence ("42 FINAL ANSWER:").
# Not one word alone: "All sales are FINAL." is a sentence.
_CAPITAL_LABEL = re.compile(r"[ \t]*\b(?:FINAL[ \t]+ANSWER|ACTION[ \t]+INPUT)[ \t]*:?[ \t]*$")
# One or two words, no digits; a word may hold an apostrophe ("I'm" of "I'm here to help").
_FRAGMENT = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?(?:[ \t]+[^\W\d_]+(?:['’][^\W\d_]+)?)?")
_NOTHING = re.compile(r"(?i)^\W*(?:empty|blank|none|nothing|null|n/?a|unknown)?\W*$")
NUMBER_LOOP = 8  # a number written this many times over, with blanks between, is a loop
NGRAM = 6  # words shared with an instruction that make a sentence an echo of it
INVENTED_LIMIT = 3  # invented numbers from which the answer gives way to the results
# A name written right before a number ("disk 23.1%", "load: 0.5"), or right after it
# ("23.1% disk"): no comma or other word between, but before a percentage "usage", "use"
# or "used", then any of "is", "was", "stands", "sits", "currently", "now" and "at" ("the
# disk is 2.5%", "disk usage is at 23.1%", "disk at 2.5%").
_LABEL = re.compile(r"[^\W\d_]{3,}")
_KEY = re.compile(r"[^\W\d]+")  # a word, or words joined by "_" (a JSON key)
_NAME_BEFORE = re.compile(r"([^\W\d_]{3,})(?:[ \t]+(?:usage|use|used))?"
                          r"(?:[ \t]+(?:is|was|stands|sits|currently|now|at))*"
                          r"[ \t]*[:=]?[ \t]*\Z", re.IGNORECASE)
# The name after a percentage, "of the total" or "of the available" between them or not
# ("2.4% disk", "2.4% of the total disk", "2.5% of the available CPU cores"); a name with a
# number of its own after it is that one's ("12 March 2027", "cpu 7.3%, memory 2.5%").
_NAME_AFTER = re.compile(r"[ \t]*%[ \t]*(?:of[ \t]+(?:the[ \t]+)?(?:(?:total|available)"
                         r"[ \t]+)?)?"
                         r"([^\W\d_]{3,})(?![^\W\d_])(?![ \t]*[:=]?[ \t]*[-+]?\d)")
_PERCENT = re.compile(r"[ \t]*%")
# A word of three letters or more right after a number: what it counts ("2 CPUs", "2.17
# CPU cores"; of three letters, only after a fraction, which no count is: "1 CPU is busy"
# need not count the CPUs). The results' counts are read from words of four or more (``counts``):
# shorter ones are units more often than not ("23.0 of 23.5 GiB": the GiB are both
# numbers'), so a unit of the answer counts nothing the results count.
_COUNTED = re.compile(r"[ \t]+([^\W\d_]{3,})\b")
# A line that opens with a label of one to three words and a colon ("Disk usage: "), a
# list's bullet aside: what follows is that label's value.
_LINE_LABEL = re.compile(r"(?m)^[ \t]*(?:[-*•][ \t]*)?((?:[^\W\d_]+[ \t]+){0,2}[^\W\d_]+)"
                         r"[ \t]*[:=][ \t]*\Z")
# Words that join or count, not names of a figure ("10 sick days and 25 days").
_NOT_NAMES = frozenset({
    "and", "the", "for", "from", "with", "was", "are", "were", "has", "had", "have", "get",
    "got", "top", "than", "then", "that", "this", "its", "per", "all", "any", "each", "about",
    "over", "under", "into", "onto", "out", "off", "you", "your", "our", "their"})


def _instruction_texts() -> list[str]:
    texts = [ANSWER_NOW, NATIVE_SYSTEM, REACT_SYSTEM, REACT_SYSTEM_TERSE,
             CORRECTION, NOT_RUN, UNSUPPORTED, *REASONS.values(), GROUNDING_ADVICE]
    return [re.sub(r"\{[^}]*\}", " ", t) for t in texts]


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


_INSTRUCTION_NGRAMS: set[tuple[str, ...]] = set().union(*map(ngrams, _instruction_texts()))
# An instruction's sentence too short for an n-gram, written whole ("Do not call any
# tools."): an echo as well. Four words at least, so "Call for them." is the answer's own.
_INSTRUCTION_SENTENCES: frozenset[tuple[str, ...]] = frozenset(
    words for text in _instruction_texts() for sentence in _SENTENCE.findall(text)
    if 4 <= len(words := tuple(_WORD.findall(sentence.lower()))) < NGRAM)


@dataclass
class AnswerCheck:
    """The answer after the checks, and what they found."""

    text: str
    notes: list[str] = field(default_factory=list)
    invented_numbers: list[str] = field(default_factory=list)
    misattributed_numbers: list[str] = field(default_factory=list)
    missed_figure: str | None = None  # the names asked about whose figure the answer lacks
    false_equations: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # one-number results the answer lacks
    wrong_units: list[str] = field(default_factory=list)  # results given another unit
    others_figure: str | None = None  # the answer's first figure, another name's
    copied_summary: bool = False

    @property
    def degenerate(self) -> bool:
        """Nothing left that a person could read as an answer."""
        return len(_WORD.findall(self.text)) == 0


def cut_repetition(text: str, most: int = 2) -> tuple[str, bool]:
    """Keep each sentence or line at most ``most`` times, and at most ``most`` of a run
    that counts (``_counting_loops``); also cut a phrase repeated back to back
    (``a()a()a()…``, or twice where it is four words or more). After the last sentence
    cut, a last fragment of two words or fewer that starts a label or a cut sentence goes
    too: the loop's next round where decoding stopped ("Fin" of "Final Answer"). A cut line
    takes its break along."""
    loops = 0

    def once(match: re.Match[str]) -> str:
        nonlocal loops
        if not re.search(r"[^\W\d_]", match[1]):
            # Digits run together ("14.700000000000001") are a number, unless decimal points
            # recur ("29.0.0.0.0…"); a few equal numbers ("[1, 1, 1, 1]") may be data;
            # "2.5% 2.5% 2.5% …" on and on is a loop.
            blanks = re.search(r"\s", match[0]) is not None
            if (not blanks and match[0].count(".") <= 1) or (
                    blanks and match[0].count(match[1]) < NUMBER_LOOP):
                return match[0]
        loops += 1
        return match[1]

    def twice(match: re.Match[str]) -> str:
        nonlocal loops
        if len(match[1].split()) < 4:  # "Massachusetts Avenue, Massachusetts Avenue"
            return match[0]
        loops += 1
        return match[1]

    text = _DOUBLED.sub(twice, _LOOPED.sub(once, text))
    seen: dict[str, int] = {}
    kept: list[str] = []
    cut = loops > 0
    last_cut = -1  # where in ``kept`` the last sentence cut would have gone
    whole_line = False  # the sentence just cut was a line of its own: its break goes too
    starts = list(_LABEL_STARTS)  # what a next round of the loop begins with
    parts = _SENTENCE.findall(text)
    counting = _counting_loops(parts, most)
    for index, part in enumerate(parts):
        if part == "\n" and whole_line:
            whole_line = False
            continue
        key = " ".join(_WORD.findall(part.lower()))
        if not key and part != "\n" and last_cut == len(kept):
            continue  # what is left of a cut sentence: its closing quote or bracket
        if key:
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > most or index in counting:
                cut, last_cut = True, len(kept)
                whole_line = not kept or kept[-1].endswith("\n")
                starts.append(part.strip().lower())
                continue
        whole_line = False
        kept.append(part)
    # ("That's a joke." x3, then "Fin"): the start of a label or of a cut sentence; other
    # text is content ("Disk 7%", "Thanks"). Without a cut, the start of an earlier
    # sentence or list item, where decoding stopped ("- Searching for" after "- Searching
    # for news, facts and anything recent"); not of a label ("It is 5. Fin" may mean it).
    nonblank = [i for i, part in enumerate(kept) if part.strip()]
    if last_cut >= 0:
        after = [i for i in nonblank if i >= last_cut]
        fragment = _bare(kept[-1]) if after == [len(kept) - 1] else ""
    elif len(nonblank) > 1 and nonblank[-1] == len(kept) - 1:
        fragment = _bare(kept[-1])
        starts = [_bare(part) for part in kept[:-1] if part.strip()]
    else:
        fragment = ""
    if _FRAGMENT.fullmatch(fragment) and any(
            _bare(start).startswith(fragment) for start in starts):
        kept.pop()
    return _tidy("".join(kept)), cut


COUNT_LOOP = NUMBER_LOOP  # sentences alike but for a number counting up, in a row: a loop
_DIGITS = re.compile(r"\d+")


def _counting_loops(parts: list[str], most: int) -> set[int]:
    """The indexes of the ``parts`` (sentences, line breaks) to cut as a loop that counts:
    ``COUNT_LOOP`` sentences or more in a row, each the one before it with its one number
    one up ("Write a haiku about autumn." got "FinaL 1", "FinaL 2", … "FinaL 36", a line
    each, which no sentence repeats); all but the first ``most`` of each such run. A short
    list that counts ("iPhone 12" to "iPhone 15") is no loop."""
    out: set[int] = set()
    run: list[int] = []
    shape, last = "", 0
    for index, part in enumerate(parts):
        words = " ".join(_WORD.findall(part.lower()))
        if not words:
            continue  # a line break or a lone mark does not end a run
        numbers = _DIGITS.findall(words)
        counted = len(numbers) == 1 and re.search(r"[^\W\d_]", words) is not None
        # (the words lose a minus sign: "Floor -2" after "Floor -1" counts down)
        number = int(numbers[0]) * (-1 if re.search(r"-\d", part) else 1) if counted else 0
        if counted and run and _DIGITS.sub("#", words) == shape and number == last + 1:
            run.append(index)
        else:
            if len(run) >= COUNT_LOOP:
                out.update(run[most:])
            run = [index] if counted else []
        if counted:
            shape, last = _DIGITS.sub("#", words), number
    if len(run) >= COUNT_LOOP:
        out.update(run[most:])
    return out


_BULLET = re.compile(r"^(?:[-*•]|\d{1,2}[.)])[ \t]*")


def _bare(part: str) -> str:
    """A sentence or line without its list bullet, in lower case."""
    return _BULLET.sub("", part.strip().lower())


def _tidy(text: str) -> str:
    """No spaces before a line break, at most one blank line in a row, no outer blanks (as
    ``sanitize`` leaves a text: a check that removes a line leaves its break)."""
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", text)).strip()


def runs_away(text: str) -> bool:
    """Whether a reply being written has started to loop (what :func:`cut_repetition`
    would cut): the rest of it would only be cut too, so decoding can stop."""
    return cut_repetition(text)[1]


def drop_echoes(text: str) -> tuple[str, bool]:
    """Remove sentences that repeat the loop's own instructions."""
    kept, dropped = [], False
    for part in _SENTENCE.findall(text):
        if ngrams(part) & _INSTRUCTION_NGRAMS or (
                tuple(_WORD.findall(part.lower())) in _INSTRUCTION_SENTENCES):
            dropped = True
            continue
        kept.append(part)
    return _tidy("".join(kept)), dropped


def _misspelt_final(word: str) -> bool:
    """Whether ``word`` is close to "final" ("Fenl"; not "First" or "Full", whose "answer:"
    heads a sentence's own list)."""
    return bool(difflib.get_close_matches(word.lower(), ["final"], n=1, cutoff=0.6))


def drop_answer_labels(text: str) -> tuple[str, bool]:
    """Remove the answer label from sentences that start with it ("The final answer is:
    391" becomes "391"), and sentences that say no more than it ("The final answer is
    empty.") or than an earlier sentence ("2.4%", then "The answer is: 2.4%"); and a
    two-word label in capitals at a sentence's end ("42 FINAL ANSWER:" becomes "42": the
    model starting the reply format again)."""
    kept: list[str] = []
    dropped = False
    gone = False  # the sentence before was dropped whole
    for part in _SENTENCE.findall(text):
        if gone and part != "\n" and not _WORD.search(part):
            continue  # what is left of it: its closing quote or bracket
        gone = True
        if label := _CAPITAL_LABEL.search(part):
            dropped = True
            part = part[:label.start()]
            if not part.strip():
                continue
        label = _ANSWER_LABEL.match(part)
        if label and label["final"] and not _misspelt_final(label["final"]):
            label = None
        if label:
            dropped = True
            rest = part[label.end():]
            said = _WORD.findall(rest.lower())
            if _NOTHING.match(rest) or any(_WORD.findall(k.lower()) == said for k in kept):
                continue
            part = rest
        gone = False
        kept.append(part)
    return _tidy("".join(kept)), dropped


def drop_question(text: str, question: str) -> tuple[str, bool]:
    """Remove sentences that only say the user's question again (SmolLM2 opens and ends an
    answer it does not have with it) — a question of three words or more, where other text
    is left ("Hello" answered "Hello!" stays)."""
    asked = _WORD.findall(question.lower())
    if len(asked) < 3 or not question.rstrip().endswith("?"):
        return text, False
    kept = [p for p in _SENTENCE.findall(text) if _WORD.findall(p.lower()) != asked]
    left = _tidy("".join(kept))
    return (left, True) if _WORD.search(left) and left != _tidy(text) else (text, False)


# Words a sentence cannot end on: it stopped where the answer's token budget ran out ("2.4%
# The reason for the"). Articles, "of", conjunctions and verbs that need what follows;
# not prepositions that end sentences as particles ("switched on", "work on this").
_OPEN_ENDS = frozenset({
    "a", "an", "the", "of", "and", "or", "but", "than", "because", "if", "its", "their",
    "these", "is", "are", "was", "were", "has", "have", "had"})
# A line that is a label of one to three words and nothing else ("System_Stats:").
_DANGLING = re.compile(r"[ \t]*(?:[-*•][ \t]*)?[^\W\d][\w.-]*(?:[ \t]+[\w.-]+){0,2}[ \t]*[:=]"
                       r"[ \t]*")
_OPEN_TAIL = re.compile(rf"(?i)(?:[ \t]+(?:{'|'.join(sorted(_OPEN_ENDS))}))+[ \t]*\Z")


def drop_unfinished(text: str) -> tuple[str, bool]:
    """Remove a last sentence that stops on a word no sentence ends on ("The reason for
    the"), without its full stop, where other text is left: the answer ran out of tokens
    there. A last sentence with a figure loses only those words ("Memory usage is 2.4% of
    the" keeps "Memory usage is 2.4%"), and so does an answer of that one sentence ("2.5%
    of 23.7% of 252.0 GiB of", seen from the bundled model); a last line that is a label
    with nothing after it goes too ("2\n\nSystem_Stats:"). An answer of one such sentence
    without a figure stays (it is all there is)."""
    parts = _SENTENCE.findall(re.sub(r"(?:\s*\[R\d+\])+\s*\Z", "", text))
    last = max((i for i, p in enumerate(parts) if p.strip()), default=None)
    if last is not None and _DANGLING.fullmatch(parts[last]) and (
            not last or parts[last - 1] == "\n"):
        left = _tidy("".join(parts[:last]))
        if _WORD.search(left):
            return left, True
    if last is None or re.search(r"[.!?:;)\]\"'%]\s*$", parts[last]):
        return text, False
    words = _WORD.findall(parts[last].lower())
    if not words or words[-1] not in _OPEN_ENDS:
        return text, False
    left = _tidy("".join(parts[:last]))
    alone = not _WORD.search(left)  # the whole answer
    # A sentence of its own: after a blank or a line break, not the rest of "x.org/the".
    own = parts[last][:1].isspace() or (bool(last) and parts[last - 1] == "\n")
    if re.search(r"\d", parts[last]) and (own or alone):
        trimmed = _OPEN_TAIL.sub("", parts[last])
        return (_tidy("".join([*parts[:last], trimmed])), True) if re.search(
            r"\d", trimmed) and trimmed != parts[last] else (text, False)
    return (left, True) if own and not alone else (text, False)


# Words of a sentence about the loop's record rather than the question ("a summary of the
# results of the [system_stats] command"): "According to [web_search], Paris is ..." is an
# answer.
_RECORD_WORDS = re.compile(r"(?i)\b(?:command|summar(?:y|ies)|output|available|tool|"
                           r"function)s?\b")


# A numbered list written inline ("1. The car is red. 2. It is fast."): its first item at
# the start of the text or a line, each later one after a sentence's end.
_LIST_START = re.compile(r"(?m)^[ \t]*1[.)][ \t]+\S")
_LINE_MARKER = re.compile(r"(?m)^[ \t]*\d+[.)](?=\s)")
_INLINE_ITEM = re.compile(r"(?<=[.!?])[ \t]+\d{1,2}[.)](?=[ \t]+[^\W\d_])")
# An item with nothing after it but further such items or the end: the model numbering on
# where it had nothing more to say ("… a 2018 model. 2. 3. 4.").
_EMPTY_ITEM = re.compile(
    r"(?<=[.!?])[ \t]+\d{1,2}[.)](?=[ \t]*(?:\d{1,2}[.)](?:[ \t]|\Z)|\Z))"
    r"|\n[ \t]*\d{1,2}[.)][ \t]*(?=\n|\Z)")  # or a line of its own


def drop_empty_items(text: str) -> tuple[str, bool]:
    """Remove the empty items that end a numbered list ("1. It is red. 2. 3." becomes "1.
    It is red."). Only in a list that starts with "1.": a lone "42." is an answer."""
    if not _LIST_START.search(text):
        return text, False
    kept = _EMPTY_ITEM.sub("", text)
    return (_tidy(kept), True) if kept != text else (text, False)


def drop_tool_talk(text: str, results: Iterable[str]) -> tuple[str, bool]:
    """Remove sentences without a number that name a result's ``[tool]`` tag and talk about
    it (its command, summary, output, being available): the loop's record, not
    the answer ("This is a summary of the results of the [system_stats] command. The
    [system_stats] command is available in all Linux distributions."), where other text is
    left."""
    names = {tag[1] for r in results if (tag := _LEADING_TAG.match(r))}
    if not names:
        return text, False
    parts = _SENTENCE.findall(text)
    kept = [p for p in parts if not (any(n in p for n in names) and not re.search(r"\d", p)
                                     and _RECORD_WORDS.search(p))]
    left = _tidy("".join(kept))
    return (left, True) if len(kept) < len(parts) and _WORD.search(left) else (text, False)


def drop_source_lines(text: str) -> tuple[str, bool]:
    """Remove ``Sources:``-style lines the model wrote (callgate writes the real one)."""
    cleaned, count = _SOURCES_LINE.subn("", text)
    return _tidy(cleaned), count > 0


def numbers_in(text: str) -> list[str]:
    return [m.group().lstrip("+") for m in _NUMBER.finditer(text)]


# Digits a word ends in ("sunflower42", "H2O"), not a citation id's ("[R1]").
_WORD_DIGITS = re.compile(r"(?<=[^\W\d_])\d+(?:\.\d+)?")


def word_digits(text: str) -> list[str]:
    """The digits words of ``text`` end in: no numbers to the checks (``numbers_in``), but
    an answer grammar that decodes every digit must allow them, or a result's password
    "sunflower42" comes out "sunflower4"."""
    return _WORD_DIGITS.findall(_CITATION_IDS.sub(" ", text))


def _value(number: str) -> float | None:
    """The number written, or None where it is none a float holds (too long to be finite:
    an infinity would be "near" every number)."""
    try:
        value = float(number.replace(",", "").replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_SCIENTIFIC = re.compile(r"(?<![\w.])(\d)(?:\.(\d+))?[ \t]*(?:[×xX*][ \t]*10[ \t]*(?:\^|\*\*)"
                         r"[ \t]*|[eE])\+?(\d+)(?!\d)")


def _rounds(number: re.Match[str], exact: set[str]) -> bool:
    """Whether a number in scientific notation is one of ``exact``'s, rounded: as many
    digits, and its own leading ones."""
    mantissa = number[1] + (number[2] or "")
    return any(len(digits) == int(number[3]) + 1
               and abs(int(digits[:len(mantissa)]) - int(mantissa)) <= 1 for digits in exact)


def _exact(number: str) -> str:
    """A number as written, where it is longer than a float holds exactly (15 significant
    digits) and so known only written the same way, else "": 2^1000 written out, and float
    noise — a decimal whose last digits follow a run of zeros or nines ("14.700000000000001";
    SmolLM2 wrote "10.0000000000000001, 5.00000000000000001, …" for "10 km" and "5 kg", and
    "1.000000000000001" for how many feet are in a mile), not pi to 22 places."""
    digits = number.replace(",", "").replace("_", "").lstrip("-")
    whole, _, fraction = digits.partition(".")
    figures = whole + fraction
    if not figures.isdigit() or len(figures.lstrip("0")) <= 15:
        return ""
    return digits if not fraction or _FLOAT_NOISE.search(fraction) else ""


_FLOAT_NOISE = re.compile(r"(?:0{6,}|9{6,})[1-9]\d?$")


def _near(value: float, known: Iterable[float]) -> bool:
    """Whether ``value`` is one of ``known``, written exactly or rounded."""
    return any(abs(round(k, digits) - value) <= 1e-9 * max(1.0, abs(k))
               for k in known for digits in (9, 3, 2, 1, 0))


_DOTTED = re.compile(r"(?<![\w.,])\d+(?:\.\d+){2,}(?![\w.]*\d)")


def invented_numbers(text: str, evidence: Iterable[str]) -> list[str]:
    """Numbers of ``text`` found in none of ``evidence`` (results, the user's words).

    Citation ids (``[R1]``) are not numbers, nor are list markers (``_without_markers``).
    A whole number of more digits than a float holds (``_exact``) is known only as some
    evidence writes it, digit for digit, or near a figure written as a float
    (``1.2193263111263501e+17``)."""
    text = _without_markers(_CITATION_IDS.sub(" ", text))
    evidence = list(evidence)
    written = [n for e in evidence for n in numbers_in(e)]
    floats = {v for n in written if not _exact(n) and (v := _value(n)) is not None}
    known = floats | {v for n in written if (v := _value(n)) is not None}
    exact = {_exact(n) for n in written} - {""}
    # A long number in scientific notation ("about 1.148 × 10^602") is that number rounded.
    text = _SCIENTIFIC.sub(lambda m: " " if _rounds(m, exact) else m[0], text)
    found = _unheld_runs(text, evidence)
    for number in _numbers_outside_runs(text):
        value, digits = _value(number), _exact(number)
        if digits:  # as written, or a whole number near a figure written as a float
            held = digits in exact or ("." not in digits and value is not None
                                       and _near(value, floats))
        else:
            held = value is not None and _near(value, known)
        if held:
            continue
        found.append(number)
    return list(dict.fromkeys(found))


def _without_markers(text: str) -> str:
    """``text`` without its list markers: an inline list's ("1. Red. 2. Blue.") and those
    opening lines of a list; a number opening a line is a marker only in a list (one that
    starts with "1." or numbers two lines or more): "42." alone is an answer."""
    listed = _LIST_START.search(text) is not None
    if listed:
        text = _INLINE_ITEM.sub(" ", text)
    if listed or len(_LINE_MARKER.findall(text)) > 1:
        text = _LINE_MARKER.sub(" ", text)
    return text


_CLIPPED = re.compile(r"\.?…")


def _unheld_runs(text: str, evidence: Iterable[str]) -> list[str]:
    """The dotted runs of ``text`` ("3.14.1", "2.0.52") that no text of ``evidence`` writes:
    such a run is one figure, a version or an address, where numbers_in reads its first part
    (SmolLM2 wrote "2.0.52 CPU cores" for "2 CPUs")."""
    held = {run for e in evidence for run in _DOTTED.findall(e)}
    return [run for run in _DOTTED.findall(text) if run not in held]


def _numbers_outside_runs(text: str) -> list[str]:
    """The numbers of ``text`` but its dotted runs, which are figures of their own."""
    return numbers_in(_DOTTED.sub(" ", text))


def _labels(texts: Iterable[str], percent: bool = False) -> dict[str, set[float]]:
    """The numbers the results write after each name: "load 0.68 0.16, disk 23.1%" gives
    ``load`` its three numbers and ``disk`` one; each word of a key does
    ("disk_percent: 23.1"). With ``percent``, only those written as percentages."""
    labels: dict[str, set[float]] = {}
    for text in texts:
        names: list[str] = []
        for token in re.finditer(f"{_KEY.pattern}|{_NUMBER.pattern}", text):
            if not token[0][0].isdigit() and token[0][0] not in "+-":
                # A short word ("up", "h") names nothing.
                names = [w.lower() for w in token[0].split("_")
                         if _LABEL.fullmatch(w) and w.lower() not in _NOT_NAMES]
            elif _CLIPPED.match(text, token.end()) or (  # cut short by a clipped preview
                    percent and not _PERCENT.match(text, token.end())):  # ("0.…"), no "%"
                continue
            elif (value := _value(token[0])) is not None:
                for name in names:
                    labels.setdefault(name, set()).add(value)
    return labels


# Time units spelt out, as the units glued to a number abbreviate them ("2 hours" is "2h").
_TIME_UNITS = {"day": "d", "days": "d", "hour": "h", "hours": "h", "hr": "h", "hrs": "h",
               "minute": "m", "minutes": "m", "min": "m", "mins": "m", "second": "s",
               "seconds": "s", "sec": "s", "secs": "s"}
_TIME_GLUED = frozenset({"d", "h", "m", "s", "min", "ms"})
_SPELT_UNIT = re.compile(rf"({_NUMBER.pattern})[ \t]+({'|'.join(_TIME_UNITS)})\b", re.IGNORECASE)
# A number and the unit glued to it: "4h", "9m", "16GB" (not "2 CPUs", not "2.6%").
_GLUED = re.compile(rf"({_NUMBER.pattern})([^\W\d_]{{1,3}})(?![\w])")


def misattributed_numbers(text: str, results: Iterable[str]) -> list[str]:
    """Percentages of ``text`` that the results hold, written right next to a name the
    results give other numbers and none of the names next to them give this one: "2.6%
    disk" or "disk: 2.6%" where the results say "memory 2.6%, disk 23.1%"; against the
    name's percentages where it has any ("2.0% CPU" is not the CPU's "cpu 0.0%", though
    "cpu_count": 2 names the CPU too). A name the results do not use ("RAM") says nothing
    either way. Other numbers are read this way only
    as the value of a line's label ("Load: 252.0 GiB" on a line of its own, where the
    results say "load 0.52 0.27 0.36, … disk free 78.7 of 252.0 GiB"): elsewhere a unit or a
    month after a number ("100 USD", "3 December") is not its name, and a name before it
    need not be its ("Wind in Paris: 12 km/h"); or as a count of a word of four letters or
    more that the results write after other numbers only ("2.5 CPUs" where they say "memory
    2.5%, … 2 CPUs"). Besides, a number glued to a unit the results glue only to other
    numbers, or written with that unit spelt out: "2h 9m" or "2 hours" where they say "up
    4h 9m, 2 CPUs" (the 2 is the CPUs')."""
    results = list(results)
    labels = _labels(results)
    # A percentage is read against a name's percentages, where it has any: "2.0% CPU" is
    # not the CPU's where the results say "cpu 0.0%" ("cpu_count": 2 names it too).
    percentages = _labels(results, percent=True)
    counts = {name: v for name, v in _counts(results).items() if len(name) >= 4}
    counted = _counts(results, second=True)
    known = {v for r in results for n in numbers_in(r) if (v := _value(n)) is not None}
    units: dict[str, set[float]] = {}
    for result in results:
        for number, unit in _GLUED.findall(result):
            if (value := _value(number)) is not None:
                units.setdefault(unit.lower(), set()).add(value)
    written = [*_GLUED.findall(text),
               *((number, _TIME_UNITS[word.lower()]) for number, word in _SPELT_UNIT.findall(text))]
    # A number no result holds is invented, not misattributed ("the last 1, 5 and 15
    # minutes" of a load is neither).
    found = [number for number, unit in written
             if unit.lower() in units and (value := _value(number.lstrip("+"))) is not None
             and _near(value, known) and not _near(value, units[unit.lower()])]
    for match in _NUMBER.finditer(text):
        value = _value(match.group().lstrip("+"))
        if value is None or not _near(value, known):
            continue
        if not _PERCENT.match(text, match.end()):
            if _mislabelled(text, match, value, labels) or _miscounted(
                    text, match, value, counts, counted, labels):
                found.append(match.group().lstrip("+"))
            continue
        before = _NAME_BEFORE.search(text, max(0, match.start() - 40), match.start())
        after = _NAME_AFTER.match(text, match.end())
        names = [m[1].lower() for m in (before, after) if m and m[1].lower() in labels]
        if names and not any(_near(value, percentages.get(name) or labels[name])
                             for name in names):
            found.append(match.group().lstrip("+"))
    return list(dict.fromkeys(found))


_UP_TO_NEXT = re.compile(r"[^\d,;\n]{0,40}")  # the words after a number, to the next one


def _mislabelled(text: str, number: re.Match[str], value: float,
                 labels: dict[str, set[float]]) -> bool:
    """Whether ``number`` is the value of its line's label ("Load: 252.0 GiB") and none of
    the label's names that the results use gives it."""
    if value == 0:  # a 0 rounds from too many figures to tell ("Uptime: 0 days, 15 hours")
        return False
    line = _LINE_LABEL.search(text, max(0, number.start() - 60), number.start())
    names = [w.lower() for w in _LABEL.findall(line[1])
             if w.lower() in labels and w.lower() not in _NOT_NAMES] if line else []
    # The words after the number, up to the next one, may name it ("Paris: 12 km/h winds").
    words_after = _UP_TO_NEXT.match(text, number.end())
    assert words_after is not None  # `{0,40}` matches the empty string too
    after = _LABEL.findall(words_after[0])
    names_after = [name for word in after for name in labels
                   if word_forms(name) & word_forms(word.lower())]
    return bool(names) and not any(_near(value, labels[name]) for name in [*names,
                                                                           *names_after])


def _miscounted(text: str, number: re.Match[str], value: float,
                counts: dict[str, set[float]], counted: dict[str, set[float]],
                labels: dict[str, set[float]]) -> bool:
    """Whether ``number`` counts a word ("2.5 CPUs") the results write after other numbers
    only (``counts``; ``counted`` with the second words too, "10 sick days"), where the
    results give the number to another name: a figure ("memory 2.5%") or a count of
    another word ("40 degrees" for "175 degrees ... for 40 minutes")."""
    count = _COUNTED.match(text, number.end())
    if count and len(count[1]) == 3 and value.is_integer():
        return False  # "1 CPU is busy": a short word counts only where no count can be
    forms = word_forms(count[1].lower()) if count else set()
    held = [values for name, values in counts.items() if word_forms(name) & forms]
    if not held or any(_near(value, values) for name, values in counted.items()
                       if word_forms(name) & forms):
        return False
    return any(_near(value, values) for values in [*labels.values(), *counts.values()])


# A name right after a number, with only blanks between ("2 CPUs"), that has no number of
# its own after it; and a second one after that, which the number counts too ("10 sick
# days": days).
_NAMED_AFTER = re.compile(rf"({_NUMBER.pattern})[ \t]+([^\W\d_]{{3,}})\b"
                          r"(?:[ \t]+([^\W\d_]{3,})\b)?(?![ \t]*[:=]?[ \t]*[-+]?\d)")


def _figures(results: Iterable[str]) -> dict[str, set[float]]:
    """The numbers each name stands next to in the results: before them ("disk 23.1%",
    ``_labels``) or after them ("2 CPUs", ``_counts``)."""
    results = list(results)
    figures = _labels(results)
    for name, values in _counts(results).items():
        figures.setdefault(name, set()).update(values)
    return figures


def _counts(results: Iterable[str], second: bool = False) -> dict[str, set[float]]:
    """The numbers the results write before a name, as counts are ("2 CPUs"); with
    ``second``, before the word after that name too ("10 sick days": days). The second word
    only clears a count ("10 days of sick leave"): as a count of its own it misleads ("1.37
    million people" would make 461,000 people no count of people)."""
    counts: dict[str, set[float]] = {}
    for text in results:
        for match in _NAMED_AFTER.finditer(text):
            if (value := _value(match[1])) is None or match[2].lower() in _NOT_NAMES:
                continue
            for name in filter(None, (match[2], match[3] if second else None)):
                if name.lower() not in _NOT_NAMES:
                    counts.setdefault(name.lower(), set()).add(value)
    return counts


def _asked_figures(question: str, results: list[str]
                   ) -> tuple[set[float], dict[str, set[float]], list[str]]:
    """The numbers the question gives, the results' figures by name less those (a figure
    the question gives is an input, not what it asks for: "What is 7 cubed?" has the call's
    "7 cubed" name 7, not the 343 answered), and the names the question asks about: those
    of its words the results give figures, with "total" where it asks for a size."""
    given = {v for n in numbers_in(question) if (v := _value(n)) is not None}
    figures = {name: {v for v in values if not _near(v, given)}
               for name, values in _figures(results).items()}
    asked = [w for w in dict.fromkeys(_LABEL.findall(question.lower()))
             if figures.get(w) and w not in _NOT_NAMES]
    if (asked and "total" not in asked and _ASKS_SIZE.search(question)
            and not _ASKS_PART.search(question)
            and len(named := _named_by_most(figures, asked)) > 1
            and named & figures.get("total", set())):
        asked.append("total")  # of the asked names' figures, the size ("free" stays free)
    return given, figures, asked


# Questions that ask how much of a thing there is, its size: "How much RAM does this machine
# have?" (answered "2.5%", the memory's use, which the check passed as a memory figure) asks
# for the total, where the results name one.
_ASKS_SIZE = re.compile(r"(?i)\bhow\s+(?:much|many)\b[^.?!]*\b(?:have|has)\b"
                        r"|\bhow\s+(?:big|large)\b|\b(?:size|capacity)\b")
# Not a question about a part of it: "How much RAM has been used?", "How much disk space do
# I have left?", "How large is the memory usage?" (a review's cases).
_ASKS_PART = re.compile(r"(?i)\b(?:use[ds]?|usage|using|left|available|remaining|free|spare"
                        r"|busy|full|been)\b")


def missed_figure(text: str, question: str, results: Iterable[str]) -> str | None:
    """The name the question asks about, where the results give it figures and the answer
    states numbers, none of them that name's: "2.0%" for "How full is the disk?" where the
    results say "cpu 2.0%, memory 5.8%, disk 23.1%". SmolLM2 answered every usage question
    with the first percentage of the summary. For "how many", the name's figures are the
    counts written before it ("2 CPUs"), and an answer of percentages, or of figures that
    count nothing ("2.5" of "memory 2.5%"), misses every count of the results. A percentage
    gives only a figure the results write as one for an asked name ("2.0%" for "How busy is
    the CPU?" is not "cpu_count": 2). Of the named figures, the question asks for those the
    most of its names name (``_named_by_most``). A dotted run no result holds ("2.0.52") is a
    figure, and none of theirs. An answer without numbers, a question naming no figure of
    the results, or one number of the asked figures (rounded too) passes; the names asked
    are returned."""
    results = list(results)
    given, figures, asked = _asked_figures(question, results)
    cleaned = _CITATION_IDS.sub(" ", text)
    outside = _DOTTED.sub(" ", cleaned)
    # Each number stated, and whether it is written as a percentage.
    stated = [(v, bool(_PERCENT.match(outside, m.end()))) for m in _NUMBER.finditer(outside)
              if (v := _value(m.group().lstrip("+"))) is not None]
    stated += [(math.nan, False)] * len(_unheld_runs(cleaned, results))  # near no figure
    counting = False
    if re.search(r"(?i)\bhow many\b", question):
        # A count is asked for: the number written before the name, singular or plural
        # ("How many CPU cores": "2 CPUs", not the "cpu 4.8%" SmolLM2 answered with); a
        # percentage is no count ("How many processors": "2.7%"), nor is another named
        # figure ("2.5").
        words = {f for w in _LABEL.findall(question.lower()) for f in word_forms(w)}
        counts = {n: v - given for n, v in _counts(results).items() if v - given}
        counted = {n: v for n, v in counts.items() if word_forms(n) & words}
        # An answer of figures that count nothing counts nothing: percentages, the
        # results' named figures no count shares ("2.5" for "memory 2.5%, ... 2 CPUs"), or
        # numbers no result holds ("2.5" for "How many processors", the CPU then at 0.0%).
        named = {v for values in _labels(results).values() for v in values}
        tallies = {v for values in counts.values() for v in values}
        known = {v for r in results for n in numbers_in(r) if (v := _value(n)) is not None}
        no_count = stated and all(
            is_percent or not _near(v, known) or (_near(v, named) and not _near(v, tallies))
            for v, is_percent in stated)
        if counted or (counts and no_count):
            figures, counting = counted or counts, True
            asked = list(figures)
    if ASKS_DURATION.search(question) and (timed := durations(results) - given):
        # A duration is asked for: the figures written with a unit of time ("uptime 15h 2m",
        # "for 40 minutes"), not "2.4%" nor the CPUs' "2 hours" SmolLM2 answered with.
        figures, asked = {"duration": timed}, ["duration"]
    if not asked or not stated:
        return None
    wanted = _named_by_most(figures, asked)
    # A percentage gives one of the asked figures the results write as percentages ("How
    # busy is the CPU?" is not answered "2.0%" by "cpu_count: 2"); a count is none.
    written = _labels(results, percent=True)
    percents = set() if counting else wanted & {v for n in asked for v in written.get(n, ())}
    # A question about a share ("How busy is the CPU?") asks for the percentage however the
    # answer writes it: "2" is the CPUs' count, not how busy they are.
    share = bool(percents) and _ASKS_SHARE.search(question) is not None
    if any(_near(v, percents if share or (is_percent and (percents or counting)) else wanted)
           for v, is_percent in stated):
        return None
    return " ".join(n for n in asked if wanted <= figures[n]) or asked[0]


def others_figure(text: str, question: str, results: Iterable[str]) -> str | None:
    """The answer's first number, where the question asks about names the results give
    figures and the results give this number to other names only, none standing next to
    it in the answer: "2.5% of 23.5 GiB, 78.2 GiB of 252.0 GiB" for "How full is the disk of
    this computer?", where 2.5 is the CPU's and the memory's percentage and the disk's is
    22.9 (SmolLM2 opened with the summary's first figures whatever was asked). A number the
    question writes is passed over; a number no result holds is ``invented_numbers``'
    concern, one with a name beside it ("2 CPUs", "cpu 2.5%") ``misattributed_numbers``'."""
    given, figures, asked = _asked_figures(question, list(results))
    if not asked:
        return None
    cleaned = _without_markers(_DOTTED.sub(" ", _CITATION_IDS.sub(" ", text)))
    first = next((m for m in _NUMBER.finditer(cleaned)
                  if (v := _value(m.group().lstrip("+"))) is not None and not _near(v, given)),
                 None)
    if first is None or (value := _value(first.group().lstrip("+"))) is None:
        return None
    # Another name's figure as written, to its last decimal: a whole number rounds too many
    # figures to tell ("1 minute" is not the load's 0.96, "2" not the 2.5%).
    decimals = len(first.group().partition(".")[2])
    others = {v for name, values in figures.items() if name not in asked for v in values}
    theirs = any(round(v, decimals) == value and (decimals or v == value) for v in others)
    before = _NAME_BEFORE.search(cleaned, max(0, first.start() - 40), first.start())
    after = _NAME_AFTER.match(cleaned, first.end()) or _COUNTED.match(cleaned, first.end())
    named = bool(before and before[1].lower() in figures) or bool(after and any(
        word_forms(after[1].lower()) & word_forms(name) for name in figures))
    if named or not theirs or any(_near(value, figures[n]) for n in asked):
        return None
    return first.group().lstrip("+")


# Questions that ask for a share of a whole; "How full is the disk?" is not among them (the
# free and total sizes answer it too).
_ASKS_SHARE = re.compile(r"(?i)\b(?:how busy|how loaded|utili[sz]ation|percent(?:age)?)\b|%")


# A question that asks for a duration.
ASKS_DURATION = re.compile(r"(?i)\bhow\s+long\b")


def durations(results: Iterable[str]) -> set[float]:
    """The numbers the results write with a unit of time, glued ("15h 2m") or spelt out
    ("40 minutes")."""
    out: set[float] = set()
    for text in results:
        written = [*((n, u) for n, u in _GLUED.findall(text) if u.lower() in _TIME_GLUED),
                   *_SPELT_UNIT.findall(text)]
        out |= {v for number, _ in written if (v := _value(number)) is not None}
    return out


def _named_by_most(figures: dict[str, set[float]], asked: list[str]) -> set[float]:
    """The figures of the ``asked`` names that the most of them name: "How much free
    memory" asks for "memory_free_gib: 23.0" (the preview's key names both), not "memory
    2.5%" nor the disk's free 78.8; "What percent of memory" for the one figure both words
    name. One name asks for any of its figures ("How much memory": the percentage used or
    the size)."""
    def count(value: float) -> int:
        return sum(value in figures[name] for name in asked)

    candidates = {v for name in asked for v in figures[name]}
    most = max(map(count, candidates))
    return {v for v in candidates if count(v) == most}


# Arithmetic the answer writes out: numbers, operators and brackets with at least one "="
# ("6912 + 5678 = 1234 + 5678 = 1234.5678"), as a run of those characters alone. It opens
# with a number, "(" or a sign glued to one (a list's "- " bullet is no sign); the bound
# keeps a long run from being tried at each of its characters.
_EQUATION = re.compile(r"(?<![\w.:])(?:[-+](?=[\d(])|[(\d])[\d.,%+\-*/×÷^() \t]{0,200}"
                       r"(?:=[\d.,%+\-*/×÷^() \t]{0,200})+")
# A side written as a number, maybe a percentage ("66.7%", ".67"): a rounded figure.
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+(?:,\d{3})*(?:\.(\d+))?|\.(\d+))(%?)")
# A time or a ratio ("7:45 + 15 = 8:00"), which the calculator would read as no number.
_CLOCK = re.compile(r"\d+(?::\d+)+")
# Years with a dash between them are a span ("2020 - 2025 = 5 years"), not a subtraction.
_YEARS = re.compile(r"\d{4}\s*[-–]\s*\d{4}")
# What before a run makes it the end of arithmetic it does not hold whole: an operator's
# word, a function's name, or a number ("15% of 80 = 12", "sqrt(16) = 4").
_OPERATOR_BEFORE = re.compile(
    r"(?i)(?:\b(?:of|on|times|plus|minus|by|x|over|divided|multiplied|power|squared|cubed|"
    r"root|sqrt|log|exp|sin|cos|round|abs|min|max|mod)|[\d%√]|[\w)][ \t]*[-+*/×÷^=])[ \t]*\Z")


# Arithmetic written in words ("45 minus 18 equals 21", "6 times 7 is 42"): one operator's
# word between two numbers, then the result. The calculator reads the words itself.
_NUMBER_WORD = r"-?\d+(?:,\d{3})*(?:\.\d+)?"
_EQUALS_WORD = re.compile(r"\s+(?:equals|is equal to|is|makes|gives)\s+", re.IGNORECASE)
_WORD_EQUATION = re.compile(
    rf"(?<![\w.,]){_NUMBER_WORD}\s+(?:plus|minus|times|multiplied by|divided by)\s+"
    rf"{_NUMBER_WORD}{_EQUALS_WORD.pattern}{_NUMBER_WORD}(?!\w|[.,]\d)"
    r"(?!\s*(?:to|-|–)\s*\d)",  # not a range ("8 to 12")
    re.IGNORECASE)


# What after a run makes it arithmetic of another kind ("1 + 1 = 10 in binary", "≡ 1 mod 3").
_OTHER_ARITHMETIC_AFTER = re.compile(
    r"(?i)[ \t]*(?:in[ \t]+(?:binary|octal|hex(?:adecimal)?|base[ \t]*\d+)|\(?mod\b)")


def false_equations(text: str) -> list[str]:
    """The equations of ``text`` whose sides differ: "1234 + 5678 = 1234.5678". A side
    written as a plain number may be rounded ("100 / 3 = 33.33", "2 / 3 = 66.7%"); a side
    that is not arithmetic on numbers alone is not read (a time, "7:45 + 15 = 8:00"; a span
    of years, "2020 - 2025"), nor an equation whose left side an operator's word, a
    function or a number opens ("15% of 80 = 12"). The built-in calculator evaluates each
    side (one exact reading of arithmetic for the project)."""
    # Imported here: the calculator is a tool, and the tools package imports the graph's
    # modules, which import this one.
    from callgate.tools.builtin.calculator import TooLarge, calculator

    text = _CLOCK.sub("time", text[:20_000])
    found = []
    for match in _EQUATION.finditer(text):
        if _OPERATOR_BEFORE.search(text, max(0, match.start() - 20), match.start()) or (
                _OTHER_ARITHMETIC_AFTER.match(text, match.end())):
            continue  # the run goes on arithmetic before it ("15% of 80 = 12"): no side
        sides = [side.strip().rstrip(".,") for side in match.group().split("=")]
        values: list[tuple[str, float | None]] = []
        for side in sides:
            try:
                result = (_magnitude(calculator(side))
                          if re.search(r"\d", side) and not _YEARS.search(side) else None)
            except TooLarge:
                result = math.inf  # "4356 = 66^4356": equal to no number written out
            except (ValueError, ArithmeticError, TypeError, RecursionError):
                result = None
            values.append((side, result))
        for (left, a), (right, b) in zip(values, values[1:], strict=False):
            if a is None or b is None or _same(a, b, left, right):
                continue
            found.append(f"{left} = {right}")
    for match in _WORD_EQUATION.finditer(text):
        if _OPERATOR_BEFORE.search(text, max(0, match.start() - 20), match.start()):
            continue  # the end of a longer chain ("2 plus 3 times 4 is 14")
        left, right = _EQUALS_WORD.split(match.group(), maxsplit=1)
        try:
            a, b = _magnitude(calculator(left)), _magnitude(calculator(right))
        except (ValueError, ArithmeticError, TypeError, TooLarge):
            continue
        if not _same(a, b, left, right):
            found.append(match.group())
    return found


def _magnitude(value: float | str) -> float:
    """``value`` as a float; an integer past a float's range as an infinity of its sign. A
    string (the calculator's unit conversion, "8.04672 kilometers") that is no number raises
    ``ValueError``, as ``float`` does."""
    try:
        return float(value)
    except OverflowError:
        assert not isinstance(value, str)  # ``float`` of a string never overflows (inf)
        return math.inf if value > 0 else -math.inf


def _same(a: float, b: float, left: str, right: str) -> bool:
    """Whether two sides agree, a side written as a plain number read as rounded to its
    decimals; two sides past a float's range are not told apart."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    tolerance = 1e-9 * max(1.0, abs(a), abs(b))
    for side in (left, right):
        if plain := _PLAIN_NUMBER.fullmatch(side):
            rounding = 0.5 * 10 ** -len(plain[1] or plain[2] or "")
            tolerance = max(tolerance, rounding / 100 if plain[3] else rounding)
    return abs(a - b) <= tolerance + 1e-12


def result_number(output: str) -> str | None:
    """The number a result is, alone or with its unit ("8.04672 kilometers", a calculator's
    conversion): "8.04672"; None for any other result."""
    match = _UNIT_RESULT.fullmatch(output.strip())
    return match[1] if match and _NUMBER.fullmatch(match[1]) else None


# A number, and maybe a unit after it: words, "/" and "°", no digits.
_UNIT_RESULT = re.compile(r"(\S+)(?:[ \t]+[^\W\d_][^\d\n]{0,40})?")


def wrong_units(text: str, outputs: Iterable[str], user: Iterable[str]) -> list[str]:
    """The results that are a number with its unit ("6.21371192237334 miles", a calculator's
    conversion) which the answer states, as written or rounded, with another unit the user
    wrote: SmolLM2 answered "What is 10 km in miles and 5 kg in pounds?" with
    "6.21371192237334 pounds" after "10 km in miles" had run. A number the user wrote is
    theirs ("1 km is 0.62 miles"), and a unit is any word of the result's ("86 degrees
    Fahrenheit" for "86 Fahrenheit", "33.81 ounces" for fluid ounces). Given as the answer
    writes them ("6.21371192237334 pounds")."""
    user = list(user)
    asked = {f for u in user for w in _WORD.findall(u.lower()) for f in word_forms(w)}
    theirs = {v for u in user for n in numbers_in(in_digits(u)) if (v := _value(n)) is not None}
    found = []
    for output in outputs:
        number = result_number(output)
        if not number:
            continue
        value = _value(number)
        if value is None:
            continue
        units = {f for w in _WORD.findall(output.strip()[len(number):].lower())
                 for f in word_forms(w)}
        for match in _NUMBER.finditer(text):
            said = _UNIT_WORDS.match(text, match.end())
            v = _value(match[0])
            if not (said and units and v is not None and v not in theirs and _rounds_to(
                    value, v)):
                continue
            words = [w.lower() for w in said.groups() if w]
            if (words[0] not in STOP_WORDS and word_forms(words[0]) & asked
                    and not any(word_forms(w) & units for w in words)):
                found.append(f"{match[0]} {said[1]}")
    return list(dict.fromkeys(found))


# The two words after a number, where a unit stands ("86 degrees Fahrenheit").
_UNIT_WORDS = re.compile(r"[ \t]+([^\W\d_]+)(?:[ \t]+([^\W\d_]+))?")


def _rounds_to(value: float, stated: float) -> bool:
    """Whether ``stated`` is ``value`` or ``value`` rounded to a decimal place or more (not to
    a whole number: 0.62 miles is no "1")."""
    return any(abs(round(value, digits) - stated) <= 1e-9 * max(1.0, abs(value))
               for digits in (15, 9, 3, 2, 1))


def left_out(text: str, outputs: Iterable[str]) -> list[str]:
    """The results that are one number each (maybe with a unit) which the answer does not
    state, where the turn has two such results or more, of different values: SmolLM2
    answered "What is 7 + 8, and what is 9 * 9?" with "15" after both calculator calls had
    run. A number the answer rounds counts as stated; one result alone is the answer's to
    word as it likes."""
    figures: dict[float, str] = {}
    for output in outputs:
        if (number := result_number(output)) and (value := _value(number.lstrip("+"))
                                                  ) is not None:
            figures.setdefault(value, number)
    if len(figures) < 2:
        return []
    cleaned = _DOTTED.sub(" ", _CITATION_IDS.sub(" ", text))
    stated = [v for m in _NUMBER.finditer(cleaned) if (v := _value(m.group().lstrip("+")))
              is not None]
    return [number for value, number in figures.items()
            if not any(_near(v, [value]) for v in stated)]


def copies_summary(text: str, results: Iterable[str]) -> bool:
    """Whether the answer starts (after citation ids) with the ``[tool]`` tag a result's
    summary starts with: the model is copying the loop's summary line, and its copy drifts
    (SmolLM2 went on from "cpu 100.0%, memory 6.5%" to "RAM 2.56%" for a load of 2.56).
    Further in, a summary's opening — its tag and the ten characters after it — is a copy
    too ("461,000 [R1] [web_search] results: Python …"); a tag named in a sentence is not
    ("According to the [web_search] results, Paris has …")."""
    results = list(results)
    tag = _LEADING_TAG.match(text)
    if tag and any(r.lstrip().startswith(tag[1]) for r in results):
        return True
    # A line labelled with a result's tool name, as the summary is ("System_Stats: 2").
    tools = {_tool_key(tag[1][1:-1]) for r in results if (tag := _LEADING_TAG.match(r))}
    if any(_tool_key(label[1]) in tools for label in _TOOL_LABEL.finditer(text)):
        return True
    lowered = text.lower()
    return any(r.lstrip()[:len(tag[1]) + 10].lower() in lowered
               for r in results if (tag := _LEADING_TAG.match(r)))


_TOOL_LABEL = re.compile(r"(?m)^[ \t]*(?:[-*•][ \t]*)?([\w.-]+(?:[ \t]+[\w.-]+)?)[ \t]*:")


def _tool_key(name: str) -> str:
    """A tool's name as a model may write it: "System_Stats", "system stats"."""
    return re.sub(r"[\s_.-]+", "_", name.strip().lower())


def check_answer(text: str, *, results: Iterable[str], user: Iterable[str],
                 earlier: Iterable[str] = (), outputs: Iterable[str] = (),
                 question: str | None = None,
                 synonyms: Mapping[str, str] | None = None) -> AnswerCheck:
    """Apply every check; ``results`` are this turn's ok result summaries and previews,
    ``user`` what the user wrote (the last is the question), ``question`` that question
    in the tools' own words where they differ ("memory" for "RAM": the figure asked about is
    read from it; ``relevance.in_tool_words``), ``synonyms`` the tools' words for the names
    an answer may use ("RAM" for memory: "2.5% RAM" is read as the memory's figure),
    ``earlier`` the results of the
    thread's earlier turns: a number they hold is not invented ("144", the answer to "And
    divide that by 4?" after "What is 12 * 12?" — wrong, but the conversation's), though
    only this turn's results can stand in for the answer; ``outputs`` this turn's ok
    results as they came back, one text each (``left_out``)."""
    results, user, earlier, outputs = list(results), list(user), list(earlier), list(outputs)
    if question is None:
        question = user[-1] if user else ""
    check = AnswerCheck(text)
    before = check.text
    check.text, cut = cut_repetition(check.text, most=1)
    if cut:
        check.notes.append("repetition cut")
        if not re.search(r"[^\W\d_]", check.text):  # a looped number, no word left
            check.text = ""
    elif check.text != _tidy(before):  # no loop, but the start of one, where decoding stopped
        check.notes.append("unfinished sentence removed")
    check.text, echoed = drop_echoes(check.text)
    if echoed:
        check.notes.append("echoed instructions removed")
    check.text, repeated = drop_question(check.text, user[-1] if user else "")
    if repeated:
        check.notes.append("the question said again removed")
    check.text, labelled = drop_answer_labels(check.text)
    if labelled:
        check.notes.append("answer label removed")
    check.text, sourced = drop_source_lines(check.text)
    if sourced:
        check.notes.append("model-written sources line removed")
    # Before the tool talk goes: a copied summary line can be such talk ("[web_search]
    # results:").
    check.copied_summary = copies_summary(check.text, results)
    check.text, tool_talk = drop_tool_talk(check.text, results)
    if tool_talk:
        check.notes.append("sentences about a tool's record removed")
    check.text, unfinished = drop_unfinished(check.text)
    if unfinished and "unfinished sentence removed" not in check.notes:
        check.notes.append("unfinished sentence removed")
    check.text, empty = drop_empty_items(check.text)
    if empty:
        check.notes.append("empty list items removed")
    # The user's numbers as words too: "three cats and two dogs" gives 3 and 2.
    spelled = [digits for u in user if (digits := in_digits(u)) != u]
    check.invented_numbers = invented_numbers(check.text, [*results, *user, *spelled, *earlier])
    if check.invented_numbers:
        check.notes.append("numbers in no result or question: "
                           + ", ".join(check.invented_numbers))
    check.misattributed_numbers = misattributed_numbers(
        in_tool_words(check.text, synonyms or {}), results)
    if check.misattributed_numbers:
        check.notes.append("numbers given to a name the results give another: "
                           + ", ".join(check.misattributed_numbers))
    check.missed_figure = missed_figure(check.text, question, results)
    if check.missed_figure:
        check.notes.append(f"the answer gives no {check.missed_figure} figure of the results")
    check.false_equations = false_equations(check.text)
    if check.false_equations:
        check.notes.append("arithmetic that does not hold: " + "; ".join(check.false_equations))
    check.others_figure = others_figure(check.text, question, results)
    if check.others_figure:
        check.notes.append(f"the answer opens with {check.others_figure}, a figure of "
                           "something the question does not ask about")
    check.wrong_units = wrong_units(check.text, outputs, user)
    if check.wrong_units:
        check.notes.append("results given another unit: " + ", ".join(check.wrong_units))
    check.left_out = left_out(check.text, outputs)
    if check.left_out:
        check.notes.append("results the answer leaves out: " + ", ".join(check.left_out))
    if check.copied_summary:
        check.notes.append("the answer copied a result's summary line")
    return check


def gives_way(check: AnswerCheck, has_results: bool) -> bool:
    """Whether the results' summaries should replace the model's answer: it was left
    empty, it copies a summary line (the summaries themselves say it without drift), it
    gives a result's figure to the wrong name or none of the figure asked about, or opens
    with another name's, writes out arithmetic that does not hold, leaves out a result that
    is one number or gives it another unit, or states numbers no result holds — several of
    them (one or two are only flagged, since a model may compute a figure: 2**10 = 1024 from
    the question)."""
    if not has_results:
        return False
    return (check.degenerate or check.copied_summary or bool(check.misattributed_numbers)
            or bool(check.false_equations) or bool(check.left_out) or bool(check.wrong_units)
            or check.others_figure is not None
            or check.missed_figure is not None or len(check.invented_numbers) >= INVENTED_LIMIT)
