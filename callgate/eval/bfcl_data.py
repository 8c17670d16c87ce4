"""BFCL (Berkeley Function Calling Leaderboard) data: loading questions and converting schemas.

The tune/validate split: within each category, questions are ordered by the SHA-256 of
their id; the first half (rounded up) is *tune* (studied when changing prompts, grammar or
heuristics), the rest *validate* (only scored). The split is deterministic, disjoint and
50/50 per category (within one question), and a question's part never depends on
``--limit`` or on which categories are run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

CATEGORIES: dict[str, str] = {
    name: f"BFCL_v4_{name}.json"
    for name in (
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
        "irrelevance",
        "live_simple",
        "live_multiple",
        "live_parallel",
        "live_parallel_multiple",
        "live_irrelevance",
        "live_relevance",
    )
}
# Categories without ground truth: correct iff no call (irrelevance), iff a call (relevance).
NO_CALL_CATEGORIES = frozenset({"irrelevance", "live_irrelevance"})
SOME_CALL_CATEGORIES = frozenset({"live_relevance"})
SPLITS = ("tune", "validate", "all")

VENDORED_DIR = Path(__file__).parent / "data" / "bfcl"

# BFCL's Python-flavoured type names -> JSON Schema; None means "no type constraint".
_TYPE_MAP: dict[str, str | None] = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "any": None,
    "str": "string",
    "int": "integer",
    "bool": "boolean",
    "list": "array",
}
_KEEP = {"description", "enum", "default", "minItems", "maxItems", "minimum", "maximum", "pattern"}


@dataclass(frozen=True)
class BfclQuestion:
    """One BFCL question: the first turn, the offered functions and the allowed answers."""

    id: str
    category: str
    messages: list[dict[str, str]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, dict[str, list[Any]]]] | None
    split: str = ""  # "tune" or "validate"; "" for a question made by hand


def default_data_dir() -> Path:
    """$CALLGATE_BFCL_DIR, else ../shared/data/bfcl beside the checkout, else the vendored copy."""
    if env := os.environ.get("CALLGATE_BFCL_DIR"):
        return Path(env)
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bfcl"
    return shared if shared.is_dir() else VENDORED_DIR


def _found(path: Path) -> Path | None:
    """``path``, else its gzipped twin ``path.gz`` (the vendored copy gzips large files)."""
    if path.exists():
        return path
    gz = path.with_name(path.name + ".gz")
    return gz if gz.exists() else None


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _hash(question_id: str) -> str:
    return hashlib.sha256(question_id.encode("utf-8")).hexdigest()


def split_ids(ids: Iterable[str]) -> dict[str, str]:
    """Each id of one category -> ``"tune"`` or ``"validate"`` (see the module docstring)."""
    ordered = sorted(dict.fromkeys(ids), key=lambda i: (_hash(i), i))
    half = (len(ordered) + 1) // 2
    return {qid: "tune" if n < half else "validate" for n, qid in enumerate(ordered)}


def load_questions(
    category: str, data_dir: Path | str | None = None, limit: int | None = None,
    split: str = "all",
) -> list[BfclQuestion]:
    """The first `limit` (default: all) questions of a category's `split`, with ground truth."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(CATEGORIES)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    path = _found(root / CATEGORIES[category])
    if path is None:
        raise FileNotFoundError(f"{root / CATEGORIES[category]}: no such BFCL data file")
    every = list(_jsonl(path))
    parts = split_ids(r["id"] for r in every)
    rows = list(islice((r for r in every if split in ("all", parts[r["id"]])), limit))
    answer_path = _found(root / "possible_answer" / CATEGORIES[category])
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(answer_path)} if answer_path else {}
    if answers and (missing := [r["id"] for r in rows if r["id"] not in answers]):
        raise ValueError(f"{answer_path}: no ground truth for {missing[:5]}")
    return [
        BfclQuestion(
            id=r["id"],
            category=category,
            messages=[dict(m) for m in r["question"][0]],
            functions=r["function"],
            ground_truth=answers.get(r["id"]),
            split=parts[r["id"]],
        )
        for r in rows
    ]


def to_json_schema(bfcl_parameters: dict[str, Any]) -> dict[str, Any]:
    """Convert a BFCL parameter schema (`dict`, `float`, `tuple`, `any`...) to JSON Schema."""
    out: dict[str, Any] = {}
    bfcl_type = bfcl_parameters.get("type")
    if isinstance(bfcl_type, list):
        types = [_TYPE_MAP.get(t, t) for t in bfcl_type]
        if None not in types:
            out["type"] = types
    elif bfcl_type is not None and (mapped := _TYPE_MAP.get(bfcl_type, bfcl_type)):
        out["type"] = mapped
    out.update({k: v for k, v in bfcl_parameters.items() if k in _KEEP})
    if isinstance(out.get("enum"), list):
        _reconcile_enum(out)
    props = bfcl_parameters.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: to_json_schema(v) for k, v in props.items()}
    if isinstance(bfcl_parameters.get("items"), dict):
        out["items"] = to_json_schema(bfcl_parameters["items"])
    required = [r for r in bfcl_parameters.get("required") or [] if r in (props or {})]
    if required:
        out["required"] = required
    if out.get("type") == "array" and "enum" in out:
        # The enum lists the items' values (``["temperature", "humidity", ...]`` for an
        # array of strings): as written, no array could match it.
        out.setdefault("items", {})["enum"] = out.pop("enum")
    return out


_FITS: dict[str, Any] = {"integer": int, "number": (int, float), "boolean": bool,
                         "string": str, "object": dict}


def _reconcile_enum(out: dict[str, Any]) -> None:
    """Make a scalar ``enum`` agree with its ``type``; some BFCL schemas contradict
    themselves (no value could validate), and BFCL's answers show what was meant:
    numeric strings for an integer (``["1", "2", "dontcare"]``) are the numbers, and
    otherwise (``boolean`` with ``["True", "False", "dontcare"]``) the members are."""
    kind, members = out.get("type"), out["enum"]
    fits = _FITS.get(kind) if isinstance(kind, str) else None
    if fits is None or all(isinstance(m, fits) and not (
            isinstance(m, bool) and kind != "boolean") for m in members):
        return
    if kind in ("integer", "number"):
        numbers = [n for m in members if (n := _number(m, kind)) is not None]
        if numbers:
            out["enum"] = list(dict.fromkeys(numbers))
            return
    out["type"] = sorted({_JSON_TYPE[type(m)] for m in members if type(m) in _JSON_TYPE})
    if len(out["type"]) == 1:
        out["type"] = out["type"][0]


_JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _number(member: Any, kind: str) -> int | float | None:
    if isinstance(member, bool):
        return None
    if isinstance(member, int | float):
        return member
    try:
        value = float(str(member))
    except ValueError:
        return None
    if kind == "integer":
        return int(value) if value.is_integer() else None
    return int(value) if value.is_integer() else value


def safe_name(name: str) -> str:
    """A function name OpenAI-style APIs accept (no dots)."""
    return name.replace(".", "_")


def name_map(functions: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Map each function's safe name back to its original BFCL name."""
    return {safe_name(f["name"]): f["name"] for f in functions}
