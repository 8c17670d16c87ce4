"""callgate's verdicts against plain ``jsonschema`` on random schemas and values.

The only disagreements allowed are the documented strictness rules of
:mod:`callgate.tools.validation`, asserted one by one: an int-valued float is not an integer,
and unknown top-level arguments are dropped (defaults and widened ints are checked on the
returned args, and never change a verdict).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, validators

from callgate.tools.validation import check_args, compile_schema

KEYS = ["a", "b", "c", "n_1"]
PATTERN = "^n_"
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
FORMAT = Draft202012Validator.FORMAT_CHECKER

# Integers and int-valued floats side by side, so the integer rule is exercised often.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 6),
    st.sampled_from([0.0, 1.0, 2.0, -3.0, 6.0, 0.5, 2.5]),
    st.sampled_from(["", "a", "ab", "x1", "A", "2024-01-02", "2024-13-02", "a@b", "1.2.3.4"]),
)
values = st.recursive(
    scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=3),
                           st.dictionaries(st.sampled_from(KEYS + ["z"]), kids, max_size=3)),
    max_leaves=8,
)


def _optional(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries({k: st.just(v) for k, v in required.items()},
                                 optional=optional)


def leaf_schemas(with_ref: bool) -> st.SearchStrategy[Any]:
    numbers = st.integers(-2, 4)
    options = [
        st.booleans(),
        st.just({}),
        st.builds(lambda t: {"type": t},
                  st.one_of(st.sampled_from(TYPES),
                            st.lists(st.sampled_from(TYPES), min_size=1, max_size=3,
                                     unique=True))),
        st.builds(lambda e: {"enum": e}, st.lists(scalars, min_size=1, max_size=3)),
        st.builds(lambda c: {"const": c}, scalars),
        _optional({}, {"type": st.sampled_from(["integer", "number"]), "minimum": numbers,
                       "maximum": numbers, "exclusiveMinimum": numbers,
                       "exclusiveMaximum": numbers,
                       "multipleOf": st.sampled_from([2, 3, 0.5])}),
        _optional({"type": "string"}, {"pattern": st.sampled_from(["^a", "[0-9]", "^$"]),
                                       "minLength": st.integers(0, 2),
                                       "maxLength": st.integers(0, 3),
                                       "format": st.sampled_from(["date", "email", "ipv4"])}),
    ]
    if with_ref:
        options.append(st.just({"$ref": "#/$defs/d"}))
    return st.one_of(options)


def composite(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(KEYS)
    return st.one_of(
        _optional({"type": "array"}, {"items": kids,
                                      "prefixItems": st.lists(kids, min_size=1, max_size=2),
                                      "uniqueItems": st.booleans(),
                                      "minItems": st.integers(0, 2),
                                      "maxItems": st.integers(0, 3), "contains": kids}),
        _optional({"type": "object"}, {
            "properties": st.dictionaries(keys, kids, max_size=3),
            "required": st.lists(keys, max_size=2, unique=True),
            "additionalProperties": kids,
            "patternProperties": st.builds(lambda s: {PATTERN: s}, kids),
            "dependentRequired": st.builds(lambda k: {"a": k},
                                           st.lists(keys, max_size=2, unique=True)),
            "minProperties": st.integers(0, 2)}),
        st.builds(lambda o: {"anyOf": o}, st.lists(kids, min_size=1, max_size=3)),
        st.builds(lambda o: {"oneOf": o}, st.lists(kids, min_size=1, max_size=3)),
        st.builds(lambda o: {"allOf": o}, st.lists(kids, min_size=1, max_size=2)),
        st.builds(lambda n: {"not": n}, kids),
        _optional({}, {"if": kids, "then": kids, "else": kids}),
    )


def _with_default(schema: Any, default: Any) -> Any:
    return {**schema, "default": default} if isinstance(schema, dict) else schema


# One keyword at a time, each with values that often meet it or just miss it.
small = st.sampled_from([0, 1, 2, 3, 1.0, 2.0, 2.5, True, False, None, "", "a", "ab", "x1",
                         "2024-01-02", "1.2.3.4", "a@b"])
small_numbers = st.sampled_from([-1, 0, 1, 2, 3, 6, 1.0, 2.0, 0.5, 1.5, True, "2"])
small_strings = st.sampled_from(["", "a", "ab", "x1", "2024-01-02", "2024-13-01", "1.2.3.4",
                                 "1.2.3", "a@b", "ab.c", 1])
small_lists = st.lists(st.sampled_from([1, 1.0, 2, "a", True, None]), max_size=3)
small_objects = st.dictionaries(st.sampled_from(KEYS + ["z"]), small, max_size=3)
leaf = leaf_schemas(False)
bound = st.integers(-1, 3)


def _one(keyword: str, argument: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.builds(lambda v: {keyword: v}, argument)


# keyword -> (its schemas, the values tried against them)
KEYWORD_CASES: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = {
    "type": (leaf, small),
    "const": (_one("const", small), small),
    "enum": (_one("enum", st.lists(small, min_size=1, max_size=3)), small),
    "uniqueItems": (st.just({"uniqueItems": True}), small_lists),
    "multipleOf": (_one("multipleOf", st.sampled_from([2, 3, 0.5])), small_numbers),
    "minimum": (_one("minimum", bound), small_numbers),
    "maximum": (_one("maximum", bound), small_numbers),
    "exclusiveMinimum": (_one("exclusiveMinimum", bound), small_numbers),
    "exclusiveMaximum": (_one("exclusiveMaximum", bound), small_numbers),
    "minLength": (_one("minLength", st.integers(1, 2)), small_strings),
    "maxLength": (_one("maxLength", st.integers(0, 2)), small_strings),
    "pattern": (_one("pattern", st.sampled_from(["^a", "[0-9]", "^$"])), small_strings),
    "format": (_one("format", st.sampled_from(["date", "email", "ipv4"])), small_strings),
    "minItems": (_one("minItems", st.integers(1, 3)), small_lists),
    "maxItems": (_one("maxItems", st.integers(0, 2)), small_lists),
    "items": (_one("items", leaf), small_lists),
    "prefixItems": (st.builds(lambda p, i: {"prefixItems": p, "items": i},
                              st.lists(leaf, min_size=1, max_size=2), st.one_of(leaf, st.none())),
                    small_lists),
    "contains": (_optional({}, {"contains": leaf, "minContains": st.integers(0, 2),
                                "maxContains": st.integers(0, 2)}), small_lists),
    "not": (_one("not", leaf), small),
    "if": (_optional({}, {"if": leaf, "then": leaf, "else": leaf}), small),
    "anyOf": (_one("anyOf", st.lists(leaf, min_size=1, max_size=3)), small),
    "oneOf": (_one("oneOf", st.lists(leaf, min_size=1, max_size=3)), small),
    "allOf": (_one("allOf", st.lists(leaf, min_size=1, max_size=3)), small),
    "$ref": (st.just({"$ref": "#/$defs/d"}), small),
    "required": (_one("required", st.lists(st.sampled_from(KEYS), min_size=1, max_size=2,
                                           unique=True)), small_objects),
    "dependentRequired": (_one("dependentRequired", st.builds(
        lambda k: {"a": k}, st.lists(st.sampled_from(KEYS), min_size=1, max_size=2,
                                     unique=True))), small_objects),
    "additionalProperties": (st.builds(
        lambda p, x: {"properties": p, "additionalProperties": x},
        st.dictionaries(st.sampled_from(KEYS), leaf, max_size=2),
        st.one_of(st.just(False), leaf)), small_objects),
    "patternProperties": (_one("patternProperties", st.builds(lambda s: {PATTERN: s}, leaf)),
                          small_objects),
    "minProperties": (_one("minProperties", st.integers(1, 2)), small_objects),
    "maxProperties": (_one("maxProperties", st.integers(0, 2)), small_objects),
}
keyword_cases = st.sampled_from(sorted(KEYWORD_CASES)).flatmap(
    lambda k: st.tuples(st.just(k), KEYWORD_CASES[k][0].map(
        lambda s: {k2: v for k2, v in s.items() if v is not None}
        if isinstance(s, dict) else s), KEYWORD_CASES[k][1]))

sub_schemas = st.recursive(leaf_schemas(True), composite, max_leaves=5)
defs = st.recursive(leaf_schemas(False), composite, max_leaves=4)
numeric = st.sampled_from([{"type": "integer"}, {"type": "number"}, {"type": ["integer", "null"]},
                           {"type": "array", "items": {"type": "integer"}},
                           {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                           {"not": {"type": "integer"}}])
properties = st.dictionaries(
    st.sampled_from(KEYS),
    st.one_of(sub_schemas, numeric, numeric, st.builds(_with_default, sub_schemas, scalars)),
    max_size=4)
roots = st.builds(
    lambda base, extra: {**base, **extra},
    st.fixed_dictionaries({"type": st.just("object"), "properties": properties,
                           "$defs": st.builds(lambda d: {"d": d}, defs)}),
    st.fixed_dictionaries({}, optional={
        "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
        "additionalProperties": st.one_of(st.just(False), st.booleans(), sub_schemas),
        "patternProperties": st.builds(lambda s: {PATTERN: s}, sub_schemas),
        "dependentRequired": st.builds(lambda k: {"a": k},
                                       st.lists(st.sampled_from(KEYS), max_size=2,
                                                unique=True)),
        "minProperties": st.integers(0, 3),
    }),
)
numbers = st.one_of(st.integers(-3, 6), st.sampled_from([0.0, 2.0, 6.0, 2.5]))
args = st.dictionaries(st.sampled_from(KEYS + ["z", "n_2"]),
                       st.one_of(values, numbers, st.lists(numbers, max_size=3)), max_size=4)



@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random schema and arguments: deep and general, or numeric (where the integer rule
    bites)."""
    if draw(st.booleans()):
        return draw(roots), draw(args)
    props = draw(st.dictionaries(st.sampled_from(KEYS), numeric, min_size=1, max_size=3))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    unknown = draw(st.booleans())  # then an unknown name, under additionalProperties false
    if unknown:
        schema["additionalProperties"] = False
    names = st.sampled_from([*props, "z"] if unknown else list(props))
    value = draw(st.dictionaries(names, st.one_of(numbers, st.lists(numbers, max_size=2)),
                                 min_size=1, max_size=2))
    return schema, value


