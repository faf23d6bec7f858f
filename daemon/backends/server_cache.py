"""What an OpenAI-compatible server's prompt cache probably holds where the server does not
say (llama-cpp-python's): it keeps the last prompt it read, with the answer it wrote, and
reads again only what follows the longest prefix a new prompt shares with it."""

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ctxkeep.daemon.backends.protocol import ChatChunk


def shared_share(before: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]) -> float:
    """The share of `now`'s text that opens it as it opened `before`: what a server that
    keeps the last prompt it read can serve from its cache (by characters). Whole messages
    are compared first, then the first that differs, by halves: no loop over characters
    (it runs on the event loop, for every request)."""
    texts = [f"\x00{m.get('role')}\x01{m.get('content')}" for m in now]
    total = sum(map(len, texts))
    if not total:
        return 0.0
    shared = 0
    for i, text in enumerate(texts):
        if i >= len(before):
            break
        old = f"\x00{before[i].get('role')}\x01{before[i].get('content')}"
        if old != text:
            shared += common_prefix(old, text)
            break
        shared += len(text)
    return shared / total


def common_prefix(a: str, b: str) -> int:
    """The length of the longest prefix `a` and `b` share."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # a[:low] == b[:low]; a[:high + 1] != b[:high + 1] or past the end
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class ServerCache:
    """What one server last read (the prompt, then the answer it wrote), and how it reports
    its counts."""

    def __init__(self) -> None:
        self.last: list[dict[str, Any]] = []
        #: Whether the server leaves usage out of its streams (llama-cpp-python's): then each
        #: prompt is counted, read whole for one token, before its answer streams rather than
        #: after (a count after it would put the answer out of the server's cache).
        self.streams_bare = False

    def reading(self, sent: list[dict[str, Any]]) -> float:
        """The share of `sent` the server's cache probably holds; `sent` is what it holds next."""
        share, self.last = shared_share(self.last, sent), sent
        return share

    def wrote(self, sent: list[dict[str, Any]], answer: str) -> None:
        """The server answered `sent` with `answer`: its cache holds both."""
        self.last = [*sent, {"role": "assistant", "content": answer}]

    @staticmethod
    def estimated(final: ChatChunk, share: float) -> ChatChunk:
        """`final` with the cached tokens estimated by `share` where the server said nothing."""
        if final.prompt_eval_cached_count is not None or final.prompt_eval_count is None:
            return final
        return msgspec.structs.replace(final, cached_estimate=round(final.prompt_eval_count * share))
