"""Strict validation of tool arguments against their JSON schema, on ``jsonschema``.

The checking is ``jsonschema``'s: a Draft 2020-12 validator (or the draft a schema names in
``$schema``), so every keyword the library knows is honoured (``oneOf`` with exactly-one
semantics, ``anyOf``, ``allOf``, ``not``, ``enum``, ``const``, ``pattern``, bounds,
``multipleOf``, ``items``/``prefixItems``, ``uniqueItems``, ``additionalProperties``,
``patternProperties``, ``dependentRequired``, ``if``/``then``/``else``, local
``$ref``/``$defs``), and ``format`` wherever its ``FormatChecker`` can check it (with the
packages installed here: date, email, ipv4, ipv6, uuid, regex, json-pointer; date-time,
time and uri pass unchecked). Remote ``$ref`` are never fetched.

callgate's own rules, where its verdict differs from plain ``jsonschema``:

* **5.0 is not an integer.** ``type: integer`` accepts Python ints only; plain
  ``jsonschema`` accepts an int-valued float. (Both already agree that ``True`` is neither
  an integer nor a number, that ``"5"`` is not a number, and that ``const: 1`` /
  ``enum: [1]`` do not accept ``True``.)
* **Unknown top-level arguments are dropped, not rejected**, and reported in ``dropped``:
  a name the schema does not list (``properties`` of the root and of its ``$ref``/
  ``allOf``/``anyOf``/``oneOf``/``if`` parts) is removed before checking, even under
  ``additionalProperties: false``; it is kept (and checked) only when the schema allows
  extra arguments explicitly (``additionalProperties`` true or a schema, or a matching
  ``patternProperties``) or lists no properties at all. Nested objects follow the schema.
* **Ints widen to floats.** After a valid check, an int where the schema says ``number``
  (and nothing applicable says ``integer``) becomes a float in the returned args.
* **Defaults are injected** after the check (so a default never changes the verdict): for
  top-level properties, and for nested objects reached through ``properties``, ``items``,
  ``$ref``, ``allOf`` or the one matching ``anyOf``/``oneOf`` branch; a default that its own
  property's schema rejects (``unit: str = None``) is not: the tool's own default applies.

Every error names the argument path (``argument 'items[2].qty'``), the expected type or
constraint and the value received, clipped: ``argument 'city': expected string, got boolean
True``. Checking never raises: values nested deeper than :data:`MAX_DEPTH` levels, schemas
too deep to walk and anything else ``jsonschema`` trips on give an invalid result with a
clear message. Validators are compiled once per schema object and cached (a schema is
treated as immutable once registered); the schema itself is checked against its meta-schema
at registration (:class:`SchemaInvalid`).
"""

from __future__ import annotations

import copy
import json
import re
import reprlib
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from jsonschema import Draft202012Validator, TypeChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry, Specification
from referencing.exceptions import Unresolvable
from referencing.jsonschema import specification_with

MAX_DEPTH = 32
"""Deepest nesting of objects/arrays an argument value may have (deeper is invalid)."""
MAX_ERRORS = 8
"""Errors listed per call; more are counted."""
_CACHE_SIZE = 1024

# referencing's Resolver (what Registry.resolver() returns) is not exported for typing.
Resolver = Any

_KIND = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
         tuple: "array", dict: "object", type(None): "null"}


@dataclass
class _Pass:
    """One walk over valid args: widen ints to floats, or inject defaults."""

    widen: bool = False
    defaults: bool = False
    changed: bool = False


class SchemaInvalid(ValueError):
    """A tool's parameters schema is not a valid JSON schema (raised at registration)."""


@dataclass
class ArgsCheck:
    """The outcome of checking one arguments object."""

    args: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


# -- rendering ----------------------------------------------------------------------------
def _make_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother, short.maxlong = 3, 50, 50, 40
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 6
    return short


_SHORT = _make_repr()


