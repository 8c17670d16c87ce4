"""``callgate eval`` and ``callgate bench`` (filled in by the evaluation modules)."""

from __future__ import annotations

import argparse


def add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register the eval/bench subcommands."""
