"""Level 3 of automatic compaction: older messages become a checkpoint (a goal-aware
summary, their files as outlines) — with the user's own oldest messages among them when
those alone pass half the budget, in one summary call — after the existing checkpoints, which
age — recent, old, ancient, merged — each step re-compressed smaller, once together they need
the room (aging.py)."""

import asyncio
import logging
import math
import secrets
import time
from dataclasses import dataclass, field

import msgspec

from ctxkeep.daemon.compaction import aging, fact_check, summary_check
from ctxkeep.daemon.compaction.checkpoint_sizes import AGED_SHARE, aging_frees, at_most, crowded, summary_room
from ctxkeep.daemon.compaction.chunks import chunk_lines
from ctxkeep.daemon.compaction.planner import AGES, Change, last, outline_line, tool_lines
from ctxkeep.daemon.compaction.prompts import (
    CHECKPOINT_SYSTEM,
    CHECKPOINT_WITH_USER_SYSTEM,
    USER_SUMMARY_SYSTEM,
)
from ctxkeep.daemon.compaction.summarizer import Progress, Summarizer, instructions_for
from ctxkeep.daemon.compaction.summary_record import RECENT, SummaryRecord
from ctxkeep.daemon.context.content import prompt_content
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.prompt import checkpoint_heading
from ctxkeep.daemon.context.usage import Budget
from ctxkeep.daemon.store.context_records import ActiveContext, Checkpoint
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord, View

log = logging.getLogger(__name__)


#: Where the user's own messages, once they pass half the conversation's budget, are
#: summarized down to, the oldest first: from half to a fifth of the budget in one step, so
#: that the next such step is turns away (every pass makes the model read again the prompt
#: after its first change; at 40 % it was one or two messages a pass in a 2,048 window; in 80
#: turns there 79.5 % of prompt tokens came from the cache at 30 %, 79.4–80.6 % at 20 %).
#: Recall brings their words back when a question needs them.
USER_SHARE_AFTER = 0.2


def user_note(users: list[MessageRecord]) -> str:
    """What the user is told when their own earliest messages became a summary."""
    one = len(users) == 1
    what = f"Your earliest message (#{users[0].seq}) is" if one else \
        f"{len(users)} of your earliest messages (#{users[0].seq}–#{users[-1].seq}) are"
    return (f"{what} now kept as a summary, not word for word: your own messages passed half of the conversation's "
            "budget. `ctxkeep undo` puts them back; a larger num_ctx keeps more of them verbatim.")


def same_sizes(aged: list[Checkpoint], checkpoints: list[Checkpoint]) -> bool:
    """Whether aging left the checkpoints as they were (each its size and age)."""
    return [(c.current_tokens, c.age) for c in aged] == [(c.current_tokens, c.age) for c in checkpoints]