def describe_value(value: Any, limit: int = 60) -> str:
    """A short, type-revealing rendering of a received value: ``boolean True``."""
    kind = _KIND.get(type(value), type(value).__name__)
    if value is None:
        return "null"
    try:
        text = _SHORT.repr(value)
    except (ValueError, RecursionError):  # ints over Python's digit limit; cycles
        text = "..."
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{kind} {text}"


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _schema_text(schema: Any) -> str:
    try:
        return _clip(json.dumps(schema, sort_keys=True, default=str), 60)
    except (ValueError, TypeError, RecursionError):
        return "the schema"


def path_text(path: Sequence[str | int]) -> str:
    """``items[2].qty`` for the path ``("items", 2, "qty")``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _where(path: Sequence[str | int]) -> str:
    return f"argument '{_clip(path_text(path), 100)}'" if path else "arguments"


# -- the strict validator class ------------------------------------------------------------
def _is_integer(_checker: TypeChecker, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker: TypeChecker, value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_array(_checker: TypeChecker, value: Any) -> bool:
    return isinstance(value, list | tuple)  # Python callers may pass tuples


@cache
def _strict(base: type[Validator]) -> type[Validator]:
    """``base`` (a draft's validator class) with callgate's exact type checks."""
    checker = base.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number, "array": _is_array})
    return validators.extend(base, type_checker=checker)


def _draft(schema: Any) -> type[Validator]:
    return validators.validator_for(schema, default=Draft202012Validator)


# -- compiling and caching ------------------------------------------------------------------
class ArgsValidator:
    """One tool schema, checked and compiled: :meth:`check` validates an arguments object."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        base = _draft(schema)
        try:
            _check_schema(base, schema)
            _check_local_refs(schema, base)
        except SchemaError as exc:  # check_schema raises the best match already
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            raise SchemaInvalid(f"not a valid JSON schema at {where}: "
                                f"{_clip(exc.message, 160)}") from None
        except RecursionError:
            raise SchemaInvalid("nested too deeply to check") from None
        # Without "$schema", sub-schemas evolved from the root keep the strict class.
        body = ({k: v for k, v in _false_to_not(schema).items() if k != "$schema"}
                if isinstance(schema, dict) else schema)
        self._spec: Specification[Any] = specification_with(
            base.META_SCHEMA.get("$schema", ""), default=_SPEC_2020)
        # An empty registry: a remote $ref is never fetched (an unresolvable one is an
        # invalid result, not a download). A class is hashable; jsonschema has no type
        # information, and mypy takes its ``type[Validator]`` (``type[Any]``) for no Hashable.
        strict = _strict(base)  # type: ignore[arg-type]
        self._validator = strict(body, registry=Registry(), format_checker=base.FORMAT_CHECKER)
        self._resolver = Registry().resolver_with_root(self._spec.create_resource(body))
        self._body = body
        self._top: tuple[set[str] | None, list[str]] | None = None
        used = _keywords_used(body)
        self._walk = bool(used & {"default", "type"})  # anything to widen or inject
        # Keywords through which 3 -> 3.0 can change a verdict (see check()).
        self._recheck = bool(used & {"not", "oneOf", "if", "contains"})

    # -- public ---------------------------------------------------------------------------
    def check(self, args: Any, *, defaults: bool = True) -> ArgsCheck:
        """Validate ``args``; never raises (see the module docstring for the rules).

        ``defaults=False`` returns the args without the schema's defaults filled in (what a
        human approving an edit typed, checked and widened, nothing added)."""
        if not isinstance(args, dict):
            return ArgsCheck({}, [f"arguments must be a JSON object, got "
                                  f"{describe_value(args)}"])
        problem = _shape_problem(args)
        if problem:
            return ArgsCheck({}, [problem])
        try:
            kept, dropped = self._drop_unknown(args)
            errors = self._errors(kept)
            if errors:
                return ArgsCheck(kept, errors, dropped)
            if not self._walk:
                return ArgsCheck(kept, [], dropped)
            root = [(self._body, self._resolver)]
            if not self._recheck:
                return ArgsCheck(self._normalize(root, kept, _Pass(widen=True,
                                                                   defaults=defaults)),
                                 [], dropped)
            # Widening can flip a verdict (3.0 may match a `not: integer` that 3 did not, or
            # miss an `if`/`contains`): then the ints stay ints.
            widening = _Pass(widen=True)
            value = self._normalize(root, kept, widening)
            if widening.changed and not self._validator.is_valid(value):
                value = kept
            if defaults:
                value = self._normalize(root, value, _Pass(defaults=True))
            return ArgsCheck(value, [], dropped)
        except RecursionError:
            return ArgsCheck({}, ["arguments could not be checked: the schema or the value "
                                  "is nested too deeply"])
        except Unresolvable as exc:
            return ArgsCheck({}, [f"arguments could not be checked: the tool's schema has a "
                                  f"reference that cannot be resolved ({_clip(str(exc))})"])
        except Exception as exc:  # noqa: BLE001 - a bad value must be a result, never a crash
            return ArgsCheck({}, [f"arguments could not be checked against the schema "
                                  f"({type(exc).__name__}: {_clip(str(exc))})"])

    # -- unknown top-level arguments --------------------------------------------------------
    def _drop_unknown(self, args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        if self._top is None:
            self._top = self._top_level()
        names, patterns = self._top
        if names is None:
            return dict(args), []
        kept: dict[str, Any] = {}
        dropped: list[str] = []
        for key, value in args.items():
            if key in names or any(re.search(p, key) for p in patterns):
                kept[key] = value
            else:
                dropped.append(key)
        return kept, dropped

    def _top_level(self) -> tuple[set[str] | None, list[str]]:
        """The top-level names and name patterns the schema knows; None: it allows any."""
        names: set[str] = set()
        listed = False
        patterns: list[str] = []
        for part in self._root_parts(self._body, self._resolver, 0):
            props = part.get("properties")
            if isinstance(props, dict):
                listed = True
                names.update(props)
            if isinstance(part.get("required"), list):
                names.update(n for n in part["required"] if isinstance(n, str))
            for trigger, needs in (part.get("dependentRequired") or {}).items():
                names.add(trigger)
                names.update(n for n in needs if isinstance(n, str))
            if isinstance(part.get("patternProperties"), dict):
                patterns.extend(part["patternProperties"])
            extra = part.get("additionalProperties", part.get("unevaluatedProperties"))
            if extra is not None and extra is not False:
                return None, []  # extras explicitly allowed: the schema checks them
        return (names if listed else None), patterns

    def _root_parts(self, schema: Any, resolver: Resolver,
                    depth: int) -> Iterator[dict[str, Any]]:
        """The root and every sub-schema that describes the same (top-level) object."""
        if not isinstance(schema, dict) or depth > MAX_DEPTH:
            return
        yield schema
        for sub, sub_resolver in self._refs(schema, resolver):
            yield from self._root_parts(sub, sub_resolver, depth + 1)
        for key in ("allOf", "anyOf", "oneOf"):
            for sub in schema.get(key) or ():
                yield from self._root_parts(sub, resolver, depth + 1)
        for key in ("then", "else"):
            yield from self._root_parts(schema.get(key), resolver, depth + 1)
        for sub in (schema.get("dependentSchemas") or {}).values():
            yield from self._root_parts(sub, resolver, depth + 1)

    # -- errors ------------------------------------------------------------------------------
    def _errors(self, args: dict[str, Any]) -> list[str]:
        messages: list[str] = []
        seen: set[str] = set()
        extra = 0
        for error in self._validator.iter_errors(args):
            for path, text in self._describe(error):
                line = f"{_where(path)}: {text}"
                if line in seen:
                    continue
                seen.add(line)
                if len(messages) < MAX_ERRORS:
                    messages.append(line)
                else:
                    extra += 1
        if extra:
            messages.append(f"and {extra} more error{'s' if extra > 1 else ''}")
        return messages

    def _describe(self, error: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
        """``(argument path, 'expected ..., got ...')`` for one jsonschema error."""
        path = tuple(error.absolute_path)
        key = error.validator
        want: Any = error.validator_value
        value = error.instance
        got = describe_value(value)
        schema = error.schema if isinstance(error.schema, dict) else {}
        if key in ("anyOf", "oneOf"):
            return self._describe_union(error, path, got)
        if key == "required":
            return [((*path, name), f"required argument missing (expected "
                     f"{self._label(self._prop(schema, name, path))})")
                    for name in want if isinstance(value, dict) and name not in value]
        if key in ("dependentRequired", "dependencies") and isinstance(value, dict):
            return [((*path, name), f"required argument missing when '{trigger}' is given "
                     f"(expected {self._label(self._prop(schema, name, path))})")
                    for trigger, needs in want.items()
                    if trigger in value and isinstance(needs, list)
                    for name in needs if name not in value]
        if key == "additionalProperties" and want is False and isinstance(value, dict):
            allowed = ", ".join(schema.get("properties") or {}) or "none"
            patterns = list(schema.get("patternProperties") or {})
            return [((*path, name), f"unexpected argument (allowed: {allowed})")
                    for name in value if name not in (schema.get("properties") or {})
                    and not any(re.search(p, name) for p in patterns)]
        return [(path, self._expectation(key, want, value, schema, got))]

    def _expectation(self, key: str | None, want: Any, value: Any, schema: dict[str, Any],
                     got: str) -> str:
        size = len(value) if isinstance(value, str | list | tuple | dict) else 0
        bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">",
                  "exclusiveMaximum": "<"}
        if key is None:
            return f"no value is allowed here (the schema is false), got {got}"
        if key == "type":
            types = [want] if isinstance(want, str) else list(want)
            return f"expected {' or '.join(types)}, got {got}"
        if key == "enum":
            return f"expected one of {_options(want)}, got {got}"
        if key == "const":
            return f"expected {_clip(repr(want), 60)}, got {got}"
        if key in bounds:
            sign = bounds[key]
            if key in ("minimum", "maximum") and schema.get(f"exclusive{key.title()}") is True:
                sign = sign[0]  # draft 4: a boolean exclusiveMinimum/Maximum
            return f"expected a number {sign} {want}, got {got}"
        if key == "multipleOf":
            return f"expected a multiple of {want}, got {got}"
        if key in ("minLength", "maxLength"):
            most = "at least" if key == "minLength" else "at most"
            return f"expected {most} {want} characters, got {size}: {got}"
        if key == "pattern":
            return f"expected a string matching {want!r}, got {got}"
        if key == "format":
            return f"expected a valid {want} string, got {got}"
        if key in ("minItems", "maxItems"):
            most = "at least" if key == "minItems" else "at most"
            return f"expected {most} {want} items, got {size}: {got}"
        if key in ("minProperties", "maxProperties"):
            most = "at least" if key == "minProperties" else "at most"
            return f"expected {most} {want} properties, got {size}: {got}"
        if key == "uniqueItems":
            return f"expected unique items, got a repeated item in {got}"
        if key in ("items", "additionalItems") and want is False:
            prefix = schema.get("prefixItems", schema.get("items"))
            count = len(prefix) if isinstance(prefix, list) else 0
            return f"expected at most {count} items, got {size}: {got}"
        if key == "contains":
            low = schema.get("minContains", 1)
            high = schema.get("maxContains")
            span = f"at least {low}" if high is None else f"between {low} and {high}"
            return f"expected {span} items matching {_schema_text(want)}, got {got}"
        if key == "not" and want == {}:
            return f"no value is allowed here (the schema is false), got {got}"
        if key == "not":
            return f"expected a value not matching {_schema_text(want)}, got {got}"
        return f"{key} {_schema_text(want)} not satisfied, got {got}"

    def _describe_union(self, error: ValidationError, path: tuple[str | int, ...],
                        got: str) -> list[tuple[tuple[str | int, ...], str]]:
        options = error.validator_value
        if not error.context:  # oneOf: more than one option matched
            matching = [str(i + 1) for i, option in enumerate(options)
                        if self._validator.evolve(schema=option).is_valid(error.instance)]
            return [(path, f"expected exactly one of {len(options)} options to match, got "
                           f"{got}, which matches options {' and '.join(matching)}")]
        branches: dict[int, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
        # A branch "fits" when the value has its kind (its type; for an object, the const or
        # enum of a property that tells the options apart): its errors say what is wrong.
        fitting = [errs for errs in branches.values() if not any(_rejects_kind(e) for e in errs)]
        if len(fitting) == 1:
            return [found for sub in fitting[0] for found in self._describe(sub)]
        labels = list(dict.fromkeys(self._label(o) for o in options))
        labels = [x for x in labels if x != "no value"] or labels  # false options add nothing
        return [(path, f"expected {' or '.join(labels)}, got {got}")]

    def _prop(self, schema: dict[str, Any], name: str, path: tuple[str | int, ...]) -> Any:
        """The schema of property ``name`` where ``schema`` asks for it; at the top level,
        the root's when a branch (oneOf, if/then...) requires a name the root describes."""
        found = _prop(schema, name)
        if found is None and not path and isinstance(self._body, dict):
            found = _prop(self._body, name)
        return found

    def _label(self, schema: Any, depth: int = 0) -> str:
        """What a schema expects, in a few words: ``integer``, ``'a' or 'b'``."""
        if schema is True or schema is None:
            return "any value"
        if schema is False or schema == _FALSE:
            return "no value"
        if not isinstance(schema, dict) or depth > 4:
            return "a value"
        if "const" in schema:
            return _clip(repr(schema["const"]), 40)
        if "enum" in schema:
            return f"one of {_options(schema['enum'])}"
        if "type" in schema and schema["type"] != "object":
            types = schema["type"]
            return types if isinstance(types, str) else " or ".join(types)
        props = schema.get("properties")
        if isinstance(props, dict) or schema.get("type") == "object":
            tags = [f"{k}={v['const']!r}" for k, v in (props or {}).items()
                    if isinstance(v, dict) and "const" in v]
            return "object" + (f" with {', '.join(tags)}" if tags else "")
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return " or ".join(dict.fromkeys(self._label(s, depth + 1)
                                                 for s in schema[key]))
        for sub, _ in self._refs(schema, self._resolver):
            return self._label(sub, depth + 1)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            return self._label(schema["allOf"][0], depth + 1)
        return "any value" if not schema else _schema_text(schema)

    # -- widening ints and injecting defaults (after a valid check) ---------------------------
    def _normalize(self, parts: list[tuple[Any, Resolver]], value: Any, run: _Pass) -> Any:
        applicable: list[tuple[dict[str, Any], Resolver]] = []
        for schema, resolver in parts:
            self._applicable(schema, resolver, value, applicable, [64])
        if isinstance(value, int) and not isinstance(value, bool):
            if not run.widen:
                return value
            widened = _widen(value, [s.get("type") for s, _ in applicable])
            run.changed = run.changed or widened is not value
            return widened
        if isinstance(value, dict):
            return self._normalize_object(applicable, value, run)
        if isinstance(value, list | tuple):
            out = []
            for i, item in enumerate(value):
                child: list[tuple[Any, Resolver]] = []
                for schema, resolver in applicable:
                    prefix = schema.get("prefixItems")
                    rest = schema.get("items")
                    if isinstance(rest, list):  # drafts before 2020-12: tuple-form items
                        prefix, rest = rest, schema.get("additionalItems")
                    if isinstance(prefix, list) and i < len(prefix):
                        child.append((prefix[i], resolver))
                    elif rest is not None:
                        child.append((rest, resolver))
                out.append(self._normalize(child, item, run))
            return out
        return value

    def _normalize_object(self, applicable: list[tuple[dict[str, Any], Resolver]],
                          value: dict[str, Any], run: _Pass) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            child: list[tuple[Any, Resolver]] = []
            for schema, resolver in applicable:
                props = schema.get("properties") or {}
                matched = key in props
                if matched:
                    child.append((props[key], resolver))
                for pattern, sub in (schema.get("patternProperties") or {}).items():
                    if re.search(pattern, key):
                        child.append((sub, resolver))
                        matched = True
                if not matched and "additionalProperties" in schema:
                    child.append((schema["additionalProperties"], resolver))
            out[key] = self._normalize(child, item, run)
        for schema, resolver in applicable if run.defaults else ():
            for key, prop in (schema.get("properties") or {}).items():
                if key not in out:
                    found, default = self._default(prop, resolver)
                    # A default its own schema rejects is left to the tool: a Python
                    # function's ``unit: str = None`` got None written in, which its
                    # pydantic model refused on every call that left ``unit`` out.
                    if found and self._fits(default, prop, resolver):
                        out[key] = copy.deepcopy(default)
        return out

    def _applicable(self, schema: Any, resolver: Resolver, value: Any,
                    out: list[tuple[dict[str, Any], Resolver]], budget: list[int]) -> None:
        """Collect the sub-schemas that apply to ``value`` here (unambiguously)."""
        if not isinstance(schema, dict) or budget[0] <= 0:
            return
        budget[0] -= 1
        if "$id" in schema:
            resolver = resolver.in_subresource(self._spec.create_resource(schema))
        out.append((schema, resolver))
        for sub, sub_resolver in self._refs(schema, resolver):
            self._applicable(sub, sub_resolver, value, out, budget)
        for sub in schema.get("allOf") or ():
            self._applicable(sub, resolver, value, out, budget)
        for key in ("anyOf", "oneOf"):
            fits = [s for s in schema.get(key) or () if self._fits(value, s, resolver)]
            if len(fits) == 1:  # several matching branches: ambiguous, left alone
                self._applicable(fits[0], resolver, value, out, budget)
        if "if" in schema:
            branch = "then" if self._fits(value, schema["if"], resolver) else "else"
            self._applicable(schema.get(branch), resolver, value, out, budget)
        if isinstance(value, dict):
            for name, sub in (schema.get("dependentSchemas") or {}).items():
                if name in value:
                    self._applicable(sub, resolver, value, out, budget)

    def _fits(self, value: Any, schema: Any, resolver: Resolver) -> bool:
        return next(iter(self._validator.descend(value, schema, resolver=resolver)),
                    None) is None

    def _default(self, schema: Any, resolver: Resolver) -> tuple[bool, Any]:
        for _ in range(8):  # a property's default, beside its $ref or where it points
            if not isinstance(schema, dict):
                return False, None
            if "default" in schema:
                return True, schema["default"]
            refs = list(self._refs(schema, resolver))
            if not refs:
                all_of = schema.get("allOf")
                if isinstance(all_of, list) and len(all_of) == 1:
                    schema = all_of[0]
                    continue
                return False, None
            schema, resolver = refs[0]
        return False, None

    @staticmethod
    def _refs(schema: dict[str, Any],
              resolver: Resolver) -> Iterator[tuple[Any, Resolver]]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable:
                return
            yield resolved.contents, resolved.resolver


_SPEC_2020 = specification_with("https://json-schema.org/draft/2020-12/schema")


def _rejects_kind(error: ValidationError) -> bool:
    """Whether ``error`` rejects the value's kind: its type, any value at all (false), or a
    discriminator (const/enum of the value or of one of its properties)."""
    depth = len(error.relative_path)
    if depth == 0 and (error.validator in ("type", None)
                       or (error.validator == "not" and error.validator_value == {})):
        return True
    return depth <= 1 and error.validator in ("const", "enum")


def _prop(schema: dict[str, Any], name: str) -> Any:
    props = schema.get("properties")
    return props.get(name) if isinstance(props, dict) else None


def _options(values: Any) -> str:
    shown = [_clip(repr(v), 30) for v in list(values)[:12]]
    more = len(values) - len(shown) if isinstance(values, list) else 0
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


def _widen(value: int, types: list[Any]) -> int | float:
    """``float(value)`` where a type says number and none says integer."""
    names = [t if isinstance(t, list) else [t] for t in types if t is not None]
    if any("integer" in n for n in names) or not any("number" in n for n in names):
        return value
    try:
        return float(value)
    except OverflowError:
        return value


def _shape_problem(args: dict[str, Any]) -> str | None:
    """Why ``args`` cannot be checked at all: nested too deep, or a non-string key."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(args, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            children: list[tuple[Any, Any]] = list(item.items())
        elif isinstance(item, list | tuple):
            children = list(enumerate(item))
        else:
            continue
        if len(path) >= MAX_DEPTH:
            return (f"{_where(path)}: nested deeper than {MAX_DEPTH} levels (objects and "
                    "arrays inside each other)")
        for key, child in children:
            if isinstance(item, dict) and not isinstance(key, str):
                return f"{_where(path)}: object keys must be strings, got {describe_value(key)}"
            stack.append((child, (*path, key)))
    return None


def _keywords_used(schema: Any) -> set[str]:
    """Every key of every mapping in ``schema`` (a superset of its keywords; cheap)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(k for k in node if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _check_schema(base: type[Validator], schema: Any) -> None:
    """``base.check_schema(schema)``, remembered per schema text: the 2020-12 meta-schema
    check costs milliseconds, and evaluations rebuild equal schemas for every question."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        base.check_schema(schema)
        return
    _checked_text(base, text)  # type: ignore[arg-type]  # a class is hashable (above)


@lru_cache(maxsize=4096)
def _checked_text(base: type[Validator], text: str) -> None:
    base.check_schema(json.loads(text))  # only schemas that pass are cached


def _check_local_refs(schema: Any, base: type[Validator]) -> None:
    """Raise ``SchemaError`` for a ``#...`` reference that points nowhere."""
    if not isinstance(schema, dict):
        return
    spec = specification_with(base.META_SCHEMA.get("$schema", ""), default=_SPEC_2020)
    resolver = Registry().resolver_with_root(spec.create_resource(schema))
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if path and "$id" in node:
            return  # nested base URIs: left to resolution at check time
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            try:
                resolver.lookup(ref)
            except Unresolvable:
                raise SchemaError(f"$ref {ref!r} points nowhere",
                                  path=(*path, "$ref")) from None
        for key, sub in node.items():
            if key not in ("enum", "const", "default", "examples"):
                stack.append((sub, (*path, key)))


def _false_to_not(schema: Any) -> Any:
    """``schema`` with each ``false`` property/item schema written ``{"not": {}}``.

    Same meaning; jsonschema reports an error of a bare ``false`` without its instance path
    (``descend`` returns before adding it), the ``not`` form keeps the path."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, sub in schema.items():
        if key in _SCHEMA_MAPS and isinstance(sub, dict):
            sub = {k: _FALSE if v is False else _false_to_not(v) for k, v in sub.items()}
        elif key in _SCHEMA_LISTS and isinstance(sub, list):
            sub = [_FALSE if v is False else _false_to_not(v) for v in sub]
        elif key in _SCHEMA_ONE:
            sub = _false_to_not(sub)
        out[key] = sub
    return out


_FALSE: dict[str, Any] = {"not": {}}
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"prefixItems", "items", "allOf", "anyOf", "oneOf"})
_SCHEMA_ONE = frozenset({"items", "additionalItems", "additionalProperties", "contains", "not",
                         "if", "then", "else", "propertyNames", "unevaluatedItems",
                         "unevaluatedProperties"})


_CACHE: OrderedDict[int, tuple[Any, ArgsValidator]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def compile_schema(schema: Any) -> ArgsValidator:
    """The :class:`ArgsValidator` for ``schema``, compiled once per schema object.

    Raises :class:`SchemaInvalid` when ``schema`` is not a valid JSON schema."""
    key = id(schema)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        # The entry holds the schema itself, so its id cannot be reused while cached.
        if hit is not None and hit[0] is schema:
            _CACHE.move_to_end(key)
            return hit[1]
    compiled = ArgsValidator(schema)
    with _CACHE_LOCK:
        _CACHE[key] = (schema, compiled)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def check_args(schema: Any, args: Any, *, defaults: bool = True) -> ArgsCheck:
    """Check ``args`` against an object ``schema``; return normalized args and errors."""
    try:
        compiled = compile_schema(schema)
    except SchemaInvalid as exc:
        return ArgsCheck({}, [f"the tool's parameters schema is invalid: {exc}"])
    return compiled.check(args, defaults=defaults)
