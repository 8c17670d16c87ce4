"""BFCL's AST checker, rewritten compactly: does a list of calls match a question's ground truth?

See callgate/eval/data/bfcl/README.md, "How a call is scored". :func:`official_check` runs
BFCL's own checker (the optional ``bfcl-eval`` package) on the same input; the own checker
is kept because it says why a call fails in one line and needs no extra package, and
tests/test_bfcl_checker.py checks that both agree on every question of a recorded run.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from callgate.eval.bfcl_data import SOME_CALL_CATEGORIES, BfclQuestion, safe_name


@dataclass(frozen=True)
class CheckResult:
    """Whether the calls pass; `reason` says why not ("" when ok)."""

    ok: bool
    reason: str = ""


_OK = CheckResult(True)
_STRIP = re.compile(r"[ ,./\-_*^]")


def _norm(s: str) -> str:
    return _STRIP.sub("", s).lower().replace("'", '"')


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _normalise_calls(calls: Any) -> list[tuple[str, dict[str, Any]]] | str:
    """Accept `{name: {args}}` or `{"name": n, "args"|"arguments": {...}}`; else an error."""
    if not isinstance(calls, list | tuple):
        return f"calls must be a list, got {type(calls).__name__}"
    out: list[tuple[str, dict[str, Any]]] = []
    for i, call in enumerate(calls, 1):
        if isinstance(call, dict) and "name" in call and ({"args", "arguments"} & call.keys()):
            name, args = call["name"], call.get("args", call.get("arguments"))
        elif isinstance(call, dict) and len(call) == 1:
            ((name, args),) = call.items()
        else:
            return f"call {i}: not a {{name: {{arg: value}}}} dict: {_show(call)}"
        if not isinstance(name, str) or not isinstance(args, dict):
            return f"call {i}: not a {{name: {{arg: value}}}} dict: {_show(call)}"
        out.append((name, args))
    return out


def _fits(value: Any, schema_type: Any) -> bool:
    """Does `value`'s own type (not its contents) fit a BFCL type? Exact: bool is not int."""
    is_num = isinstance(value, int | float) and not isinstance(value, bool)
    fits = {
        "string": isinstance(value, str),
        "integer": is_num and isinstance(value, int),
        "float": is_num,  # an int is accepted for a float
        "number": is_num,
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list | tuple),
        "tuple": isinstance(value, list | tuple),
        "dict": isinstance(value, dict),
        "object": isinstance(value, dict),
    }
    return fits.get(schema_type, True) if isinstance(schema_type, str) else True


def _type_error(value: Any, schema: dict[str, Any]) -> str:
    """Why `value` does not fit the BFCL schema's type, recursively ("" if it does)."""
    t = schema.get("type")
    if not _fits(value, t):
        return f"expected {t}, got {type(value).__name__} {_show(value)}"
    if isinstance(value, list | tuple) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            if err := _type_error(item, schema["items"]):
                return f"element {i}: {err}"
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        for key, item in value.items():
            sub = schema["properties"].get(key)
            if isinstance(sub, dict) and (err := _type_error(item, sub)):
                return f"key {key!r}: {err}"
    return ""


def _answer_fits(alt: Any, schema: dict[str, Any]) -> bool:
    """Does an answer alternative agree with the schema's types (dict contents unchecked)?"""
    items = schema.get("items")
    if isinstance(alt, list) and isinstance(items, dict):
        return _fits(alt, schema.get("type")) and all(_answer_fits(a, items) for a in alt)
    return _fits(alt, schema.get("type"))


def _equal(value: Any, alt: Any) -> bool:
    """Does `value` equal one allowed alternative? Dict alternatives map keys to allowed lists."""
    if isinstance(alt, str):
        return isinstance(value, str) and _norm(value) == _norm(alt)
    if isinstance(alt, dict):
        return isinstance(value, dict) and _dict_ok(value, alt)
    if isinstance(alt, list):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(alt)
            and all(_equal(v, a) for v, a in zip(value, alt, strict=True))
        )
    if isinstance(alt, bool) or isinstance(value, bool):
        return type(value) is type(alt) and value == alt
    if alt is None:
        return value is None
    return isinstance(value, int | float) and value == alt


