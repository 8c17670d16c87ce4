"""sanitize and StreamSanitizer: markup removal, prose left alone, streaming == whole."""

from __future__ import annotations

import json
import random
import re
import time

import pytest

from callgate.eval.outputs import PACKAGED_CORPUS
from callgate.parsing import unwrapped_answer
from callgate.sanitize import StreamSanitizer, sanitize

CORPUS_OUTPUTS = [
    json.loads(line)["output"]
    for line in PACKAGED_CORPUS.read_text(encoding="utf-8").splitlines()
    if line.strip()
]

# (id, text, expected sanitize(text))
REMOVAL_CASES = [
    ("think", "<think>secret plan</think>The answer.", "The answer."),
    ("think-multiline", "<think>\nstep 1\nstep 2\n</think>\n\nThe answer.", "The answer."),
    ("think-unclosed-at-start", "<think>secret to the end", ""),
    ("think-unclosed-after-markup", "<|im_start|>assistant\nThought: x\n<think>secret", ""),
    ("thinking-tag", "<thinking>x</thinking>Done", "Done"),
    ("think-any-case", "<THINK>x</Think>Done", "Done"),
    ("tool-call", 'Ok.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\nBye.',
     "Ok.\nBye."),
    ("tool-call-unclosed", 'Ok.\n<tool_call>\n{"name": "a", "arguments": {}}', "Ok."),
    ("tool-call-truncated", 'Ok.\n<tool_call>\n{"name": "a", "arguments": {"q": "x', "Ok."),
    ("tool-call-python", 'Ok. <tool_call>f(a=1)</tool_call>', "Ok."),
    ("tool-call-qwen-coder", "Ok.\n<tool_call>\n<function=f>\n<parameter=a>\n1", "Ok."),
    ("tool-call-tag-at-end", "Ok. <tool_call>", "Ok."),
    ("tool-call-closed-prose-inside", "X <tool_call>nothing</tool_call> Y", "X  Y"),
    ("tool-call-mentioned-then-made",
     'Use <tool_call> tags. <tool_call>{"name": "a"}</tool_call> Done',
     "Use <tool_call> tags.  Done"),
    ("tool-call-inline", 'Before <tool_call>{"name": "a"}</tool_call>after', "Before after"),
    ("tool-response", "<tool_response>fake</tool_response>Real.", "Real."),
    ("stray-closing-tags", "A</tool_call> B</think>", "A B"),
    ("react-lines",
     'Thought: x\nAction: a\nAction Input: {"q": 1}\nObservation: y\nFinal Answer: done',
     "done"),
    ("react-any-case-and-indent", "  thought: x\n\tACTION:a\n action input:{}\nKept", "Kept"),
    ("action-input-multiline", 'Action Input: {\n  "q": "x",\n  "n": [1,\n 2]\n}\nKept',
     "Kept"),
    ("action-input-next-line", 'Action Input:\n{"q": 1}\nKept', "Kept"),
    ("action-input-empty", "Action Input:\nKept", "Kept"),
    # A fenced value, as chat-tuned models write JSON, on the label's line or the next.
    ("action-input-fenced", 'Action: a\nAction Input:\n```json\n{"q": 1}\n```\nKept', "Kept"),
    ("action-input-fenced-same-line", 'Action Input: ```{"q": 1}```  \nKept', "Kept"),
    ("action-input-fenced-unclosed", 'Ok.\nAction Input: ```json\n{"q": 1', "Ok."),
    ("action-input-inline-code", "Action Input: `2+2`\nKept", "Kept"),
    ("observation-in-trace", "Action: a\nAction Input: {}\nObservation: tool said x\nKept",
     "Kept"),
    ("observation-echoed-before-thought", "Observation: tool said x\n\nThought: ok\nKept",
     "Kept"),
    ("observation-before-final", "Observation: x\nFinal Answer: Kept", "Kept"),
    ("observation-before-action", "Observation: x\nAction: a\nAction Input: {}\nKept", "Kept"),
    ("action-after-thought", "Thought: search\nAction: web_search\nKept", "Kept"),
    ("action-then-blank-then-input", "Action: a\n\nAction Input: {}\nKept", "Kept"),
    ("final-label", "Final Answer: Paris", "Paris"),
    ("final-label-variants", "final answer:Paris\nFINAL_ANSWER : Rome", "Paris\nRome"),
    ("final-on-thought-line", "Thought: sure. Final Answer: 42", "42"),
    ("bold-final-on-thought-line", "Thought: sure. **Final Answer:** 42", "42"),
    ("emphasised-final-on-thought-line", "Thought: a **b**. *Final Answer*: **42**", "**42**"),
    ("final-label-own-line", "Final Answer:\nParis", "Paris"),
    ("mistral", '[TOOL_CALLS] [{"name": "a", "arguments": {"q": "]"}}] Then text.', "Then text."),
    ("mistral-next-line", '[TOOL_CALLS]\n[{"name": "a", "arguments": {}}]\nText', "Text"),
    ("mistral-named", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}\nText', "Text"),
    ("mistral-at-end", "Text [TOOL_CALLS]", "Text"),
    ("python-tag", '<|python_tag|>{"name": "a", "parameters": {}}<|eom_id|>Text', "Text"),
    ("python-tag-code", '<|python_tag|>brave_search.call(query="x")\nText', "Text"),
    ("qwen", "✿FUNCTION✿: a\n✿ARGS✿: {\"q\": 1}\n✿RESULT✿: r\n✿RETURN✿: The answer",
     "The answer"),
    ("qwen-args-multiline", '✿FUNCTION✿: a\n✿ARGS✿: {\n"q": 1\n}\nKept', "Kept"),
    ("special-tokens", "<|im_start|>assistant\nHello<|im_end|><|eot_id|><|endoftext|></s>",
     "Hello"),
    ("role-after-spaces", "<|im_start|> assistant\nHello<|im_end|>", "Hello"),
    # Only a role's name goes with its token: "Hello" had gone as one.
    ("role-token-before-prose", "<|im_start|> Hello there", "Hello there"),
    ("role-token-before-a-long-word", "<|from|>Extraordinarily so", "Extraordinarily so"),
    ("role-name-any-case", "<|im_start|>Assistant\nHi", "Hi"),
    ("role-token-inside-text", "Hi<|im_start|> Hello", "Hi Hello"),
    ("role-token-before-many-spaces", "<|im_start|>" + " " * 300 + "Hello", "Hello"),
    ("functionary-v2-spaced", "<|from|> assistant\n<|recipient|> all\n<|content|> Hi", "Hi"),
    ("llama-header", "<|start_header_id|>assistant<|end_header_id|>\n\nHi", "Hi"),
    ("deepseek-token", "Hi<｜end▁of▁sentence｜>", "Hi"),
    # Llama 3.1's custom tool call and Gemma's tool code block go where they close.
    ("llama-function-tag", 'Sure. <function=a>{"q": 1}</function> Done.', "Sure.  Done."),
    ("llama-function-tag-mentioned", "Write <function=name> tags.", "Write <function=name> tags."),
    ("gemma-tool-code", 'Sure.\n```tool_code\nprint(default_api.a(q=1))\n```\nDone.',
     "Sure.\nDone."),
    ("gemma-tool-output", "It is 20 C.\n```tool_output\n20\n```", "It is 20 C."),
    ("code-fence-stays", "Run:\n```python\nx = 1\n```", "Run:\n```python\nx = 1\n```"),
    # gpt-oss's harmony: reasoning and calls go, a final message's text stays.
    ("harmony-answer", "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant"
     "<|channel|>final<|message|>It is 20 C.<|return|>", "It is 20 C."),
    ("harmony-call", "<|channel|>analysis<|message|>Look.<|end|><|start|>assistant<|channel|>"
     'commentary to=functions.a <|constrain|>json<|message|>{"q": 1}<|call|>', ""),
    ("harmony-call-recipient-first", "<|start|>assistant to=functions.a<|channel|>commentary "
     'json<|message|>{"q": 1}<|call|>Kept', "Kept"),
    ("harmony-reasoning-cut-off", "<|channel|>analysis<|message|>still thinking", ""),
    ("harmony-token-without-a-message", "Hi <|channel|> there", "Hi  there"),
    # DeepSeek's own call list (R1/V3 and V3.1 forms) and tool outputs go whole.
    ("deepseek-calls", 'Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>'
     'a\n```json\n{"q": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜> Done.', "Sure. Done."),
    ("deepseek-call-v31",
     'Sure.<｜tool▁call▁begin｜>a<｜tool▁sep｜>{"q": 1}<｜tool▁call▁end｜>\nDone.', "Sure.\nDone."),
    ("deepseek-calls-cut-off", 'Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function'
     '<｜tool▁sep｜>a\n```json\n{"q": 1', "Sure."),
    ("deepseek-outputs", "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>20 C<｜tool▁output▁end｜>"
     "<｜tool▁outputs▁end｜>It is 20 C.", "It is 20 C."),
    # llama-cpp-python's chatml-function-calling calls go with their objects; before prose,
    # or mid-line, the label is text.
    ("functions-label", 'Sure.\nfunctions.a:\n{"q": 1}\nfunctions.b:\n{}\nDone.', "Sure.\nDone."),
    ("functions-label-html-escaped", "function.get_weather:\n{&#34;city=Celsius &#34;}", ""),
    ("functions-label-alone-at-the-end", "Let me check.\nfunctions.a:", "Let me check."),
    ("functions-label-before-prose", "functions.a: gives the weather",
     "functions.a: gives the weather"),
    ("functions-label-mid-line", 'Call functions.a: {"q": 1}', 'Call functions.a: {"q": 1}'),
    # Functionary's calls go with their objects ("all" heads the text), after prose too;
    # ">>>" as a quote's marks or in prose is text.
    ("functionary-v32", 'Sure.>>>a\n{"q": 1}>>>b\n{}\nDone.', "Sure.\nDone."),
    ("functionary-v32-all", '>>>all\nLet me look.>>>a\n{"q": 1}', "Let me look."),
    ("functionary-v32-all-after-text", "Hi.>>>all\nThere.", "Hi.\nThere."),
    ("functionary-v32-cut-off", 'Sure.\n>>>a\n{"q": 1', "Sure."),
    ("functionary-v32-name-over-prose", ">>>a\nis the tool.", ">>>a\nis the tool."),
    ("functionary-v2", '<|from|>assistant\n<|recipient|>a\n<|content|>{"q": 1}<|stop|>\n'
     "<|from|>assistant\n<|recipient|>all\n<|content|>It is 4.<|stop|>", "It is 4."),
    # LangChain's structured chat agents: "Action:" over a call envelope, fenced or not,
    # on its line or the next; the "Final Answer" envelope after an answer's own text.
    ("structured-chat-call", 'It is 4.\nAction:\n```json\n{"action": "web_search", '
     '"action_input": {"query": "x"}}\n```\nMore.', "It is 4.\nMore."),
    ("structured-chat-answer-after-text", 'It is 4.\nAction: ```{"action": "Final Answer", '
     '"action_input": "It is 4."}```', "It is 4."),
    ("structured-chat-after-prose", 'It is 4. Action: {"action": "Final Answer", '
     '"action_input": "It is 4."}', "It is 4."),
    ("quote-marks-and-arrows", ">>> print(1)\na >>> b\n>>>", ">>> print(1)\na >>> b\n>>>"),
    ("inst-tokens", "[INST] q [/INST] a", "q  a"),
    ("think-then-label", "<think>x</think>Final Answer: 4", "4"),
    ("think-hides-markers", "<think>\nFinal Answer: maybe</think>\nFinal Answer: 4", "4"),
    ("blank-lines-collapsed", "A\n\n\n\n\nB\n \n\t\n\nC", "A\n\nB\n\nC"),
    ("crlf-normalised", "A\r\n\r\n\r\nB\r\nC", "A\n\nB\nC"),
    ("trailing-spaces-before-newline", "A   \nB", "A\nB"),
    ("stripped", "  \n\n Answer \n\n", "Answer"),
    ("only-markup", "Thought: x\nAction: y\nAction Input: {}", ""),
    ("empty", "", ""),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in REMOVAL_CASES],
    ids=[case[0] for case in REMOVAL_CASES],
)
def test_removes_markup(text: str, expected: str) -> None:
    assert sanitize(text) == expected