# The integer rule, stated on jsonschema itself: its type checker with exact integers.
_exact_integer = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool))
ExactIntegers = validators.extend(Draft202012Validator, type_checker=_exact_integer)


def expected_dropped(schema: dict[str, Any], value: dict[str, Any]) -> list[str]:
    """The unknown top-level names, worked out from the schema (the dropping rule)."""
    extra = schema.get("additionalProperties")
    if "properties" not in schema or extra is not None and extra is not False:
        return []
    known = set(schema["properties"]) | set(schema.get("required", []))
    for trigger, needs in schema.get("dependentRequired", {}).items():
        known |= {trigger, *needs}
    patterns = list(schema.get("patternProperties", {}))
    return [k for k in value if k not in known and not any(re.search(p, k) for p in patterns)]


def int_valued_floats(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(int_valued_floats(v) for v in value.values())
    if isinstance(value, list):
        return any(int_valued_floats(v) for v in value)
    return False


def has_default(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(has_default(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_default(v) for v in schema)
    return False


def test_verdicts_match_jsonschema_but_for_the_documented_rules() -> None:
    seen: Counter[str] = Counter()

    @settings(max_examples=300, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=cases())
    def one_case(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
        seen[compare(*case)] += 1

    one_case()
    print(dict(seen))
    # Enough of each kind for the comparison to mean something.
    assert seen["agrees: valid"] >= 60 and seen["agrees: invalid"] >= 60, seen
    assert seen["differs: 5.0 is not an integer"] >= 8, seen
    assert seen["differs: unknown args dropped"] >= 8, seen


def test_each_keyword_agrees_with_jsonschema() -> None:
    verdicts: dict[str, set[bool]] = {k: set() for k in KEYWORD_CASES}

    @settings(max_examples=500, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(case=keyword_cases)
    def one_case(case: tuple[str, Any, Any]) -> None:
        keyword, schema, value = case
        root = {"type": "object", "properties": {"a": schema}, "$defs": {"d": {"type": "integer"}}}
        if keyword in ("required", "dependentRequired", "minProperties", "maxProperties",
                       "additionalProperties", "patternProperties"):
            root, args = {"type": "object", **schema}, value  # on the arguments themselves
        else:
            args = {"a": value}
        compare(root, args)
        verdicts[keyword].add(check_args(root, args).ok)

    one_case()
    # Every keyword was seen both passing and failing, agreeing with jsonschema each time.
    assert {k: v for k, v in verdicts.items() if v != {True, False}} == {}


def compare(schema: dict[str, Any], value: dict[str, Any]) -> str:
    """Check one case; return which kind it was."""
    compile_schema(schema)  # the schema passes its meta-schema (raises otherwise)
    plain = Draft202012Validator(schema, format_checker=FORMAT)
    exact = ExactIntegers(schema, format_checker=FORMAT)
    result = check_args(schema, value)

    # Rule: unknown top-level arguments are dropped and reported.
    dropped = expected_dropped(schema, value)
    assert result.dropped == dropped
    kept = {k: v for k, v in value.items() if k not in dropped}

    # Rule: an int-valued float is not an integer. With it and dropping, the verdict is
    # jsonschema's, exactly.
    assert result.ok == exact.is_valid(kept), (result.errors, schema, value)

    plain_verdict = plain.is_valid(value)
    if result.ok == plain_verdict:
        kind = "agrees: " + ("valid" if result.ok else "invalid")
    else:
        by_dropping = plain.is_valid(kept) != plain_verdict
        by_integers = plain.is_valid(kept) != exact.is_valid(kept)
        assert by_dropping or by_integers, (schema, value)
        assert not by_integers or int_valued_floats(kept), (schema, value)
        kind = "differs: " + ("unknown args dropped" if by_dropping else
                              "5.0 is not an integer")
    event(kind)

    if not result.ok:
        assert result.errors and all(
            e.startswith(("argument '", "arguments", "and ")) for e in result.errors), (
            result.errors)
        return kind
    # Rule: defaults injected where their own property's schema takes them (a default it
    # rejects, ``unit: str = None``, is the tool's to apply); they never change the verdict
    # (checked before injection).
    for key, prop in schema.get("properties", {}).items():
        if key not in kept and isinstance(prop, dict) and "default" in prop:
            if exact.evolve(schema={**prop, "$defs": schema.get("$defs", {})}).is_valid(
                    prop["default"]):
                assert result.args[key] == prop["default"]
            else:
                assert key not in result.args
    # Rule: an int where a plain {"type": "number"} property applies becomes a float.
    for key, prop in schema.get("properties", {}).items():
        if (isinstance(kept.get(key), int) and not isinstance(kept[key], bool)
                and prop == {"type": "number"} and not re.search(PATTERN, key)):
            assert isinstance(result.args[key], float)
    if not has_default(schema):
        # Widened args are still valid, and equal (==) to what was given.
        assert result.args == kept and exact.is_valid(result.args), (schema, value,
                                                                     result.args)
    return kind
