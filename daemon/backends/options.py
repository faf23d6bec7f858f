"""Ollama's model options, checked before a session keeps them: a name Ollama does not
know, or a value of the wrong type, is refused with what would be right. The names and
types are the official client's own (`ollama.Options`), as Ollama documents them."""

import difflib
from collections.abc import Mapping
from typing import Any

from ctxkeep.daemon.errors import RequestError
from ctxkeep.protocol import ErrorCode


def check_options(options: Mapping[str, Any]) -> None:
    """Raise RequestError (invalid_argument) naming the first option that is wrong."""
    import ollama
    import pydantic
    known = sorted(set(ollama.Options.model_fields) - {"num_ctx"})
    for key in options:
        if key == "num_ctx":
            raise RequestError(ErrorCode.INVALID_ARGUMENT, "num_ctx is the session's window: set "
                                                           "it with --num-ctx, not as an option")
        if key not in known:
            close = difflib.get_close_matches(key, known, 1)
            hint = f"did you mean {close[0]!r}?" if close else f"Ollama's options: {', '.join(known)}"
            raise RequestError(ErrorCode.INVALID_ARGUMENT, f"Ollama has no option {key!r}: {hint}")
    try:
        ollama.Options.model_validate(dict(options))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        raise RequestError(ErrorCode.INVALID_ARGUMENT,
                           f"option {first['loc'][0]}={first['input']!r}: {first['msg'].lower()}") from None
