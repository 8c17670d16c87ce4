"""The system prompt's KV state kept on disk for later processes (callgate.models.prefix_cache),
on the real bundled model. A "later process" is a fresh ``Llama`` after
``clear_llama_cache()``; ``n_ctx=1024`` keeps these models apart from other tests' shared ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from callgate.models.bundled import bundled_model_path
from callgate.models.llamacpp import ChatLlamaCppText, clear_llama_cache
from callgate.models.prefix_cache import PrefixCache

pytestmark = pytest.mark.llama

SYSTEM = ("You answer questions about the weather. Tools: get_weather(city: string) returns "
          "the temperature and the sky of a city. Call a tool with Action: and Action Input:.")
MESSAGES = [SystemMessage(SYSTEM), HumanMessage("What is the weather in Oslo?")]


def _fresh(folder: Path | None) -> ChatLlamaCppText:
    clear_llama_cache()
    return ChatLlamaCppText(model_path=str(bundled_model_path()), n_ctx=1024, max_tokens=16,
                            prefix_cache=None if folder is None else str(folder))


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each PrefixCache.start returned: True where the state came from the folder."""
    seen: list[bool] = []
    start = PrefixCache.start

    def spy(self: PrefixCache, *args: Any) -> bool:
        seen.append(start(self, *args))
        return seen[-1]

    monkeypatch.setattr(PrefixCache, "start", spy)
    return seen


def test_a_later_process_loads_the_system_prompt_and_answers_the_same(
        tmp_path: Path, starts: list[bool]) -> None:
    first = _fresh(tmp_path)
    answer = first.invoke(MESSAGES).text
    assert answer and starts == [False]  # decoded, then stored
    assert len(list(tmp_path.glob("*.kv"))) == 1
    assert first.invoke(MESSAGES).text == answer and starts == [False]  # in memory now

    later = _fresh(tmp_path)
    assert later.invoke(MESSAGES).text == answer
    assert starts == [False, True]


def test_a_damaged_state_file_is_decoded_past_and_replaced(tmp_path: Path,
                                                           starts: list[bool]) -> None:
    answer = _fresh(tmp_path).invoke(MESSAGES).text
    (state,) = tmp_path.glob("*.kv")
    state.write_bytes(b"not a llama.cpp state")
    assert _fresh(tmp_path).invoke(MESSAGES).text == answer
    assert starts == [False, False]
    assert state.stat().st_size > 100_000  # written again, whole
    assert _fresh(tmp_path).invoke(MESSAGES).text == answer and starts[-1] is True


def test_nothing_is_kept_without_a_folder_or_a_system_message(tmp_path: Path,
                                                              starts: list[bool]) -> None:
    _fresh(None).invoke(MESSAGES)
    _fresh(tmp_path).invoke(MESSAGES[1:])
    assert starts == [] and not list(tmp_path.iterdir())


def test_another_system_prompt_gets_its_own_file_and_old_ones_go(tmp_path: Path) -> None:
    llama = _fresh(None).llama
    cache = PrefixCache(tmp_path, keep=2)
    prompts = [llama.tokenize(f"System prompt number {i}.".encode()) for i in range(3)]
    for tokens in prompts:
        assert cache.start(llama, "bundled", tokens) is False
        assert llama.n_tokens == len(tokens)
    assert len(list(tmp_path.glob("*.kv"))) == 2
    assert not cache.path("bundled", prompts[0]).exists()  # the oldest went
    assert cache.start(llama, "bundled", prompts[2]) is True
    assert cache.start(llama, "another model", prompts[2]) is False  # keyed by identity


def test_a_state_larger_than_the_limit_is_not_written(tmp_path: Path) -> None:
    llama = _fresh(None).llama
    tokens = llama.tokenize(b"A system prompt.")
    assert PrefixCache(tmp_path, max_bytes=1000).start(llama, "bundled", tokens) is False
    assert llama.n_tokens == len(tokens) and not list(tmp_path.iterdir())


def test_a_folder_that_cannot_be_written_only_costs_the_reading(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    llama = _fresh(None).llama
    tokens = llama.tokenize(b"A system prompt.")
    assert PrefixCache(blocker).start(llama, "bundled", tokens) is False
    assert llama.n_tokens == len(tokens)
    assert blocker.read_text() == "a file where the cache folder should be"