PROSE = [
    "The next action: restart the server, then check the logs.",
    "Thought leaders agree: ship it.",
    "Actions: none needed.",
    "Observations were recorded in 2021.",
    "Final answers are due Friday.",
    'The record is {"name": "Alice", "age": 31}.',
    "```json\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"x\"}}\n```",
    "Use `a < b` and x[0] = y[1] and [link](http://x.y).",
    "<b>bold</b>, <br/>, a <| b and [TOOL] [tool_calls are listed below]",
    "Flowers ✿ bloom, and the ✿FUNCTION✿ mid-line stays.",
    "Indented code:\n    x = 1\n\n    y = {'a': [1, 2]}",
    "Émoji 🎉 and ünïcödé stay.",
    "Line one\nLine two\n\nNew paragraph.",
    # Issue #12: prose that looks like ReAct or tool-call markup keeps its words.
    "Action: Ana sends the budget.\nObservation: the team agrees.",
    "Minutes, 3 May\n\nAction: Ana sends the budget.\nObservation: the team agrees.\n"
    "Action: Bo books the room.\nObservation: none.",
    "Statement:\n  - Effect: Allow\n    Action: s3:GetObject\n    Resource: arn:aws:s3:::b/*\n"
    "  - Effect: Deny\n    Action:\n      - s3:DeleteObject",
    "steps:\n  - name: deploy\n    action: deploy\n    observation: logs",
    'Policy:\n{\n  "Statement": [{\n    "Effect": "Allow",\n    "Action": ["iam:PassRole"],\n'
    '    "Resource": "*"\n  }]\n}\nAction: iam:PassRole',
    "Qwen wraps each call in <tool_call> tags; the rest of this answer must survive.",
    "<tool_call> is the tag Qwen uses, and this sentence stays.",
    "Reasoning models put their thoughts in <think> tags. Here is the rest.",
    "Use <thinking> when you reason, then answer.",
    "Mistral starts a call list with [TOOL_CALLS] and then the JSON. The rest stays.",
    "An echo arrives in a <tool_response> tag, and the answer goes on.",
    "The <tool_call> tag opens a call.",
    # "Action:" over an object that is no call envelope, or over code, is the text's.
    'Action:\n{"type": "restart", "after": "5 min"}\nDone.',
    "Action:\n```python\nprint({'action': 1})\n```",
    # ... and an object naming no tool after prose, or with its key unquoted (a review).
    'In Redux, an Action: {"name": "add"} is dispatched, then the reducer runs.',
    'Call to Action: {"name": "Sign up"} is the button config.',
    "Action: { name: the next step } is unclear",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_not_damaged(text: str) -> None:
    assert sanitize(text) == text


# --- streaming --------------------------------------------------------------------------

OWN_TEXTS = [case[1] for case in REMOVAL_CASES] + PROSE + [
    "Sure <tool_call>{\"name\": \"a\", \"arguments\": {\"q\": \"</tool_call>\"}}</tool_call> ok",
    "Thought: a\nThought: b Final  Answer: c\nAction: d\nFinal Answer: e\n\n\nf",
    "Final Answer: x\n<tool_call>\n{}\nAction: y\nAction Input: {\n\"a\": \"{\"\n}\ntail",
    "<|im_start|>assistant\n<think>x</think>\nThought: t\nFinal Answer: The <b>answer</b>.",
    "text [TOOL_CALLS] [{'name': 'a'}]; more [TOOL_CALLS]name[ARGS]{\"x\": \"y\"}\nend",
    "Act\nActio\nAction\nFinal Ans\n<too\n<|\n[TOOL_\n✿\n✿FUNC",
    "a <|python_tag|>\nb <|python_tag|>   {\"a\": [1, 2]}  c\n<|python_tag|> x(y=1)",
    "Action Input: 'unterminated\nnext line",
    "Action Input: {\"a\": \"unterminated\nnext\"}\nafter",
    "<think>never closed </think",
    "x </thinking> y <thinking> z",
    "Final Answer: one\r\nTwo\r\n\r\n\r\nThree\r\n",
    "\n\n  \t  \n",
    "   Final Answer:\n\n\n   Indented answer",
    "<｜tool▁calls▁begin｜>stuff<｜tool▁calls▁end｜> after",
    "<thinkx> stays, <think >stays, <tool_callx> stays",
    "Thought: split final answer : with spaces\nkept",
    "✿RETURN✿The answer without colon",
    "✿RETURN✿   : spaced",
    "**Thought:** x\n**Final Answer:** It is **4**.\n**Action:** y\n**Action Input:** {}",
    "**Final Answer**: a\n*Final Answer:* b",
    "**Final Answer:*** no\nFinal Answer: yes",
    # Found by a longer fuzz run: a name after backticks, and a line break split at \r.
    "Thought:AAction Input:Action:```json\nAction Input:<thinking>x",
    "'x(A(\tSo. Action: web_search\r\nAction Input:|>Action Input: {}",
    'Thought: t\nAction: a\nAction Input:\n```json\n{"q": "x"}\n```\nFinal Answer: 4',
    "Thought: done. **Final Answer:** 42\nThought: x ***Final Answer**: y\nThought: *Final",
    "Prose with ```code``` and `ticks`.\nAction Input: ``\nAction Input: ```a``b```\nend",
    '- Thought: t\n- Action: a\n- Action Input: {"q": "x"}\n- Final Answer: 4\n- kept',
    '1. Thought: t\n2. Action: a\n3) Action Input: {}\n> Observation: x\n> - **Final Answer:** 4',
    "1. Buy milk\n12 eggs\n-5 degrees\n- item\n* star\n> quote\n>> deep\n• dot\n1\n-",
]
STREAM_TEXTS = CORPUS_OUTPUTS + OWN_TEXTS


def stream(chunks: list[str], answer_marker: str | None = None,
           tool_names: list[str] | None = None, *, unwrap: bool = False) -> str:
    sanitizer = StreamSanitizer(answer_marker, tool_names=tool_names,
                                unwrap=(lambda answer: unwrapped_answer(answer, tool_names or ()))
                                if unwrap else None)
    return "".join(sanitizer.feed(chunk) for chunk in chunks) + sanitizer.flush()


def random_chunks(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(len(text) + 1), k=min(len(text) + 1, rng.randint(1, 12))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


THINK_RE = re.compile(r"<(think|thinking)>.*?(?:</\1>|\Z)", re.IGNORECASE | re.DOTALL)
MARKER = "Final Answer:"
NAMES = ["web_search", "Calculator"]
# After optional spaces, a list item's or a quote's mark: "- ", "* ", "+ ", "• ", "2. ",
# "3) ", "> " (a quote may hold a list item).
MARK = r"^[ \t]*(?:>[ \t]*)*(?:(?:[-+•*]|\d{1,2}[.)])[ \t]+)?"
# The marker as the parser reads "Final Answer:": its words joined by a space or "_", any
# spaces before the colon; in emphasis too.
MARKER_RE = re.compile(MARK + r"(?:final[ _]answer[ \t]*:|(\*\*?)final[ _]answer"
                       r"(?:\1[ \t]*:|[ \t]*:[ \t]*\1)(?!\*))", re.IGNORECASE | re.MULTILINE)


# The marker later on a line a Thought label opens ("Thought: done. Final Answer: 4"),
# written in its case (after prose "final answer:" is the thought's words), the
# Thought label as a line label (in emphasis, after a mark too), the marker plain (up to two
# spaces before its colon) or in emphasis, its closing stars along ("**Final Answer:** 4").
THOUGHT_MARKER_RE = re.compile(
    MARK + r"(?:thought[ \t]*:|(\*\*?)thought(?:\1[ \t]*:|[ \t]*:[ \t]*\1)(?!\*))[^\n]*?"
    r"(?-i:(\*\*?)Final[ _]Answer(?:\2[ \t]{0,2}:|[ \t]{0,2}:[ \t]{0,2}\2)(?!\*)"
    r"|Final[ _]Answer[ \t]{0,2}:)", re.IGNORECASE | re.MULTILINE)


def expected_answer_stream(text: str, tool_names: list[str] | None = None) -> str:
    """The documented answer-marker semantics, written independently of the implementation:
    the first marker at a line start, or later on a Thought line, outside `<think>` blocks
    (which are skipped only before it), then the sanitized raw text after it."""
    visible: list[str] = []
    origin: list[int] = []
    pos = 0
    for block in [*THINK_RE.finditer(text), None]:
        stop = block.start() if block else len(text)
        visible.extend(text[pos:stop])
        origin.extend(range(pos, stop))
        pos = block.end() if block else pos
    joined = "".join(visible)
    markers = sorted([*MARKER_RE.finditer(joined), *THOUGHT_MARKER_RE.finditer(joined)],
                     key=lambda m: m.start())
    for m in markers:
        first, last = origin[m.start()], origin[m.end() - 1]
        if last - first == m.end() - 1 - m.start():  # not split by a block
            return sanitize(text[last + 1 :], tool_names=tool_names)
    return ""


@pytest.mark.parametrize("answer_marker", [None, MARKER])
@pytest.mark.parametrize("text", STREAM_TEXTS)
def test_stream_equals_whole_at_every_split(text: str, answer_marker: str | None) -> None:
    expected = sanitize(text) if answer_marker is None else expected_answer_stream(text)
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], answer_marker) == expected, cut
    assert stream(list(text), answer_marker) == expected
    rng = random.Random(len(text))
    for _ in range(5):
        chunks = random_chunks(text, rng)
        assert stream(chunks, answer_marker) == expected, chunks


