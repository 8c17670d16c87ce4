"""system_stats: real psutil readings, in range, summarized on one line."""

from __future__ import annotations

from callgate.tools.builtin.system_stats import summarize_stats, system_stats, system_stats_tool


def test_values_are_percentages() -> None:
    stats = system_stats()
    for key in ("cpu_percent", "memory_percent", "disk_percent"):
        assert isinstance(stats[key], float | int) and 0 <= stats[key] <= 100, key
    # "How much free memory is there?" had no answer but a percentage used.
    for name in ("memory", "disk"):
        assert 0 <= stats[f"{name}_free_gib"] <= stats[f"{name}_total_gib"], name
    if "load_average" in stats:
        assert len(stats["load_average"]) == 3 and min(stats["load_average"]) >= 0
    if "uptime_s" in stats:
        assert stats["uptime_s"] >= 0 and stats["boot_time"].endswith("+00:00")


async def test_tool_and_summary() -> None:
    tool = system_stats_tool()
    assert tool.name == "system_stats" and tool.schema["properties"] == {}
    # A question's "RAM" or "processors" asks for the figures the summary names memory and
    # CPUs (``relevance.in_tool_words``).
    assert {tool.synonyms[w] for w in ("ram", "processors", "cores")} == {"memory", "cpus"}
    data = await tool.runnable.ainvoke({})
    summary = tool.summarizer("system_stats", data)
    assert summary.startswith("[system_stats] cpu ") and "\n" not in summary
    if isinstance(data["cpu_count"], int):  # psutil may not know
        assert f", {data['cpu_count']} CPU{'s' if data['cpu_count'] != 1 else ''}, " in summary
    assert summary.endswith(" GiB")
    assert "memory" in summary and "disk" in summary and len(summary) <= 200
    assert summarize_stats("system_stats", {
        "cpu_percent": 12.5, "memory_percent": 40.0, "disk_percent": 63.1, "disk_path": "/",
        "load_average": [0.4, 0.3, 0.2], "uptime_s": 2 * 86400 + 3 * 3600 + 60,
    }) == "[system_stats] cpu 12.5%, memory 40.0%, disk 63.1% (/), load 0.4 0.3 0.2, uptime 2d 3h"
    assert summarize_stats("system_stats", {
        "cpu_percent": 12.5, "memory_percent": 41.0, "memory_free_gib": 9.4,
        "memory_total_gib": 16.0, "disk_percent": 63.1, "disk_free_gib": 85.2,
        "disk_total_gib": 230.0, "disk_path": "/",
    }) == ("[system_stats] cpu 12.5%, memory 41.0%, disk 63.1% (/), "
           "memory free 9.4 of 16.0 GiB, disk free 85.2 of 230.0 GiB")
    # The number of CPUs answers "how many CPUs/cores does this machine have?".
    assert summarize_stats("system_stats", {
        "cpu_count": 1, "cpu_percent": 3.0, "memory_percent": 5.0, "disk_percent": 7.0,
    }) == "[system_stats] cpu 3.0%, memory 5.0%, disk 7.0% (/), 1 CPU"


def test_a_question_about_processors_cores_or_uptime_is_about_system_stats() -> None:
    # "How many processors does this computer have?" shared no word with the description,
    # so no tool was offered and the model answered "1" (the fresh answer set).
    from callgate.tools.builtin.calculator import calculator_tool
    from callgate.tools.builtin.system_stats import system_stats_tool
    from callgate.tools.registry import ToolRegistry
    from callgate.tools.relevance import relevant_tools

    registry = ToolRegistry([system_stats_tool(), calculator_tool()])
    for question in ("How many processors does this computer have?",
                     "How many cores does this machine have?",
                     # "How long has this computer been running?" shared none either: the
                     # model answered "I have no answer to give." (asked as a new user).
                     "How long has this computer been running?",
                     "What is the uptime of this machine?"):
        assert relevant_tools(registry, question, unmatched="none") == ["system_stats"]
    # Running as a person does is no question for it.
    for question in ("I have been running a marathon", "The lights have been on all day"):
        assert relevant_tools(registry, question, unmatched="none") == []
