"""Strict validation of tool arguments against a JSON schema.

Written here rather than taken from `jsonschema` or pydantic's lax mode because the loop
needs behaviour neither gives together: exact types (``True`` is never an int, ``5.0`` is
never an integer, ``"5"`` is never a number), ints widened to floats, defaults injected,
unknown arguments dropped and reported instead of rejected, and every error naming the
argument path, the expected type and the value received.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_PY_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
    type(None): "null",
}


@dataclass
class ArgsCheck:
    """The outcome of checking one arguments object."""

    args: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def describe_value(value: Any, limit: int = 60) -> str:
    """A short, type-revealing rendering of a received value for error messages."""
    kind = _PY_TYPE_NAMES.get(type(value), type(value).__name__)
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{kind} {text}"


def check_args(schema: dict[str, Any], args: Any) -> ArgsCheck:
    """Check ``args`` against an object ``schema``; return normalized args and errors."""
    if not isinstance(args, dict):
        return ArgsCheck({}, [f"arguments must be a JSON object, got {describe_value(args)}"])
    checker = _Checker(schema)
    normalized = checker.check(schema, args, "")
    return ArgsCheck(normalized if isinstance(normalized, dict) else {}, checker.errors,
                     checker.dropped)


class _Checker:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.errors: list[str] = []
        self.dropped: list[str] = []

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 32:
            ref = schema["$ref"]
            if not ref.startswith("#/"):
                return {k: v for k, v in schema.items() if k != "$ref"}
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            seen += 1
        return schema

    def fail(self, path: str, message: str) -> None:
        where = f"argument '{path}'" if path else "arguments"
        self.errors.append(f"{where}: {message}")

    def check(self, schema: dict[str, Any], value: Any, path: str) -> Any:
        schema = self.resolve(schema or {})
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.check_union(schema, schema[key], value, path)
        if "allOf" in schema:
            for sub in schema["allOf"]:
                value = self.check(sub, value, path)
            return value
        if "const" in schema and value != schema["const"]:
            self.fail(path, f"expected {schema['const']!r}, got {describe_value(value)}")
            return value
        if "enum" in schema and not _in_enum(value, schema["enum"]):
            options = ", ".join(repr(v) for v in schema["enum"])
            self.fail(path, f"expected one of {options}, got {describe_value(value)}")
            return value
        types = schema.get("type")
        if types is None:
            return self.check_typed(schema, _infer_type(schema, value), value, path)
        if isinstance(types, str):
            types = [types]
        for name in types:
            if _matches(name, value):
                return self.check_typed(schema, name, value, path)
        self.fail(path, f"expected {' or '.join(types)}, got {describe_value(value)}")
        return value

    def check_union(self, schema: dict[str, Any], options: list[dict[str, Any]], value: Any,
                    path: str) -> Any:
        base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        first_errors: list[str] | None = None
        for option in options:
            trial = _Checker(self.root)
            result = trial.check({**base, **option}, value, path)
            if not trial.errors:
                self.dropped.extend(trial.dropped)
                return result
            first_errors = first_errors or trial.errors
        names = [self.resolve(o).get("type", "value") for o in options]
        flat = " or ".join(n if isinstance(n, str) else "/".join(n) for n in names)
        if len(options) == 1 and first_errors:
            self.errors.extend(first_errors)
        else:
            self.fail(path, f"expected {flat}, got {describe_value(value)}")
        return value

    def check_typed(self, schema: dict[str, Any], name: str | None, value: Any, path: str) -> Any:
        if name == "number" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if name in ("number", "integer"):
            self.check_bounds(schema, value, path)
        elif name == "string":
            self.check_string(schema, value, path)
        elif name == "array":
            return self.check_array(schema, value, path)
        elif name == "object":
            return self.check_object(schema, value, path)
        return value

    def check_bounds(self, schema: dict[str, Any], value: float, path: str) -> None:
        limits = (
            ("minimum", lambda v, b: v >= b, ">="),
            ("maximum", lambda v, b: v <= b, "<="),
            ("exclusiveMinimum", lambda v, b: v > b, ">"),
            ("exclusiveMaximum", lambda v, b: v < b, "<"),
        )
        for key, within, sign in limits:
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and not within(
                value, bound
            ):
                self.fail(path, f"expected a number {sign} {bound}, got {describe_value(value)}")

    def check_string(self, schema: dict[str, Any], value: str, path: str) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            self.fail(path, f"expected at least {schema['minLength']} characters, got "
                            f"{describe_value(value)}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.fail(path, f"expected at most {schema['maxLength']} characters, got "
                            f"{len(value)}")
        pattern = schema.get("pattern")
        if pattern and re.search(pattern, value) is None:
            self.fail(path, f"expected a string matching {pattern!r}, got "
                            f"{describe_value(value)}")

    def check_array(self, schema: dict[str, Any], value: list[Any], path: str) -> list[Any]:
        if "minItems" in schema and len(value) < schema["minItems"]:
            self.fail(path, f"expected at least {schema['minItems']} items, got {len(value)}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            self.fail(path, f"expected at most {schema['maxItems']} items, got {len(value)}")
        items = schema.get("items")
        if isinstance(items, list):  # tuple-style (prefixItems of older drafts)
            return [self.check(s, v, f"{path}[{i}]") for i, (s, v) in
                    enumerate(zip(items, value, strict=False))] + list(value[len(items):])
        if isinstance(items, dict):
            return [self.check(items, v, f"{path}[{i}]") for i, v in enumerate(value)]
        return list(value)

    def check_object(self, schema: dict[str, Any], value: dict[str, Any],
                     path: str) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if key in properties:
                out[key] = self.check(properties[key], item, sub)
            elif isinstance(extra, dict):
                out[key] = self.check(extra, item, sub)
            elif extra is True or not properties:
                out[key] = item
            else:
                self.dropped.append(sub)
        for key in schema.get("required") or []:
            if key not in value:
                expected = _type_label(self.resolve(properties.get(key, {})))
                sub = f"{path}.{key}" if path else key
                self.fail(sub, f"required argument missing (expected {expected})")
        for key, prop in properties.items():
            prop = self.resolve(prop)
            if key not in out and "default" in prop:
                out[key] = prop["default"]
        return out


def _matches(name: str, value: Any) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, dict)
    if name == "null":
        return value is None
    return True


def _in_enum(value: Any, options: list[Any]) -> bool:
    # `True in [1]` is true in Python; an enum of ints must not accept a bool.
    return any(value == o and type(value) is type(o) or
               (isinstance(value, int | float) and isinstance(o, int | float)
                and not isinstance(value, bool) and not isinstance(o, bool) and value == o)
               for o in options)


def _infer_type(schema: dict[str, Any], value: Any) -> str | None:
    if "properties" in schema and isinstance(value, dict):
        return "object"
    if "items" in schema and isinstance(value, list):
        return "array"
    return None


def _type_label(schema: dict[str, Any]) -> str:
    if "type" in schema:
        t = schema["type"]
        return t if isinstance(t, str) else " or ".join(t)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type_label(s) for s in schema[key])
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    return "any value"