FUZZ_PIECES = [
    "<think>", "</think>", "<tool_call>", "</tool_call>", "Thought:", "Action:", "Action Input:",
    "Observation:", "Final Answer:", "final answer :", "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>",
    "<|im_end|>", "<|im_start|>", "assistant", "✿FUNCTION✿", "✿ARGS✿:", "✿RETURN✿", "</s>",
    "{", "}", "[", "]", "(", ")", '"', "'", "\\", "\n", "\r\n", " ", "\t", "hello", "<", "|>",
    '{"name": "a", "arguments": {}}', "```json\n", "<thinking>",
    "Action: web_search", "Action: Ana sends", "Observation: x", "<tool_response>",
    "</tool_response>", "x(", "<function=f>", "a[ARGS]", "Action Input: {}", "`",
    "So. Action: web_search", " Action: calculator ", "A", "Act", "_Action: x",
    "**", "*", "**Action:**", "**Action**:", "**Final Answer:**", "*Thought:*", "**Note:**",
    "```", "``", "Thought: x ", "**Final Answer", "***",
    "- ", "-", "* ", "> ", ">", "1. ", "2) ", "1", ".", "• ", "12",
    "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>", "<｜tool▁", "</function>", "```tool_code\n", "```tool_output",
    "<|start|>assistant", "<|channel|>analysis", "<|channel|>final", "<|message|>", "<|end|>",
    "<|call|>", " to=functions.a ", "<|return|>", "<|channel|>",
    '{"action": "Final Answer", "action_input": "ok"}', '"action_input": ',
    '{"action": "Final Answer", ',
    "default_api.a(q=1)", "<function=f>{\"q\": 1}</function>",
    "functions.a:", "function.", "functions.web_search: ", "func", "f",
    ">>>", ">>>all\n", ">>>web_search\n", ">>", "web_search\n", "all\n", "al", "web_",
    "<|from|>assistant\n", "<|recipient|>", "<|recipient|>all\n", "web_search\n<|content|>",
    "<|content|>", "<|stop|>", '{"q": 1}',
    "Final_Answer:", "*Final Answer:*", "**Final Answer: **", "**Thought:** x", "Final_",
]


