"""Screen: numbers labelled by their argument's name words, read from the ask each call
of a parallel reply serves (``callgate.tools.asks``: the k-th call, the k-th ask), and
rescored on a full run's recorded calls with callgate's checker. Usage, from the
repository root with ../shared beside it:
python reports/tune/labelled-numbers-per-ask-screen.py tune|validate [REPORT]"""

import copy
import importlib.util
import json
import sys
from pathlib import Path

from callgate.eval.bfcl import question_registry
from callgate.eval.bfcl_checker import check
from callgate.eval.bfcl_data import load_questions, safe_name
from callgate.tools.asks import asks

_SPEC = importlib.util.spec_from_file_location(
    "labelled", Path(__file__).with_name("labelled-numbers-screen.py"))
labelled_screen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(labelled_screen)
CATEGORIES = ["parallel", "parallel_multiple"]


def main(split: str, report: str = "reports/bfcl-full.json") -> None:
    rows = {q["id"]: q for q in json.loads(Path(report).read_text(encoding="utf-8"))["questions"]}
    up = down = changed = 0
    for category in CATEGORIES:
        for question in load_questions(category, split=split, data_dir="../shared/data/bfcl"):
            calls = rows[question.id]["calls"]
            registry = question_registry(question)
            request = [m["content"] for m in question.messages if m["role"] == "user"][-1]
            parts = asks([registry.get(n) for n in registry.names], request)
            if len(calls) < 2 or len(parts) < 2:
                continue
            new = copy.deepcopy(calls)
            for call, ask in zip(new, parts, strict=False):
                (tool, args), = call.items()
                if safe_name(tool) not in ask.tools:
                    continue
                for name, value in args.items():
                    if isinstance(value, bool) or not isinstance(value, int | float):
                        continue
                    picks = set(labelled_screen.labelled(ask.text, name))
                    if len(picks) == 1 and (pick := picks.pop()) != value:
                        args[name] = int(pick) if isinstance(value, int) and pick.is_integer() \
                            else pick
            if new == calls:
                continue
            changed += 1
            was, now = check(question, calls).ok, check(question, new).ok
            up += now and not was
            down += was and not now
            print(question.id, "up" if now > was else "down" if was > now else "same")
    print(f"replies changed {changed}, up {up}, down {down}")


if __name__ == "__main__":
    main(*sys.argv[1:])
