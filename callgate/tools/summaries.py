"""Short, bounded summaries of tool results: what the model sees as the observation, and
of a record's summary the fields a question asks about (the results' answer, ``cite``)."""

from __future__ import annotations

import json
import re
from typing import Any

from callgate.answer_checks import ASKS_DURATION, durations
from callgate.tools.grounding import word_forms
from callgate.tools.relevance import STOP_WORDS

ITEM_CHARS = 200
FIELD_SEPARATOR = "; "  # between a dict's fields in its summary
TOP_ITEMS = 3
_LIST_KEYS = ("results", "items", "data", "documents", "chunks", "hits")
_TITLE_KEYS = ("title", "name", "source", "document")
_TEXT_KEYS = ("snippet", "text", "content", "summary", "description", "body")


def clip(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut with an ellipsis."""
    text = str(text)
    # Only the head can show: normalising the whitespace of a 10 MB result would copy it twice.
    head = " ".join(text[: max(4 * limit, 1024)].split())
    if len(head) <= limit and len(text) <= max(4 * limit, 1024):
        return head
    return head[: max(0, limit - 1)].rstrip() + "…"


def render_item(item: Any, limit: int = ITEM_CHARS) -> str:
    """One result item as a line: title and text for records, compact JSON otherwise."""
    if isinstance(item, dict):
        title = next((str(item[k]) for k in _TITLE_KEYS if item.get(k)), "")
        text = next((str(item[k]) for k in _TEXT_KEYS if item.get(k)), "")
        if title or text:
            return clip(f"{title}: {text}" if title and text else title or text, limit)
        return clip(", ".join(f"{k}={_compact(v)}" for k, v in item.items()), limit)
    return clip(_compact(item), limit)


def default_summary(tool: str, data: Any) -> str:
    """Generic summary: the top items of a list, the fields of a record, or the text."""
    if isinstance(data, dict):
        inner = next((data[k] for k in _LIST_KEYS if isinstance(data.get(k), list)), None)
        if inner is not None:
            data = inner
    if isinstance(data, list | tuple):
        if not data:
            return f"[{tool}] no results"
        shown = " | ".join(render_item(x) for x in data[:TOP_ITEMS])
        more = f" (+{len(data) - TOP_ITEMS} more)" if len(data) > TOP_ITEMS else ""
        return f"[{tool}] results: {shown}{more}"
    if isinstance(data, dict):
        fields = list(data.items())
        shown = FIELD_SEPARATOR.join(f"{k}: {render_item(v)}" for k, v in fields[:8])
        return f"[{tool}] {shown}"
    if data is None or data == "":
        return f"[{tool}] done (no output)"
    return f"[{tool}] {clip(str(data), 4 * ITEM_CHARS)}"


def failure_summary(tool: str, error: str) -> str:
    return f"[{tool}] failed: {clip(error, ITEM_CHARS)}"


def bounded(summary: str, limit: int) -> str:
    """Enforce the overall limit on a (possibly custom) summary."""
    return summary if len(summary) <= limit else summary[: max(0, limit - 1)].rstrip() + "…"


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


PREVIEW_CHARS = 200


def preview(data: Any, limit: int = PREVIEW_CHARS) -> str:
    """A one-line glimpse of a result (the checkpoint keeps this, not the result)."""
    return clip(_compact(data), limit)


def result_summary(summarizer: Any, tool: str, data: Any, limit: int) -> str:
    """The tool's own summary of ``data`` (else the generic one), within ``limit``."""
    if summarizer is None:
        return bounded(default_summary(tool, data), limit)
    try:
        text = summarizer(tool, data)
    except Exception as exc:  # a broken summarizer must not lose the result
        text = default_summary(tool, data) + f" (summarizer failed: {exc})"
    return bounded(str(text), limit)


# A source's URL is a link the user can follow: a longer one, or a data: URI, is the data
# itself, which would go whole into the answer's Sources line and every checkpoint.
URL_CHARS = 2048


def sources_in(data: Any) -> list[dict[str, str]]:
    """URLs and titles a result carries (top-level record or its first items)."""
    if isinstance(data, dict):
        inner = next((data[k] for k in ("results", "items", "chunks", "documents")
                      if isinstance(data.get(k), list)), None)
        data = inner if inner is not None else [data]
    found: list[dict[str, str]] = []
    for item in data[:3] if isinstance(data, list) else []:
        if not isinstance(item, dict):
            continue
        url = next((str(item[k]) for k in ("url", "link", "href") if item.get(k)), "")
        if url[:5].lower() == "data:" or len(url) > URL_CHARS:
            url = ""  # the data itself (an image as base64), not a link to it
        title = next((str(item[k]) for k in ("title", "source", "document", "path")
                      if item.get(k)), "")
        if url or title:
            found.append({"url": url, "title": clip(title, 80)})
    return found


# -- the fields a question asks about ------------------------------------------------------

_TAG = re.compile(r"\[[\w.:-]+\][ \t]*")  # a summary's "[system_stats] "
RECORD_FIELDS = 3  # fields from which a summary is a record to choose from
FIELD_CHARS = 80
# Between two fields of a dict's summary (``default_summary``): the separator before the
# next "key: ".
_KEYED_FIELD = re.compile(rf"{FIELD_SEPARATOR}(?=[\w.-]+: )")


def _words(text: str) -> set[str]:
    """The words of ``text``, lower-cased, stop words aside ("cpu_percent": cpu, percent)."""
    return {w for w in re.findall(r"[^\W\d_]{2,}", text.lower()) if w not in STOP_WORDS}


def _record_fields(body: str) -> tuple[list[str], str]:
    """The fields of a record's summary (after its tag) and what separates them, or no fields
    where it is no record: ``default_summary`` of a dict (``key: value; key: value``) or a
    tool's own line of figures, ``, `` apart (system_stats': "cpu 0.0%, memory 2.5%, …");
    three fields or more, short, each with a figure or a key. A list of results ("results: a
    | b"), prose, or a value that holds commas ("forecast: Mon 18C, Tue 20C") is none."""
    if " | " in body or body.startswith("results:"):
        return [], ""
    fields, separator = _KEYED_FIELD.split(body), FIELD_SEPARATOR
    if len(fields) == 1:
        fields, separator = body.split(", "), ", "
        if len({": " in field for field in fields}) > 1:  # some keyed, some not: one value's
            return [], ""
    if len(fields) < RECORD_FIELDS or not all(
            len(field) <= FIELD_CHARS and re.search(r"\d|\w: ", field) for field in fields):
        return [], ""
    return fields, separator


def _field_name(field: str) -> str:
    """What names a record's field: the key of ``key: value``, else the whole field (its
    figures are no words: "disk free 77.4 of 252.0 GiB")."""
    key, colon, _ = field.partition(": ")
    return key if colon else field


def asked_fields(summary: str, question: str) -> str:
    """A record's summary (``_record_fields``) cut to the fields the question names: for each
    word of the question, the fields holding it that share the most words with the question,
    a plural meeting its singular ("How full is the disk?": "[system_stats] disk 23.4% (/),
    disk free 77.4 of 252.0 GiB", not the CPU, memory, load and uptime around them; "How much
    memory is free?": "memory free 9.4 of 16.0 GiB", not "disk free"; "the free memory and the
    CPU usage": the CPU's fields too). A ``key: value`` field is named by its key alone: the
    value may be what the question gives ("Weather in Paris?" asks for no "city: Paris"). For
    "how long" with no field named, the fields of a duration. The whole summary where no
    field, or every field, is named."""
    tag = _TAG.match(summary)
    if not tag:
        return summary
    fields, separator = _record_fields(summary[tag.end():])
    if not fields:
        return summary
    asked = {form: word for word in _words(question) for form in word_forms(word)}
    named = [{asked[form] for word in _words(_field_name(field))
              for form in word_forms(word) if form in asked} for field in fields]
    best = {word: max(len(n) for n in named if word in n)
            for word in set().union(*named)}
    kept = [field for field, words in zip(fields, named, strict=True)
            if any(len(words) == best[word] for word in words)]
    if not kept and ASKS_DURATION.search(question):
        # "How long has this computer been running?" names no field: those of a duration
        # ("uptime 15h 27m") answer it, not the whole record.
        kept = [field for field in fields if durations([field])]
    if not kept or len(kept) == len(fields):
        return summary
    return tag.group() + separator.join(kept)

