"""Screen: numbers labelled by their argument's name words, read from the ask each call
of a parallel reply serves (``callgate.tools.asks``: the k-th call, the k-th ask), and
rescored on a full run's recorded calls with callgate's checker. Usage, from the
repository root with ../shared beside it:
python reports/tune/labelled-numbers-per-ask-screen.py tune|validate"""

import importlib.util
import sys
from pathlib import Path

from screening import Calls, rescore

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_data import BfclQuestion, safe_name
from callgate.tools.asks import asks

_SPEC = importlib.util.spec_from_file_location(
    "labelled", Path(__file__).with_name("labelled-numbers-screen.py"))
labelled_screen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(labelled_screen)


def rewrite(question: BfclQuestion, request: str, calls: Calls) -> Calls:
    registry = question_registry(question)
    parts = asks([registry.get(n) for n in registry.names], request)
    if len(calls) < 2 or len(parts) < 2:
        return calls
    for call, ask in zip(calls, parts, strict=False):
        (tool, args), = call.items()
        if safe_name(tool) not in ask.tools:
            continue
        for name, value in args.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            picks = set(labelled_screen.labelled(ask.text, name))
            if len(picks) == 1 and (pick := picks.pop()) != value:
                args[name] = int(pick) if isinstance(value, int) and pick.is_integer() else pick
    return calls


if __name__ == "__main__":
    rescore(sys.argv[1], rewrite, categories=["parallel", "parallel_multiple"])
