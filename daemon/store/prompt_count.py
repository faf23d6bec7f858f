"""A session's prompt count, stored whole: what its last prompt counted (`PromptCount`), the
exact count later estimates start from (`Anchor`) and what the server's prompt cache served
over its turns (`CacheTally`); and the rules by which a count changes, each written once.

A count is exact when the model server counted the prompt it was given; it "ends with an
answer" while the next prompt is that prompt less its recall block plus the answer (the
answer is known, so the next prompt's size is too). Any other change of what the model sees
makes the count an estimate that ends with no answer (`PromptCount.estimated`)."""

import msgspec


class PromptCount(msgspec.Struct, kw_only=True, frozen=True):
    """The last prompt's count: its tokens (exact, or an estimate), and of those the recall
    block's; the answer it brought (0 once the count no longer ends with it); the tokens the
    server's prompt cache served of it (-1: the server did not say)."""

    tokens: int = 0
    exact: bool = True
    answer: int = 0
    recalled: int = 0
    cached: int = -1

    @classmethod
    def counted(cls, tokens: int, exact: bool, *, answer: int, recalled: int,
                cached: int | None = None) -> "PromptCount":
        """A turn's count: the server's (`exact`) or the estimate that stands for it; an
        estimate carries no answer and no cache figure."""
        return cls(tokens=tokens, exact=exact, answer=answer if exact else 0, recalled=recalled,
                   cached=min(cached, tokens) if cached is not None and exact else -1)

    def estimated(self, tokens: int, exact: bool = False) -> "PromptCount":
        """The count of a changed prompt (compacted, edited, restored to another context):
        `tokens`, an estimate unless `exact`, no longer ending with an answer."""
        return msgspec.structs.replace(self, tokens=tokens, exact=exact, answer=0)

    def restored(self, saved: "PromptCount", later: bool) -> "PromptCount":
        """A snapshot's count put back: exact only when no turn joined since (`later`), and
        then with its answer and recall block, as they were."""
        exact = saved.exact and not later
        return PromptCount(tokens=saved.tokens, exact=exact, answer=saved.answer if exact else 0,
                           recalled=saved.recalled if exact else 0, cached=self.cached)

    @property
    def next_prompt(self) -> int:
        """What the next prompt holds before its new message, as far as it is known: after
        a turn, that prompt's exact count less its recall block plus the answer."""
        if not self.exact or not self.answer:
            return self.tokens
        return min(2**53, max(0, self.tokens - self.recalled + self.answer))


class Anchor(msgspec.Struct, kw_only=True, frozen=True):
    """The last exact count and the features of the prompt it counted, by `model`'s
    tokenizer (`recall`: the part of them that was the prompt's recall block): later
    estimates are that count plus the estimate of what changed since."""

    tokens: int = 0
    features: list[float] = []
    model: str = ""
    recall: list[float] = []


class CacheTally(msgspec.Struct, kw_only=True, frozen=True):
    """The server's prompt cache over the turns whose server said: the prompt tokens they
    sent and, of those, the ones its cache served."""

    prompt: int = 0
    served: int = 0

    def adding(self, count: PromptCount) -> "CacheTally":
        """The tally with a turn's count in (unchanged when its server did not say)."""
        if count.cached < 0:
            return self
        return CacheTally(prompt=min(2**53, self.prompt + count.tokens), served=min(2**53, self.served + count.cached))

    @property
    def hit_rate(self) -> float | None:
        """The share of prompt tokens the cache served (None: no server said)."""
        return round(self.served / self.prompt, 4) if self.prompt else None
