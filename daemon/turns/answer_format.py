"""Whether an answer has the shape its turn asked for (`format`: "json", or a JSON schema):
checked when it is stored, so a mismatch is flagged on the message, never kept as valid."""

import json
from typing import Any

import jsonschema


def format_problem(text: str, wanted: str | dict[str, Any] | None) -> str:
    """What is wrong with `text` as an answer in the `wanted` format ("" when nothing is,
    or no format was asked for)."""
    if wanted is None:
        return ""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(wanted, dict):  # "json": any JSON value
        return ""
    try:
        validator = jsonschema.validators.validator_for(wanted)
        validator.check_schema(wanted)
    except jsonschema.SchemaError as exc:
        return f"the schema itself is not valid: {exc.message}"
    error = jsonschema.exceptions.best_match(validator(wanted).iter_errors(value))
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path)
    return f"does not match the schema{f' at {where}' if where else ''}: {error.message}"