def fuzz_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(FUZZ_PIECES) for _ in range(rng.randint(0, 20))) for _ in range(count)
    ]


@pytest.mark.parametrize("tool_names", [None, NAMES])
@pytest.mark.parametrize("answer_marker", [None, MARKER])
def test_stream_equals_whole_on_random_markup(answer_marker: str | None,
                                              tool_names: list[str] | None) -> None:
    rng = random.Random(1)
    for text in fuzz_texts(300, seed=2):
        expected = (sanitize(text, tool_names=tool_names) if answer_marker is None
                    else expected_answer_stream(text, tool_names))
        assert stream(list(text), answer_marker, tool_names) == expected, text
        chunks = random_chunks(text, rng)
        assert stream(chunks, answer_marker, tool_names) == expected, chunks


@pytest.mark.parametrize("tool_names", [None, NAMES])
def test_unwrapped_answer_stream_equals_whole_on_random_markup(
        tool_names: list[str] | None) -> None:
    # The answer as the parser reads it: a "Final Answer" envelope's text.
    rng = random.Random(3)
    for text in fuzz_texts(300, seed=4):
        expected = unwrapped_answer(expected_answer_stream(text, tool_names), tool_names or ())
        assert stream(list(text), MARKER, tool_names, unwrap=True) == expected, text
        chunks = random_chunks(text, rng)
        assert stream(chunks, MARKER, tool_names, unwrap=True) == expected, chunks


