"""What a prompt may be: refused when it cannot fit, and the room it leaves for the answer."""

import math

import msgspec

from ctxkeep.daemon.context.content import prompt_content
from ctxkeep.daemon.context.estimator import Estimate
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.usage import reply_room
from ctxkeep.daemon.errors import RequestError
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View
from ctxkeep.protocol import ErrorCode


def more_room(session: SessionRecord) -> str:
    """How to get a larger window, or that there is none to get with this model."""
    limit = session.context_length
    if limit and session.window >= limit:
        return (f"use a model with a longer context: {session.model}'s whole context length "
                f"({limit:,} tokens) is in use")
    upto = f" (up to {limit:,}, {session.model}'s context length)" if limit else ""
    return f"raise num_ctx{upto}: `ctxkeep set {session.name} --num-ctx N`"


#: More characters than any tokenizer puts in one token (long runs of spaces come closest):
#: a text longer than this many times a window cannot fit in it, whatever the model.
MAX_CHARS_PER_TOKEN = 64


def refuse_oversized(session: SessionRecord, text: str) -> None:
    """Refuse at once, before it is stored or counted, a message that cannot fit the
    session's window under any tokenizer (counting 30 MB of text would hold up every
    client for seconds only to refuse it then)."""
    if len(text) > MAX_CHARS_PER_TOKEN * session.window:
        raise RequestError(
            ErrorCode.CONTEXT_OVERFLOW,
            f"this message is {len(text):,} characters: no tokenizer fits that in the window of "
            f"{session.window:,} tokens (at most {MAX_CHARS_PER_TOKEN} characters make a token). Nothing "
            f"was stored or sent: send less (@file:summary instead of the whole file), or {more_room(session)}")


#: Before a model's first exact count its estimates come from a cautious prior, above most
#: tokenizers (up to about this many times their count: +75 % against Gemma 3's). Until
#: then a prompt is refused only when even the estimate divided by this cannot fit, and the
#: model server, which refuses a prompt over its window (`truncate: false`), decides the rest:
#: a fresh store's first turn is never refused when it fits by the real count.
PRIOR_OVER = 2.0


def judged(parts: Parts, model: str, estimate: Estimate | int) -> tuple[int, bool]:
    """(The size a prompt is checked with, whether it is only the prior's lower bound):
    the estimate raised by its measured error, or, before the model's first exact count,
    the least the prior allows."""
    estimator = parts.estimator
    if estimator.calibrated(model):
        return estimator.raised(model, estimate), False
    tokens = estimate.tokens if isinstance(estimate, Estimate) else estimate
    return math.ceil(tokens / PRIOR_OVER), True


def floor_view(parts: Parts, view: View) -> View:
    """The least a prompt of this view can be, however much is compacted: the system
    prompt, goals and pins (the question goes with it)."""
    session, context, _ = view
    floor_context = msgspec.structs.replace(context, seqs=[], checkpoints=[])
    return View(session, floor_context, parts.store.history.messages(session.id, context.pinned))


def refuse_impossible(parts: Parts, view: View, user: MessageRecord, counted: int | None = None) -> None:
    """Refuse a question that cannot fit however much is compacted: the system prompt,
    goals, pins and the question itself (`floor_view`; `counted`: the model server's count
    of that prompt, else its estimate), plus the reply room, over the window."""
    session = view.session
    estimator = parts.estimator
    floor = counted if counted is not None else judged(parts, session.model, estimator.estimate(
        session.model, estimator.context_features(*floor_view(parts, view), user)))[0]
    room = reply_room(parts.config, session)
    if floor + room > session.window:
        mine = estimator.message(session.model, prompt_content(user))
        raise RequestError(
            ErrorCode.CONTEXT_OVERFLOW,
            f"this message is about {mine:,} tokens; with the system prompt, goals and pins "
            f"the prompt cannot be smaller than about {floor:,} tokens, and the window of "
            f"{session.window:,} must keep {room:,} for the answer. Nothing was compacted or "
            f"sent, and the context is as it was: send less (@file:summary instead of the "
            f"whole file), or {more_room(session)}")


def answer_room(parts: Parts, session: SessionRecord, estimate: Estimate, compacted: bool) -> int:
    """num_predict for this prompt: the room the window leaves, at most what the session's
    own num_predict allows (else `answer_max_share` of the window), never less than the
    reserved reply room, so that prompt plus answer always fit, Ollama never shifts or cuts
    the context, and one answer leaves room for the next question.
    The room is what the raised estimate leaves, and the refusal says so (`compacted`:
    automatic compaction is on, so the context is already as small as it gets)."""
    raised = parts.estimator.raised(session.model, estimate)
    room = session.window - raised
    reserve = reply_room(parts.config, session)
    least, first = judged(parts, session.model, estimate)
    if room < reserve and first and session.window - least >= reserve:
        return reserve  # the first count of this model: the server refuses what does not fit
    if room < reserve:
        advice = (f"send less (@file:summary instead of a whole file), or {more_room(session)}"
                  if compacted else f"compact the session (`ctxkeep compact {session.name}`), "
                  f"send less, or {more_room(session)}")
        size = (f"about {estimate.tokens:,} tokens (up to {raised:,} with the estimate's "
                f"measured error)" if estimate.uncertain else f"{raised:,} tokens")
        raise RequestError(
            ErrorCode.CONTEXT_OVERFLOW,
            f"the prompt would be {size}, leaving {max(room, 0):,} of the "
            f"window of {session.window:,} for the answer (at least {reserve:,} are kept)"
            f"{', even with the context compacted as far as it goes' if compacted else ''}. "
            f"Nothing was sent and the context is as it was: {advice}")
    # an estimate under by more than its allowance must not push prompt + answer past the
    # window: the answer's limit leaves the allowance once more, where the reply room allows
    room = max(reserve, room - parts.estimator.allowance(session.model, estimate))
    wanted = session.options.get("num_predict")
    if isinstance(wanted, int) and wanted > 0:
        return min(room, wanted)
    # one answer must not take the whole window: the next question needs room beside it
    return min(room, max(reserve, int(parts.config.answer_max_share * session.window)))
