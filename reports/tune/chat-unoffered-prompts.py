"""How the bundled model answers questions no built-in tool fits, under the ReAct prompt it
reads now (the tool list and the reply format, "Final Answer:" written for it) and under
three chat prompts without them: the measure behind `chat_unoffered` (not kept).

Usage: python chat-unoffered-prompts.py > chat-unoffered-prompts.txt
Greedy decoding, 60 tokens, one question at a time; hand-written questions, not a set.
"""

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from callgate.eval.answers import builtin_registry, load_set
from callgate.models.spec import load_model
from callgate.prompts.react import CHAT_SYSTEM, react_system

QUESTIONS = ["Hello, who are you?", "What time is it?", "Write a haiku about autumn.",
             "What is the capital of France?", "Thanks!", "Who wrote Hamlet?",
             "At what temperature does water boil?", "Tell me a joke.",
             "How do I make a cup of tea?", "What is Python?", "What is the largest planet?",
             "Can you help me?"]


def main() -> None:
    model, _ = load_model("bundled")
    with builtin_registry(load_set()) as registry:
        react = react_system(((t.name, t.description, t.schema) for t in registry),
                             thoughts=False)
    prompts = {
        "react (now)": (react, "Final Answer:"),
        "chat": (CHAT_SYSTEM, None),
        "smollm2's own": ("You are a helpful AI assistant named SmolLM, trained by Hugging Face",
                          None),
        "callgate": ("You are callgate, a helpful assistant. Answer the user directly and "
                     "briefly.", None),
    }
    for name, (system, written) in prompts.items():
        for question in QUESTIONS:
            messages = [SystemMessage(system), HumanMessage(question)]
            if written:
                messages.append(AIMessage(written))
            reply = model.invoke(messages, temperature=0.0, max_tokens=60,
                                 stop=["\nObservation:"])
            print(f"[{name}] {question} -> {reply.content[:160]!r}")


if __name__ == "__main__":
    main()