# (answer text, what streams before its end, the whole streamed answer)
WRAPPED_ANSWERS = [
    ('Final Answer: {"action": "Final Answer", "action_input": "It is 4 [R1]."}', "",
     "It is 4 [R1]."),
    ('Thought: done\nFinal Answer: ```json\n{"action": "Final Answer", "action_input": '
     '"It is 4."}\n```', "", "It is 4."),
    ('Final Answer: `{"thought": "t", "action": "Final Answer", "action_input": "ok"}`', "",
     "ok"),
    # Other answers that open with an object arrive whole, as they are; the rest stream.
    ('Final Answer: {"city": "Paris"} is the result.', "", '{"city": "Paris"} is the result.'),
    ("Final Answer: `x` is a variable.", "`x` is a variable.", "`x` is a variable."),
    ("Final Answer: ```python\nprint(1)\n```", "```python\nprint(1)",
     "```python\nprint(1)\n```"),
]


@pytest.mark.parametrize(("text", "before_end", "whole"), WRAPPED_ANSWERS)
def test_an_answer_written_as_an_envelope_streams_as_its_text(
        text: str, before_end: str, whole: str) -> None:
    # The JSON of a structured chat agent's envelope never streams: the final answer
    # (parse_model_output) is the envelope's text, and so is what the user saw stream.
    from callgate.parsing import parse_model_output

    assert parse_model_output(text, tool_names=NAMES).final_answer == whole
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], MARKER, NAMES, unwrap=True) == whole, cut
    sanitizer = StreamSanitizer(MARKER, tool_names=NAMES,
                                unwrap=lambda answer: unwrapped_answer(answer, NAMES))
    assert "".join(sanitizer.feed(char) for char in text) == before_end


