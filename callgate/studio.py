"""The graph that LangGraph Studio and ``langgraph dev`` serve (``langgraph.json``).

Built without a checkpointer: the LangGraph server supplies its own. The model comes from
``$CALLGATE_MODEL`` (default: the bundled SmolLM2 GGUF); the tools are the configured
built-ins plus ``tools.yml`` (``$CALLGATE_TOOLS``).
"""

from __future__ import annotations

import os

from callgate.graph.builder import build_agent
from callgate.toolset import default_toolset

graph = build_agent(os.environ.get("CALLGATE_MODEL", "bundled"), default_toolset().registry,
                    name="callgate")
