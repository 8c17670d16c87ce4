"""Where a measurement ran: the checkout's commit and the machine.

Greedy decoding is deterministic on one machine, but not across machines: llama.cpp picks
its SIMD kernels (AVX2, AVX-512) by CPU, their float sums differ in the last bits, and a
small model's near-ties then go the other way. The same commit gave 105 of 874 tune
replies differently on two machines, so every report records the machine it ran on and
``callgate eval diff`` says when two reports' machines differ.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["git_commit", "machine", "machine_note"]


def git_commit() -> str:
    """The checkout's commit (``+dirty`` with uncommitted changes), "" outside a git tree."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here,
                              capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _llama_cpp() -> tuple[str | None, str | None]:
    """llama-cpp-python's version and llama.cpp's own line of the CPU features it uses."""
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return None, None
    try:
        import llama_cpp

        features = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    except Exception:  # a library that fails to load, however it fails: the record is
        features = None  # taken after a run, and must never cost the report
    return version, features


def machine() -> dict[str, Any]:
    """The machine a report ran on: CPU, cores, Python and the llama.cpp build."""
    version, features = _llama_cpp()
    return {"cpu": _cpu_name(), "cpus": os.cpu_count() or 0,
            "python": platform.python_version(), "llama_cpp_python": version,
            "llama_cpp_features": features}


def machine_note(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """A warning when two reports ran on different machines, or one does not say; None
    when both ran on the same one."""
    old, new = before.get("machine"), after.get("machine")
    if not old or not new:
        return ("note: a report does not record its machine; replies can differ between "
                "machines without a code change")
    keys = ("cpu", "cpus", "llama_cpp_python", "llama_cpp_features")
    changed = [k for k in keys if old.get(k) != new.get(k)]
    if not changed:
        return None
    return (f"note: the reports ran on different machines ({', '.join(changed)} differ); "
            "replies can differ between machines without a code change")
