"""What a test needs that a machine may lack: skipped on a user's machine, failed under CI."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(why: str) -> NoReturn:
    """Skip the test for ``why`` (something it needs is missing), but fail it under
    ``CI=true``: CI installs everything (.ci/run), so there a skip would hide a broken
    install and let the test's checks pass unrun."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}; CI installs it, so this test must run there")
    pytest.skip(why)
