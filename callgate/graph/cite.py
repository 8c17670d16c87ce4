"""The ``cite`` node: the final answer, with checked citations and a ``Sources:`` line.

Only results of this turn that completed ``ok`` can be cited: a bracketed id the model
cites that is not one of them is dropped (the sentence around it stays); a parenthesised
``(R2)`` that is not one of them is left alone, as ordinary prose. When the model cites
nothing, this turn's ok results are listed as the sources. The text is sanitized: no
tool-call markup reaches the user. ``problems`` lists every call of this turn that did
not complete ``ok``, so a caller can tell a clean answer from one given without a tool.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from callgate.answer_checks import (
    AnswerCheck,
    check_answer,
    copies_summary,
    gives_way,
    numbers_in,
    result_number,
)
from callgate.graph.cancellation import end_run, is_cancelled
from callgate.graph.context import Context, limits_of
from callgate.graph.finalize import cancelled_text, for_user, last_refusals
from callgate.graph.results import thread_of
from callgate.graph.settings import LoopSettings
from callgate.graph.state import AgentState, Citation, Problem, ToolEvent
from callgate.graph.summarize import given_up
from callgate.sanitize import sanitize
from callgate.tools.grounding import user_texts
from callgate.tools.relevance import as_arithmetic, in_tool_words
from callgate.tools.summaries import asked_fields

_CITATION = re.compile(
    r"\s?(?P<open>[\[【(])\s*(?P<ids>R\d+(?:\s*[,;/&]\s*(?:and\s+)?R\d+)*)\s*[\]】)]")
_ID = re.compile(r"R\d+")
NO_ANSWER = "I have no answer to give."
RAN = ("ok", "error", "timeout")
# An answer that says itself that something failed ("It timed out.", "I could not reach
# the search service") disguises nothing.
_ADMITS = re.compile(r"(?i)\b(?:fail|error|timed?[ -]?out|could ?n[o']t|can ?n[o']t|cannot|"
                     r"unable|unavailable|not available|did ?n[o']t work|"
                     r"den(?:y|ied)|reject|not (?:been )?approved|without (?:your )?approval)")
# An answer after denied calls that says it did not do what was asked ("I did not commit
# anything.", "I left c.txt alone.") claims nothing the call would have done.
_DECLINES = re.compile(r"(?i)\b(?:did ?n[o']t|do ?n[o']t|ha(?:ve|s) ?n[o']t|won[o']?t|"
                       r"will not|not (?:done|made|run|changed|deleted|sent|committed)|"
                       r"left\b.{0,80}\b(?:alone|untouched|as it (?:is|was))|skipp)")
ERROR_CHARS = 160  # of a failed call's error in the answer that says the call failed


def cite_text(text: str, known: dict[str, str]) -> tuple[str, list[str]]:
    """Keep citations of ``known`` ids (mapped to the id they stand for), drop bracketed
    citations of other ids; return the text and the ids it cites, in order."""
    cited: list[str] = []

    def keep(match: re.Match[str]) -> str:
        ids = list(dict.fromkeys(known[i] for i in _ID.findall(match["ids"]) if i in known))
        if not ids and match["open"] == "(":
            return match.group(0)  # "(R2)" naming no result of ours is prose, not a citation
        cited.extend(i for i in ids if i not in cited)
        lead = match.group(0)[0] if match.group(0)[0].isspace() else ""
        return f"{lead}[{', '.join(ids)}]" if ids else ""

    text = _CITATION.sub(keep, text)
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", text).strip(), cited


def make_cite(settings: LoopSettings):
    tool_names = settings.registry.names

    def cite(state: AgentState, runtime: Runtime[Context],
             config: RunnableConfig) -> dict[str, Any]:
        # The calls a correction sent back that the reply gave up: the turn's record too.
        gave_up = given_up(state, runtime.store, thread_of(config),
                           limits_of(runtime, settings.defaults).summary_char_limit)
        events = [*(state.get("tool_events") or []), *gave_up]
        turn = events[state.get("turn_start", 0):]
        usable = {e["id"]: e for e in turn if e["outcome"] == "ok"}
        alias = {e["id"]: e["id"] for e in usable.values()}
        alias.update({e["id"]: repeat_of for e in turn
                      if e["outcome"] == "repeat" and (repeat_of := e.get("repeat_of")) in usable})
        status = state.get("status")
        draft, source = state.get("draft_answer") or "", state.get("answer_source") or "model"
        if status in (None, "running") and is_cancelled(config, runtime.store):
            status, draft, source = "cancelled", cancelled_text(state), "loop"
        asked = user_texts(state.get("messages") or [])
        # The question in the words the results name figures with ("memory" for "RAM"), its
        # arithmetic as the loop read it ("two plus two": "2 plus 2", the call's numbers).
        synonyms = {word: name for e in usable.values()
                    if (tool := settings.registry.get(e["tool"]))
                    for word, name in tool.synonyms.items()}
        question = in_tool_words(as_arithmetic(asked[-1]) if asked else "", synonyms)
        if source == "model":
            check = check_answer(sanitize(draft, tool_names=tool_names),
                                 results=[t for e in usable.values()
                                          for t in (e["summary"], e["preview"],
                                                    json.dumps(e["args"], default=str))],
                                 user=asked,
                                 earlier=[t for e in events[:state.get("turn_start", 0)]
                                          if e["outcome"] == "ok"
                                          for t in (e["summary"], e["preview"])],
                                 outputs=_answers_of(turn), question=question,
                                 synonyms=synonyms)
        else:  # the loop's own words (a failure, a cancellation): nothing to check
            check = AnswerCheck(draft)
        text, cited = cite_text(check.text, alias)
        if not re.search(r"\w", _CITATION.sub("", text)):  # nothing but citations
            text = ""
        if source == "model" and not usable and text and copies_summary(
                text, [e["summary"] for e in turn if e["outcome"] != "ok"]):
            # The model retells a failed call's summary line, and its copy drifts ("Falcon
            # X10" for X9): the loop says what failed instead.
            text = ""
            check.notes.append("the answer copied a failed call's summary line")
        refused = last_refusals(state.get("messages") or []) if source == "model" else []
        problems = problems_of(turn)
        failed = [p for p in problems if p["outcome"] in ("error", "timeout")]
        # What the failed calls were given, as the refusals quote refused values.
        failed_values = [json.dumps(e["args"], ensure_ascii=False, default=str) for e in turn
                         if e["outcome"] in ("error", "timeout")] if source == "model" else []
        restated = None if usable else next(
            (call for call, values in (("a refused call", refused),
                                       ("a failed call", failed_values))
             if values and _restates_refused(text, check.invented_numbers, values)), None)
        told = None if usable or restated or not text else _told_refused_value(text, refused)
        if restated:
            # Answering the refusal of a call with invented values, SmolLM2 gives the refused
            # value as the answer ("1.00000000000000001" for a calculator call), or a failed
            # call's ("10.0000000000000001, 5.00000000000000001, …" for "10 km in miles and 5
            # kg in pounds"): what was refused or failed is what the user needs to read. A
            # figure the model worked out itself ("The area is 25.") stays, flagged, as
            # elsewhere (``gives_way``).
            check.notes.append(f"an answer with invented numbers after {restated} removed"
                               if check.invented_numbers else
                               f"an answer restating {restated}'s value removed")
            text = ""
        wrong_sums = (_sums_asked(check.false_equations, asked[-1:])
                      if source == "model" and not usable and text else [])
        if wrong_sums:
            # No result stands behind the answer and its own arithmetic on the user's numbers
            # does not hold ("17 * 23 = 341" with no calculator call): never handed on as a
            # figure. Other equations it writes stay flagged only (the check reads a step of
            # algebra or another base as arithmetic too).
            text = ""
            check.notes.append("an answer whose arithmetic does not hold, with no result, "
                               "removed")
        if told and text:
            # The model answers after its call was refused, stating the value the refusal
            # names as invented (the Wi-Fi password "Ghosting" for "the network guest"). It
            # may know it (a call refused for "Shakespeare", then "Hamlet was written by
            # William Shakespeare."), so the answer stays, saying first that no tool gave it.
            refused_tool, value = told
            text = (f"(Not from a tool: the call to {refused_tool} was refused, its value "
                    f"{value!r} appearing nowhere in the conversation, so this is the model's own "
                    f"answer.)\n\n{text}")
            check.notes.append(f"the answer states a refused call's value: {value!r}")
        # A denied call did not run either: "I deleted a.txt." after the user (or the run's
        # policy) refused delete_file had read as done.
        unsupported = [p for p in problems if p["outcome"] in ("error", "timeout", "denied")]
        declined = all(p["outcome"] == "denied" for p in unsupported) and _DECLINES.search(
            text)
        if (source == "model" and not usable and text and unsupported
                and not _ADMITS.search(text) and not declined):
            # Every call that ran failed, and the model answered as if it had not ("The
            # weather in Paris is indeed quite beautiful." after web_search could not reach
            # the web): the answer says first that no tool result stands behind it.
            text = f"{_failed_note(unsupported[0])}\n\n{text}"
            check.notes.append("no call succeeded: the answer is the model's own")
        if usable and (not text or gives_way(check, True)):
            # The model's answer failed its checks: what the tools returned is the answer.
            text, cited, source = _from_results(list(usable.values()), question), [], "results"
        explicit = bool(cited)
        if not cited:
            cited = list(usable)
        citations = [Citation(id=rid, tool=usable[rid]["tool"], explicit=explicit,
                              sources=usable[rid]["sources"]) for rid in cited]
        final = text or (_wrong_sums_answer(wrong_sums) if wrong_sums
                         else _no_answer(problems, refused))
        if not text and (refused or failed or wrong_sums):
            source = "loop"  # what was refused, failed or wrong, in the loop's words
        if final == NO_ANSWER and status in (None, "running"):
            # The model wrote nothing to answer with (an empty reply, a call in chat mode or
            # with no tools, markup alone): a model that failed to write the answer, as the
            # ReAct path's correction of an empty answer ends, not a clean "done".
            status, source = "failed", "loop"
        if citations:
            final += "\n\nSources: " + "; ".join(_source_line(c) for c in citations)
        end_run(config, runtime.store)
        return {
            **({"tool_events": gave_up, "sent_back": []} if gave_up else {}),
            "final_answer": final,
            "citations": citations,
            "problems": problems,
            "answer_source": source,
            "answer_checks": check.notes,
            "tools_used": list(dict.fromkeys(e["tool"] for e in turn if e["outcome"] in RAN)),
            "status": "done" if status in (None, "running") else status,
            "messages": [AIMessage(final, name="callgate")],
            "draft_answer": None,
        }

    return cite


def _restates_refused(text: str, invented: list[str], refused: list[str]) -> bool:
    """Whether an answer's invented numbers are a refused call's values, or all it says;
    or whether the whole answer is a refused call's value as the refusal quotes it ("3.00g
    into acres.", a refused expression, with the request's own 3)."""
    whole = text.strip().rstrip(".!").strip()
    if len(whole) >= 3 and any(f"'{whole}'" in r or f'"{whole}"' in r for r in refused):
        return True
    if not invented:
        return False
    refusals = " ".join(refused)
    words = re.sub(r"[\d.,%+-]+", " ", text)
    return any(re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", refusals) for n in invented) or (
        not re.search(r"[^\W\d_]", words))


