"""The strict validation rules of ToolRegistry.validate, one test per rule."""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.tools import tool as lc_tool
from pydantic import BaseModel, Field

from callgate import ToolRegistry, ValidationResult


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