# (text, expected sanitize(text, tool_names=NAMES))
NAMED_CASES = [
    ("Thought: x\nAction: web_search", ""),
    # A structured chat call after prose goes, the rest of its line stays; an object naming
    # another tool is the text's.
    ('It is 4. Action: {"action": "web_search", "action_input": {"query": "x"}} More.',
     "It is 4. More."),
    ('In Redux, an Action: {"name": "add"} is dispatched.',
     'In Redux, an Action: {"name": "add"} is dispatched.'),
    ("Action: web_search\nKept", "Kept"),
    ("Action: WEB_SEARCH.\nKept", "Kept"),
    ("Action: `calculator`\nObservation: 4\nFinal Answer: 4", "4"),
    ("Action: Ana sends the budget.\nObservation: the team agrees.",
     "Action: Ana sends the budget.\nObservation: the team agrees."),
    ("Action: web_searcher\nKept", "Action: web_searcher\nKept"),
    # After prose on the same line (a small model's "I will check. Action: …").
    ("I will check. Action: calculator", "I will check."),
    ("The answer is 4. Action: Calculator.\nKept", "The answer is 4.\nKept"),
    ('Sure! Action: lookup Action Input: {"q": "a b"}\nIt is sunny.', "Sure!\nIt is sunny."),
    ("Done. Action: lookup\nAction Input: {}\nObservation: x\nFinal Answer: 4", "Done.\n4"),
    ('Sure. Action: lookup Action Input: {"q": "}"} and more', "Sure. and more"),
    # An Action Input after prose alone is the text talking about the format.
    ('Call it with Action Input: {"q": "x"} and wait.',
     'Call it with Action Input: {"q": "x"} and wait.'),
    ("Sure. ACTION: web_search", "Sure. ACTION: web_search"),
    ('Action: web_search Action Input: {"q": "a"}', ""),
    ("Action: lookupAction Input: {}", "Action: lookupAction Input: {}"),
    ("Minutes. Action: follow up with Bob.", "Minutes. Action: follow up with Bob."),
    ("Minutes. Action: lookup\nKept", "Minutes. Action: lookup\nKept"),
    ("ReAction: web_search", "ReAction: web_search"),
    ("The next action: web_search", "The next action: web_search"),
    ("Answer: 4. Action Input: none", "Answer: 4. Action Input: none"),
    ("I will compute. Action: Calculator Action Input: 2+2\nNext", "I will compute.\nNext"),
    ('I will check. Action: lookup Action Input: ```json\n{"q": "a"}\n``` Then\nKept',
     "I will check. Then\nKept"),
    ('I will search. Action: web_search Action Input: "weather Paris"', "I will search."),
    # Labels in markdown emphasis, as chat-tuned models write them.
    ('**Thought:** math\n**Action:** calculator\n**Action Input:** {"e": "2+2"}\nKept',
     "Kept"),
    ("**Action**: Calculator\nKept", "Kept"),
    ("**Thought:** done.\n**Final Answer:** It is **4**.", "It is **4**."),
    ("*Final Answer:* 4", "4"),
    ("**Action:** Ana sends the budget.\n**Observation:** ok",
     "**Action:** Ana sends the budget.\n**Observation:** ok"),
    ("**Action items:** none\n**Note:** x", "**Action items:** none\n**Note:** x"),
    ("***Action:*** calculator", "***Action:*** calculator"),
    # Labels after a list item's or a quote's mark: the mark goes with the label.
    ('- Thought: math\n- Action: calculator\n- Action Input: {"e": "2+2"}\nKept', "Kept"),
    ('Sure.\n1. Action: web_search\n2. Action Input: {"q": "x"}\nDone', "Sure.\nDone"),
    ('> Action: web_search\n> Action Input: {"q": "x"}\n> Final Answer: 4', "4"),
    ("- **Thought:** done\n- **Final Answer:** It is **4**.", "It is **4**."),
    ("- Action: Ana sends the budget.\n- Owner: Bob",
     "- Action: Ana sends the budget.\n- Owner: Bob"),
    ("- Action items: none\n1. Buy milk\n-5 degrees",
     "- Action items: none\n1. Buy milk\n-5 degrees"),
]


