"""The vectors of recent queries (new messages), each asked of its encoder once: a turn may
ask for its question's vector several times (recall asked again smaller, after moving older
turns out, under the reading bound), a regenerated turn for the same one again, and
`ctxkeep memory` for a search just made."""

import asyncio
from collections import OrderedDict

from ctxkeep.daemon.retrieval.encoders import Encoder

#: Queries whose vectors (or the calls that bring them) are kept.
KEPT = 64


def _retrieved(task: "asyncio.Future[list[float]]") -> None:
    """Take a finished call's exception, if any, so that one nobody awaits any more (the
    turn went on by words) is not logged as never retrieved."""
    if not task.cancelled():
        task.exception()


class QueryVectors:
    """Recent queries' vectors by encoder and text, kept as the calls that bring them."""

    def __init__(self) -> None:
        self._calls: OrderedDict[tuple[str, str], asyncio.Future[list[float]]] = OrderedDict()

    def call(self, encoder: Encoder, text: str) -> "asyncio.Future[list[float]]":
        """The call that brings `text`'s vector: the one under way or done (a failed or
        cancelled one is asked again)."""
        key = (encoder.name, text)
        known = self._calls.get(key)
        if known is not None and not (known.done() and (known.cancelled() or known.exception() is not None)):
            self._calls.move_to_end(key)
            return known
        asked = asyncio.ensure_future(self._one(encoder, text))
        asked.add_done_callback(_retrieved)
        self._calls[key] = asked
        while len(self._calls) > KEPT:
            self._calls.popitem(last=False)
        return asked

    @staticmethod
    async def _one(encoder: Encoder, text: str) -> list[float]:
        (vector,) = await encoder.queries([text])
        return vector