@dataclass
class Checkpointer:
    """Level 3: checkpoints made, the user's share summarized, checkpoints aged."""

    parts: Parts
    #: How each model's summaries fared: whether the next is worth asking for.
    summaries: SummaryRecord = field(default_factory=SummaryRecord)

    def _cost(self, model: str) -> summary_check.Cost:
        return lambda text: self.parts.estimator.text(model, text)

    async def checkpoint(self, view: View, budget: Budget, preserved: set[int], keep_recent: int,
                         extra: bool, progress: Progress = lambda *_: None, least: int = 0) -> Change | str:
        """Level 3's change (or why there is none): the messages outside `preserved`
        become a checkpoint, the user's oldest ones too when they pass half the budget (or,
        past the levels (`extra`), when nothing else is left), after the existing checkpoints
        (aged first when they need the room; and where nothing is left to summarize)."""
        session, context, active = view
        older = [m for m in active if m.seq not in preserved]
        users = await asyncio.to_thread(self._user_share, session.model, context, active, budget, preserved,
                                        keep_recent, extra and not older)
        summarizer = (await Summarizer.for_session(self.parts.backend, self.parts.estimator, self.parts.config,
                                                   session, self.parts.speeds)).continuing(self.parts.served, session.id)
        instructions = instructions_for(context)
        checkpoints = list(context.checkpoints)
        notes: list[str] = []
        warnings: list[tuple[str, str]] = []
        gone: set[int] = set()
        # one checkpoint, one summary call (each makes the model read anew): the older answers
        group = sorted(older + users, key=lambda m: m.seq)
        if group:
            transcript = await asyncio.to_thread(  # a big import's first pass: off the event loop
                self._transcript, view, group, set(context.file_summaries), summarizer)
            worth = transcript[1] - self._summary_cost(session.model, group, bool(users), transcript[1],
                                                       summarizer, budget)
            if least and worth < least:
                return (f"{len(group)} older message(s) would free ~{max(0, worth):,} tokens beside their "
                        "summary: not worth a pass yet (each makes the model re-read the whole prompt)")
            system = USER_SUMMARY_SYSTEM if not older else CHECKPOINT_WITH_USER_SYSTEM if users else CHECKPOINT_SYSTEM
            how: list[str] = []  # how the checkpoint was made, where not by a summary
            made = await self._summarize(session, group, transcript, summarizer, instructions,
                                         budget, system, bool(users), context, progress, how)
            if isinstance(made, str):
                notes.append(made)
            else:
                if crowded(checkpoints, made, budget):
                    log.info("session=%s the checkpoints (%s) age before the new one (%d) joins them", session.id,
                             "+".join(str(c.current_tokens) for c in checkpoints), made.current_tokens)
                    checkpoints = await self._age_beside(made, checkpoints, budget, summarizer, instructions)
                checkpoints.append(made)
                gone = {m.seq for m in group}
                if older:
                    notes.append(f"{len(older)} message(s) became a checkpoint")
                if users:
                    warnings.append(("user_summary", user_note(users)))
                    notes.append(user_note(users))
                notes.extend(how)
        if not gone:
            if not checkpoints:
                return "; ".join(notes) or "nothing outside the preserved messages to summarize"
            if least and aging_frees(checkpoints, budget) < least:  # not worth its summary calls
                return "; ".join(notes + ["aging the checkpoints would free too little"])
            aged = await self._age(checkpoints, budget, summarizer, instructions)
            if same_sizes(aged, checkpoints):
                return "; ".join(notes) or "checkpoints are as small as they get"
            checkpoints = aged
            notes.append("checkpoints aged")
        # kept in the order made (not by message): a later one goes after all, as the server holds them
        return Change([s for s in context.seqs if s not in gone],
                      [s for s in context.file_summaries if s not in gone], checkpoints,
                      "; ".join(notes), warnings, judged=bool(least))

    async def _summarize(self, session: SessionRecord, group: list[MessageRecord],
                         transcript: tuple[list[str], int], summarizer: Summarizer, instructions: str,
                         budget: Budget, system: str, of_user: bool, context: ActiveContext,
                         progress: Progress, how: list[str]) -> Checkpoint | str:
        """A checkpoint of `group` (their files as outlines) from its `transcript` (chunks,
        and the tokens the group costs now), or why there is none: it would not be smaller
        than the messages themselves. Where the model's last summaries all failed the fact
        check (summary_record.py), the group's own sentences, and `how` says so."""
        summarizer.check_room()
        room = min(summarizer.room, summary_room(budget, transcript[1]))
        chunks, original = transcript
        source = "".join(chunks)
        text, tokens = "", 0
        if not self.summaries.worth(summarizer.model, "summary"):
            text, tokens = summary_check.extractive(source, "", fact_check.everything(source), room,
                                                    self._cost(session.model))
            if text:
                how.append(f"the checkpoint is made of the conversation's own sentences ({summarizer.model}'s "
                           f"last {RECENT} summaries lost what they replaced)")
        if not text:  # asked (or no sentence of it fits the room: asked after all)
            opening = summarizer.opening_through(group[-1].seq)  # as the last turn showed them, in the cache
            if opening is None:
                log.info("session=%s checkpoint on its own: %s", session.id, "the last turn's prompt did not show "
                         "its messages as they are now" if summarizer.served else "the model's server holds no turn of it")
            text, tokens = await summarizer.summarize(chunks, system, at_most(instructions, room), progress, room=room,
                                                      opening=opening)
            text, tokens = await summary_check.checked(
                self.summaries, summarizer.model, source, text, tokens, room, self._cost(session.model),
                lambda asked: summarizer.summarize(chunks, system, at_most("\n\n".join(
                    filter(None, [instructions, asked])), room), progress, room=room, opening=opening),
                f"session={session.id} ")
        ran = tool_lines(group)
        if ran:  # every tool exchange as one line, whatever the summary kept of it
            block = "Tools run:\n" + "\n".join(ran)
            text, tokens = f"{text}\n\n{block}", tokens + self.parts.estimator.text(session.model, block)
        if tokens >= original:
            return f"{len(group)} older message(s) too short to summarize"
        return Checkpoint(
            id=secrets.token_hex(4), first_seq=group[0].seq, last_seq=group[-1].seq,
            summary=text, original_tokens=original, current_tokens=tokens,
            key_decisions=[d.description for d in context.goals.decisions if d.locked],
            files=sorted({f.path for m in group for f in m.files if not f.error}),
            next_steps=list(context.goals.next_steps), created=time.time(), of_user=of_user)

    def _summary_cost(self, model: str, group: list[MessageRecord], of_user: bool, original: int,
                      summarizer: Summarizer, budget: Budget) -> int:
        """The most a checkpoint of `group` (`original` tokens) can take in the prompt: its
        summary's room (never more than what it replaces) and its heading. A step is judged
        by what it frees beside that before the model is asked (a summary made, then thrown
        away as too small a step, is a wasted call that re-read the prompt)."""
        heading = checkpoint_heading("recent", group[0].seq, group[-1].seq, of_user) + "\n\n"
        summary = min(summarizer.room, summary_room(budget, original), original)
        # the room is the model's own tokens; the pass measures the summary by its estimate
        estimated = math.ceil(summary * (1 + self.parts.estimator.margin(model)))
        return estimated + self.parts.estimator.text(model, heading)

    def _transcript(self, view: View, group: list[MessageRecord], summaries: set[int],
                    summarizer: Summarizer) -> tuple[list[str], int]:
        """The group's transcript in chunks the summarizer's window takes, and the tokens
        the group costs in the prompt now: the context's estimate with and without it, the
        measure the pass judges its step by (merged turns and their template included)."""
        estimator = self.parts.estimator
        lines = [(transcript, estimator.text(summarizer.model, transcript))
                 for transcript in (outline_line(m, m.seq in summaries) for m in group)]
        session, context, active = view
        gone = {m.seq for m in group}
        without = msgspec.structs.replace(context, seqs=[s for s in context.seqs if s not in gone])
        original = estimator.context(*view) - estimator.context(
            session, without, [m for m in active if m.seq not in gone])
        return chunk_lines(lines, summarizer.budget), max(0, original)

    def _user_share(self, model: str, context: ActiveContext, active: list[MessageRecord],
                    budget: Budget, preserved: set[int], keep_recent: int,
                    force: bool = False) -> list[MessageRecord]:
        """The oldest user messages to summarize when the preserved ones pass half the
        budget (down to USER_SHARE_AFTER of it), or with `force` whenever there are any (at
        least one); the last and the pinned messages always stay."""
        cost = {m.seq: self.parts.estimator.message(model, prompt_content(m)) for m in active}
        recent = {m.seq for m in last(active, keep_recent)}
        total = sum(cost[s] for s in preserved if s in cost)
        base = budget.available + budget.pinned  # what the conversation and pins may take
        if total <= base / 2 and not force:
            return []
        out: list[MessageRecord] = []
        for m in active:
            if total <= base * USER_SHARE_AFTER and (out or not force):
                break
            if m.role == "user" and m.seq not in recent and m.seq not in context.pinned:
                out.append(m)
                total -= cost[m.seq]
        return out

    async def _age_beside(self, new: Checkpoint, checkpoints: list[Checkpoint], budget: Budget,
                          summarizer: Summarizer, instructions: str) -> list[Checkpoint]:
        """`checkpoints` aged, an age a step, until with `new` they take at most AGED_SHARE of
        the budget, or aging changes nothing (one rewrite of the prompt's start for all)."""
        for _ in AGES:
            aged = await self._age(checkpoints, budget, summarizer, instructions)
            if same_sizes(aged, checkpoints):
                break
            checkpoints = aged
            if not crowded(checkpoints, new, budget, AGED_SHARE):
                break
        return checkpoints

    async def _age(self, checkpoints: list[Checkpoint], budget: Budget, summarizer: Summarizer,
                   instructions: str) -> list[Checkpoint]:
        return await aging.age(checkpoints, budget, summarizer, instructions, self.summaries,
                               self._cost(summarizer.model))
