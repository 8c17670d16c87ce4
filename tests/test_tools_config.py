"""tools.yml: functions registered with their declared schema, and errors with file:line."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from callgate.tools.config import (
    ToolsConfigError,
    load_tools_yaml,
    read_tools_yaml,
    schema_problems,
)
from callgate.tools.registry import ToolRegistry

MODULE = '''
import asyncio

def add(a, b, scale=1):
    return (a + b) * scale

def toggle(flag):
    return {"flag": flag}

async def echo(text):
    await asyncio.sleep(0)
    return text

def strict_args(a, /):
    return a

NOT_CALLABLE = 42
'''

VALID = """\
tools:
  - name: add
    description: Add two integers.
    module: {mod}
    function: add
    parameters_schema:
      type: object
      properties:
        a: {{type: integer, description: first}}
        b: {{type: integer}}
        scale: {{type: number, minimum: 0, default: 1}}
      required: [a, b]
      additionalProperties: false
    timeout_s: 3
    category: math
  - name: toggle
    description: Flip a switch.
    module: {mod}
    function: toggle
    parameters_schema:
      type: object
      properties:
        flag: {{type: boolean}}
      required: [flag]
    sensitive: true
  - name: echo
    description: Say it back.
    module: {mod}
    function: echo
    parameters_schema: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