def _dict_ok(value: dict[str, Any], alt: dict[str, list[Any]]) -> bool:
    return all(k in alt and any(_equal(v, a) for a in alt[k]) for k, v in value.items()) and all(
        k in value or "" in allowed for k, allowed in alt.items()
    )


def _check_args(args: dict[str, Any], answer: dict[str, list[Any]], fn: dict[str, Any]) -> str:
    """Why a call's arguments do not match one ground-truth call's ("" if they do)."""
    params = fn.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    for p in params.get("required") or []:
        if p not in args:
            return f"missing required parameter {p!r}"
    for p, value in args.items():
        if p not in props:
            return f"unexpected parameter {p!r} (not in the schema)"
        if p not in answer:
            return f"unexpected parameter {p!r} (not in the answer)"
        allowed = answer[p]
        # Where the answer itself disagrees with the schema (None for a string, strings in an
        # integer array), BFCL trusts the answer: only the value comparison below applies.
        trust_schema = all(a == "" or _answer_fits(a, props[p]) for a in allowed)
        if trust_schema and (err := _type_error(value, props[p])):
            return f"parameter {p!r}: {err}"
        # BFCL's list checkers read the answer's "" (the argument may be left out) as an
        # empty list, so an empty list passes where the argument may be left out.
        omitted = (props[p].get("type") in ("array", "tuple")
                   and isinstance(value, list | tuple) and not value and "" in allowed)
        if not omitted and not any(_equal(value, a) for a in allowed):
            return f"parameter {p!r}: value {_show(value)} not among allowed {_show(allowed)}"
    for p, allowed in answer.items():
        if p not in args and "" not in allowed:
            return f"missing parameter {p!r} (the answer requires it)"
    return ""


def check(question: BfclQuestion, calls: Sequence[dict[str, Any]]) -> CheckResult:
    """Score a model's calls for one question with BFCL's AST rules."""
    if question.category in SOME_CALL_CATEGORIES:  # relevance: correct iff a call is made
        return _OK if calls else CheckResult(False, "expected a call, got none")
    if question.ground_truth is None:  # irrelevance: correct iff no call
        if not calls:
            return _OK
        n = len(calls) if isinstance(calls, list | tuple) else 1
        return CheckResult(False, f"expected no call, got {n}")
    got = _normalise_calls(calls)
    if isinstance(got, str):
        return CheckResult(False, got)
    expected = question.ground_truth
    parallel = "parallel" in question.category  # parallel, parallel_multiple, live_parallel*
    want_n = len(expected) if parallel else 1
    if len(got) != want_n:
        want_text = f"{want_n} calls" if parallel else "exactly 1 call"
        return CheckResult(False, f"expected {want_text}, got {len(got)}")
    schemas = {safe_name(f["name"]): f for f in question.functions}
    used: set[int] = set()
    for gt in expected:
        ((want, answer),) = gt.items()
        fn = schemas.get(safe_name(want))
        if fn is None:
            return CheckResult(False, f"ground truth names {want!r}, which the question lacks")
        misses: list[tuple[bool, str]] = []  # (name matched, reason) per unused call
        for i, (name, args) in enumerate(got):
            if i in used:
                continue
            if name != want and safe_name(name) != safe_name(want):
                reason = f"function {name!r} is not the expected {want!r}"
                misses.append((False, f"call {i + 1}: {reason}"))
            elif reason := _check_args(args, answer, fn):
                misses.append((True, f"call {i + 1}: {reason}"))
            else:
                used.add(i)
                break
        else:
            if not parallel:
                return CheckResult(False, misses[0][1])
            detail = next((f": {reason}" for named, reason in misses if named), "")
            return CheckResult(False, f"no call matches expected {want!r}{detail}")
    return _OK


