"""Shared fixtures: where the project's shared data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Tests run one at a time on an otherwise idle machine: let llama.cpp use both cores
# (callgate's default is half the cores, which holds up better next to other work).
os.environ.setdefault("CALLGATE_N_THREADS", "2")


def shared_data_dir() -> Path:
    """The shared data folder: $CALLGATE_SHARED_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get("CALLGATE_SHARED_DATA")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path}; set CALLGATE_SHARED_DATA")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_data_dir()