"""


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"cg_tools_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tools.yml"
    path.write_text(textwrap.dedent(text))
    return path


def test_tools_registered_with_declared_schema(tmp_path: Path, mod: str) -> None:
    registry = ToolRegistry()
    tools = load_tools_yaml(write(tmp_path, VALID.format(mod=mod)), registry)
    assert [t.name for t in tools] == ["add", "toggle", "echo"] == registry.names
    add = registry.get("add")
    assert add is not None
    assert add.schema == {
        "type": "object",
        "properties": {"a": {"type": "integer", "description": "first"},
                       "b": {"type": "integer"},
                       "scale": {"type": "number", "minimum": 0, "default": 1}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert (add.timeout_s, add.category, add.sensitive, add.source) == (3.0, "math", False,
                                                                        "yaml")
    assert add.description == "Add two integers."
    assert registry.get("toggle").sensitive is True


def test_registry_validates_strictly_with_the_schema(tmp_path: Path, mod: str) -> None:
    registry = ToolRegistry()
    load_tools_yaml(write(tmp_path, VALID.format(mod=mod)), registry)
    ok = registry.validate({"tool": "add", "args": {"a": 2, "b": 3, "extra": 1}})
    assert ok.valid and ok.args == {"a": 2, "b": 3, "scale": 1} and ok.dropped == ("extra",)
    for bad, fragment in [({"a": True, "b": 1}, "expected integer, got boolean True"),
                          ({"a": "5", "b": 1}, "expected integer, got string '5'"),
                          ({"a": 1.5, "b": 1}, "expected integer"),
                          ({"a": 1}, "argument 'b': required argument missing"),
                          ({"a": 1, "b": 2, "scale": -1}, "expected a number >= 0")]:
        result = registry.validate({"tool": "add", "args": bad})
        assert not result.valid and fragment in result.error, (bad, result.error)
    flag = registry.validate({"tool": "toggle", "args": {"flag": 1}})
    assert not flag.valid and "expected boolean, got integer 1" in flag.error


async def test_registered_functions_run(tmp_path: Path, mod: str) -> None:
    registry = ToolRegistry()
    load_tools_yaml(write(tmp_path, VALID.format(mod=mod)), registry)
    assert await registry.get("add").runnable.ainvoke({"a": 2, "b": 3, "scale": 2}) == 10
    assert await registry.get("echo").runnable.ainvoke({"text": "hi"}) == "hi"
    assert registry.get("add").runnable.invoke({"a": 1, "b": 1}) == 2


def test_module_given_as_file_path(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def shout(text):\n    return text.upper()\n")
    path = write(tmp_path, """\
        tools:
          - name: shout
            description: Upper-case a text.
            module: helpers.py
            function: shout
            parameters_schema: {type: object, properties: {text: {type: string}},
                                required: [text]}
        """)
    registry = ToolRegistry()
    load_tools_yaml(path, registry)
    assert registry.get("shout").runnable.invoke({"text": "a"}) == "A"


def test_empty_file_registers_nothing(tmp_path: Path) -> None:
    assert load_tools_yaml(write(tmp_path, "# nothing yet\n"), ToolRegistry()) == []


def test_mcp_servers_section_is_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CG_TOKEN", "s3cret")
    config = read_tools_yaml(write(tmp_path, """\
        mcp_servers:
          git:
            transport: stdio
            command: mcp-server-git
            args: [--repository, /tmp/repo]
            env: {GIT_TRACE: "0"}
            sensitive_tools: [git_branch]
            timeout_s: 20
          remote:
            transport: streamable_http
            url: http://127.0.0.1:9000/mcp
            headers: {Authorization: "Bearer ${CG_TOKEN}"}
            sensitive: true
        """))
    git, remote = config.mcp_servers["git"], config.mcp_servers["remote"]
    assert git.connection == {"transport": "stdio", "command": "mcp-server-git",
                              "args": ["--repository", "/tmp/repo"], "env": {"GIT_TRACE": "0"}}
    assert (git.timeout_s, git.sensitive, git.sensitive_tools) == (20.0, None, ("git_branch",))
    assert remote.connection["headers"] == {"Authorization": "Bearer s3cret"}
    assert remote.sensitive is True


def check_error(tmp_path: Path, text: str, line: int, *fragments: str) -> ToolsConfigError:
    path = write(tmp_path, text)
    registry = ToolRegistry()
    with pytest.raises(ToolsConfigError) as info:
        load_tools_yaml(path, registry)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    for fragment in fragments:
        assert fragment in message, message
    assert len(registry) == 0, "a failed load must register nothing"
    return info.value


def entry(mod: str, *, name: str = "add", module: str | None = None, function: str = "add",
          schema: str = "{type: object, properties: {a: {type: integer}, b: {type: integer}}, "
                        "required: [a, b]}", extra: str = "") -> str:
    return (f"  - name: {name}\n    description: Adds.\n    module: {module or mod}\n"
            f"    function: {function}\n    parameters_schema: {schema}\n{extra}")


def test_missing_module(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n" + entry(mod, module="no_such_module_xyz"), 4,
                "tool 'add'", "module 'no_such_module_xyz' not found")


def test_module_that_fails_to_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_cg_mod.py").write_text("import not_installed_dep_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    check_error(tmp_path, "tools:\n" + entry("", module="broken_cg_mod"), 4,
                "importing module 'broken_cg_mod' failed",
                "No module named 'not_installed_dep_xyz'")


def test_missing_function(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n" + entry(mod) + entry(mod, name="sub", function="sub"), 10,
                "tool 'sub'", f"module '{mod}' has no function 'sub'")


def test_not_callable(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n" + entry(mod, function="NOT_CALLABLE"), 5,
                f"'{mod}.NOT_CALLABLE' is not callable")


def test_schema_not_an_object_schema(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n" + entry(mod, schema="{type: string}"), 6,
                "parameters_schema.type must be an object schema (type: object), "
                "got type 'string'")
    check_error(tmp_path, "tools:\n" + entry(mod, schema="[a, b]"), 6,
                "parameters_schema must be a JSON schema mapping, got a list")


def test_schema_that_is_not_json_schema_is_located(tmp_path: Path, mod: str) -> None:
    schema = "{type: object, properties: {a: {type: integer, minimum: '3'}}}"
    check_error(tmp_path, "tools:\n" + entry(mod, schema=schema), 6,
                "parameters_schema is not a valid JSON schema", "'3' is not of type 'number'")


def test_schema_required_names_unknown_property(tmp_path: Path, mod: str) -> None:
    schema = ("\n      type: object\n      properties:\n        a: {type: integer}\n"
              "        b: {type: integer}\n      required:\n        - a\n        - c")
    check_error(tmp_path, "tools:\n" + entry(mod, schema=schema), 13,
                "parameters_schema.required[1] names unknown property 'c' (properties: a, b)")


def test_schema_unknown_type_name(tmp_path: Path, mod: str) -> None:
    schema = ("\n      type: object\n      properties:\n        a: {type: int}\n"
              "        b:\n          type: array\n          items: {type: strng}\n"
              "      required: [a, b]")
    error = check_error(tmp_path, "tools:\n" + entry(mod, schema=schema), 9,
                        "parameters_schema.properties.a.type has unknown type 'int' "
                        "(did you mean 'integer'?)")
    assert error.line == 9
    assert any("unknown type 'strng'" in m for _, m in schema_problems(
        {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "strng"}}}}))


def test_schema_bad_ref(tmp_path: Path, mod: str) -> None:
    schema = ("{type: object, properties: {a: {$ref: '#/$defs/Nope'}, b: {type: integer}}, "
              "required: [a, b]}")
    check_error(tmp_path, "tools:\n" + entry(mod, schema=schema), 6, "points nowhere")


def test_schema_property_the_function_cannot_take(tmp_path: Path, mod: str) -> None:
    schema = ("{type: object, properties: {a: {type: integer}, b: {type: integer}, "
              "c: {type: integer}}, required: [a, b]}")
    check_error(tmp_path, "tools:\n" + entry(mod, schema=schema), 6,
                f"property 'c' is not a parameter of {mod}.add(a, b, scale)")
    schema = "{type: object, properties: {a: {type: integer}, b: {type: integer}}}"
    check_error(tmp_path, "tools:\n" + entry(mod, schema=schema), 6,
                "parameter 'a'", "has no default, so parameters_schema must list it in "
                "'required'")
    schema = "{type: object, properties: {a: {type: integer}}, required: [a]}"
    check_error(tmp_path, "tools:\n" + entry(mod, function="strict_args", schema=schema), 6,
                "positional-only")


def test_duplicate_names(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n" + entry(mod) + entry(mod), 7,
                "duplicate tool name 'add' (first declared at line 2)")


def test_name_already_registered(tmp_path: Path, mod: str) -> None:
    registry = ToolRegistry()

    def add(a: int) -> int:
        """Existing."""
        return a

    registry.register(add)
    path = write(tmp_path, "tools:\n" + entry(mod))
    with pytest.raises(ToolsConfigError, match=r"tools\.yml:2: .*'add' is already registered"):
        load_tools_yaml(path, registry)
    assert registry.names == ["add"]


def test_missing_keys(tmp_path: Path, mod: str) -> None:
    text = (f"tools:\n  - name: add\n    module: {mod}\n    function: add\n"
            "    parameters_schema: {type: object}\n")
    check_error(tmp_path, text, 2, "tool 'add': missing key 'description'")
    text = "tools:\n" + entry(mod) + "  - description: no name\n    module: x\n"
    check_error(tmp_path, text, 7, "tool #2: missing key 'name'")


def test_bad_values_and_unknown_keys(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    timeout_s: -1\n"), 7,
                "'timeout_s' must be a positive number, got -1")
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    sensitive: maybe\n"), 7,
                "'sensitive' must be true or false, got 'maybe'")
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    timeout: 3\n"), 7,
                "unknown key 'timeout'")
    check_error(tmp_path, "tools:\n" + entry(mod, name="'bad name'"), 2,
                "a tool name may use only letters")
    check_error(tmp_path, "tool:\n" + entry(mod), 1, "unknown top-level key 'tool'")
    check_error(tmp_path, "tools:\n  add: {}\n", 1, "'tools' must be a list")


def test_yaml_syntax_and_duplicate_keys(tmp_path: Path, mod: str) -> None:
    check_error(tmp_path, "tools:\n  - name: [unclosed\n", 3, "invalid YAML")
    text = "tools:\n" + entry(mod) + "mcp_servers:\n  a: {command: x}\n  a: {command: y}\n"
    check_error(tmp_path, text, 9, "duplicate key 'a' (first at line 8)")


def test_bad_mcp_server_entries(tmp_path: Path, mod: str,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CG_UNSET_VAR", raising=False)
    check_error(tmp_path, "mcp_servers:\n  git:\n    transport: pigeon\n    command: x\n", 3,
                "MCP server 'git': unknown transport 'pigeon'")
    check_error(tmp_path, "mcp_servers:\n  git:\n    transport: stdio\n    args: []\n", 2,
                "MCP server 'git': missing key 'command'")
    check_error(tmp_path, "mcp_servers:\n  web:\n    transport: streamable_http\n"
                "    url: http://x/mcp\n    command: y\n", 5, "unknown key 'command'")
    check_error(tmp_path, "mcp_servers:\n  web:\n    transport: streamable_http\n"
                "    url: http://x/mcp\n    headers:\n      A: ${CG_UNSET_VAR}\n", 6,
                "environment variable CG_UNSET_VAR is not set")
    check_error(tmp_path, "mcp_servers:\n  git:\n    command: x\n    sensitive: yes please\n",
                4, "'sensitive' must be true or false")


def test_mcp_server_that_cannot_start(tmp_path: Path, mod: str) -> None:
    text = ("tools:\n" + entry(mod) + "mcp_servers:\n  ghost:\n"
            "    command: /nonexistent/mcp-server-ghost\n    args: []\n")
    check_error(tmp_path, text, 8, "MCP server 'ghost' could not be loaded")


def test_conversation_words(tmp_path: Path, mod: str) -> None:
    text = VALID.format(mod=mod).replace(
        "required: [text]}\n", "required: [text]}\n    conversation_words: [text]\n")
    registry = ToolRegistry()
    load_tools_yaml(write(tmp_path, text), registry)
    assert registry.get("echo").conversation_words == ("text",)
    assert registry.get("add").conversation_words == ()
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    conversation_words: [query]\n"),
                7, "tool 'add': conversation_words names no argument of the tool: ['query']")
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    conversation_words: [a]\n"), 7,
                "conversation_words names arguments that are not strings: ['a']")
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    conversation_words: a\n"), 7,
                "'conversation_words' must be a list of argument names")
    check_error(tmp_path, "mcp_servers:\n  git:\n    command: x\n"
                "    conversation_words: [git_log]\n", 4,
                "'conversation_words' must map tool names to lists of argument names")


def test_synonyms(tmp_path: Path, mod: str) -> None:
    text = VALID.format(mod=mod).replace(
        "required: [text]}\n", "required: [text]}\n    synonyms: {phrase: text}\n")
    registry = ToolRegistry()
    load_tools_yaml(write(tmp_path, text), registry)
    assert registry.get("echo").synonyms == {"phrase": "text"}
    assert registry.get("add").synonyms == {}
    check_error(tmp_path, "tools:\n" + entry(mod, extra="    synonyms: {total sum: add}\n"), 7,
                "tool 'add': synonyms map one word to one word; not 'total sum': 'add'")
    for odd, kind in [("[plus]", "list"), ("false", "bool"), ("''", "str")]:
        check_error(tmp_path, "tools:\n" + entry(mod, extra=f"    synonyms: {odd}\n"), 7,
                    f"tool 'add': synonyms must map words to words, got {kind}")
