"""The prompt each model's server read last, where a turn sent it, and the answer it wrote.

Ollama's and llama.cpp's servers keep what they read last and read again only what follows
the prefix a new prompt shares with it. A summary asked for after the opening of that
prompt (its system message; the conversation up to the last message summarized) is read
from their cache but for the request, where a transcript of the same messages is read whole."""

import math
from dataclasses import dataclass
from typing import Any

from ctxkeep.daemon.context.estimator import SLACK, Estimator
from ctxkeep.daemon.context.prompt import context_messages
from ctxkeep.daemon.store.records import View

Message = dict[str, Any]


@dataclass(frozen=True)
class Served:
    """One turn's prompt as its model's server read it, with the answer it wrote."""

    session_id: str
    #: The prompt's messages, then the answer as an assistant message.
    messages: list[Message]
    #: The session as the prompt was built from it (before its question).
    view: View
    #: The server's count of the prompt (0: none), and the estimate it was sent with: an
    #: opening's estimate is scaled by what the count made of the whole.
    counted: int = 0
    estimated: int = 0


@dataclass(frozen=True)
class Opening:
    """The first messages of the prompt a server read last, which a summary call goes on
    from, and their tokens (an estimate raised by its error: what must fit)."""

    messages: list[Message]
    tokens: int


#: What an opening's tokens, scaled by the count of the whole prompt, are raised by: the error
#: of one part's share of an exact count is far smaller than of an estimate alone.
SCALED_MARGIN = 0.03


def opening_tokens(served: Served, estimator: Estimator, model: str, estimate: int) -> int:
    """The most an opening of the served prompt estimated at `estimate` tokens may take:
    scaled by the count of the whole where the server counted it, else the estimate
    raised by its error."""
    if served.counted and served.estimated:
        return math.ceil(estimate * served.counted / served.estimated * (1 + SCALED_MARGIN)) + SLACK
    return estimator.raised(model, estimate)


def system_opening(served: Served, estimator: Estimator, model: str) -> Opening | None:
    """The served prompt's system message (its checkpoints among it), where it has one."""
    first = served.messages[0]
    if first["role"] != "system":
        return None
    return Opening([first], opening_tokens(served, estimator, model, estimator.message(model, first["content"])))


def opening_through(served: Served, seq: int, estimator: Estimator) -> Opening | None:
    """The served prompt's messages through the one that shows stored message `seq` (and the
    answer after it, where that is a question: a request then follows an answer, as roles
    alternate in every template), where they open it as they are (None where that message
    merged with the next one of its role, or is not in the prompt's context)."""
    session, context, active = served.view
    end = next((i + 1 for i, m in enumerate(active) if m.seq == seq), 0)
    if not end:
        return None
    built = context_messages(session, context, active[:end])
    if served.messages[:len(built)] != built:
        return None
    tokens = estimator.context_estimate(session, context, active[:end]).tokens
    if built[-1]["role"] == "user":
        answer = served.messages[len(built)] if len(served.messages) > len(built) else {}
        if answer.get("role") != "assistant":
            return None
        built, tokens = [*built, answer], tokens + estimator.message(session.model, str(answer.get("content", "")))
    if built[-1]["role"] != "assistant":  # a tool's results: not every template takes a request after them
        return None
    return Opening(built, opening_tokens(served, estimator, session.model, tokens))


class LastPrompts:
    """What each model's server read last, as far as the daemon knows: a turn's prompt and
    answer, or nothing a summary could go on from (another request since, of another shape)."""

    def __init__(self) -> None:
        self._last: dict[str, Served] = {}

    def turn(self, model: str, served: Served) -> None:
        """A turn of `served.session_id` was answered by `model`: its server holds it."""
        self._last[model] = served

    def other(self, model: str) -> None:
        """A request `model`'s server read that no summary can go on from."""
        self._last.pop(model, None)

    def of(self, session_id: str, model: str) -> Served | None:
        """The last prompt `model`'s server read, where it was a turn of `session_id`."""
        found = self._last.get(model)
        return found if found is not None and found.session_id == session_id else None
