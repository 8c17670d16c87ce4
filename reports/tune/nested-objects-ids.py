"""The questions of a part of the shared half whose tools take an object argument with
properties of its own (or a list of such objects): those where grounding's reading of an
invented nested value can matter (``nested-optional.patch``). Prints their ids.

    .venv/bin/python reports/tune/nested-objects-ids.py ../shared/data/bfcl tune
"""

from __future__ import annotations

import sys
from typing import Any

from screening import requests

from callgate.eval.bfcl import question_registry


def nested(schema: dict[str, Any]) -> bool:
    """Whether an argument of ``schema`` is an object with properties, or a list of them."""
    for spec in (schema.get("properties") or {}).values():
        items = spec.get("items") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and (spec.get("properties") or (
                isinstance(items, dict) and items.get("properties"))):
            return True
    return False


for question, _ in requests(sys.argv[2], sys.argv[1]):
    if any(nested(tool.schema) for tool in question_registry(question)):
        print(question.id)
