"""How fast each model reads prompts and writes answers on this machine, learnt from the
model server's own timings of every answer (`prompt_eval_duration` for the tokens it read
that its cache did not hold, `eval_duration` for the tokens it wrote): what a turn or a
compaction is expected to take, and how long a model that is reading a prompt is waited
for before it counts as stuck."""

import statistics
from collections import deque
from dataclasses import dataclass, field

from ctxkeep.daemon.backends.protocol import ChatChunk

#: A speed is the median of this many recent measurements (one odd sample — a machine
#: busy for a moment, a prompt mostly cached — does not swing it).
SAMPLES = 9
#: A sample this many times off the speed (faster or slower) is left out of it; and no one
#: measurement moves a speed by more than this factor.
OUTLIER = 2.0
#: Outliers in a row that say the machine changed (another load, another server).
CHANGED = 3
#: Measurements smaller than these say more about overheads than about speed.
MIN_TOKENS = 16
MIN_SECONDS = 0.05
#: A model reading a prompt is given this many times what the prompt should take, and
#: PATIENCE_S more, before it counts as not answering (never less than configured).
PATIENCE = 3.0
PATIENCE_S = 30.0


@dataclass
class Speed:
    """One model's speeds in tokens a second (0: not measured yet)."""

    read: float = 0.0
    write: float = 0.0


@dataclass
class Samples:
    """Recent measurements of one speed, and the robust speed they make."""

    recent: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    #: Outliers in a row (CHANGED of them say the machine changed: they become the samples).
    pending: list[float] = field(default_factory=list)

    def add(self, sample: float, speed: float) -> float:
        """The speed after `sample`: the median of the recent samples, one more than
        OUTLIER × off it left out (unless CHANGED come in a row), and never more than
        OUTLIER × away from `speed` in one step."""
        if speed and not speed / OUTLIER <= sample <= speed * OUTLIER:
            self.pending.append(sample)
            if len(self.pending) < CHANGED:
                return speed
            self.recent.clear()
            self.recent.extend(self.pending[:-1])
        self.pending.clear()
        self.recent.append(sample)
        found = statistics.median(self.recent)
        return min(max(found, speed / OUTLIER), speed * OUTLIER) if speed else found


class Speeds:
    """Each model's reading and writing speed, from the answers it gave since start-up."""

    def __init__(self) -> None:
        self._by_model: dict[str, Speed] = {}
        self._samples: dict[tuple[str, str], Samples] = {}

    def of(self, model: str) -> Speed:
        return self._by_model.get(model, Speed())

    def measured(self) -> dict[str, Speed]:
        """Every model measured so far."""
        return {m: s for m, s in self._by_model.items() if s.read or s.write}

    def observe(self, model: str, final: ChatChunk) -> None:
        """Learn from an answer's last chunk (its counts and the server's timings)."""
        speed = self._by_model.setdefault(model, Speed())
        cached = final.prompt_eval_cached_count
        read = (final.prompt_eval_count or 0) - ((final.cached_estimate if cached is None else cached) or 0)
        seconds = final.prompt_eval_duration / 1e9
        if read >= MIN_TOKENS and seconds >= MIN_SECONDS:
            speed.read = self._sampled(model, "read").add(read / seconds, speed.read)
        seconds = final.eval_duration / 1e9
        if (final.eval_count or 0) >= MIN_TOKENS and seconds >= MIN_SECONDS:
            speed.write = self._sampled(model, "write").add((final.eval_count or 0) / seconds, speed.write)

    def _sampled(self, model: str, kind: str) -> Samples:
        return self._samples.setdefault((model, kind), Samples())

    def expected(self, model: str, read: int, write: int = 0) -> float | None:
        """Seconds to read `read` tokens and write `write`, at the model's measured speeds
        (None: a speed it needs is not measured yet)."""
        speed = self.of(model)
        if (read and not speed.read) or (write and not speed.write):
            return None
        return (read / speed.read if read else 0.0) + (write / speed.write if write else 0.0)

    def reads_in(self, model: str, seconds: float) -> int | None:
        """The tokens the model reads in `seconds` at its measured speed (None: no limit
        asked for, or the speed not measured yet)."""
        speed = self.of(model).read
        return int(speed * seconds) if seconds and speed else None

    def patience(self, model: str, read: int, configured: float) -> float:
        """How long a model reading a prompt of `read` new tokens may send nothing: the
        configured first_token_timeout, or more where the model is measured slower than
        that allows for this prompt."""
        expected = self.expected(model, read)
        return configured if expected is None else max(configured, PATIENCE * expected + PATIENCE_S)

    def said(self, model: str, read: int) -> str:
        """"~40 s at 38 tokens/s here" for reading `read` tokens ("" when not measured)."""
        expected = self.expected(model, read)
        if expected is None or expected < 1:
            return ""
        return f"~{expected:,.0f} s for {read:,} tokens at {self.of(model).read:,.0f} tokens/s here"
