"""Model layer: bundled GGUF, llama.cpp chat model, ReAct grammars, specs, tool format."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from callgate import ToolRegistry
from callgate.graph.builder import make_strategy
from callgate.models.bundled import BUNDLED_SPEC, bundled_model_path, runtime_model_path
from callgate.models.grammar import (
    args_grammar,
    bound_schema,
    choice_grammar,
    grammar_error,
    next_action_grammar,
)
from callgate.models.llamacpp import ChatLlamaCppText, ContextOverflowError
from callgate.models.spec import (
    ModelConfig,
    binds_tools,
    load_model,
    load_models_yaml,
    parse_spec,
    resolve_tool_format,
)

SYSTEM = (
    "Answer the user's question. Tools:\n"
    'calculator: evaluate arithmetic. Input: {"expression": string}\n'
    'web.search: search the web. Input: {"query": string}\n'
    'unit-convert: convert units. Input: {"value": number, "to": string}\n'
    "Reply with\nThought: reasoning\nAction: tool name\nAction Input: JSON arguments\n"
    "or\nFinal Answer: the answer"
)
TOOLS = ["calculator", "web.search", "unit-convert"]


@pytest.fixture(scope="module")
def chat() -> ChatLlamaCppText:
    return ChatLlamaCppText(model_path=str(bundled_model_path()), max_tokens=32)


# -- bundled model and chat model ------------------------------------------------------


def test_bundled_path_exists() -> None:
    path = bundled_model_path()
    assert path.is_file() and path.suffix == ".gguf"
    assert path.stat().st_size > 50_000_000
    assert BUNDLED_SPEC == "bundled"


@pytest.mark.llama
def test_bundled_model_runs_as_a_q8_copy_made_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_cpp import Llama

    monkeypatch.setenv("CALLGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CALLGATE_BUNDLED_AS_SHIPPED", raising=False)
    copy = runtime_model_path()
    assert copy.parent == tmp_path / "cache" and copy.name.endswith(".Q8_0.gguf")
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]  # no partial file left
    made = copy.stat().st_mtime_ns
    assert runtime_model_path() == copy and copy.stat().st_mtime_ns == made  # made once
    assert ModelConfig(provider="gguf", model=BUNDLED_SPEC).model_path == copy
    llama = Llama(model_path=str(copy), n_ctx=64, verbose=False)
    shipped = Llama(model_path=str(bundled_model_path()), n_ctx=64, verbose=False,
                    vocab_only=True)
    try:
        assert llama.metadata["general.file_type"] == "7"  # LLAMA_FTYPE_MOSTLY_Q8_0
        assert llama.n_vocab() == shipped.n_vocab()
    finally:
        llama.close()
        shipped.close()


def test_bundled_model_as_shipped_when_asked_or_when_no_copy_can_be_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLGATE_BUNDLED_AS_SHIPPED", "1")
    assert runtime_model_path() == bundled_model_path()
    monkeypatch.delenv("CALLGATE_BUNDLED_AS_SHIPPED")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("CALLGATE_CACHE_DIR", str(blocker))
    with pytest.warns(UserWarning, match="running the shipped bundled model"):
        assert runtime_model_path() == bundled_model_path()


@pytest.mark.llama
def test_answers_and_stop_cuts(chat: ChatLlamaCppText) -> None:
    prompt = "List five fruits, separated by commas."
    full = chat.invoke(prompt).content
    assert isinstance(full, str) and len(full) > 10
    # Greedy decoding is deterministic: stopping at a later word must leave exactly the prefix.
    words = re.findall(r"[A-Za-z]{3,}", full)
    assert len(words) >= 2, full
    stop = words[1]
    cut = chat.invoke(prompt, stop=[stop]).content
    assert cut == full[: full.index(stop)]


@pytest.mark.llama
def test_stream_matches_invoke(chat: ChatLlamaCppText) -> None:
    prompt = [HumanMessage("Write one sentence about the sea.")]
    chunks = list(chat.stream(prompt, temperature=0, max_tokens=24))
    assert len(chunks) > 1
    assert "".join(c.content for c in chunks) == chat.invoke(prompt, max_tokens=24).content


def test_models_share_one_llama(chat: ChatLlamaCppText) -> None:
    other = ChatLlamaCppText(model_path=str(bundled_model_path()), max_tokens=5)
    assert other.llama is chat.llama
    assert ChatLlamaCppText.text_only is True


def test_prompt_uses_chat_template_and_prefill(chat: ChatLlamaCppText) -> None:
    history = [
        SystemMessage("sys"),
        HumanMessage("hi"),
        AIMessage("Action: calculator\nAction Input: "),
    ]
    prompt = chat.render_prompt(history)
    assert prompt.startswith("<|im_start|>system\nsys<|im_end|>")
    assert prompt.endswith("<|im_start|>assistant\nAction: calculator\nAction Input: ")
    fresh = chat.render_prompt([HumanMessage("hi"), ToolMessage("42", tool_call_id="1")])
    assert "Observation: 42" in fresh and fresh.endswith("<|im_start|>assistant\n")


def test_context_overflow() -> None:
    small = dict(model_path=str(bundled_model_path()), n_ctx=256, max_tokens=8)
    history = [SystemMessage("Be brief.")]
    for i in range(12):
        history += [HumanMessage(f"question {i} " + "word " * 20), AIMessage(f"answer {i}")]
    history.append(HumanMessage("last question"))
    with pytest.raises(ContextOverflowError, match="n_ctx=256"):
        ChatLlamaCppText(**small, on_overflow="error").invoke(history)
    model = ChatLlamaCppText(**small)
    tokens = model._prompt_tokens(history, model.loaded, 8)
    kept = model.llama.detokenize(tokens).decode()
    assert len(tokens) <= 248 and "Be brief." in kept and "last question" in kept
    assert "question 0 " not in kept
    with pytest.raises(ContextOverflowError):
        model.invoke([HumanMessage("word " * 400)])


# -- grammars ----------------------------------------------------------------------------


class Address(BaseModel):
    city: str
    zip: str | None = None


class Order(BaseModel):
    item: str
    quantity: int
    price: float
    gift: bool
    size: Literal["small", "medium", "large"]
    tags: list[str] = Field(default_factory=list)
    ship_to: Address
    note: str | None = None


WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "days", "units"],
}
CALC = {
    "type": "object",
    "properties": {
        "numbers": {"type": "array", "items": {"type": "number"}, "minItems": 1},
        "op": {"enum": ["sum", "mean", "max"]},
        "round": {"type": ["boolean", "null"]},
        "precision": {"type": "integer"},
    },
    "required": ["numbers", "op", "round"],
}


def _check_types(value: dict[str, Any], schema: dict[str, Any]) -> None:
    """Minimal JSON-schema check for the hand-written test schemas."""
    types = {
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
        "array": list,
        "null": type(None),
    }
    assert set(schema["required"]) <= set(value)
    assert set(value) <= set(schema["properties"])
    for key, val in value.items():
        prop = schema["properties"][key]
        if "enum" in prop:
            assert val in prop["enum"]
        allowed = prop.get("type", [])
        allowed = allowed if isinstance(allowed, list) else [allowed]
        if allowed:
            assert isinstance(val, tuple(types[t] for t in allowed)), (key, val)
            assert not (isinstance(val, bool) and "boolean" not in allowed), (key, val)
        if prop.get("type") == "array":
            assert 1 <= len(val) <= 3
            assert all(isinstance(x, int | float) and not isinstance(x, bool) for x in val)


GRAMMAR_SCHEMAS: list[dict[str, Any]] = [
    {},
    {"type": "object"},
    {"type": "object", "properties": {}},
    WEATHER,
    CALC,
    Order.model_json_schema(),
    {
        "type": "object",
        "properties": {"meta": {"type": "object"}, "any": {}},
        "additionalProperties": True,
    },
    {
        "type": "object",
        "properties": {
            "xs": {"type": "array"},
            "s": {"type": "string", "maxLength": 500, "minLength": 2},
            "k": {"const": "fixed"},
        },
        "required": ["xs"],
    },
]


def test_every_grammar_compiles(chat: ChatLlamaCppText) -> None:
    grammars = [
        choice_grammar(TOOLS),
        choice_grammar(TOOLS, allow_final=False, thought=False),
        choice_grammar([], max_thought_chars=10),
        choice_grammar(['we"ird\\name', "a.b-c_d"], max_thought_chars=1),
        next_action_grammar(TOOLS),
        next_action_grammar(['we"ird\\name', "a.b-c_d"]),
        next_action_grammar([]),  # no tool offered: only the end of the turn
    ]
    for schema in GRAMMAR_SCHEMAS:
        grammars += [args_grammar(schema), args_grammar(schema, include_optional=False)]
    for gbnf in grammars:
        assert grammar_error(gbnf, chat.llama) is None, gbnf
    assert grammar_error('root ::= "a" undefined-rule', chat.llama) is not None
    with pytest.raises(ValueError, match="could not parse"):
        chat.invoke("hi", grammar="root ::= nope", max_tokens=2)
    with pytest.raises(ValueError):
        choice_grammar([], allow_final=False)
    with pytest.raises(ValueError):
        next_action_grammar(["two\nlines"])


def test_bound_schema() -> None:
    bounded = bound_schema(Order.model_json_schema(), max_string_chars=10, max_array_items=2)
    assert bounded["properties"]["item"]["maxLength"] == 10
    assert bounded["properties"]["tags"]["maxItems"] == 2
    assert bounded["$defs"]["Address"]["properties"]["city"]["maxLength"] == 10
    required_only = bound_schema(Order.model_json_schema(), include_optional=False)
    assert "note" not in required_only["properties"] and "tags" not in required_only["properties"]
    assert args_grammar({}) == args_grammar({"type": "object", "properties": {}})


def test_bound_schema_offers_no_enum_member_its_type_rules_out() -> None:
    schema = {"type": "object", "properties": {
        "flag": {"type": "boolean", "enum": ["True", True, False]},
        "n": {"type": "integer", "enum": [1, "2", True, 3.0]},
        "none_fit": {"type": "integer", "enum": ["a", "b"]},  # unsatisfiable: left as is
    }}
    props = bound_schema(schema)["properties"]
    assert props["flag"]["enum"] == [True, False]
    assert props["n"]["enum"] == [1, 3.0]
    assert props["none_fit"]["enum"] == ["a", "b"]


@pytest.mark.llama
@pytest.mark.parametrize(
    "question",
    [
        "What is 17 * 23?",
        "Who won the 2018 football world cup?",
        "Say hello to me.",
        "How many centimetres are in 3.5 inches?",
        "What is the capital of Japan?",
    ],
)
def test_choice_grammar_forces_react(chat: ChatLlamaCppText, question: str) -> None:
    out = chat.invoke(
        [SystemMessage(SYSTEM), HumanMessage(question)],
        grammar=choice_grammar(TOOLS, max_thought_chars=80),
        stop=["\nObservation:"],
        max_tokens=48,
    ).content
    action = r"Action: (calculator|web\.search|unit-convert)\n"
    final = r"Final Answer: \S.*"
    assert re.fullmatch(rf"(Thought: \S[^\n]*\n)?({action}|{final})", out, re.S), out


@pytest.mark.llama
@pytest.mark.parametrize("name", ["weather", "calc", "order"])
def test_args_grammar_yields_valid_json(chat: ChatLlamaCppText, name: str) -> None:
    schema = {"weather": WEATHER, "calc": CALC, "order": Order.model_json_schema()}[name]
    request = {
        "weather": "Weather in Paris for 3 days, in celsius?",
        "calc": "Add up 4, 8 and 15.",
        "order": "Order 2 large blue shirts at 9.99 each as a gift to Berlin.",
    }[name]
    history = [
        SystemMessage(SYSTEM),
        HumanMessage(request),
        AIMessage(f"Action: {name}\nAction Input: "),
    ]
    grammar = args_grammar(schema, max_string_chars=24, max_array_items=3)
    out = chat.invoke(history, grammar=grammar, max_tokens=160).content
    value = json.loads(out)
    if name == "order":
        order = Order.model_validate(value, strict=True)
        assert len(order.item) <= 24 and len(order.tags) <= 3
    else:
        _check_types(value, schema)


@pytest.mark.llama
def test_args_grammar_required_only(chat: ChatLlamaCppText) -> None:
    history = [HumanMessage("Order a small hat to Rome."), AIMessage("Action Input: ")]
    schema = Order.model_json_schema()
    grammar = args_grammar(schema, include_optional=False, max_string_chars=12)
    value = json.loads(chat.invoke(history, grammar=grammar, max_tokens=120).content)
    assert set(value) == set(schema["required"])
    assert set(value["ship_to"]) == {"city"}


# -- specs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "provider", "model", "base_url"),
    [
        ("bundled", "gguf", "bundled", None),
        ("bundled:smollm2-135m", "gguf", "bundled", None),
        ("gguf:/models/q.gguf", "gguf", "/models/q.gguf", None),
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("openai:local@http://127.0.0.1:8000/v1", "openai", "local", "http://127.0.0.1:8000/v1"),
        ("anthropic:claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest", None),
        ("ollama:qwen2.5:0.5b", "ollama", "qwen2.5:0.5b", None),
        ("ollama:llama3.2@http://host:11434", "ollama", "llama3.2", "http://host:11434"),
        # A URL with a user and password: the model ran to its last "@" and the URL was
        # dropped (the default localhost:11434 was asked instead).
        ("ollama:m@http://me:secret@127.0.0.1:5555", "ollama", "m",
         "http://me:secret@127.0.0.1:5555"),
        ("openai:a@b@https://h/v1", "openai", "a@b", "https://h/v1"),
    ],
)
def test_parse_spec(spec: str, provider: str, model: str, base_url: str | None) -> None:
    cfg = parse_spec(spec)
    assert (cfg.provider, cfg.model, cfg.base_url) == (provider, model, base_url)
    assert cfg.tool_format == "auto"
    assert cfg.grammar is (provider == "gguf")


@pytest.mark.parametrize("spec", ["mistral:large", "nonsense", "openai:", "custom:x"])
def test_parse_spec_errors(spec: str) -> None:
    with pytest.raises(ValueError, match="provider|spec"):
        parse_spec(spec)


MODELS_YAML = """
models:
  tiny:
    provider: gguf
    path: bundled:smollm2-135m
    tool_format: react
  local:
    provider: gguf
    path: weights/q.gguf
    grammar: false
    n_ctx: 2048
  server:
    provider: openai
    model: qwen
    base_url: http://127.0.0.1:8000/v1
    tool_format: native
    temperature: 0.2
