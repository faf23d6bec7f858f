"""An answer's shape against the `format` its turn asked for (issue 31)."""

import json

from ctxkeep.daemon.turns.answer_format import MAX_SCHEMA_DEPTH, format_problem, schema_problem

SCHEMA = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
          "required": ["items"]}


def test_no_format_asks_nothing_and_json_asks_any_json_value():
    assert format_problem("free text", None) == ""
    assert format_problem('[1, "two"]', "json") == ""
    assert format_problem("{'single': 'quotes'}", "json").startswith("not JSON: ")


def test_a_schema_names_where_the_answer_breaks_it():
    assert format_problem('{"items": [1, 2]}', SCHEMA) == ""
    assert format_problem('{"items": [1, "x"]}', SCHEMA) == \
        "does not match the schema at items/1: 'x' is not of type 'integer'"
    assert format_problem('{"items": 1}', {"type": "nonsense"}).startswith("the schema cannot be checked: it is not a valid JSON schema")


def test_a_ref_outside_the_schema_is_refused_and_never_fetched_or_read(watched_http, tmp_path):
    url, hits = watched_http
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string"}')
    for ref in (f"{url}/internal", secret.as_uri(), "other.json", "file:///dev/zero"):
        schema = {"type": "object", "properties": {"a": {"$ref": ref}}}
        assert "points outside the schema" in schema_problem(schema)
        assert format_problem('{"a": "x"}', schema).startswith("the schema cannot be checked: $ref")
    assert hits == []


def test_refs_inside_the_schema_still_resolve():
    schema = {"$defs": {"name": {"type": "string"}}, "type": "object",
              "properties": {"a": {"$ref": "#/$defs/name"}, "kids": {"type": "array", "items": {"$ref": "#"}}}}
    assert schema_problem(schema) == ""
    assert format_problem('{"a": "x", "kids": [{"a": "y"}]}', schema) == ""
    assert "is not of type 'string'" in format_problem('{"a": "x", "kids": [{"a": 1}]}', schema)


def test_schemas_that_cannot_be_checked_are_named_not_crashed():
    deep: dict = {}
    node = deep
    for _ in range(300):
        node["items"] = {}
        node = node["items"]
    assert schema_problem(deep) == f"it nests deeper than {MAX_SCHEMA_DEPTH} levels"
    assert schema_problem({"$ref": "#"}) == "it refers to itself without end ($ref)"
    assert format_problem("{}", {"$ref": "#"}) == \
        "the schema cannot be checked: it refers to itself without end ($ref)"
    assert "cannot be resolved" in schema_problem({"$ref": "#/$defs/missing"})
    assert schema_problem({"type": "string", "pattern": "("}).startswith("it is not a valid JSON schema")
    assert "bytes as JSON" in schema_problem({"enum": ["x" * 70_000]})
    assert format_problem("[" * 100_000, "json").startswith("not JSON")


def test_a_pattern_that_backtracks_without_end_is_cut_off():
    problem = format_problem(json.dumps("a" * 60 + "b"), {"type": "string", "pattern": "(a|aa)+$"})
    assert problem == ("the schema cannot be checked: its pattern '(a|aa)+$' ran over 0.05 s on one "
                       "string (a pattern that backtracks without end)")
    keyed = {"type": "object", "patternProperties": {"(a|aa)+$": {"type": "integer"}}}
    assert "ran over" in format_problem(json.dumps({"a" * 60 + "b": 1}), keyed)
    assert format_problem('{"aa": "x"}', keyed).endswith("'x' is not of type 'integer'")
