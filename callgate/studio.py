"""The graph that LangGraph Studio and ``langgraph dev`` serve (``langgraph.json``).

Built without a checkpointer or a store: LangGraph Server supplies both (in memory under
``langgraph dev``, PostgreSQL under ``langgraph up`` or a deployment) and refuses a graph that
brings its own. The model comes from ``$CALLGATE_MODEL`` (default: the bundled SmolLM2 GGUF;
any spec or ``models.yaml`` name); the tools are the configured built-ins plus ``tools.yml``
(``$CALLGATE_TOOLS``).
"""

from __future__ import annotations

import os

from callgate.graph.builder import build_agent
from callgate.toolset import default_toolset

# store=False: LangGraph Server supplies the store that keeps full tool results.
graph = build_agent(os.environ.get("CALLGATE_MODEL", "bundled"), default_toolset().registry,
                    store=False, name="callgate")
