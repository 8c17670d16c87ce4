"""The native path end to end: a real OpenAI-compatible server on 127.0.0.1.

llama-cpp-python's own server (``chat_format=chatml-function-calling``) serves the bundled
SmolLM2-135M GGUF; callgate drives it through ``langchain_openai.ChatOpenAI``. The model is
tiny, so these tests assert the mechanics, not its wisdom.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_openai import ChatOpenAI

from callgate import ToolRegistry, build_agent
from callgate.graph.builder import make_strategy
from callgate.graph.results import get_result
from callgate.models.bundled import bundled_model_path
from callgate.models.spec import load_model
from tests.servers import llama_cpp_server

pytestmark = [pytest.mark.llama, pytest.mark.server]

MARKUP = ("<tool_call>", "Action:", "Action Input:", "[TOOL_CALLS]", "✿FUNCTION✿", "<think>",
          "<|im_start|>", "<|im_end|>")


def get_weather(city: str) -> dict[str, str]:
    """Current weather for a city."""
    return {"city": city, "forecast": "sunny, 21 °C"}


def get_time(timezone: str) -> str:
    """Current time in a timezone such as Europe/Paris."""
    return "12:00"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with llama_cpp_server(str(bundled_model_path())) as base_url:
        yield base_url


def chat_model(base_url: str) -> ChatOpenAI:
    """What ``load_model("openai:smollm2@URL")`` builds, with test-sized limits."""
    model, _ = load_model(f"openai:smollm2@{base_url}", temperature=0, max_tokens=96)
    assert isinstance(model, ChatOpenAI) and model.disable_streaming == "tool_calling"
    return model.model_copy(update={"max_retries": 0})


def test_auto_picks_native_for_an_openai_compatible_server(server: str) -> None:
    strategy = make_strategy(chat_model(server), ToolRegistry([get_weather]))
    assert strategy.name == "native"


@pytest.mark.parametrize("question", [
    # The two long generations run with the slow tests (about 25 s each on a busy machine).
    pytest.param("What is the weather in Paris? Use the get_weather tool.",
                 marks=[pytest.mark.slow, pytest.mark.timeout(900)]),
    "What time is it in Europe/Paris?",
    pytest.param("Say hello.", marks=[pytest.mark.slow, pytest.mark.timeout(900)]),
])
def test_native_loop_against_the_real_server(server: str, question: str) -> None:
    registry = ToolRegistry([get_weather, get_time])
    agent = build_agent(chat_model(server), registry, tool_format="native", max_steps=3)
    out = agent.invoke({"messages": [("user", question)]})

    assert out["status"] in {"done", "step_limit", "failed"}
    assert out["final_answer"] and not any(m in out["final_answer"] for m in MARKUP)
    assert len({e["step"] for e in out["tool_events"]}) <= 3
    for event in out["tool_events"]:  # anything executed passed strict validation first
        assert registry.validate({"tool": event["tool"], "args": event["args"]}).valid
        assert event["id"].startswith("R") and event["summary"].startswith(f"[{event['tool']}]")
    if out["tool_events"]:
        assert "Sources:" in out["final_answer"]
        assert set(out["tools_used"]) <= {"get_weather", "get_time"}
    report(question, out)


def test_forced_first_call_goes_through_validate_execute_cite(server: str) -> None:
    registry = ToolRegistry([get_weather, get_time])
    agent = build_agent(chat_model(server), registry, tool_format="native", max_steps=3,
                        tool_choice="get_weather")
    out = agent.invoke({"messages": [("user", "What is the weather in Paris?")]})
    first = out["tool_events"][0]
    assert first["tool"] == "get_weather" and first["step"] == 1 and first["ok"]
    assert registry.validate({"tool": "get_weather", "args": first["args"]}).valid
    assert get_result(agent, None, first["id"])["forecast"] == "sunny, 21 °C"
    assert out["status"] in {"done", "step_limit"} and len(out["tool_events"]) <= 3
    assert "Sources: [R1] get_weather" in out["final_answer"]
    assert not any(m in out["final_answer"] for m in MARKUP)
    report("forced get_weather", out)


def report(question: str, out: dict) -> None:
    print(f"\n{question!r} -> status={out['status']} events="
          f"{[(e['tool'], e['args'], e['ok']) for e in out['tool_events']]}\n"
          f"answer={out['final_answer'][:200]!r}")
