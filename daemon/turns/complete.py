"""A turn's last step: the answer stored with all it changed, in one commit.

Ollama's exact count calibrates the estimator (unless Ollama cut the prompt after all:
then it is neither learnt nor an anchor), goal markers in the answer update the goal
record, the question and answer join the active context, and the job ends with
`response.generation`."""

import asyncio
import logging
from dataclasses import dataclass

import msgspec

from ctxkeep.daemon.backends.protocol import ChatChunk
from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.calibration import repetitive
from ctxkeep.daemon.context.content import prompt_content
from ctxkeep.daemon.context.estimator import SLACK
from ctxkeep.daemon.context.features import add
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.jobs.queue import Job
from ctxkeep.daemon.recall.recaller import Recaller
from ctxkeep.daemon.store.prompt_count import Anchor, PromptCount
from ctxkeep.daemon.store.records import MessageRecord, NewMessage, SessionRecord, View
from ctxkeep.daemon.store.shown import message_info
from ctxkeep.daemon.store.writer import landed
from ctxkeep.daemon.turns.answer_format import format_problem
from ctxkeep.daemon.turns.output import Output
from ctxkeep.daemon.turns.prepare import Turn
from ctxkeep.daemon.turns.question import Reopened
from ctxkeep.protocol.counts import bounded
from ctxkeep.protocol.events import GoalUpdated, ResponseGeneration

log = logging.getLogger("ctxkeep.daemon.turns.generation")


@dataclass
class Completer:
    """Stores each answered turn."""

    parts: Parts
    recaller: Recaller

    def truncated(self, turn: Turn, token_count: int, user: MessageRecord) -> bool:
        """Whether the count is not the whole prompt: the server cut it anyway (an old one
        ignoring `truncate`: it reports at most the window), or reports fewer tokens than
        the estimate allows for, or fewer than the last prompt's exact count left in this one
        (an older Ollama counting only what it did not have cached)."""
        session, estimator = turn.view.session, self.parts.estimator
        lowest = turn.estimate.tokens - 2 * estimator.allowance(session.model, turn.estimate) - SLACK
        # what the last prompt left in this one, with at least half the new message's estimate
        # (only where the estimate too says nothing left the prompt since: not a regenerate's)
        kept = session.count.next_prompt + estimator.message(session.model, prompt_content(user)) // 2 - SLACK \
            if session.count.exact else 0
        kept = kept if turn.estimate.tokens >= kept else 0
        return token_count >= session.window or token_count < kept or (
            estimator.calibrated(session.model) and token_count < lowest)

    def counted(self, turn: Turn, final: ChatChunk, user: MessageRecord) -> tuple[int, bool, bool]:
        """(the prompt's count, whether the server counted it, whether that count is not the
        whole prompt: `truncated`). A server may not count the prompt, or send nonsense: a
        negative count is none."""
        counted = final.prompt_eval_count is not None and final.prompt_eval_count >= 0
        token_count = bounded(final.prompt_eval_count or 0) if counted else turn.estimate.tokens
        return token_count, counted, counted and self.truncated(turn, token_count, user)

    async def complete(self, job: Job, turn: Turn, user: MessageRecord, output: Output,
                       reopened: Reopened | None = None, answer_format: str | dict | None = None) -> View | None:
        """Store the answer, end the job, announce; returns the session as it now is (None
        when the turn was cancelled while its answer was being stored: too late, it
        completes, but no compaction follows)."""
        (session, context, active), final = turn.view, output.final
        estimator = self.parts.estimator
        assert final is not None
        token_count, counted, truncated = self.counted(turn, final, user)
        self.parts.speeds.observe(session.model, final)  # what the next turns should take
        eval_count = bounded(final.eval_count)
        sent = add(turn.features, turn.recall.features)  # the prompt as sent, its recall block in
        calibrations = [] if truncated or not counted else estimator.observe(
            session, sent, token_count, turn.estimate, [(output.streamed, eval_count)],
            repeated=repetitive(prompt_content(user)))
        # bounded, but a schema's patterns may take their time: never on the event loop
        format_error = await asyncio.to_thread(format_problem, output.text, answer_format) \
            if answer_format is not None else ""
        reply = NewMessage(role="assistant", content=output.text, thinking=output.thought,
                           model=session.model, eval_count=eval_count, reply_to=user.seq,
                           recalled=turn.recall.seqs, remembered=turn.recall.sources, recall_cut=turn.recall.cut,
                           alternative_of=reopened.answer if reopened else -1,
                           tool_calls=output.calls, done_reason=final.done_reason,
                           format_error=format_error)
        goals = goal_markers.apply_markers(context.goals, output.text)
        count, exact = token_count, counted
        if truncated and token_count < session.window:  # far fewer than sent: not the whole prompt
            count, exact = turn.estimate.tokens, False  # the count shown never silently shrinks
        if goals is not None:  # what the model sees changed after the count: an estimate
            changed = msgspec.structs.replace(context, goals=goals)
            count, exact = estimator.context(session, changed, [*active, user, reply.record(-1, 0.0)]), False
        prompt = PromptCount.counted(count, exact, answer=eval_count, recalled=turn.recall.tokens,
                                     cached=final.prompt_eval_cached_count)
        anchor = None if truncated or not counted else Anchor(
            tokens=token_count, features=list(sent), model=session.model, recall=list(turn.recall.features))
        # too late to cancel once the answer is being stored: it lands
        (session, (assistant,)), cancelled = await landed(self.parts.store.history.append_async(
            session.id, [reply], activate_seqs=[user.seq], activate=[0], answered=[user.seq],
            count=prompt, anchor=anchor, calibrations=calibrations, goals=goals))
        if truncated:
            log.warning("session=%s prompt_eval_count %d (estimated %d, window %d): the server cut the "
                        "prompt, or counted only the tokens it did not have cached (older Ollama); the "
                        "estimate stands for the count", session.id, token_count, turn.estimate.tokens,
                        session.window)
        job.end(answered(job.id, assistant, session, turn, final, (token_count, counted, truncated)))
        estimator.weights(session.model)  # refit now, not on the next turn's way out
        self.recaller.stored(session.id)  # its index (when kept) takes the turn in
        context = msgspec.structs.replace(context, seqs=[*context.seqs, user.seq, assistant.seq],
                                          goals=goals if goals is not None else context.goals)
        view = View(session, context, [*active, user, assistant])
        if goals is not None:
            self.parts.bus.publish(GoalUpdated(goals=goals), session.id)
        self.parts.announcer.changed(session.id, view=view)
        log.info("session=%s generation=%s done: %d prompt tokens (estimated %d), %d answer tokens",
                 session.id, job.id, token_count, turn.estimate.tokens, eval_count)
        return None if cancelled else view


def answered(generation_id: str, assistant: MessageRecord, session: SessionRecord, turn: Turn, final: ChatChunk,
             count: tuple[int, bool, bool]) -> ResponseGeneration:
    """The event that ends a turn: the answer as stored, the counts and the server's timings."""
    token_count, counted, truncated = count
    return ResponseGeneration(
        generation_id=generation_id, message=message_info(assistant), token_count=token_count,
        eval_count=bounded(final.eval_count), window=session.window, truncated=truncated,
        next_tokens=bounded(session.count.next_prompt),
        prompt_estimate=turn.estimate.tokens, total_duration=bounded(final.total_duration),
        load_duration=bounded(final.load_duration), prompt_eval_duration=bounded(final.prompt_eval_duration),
        eval_duration=bounded(final.eval_duration), host=final.host, token_count_exact=counted,
        cached_tokens=None if session.count.cached < 0 else bounded(session.count.cached))
