"""The strict validation rules of ToolRegistry.validate, one test per rule."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest
from langchain_core.tools import StructuredTool
from langchain_core.tools import tool as lc_tool
from pydantic import BaseModel, Field

from callgate import ToolRegistry, ValidationResult
from callgate.tools.registry import Tool
from callgate.tools.validation import SchemaInvalid, compile_schema


class Point(BaseModel):
    x: int
    y: float = 0.0


def area(width: float, height: float, unit: str = "m") -> str:
    """Area of a rectangle."""
    return f"{width * height} {unit}^2"


def repeat(text: str, times: int, loud: bool = False) -> str:
    """Repeat a text."""
    return text * times


def plot(points: list[Point], style: Literal["dot", "line"] = "dot") -> int:
    """Plot points."""
    return len(points)


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    for func in (area, repeat, plot):
        reg.register(func)
    return reg


def test_result_is_a_named_tuple(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repeat", "args": {"text": "a", "times": 2}})
    assert isinstance(result, ValidationResult) and isinstance(result, tuple)
    valid, error, tool, args = result
    assert (valid, error, tool) == (True, None, "repeat")
    assert args == {"text": "a", "times": 2, "loud": False}  # default injected


def test_name_arguments_envelope(registry: ToolRegistry) -> None:
    result = registry.validate({"name": "repeat", "arguments": {"text": "a", "times": 1}})
    assert result.valid and result.tool == "repeat"


def test_arguments_as_json_string(registry: ToolRegistry) -> None:
    assert registry.validate({"name": "repeat", "arguments": '{"text": "a", "times": 1}'}).valid
    bad = registry.validate({"name": "repeat", "arguments": '{"text": "a", "times": '})
    assert not bad.valid and "not valid JSON" in bad.error


@pytest.mark.parametrize("payload", [None, [], "repeat", 5])
def test_payload_must_be_an_object(registry: ToolRegistry, payload: object) -> None:
    result = registry.validate(payload)
    assert not result.valid and "JSON object" in result.error


def test_payload_needs_a_tool_name(registry: ToolRegistry) -> None:
    result = registry.validate({"args": {}})
    assert not result.valid and "no tool name" in result.error and "repeat" in result.error


def test_unknown_tool_lists_valid_names_and_nearest(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repaet", "args": {}})
    assert not result.valid
    assert result.error.startswith("Unknown tool 'repaet'")
    assert "area, repeat, plot" in result.error
    assert "Did you mean 'repeat'?" in result.error


def test_required_argument_missing(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repeat", "args": {"text": "a"}})
    assert not result.valid
    assert "argument 'times'" in result.error and "expected integer" in result.error


def test_bool_is_never_an_int(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repeat", "args": {"text": "a", "times": True}})
    assert not result.valid
    assert "argument 'times': expected integer, got boolean True" in result.error


def test_bool_is_never_a_float(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "area", "args": {"width": False, "height": 2}})
    assert not result.valid and "argument 'width': expected number, got boolean False" in (
        result.error)


def test_numeric_string_is_never_an_int(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repeat", "args": {"text": "a", "times": "5"}})
    assert not result.valid and "expected integer, got string '5'" in result.error


def test_float_is_not_an_integer(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repeat", "args": {"text": "a", "times": 5.0}})
    assert not result.valid and "expected integer, got number 5.0" in result.error


def test_int_stands_for_float_and_becomes_float(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "area", "args": {"width": 2, "height": 3.5}})
    assert result.valid
    assert result.args["width"] == 2.0 and isinstance(result.args["width"], float)
    assert result.args["unit"] == "m"


def test_string_is_not_a_bool(registry: ToolRegistry) -> None:
    result = registry.validate(
        {"tool": "repeat", "args": {"text": "a", "times": 1, "loud": "yes"}})
    assert not result.valid and "argument 'loud': expected boolean" in result.error


def test_unknown_args_dropped_and_reported(registry: ToolRegistry) -> None:
    result = registry.validate(
        {"tool": "repeat", "args": {"text": "a", "times": 1, "colour": "red"}})
    assert result.valid and "colour" not in result.args
    assert result.dropped == ("colour",)


def test_nested_pydantic_types_are_exact(registry: ToolRegistry) -> None:
    ok = registry.validate({"tool": "plot", "args": {"points": [{"x": 1, "y": 2}]}})
    assert ok.valid and ok.args["points"] == [{"x": 1, "y": 2.0}]
    assert ok.args["style"] == "dot"
    bad = registry.validate({"tool": "plot", "args": {"points": [{"x": 1}, {"x": True}]}})
    assert not bad.valid and "argument 'points[1].x': expected integer, got boolean" in bad.error
    missing = registry.validate({"tool": "plot", "args": {"points": [{"y": 1.5}]}})
    assert not missing.valid and "argument 'points[0].x'" in missing.error


def test_enum_is_checked(registry: ToolRegistry) -> None:
    result = registry.validate(
        {"tool": "plot", "args": {"points": [], "style": "bars"}})
    assert not result.valid and "expected one of 'dot', 'line'" in result.error


def test_every_error_is_reported_at_once(registry: ToolRegistry) -> None:
    result = registry.validate({"tool": "repeat", "args": {"text": 3, "times": "x"}})
    assert "argument 'text'" in result.error and "argument 'times'" in result.error


def test_json_schema_tool_is_validated_strictly() -> None:
    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": ["string", "null"], "default": None}},
        "required": ["n"]}

    @lc_tool(args_schema=schema)
    def counted(n: int, tags: list[str] | None = None, mode: str | None = None) -> int:
        """Count."""
        return n

    reg = ToolRegistry([counted])
    assert reg.validate({"tool": "counted", "args": {"n": 2}}).args == {"n": 2, "mode": None}
    assert "expected a number >= 1" in reg.validate({"tool": "counted", "args": {"n": 0}}).error
    assert "argument 'tags[1]': expected string, got integer 2" in reg.validate(
        {"tool": "counted", "args": {"n": 1, "tags": ["a", 2]}}).error


def test_optional_pydantic_field() -> None:
    class Args(BaseModel):
        query: str
        limit: int | None = Field(default=None)

    @lc_tool(args_schema=Args)
    def find(query: str, limit: int | None = None) -> str:
        """Find."""
        return query

    reg = ToolRegistry([find])
    assert reg.validate({"tool": "find", "args": {"query": "q", "limit": None}}).valid
    bad = reg.validate({"tool": "find", "args": {"query": "q", "limit": True}})
    assert not bad.valid and "argument 'limit'" in bad.error


def test_register_options_and_duplicates() -> None:
    reg = ToolRegistry()
    tool = reg.register(repeat, name="echo", description="Echo text.", timeout_s=3,
                        sensitive=True)
    assert (tool.name, tool.description, tool.timeout_s, tool.sensitive) == (
        "echo", "Echo text.", 3, True)
    assert [t.name for t in reg.as_langchain_tools()] == ["echo"]
    with pytest.raises(ValueError, match="already registered"):
        reg.register(repeat, name="echo")


def test_function_without_docstring_needs_description() -> None:
    def nodoc(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="needs a description"):
        ToolRegistry().register(nodoc)
    assert ToolRegistry().register(nodoc, description="Identity.").name == "nodoc"


def test_async_function_and_decorator() -> None:
    reg = ToolRegistry()

    @reg.tool(timeout_s=1)
    async def ping(host: str) -> str:
        """Ping a host."""
        return host

    assert "ping" in reg and reg.get("ping").runnable.coroutine is not None


# -- jsonschema keywords and callgate's strictness rules -------------------------------------
def schema_registry(schema: dict[str, Any], name: str = "t") -> ToolRegistry:
    """A registry with one tool whose schema is ``schema`` as given (no LangChain rewriting)."""
    runnable = StructuredTool(name=name, description="Test tool.",
                              args_schema={"type": "object"}, func=lambda **kw: kw)
    registry = ToolRegistry()
    registry.add(Tool(name=name, description="Test tool.", schema=schema, runnable=runnable))
    return registry


def check_one(prop: Any, value: Any) -> ValidationResult:
    """Validate ``{"v": value}`` against a tool whose only property ``v`` is ``prop``."""
    registry = schema_registry({"type": "object", "properties": {"v": prop}})
    return registry.validate({"tool": "t", "args": {"v": value}})


KEYWORD_CASES = [
    # (property schema, a value it accepts, a value it rejects, fragment of the error)
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, -1, 3,
     "argument 'v': expected exactly one of 2 options to match, got integer 3, which matches "
     "options 1 and 2"),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, "x",
     "argument 'v': expected integer or null, got string 'x'"),
    ({"allOf": [{"type": "integer"}, {"minimum": 5}]}, 5, 3,
     "argument 'v': expected a number >= 5, got integer 3"),
    ({"not": {"type": "string"}}, 1, "x",
     "argument 'v': expected a value not matching {\"type\": \"string\"}, got string 'x'"),
    ({"enum": ["a", "b"]}, "a", "c", "argument 'v': expected one of 'a', 'b', got string 'c'"),
    ({"enum": [1, 2]}, 1, True, "expected one of 1, 2, got boolean True"),
    ({"const": 1}, 1, True, "argument 'v': expected 1, got boolean True"),
    ({"type": "string", "pattern": "^[a-z]+$"}, "abc", "Abc",
     "argument 'v': expected a string matching '^[a-z]+$', got string 'Abc'"),
    ({"type": "string", "minLength": 2}, "ab", "a",
     "argument 'v': expected at least 2 characters, got 1: string 'a'"),
    ({"type": "string", "maxLength": 2}, "ab", "abc", "expected at most 2 characters, got 3"),
    ({"type": "number", "maximum": 1}, 1, 1.5, "argument 'v': expected a number <= 1, got "
                                               "number 1.5"),
    ({"type": "number", "exclusiveMinimum": 0}, 0.1, 0, "expected a number > 0, got integer 0"),
    ({"type": "number", "exclusiveMaximum": 0}, -1, 0, "expected a number < 0, got integer 0"),
    ({"type": "integer", "multipleOf": 5}, 10, 12,
     "argument 'v': expected a multiple of 5, got integer 12"),
    ({"type": "array", "items": {"type": "integer"}}, [1, 2], [1, "2"],
     "argument 'v[1]': expected integer, got string '2'"),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, ["a", 1],
     ["a", "b"], "argument 'v[1]': expected integer, got string 'b'"),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": False}, ["a"], ["a", 2],
     "argument 'v': expected at most 1 items, got 2"),
    ({"type": "array", "minItems": 1}, [0], [], "argument 'v': expected at least 1 items, got 0"),
    ({"type": "array", "uniqueItems": True}, [1, 2], [1, 2, 1],
     "argument 'v': expected unique items, got a repeated item in array [1, 2, 1]"),
    ({"type": "array", "contains": {"type": "string"}}, [1, "a"], [1, 2],
     "argument 'v': expected at least 1 items matching {\"type\": \"string\"}"),
    ({"type": "object", "properties": {"x": {}}, "additionalProperties": False}, {"x": 1},
     {"x": 1, "y": 2}, "argument 'v.y': unexpected argument (allowed: x)"),
    ({"type": "object", "patternProperties": {"^n_": {"type": "integer"}}}, {"n_a": 1},
     {"n_a": "1"}, "argument 'v.n_a': expected integer, got string '1'"),
    ({"type": "object", "dependentRequired": {"card": ["cvv"]}}, {"card": 1, "cvv": 2},
     {"card": 1}, "argument 'v.cvv': required argument missing when 'card' is given"),
    ({"type": "object", "if": {"properties": {"kind": {"const": "box"}}},
      "then": {"required": ["size"]}, "else": {"required": ["name"]}},
     {"kind": "box", "size": 2}, {"kind": "box", "name": "x"},
     "argument 'v.size': required argument missing"),
    ({"type": "object", "minProperties": 1}, {"a": 1}, {},
     "argument 'v': expected at least 1 properties, got 0"),
    ({"type": "string", "format": "date"}, "2026-11-23", "2026-13-01",
     "argument 'v': expected a valid date string, got string '2026-13-01'"),
    ({"type": "string", "format": "email"}, "a@b.c", "nobody",
     "expected a valid email string, got string 'nobody'"),
    ({"type": "string", "format": "ipv4"}, "10.0.0.1", "10.0.0.256", "expected a valid ipv4"),
    (False, None, 1, "argument 'v': no value is allowed here (the schema is false), got "
                     "integer 1"),
]


@pytest.mark.parametrize(("prop", "good", "bad", "fragment"), KEYWORD_CASES,
                         ids=[str(c[0])[:40] for c in KEYWORD_CASES])
def test_every_keyword_is_honoured(prop: Any, good: Any, bad: Any, fragment: str) -> None:
    if prop is not False:
        assert check_one(prop, good).valid, check_one(prop, good).error
    result = check_one(prop, bad)
    assert not result.valid
    assert result.error.startswith("invalid call to 't': ")
    assert fragment in result.error, result.error


def test_ref_and_defs_with_the_argument_path() -> None:
    schema = {"type": "object", "$defs": {"Line": {
        "type": "object", "properties": {"sku": {"type": "string"},
                                         "qty": {"type": "integer", "minimum": 1},
                                         "gift": {"type": "boolean", "default": False}},
        "required": ["sku", "qty"]}},
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                       "note": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}},
        "required": ["items"]}
    registry = schema_registry(schema, "order")
    bad = registry.validate({"tool": "order", "args": {"items": [
        {"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}, {"sku": "c", "qty": True}]}})
    assert bad.error == ("invalid call to 'order': argument 'items[2].qty': expected integer, "
                         "got boolean True")
    # A union's one fitting branch says what is wrong inside it.
    inner = registry.validate({"tool": "order", "args": {"items": [], "note": {"sku": 1,
                                                                               "qty": 1}}})
    assert "argument 'note.sku': expected string, got integer 1" in inner.error
    ok = registry.validate({"tool": "order", "args": {"items": [{"sku": "a", "qty": 1}],
                                                      "note": {"sku": "n", "qty": 2}}})
    assert ok.valid
    # Defaults are injected in nested objects reached through $ref, items and one anyOf branch.
    assert ok.args == {"items": [{"sku": "a", "qty": 1, "gift": False}],
                       "note": {"sku": "n", "qty": 2, "gift": False}}


def test_error_names_path_expected_type_and_value() -> None:
    registry = schema_registry({"type": "object", "properties": {"city": {"type": "string"}}},
                               "get_weather")
    result = registry.validate({"tool": "get_weather", "args": {"city": True}})
    assert result.error == ("invalid call to 'get_weather': argument 'city': expected string, "
                            "got boolean True")


def test_received_values_are_clipped() -> None:
    result = check_one({"type": "integer"}, "x" * 5000)
    assert not result.valid and "..." in result.error and len(result.error) < 200


def test_many_errors_are_counted_not_listed() -> None:
    result = check_one({"type": "array", "items": {"type": "integer"}}, ["x"] * 30)
    assert "argument 'v[7]'" in result.error and "argument 'v[8]'" not in result.error
    assert result.error.endswith("and 22 more errors")


def test_number_rules() -> None:
    assert "expected number, got string '5'" in check_one({"type": "number"}, "5").error
    assert "expected number, got boolean True" in check_one({"type": "number"}, True).error
    assert not check_one({"type": "integer"}, 5.0).valid
    assert check_one({"type": "number"}, 5.0).valid
    # An int widens to a float where the schema says number, also nested...
    widened = check_one({"type": "array", "items": {"type": "number"}}, [1, 2.5])
    assert widened.args == {"v": [1.0, 2.5]} and isinstance(widened.args["v"][0], float)
    # ...and stays an int where anything applicable says integer.
    for prop in ({"type": ["number", "integer"]}, {"allOf": [{"type": "number"},
                                                             {"type": "integer"}]}):
        kept = check_one(prop, 3)
        assert kept.valid and type(kept.args["v"]) is int, prop
    # A widening that would flip the verdict is not made.
    tricky = {"oneOf": [{"type": "number"}, {"not": {"type": "integer"}}]}
    assert check_one(tricky, 3).valid and type(check_one(tricky, 3).args["v"]) is int
    huge = check_one({"type": "number"}, 10**400)
    assert huge.valid and huge.args["v"] == 10**400  # too big for a float: left an int


def test_defaults_are_injected_where_they_fit_and_copied() -> None:
    registry = schema_registry({"type": "object", "properties": {
        "tags": {"type": "array", "default": []},
        "mode": {"type": "string", "default": None}}})
    first = registry.validate({"tool": "t", "args": {}})
    # A default its own schema rejects is the tool's to apply, not written in.
    assert first.valid and first.args == {"tags": []}
    first.args["tags"].append("x")  # a caller's change never reaches the schema
    assert registry.validate({"tool": "t", "args": {}}).args["tags"] == []


def test_a_functions_none_default_is_its_own_to_apply() -> None:
    # ``unit: str = None`` is common Python: its schema's default None is no string, and
    # written in, the function's pydantic model refused every call that left ``unit`` out.
    def weather(city: str, unit: str = None, days: int = 1) -> str:  # type: ignore[assignment]
        """Weather."""
        return f"{city} {unit} {days}"

    registry = ToolRegistry([weather])
    checked = registry.validate({"tool": "weather", "args": {"city": "Paris"}})
    assert checked.valid and checked.args == {"city": "Paris", "days": 1}
    assert registry.get("weather").runnable.invoke(checked.args) == "Paris None 1"


@pytest.mark.parametrize(("options", "fragment"), [
    ({"timeout_s": 0}, "timeout_s must be a positive number"),
    ({"timeout_s": -1}, "timeout_s must be a positive number"),
    ({"timeout_s": "5"}, "timeout_s must be a positive number"),
    ({"timeout_s": float("inf")}, "timeout_s must be a positive number"),
    ({"sensitive": "no"}, "sensitive must be True or False")])
def test_register_refuses_a_bad_option_as_tools_yml_does(options: dict[str, Any],
                                                        fragment: str) -> None:
    # 0 had meant the default, and "5" and -1 failed every call at run time, as the tool's
    # own error; "no" made the tool sensitive.
    with pytest.raises(ValueError, match=fragment):
        ToolRegistry().register(repeat, **options)


def test_a_function_taking_kwargs_or_a_schema_with_a_dangling_ref_is_refused() -> None:
    def anything(**kwargs: Any) -> str:
        """Anything."""
        return str(kwargs)

    with pytest.raises(TypeError, match="its \\*\\*kwargs name no arguments"):
        ToolRegistry().register(anything)

    def weather(city: str, **kwargs: Any) -> str:  # named arguments beside: as before
        """Weather."""
        return city

    assert ToolRegistry([weather]).validate({"tool": "weather", "args": {"city": "Paris"}}).valid
    dangling = StructuredTool(name="r", description="R.", func=lambda a: a, args_schema={
        "type": "object", "properties": {"a": {"$ref": "#/defs/nope"}}})
    with pytest.raises(SchemaInvalid, match="tool 'r'.*#/defs/nope"):
        ToolRegistry().register(dangling)


def test_unknown_arguments_dropped_unless_allowed() -> None:
    closed = schema_registry({"type": "object", "properties": {"a": {}},
                              "additionalProperties": False})
    result = closed.validate({"tool": "t", "args": {"a": 1, "b": 2}})
    assert result.valid and result.args == {"a": 1} and result.dropped == ("b",)
    typed_extra = schema_registry({"type": "object", "properties": {"a": {}},
                                   "additionalProperties": {"type": "string"}})
    assert typed_extra.validate({"tool": "t", "args": {"a": 1, "b": "x"}}).args == {
        "a": 1, "b": "x"}
    assert "argument 'b': expected string" in typed_extra.validate(
        {"tool": "t", "args": {"a": 1, "b": 2}}).error
    patterned = schema_registry({"type": "object", "properties": {"a": {}},
                                 "patternProperties": {"^x_": {"type": "integer"}}})
    kept = patterned.validate({"tool": "t", "args": {"x_1": 1, "y": 2}})
    assert kept.args == {"x_1": 1} and kept.dropped == ("y",)
    unlisted = schema_registry({"type": "object"})  # no properties listed: nothing is unknown
    assert unlisted.validate({"tool": "t", "args": {"q": 1}}).args == {"q": 1}
    # A name only `required` lists is known, so it is checked, not dropped.
    required_only = schema_registry({"type": "object", "properties": {"a": {}},
                                     "required": ["b"]})
    assert required_only.validate({"tool": "t", "args": {"b": 1}}).args == {"b": 1}


def test_boolean_sub_schemas_never_raise() -> None:
    registry = schema_registry({"type": "object", "properties": {
        "any": True, "none": False, "list": {"type": "array", "items": False},
        "pick": {"anyOf": [False, {"type": "integer"}]}}})
    assert registry.validate({"tool": "t", "args": {"any": [1], "list": [], "pick": 1}}).valid
    for args, fragment in [({"none": 1}, "argument 'none': no value is allowed here"),
                           ({"list": [1]}, "argument 'list': expected at most 0 items"),
                           ({"pick": "x"}, "argument 'pick': expected integer, got string")]:
        result = registry.validate({"tool": "t", "args": args})
        assert not result.valid and fragment in result.error, result.error


def test_deep_values_are_invalid_not_a_crash() -> None:
    deep: Any = 1
    for _ in range(10_000):
        deep = [deep]
    result = check_one({}, deep)
    assert not result.valid and "nested deeper than 32 levels" in result.error
    text = '{"v": ' + "[" * 100_000 + "]" * 100_000 + "}"
    parsed = schema_registry({"type": "object"}).validate({"tool": "t", "arguments": text})
    assert not parsed.valid and "could not be read" in parsed.error
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert not check_one({}, cyclic).valid


def test_recursive_schemas_are_checked() -> None:
    tree = {"type": "object", "$defs": {"node": {
        "type": "object", "properties": {"v": {"type": "integer"},
                                         "kids": {"type": "array",
                                                  "items": {"$ref": "#/$defs/node"}}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}}}
    registry = schema_registry(tree)
    node: dict[str, Any] = {"v": 1}
    for _ in range(10):
        node = {"v": 1, "kids": [node]}
    assert registry.validate({"tool": "t", "args": {"root": node}}).valid
    node["kids"][0]["v"] = "x"
    assert "argument 'root.kids[0].v': expected integer" in registry.validate(
        {"tool": "t", "args": {"root": node}}).error
    # A schema that only ever refers to itself: invalid, not a RecursionError.
    endless = schema_registry({"type": "object", "properties": {"v": {"$ref": "#/properties/v"}}})
    result = endless.validate({"tool": "t", "args": {"v": 1}})
    assert not result.valid and "nested too deeply" in result.error


@pytest.mark.parametrize("args", [{"v": {1: "a"}}, {"v": 10**5000}, {"v": float("inf")},
                                  {"v": {1, 2}}, {"v": b"\xff"}])
def test_python_values_never_raise(args: dict[str, Any]) -> None:
    registry = schema_registry({"type": "object", "properties": {
        "v": {"type": ["number", "object"], "multipleOf": 0.1,
              "patternProperties": {"^a": {}}}}})
    result = registry.validate({"tool": "t", "args": args})
    assert not result.valid and result.error.startswith("invalid call to 't': ")


def test_tuples_are_arrays() -> None:
    result = check_one({"type": "array", "items": {"type": "number"}}, (1, 2))
    assert result.valid and result.args == {"v": [1.0, 2.0]}


def test_schema_checked_once_at_registration() -> None:
    with pytest.raises(ValueError, match=r"tool 'bad': its parameters schema is not a valid "
                                         r"JSON schema at properties/a/type"):
        schema_registry({"type": "object", "properties": {"a": {"type": "strin"}}}, "bad")
    with pytest.raises(ValueError, match=r"tool 'bad': .*properties/a/\$ref: \$ref "
                                         r"'#/\$defs/Nope' points nowhere"):
        schema_registry({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}},
                        "bad")
    with pytest.raises(ValueError, match="tool 'bad': .*is not a 'regex'"):
        schema_registry({"type": "object", "properties": {"a": {"pattern": "(["}}}, "bad")

    @lc_tool(args_schema={"type": "object", "properties": {"n": {"type": "integr"}}})
    def broken(n: int) -> int:
        """Broken."""
        return n

    with pytest.raises(ValueError, match="tool 'broken'"):
        ToolRegistry([broken])


def test_compiled_validator_is_cached_per_schema() -> None:
    registry = schema_registry({"type": "object", "properties": {"a": {"type": "integer"}}})
    schema = registry.get("t").schema
    assert compile_schema(schema) is compile_schema(schema)
    assert compile_schema(schema) is not compile_schema(dict(schema))


def test_remote_refs_are_not_fetched() -> None:
    registry = schema_registry({"type": "object", "properties": {
        "a": {"$ref": "http://127.0.0.1:9/schema.json"}}})
    result = registry.validate({"tool": "t", "args": {"a": 1}})
    assert not result.valid and "cannot be resolved" in result.error


def test_declared_draft_is_honoured() -> None:
    # Draft 7: tuple-form items and additionalItems (not valid in 2020-12).
    registry = schema_registry({"$schema": "http://json-schema.org/draft-07/schema#",
                                "type": "object", "properties": {"p": {
                                    "type": "array", "items": [{"type": "string"},
                                                               {"type": "number"}],
                                    "additionalItems": False}}})
    ok = registry.validate({"tool": "t", "args": {"p": ["a", 1]}})
    assert ok.valid and ok.args == {"p": ["a", 1.0]}
    assert "argument 'p[1]': expected number, got string" in registry.validate(
        {"tool": "t", "args": {"p": ["a", "b"]}}).error
    assert not registry.validate({"tool": "t", "args": {"p": ["a", 1, 2]}}).valid
    assert "expected integer, got number 2.0" in schema_registry(
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
         "properties": {"n": {"type": "integer"}}}).validate(
        {"tool": "t", "args": {"n": 2.0}}).error


def test_defaults_can_be_left_out(registry: ToolRegistry) -> None:
    edit = registry.validate({"tool": "area", "args": {"width": 2, "height": 3}}, defaults=False)
    assert edit.valid and edit.args == {"width": 2.0, "height": 3.0}  # widened, no unit
    assert not registry.validate({"tool": "area", "args": {"width": 2}}, defaults=False).valid


def test_union_of_objects_names_the_matching_option() -> None:
    registry = schema_registry({
        "type": "object",
        "properties": {"kind": {"type": "string"}, "size": {"type": "integer"}},
        "oneOf": [{"properties": {"kind": {"const": "box"}}, "required": ["size"]},
                  {"properties": {"kind": {"const": "bag"}}}]})
    assert registry.validate({"tool": "t", "args": {"kind": "bag"}}).valid
    missing = registry.validate({"tool": "t", "args": {"kind": "box"}})
    assert missing.error == ("invalid call to 't': argument 'size': required argument missing "
                             "(expected integer)")
    other = registry.validate({"tool": "t", "args": {"kind": "tin"}})
    assert "arguments: expected object with kind='box' or object with kind='bag', got " \
           "object {'kind': 'tin'}" in other.error


def test_conversation_words_checked_on_add() -> None:
    def find(query: str, limit: int = 3) -> str:
        """Find things."""
        return query

    tool = ToolRegistry().register(find, conversation_words=["query"])
    assert tool.conversation_words == ("query",)
    for words, fragment in [(("topic",), "names no argument"), (("limit",), "not strings")]:
        with pytest.raises(ValueError, match=fragment):
            ToolRegistry().add(dataclasses.replace(tool, conversation_words=words))


def test_synonyms_are_one_word_to_one_word() -> None:
    def stats() -> dict[str, float]:
        """Memory usage."""
        return {"memory_percent": 2.5}

    tool = ToolRegistry().register(stats, synonyms={"RAM": "memory"})
    assert tool.synonyms == {"RAM": "memory"}
    assert ToolRegistry().register(stats).synonyms == {}
    for odd in [{"main memory": "memory"}, {"ram": ""}, {"ram": 3}, {"ram_use": "memory"}]:
        with pytest.raises(ValueError, match="synonyms map one word to one word"):
            ToolRegistry().add(dataclasses.replace(tool, synonyms=odd))
    # Not a mapping: the same clear error from register, not dict()'s own.
    with pytest.raises(ValueError, match="synonyms must map words to words, got list"):
        ToolRegistry().register(stats, synonyms=["ram", "memory"])  # type: ignore[arg-type]


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
      "required": ["q"]}, "q"),
    ({"type": "object", "properties": {"q": {"type": "string"}}}, "q"),
    ({"type": "object", "properties": {"q": {}}, "required": ["q"]}, "q"),
    ({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, None),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
     None),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
      "required": ["a", "b"]}, None),
    ({"type": "object", "properties": {}}, None),
])
def test_single_input_is_the_one_text_argument(schema: dict[str, Any],
                                               expected: str | None) -> None:
    from callgate.tools.registry import single_input

    assert single_input(schema) == expected


def test_single_inputs_of_a_registry() -> None:
    registry = ToolRegistry()

    def search(query: str, limit: int = 3) -> str:
        """Search."""
        return query

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    registry.register(search)
    registry.register(add)
    assert registry.single_inputs == {"search": "query"}
