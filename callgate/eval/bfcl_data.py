"""BFCL (Berkeley Function Calling Leaderboard) data: loading questions and converting schemas."""

from __future__ import annotations

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
    )
}

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
    """One BFCL question: the first user turn, the offered functions and the allowed answers."""

    id: str
    category: str
    messages: list[dict[str, str]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, dict[str, list[Any]]]] | None


def default_data_dir() -> Path:
    """$CALLGATE_BFCL_DIR, else ../shared/data/bfcl beside the checkout, else the vendored copy."""
    if env := os.environ.get("CALLGATE_BFCL_DIR"):
        return Path(env)
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bfcl"
    return shared if shared.is_dir() else VENDORED_DIR


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def load_questions(
    category: str, data_dir: Path | str | None = None, limit: int | None = None
) -> list[BfclQuestion]:
    """Load the first `limit` (default: all) questions of a category, with their ground truth."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(CATEGORIES)}")
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    rows = list(islice(_jsonl(root / CATEGORIES[category]), limit))
    answer_path = root / "possible_answer" / CATEGORIES[category]
    answers = (
        {a["id"]: a["ground_truth"] for a in _jsonl(answer_path)} if answer_path.exists() else {}
    )
    if answers and (missing := [r["id"] for r in rows if r["id"] not in answers]):
        raise ValueError(f"{answer_path}: no ground truth for {missing[:5]}")
    return [
        BfclQuestion(
            id=r["id"],
            category=category,
            messages=[dict(m) for m in r["question"][0]],
            functions=r["function"],
            ground_truth=answers.get(r["id"]),
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
    props = bfcl_parameters.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: to_json_schema(v) for k, v in props.items()}
    if isinstance(bfcl_parameters.get("items"), dict):
        out["items"] = to_json_schema(bfcl_parameters["items"])
    required = [r for r in bfcl_parameters.get("required") or [] if r in (props or {})]
    if required:
        out["required"] = required
    return out


def safe_name(name: str) -> str:
    """A function name OpenAI-style APIs accept (no dots)."""
    return name.replace(".", "_")


def name_map(functions: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Map each function's safe name back to its original BFCL name."""
    return {safe_name(f["name"]): f["name"] for f in functions}