@pytest.mark.parametrize(("text", "expected"), [
    # Functionary v3.2's first call has no ">>>": a tool's name alone on the reply's first
    # line over an object; "all" there heads the text. Elsewhere such a line is text.
    ('web_search\n{"q": "x"}>>>calculator\n{}', ""),
    ("<think>x</think>\nweb_search\n{}\nDone.", "Done."),
    ("all\nIt is 4.", "It is 4."),
    ('Paris\n{"q": 1}', 'Paris\n{"q": 1}'),
    ("web_search\nis the tool.", "web_search\nis the tool."),
    ('It is 4.\nweb_search\n{"q": "x"}', 'It is 4.\nweb_search\n{"q": "x"}'),
    ("Parisian\nall\nweb", "Parisian\nall\nweb"),
    # Alone, with nothing after it, the line is the reply's text ("Final Answer: all").
    ("all\n", "all"),
    ("all\n\n  ", "all"),
    ("web_search\n", "web_search"),
    ("Calculator \n\n", "Calculator"),
])
def test_functionary_first_call_without_its_mark(text: str, expected: str) -> None:
    assert sanitize(text, tool_names=NAMES) == expected
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], tool_names=NAMES) == expected, cut
    assert stream(list(text), None, NAMES) == expected


@pytest.mark.parametrize(("text", "tool_names", "expected"), [
    # With known tools, ">>>name" naming none heads a call only over an object and not
    # after an operand: ">>>" in code or a quoted reply stays; without them, any name over
    # an object is a call.
    ('Sure.\n>>>get_weather\n{"city": "Paris"}', NAMES, "Sure."),
    ("let r = a>>>b\n{ x: 1 }", NAMES, "let r = a>>>b\n{ x: 1 }"),
    ("Quoted reply:\n>>>Thanks\n", NAMES, "Quoted reply:\n>>>Thanks"),
    ('Sure.>>>Web_Search\n{"q": 1}\n>>>all\nDone.', NAMES, "Sure.\nDone."),
    ("Quoted reply:\n>>>Thanks\n", None, "Quoted reply:"),
])
def test_functionary_head_names_a_known_tool(text: str, tool_names: list[str] | None,
                                             expected: str) -> None:
    assert sanitize(text, tool_names=tool_names) == expected
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], tool_names=tool_names) == expected, cut
    assert stream(list(text), None, tool_names) == expected


@pytest.mark.parametrize(("text", "expected"), NAMED_CASES)
def test_action_naming_a_registered_tool(text: str, expected: str) -> None:
    assert sanitize(text, tool_names=NAMES) == expected
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], tool_names=NAMES) == expected, cut
    assert stream(list(text), None, NAMES) == expected
    marked = "Final Answer: " + text
    assert stream(list(marked), MARKER, NAMES) == expected_answer_stream(marked, NAMES)


def test_action_without_tool_names_needs_an_input_line() -> None:
    assert sanitize("Action: web_search\nKept") == "Action: web_search\nKept"
    assert sanitize("Action: web_search\nAction Input: {}\nKept") == "Kept"


def test_unclosed_think_in_prose_waits_then_stays() -> None:
    s = StreamSanitizer()
    assert s.feed("Models write <think> tags") == "Models write"
    assert s.feed(" around reasoning.") == ""
    assert s.flush() == " <think> tags around reasoning."
    s = StreamSanitizer()
    assert s.feed("A <think>hidden") == "A"
    assert s.feed("</think> B") == "  B"


def test_holds_back_possible_markers() -> None:
    s = StreamSanitizer()
    assert s.feed("Hello <too") == "Hello"
    assert s.feed("ls work") == " <tools work"
    assert s.feed("\nAct") == ""  # could become "Action:"
    assert s.feed("ive\n[TOOL_") == "\nActive"  # the newline waits for what follows it
    assert s.feed("CALLS] [{}] x ✿") == "\n x ✿"  # mid-line ✿ is ordinary text
    assert s.feed("\n<|") == ""
    assert s.feed("im_end|>\nFinal Ans") == ""
    assert s.feed("wer: 42") == "\n42"
    assert s.flush() == ""


