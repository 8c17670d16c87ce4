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

graph = build_agent(os.environ.get("CALLGATE_MODEL", "bundled"), default_toolset().registry,
                    name="callgate")
# build_agent gives a graph an InMemoryStore when none is passed; the server's store (where
# full tool results then go) must be the one in use, so the graph carries none.
graph.store = None
