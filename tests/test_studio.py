"""The module-level graph that langgraph.json points LangGraph Studio at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.llama
def test_langgraph_json_points_at_a_graph_without_its_own_checkpointer() -> None:
    spec = json.loads((REPO / "langgraph.json").read_text())
    module_path, attr = spec["graphs"]["callgate"].split(":")
    assert (REPO / module_path).is_file() and attr == "graph"

    from callgate.studio import graph

    assert graph.checkpointer is None  # the LangGraph server supplies one
    nodes = set(graph.get_graph().nodes)
    assert {"decide", "validate", "correct", "approve", "execute", "summarize", "cite"} <= nodes
    xray = set(graph.get_graph(xray=True).nodes)
    assert {"decide:choose", "decide:fill_args", "decide:parse"} <= xray
    out = graph.invoke({"messages": [("user", "Say hello.")], "mode": "chat"})
    assert out["status"] == "done" and out["final_answer"]
