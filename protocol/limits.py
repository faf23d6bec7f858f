"""The ranges of what comes from outside, checked at every edge: the ZeroMQ transport
decodes requests into Structs that carry these types, and the HTTP front door converts what
its clients send through the same types (`checked`) before anything is stored."""

from typing import Annotated, Any, TypeVar, overload

import msgspec
from msgspec import Meta

#: The context window a session asks of its model: Ollama's smallest useful size up to 16 Mi.
NumCtx = Annotated[int, Meta(ge=256, le=2**24)]
#: A model's name as a client gives it (Ollama's are far shorter; empty: the session's or default).
ModelName = Annotated[str, Meta(max_length=200)]
#: A number in a model option: what every JSON implementation represents exactly.
OptionInt = Annotated[int, Meta(ge=-(2**53), le=2**53)]
OptionFloat = Annotated[float, Meta(ge=-1e15, le=1e15)]
OptionText = Annotated[str, Meta(max_length=4096)]
#: A model option's value (temperature, top_p, stop, ...).
OptionValue = OptionInt | OptionFloat | OptionText | bool | Annotated[list[OptionText], Meta(max_length=64)]
#: Options passed to the model server as `options`.
Options = Annotated[dict[Annotated[str, Meta(max_length=64)], OptionValue], Meta(max_length=64)]

T = TypeVar("T")


class OutOfRange(ValueError):
    """A value from outside is not what its field takes: the message names the field."""


@overload
def checked(value: Any, kind: type[T], what: str) -> T: ...
@overload
def checked(value: Any, kind: Any, what: str) -> Any: ...
def checked(value: Any, kind: Any, what: str) -> Any:
    """`value` as `kind` (strictly: "4096" is not a number), or OutOfRange naming `what`."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        detail = str(exc).replace(" - at `$`", "").replace("`$", f"`{what}")
        raise OutOfRange(f"{what}: {detail}") from None