# A string value as a grounding refusal quotes it (`network='Ghosting'`; its ``repr``, cut
# to 37 characters and "..." where longer, the closing quote then gone).
_QUOTED_VALUE = re.compile(
    r"""=(['"])((?:(?!\1)[^\\]|\\.)*?)(?:\1|\.\.\.(?=, \w[\w.]*=|\)))""")


# The refused tool's name, as a grounding refusal opens.
_REFUSED_TOOL = re.compile(r"'([^']+)' was called with values")


def _told_refused_value(text: str, refused: list[str]) -> tuple[str, str] | None:
    """(tool, value) where the answer states a string a grounding refusal quotes, a value
    that appears nowhere in the conversation; None otherwise."""
    for refusal in refused:
        tool = _REFUSED_TOOL.match(refusal)
        for m in _QUOTED_VALUE.finditer(refusal):
            value, cut = m.group(2).strip(), m.group(0)[-1] != m.group(1)
            end = "" if cut else r"(?!\w)"  # a value cut short is a prefix
            if len(value) >= 3 and re.search(r"[^\W\d_]", value) and re.search(
                    rf"(?<!\w){re.escape(value)}{end}", text, re.IGNORECASE):
                return (tool.group(1) if tool else "a tool"), value
    return None


def _answers_of(turn: list[ToolEvent]) -> list[str]:
    """The ok results of the turn, as they came back, that no later call of it took as an
    argument: the 36 of "0.15 * 240" that the next call's "36 + 10" took is a step, not an
    answer the user must be given (``left_out``)."""
    out = []
    for index, event in enumerate(turn):
        result = event["preview"].strip()
        step = result_number(result) or result  # "8.04672" of "8.04672 kilometers"
        later = " ".join(json.dumps(e["args"], default=str) for e in turn[index + 1:])
        if event["outcome"] == "ok" and not (step and re.search(
                rf"(?<![\w.]){re.escape(step)}(?!\w|\.\d)", later)):
            out.append(result)
    return out