def accuracy(results: Sequence[CheckResult]) -> float:
    """Share of results that passed (0.0 for none)."""
    return sum(r.ok for r in results) / len(results) if results else 0.0


# --- BFCL's own checker (the optional ``bfcl-eval`` package) ----------------------------------


@dataclass(frozen=True)
class _Official:
    ast_checker: Callable[..., dict[str, Any]]
    python: Any  # bfcl_eval's Language.PYTHON
    model_name: str


_official: _Official | None = None


def _load_official() -> _Official:
    """bfcl-eval's AST checker, imported without its data (only its checker code is used).

    The checker module imports ``bfcl_eval.constants.model_config`` for one lookup (does the
    model want ``.`` in names mapped to ``_``?), and that module imports every model
    handler and so every vendor SDK. Where those SDKs are missing (``pip install --no-deps
    bfcl-eval``), a stand-in module answers that lookup with "no" (callgate's calls carry
    the functions' own names) and the checker itself is BFCL's unchanged code."""
    global _official
    if _official is not None:
        return _official
    if importlib.util.find_spec("bfcl_eval") is None:
        raise ImportError("bfcl-eval is not installed (pip install --no-deps bfcl-eval)")
    try:
        from bfcl_eval.eval_checker.ast_eval import ast_checker as module
    except ModuleNotFoundError:
        sys.modules["bfcl_eval.constants.model_config"] = _model_config_stand_in()
        from bfcl_eval.eval_checker.ast_eval import ast_checker as module
    mapping = module.MODEL_CONFIG_MAPPING
    name = "callgate"
    if isinstance(mapping, dict) and not isinstance(mapping, _AnyModel):
        # The real table: any model that keeps dots in names (no "_" in its key, since the
        # checker maps "_" in the name given to "/" before the lookup).
        name = next(k for k, cfg in mapping.items()
                    if "_" not in k and not cfg.underscore_to_dot)
    from bfcl_eval.constants.enums import Language

    _official = _Official(module.ast_checker, Language.PYTHON, name)
    return _official


class _AnyModel(dict[str, Any]):
    """The stand-in ``MODEL_CONFIG_MAPPING``: every model keeps dots in function names."""

    def __missing__(self, key: str) -> Any:
        return types.SimpleNamespace(underscore_to_dot=False)


def _model_config_stand_in() -> types.ModuleType:
    module = types.ModuleType("bfcl_eval.constants.model_config")
    module.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
    return module


def official_available() -> bool:
    """Whether bfcl-eval's checker can be imported."""
    try:
        _load_official()
    except ImportError:
        return False
    return True


def official_check(question: BfclQuestion, calls: Sequence[dict[str, Any]]) -> CheckResult:
    """BFCL's verdict on ``calls`` (``{name: {arg: value}}`` dicts): bfcl-eval's AST checker.

    irrelevance, live_irrelevance and live_relevance are not AST-checked by BFCL: its
    runner only asks whether the reply decodes to a non-empty list of calls; that rule
    (``_evaluate_single_relevance_entry``) is restated here. Raises ImportError when
    bfcl-eval is not installed."""
    official = _load_official()
    has_call = bool(calls) and all(
        isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict)
        for c in calls) and any(c for c in calls)
    if question.category in SOME_CALL_CATEGORIES:
        return _OK if has_call else CheckResult(False, "expected a call, got none")
    if question.ground_truth is None:
        return CheckResult(False, f"expected no call, got {len(calls)}") if has_call else _OK
    verdict = official.ast_checker(copy.deepcopy(question.functions), copy.deepcopy(list(calls)),
                                   copy.deepcopy(question.ground_truth), official.python,
                                   question.category, official.model_name)
    if verdict.get("valid"):
        return _OK
    errors = verdict.get("error") or [verdict.get("error_type") or "invalid"]
    return CheckResult(False, "; ".join(str(e) for e in errors)[:300])
