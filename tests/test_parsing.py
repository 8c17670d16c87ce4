"""parse_model_output: the shared corpus of real model outputs, then one test per rule."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from typing import Any

import pytest

from callgate.eval.outputs import PACKAGED_CORPUS
from callgate.parsing import ParsedOutput, parse_model_output, whole_json
from callgate.sanitize import sanitize

CORPUS = [
    json.loads(line)
    for line in PACKAGED_CORPUS.read_text(encoding="utf-8").splitlines()
    if line.strip()
]

INLINE_MARKERS = ("<tool_call>", "</tool_call>", "<think>", "</think>", "[TOOL_CALLS]", "<|", "✿")
LINE_MARKER_RE = re.compile(
    r"^[ \t]*(?:thought|action|action input|observation|final answer)[ \t]*:",
    re.IGNORECASE | re.MULTILINE,
)


def assert_no_markers(text: str) -> None:
    clean = sanitize(text)
    for marker in INLINE_MARKERS:
        assert marker.lower() not in clean.lower(), (marker, clean)
    assert not LINE_MARKER_RE.search(clean), clean


def assert_one_outcome(result: ParsedOutput, *, check_markers: bool = True) -> None:
    outcomes = [bool(result.calls), result.final_answer is not None, result.error is not None]
    assert outcomes.count(True) == 1, result
    for text in (result.final_answer, result.error):
        if text is not None:
            assert text.strip()
            if check_markers:
                assert_no_markers(text)


def calls(*items: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, "args": args} for name, args in items]


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_corpus(case: dict[str, Any]) -> None:
    result = parse_model_output(case["output"])
    expect = case["expect"]
    assert_one_outcome(result)
    if expect["kind"] == "tool_calls":
        assert result.calls == expect["calls"]
    elif expect["kind"] == "final":
        assert result.calls == []
        assert result.final_answer is not None
        assert expect["final_contains"] in result.final_answer
    else:
        assert expect["kind"] == "invalid"
        assert isinstance(result.error, str) and result.error
        assert result.calls == [] and result.final_answer is None


def test_corpus_is_loaded() -> None:
    assert len(CORPUS) >= 28


# --- one case per rule --------------------------------------------------------------------

WEB = ("web_search", {"query": "x"})

# (id, text, tool_names, expected calls, expected format)
CALL_CASES: list[tuple[str, str, list[str] | None, list[dict[str, Any]], str]] = [
    ("react-lowercase-no-space", 'action:web_search\naction input:{"query": "x"}', None,
     calls(WEB), "react"),
    ("react-upper", 'ACTION: web_search\nACTION INPUT: {"query": "x"}', None, calls(WEB), "react"),
    ("react-underscore-input", 'Action: web_search\nAction_Input: {"query": "x"}', None,
     calls(WEB), "react"),
    ("react-missing-input", "Thought: stats\nAction: system_stats", None,
     calls(("system_stats", {})), "react"),
    ("react-empty-input", "Action: system_stats\nAction Input:", None,
     calls(("system_stats", {})), "react"),
    ("react-empty-object", "Action: system_stats\nAction Input: {}", None,
     calls(("system_stats", {})), "react"),
    ("react-multiline-json", 'Action: web_search\nAction Input: {\n  "query": "x"\n}\n', None,
     calls(WEB), "react"),
    ("react-input-next-line", 'Action: web_search\nAction Input:\n{"query": "x"}', None,
     calls(WEB), "react"),
    ("react-fenced-input", 'Action: web_search\nAction Input: ```json\n{"query": "x"}\n```',
     None, calls(WEB), "react"),
    ("react-backticked-name", 'Action: `web_search`\nAction Input: {"query": "x"}', None,
     calls(WEB), "react"),
    # Chat-tuned models set the labels in markdown emphasis.
    ("react-bold-labels",
     'Thought: look it up\n**Action:** web_search\n**Action Input:** {"query": "x"}', None,
     calls(WEB), "react"),
    ("react-bold-before-colon", '**Thought**: look\n**Action**: web_search\n'
     '**Action Input**: {"query": "x"}', None, calls(WEB), "react"),
    ("react-italic-labels", '*Action:* web_search\n*Action Input:* {"query": "x"}', None,
     calls(WEB), "react"),
    ("react-bold-after-a-think-block-with-a-final-label",
     '<think>\nFinal Answer: not yet.\n</think>\n**Action:** web_search\n'
     '**Action Input:** {"query": "x"}', None, calls(WEB), "react"),
    ("react-bold-tool-without-input", "**Action:** web_search", ["web_search"],
     calls(("web_search", {})), "react"),
    # Markdown-minded models set their steps as list items or in a quote; the Action Input
    # after a mark had been lost (the call read with {}).
    ("react-list-items", '- Thought: look it up\n- Action: web_search\n'
     '- Action Input: {"query": "x"}', None, calls(WEB), "react"),
    ("react-numbered-items", '1. Thought: look\n2. Action: web_search\n'
     '3) Action Input: {"query": "x"}', None, calls(WEB), "react"),
    ("react-star-items", '* Action: web_search\n* Action Input: {"query": "x"}', None,
     calls(WEB), "react"),
    ("react-quoted", '> Thought: look\n> Action: web_search\n> Action Input: {"query": "x"}',
     None, calls(WEB), "react"),
    ("react-quoted-list-items-in-bold", '> - **Action:** web_search\n'
     '> - **Action Input:** {"query": "x"}', None, calls(WEB), "react"),
    ("react-list-item-tool-without-input", "- Action: web_search", ["web_search"],
     calls(("web_search", {})), "react"),
    # LangChain's structured chat agents: "Action:" over a JSON blob naming the tool.
    ("react-action-over-a-json-blob", 'Thought: look\nAction:\n```\n{"action": "web_search", '
     '"action_input": {"query": "x"}}\n```\nObservation: y', None, calls(WEB), "fenced_json"),
    ("react-action-with-an-inline-json-blob",
     'Action: {"action": "web_search", "action_input": {"query": "x"}}', None, calls(WEB),
     "json"),
    ("react-action-with-a-fenced-blob-on-its-line",
     'Action: ```{"action": "web_search", "action_input": {"query": "x"}}```', None,
     calls(WEB), "json"),
    ("react-action-with-a-json-fence-on-its-line",
     'Action: ```json {"action": "web_search", "action_input": {"query": "x"}}```\n'
     "Observation: y", None, calls(WEB), "json"),
    # Llama 3.1's custom tool format, and Gemma's tool code.
    ("llama-function-tag", 'Sure. <function=web_search>{"query": "x"}</function>', None,
     calls(WEB), "xml"),
    ("gemma-tool-code", '```tool_code\nprint(default_api.web_search(query="x"))\n```',
     ["web_search"], calls(WEB), "python_call"),
    # gpt-oss's harmony: a message to functions.name is a call (its recipient first too).
    ("harmony", "<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant<|channel|>"
     'commentary to=functions.web_search <|constrain|>json<|message|>{"query": "x"}<|call|>',
     None, calls(WEB), "harmony"),
    ("harmony-recipient-first", "<|start|>assistant to=functions.web_search<|channel|>"
     'commentary json<|message|>{"query": "x"}<|call|>', None, calls(WEB), "harmony"),
    ("harmony-react-in-the-final-channel", "<|channel|>final<|message|>Thought: look\n"
     'Action: web_search\nAction Input: {"query": "x"}', None, calls(WEB), "react"),
    # DeepSeek's own call tokens (R1/V3: "function", a fenced object; V3.1: name, object).
    ("deepseek", 'Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>'
     'web_search\n```json\n{"query": "x"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', None,
     calls(WEB), "deepseek"),
    ("deepseek-v31-two-calls", '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>web_search<｜tool▁sep｜>'
     '{"query": "x"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>system_stats<｜tool▁sep｜>{}'
     '<｜tool▁call▁end｜><｜tool▁calls▁end｜>', None, calls(WEB, ("system_stats", {})),
     "deepseek"),
    # llama-cpp-python's chatml-function-calling format: "functions.name:", the object after.
    ("functions-label", 'functions.web_search:\n{"query": "x"}', None, calls(WEB), "functions"),
    ("functions-labels-in-a-row", 'functions.web_search:\n{"query": "x"}\nfunctions.'
     "system_stats:\n{}", None, calls(WEB, ("system_stats", {})), "functions"),
    ("function-label-singular-same-line", 'function.web_search: {"query": "x"}', None,
     calls(WEB), "functions"),
    ("functions-label-alone", "functions.web_search:", None, calls(("web_search", {})),
     "functions"),
    # Functionary's formats, as a server without its handler leaves them in the text: v3.2's
    # ">>>name" over the object (after prose too; the first call has no ">>>"), v2's
    # "<|recipient|>name" and "<|content|>".
    ("functionary-v32-after-prose", 'Let me check.>>>web_search\n{"query": "x"}', None,
     calls(WEB), "functionary"),
    ("functionary-v32-first-call-unmarked", 'web_search\n{"query": "x"}>>>system_stats\n{}',
     ["web_search", "system_stats"], calls(WEB, ("system_stats", {})), "functionary"),
    ("functionary-v32-text-then-call", '>>>all\nLet me look.>>>web_search\n{"query": "x"}',
     None, calls(WEB), "functionary"),
    ("functionary-v32-name-alone", ">>>system_stats\n", None, calls(("system_stats", {})),
     "functionary"),
    ("functionary-v32-known-tool", 'Sure.\n>>>WEB_SEARCH\n{"query": "x"}', ["web_search"],
     calls(("WEB_SEARCH", {"query": "x"})), "functionary"),
    # A name no tool has, over an object: a call, which validation sends back (a review:
    # it had reached the user as the answer's text).
    ("functionary-v32-unknown-tool", '>>>get_weather\n{"city": "Paris"}', ["web_search"],
     calls(("get_weather", {"city": "Paris"})), "functionary"),
    ("functionary-v2", '<|from|>assistant\n<|recipient|>web_search\n<|content|>{"query": "x"}'
     "<|stop|>", None, calls(WEB), "functionary"),
    # An Action after prose on its line, as the sanitizer takes it for markup.
    ("react-action-after-prose", "I will check. Action: web_search", ["web_search"],
     calls(("web_search", {})), "react"),
    ("react-action-after-prose-input-next-line",
     'Sure! Action: web_search\nAction Input: {"query": "x"}', None, calls(WEB), "react"),
    ("react-input-on-the-action-line", 'Action: web_search Action Input: {"query": "x"}',
     None, calls(WEB), "react"),
    ("react-both-after-prose", 'Let me look. Action: web_search Action Input: {"query": "x"}',
     None, calls(WEB), "react"),
    ("react-apostrophe-before-the-action",
     'Let\'s search. Action: web_search Action Input: {"query": "x"}', None, calls(WEB),
     "react"),
    ("react-two-calls-on-one-line", 'Action: web_search Action Input: {"query": "x"} '
     'Action: web_search Action Input: {"query": "y"}', None,
     calls(WEB, ("web_search", {"query": "y"})), "react"),
    ("react-a-thought-naming-an-action-is-no-call",
     'Thought: as the last Action: web_search\nAction: web_search\nAction Input: {"query": "x"}',
     ["web_search"], calls(WEB), "react"),
    ("react-action-words-in-a-string-with-a-raw-newline",
     'Action: web_search\nAction Input: {"query": "a\nDone. Action: web_search\n"}',
     ["web_search"], calls(("web_search", {"query": "a\nDone. Action: web_search"})), "react"),
    ("react-action-words-inside-an-argument",
     'Action: web_search\nAction Input: {\n  "query": "Next. Action: web_search"\n}',
     ["web_search"], calls(("web_search", {"query": "Next. Action: web_search"})), "react"),
    ("react-json5-unquoted-keys", "Action: web_search\nAction Input: {query: 'x',}", None,
     calls(WEB), "react"),
    ("react-python-literals", "Action: f\nAction Input: {'a': True, 'b': None, 'c': False}",
     None, calls(("f", {"a": True, "b": None, "c": False})), "react"),
    ("react-json-string-input", 'Action: web_search\nAction Input: "{\\"query\\": \\"x\\"}"',
     None, calls(WEB), "react"),
    ("react-python-syntax-action", 'Action: web_search(query="x")', None, calls(WEB), "react"),
    ("react-nested-args",
     'Action: search\nAction Input: {"filter": {"tags": ["a", "b"], "range": {"from": 1}}}',
     None, calls(("search", {"filter": {"tags": ["a", "b"], "range": {"from": 1}}})), "react"),
    ("react-braces-in-strings",
     'Action: search\nAction Input: {"query": "use {curly} and } or ] here", "n": 1}', None,
     calls(("search", {"query": "use {curly} and } or ] here", "n": 1})), "react"),
    ("react-escaped-quote",
     'Action: search\nAction Input: {"query": "say \\"hi\\" {", "n": 2}', None,
     calls(("search", {"query": 'say "hi" {', "n": 2})), "react"),
    ("react-crlf-json5", "Thought: x\r\nAction: search\r\nAction Input: {'q': 1,}\r\n", None,
     calls(("search", {"q": 1})), "react"),
    ("react-two-actions", "Action: a\nAction Input: {}\nAction: b\nAction Input: {\"x\": 1}",
     None, calls(("a", {}), ("b", {"x": 1})), "react"),
    ("react-action-then-final",
     'Action: web_search\nAction Input: {"query": "x"}\nFinal Answer: made up', None,
     calls(WEB), "react"),
    ("react-observation-then-action",
     "Action: a\nAction Input: {}\nObservation: fake\nAction: b\nAction Input: {}", None,
     calls(("a", {})), "react"),
    ("react-unknown-tool", 'Action: no_such_tool\nAction Input: {"query": "x"}', ["web_search"],
     calls(("no_such_tool", {"query": "x"})), "react"),
    ("xml-three", "".join(f'<tool_call>{{"name": "t{k}", "arguments": {{}}}}</tool_call>\n'
                          for k in range(3)), None, calls(("t0", {}), ("t1", {}), ("t2", {})),
     "xml"),
    ("xml-unclosed-between",
     '<tool_call>{"name": "a", "arguments": {}}\n<tool_call>{"name": "b", "arguments": {}}',
     None, calls(("a", {}), ("b", {})), "xml"),
    ("xml-uppercase-tag", '<TOOL_CALL>{"name": "a", "arguments": {}}</TOOL_CALL>', None,
     calls(("a", {})), "xml"),
    ("xml-tool-args", '<tool_call>{"tool": "web_search", "args": {"query": "x"}}</tool_call>',
     None, calls(WEB), "xml"),
    ("xml-fenced-inside",
     '<tool_call>\n```json\n{"name": "web_search", "arguments": {"query": "x"}}\n```\n'
     "</tool_call>", None, calls(WEB), "xml"),
    ("xml-qwen3-coder",
     "<tool_call>\n<function=web_search>\n<parameter=query>\nx\n</parameter>\n"
     "<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>", None,
     calls(("web_search", {"query": "x", "n": 3})), "xml"),
    ("xml-then-final",
     '<tool_call>{"name": "a", "arguments": {}}</tool_call>\nFinal Answer: guessed', None,
     calls(("a", {})), "xml"),
    ("xml-then-fake-response",
     '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_response>ok</tool_response>'
     '\n<tool_call>{"name": "b", "arguments": {}}</tool_call>', None, calls(("a", {})), "xml"),
    ("fenced-no-language", '```\n{"name": "web_search", "arguments": {"query": "x"}}\n```', None,
     calls(WEB), "fenced_json"),
    ("fenced-list",
     '```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]\n```',
     None, calls(("a", {}), ("b", {"x": 1})), "fenced_json"),
    ("json-arguments-string", '{"name": "web_search", "arguments": "{\\"query\\": \\"x\\"}"}',
     None, calls(WEB), "json"),
    ("json-empty-arguments-string", '{"name": "stats", "arguments": ""}', None,
     calls(("stats", {})), "json"),
    ("json-list", '[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"x": 1}}]',
     None, calls(("a", {}), ("b", {"x": 1})), "json"),
    ("json-openai-function",
     '{"type": "function", "function": {"name": "web_search", "arguments": "{\\"query\\": '
     '\\"x\\"}"}}', None, calls(WEB), "json"),
    ("json-tool-calls",
     '{"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "web_search", '
     '"arguments": {"query": "x"}}}, {"function": {"name": "b", "arguments": "{}"}}]}', None,
     calls(WEB, ("b", {})), "json"),
    ("json-langchain-action", '{"action": "web_search", "action_input": {"query": "x"}}', None,
     calls(WEB), "json"),
    ("json-braces-in-strings",
     'Calling: {"name": "echo", "arguments": {"text": "a } b { c ] \\" d"}} now.', None,
     calls(("echo", {"text": 'a } b { c ] " d'})), "json"),
    ("json-nested-args",
     '{"name": "q", "arguments": {"where": {"and": [{"a": 1}, {"b": {"c": [1, 2]}}]}}}', None,
     calls(("q", {"where": {"and": [{"a": 1}, {"b": {"c": [1, 2]}}]}})), "json"),
    ("json-single-quotes", "{'name': 'web_search', 'arguments': {'query': 'x'}}", None,
     calls(WEB), "json"),
    ("json-known-name-dict", '{"web_search": {"query": "x"}}', ["web_search"], calls(WEB),
     "json"),
    ("json-known-name-only", '{"name": "system_stats"}', ["system_stats"],
     calls(("system_stats", {})), "json"),
    ("json-after-special-token", '{"name": "a", "arguments": {}}<|eot_id|>', None,
     calls(("a", {})), "json"),
    ("mistral-named", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', None,
     calls(("get_weather", {"city": "Paris"})), "mistral"),
    ("mistral-two", '[TOOL_CALLS] [{"name": "a", "arguments": {}}, {"name": "b", '
     '"arguments": {"x": [1]}}]', None, calls(("a", {}), ("b", {"x": [1]})), "mistral"),
    ("python-tag-two", '<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", '
     '"parameters": {"x": 1}}<|eom_id|>', None, calls(("a", {}), ("b", {"x": 1})),
     "python_tag"),
    ("python-tag-builtin", '<|python_tag|>brave_search.call(query="x")<|eom_id|>', None,
     calls(("brave_search", {"query": "x"})), "python_tag"),
    ("qwen-two", "✿FUNCTION✿: a\n✿ARGS✿: {}\n✿FUNCTION✿: b\n✿ARGS✿: {\"x\": 1}", None,
     calls(("a", {}), ("b", {"x": 1})), "qwen"),
    ("python-call", 'web_search(query="x")', ["web_search"], calls(WEB), "python_call"),
    ("python-call-literals", "f(a=1, b=[1, 2], c={'k': None}, d=-2.5, e=True, t=(1, 2))",
     ["f"], calls(("f", {"a": 1, "b": [1, 2], "c": {"k": None}, "d": -2.5, "e": True,
                         "t": [1, 2]})), "python_call"),
    ("python-call-dotted", "[math.factorial(number=5)]", ["math.factorial"],
     calls(("math.factorial", {"number": 5})), "python_call"),
    ("python-call-bfcl-list", "[math.factorial(number=5), math.gcd(a=12, b=18)]",
     ["math.factorial", "math.gcd"],
     calls(("math.factorial", {"number": 5}), ("math.gcd", {"a": 12, "b": 18})),
     "python_call"),
    ("python-call-in-prose", 'I will run get_time(zone="UTC") now.', ["get_time"],
     calls(("get_time", {"zone": "UTC"})), "python_call"),
    ("python-call-no-args", "system_stats()", ["system_stats"], calls(("system_stats", {})),
     "python_call"),
    ("think-then-call",
     '<think>maybe <tool_call>{"name": "bad", "arguments": {}}</tool_call></think>\n'
     '<tool_call>{"name": "good", "arguments": {}}</tool_call>', None, calls(("good", {})),
     "xml"),
    ("unopened-think-then-call", 'I think Action: bad\n</think>\nAction: good\nAction Input: {}',
     None, calls(("good", {})), "react"),
]


@pytest.mark.parametrize(
    ("text", "tool_names", "expected", "fmt"),
    [case[1:] for case in CALL_CASES],
    ids=[case[0] for case in CALL_CASES],
)
def test_calls(
    text: str, tool_names: list[str] | None, expected: list[dict[str, Any]], fmt: str
) -> None:
    result = parse_model_output(text, tool_names)
    assert_one_outcome(result)
    assert result.calls == expected
    assert result.format == fmt


# (id, text, tool_names, substring of the final answer, expected format)
FINAL_CASES: list[tuple[str, str, list[str] | None, str, str]] = [
    ("final-lowercase", "final answer:42", None, "42", "final"),
    ("final-crlf", "Thought: ok\r\nFinal Answer: line one\r\nline two\r\n", None,
     "line one\nline two", "final"),
    ("final-on-thought-line", "Thought: I know it. Final Answer: 42", None, "42", "final"),
    ("final-action-in-a-json-blob", 'Thought: done\nAction:\n```json\n{\n  "action": "Final '
     'Answer",\n  "action_input": "It is 42"\n}\n```', None, "It is 42", "final"),
    ("final-action-as-a-json-line", '{"action": "Final Answer", "action_input": "It is 42"}',
     None, "It is 42", "final"),
    ("final-action-in-a-fenced-blob-on-its-line",
     'Action: ```{"action": "Final Answer", "action_input": "It is 42"}```', None, "It is 42",
     "final"),
    ("final-before-xml",
     'Final Answer: done.\n<tool_call>{"name": "a", "arguments": {}}</tool_call>', None,
     "done.", "final"),
    ("final-before-python-call", "Final Answer: call f(a=1) yourself", ["f"],
     "call f(a=1) yourself", "final"),
    ("final-keeps-json", 'Final Answer: {"name": "web_search", "arguments": {}}', None,
     '{"name": "web_search", "arguments": {}}', "final"),
    ("final-markup-removed",
     "Final Answer: Hi<think>hmm</think> there<|im_end|>", None, "Hi there", "final"),
    ("qwen-return", "✿RETURN✿: The answer is 7.", None, "The answer is 7.", "final"),
    ("react-final-answer-action", 'Action: Final Answer\nAction Input: "Paris"', None, "Paris",
     "final"),
    ("think-then-final", "<think>Action: web_search</think>Final Answer: 4", None, "4", "final"),
    ("unopened-think", "Action: web_search is what I'd do\n</think>\nThe answer is 4.", None,
     "The answer is 4.", "prose"),
    ("prose-with-data-json", 'The record is {"name": "Alice", "age": 31}.', None,
     '{"name": "Alice", "age": 31}', "prose"),
    ("prose-special-tokens", "<|im_start|>assistant\nParis.<|im_end|>", None, "Paris.", "prose"),
    ("python-call-needs-tool-names", 'web_search(query="x")', None, 'web_search(query="x")',
     "prose"),
    ("python-call-unknown-name", 'other(query="x")', ["web_search"], 'other(query="x")', "prose"),
    ("python-call-not-literal", "Use web_search(query) to look it up.", ["web_search"],
     "web_search(query)", "prose"),
    ("known-name-dict-needs-tool-names", '{"web_search": {"query": "x"}}', None, "web_search",
     "prose"),
    ("name-only-needs-tool-names", '{"name": "system_stats"}', None, "system_stats", "prose"),
    ("code-block-not-a-call", "Use this:\n```python\nprint(data)\n```", ["print"],
     "print(data)", "prose"),
    # A line naming no tool over an object is the answer's text; so is Python's prompt.
    ("first-line-names-no-tool", 'Paris\n{"q": 1}', ["web_search"], 'Paris\n{"q": 1}',
     "prose"),
    ("python-prompt-not-a-call", '>>> web_search\n{"q": 1}', None, '>>> web_search', "prose"),
]


@pytest.mark.parametrize(
    ("text", "tool_names", "contains", "fmt"),
    [case[1:] for case in FINAL_CASES],
    ids=[case[0] for case in FINAL_CASES],
)
def test_final(text: str, tool_names: list[str] | None, contains: str, fmt: str) -> None:
    result = parse_model_output(text, tool_names)
    assert_one_outcome(result)
    assert result.calls == []
    assert result.final_answer is not None and contains in result.final_answer
    assert result.format == fmt


# Issue #12: (id, text, tool_names, the exact final answer). Echoed observations are not
# the answer, and prose that looks like markup keeps its words.
KEPT_CASES: list[tuple[str, str, list[str] | None, str]] = [
    ("echoed-observation-then-final",
     "Observation: The weather in Paris is 18°C.\nThought: I now know the final answer\n"
     "Final Answer: It is 18°C in Paris.", None, "It is 18°C in Paris."),
    ("echoed-observation-json", 'Observation: {"temp": 18,\n "unit": "C"}\nFinal Answer: 18 °C',
     None, "18 °C"),
    ("echoed-observation-directly-before-final", "Observation: 42\nFinal Answer: 42", None,
     "42"),
    ("echoed-tool-response", '<tool_response>{"temp": 18}</tool_response>\nFinal Answer: 18.',
     None, "18."),
    ("echoed-observation-then-prose", "Observation: result is 5\nThe answer is 5.", None,
     "The answer is 5."),
    ("bold-final-answer-keeps-its-own-emphasis",
     "**Thought:** done\n**Final Answer:** It is **4**.\n**Action:** Ana sends the budget.",
     ["web_search"], "It is **4**.\n**Action:** Ana sends the budget."),
    ("bold-prose-label-is-no-label", "**Action items:** none", None, "**Action items:** none"),
    ("bold-notes-without-react-stay-prose", "Meeting notes\n\n**Action:** Approve\n"
     "**Owner:** Bob", ["web_search"], "Meeting notes\n\n**Action:** Approve\n**Owner:** Bob"),
    ("listed-final-answer", "- Thought: done\n- Final Answer: It is **4**.\n- Action: x",
     ["web_search"], "It is **4**.\n- Action: x"),
    ("listed-notes-without-react-stay-prose", "Notes\n- Action: approve the budget\n"
     "- Owner: Bob", ["web_search"], "Notes\n- Action: approve the budget\n- Owner: Bob"),
    ("numbered-answer-keeps-its-marks", "Final Answer: Steps:\n1. Boil water.\n2. Action: "
     "stir.", ["web_search"], "Steps:\n1. Boil water.\n2. Action: stir."),
    ("harmony-final-channel", "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant"
     "<|channel|>final<|message|>It is 42.<|return|>", None, "It is 42."),
    ("bold-final-on-a-bold-thought-line", "**Thought:** sure. **Final Answer:** 42", None, "42"),
    ("action-after-prose-naming-no-tool", "Minutes. Action: follow up with Bob.",
     ["web_search"], "Minutes. Action: follow up with Bob."),
    ("action-after-prose-inside-the-answer", "Final Answer: I will check. Action: web_search",
     ["web_search"], "I will check."),
    ("action-input-in-an-answer-about-the-format",
     'Final Answer: Call it with Action Input: {"query": "x"} and wait.', ["web_search"],
     'Call it with Action Input: {"query": "x"} and wait.'),
    ("minutes-in-final-answer",
     "Thought: done\nFinal Answer: Minutes:\nAction: Ana sends the budget.\n"
     "Observation: the team agrees.", ["web_search"],
     "Minutes:\nAction: Ana sends the budget.\nObservation: the team agrees."),
    ("minutes-as-prose", "Notes\nObservation: the team agrees.\nEnd", None,
     "Notes\nObservation: the team agrees.\nEnd"),
    ("tool-call-tag-in-final", "Final Answer: Qwen wraps calls in <tool_call> tags; the rest "
     "stays.", None, "Qwen wraps calls in <tool_call> tags; the rest stays."),
    ("think-tag-in-final", "Final Answer: Reasoning goes in <think> tags, then the answer.",
     None, "Reasoning goes in <think> tags, then the answer."),
    ("mistral-token-in-final", "Final Answer: Mistral writes [TOOL_CALLS] before the list.",
     None, "Mistral writes [TOOL_CALLS] before the list."),
    ("tool-call-tag-in-prose", "Qwen wraps calls in <tool_call> tags.", None,
     "Qwen wraps calls in <tool_call> tags."),
    ("think-tag-in-prose", "Reasoning models use <think> tags. The rest stays.", None,
     "Reasoning models use <think> tags. The rest stays."),
    ("mistral-token-in-prose", "Mistral writes [TOOL_CALLS] first, then the JSON.", None,
     "Mistral writes [TOOL_CALLS] first, then the JSON."),
    ("tool-response-tag-in-prose", "An echo comes in a <tool_response> tag; it goes on.", None,
     "An echo comes in a <tool_response> tag; it goes on."),
    # A structured chat agent's "Final Answer" envelope written after the label too.
    ("final-answer-envelope-after-the-label", 'Final Answer: {"action": "Final Answer", '
     '"action_input": "It is 4."}', None, "It is 4."),
    ("final-answer-fenced-envelope-after-the-label", 'Thought: done\nFinal Answer: ```json\n'
     '{"action": "Final Answer", "action_input": "It is 4."}\n```', None, "It is 4."),
    ("final-answer-other-json-stays", 'Final Answer: {"a": 1}', None, '{"a": 1}'),
    # ... or on an "Action:" line after the answer's own text, which the answer keeps.
    ("final-answer-then-structured-chat-envelope", 'Final Answer: It is 4.\nAction: ```'
     '{"action": "Final Answer", "action_input": "It is 4."}```', None, "It is 4."),
    # Functionary's text message: the recipient "all" (v3.2's first without ">>>").
    ("functionary-v32-all", ">>>all\nIt is sunny.", None, "It is sunny."),
    ("functionary-v32-all-first", "all\nIt is sunny.", ["web_search"], "It is sunny."),
    ("functionary-v2-all", "<|from|>assistant\n<|recipient|>all\n<|content|>It is sunny."
     "<|stop|>", None, "It is sunny."),
    # With known tools, ">>>" before a word that names none, after an operand or over no
    # object, is text: code, a quoted reply.
    ("functionary-head-in-js", "let r = a>>>b\n{ x: 1 }", ["web_search"],
     "let r = a>>>b\n{ x: 1 }"),
    ("functionary-head-in-a-quoted-reply", "Quoted reply:\n>>>Thanks\n", ["web_search"],
     "Quoted reply:\n>>>Thanks"),
    # A word or a tool's name alone on the first line, nothing after it, is the answer.
    ("all-alone-as-the-answer", "Final Answer: all\n", None, "all"),
    ("tool-name-alone-as-the-answer", "Final Answer: web_search\n", ["web_search"],
     "web_search"),
    ("tool-name-over-prose-as-the-answer", "web_search\nis the tool to use.", ["web_search"],
     "web_search\nis the tool to use."),
]


@pytest.mark.parametrize(
    ("text", "tool_names", "expected"),
    [case[1:] for case in KEPT_CASES],
    ids=[case[0] for case in KEPT_CASES],
)
def test_final_keeps_prose(text: str, tool_names: list[str] | None, expected: str) -> None:
    result = parse_model_output(text, tool_names)
    assert_one_outcome(result, check_markers=False)
    assert result.final_answer == expected


def test_echoed_observation_then_a_call() -> None:
    text = ('Observation: 18 °C\nThought: and Rome?\nAction: web_search\n'
            'Action Input: {"query": "Rome weather"}')
    assert parse_model_output(text).calls == calls(("web_search", {"query": "Rome weather"}))


def test_invented_observation_after_a_call_is_cut() -> None:
    text = ('Action: web_search\nAction Input: {"query": "x"}\nObservation: made up\n'
            "Final Answer: made up")
    result = parse_model_output(text)
    assert result.calls == calls(("web_search", {"query": "x"})) and result.final_answer is None


def test_final_answer_label_and_markup_are_stripped() -> None:
    result = parse_model_output("Thought: done\nFinal Answer:   The disk is 40% full.  \n")
    assert result.final_answer == "The disk is 40% full."
    assert result.thought == "done"


# (id, text, tool_names, substring of the error)
ERROR_CASES: list[tuple[str, str, list[str] | None, str]] = [
    ("whitespace-only", " \n\t\r\n ", None, "empty"),
    ("unclosed-think-at-start", "<think>I should call web_search about", None, "reasoning"),
    ("think-only", "<think>hmm</think>\n", None, "reasoning"),
    ("not-json", "Action: web_search\nAction Input: python tutorials", None, "JSON object"),
    ("action-over-a-blob-that-is-no-call", "Action:\n```\nnot a call\n```", None,
     "only the name of one tool"),
    ("harmony-cut-off", "<|channel|>commentary to=functions.web_search <|constrain|>json"
     '<|message|>{"query": "x', None, "incomplete"),
    ("functions-label-cut-off", 'functions.web_search:\n{"query": "x', None, "incomplete"),
    ("functionary-cut-off", '>>>web_search\n{"query": "x', None, "incomplete"),
    # The issue's native-path answer: a label over an HTML-escaped object that is no JSON.
    ("functions-label-over-no-object", "function.get_weather:\n{&#34;city=Celsius &#34;}",
     None, "JSON object"),
    ("deepseek-cut-off", '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>'
     'web_search\n```json\n{"query": "x', None, "incomplete"),
    ("not-json-shows-example", "Action: web_search\nAction Input: python", None,
     'Action Input: {"query": "..."}'),
    ("input-is-array", "Action: web_search\nAction Input: [1, 2]", None, "JSON object"),
    ("input-is-number", "Action: web_search\nAction Input: 3", None, "JSON object"),
    ("truncated-in-string", 'Action: web_search\nAction Input: {"query": "python asy', None,
     "incomplete"),
    ("truncated-after-comma", 'Action: web_search\nAction Input: {"query": "x", ', None,
     "incomplete"),
    ("truncated-nested", 'Action: s\nAction Input: {"filter": {"tags": ["a", "b"]', None,
     "incomplete"),
    ("truncated-single-quote", "Action: s\nAction Input: {'query': 'pyth", None, "incomplete"),
    ("truncated-xml", '<tool_call>{"name": "web_search", "arguments": {"query": "py', None,
     "incomplete"),
    ("truncated-inline", 'Sure: {"name": "web_search", "arguments": {"query": "py', None,
     "incomplete"),
    ("truncated-fenced", '```json\n{"name": "web_search", "arguments": {"query": "py', None,
     "incomplete"),
    ("truncated-arguments-string",
     '{"name": "web_search", "arguments": "{\\"query\\": \\"py"}', None, "incomplete"),
    ("truncated-mistral", '[TOOL_CALLS] [{"name": "a", "arguments": {"q": "x"', None,
     "incomplete"),
    ("truncated-qwen", '✿FUNCTION✿: a\n✿ARGS✿: {"q": "x', None, "incomplete"),
    ("truncated-python-call", 'web_search(query="pyth', ["web_search"], "incomplete"),
    ("python-call-positional", "math.factorial(5)", ["math.factorial"], "keyword arguments"),
    ("bad-action-name", "Action: I will search the web\nAction Input: {}", None, "tool"),
    ("input-without-action", 'Thought: x\nAction Input: {"query": "x"}', None, "Action"),
    ("thought-only", "Thought: I should think more.", None, "Thought"),
    ("empty-final", "Final Answer:   ", None, "Final Answer"),
    ("arguments-not-object", '{"name": "a", "arguments": [1, 2]}', None, "JSON object"),
    ("empty-xml", "<tool_call></tool_call>", None, "empty"),
    ("xml-not-a-call", '<tool_call>{"query": "x"}</tool_call>', None, "name"),
    ("error-before-good-call",
     'Action: a\nAction Input: oops\nAction: b\nAction Input: {"x": 1}', None, "JSON object"),
    ("only-special-tokens", "<|im_start|><|im_end|>", None, "empty"),
]


@pytest.mark.parametrize(
    ("text", "tool_names", "contains"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_errors(text: str, tool_names: list[str] | None, contains: str) -> None:
    result = parse_model_output(text, tool_names)
    assert_one_outcome(result)
    assert result.calls == [] and result.final_answer is None
    assert result.error and contains in result.error


def test_truncated_json_is_never_repaired_into_a_call() -> None:
    full = 'Action: web_search\nAction Input: {"query": "python async", "max_results": 3}'
    for cut in range(full.index("{") + 1, len(full) - 1):
        result = parse_model_output(full[:cut])
        assert result.calls == [], full[:cut]
        assert result.error, full[:cut]
    assert parse_model_output(full).calls == calls(
        ("web_search", {"query": "python async", "max_results": 3})
    )


def test_error_messages_are_plain_sentences() -> None:
    long_input = "Action: s\nAction Input: " + "word " * 100
    error = parse_model_output(long_input).error
    assert error is not None and len(error) < 400
    assert "<" not in error and "\n" not in error


def test_thought_field() -> None:
    assert parse_model_output("Thought: need data\nAction: a").thought == "need data"
    assert parse_model_output("<think>deep</think>Final Answer: 1").thought == "deep"
    assert parse_model_output("Just prose.").thought is None
    xml = parse_model_output('Let me check.\n<tool_call>{"name": "a", "arguments": {}}</tool_call>')
    assert xml.thought == "Let me check."


def test_result_is_frozen_and_has_kind() -> None:
    result = parse_model_output("Final Answer: 1")
    assert result.kind == "final"
    assert parse_model_output("Action: a").kind == "tool_calls"
    assert parse_model_output("").kind == "invalid"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.final_answer = "2"  # type: ignore[misc]


def test_tool_names_accepts_any_iterable() -> None:
    result = parse_model_output("f(x=1)", (name for name in ["f"]))
    assert result.calls == calls(("f", {"x": 1}))


def test_random_markup_always_gives_exactly_one_outcome() -> None:
    rng = random.Random(3)
    pieces = [
        "<think>", "</think>", "<tool_call>", "</tool_call>", "Thought:", "Action: a",
        "Action Input:", "Observation:", "Final Answer:", "[TOOL_CALLS]", "<|python_tag|>",
        "✿FUNCTION✿:", "✿ARGS✿:", "{", "}", "[", "]", "(", ")", '"', "'", "\n", " ", "x",
        '{"name": "a", "arguments": {}}', '{"q": 1}', "f(a=1)", "```json\n", "```",
    ]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 15)))
        # Random fragments can leave a mid-line "✿FUNCTION✿" that sanitize rightly keeps.
        assert_one_outcome(parse_model_output(text, ["f"]), check_markers=False)


def test_action_and_final_order() -> None:
    action_first = 'Action: a\nAction Input: {}\nThought: done\nFinal Answer: x'
    final_first = 'Final Answer: x\nAction: a\nAction Input: {}'
    assert parse_model_output(action_first).calls == calls(("a", {}))
    assert parse_model_output(final_first).final_answer == "x"


@pytest.mark.parametrize("thought", [
    "I should check whether the final answer: 42 is right.",
    "is the FINAL ANSWER: 42? Let me check.",
    "a **final answer:** needs a check.",
])
def test_a_final_answer_in_a_thoughts_words_is_no_label(thought: str) -> None:
    # Later on a Thought line the label counts only as ReAct writes it, "Final Answer:".
    text = f"Thought: {thought}\nAction: Calculator\nAction Input: 6*7"
    parsed = parse_model_output(text, ["Calculator"], single_inputs={"Calculator": "expression"})
    assert parsed.calls == calls(("Calculator", {"expression": "6*7"}))
    assert parse_model_output("Thought: done. Final Answer: 42").final_answer == "42"


SINGLE = {"web_search": "query"}


@pytest.mark.parametrize(("text", "args"), [
    ("Action: web_search\nAction Input: latest Python release", {"query": "latest Python release"}),
    ('Action: web_search\nAction Input: "latest Python release"',
     {"query": "latest Python release"}),
    ("Action: web_search\nAction Input: 'a b'\nObservation: x", {"query": "a b"}),
    ('Action: web_search\nAction Input: {"query": "x"}', {"query": "x"}),
    ('Action: web_search\nAction Input: "{\\"query\\": \\"x\\"}"', {"query": "x"}),
    ("Action: web_search\nAction Input:", {}),
    # The argument's name written before its value, as a key.
    ("Action: web_search\nAction Input: query=latest Python release",
     {"query": "latest Python release"}),
    ('Action: web_search\nAction Input: Query: "latest Python"', {"query": "latest Python"}),
    ("Action: web_search\nAction Input: note: the latest", {"query": "note: the latest"}),
    ("Action: web_search\nAction Input: query=", {"query": "query="}),
    ('Action: web_search\nAction Input: query="say \\"hi\\""', {"query": 'say \\"hi\\"'}),
    # The name goes only before one value: a quoted string or a line.
    ('Action: web_search\nAction Input: query="a" or "b"', {"query": 'query="a" or "b"'}),
    ("Action: web_search\nAction Input: Query: 'A cat' and 'a dog'",
     {"query": "Query: 'A cat' and 'a dog'"}),
    ("Action: web_search\nAction Input: query = 5\nprint(query)",
     {"query": "query = 5\nprint(query)"}),
])
def test_plain_text_input_is_the_tools_one_text_argument(text: str, args: dict[str, Any]) -> None:
    parsed = parse_model_output(text, ["web_search", "calculator"], single_inputs=SINGLE)
    assert parsed.calls == [{"name": "web_search", "args": args}] and parsed.error is None


@pytest.mark.parametrize("text", [
    "Action: calculator\nAction Input: 2+2",  # not a tool of one text argument
    "Action: web_search\nAction Input: [1, 2]",  # a list is no text
])
def test_plain_text_input_stays_an_error_elsewhere(text: str) -> None:
    parsed = parse_model_output(text, ["web_search", "calculator"], single_inputs=SINGLE)
    assert parsed.calls == [] and "must be a JSON object" in (parsed.error or "")
    assert parse_model_output("Action: web_search\nAction Input: x").error


@pytest.mark.parametrize(("text", "whole"), [
    ('{"name": "add", "arguments": {"a": 2}}', True),
    ('```json\n{"name": "add"}\n```', True),
    ("[{'name': 'add'}]", True),  # JSON5, as the parser reads it
    ('Here: {"name": "add"}', False),
    ('{"name": "add"} and more', False),
    ('{"name": "add"', False),
    ("42", False),
])
def test_whole_json(text: str, whole: bool) -> None:
    assert whole_json(text) is whole
