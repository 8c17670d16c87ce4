"""The thread as a model reads it: what a client's input left that no model should read."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage


def model_history(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The thread as a model reads it: a tool result that answers no call before it, and a
    blank user message, are left out. Such messages come from a client's input (a refused
    run's input stays in the thread: LangGraph checkpoints it before any node runs) or a
    history brought from elsewhere; hosted providers reject a history holding one, so
    every later turn of the thread would fail. The thread itself keeps them."""
    called: set[str] = set()
    out: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            called |= {call_id for c in [*message.tool_calls, *message.invalid_tool_calls]
                       if (call_id := c.get("id"))}
        elif (isinstance(message, ToolMessage) and message.tool_call_id not in called
              or isinstance(message, HumanMessage) and blank(message)):
            continue
        out.append(message)
    return out


def blank(message: AnyMessage) -> bool:
    """Whether a message says nothing: no text but spaces, and no other content (an image)."""
    content = message.content
    if isinstance(content, str):
        return not content.strip()
    return not message.text.strip() and not any(
        isinstance(block, dict) and block.get("type") not in (None, "text")
        for block in content)
