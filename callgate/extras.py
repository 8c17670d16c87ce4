"""Optional features and the extras (``pyproject.toml``'s optional-dependencies) that
install them."""

from __future__ import annotations

from pathlib import Path


def install_command(extra: str) -> str:
    """How to install ``extra`` for the callgate that is running: from its checkout, as
    the README does (``"."`` when that is the working folder: a hint of ``".[pdf]"`` run
    elsewhere would install another project, or fail), else from the package index."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        return f'pip install "callgate[{extra}]"'
    where = "." if Path.cwd().resolve() == root else str(root)
    return f'pip install -e "{where}[{extra}]"'


class MissingExtraError(ImportError):
    """A feature's optional package is not installed; ``extra`` installs it."""

    def __init__(self, feature: str, packages: str, extra: str) -> None:
        self.need = f"{feature} needs {packages}"
        self.extra = extra
        super().__init__(f"{self.need}: {install_command(extra)}")
