"""The ``system_stats`` tool: CPU, memory, disk and load of this machine, through psutil."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import time
from pathlib import Path
from typing import Any

import psutil

from callgate.tools.registry import Tool, ToolRegistry

CPU_SAMPLE_S = 0.2
GIB = 1024**3


def _gib(size: int) -> float:
    return round(size / GIB, 1)


def system_stats() -> dict:
    """This machine's number of CPUs (processors, cores), current CPU, memory (RAM) and disk
    usage (percent), free and total memory and disk (GiB), load and uptime."""
    disk_root = Path.home().anchor or "/"  # "/" on POSIX, the home drive on Windows
    memory, disk = psutil.virtual_memory(), psutil.disk_usage(disk_root)
    stats: dict[str, Any] = {
        # A first cpu_percent() without an interval compares with nothing: sample instead.
        "cpu_percent": psutil.cpu_percent(interval=CPU_SAMPLE_S),
        "cpu_count": psutil.cpu_count(),
        "memory_percent": memory.percent,
        # "Free memory" as a user means it (the "available" column of `free`): what can be
        # had without swapping, psutil's `available`, not its `free` (no page cache).
        "memory_free_gib": _gib(memory.available),
        "memory_total_gib": _gib(memory.total),
        # As `df` writes them: the percentage leaves out blocks reserved for root, the total
        # does not, so free/total need not be 100% less the percentage.
        "disk_percent": disk.percent,
        "disk_free_gib": _gib(disk.free),
        "disk_total_gib": _gib(disk.total),
        "disk_path": disk_root,
    }
    with contextlib.suppress(AttributeError, OSError):  # not on every platform
        stats["load_average"] = [round(x, 2) for x in psutil.getloadavg()]
    try:
        boot = psutil.boot_time()
    except (AttributeError, OSError):
        pass
    else:
        stats["boot_time"] = dt.datetime.fromtimestamp(boot, dt.UTC).isoformat(
            timespec="seconds")
        stats["uptime_s"] = int(time.time() - boot)
    return stats


# How long the machine has run, as a question says it ("How long has this computer been
# running?" shares no word with the description). A relevance of its own, not more words in
# the description: the description is in the prompt, and SmolLM2's other answers moved with
# it (a fresh-set web question went to rag_search).
_RUNNING = re.compile(r"(?i)\bbeen\s+(?:running|up|on)\b|\bsince\s+(?:it\s+)?(?:booted|boot)\b")
_MACHINE = re.compile(r"(?i)\b(?:computer|machine|server|system|host|laptop|pc|box)\b")


def uptime_relevance(request: str) -> float:
    """As much as a word of the tool's name for a question about how long a machine has
    run ("been running", "been up", "since boot", with "computer", "machine"...), 0 for any
    other ("I have been running a marathon")."""
    return 3.0 if _RUNNING.search(request) and _MACHINE.search(request) else 0.0


# The words a question may use for the names the summary gives figures: "How much RAM is in
# use right now?" (the fresh answer set's, answered "2.25", the load's figure) asks for the
# memory's; "2.5% SSD" in an answer is read as a figure of the disk's. Not "drive" or
# "storage": "How long is the drive to Boston?" and "cold storage for wine" would be about
# this tool (a review's cases).
SYNONYMS = {"ram": "memory", "processor": "cpu", "processors": "cpus", "core": "cpu",
            "cores": "cpus", "ssd": "disk", "hdd": "disk"}


def system_stats_tool() -> Tool:
    """The ``system_stats`` Tool."""
    return ToolRegistry().register(system_stats, summarizer=summarize_stats,
                                   category="system", source="builtin",
                                   relevance=uptime_relevance, synonyms=SYNONYMS)


def summarize_stats(tool: str, data: Any) -> str:
    """One line: ``[system_stats] cpu 12%, memory 41%, disk 63% (/), load 0.4 0.3 0.2,
    uptime 5h 22m, 2 CPUs, memory free 9.4 of 16.0 GiB, disk free 85.2 of 230.0 GiB``."""
    if not isinstance(data, dict):
        return f"[{tool}] no data"
    parts = [f"cpu {data.get('cpu_percent')}%", f"memory {data.get('memory_percent')}%",
             f"disk {data.get('disk_percent')}% ({data.get('disk_path', '/')})"]
    if data.get("load_average"):
        parts.append("load " + " ".join(str(x) for x in data["load_average"]))
    if isinstance(data.get("uptime_s"), int):
        days, rest = divmod(data["uptime_s"], 86400)
        parts.append(f"uptime {days}d {rest // 3600}h" if days else
                     f"uptime {rest // 3600}h {rest % 3600 // 60}m")
    if isinstance(data.get("cpu_count"), int):
        parts.append(f"{data['cpu_count']} CPU{'s' if data['cpu_count'] != 1 else ''}")
    # Sizes last, after the usage figures SmolLM2 reads first, and without brackets: with
    # "memory 2.5% (free 23.0 of 23.5 GiB)" it wrote "2.8% (/ 2.8%)". The answer checks read
    # only "free" as this figure's name; the preview's keys ("memory_free_gib") tie it to
    # memory.
    for name in ("memory", "disk"):
        free, total = data.get(f"{name}_free_gib"), data.get(f"{name}_total_gib")
        if free is not None and total is not None:
            parts.append(f"{name} free {free} of {total} GiB")
    return f"[{tool}] " + ", ".join(parts)