"""


def test_load_models_yaml(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(MODELS_YAML)
    models = load_models_yaml(path)
    assert models["tiny"] == ModelConfig(
        provider="gguf", model="bundled", tool_format="react", name="tiny"
    )
    assert models["local"].model == str(tmp_path / "weights" / "q.gguf")
    assert models["local"].grammar is False and models["local"].kwargs == {"n_ctx": 2048}
    server = models["server"]
    assert (server.provider, server.base_url, server.tool_format) == (
        "openai",
        "http://127.0.0.1:8000/v1",
        "native",
    )
    assert server.temperature == 0.2 and server.grammar is False

    with pytest.raises(FileNotFoundError, match="models file not found"):
        load_models_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  x:\n    provider: mistral\n    model: large\n")
    with pytest.raises(ValueError, match="unknown model provider 'mistral'"):
        load_models_yaml(bad)


def test_load_model_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models.yaml").write_text(MODELS_YAML)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CALLGATE_MODELS", raising=False)
    model, cfg = load_model("tiny")
    assert isinstance(model, ChatLlamaCppText) and cfg.name == "tiny"
    assert resolve_tool_format(model, cfg.tool_format) == "react"
    with pytest.raises(FileNotFoundError, match="q.gguf"):
        load_model("local")

    other = tmp_path / "elsewhere.yaml"
    other.write_text(
        "models:\n  remote:\n    provider: openai\n    model: m\n"
        "    base_url: http://127.0.0.1:9/v1\n"
    )
    monkeypatch.setenv("CALLGATE_MODELS", str(other))
    model, cfg = load_model("remote", temperature=0)
    assert type(model).__name__ == "ChatOpenAI" and cfg.temperature == 0
    monkeypatch.setenv("CALLGATE_MODELS", str(tmp_path / "gone.yaml"))
    with pytest.raises(FileNotFoundError, match="CALLGATE_MODELS"):
        load_model("remote")


# -- tool format -------------------------------------------------------------------------


def test_resolve_tool_format(chat: ChatLlamaCppText) -> None:
    from langchain_openai import ChatOpenAI

    assert resolve_tool_format(chat) == "react"
    same, cfg = load_model(chat)
    assert same is chat and cfg.provider == "gguf" and cfg.grammar is True
    assert resolve_tool_format(GenericFakeChatModel(messages=iter([]))) == "react"
    openai = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="x")
    assert resolve_tool_format(openai) == "native"
    assert resolve_tool_format(openai, "react") == "react"
    model, cfg = load_model("openai:m@http://127.0.0.1:9/v1")
    assert resolve_tool_format(model, cfg.tool_format) == "native"
    with pytest.raises(ValueError):
        resolve_tool_format(openai, "json")


def _probe(x: str) -> str:
    """A tool to bind."""
    return x


def test_native_asked_of_a_text_only_model_is_refused(chat: ChatLlamaCppText) -> None:
    # It was a bare NotImplementedError from bind_tools at the first step.
    for model in (chat, GenericFakeChatModel(messages=iter([]))):
        assert not binds_tools(model)
        with pytest.raises(ValueError, match="native tool calling"):
            make_strategy(model, ToolRegistry([_probe]), tool_format="native")
        make_strategy(model, ToolRegistry(), tool_format="native")  # no tools to bind: fine


def test_a_models_yaml_that_is_not_yaml_names_its_line(tmp_path: Path) -> None:
    broken = tmp_path / "models.yaml"
    broken.write_text("models:\n  tiny: [1, 2\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(broken))}:\d+: invalid YAML"):
        load_models_yaml(broken)


@pytest.mark.parametrize(("entry", "said"), [
    # Unknown keys were passed to the chat model, which ignored them: a typo did nothing.
    ("{provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1', temprature: 0.2}",
     "unknown key 'temprature': neither a setting (provider, path, model, base_url, "
     "grammar, max_tokens, temperature, tool_format) nor an argument of ChatOpenAI; "
     "model_kwargs: {…} passes other parameters to the API"),
    ("{provider: gguf, path: bundled, n_ctxx: 4096}", "unknown key 'n_ctxx'"),
    ("{provider: custom, class: 'callgate.models.scripted:ScriptedChatModel', scrpit: [x]}",
     "unknown key 'scrpit': neither a setting (provider"),
    # Wrong types: a string grammar was taken as true.
    ("{provider: gguf, path: bundled, grammar: 'no'}",
     "'grammar' must be true or false, got 'no'"),
    ("{provider: openai, model: m, temperature: warm}",
     "'temperature' must be a number of at least 0, got 'warm'"),
    ("{provider: openai, model: 4}", "'model' must be a string, got 4"),
    ("{provider: gguf, path: bundled, n_ctx: big}",
     "'n_ctx': Input should be a valid integer, unable to parse string as an integer, "
     "got 'big'"),
])
def test_a_models_yaml_entry_refuses_unknown_keys_and_wrong_types(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, said: str) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  ok: {{provider: gguf, path: bundled}}\n  mine: {entry}\n")
    monkeypatch.setenv("CALLGATE_MODELS", str(path))
    with pytest.raises(ValueError) as caught:
        load_model("mine")
    assert str(caught.value).startswith(f"{path}: model 'mine': {said}")
    assert "\n" not in str(caught.value)


def test_a_models_yaml_entry_takes_its_model_classes_arguments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Names and aliases of the class's fields, as before.
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  oa: {provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1',"
                    " api_key: x, timeout: 5, model_kwargs: {top_k: 3}}\n"
                    "  local: {provider: gguf, path: bundled, n_ctx: 4096, top_k: 20}\n")
    monkeypatch.setenv("CALLGATE_MODELS", str(path))
    oa, _ = load_model("oa")
    assert oa.model_kwargs == {"top_k": 3} and oa.request_timeout == 5  # type: ignore[attr-defined]
    local, _ = load_model("local")
    assert (local.n_ctx, local.top_k) == (4096, 20)  # type: ignore[attr-defined]


# The package warns on import that it is being sunset; users still have its ChatLlamaCpp, and
# this test is about how callgate treats it, not about the warning.
@pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset:DeprecationWarning")
def test_resolve_tool_format_community_llamacpp() -> None:
    # langchain-community is a dev dependency: a plain import, so a broken install fails
    from langchain_community.chat_models import llamacpp as community

    # model_construct skips loading weights; bind_tools(tool_choice="auto") raises first.
    model = community.ChatLlamaCpp.model_construct(model_path="unused.gguf")
    assert resolve_tool_format(model) == "react"
    assert binds_tools(model)  # a forced choice only: native may still be asked for


@pytest.mark.llama
def test_logit_bias_by_text_steers_a_grammar_choice(chat: ChatLlamaCppText) -> None:
    grammar = 'root ::= "yes" | "no"\n'
    pushed = {word: chat.invoke("Answer yes or no: is water wet?", grammar=grammar,
                                temperature=0.0, max_tokens=4,
                                logit_bias={word: 100.0}).text for word in ("yes", "no")}
    assert pushed == {"yes": "yes", "no": "no"}


def test_a_pattern_the_converter_cannot_read_constrains_nothing_but_does_not_crash() -> None:
    # llama-cpp-python's JSON-schema converter rejects "(?:" (an AssertionError): an MCP or
    # user tool with such a pattern still gets a grammar; validation checks the pattern.
    from callgate.models.grammar import args_grammar

    schema = {"type": "object", "properties": {"x": {"type": "string",
                                                     "pattern": "^(?:a|b)+$"}},
              "required": ["x"]}
    grammar = args_grammar(schema)
    assert "x-kv" in grammar and "(?:" not in grammar


@pytest.mark.llama
def test_the_grammar_asked_about_the_best_token_first_chooses_the_same_tokens(
        chat: ChatLlamaCppText, monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_cpp import Llama

    from callgate.models import greedy_grammar
    from callgate.models.greedy_grammar import GreedyGrammarLlama

    assert isinstance(chat.llama, GreedyGrammarLlama)
    monkeypatch.setenv("CALLGATE_FULL_GRAMMAR", "1")  # llama-cpp-python's own sampling
    full = ChatLlamaCppText(model_path=chat.model_path, max_tokens=32)
    monkeypatch.delenv("CALLGATE_FULL_GRAMMAR")  # the model keeps what it was made with
    assert full.full_grammar and type(full.llama) is Llama
    assert ChatLlamaCppText(model_path=chat.model_path, full_grammar=True).llama is full.llama
    refused = whole = 0
    best, best_of_all = greedy_grammar._Grammar.best, greedy_grammar._Grammar._best_of_all

    def counted(self: Any, logits: Any) -> int:
        nonlocal refused
        refused += 1
        return best(self, logits)

    def counted_whole(self: Any, logits: Any) -> int:
        nonlocal whole
        whole += 1
        return best_of_all(self, logits)

    monkeypatch.setattr(greedy_grammar._Grammar, "best", counted)
    monkeypatch.setattr(greedy_grammar._Grammar, "_best_of_all", counted_whole)
    weather = {"type": "object", "properties": {"city": {"type": "string"},
                                                "days": {"type": "integer"}},
               "required": ["city", "days"]}
    cases = [  # (messages, grammar, logit bias)
        ([SystemMessage(SYSTEM), HumanMessage("What is 17 * 23?")],
         choice_grammar(TOOLS, thought=False), None),
        ([SystemMessage(SYSTEM), HumanMessage("Say hello to me.")],
         choice_grammar(TOOLS, thought=False), {"Final": 3.0}),
        ([HumanMessage("Weather in Oslo for the next 3 days?"),
          AIMessage("Action: weather\nAction Input: ")], args_grammar(weather), None),
        # A grammar that refuses what the model would write first.
        ([HumanMessage("Say hello to me.")], 'root ::= "zebra " [a-z ]+\n', None),
    ]
    for messages, grammar, bias in cases:
        kwargs = {"grammar": grammar, "temperature": 0.0, "max_tokens": 24, "stop": []}
        if bias:
            kwargs["logit_bias"] = bias
        assert chat.invoke(messages, **kwargs).text == full.invoke(messages, **kwargs).text
    # Where the best token was refused, a runner-up settled some picks and the whole
    # vocabulary the others ("zebra": no runner-up is allowed), each as llama-cpp-python's.
    assert 0 < whole < refused


def test_the_greedy_pick_among_runners_up_is_the_whole_vocabularys_ties_included() -> None:
    # No model: the grammar is a set of allowed ids, and the whole-vocabulary pass is the
    # reference (the first id of highest logit among those allowed, as np.argmax picks).
    import numpy as np

    from callgate.models import greedy_grammar

    class SetGrammar(greedy_grammar._Grammar):
        def __init__(self, allowed: set[int]) -> None:
            self.allowed, self.whole = allowed, 0

        def allows(self, token: int) -> bool:
            return token in self.allowed

        def _best_of_all(self, logits: np.ndarray) -> int:
            self.whole += 1
            masked = np.where(np.isin(np.arange(len(logits)), list(self.allowed)), logits,
                              -np.inf)
            return int(np.argmax(masked))

    rng = np.random.default_rng(7)
    settled = 0
    for _ in range(2000):
        size = int(rng.integers(5, 60))
        logits = rng.integers(-3, 4, size).astype(np.single)  # few values: many ties
        allowed = {int(t) for t in rng.choice(size, int(rng.integers(0, size)), replace=False)}
        grammar = SetGrammar(allowed)
        assert grammar.best(logits) == SetGrammar(allowed)._best_of_all(logits)
        settled += grammar.whole == 0
    assert settled > 100  # many picks were settled among the runners-up


def test_a_gguf_spec_naming_no_gguf_file_is_refused_when_loaded(tmp_path: Path) -> None:
    # llama.cpp said only "Failed to load model from file", at the first request.
    page = tmp_path / "qwen.gguf"
    page.write_text("<!DOCTYPE html><html>")  # a model's web page saved under its name
    with pytest.raises(ValueError, match=r"qwen\.gguf is not a GGUF model file: it starts "
                                         r"with b'<!DO', not b'GGUF'"):
        load_model(f"gguf:{page}")


@pytest.mark.parametrize(("spec", "client_error"), [
    ("ollama:m@http://127.0.0.1:{port}", "httpx.ConnectError"),
    ("openai:m@http://127.0.0.1:{port}/v1", "openai.APIConnectionError")])
def test_a_server_not_running_is_named_with_its_url(
        spec: str, client_error: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # From Python it was the client's bare "[Errno 111] Connection refused" (httpx) or
    # "Connection error." (OpenAI): no word of which server.
    import httpx
    import openai

    import callgate
    from tests.servers import free_port

    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    port = free_port()
    agent = callgate.build_agent(spec.format(port=port), [])
    module, name = client_error.split(".")
    with pytest.raises(getattr({"httpx": httpx, "openai": openai}[module], name)) as caught:
        agent.invoke({"messages": [HumanMessage("hello")]})
    assert isinstance(caught.value, callgate.ModelServerUnreachableError)
    assert str(caught.value).startswith(f"cannot reach the model server at "
                                        f"http://127.0.0.1:{port}/")
    assert caught.value.url.startswith(f"http://127.0.0.1:{port}/")
    assert type(caught.value.__cause__).__name__ == type(caught.value).__name__


def test_a_refused_connection_keeps_its_errno() -> None:
    # Named with its URL, a ConnectionRefusedError (a model client that raises the socket's
    # own error) had lost its errno: ``e.errno == errno.ECONNREFUSED`` failed.
    import errno
    from types import SimpleNamespace

    import httpx  # noqa: F401 - the URL is read with httpx, where it is loaded

    from callgate.models.errors import unreachable

    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    model = SimpleNamespace(base_url="http://127.0.0.1:9/v1")
    named = unreachable(refused, model)
    assert isinstance(named, ConnectionRefusedError)
    assert (named.errno, named.strerror) == (errno.ECONNREFUSED, "Connection refused")
    assert str(named) == ("cannot reach the model server at http://127.0.0.1:9/v1: "
                          f"[Errno {errno.ECONNREFUSED}] Connection refused")


def test_a_model_error_stays_itself_where_langchain_core_has_no_connection_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ModelConnectionError came with langchain-core 1.6 (the package allows 1.0): importing
    # it turned every model error into an ImportError.
    import langchain_core.exceptions

    from callgate.models.errors import unreachable

    monkeypatch.delattr(langchain_core.exceptions, "ModelConnectionError", raising=False)
    assert unreachable(ValueError("a bad request"), object()) is None