def problems_of(events: list[ToolEvent]) -> list[Problem]:
    """The calls that did not complete ``ok``."""
    return [Problem(id=e["id"], tool=e["tool"], outcome=e["outcome"], error=e["error"])
            for e in events if e["outcome"] != "ok"]


def _failed_note(problem: Problem) -> str:
    """The line that heads an answer no result supports: which call failed, and how (the
    error itself is in ``problems`` and the tool event)."""
    how = {"timeout": "timed out", "denied": "was not approved"}.get(problem["outcome"],
                                                                     "failed")
    return (f"(Not from a tool: the call to {problem['tool']} {how}, so this is the model's "
            "own answer.)")


def _sums_asked(equations: list[str], asked: list[str]) -> list[str]:
    """The equations whose operands (every number but the last, the result) are all
    numbers of the user's request."""
    given = {n for text in asked for n in numbers_in(text)}
    return [e for e in equations if (operands := numbers_in(e)[:-1]) and set(operands) <= given]


def _wrong_sums_answer(wrong: list[str]) -> str:
    return (f"I could not answer: the model's arithmetic does not hold ({_brief(wrong[0])}), "
            "and no tool computed it.")


def _no_answer(problems: list[Problem], refused: list[str]) -> str:
    # A refusal in the user's words where only refusals stand (a call given up after its
    # correction is a problem too, its error written for the model).
    if refused and all(p["outcome"] in ("invalid", "ungrounded", "skipped") for p in problems):
        return f"I could not answer: {_brief(for_user(refused[-1]))}."
    if not problems:
        return NO_ANSWER
    first = problems[0]
    return (f"I could not answer: the call to {first['tool']} did not complete "
            f"({first['outcome']}: {_brief(first['error'])}).")


