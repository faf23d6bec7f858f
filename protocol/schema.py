"""The protocol's JSON Schema (docs/protocol.schema.json): every request, reply and event,
its definitions named as the protocol names them."""

import inspect
import json

import msgspec

from . import events, replies, requests
from .version import PROTOCOL_VERSION


def render_schema() -> str:
    """JSON Schema of every request, reply and event."""
    (req, rep, ev), components = msgspec.json.schema_components(
        [requests.AnyRequest, replies.AnyReply, events.AnyEvent],
        ref_template="#/$defs/{name}")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"ctxkeep protocol {PROTOCOL_VERSION}",
        "$defs": {**components, "Request": req, "Reply": rep, "Event": ev},
    }
    _clean_descriptions(schema)
    text = json.dumps(schema, indent=2, sort_keys=True)
    for python, protocol in _schema_names(components).items():
        text = text.replace(f'"#/$defs/{python}"', f'"#/$defs/{protocol}"')
        text = text.replace(f'"{python}": {{', f'"{protocol}": {{')
    return json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def _clean_descriptions(node: object) -> None:
    """Every description as `inspect.cleandoc` leaves a docstring: msgspec versions differ in
    how they indent a docstring's later lines (0.23 cleans them, 0.22 keeps them)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = inspect.cleandoc(value)
            else:
                _clean_descriptions(value)
    elif isinstance(node, list):
        for item in node:
            _clean_descriptions(item)


def _schema_names(components: dict) -> dict[str, str]:
    """Protocol names for the schema's definitions: `request:usage`, `reply:error`,
    `event:context.usage`, records by their own name — never a Python module path."""
    names: dict[str, str] = {}
    for kind, classes in (("request", requests.ALL), ("reply", replies.ALL), ("event", events.ALL)):
        for cls in classes:
            for python in (cls.__name__, f"{cls.__module__}.{cls.__qualname__}"):
                if python in components:
                    names[python] = f"{kind}:{requests.tag_of(cls)}"
    for python in components:
        if python not in names and "." in python:
            names[python] = python.rsplit(".", 1)[1]
    return names