def test_answer_marker_mode() -> None:
    s = StreamSanitizer(answer_marker="Final Answer:")
    assert s.feed("Thought: I know.\nThe answer: no.\nFinal ") == ""
    assert s.feed("answer:  Par") == "Par"
    assert s.feed("is.\nAction: x\nAction Input: {}\n") == "is."
    assert s.feed("Done") == "\nDone"
    assert s.flush() == ""
    s = StreamSanitizer(answer_marker="Final Answer:")
    assert s.feed("Action: a\nAction Input: {}") == ""
    assert s.flush() == ""


@pytest.mark.parametrize(("text", "answer"), [
    # The label later on a Thought line, as the parser reads it: the answer streams too.
    ("Thought: I know it. Final Answer: 42 is it.", "42 is it."),
    ("thought: done. Final_Answer  : Paris\nmore", "Paris\nmore"),
    # After prose only the label as ReAct writes it: a lowercase one is the thought's words.
    ("Thought: is the final answer: 42 right?\nFinal Answer: yes", "yes"),
    ("Thought: is the FINAL ANSWER: 42 right?", ""),
    ("Thought: x <think>Final Answer: no</think> Final Answer: no\nFinal Answer: yes", "yes"),
    ("Thoughts: x Final Answer: no\nNote: Final Answer: no", ""),
])
def test_answer_marker_later_on_a_thought_line(text: str, answer: str) -> None:
    assert expected_answer_stream(text) == answer
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], MARKER) == answer, cut
    assert stream(list(text), MARKER) == answer


@pytest.mark.parametrize("text", [
    "Thought: done. **Final Answer:** 42",
    "Thought: done. *Final Answer:* 42",
    "Thought: x **Final Answer: ** 42",
    "**Thought:** done. **Final Answer:** 42",
    "- Thought: x Final Answer: 42",
    "Final_Answer: 42",
    "final answer : 42",
    "**Final_Answer**: 42",
    "Final_Answer: A\nFinal Answer: B",
])
def test_answer_marker_as_the_parser_reads_it(text: str) -> None:
    # The stream gives the final answer the parser reads; label forms had streamed "** 42"
    # (emphasis stars left over), nothing, or only a later label's text.
    from callgate.parsing import parse_model_output

    answer = parse_model_output(text).final_answer
    assert answer is not None and expected_answer_stream(text) == answer
    for cut in range(len(text) + 1):
        assert stream([text[:cut], text[cut:]], MARKER) == answer, cut
    assert stream(list(text), MARKER) == answer


def test_a_long_thought_line_is_read_once() -> None:
    # A degenerate Thought line streamed a few characters at a time: read once, not once per
    # chunk (quadratic); a guard against that, not a speed measure.
    text = "Thought: " + "the answer might be near " * 8_000 + "Final Answer: 42"
    started = time.perf_counter()
    assert stream([text[i : i + 4] for i in range(0, len(text), 4)], MARKER) == "42"
    assert time.perf_counter() - started < 5


def test_a_long_line_of_actions_costs_its_length() -> None:
    # A degenerate reply: each mid-line Action was read to the line's end (quadratic: a
    # 60 KB line took 10 s in the parser); a guard against that, not a speed measure.
    from callgate.parsing import parse_model_output

    text = "x. Action: web_search z " * 10_000  # 240 KB on one line
    started = time.perf_counter()
    parse_model_output(text, ["web_search"])
    sanitize(text, tool_names=["web_search"])
    assert time.perf_counter() - started < 10


def test_functionary_heads_are_read_once() -> None:
    # Degenerate replies: spaces after a recipient backtracked (1 s to parse 20 KB, minutes
    # to stream it in small chunks), and every nested ">>>" head's object went through
    # json_repair (12 s for 300); a guard against that, not a speed measure.
    from callgate.parsing import parse_model_output

    spaced = "<|recipient|>a" + " " * 20_000 + "x"
    nested = '>>>a\n{"k":[' * 300 + "]}" * 300
    started = time.perf_counter()
    parse_model_output(spaced)
    assert stream([spaced[i : i + 5] for i in range(0, len(spaced), 5)]) == "a" + " " * 20_000 + "x"
    assert parse_model_output(nested).calls[0]["name"] == "a"
    assert time.perf_counter() - started < 20


def test_streaming_cost_is_linear() -> None:
    paragraph = (
        "Some prose with [brackets] and <tags> and a line.\n"
        "Thought: hidden\n<think>hidden</think>Visible text follows here.\n"
    )
    text = paragraph * 400  # about 50 KB
    started = time.perf_counter()
    s = StreamSanitizer()
    out = "".join(s.feed(text[i : i + 4]) for i in range(0, len(text), 4)) + s.flush()
    elapsed = time.perf_counter() - started
    assert out == sanitize(text)
    assert elapsed < 5, elapsed
