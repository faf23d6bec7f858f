"""An answer's shape against the `format` its turn asked for (issue 31)."""

from ctxkeep.daemon.turns.answer_format import format_problem

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
    assert format_problem('{"items": 1}', {"type": "nonsense"}).startswith("the schema itself is not valid")
