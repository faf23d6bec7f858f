"""How docs/protocol.md describes one Struct: its docstring, then a table of its fields with
each one's type (bounds included) and default. The document's layout is docgen.py's."""

import inspect
import json

import msgspec


def _type_name(t: msgspec.inspect.Type) -> str:
    """A short readable name for a field type."""
    if isinstance(t, msgspec.inspect.UnionType):
        return " | ".join(_type_name(x) for x in t.types)
    if isinstance(t, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType)):
        return f"list[{_type_name(t.item_type)}]"
    if isinstance(t, msgspec.inspect.DictType):
        return f"object of {_type_name(t.value_type)}"
    if isinstance(t, msgspec.inspect.StructType):
        return t.cls.__name__
    if isinstance(t, msgspec.inspect.LiteralType):
        return " | ".join(json.dumps(v) for v in t.values)
    names = {"StrType": "string", "IntType": "integer", "FloatType": "number",
             "BoolType": "boolean", "NoneType": "null"}
    name = names.get(type(t).__name__, type(t).__name__)
    bounds = [f"{k} {getattr(t, a)}" for k, a in (("≥", "ge"), ("≤", "le"), (">", "gt"),
                                                  ("min length", "min_length"),
                                                  ("max length", "max_length"))
              if getattr(t, a, None) is not None]
    return f"{name} ({', '.join(bounds)})" if bounds else name


def _fields(cls: type[msgspec.Struct]) -> list[str]:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    rows = ["| field | type | default |", "|---|---|---|"]
    tag = cls.__struct_config__.tag
    if tag is not None:
        rows.append(f'| `type` | `"{tag}"` | required |')
    for f in info.fields:
        default = "required" if f.required else f"`{json.dumps(msgspec.to_builtins(f.default if f.default is not msgspec.NODEFAULT else f.default_factory()))}`"
        rows.append(f"| `{f.name}` | {_type_name(f.type)} | {default} |")
    return rows


def doc(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or "")


def describe(out: list[str], cls: type, name: str) -> None:
    """Append the section of `cls`, headed `name`, to `out`."""
    out.extend(["", f"### `{name}`", "", doc(cls), ""])
    out.extend(_fields(cls))
