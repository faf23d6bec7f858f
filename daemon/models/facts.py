"""What a model backend knows about a model."""

import msgspec


class ModelFacts(msgspec.Struct, frozen=True):
    """What /api/show says about a model."""

    context_length: int
    parameter_size: str = ""
    capabilities: tuple[str, ...] = ()
