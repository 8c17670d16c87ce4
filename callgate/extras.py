"""Optional features and the extras (``pyproject.toml``'s optional-dependencies) that
install them."""

from __future__ import annotations


def install_command(extra: str) -> str:
    """How the README installs ``extra`` (from a checkout of the project)."""
    return f'pip install -e ".[{extra}]"'


class MissingExtraError(ImportError):
    """A feature's optional package is not installed; ``extra`` installs it."""

    def __init__(self, feature: str, packages: str, extra: str) -> None:
        self.need = f"{feature} needs {packages}"
        self.extra = extra
        super().__init__(f"{self.need}: {install_command(extra)}")