def _brief(error: str | None, limit: int = ERROR_CHARS) -> str:
    """An error's first line, cut at ``limit`` characters: a library's exception can run
    to hundreds (a DNS failure's whole query record); the tool event keeps all of it. A
    first line that only heads the reason ("ValidationError: 1 validation error for
    get_weather", "… failed:") is followed by the lines after it, run together."""
    lines = [" ".join(line.split()) for line in (error or "").strip().splitlines()]
    lines = [line for line in lines if line]
    line = lines[0] if lines else ""
    if len(lines) > 1 and _HEADER.search(line):
        reasons = [_PYDANTIC_DETAIL.sub("", rest) for rest in lines[1:]
                   if not rest.startswith("For further information")]
        line = " ".join([line.rstrip(":") + ":", *reasons])
    return line if len(line) <= limit else line[:limit].rstrip() + " …"


# A first line that names a failure without its reason: a colon at its end, or pydantic's
# "N validation error(s) for MODEL", whose fields and reasons come on the lines after it.
_HEADER = re.compile(r":$|\bvalidation errors? for \S+$")
# pydantic's detail after each reason ("[type=missing, input_value={...}, input_type=dict]"),
# which would spend the sentence's characters before the next field's reason.
_PYDANTIC_DETAIL = re.compile(r"\s*\[type=[^\]]*\]")


def _from_results(found: list[ToolEvent], question: str) -> str:
    """When the model gave no answer text, what the tools found is the answer: of a
    record's summary, the fields the question asks about (``asked_fields``)."""
    if not found:
        return ""
    return "Here is what the tools returned: " + "; ".join(
        f"{asked_fields(e['summary'], question)} [{e['id']}]" for e in found)


def _source_line(citation: Citation) -> str:
    head = f"[{citation['id']}] {citation['tool']}"
    labels = [f"{s['title']} <{s['url']}>" if s["url"] and s["title"] else s["title"] or s["url"]
              for s in citation["sources"]]
    return head + (" — " + ", ".join(labels) if labels else "")


