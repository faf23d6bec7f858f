"""msgspec's validation messages in a user's words.

`Expected \\`int\\` >= 256 - at \\`$.num_ctx\\`` becomes `num_ctx must be at least 256`:
what was wrong, named by the field the user set, without the decoder's notation. A
message this module does not know is returned as it is.
"""

import re

_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$\.?(?P<path>[^`]*)`)?$", re.S)
_BOUND = re.compile(r"^Expected `(?P<kind>\w+)` (?P<op>>=|<=|>|<) (?P<n>[-\d.e+]+)$")
_LENGTH = re.compile(r"^Expected `(?P<kind>\w+)` of length (?P<op>>=|<=) (?P<n>\d+)$")
_TYPE = re.compile(r"^Expected `(?P<want>[^`]+)`, got `(?P<got>\w+)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]+)`$")

_OPS = {">=": "at least", "<=": "at most", ">": "more than", "<": "less than"}
_KINDS = {"int": "a whole number", "float": "a number", "str": "text", "bool": "true or false",
          "array": "a list", "object": "an object", "null": "null", "int | null": "a whole number",
          "str | null": "text", "float | null": "a number"}


def _number(text: str) -> str:
    return text[:-2] if text.endswith(".0") else text


def in_words(message: str) -> str:
    """A msgspec ValidationError's message, said plainly."""
    m = _AT.match(message)
    if m is None:
        return message
    what, path = m["what"], (m["path"] or "").replace("[...]", "")
    field = f"`{path}`" if path else "the request"
    if found := _BOUND.match(what):
        return f"{field} must be {_OPS[found['op']]} {_number(found['n'])}"
    if found := _LENGTH.match(what):
        unit = "character" if found["kind"] == "str" else "item"
        n = int(found["n"])
        if found["op"] == ">=" and n == 1:
            return f"{field} must not be empty"
        return f"{field} must have {_OPS[found['op']]} {n} {unit}{'s' if n != 1 else ''}"
    if found := _TYPE.match(what):
        want = _KINDS.get(found["want"], f"`{found['want']}`")
        got = _KINDS.get(found["got"], found["got"])
        return f"{field} must be {want}, not {got}"
    if found := _MISSING.match(what):
        inside = f" in `{path}`" if path else ""
        return f"`{found['field']}` is missing{inside}"
    if found := _UNKNOWN.match(what):
        inside = f" in `{path}`" if path else ""
        return f"`{found['field']}` is not a known field{inside}"
    return message
