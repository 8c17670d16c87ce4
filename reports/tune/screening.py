"""What the screen scripts of this folder share: the questions of a part of the shared half,
each with the user's latest request. Run a script from the repository root
(``.venv/bin/python reports/tune/NAME.py ...``): this folder is then on ``sys.path``."""

from __future__ import annotations

from collections.abc import Iterator

from callgate.eval.bfcl_data import CATEGORIES, BfclQuestion, load_questions


def requests(split: str, data_dir: str) -> Iterator[tuple[BfclQuestion, str]]:
    """Every question of ``split`` (all eleven categories) whose latest user message is
    text, with that text."""
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir=data_dir):
            said = [m["content"] for m in question.messages if m["role"] == "user"]
            if said and isinstance(said[-1], str):
                yield question, said[-1]
