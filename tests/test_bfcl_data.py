"""BFCL data: loading, schema conversion, name mapping and where the data is found."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

from callgate.eval import bfcl_data
from callgate.eval.bfcl_data import (
    CATEGORIES,
    VENDORED_DIR,
    default_data_dir,
    load_questions,
    name_map,
    safe_name,
    split_ids,
    to_json_schema,
)

COUNTS = {
    "simple_python": 200,
    "multiple": 100,
    "parallel": 100,
    "parallel_multiple": 100,
    "irrelevance": 120,
    "live_simple": 129,
    "live_multiple": 527,
    "live_parallel": 8,
    "live_parallel_multiple": 12,
    "live_irrelevance": 442,
    "live_relevance": 8,
}
NO_ANSWERS = {"irrelevance", "live_irrelevance", "live_relevance"}


def _vendored(name: str) -> Path | None:
    plain = VENDORED_DIR / name
    gz = VENDORED_DIR / (name + ".gz")
    return plain if plain.is_file() else gz if gz.is_file() else None


def test_categories_map_to_vendored_files() -> None:
    assert list(CATEGORIES) == list(COUNTS)
    for category, file_name in CATEGORIES.items():
        assert _vendored(file_name) is not None, file_name
        has_answers = _vendored(f"possible_answer/{file_name}") is not None
        assert has_answers is (category not in NO_ANSWERS)
    assert (VENDORED_DIR / "LICENSE").is_file()
    assert (VENDORED_DIR / "README.md").is_file()


@pytest.mark.parametrize(("category", "count"), COUNTS.items())
def test_load_whole_categories(category: str, count: int) -> None:
    questions = load_questions(category, VENDORED_DIR)
    assert len(questions) == count
    assert len({q.id for q in questions}) == count
    for q in questions:
        assert q.category == category
        assert q.messages and q.messages[-1]["role"] == "user"
        assert all(set(m) == {"role", "content"} for m in q.messages)
        # Two live_irrelevance questions offer no function at all (nothing to call).
        assert q.functions or category == "live_irrelevance"
        assert all("name" in f and "parameters" in f for f in q.functions)
        if category in NO_ANSWERS:
            assert q.ground_truth is None
        else:
            assert q.ground_truth and all(len(call) == 1 for call in q.ground_truth)


def test_first_question_contents() -> None:
    (q,) = load_questions("simple_python", VENDORED_DIR, limit=1)
    assert q.id == "simple_python_0"
    assert q.messages == [
        {
            "role": "user",
            "content": "Find the area of a triangle with a base of 10 units and height of 5 units.",
        }
    ]
    assert q.functions[0]["name"] == "calculate_triangle_area"
    assert q.ground_truth == [
        {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
    ]


def test_system_turns_are_kept() -> None:
    questions = load_questions("live_simple", VENDORED_DIR)
    with_system = [q for q in questions if q.messages[0]["role"] == "system"]
    assert len(with_system) == 6
    assert all([m["role"] for m in q.messages] == ["system", "user"] for q in with_system)


@pytest.mark.parametrize("limit", [0, 1, 7])
def test_limit_takes_the_first(limit: int) -> None:
    every = load_questions("parallel", VENDORED_DIR)
    assert load_questions("parallel", VENDORED_DIR, limit=limit) == every[:limit]


@pytest.mark.shared_data
def test_vendored_copy_is_the_shared_data(shared_data: Path) -> None:
    shared = shared_data / "bfcl"
    for category in CATEGORIES:
        assert load_questions(category, VENDORED_DIR) == load_questions(category, shared)
    assert (VENDORED_DIR / "LICENSE").read_bytes() == (shared / "LICENSE").read_bytes()


def test_vendored_copy_stays_small() -> None:
    size = sum(f.stat().st_size for f in VENDORED_DIR.rglob("*") if f.is_file())
    assert size < 1_500_000  # the two largest files are gzipped


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_split_is_deterministic_disjoint_and_half(category: str) -> None:
    every = load_questions(category, VENDORED_DIR)
    tune = load_questions(category, VENDORED_DIR, split="tune")
    validate = load_questions(category, VENDORED_DIR, split="validate")
    tune_ids, validate_ids = {q.id for q in tune}, {q.id for q in validate}
    assert not tune_ids & validate_ids
    assert tune_ids | validate_ids == {q.id for q in every}
    assert len(tune) - len(validate) in (0, 1)
    assert all(q.split == "tune" for q in tune) and all(q.split == "validate" for q in validate)
    assert {q.id: q.split for q in every} == split_ids(q.id for q in every)
    # Questions keep the file's order within a part; --limit takes the first of the part.
    order = [q.id for q in every]
    assert [q.id for q in tune] == [i for i in order if i in tune_ids]
    assert load_questions(category, VENDORED_DIR, limit=2, split="validate") == validate[:2]


def test_split_follows_the_id_hash_only() -> None:
    ids = [f"q_{n}" for n in range(10)]
    parts = split_ids(ids)
    assert parts == split_ids(reversed(ids))  # not the order the ids come in
    by_hash = sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    assert [i for i in by_hash if parts[i] == "tune"] == by_hash[:5]
    assert split_ids(["only"]) == {"only": "tune"}


def test_unknown_split() -> None:
    with pytest.raises(ValueError, match="unknown split 'train'"):
        load_questions("parallel", VENDORED_DIR, split="train")


def test_unknown_category() -> None:
    with pytest.raises(ValueError, match="unknown BFCL category"):
        load_questions("simple_java", VENDORED_DIR)


def test_missing_ground_truth_is_an_error(tmp_path: Path) -> None:
    row = {
        "id": "simple_python_0",
        "question": [[{"role": "user", "content": "x"}]],
        "function": [{"name": "f", "parameters": {"type": "dict", "properties": {}}}],
    }
    (tmp_path / CATEGORIES["simple_python"]).write_text(json.dumps(row) + "\n")
    (tmp_path / "possible_answer").mkdir()
    other = {"id": "simple_python_1", "ground_truth": [{"f": {}}]}
    (tmp_path / "possible_answer" / CATEGORIES["simple_python"]).write_text(json.dumps(other))
    with pytest.raises(ValueError, match="no ground truth"):
        load_questions("simple_python", tmp_path)


def test_schema_conversion_types() -> None:
    bfcl = {
        "type": "dict",
        "properties": {
            "a": {"type": "float", "description": "A.", "default": 0.5},
            "b": {"type": "tuple", "items": {"type": "float"}},
            "c": {"type": "any", "description": "Anything."},
            "d": {"type": "string", "enum": ["x", "y"], "optional": True},
            "e": {"type": "boolean", "default": False},
        },
        "required": ["a", "c", "ghost"],
    }
    assert to_json_schema(bfcl) == {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "A.", "default": 0.5},
            "b": {"type": "array", "items": {"type": "number"}},
            "c": {"description": "Anything."},
            "d": {"type": "string", "enum": ["x", "y"]},
            "e": {"type": "boolean", "default": False},
        },
        "required": ["a", "c"],
    }


def test_schema_conversion_nested() -> None:
    bfcl = {
        "type": "dict",
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "dict",
                    "properties": {"w": {"type": "float"}, "tags": {"type": "tuple"}},
                    "required": ["w", "nope"],
                },
            },
            "opts": {"type": "dict", "properties": {"deep": {"type": "dict"}}},
        },
    }
    assert to_json_schema(bfcl) == {
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"w": {"type": "number"}, "tags": {"type": "array"}},
                    "required": ["w"],
                },
            },
            "opts": {"type": "object", "properties": {"deep": {"type": "object"}}},
        },
    }


def test_schema_conversion_does_not_mutate() -> None:
    bfcl = {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}
    before = json.dumps(bfcl)
    to_json_schema(bfcl)
    assert json.dumps(bfcl) == before


def test_all_data_schemas_convert_cleanly() -> None:
    bfcl_only = {"dict", "float", "tuple", "any"}

    def walk(schema: dict) -> None:
        assert schema.get("type") not in bfcl_only
        assert "optional" not in schema
        assert set(schema.get("required", [])) <= set(schema.get("properties", {}))
        for sub in schema.get("properties", {}).values():
            walk(sub)
        if "items" in schema:
            walk(schema["items"])

    for category in CATEGORIES:
        for q in load_questions(category, VENDORED_DIR):
            for f in q.functions:
                schema = to_json_schema(f["parameters"])
                assert schema["type"] == "object"
                walk(schema)


def test_safe_name_and_name_map() -> None:
    assert safe_name("math.hypot") == "math_hypot"
    assert safe_name("aws.lexv2_models.list_exports") == "aws_lexv2_models_list_exports"
    assert safe_name("plain") == "plain"
    functions = [{"name": "uber.ride"}, {"name": "get_weather"}]
    assert name_map(functions) == {"uber_ride": "uber.ride", "get_weather": "get_weather"}


def test_safe_names_unique_within_every_question() -> None:
    for category in CATEGORIES:
        for q in load_questions(category, VENDORED_DIR):
            assert len(name_map(q.functions)) == len(q.functions), q.id


def test_default_data_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CALLGATE_BFCL_DIR", str(tmp_path))
    assert default_data_dir() == tmp_path


def test_default_data_dir_shared_then_vendored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CALLGATE_BFCL_DIR", raising=False)
    shared = Path(bfcl_data.__file__).resolve().parents[2].parent / "shared" / "data" / "bfcl"
    assert default_data_dir() == (shared if shared.is_dir() else VENDORED_DIR)


def test_default_data_dir_falls_back_to_vendored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CALLGATE_BFCL_DIR", raising=False)
    fake = tmp_path / "repo" / "callgate" / "eval" / "bfcl_data.py"
    monkeypatch.setattr(bfcl_data, "__file__", str(fake))
    assert default_data_dir() == VENDORED_DIR


def test_env_dir_used_by_load_questions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLGATE_BFCL_DIR", str(VENDORED_DIR))
    assert load_questions("irrelevance", limit=2)[1].id == "irrelevance_2"


def test_all_data_schemas_are_valid_json_schema() -> None:
    for category in CATEGORIES:
        for q in load_questions(category, VENDORED_DIR):
            for f in q.functions:
                jsonschema.Draft202012Validator.check_schema(to_json_schema(f["parameters"]))


def test_schema_conversion_makes_contradictory_enums_satisfiable() -> None:
    """Schemas written by hand in BFCL's style whose enum contradicts the type: as
    written no value validates; converted, the enum's members do."""
    bfcl = {"type": "dict", "properties": {
        "flag": {"type": "boolean", "enum": ["True", "False", "dontcare"]},
        "seats": {"type": "integer", "enum": ["1", "2", "dontcare"], "default": "dontcare"},
        "level": {"type": "integer", "enum": ["low", "high"]},
        "colours": {"type": "array", "items": {"type": "string"}, "enum": ["red", "blue"]},
        "size": {"type": "integer", "enum": [1, 2]},
    }}
    props = to_json_schema(bfcl)["properties"]
    assert props["flag"] == {"type": "string", "enum": ["True", "False", "dontcare"]}
    assert props["seats"] == {"type": "integer", "enum": [1, 2], "default": "dontcare"}
    assert props["level"] == {"type": "string", "enum": ["low", "high"]}
    assert props["colours"] == {"type": "array",
                                "items": {"type": "string", "enum": ["red", "blue"]}}
    assert props["size"] == {"type": "integer", "enum": [1, 2]}  # consistent: unchanged
    schema = to_json_schema(bfcl)
    for value in ({"flag": "True"}, {"seats": 2}, {"level": "low"}, {"colours": ["blue"]}):
        jsonschema.validate(value, schema)


def test_every_enum_of_the_data_has_a_member_that_validates() -> None:

    def walk(schema: dict) -> None:
        if isinstance(schema.get("enum"), list):
            bare = {k: v for k, v in schema.items() if k not in ("default", "description")}
            assert any(jsonschema.Draft202012Validator(bare).is_valid(m)
                       for m in schema["enum"]), schema
        for sub in schema.get("properties", {}).values():
            walk(sub)
        if isinstance(schema.get("items"), dict):
            walk(schema["items"])

    for category in CATEGORIES:
        for q in load_questions(category):  # the shared half when present, else vendored
            for f in q.functions:
                walk(to_json_schema(f["parameters"]))
