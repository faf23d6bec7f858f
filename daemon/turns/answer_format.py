"""Whether an answer has the shape its turn asked for (`format`: "json", or a JSON schema):
checked when it is stored, so a mismatch is flagged on the message, never kept as valid.

A schema comes from outside, so it is bounded before it is used: its size and depth are
capped, a `$ref` may only point inside the schema itself (nothing is ever fetched or read:
the registry retrieves nothing), its regular expressions are compiled up front and matched
with a time limit (the `regex` module's `timeout`), and a whole check has a deadline. A
schema that cannot be checked is refused when the turn is asked (`schema_problem`)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import ValidationError

# jsonschema, referencing and regex are imported where a schema is first checked: most
# daemons never check one, and together they are a sixth of the daemon's start-up imports.

#: The largest schema taken, as JSON.
MAX_SCHEMA_BYTES = 64 * 1024
#: How deeply a schema may nest (objects and arrays).
MAX_SCHEMA_DEPTH = 32
#: The longest one regular expression may run on one string.
PATTERN_SECONDS = 0.05
#: The longest a whole answer's check may take.
CHECK_SECONDS = 1.0
#: Keywords that name other schemas: only `#...` (inside this one) is followed.
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


class Unchecked(Exception):
    """The answer could not be checked against its schema: why."""


def _retrieve_nothing(uri: str):
    """The registry's retrieval: a schema names only itself (no network, no files)."""
    from referencing.exceptions import NoSuchResource
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class mypy does not read


def _walk(node: Any, depth: int = 0):
    """Every dict of a schema with its depth (raises ValueError past MAX_SCHEMA_DEPTH)."""
    if depth > MAX_SCHEMA_DEPTH:
        raise ValueError(f"it nests deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, depth + 1)


def _patterns(schema: dict[str, Any]) -> list[str]:
    """The regular expressions a schema uses (`pattern`, `patternProperties`' keys)."""
    found = []
    for node in _walk(schema):
        if isinstance(node.get("pattern"), str):
            found.append(node["pattern"])
        if isinstance(node.get("patternProperties"), dict):
            found.extend(k for k in node["patternProperties"] if isinstance(k, str))
    return found


def schema_problem(schema: str | dict[str, Any] | None) -> str:
    """Why `schema` (a turn's `format`) cannot be used to check an answer ("" when it can)."""
    if not isinstance(schema, dict):
        return ""
    import jsonschema
    import regex
    size = len(json.dumps(schema))
    if size > MAX_SCHEMA_BYTES:
        return f"it is {size:,} bytes as JSON; at most {MAX_SCHEMA_BYTES:,} are taken"
    try:
        nodes = list(_walk(schema))
    except ValueError as exc:
        return str(exc)
    for node in nodes:
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if isinstance(ref, str) and not ref.startswith("#"):
                return (f"{keyword} {ref[:80]!r} points outside the schema: ctxkeepd fetches and "
                        "reads nothing; put the definition under $defs and refer to it as #/$defs/NAME")
    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"it is not a valid JSON schema: {exc.message}"
    for pattern in _patterns(schema):
        try:
            regex.compile(pattern)
        except (regex.error, OverflowError) as exc:
            return f"its pattern {pattern[:80]!r} is not a regular expression: {exc}"
    try:
        _check(schema, None, time.monotonic() + CHECK_SECONDS)
    except Unchecked as exc:
        return str(exc)
    return ""


def _bounded_validator(schema: dict[str, Any], deadline: float):
    """A validator for `schema` whose patterns run under a time limit and whose
    references resolve only inside it."""
    import jsonschema
    import regex
    from jsonschema import ValidationError
    from referencing import Registry
    base = jsonschema.validators.validator_for(schema)

    def search(pattern: str, text: str) -> bool:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Unchecked(f"checking it took over {CHECK_SECONDS:g} s")
        try:
            return regex.search(pattern, text, timeout=min(PATTERN_SECONDS, left)) is not None
        except TimeoutError:
            raise Unchecked(f"its pattern {pattern[:80]!r} ran over {PATTERN_SECONDS:g} s on one string "
                            "(a pattern that backtracks without end)") from None

    def pattern(validator, wanted, instance, _schema):
        if validator.is_type(instance, "string") and not search(wanted, instance):
            yield ValidationError(f"{instance!r} does not match {wanted!r}")

    def pattern_properties(validator, wanted, instance, _schema):
        if not validator.is_type(instance, "object"):
            return
        for expression, subschema in wanted.items():
            for key, value in instance.items():
                if search(expression, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=expression)

    bounded = jsonschema.validators.extend(base, {"pattern": pattern, "patternProperties": pattern_properties})
    return bounded(schema, registry=Registry(retrieve=_retrieve_nothing))  # type: ignore[call-arg]  # attrs, as above


def _check(schema: dict[str, Any], value: Any, deadline: float) -> ValidationError | None:
    """The best error of `value` against `schema` (None: it matches); Unchecked when the
    check cannot finish (a reference that leads back to itself, a deadline passed)."""
    import jsonschema
    from referencing.exceptions import Unresolvable
    try:
        errors = _bounded_validator(schema, deadline).iter_errors(value)
        return jsonschema.exceptions.best_match(errors)
    except RecursionError:
        raise Unchecked("it refers to itself without end ($ref)") from None
    except Unresolvable as exc:
        raise Unchecked(f"a reference cannot be resolved inside it: {exc}") from None


def format_problem(text: str, wanted: str | dict[str, Any] | None) -> str:
    """What is wrong with `text` as an answer in the `wanted` format ("" when nothing is,
    or no format was asked for). Bounded in time; run it off the event loop."""
    if wanted is None:
        return ""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    except RecursionError:
        return "not JSON this reader takes: it nests too deeply"
    if not isinstance(wanted, dict):  # "json": any JSON value
        return ""
    problem = schema_problem(wanted)
    if problem:
        return f"the schema cannot be checked: {problem}"
    try:
        error = _check(wanted, value, time.monotonic() + CHECK_SECONDS)
    except Unchecked as exc:
        return f"the schema cannot be checked: {exc}"
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path)
    return f"does not match the schema{f' at {where}' if where else ''}: {error.message}"
