"""The message lists sent to the model: chat turns and summarization calls."""

from collections.abc import Hashable
from collections.abc import Set as AbstractSet
from typing import Any, cast

import msgspec

from ctxkeep.daemon.context import goals as goal_markers
from ctxkeep.daemon.context.content import prompt_content, short_results
from ctxkeep.daemon.context.fold import PrefixFold
from ctxkeep.daemon.store.context_records import ActiveContext, Checkpoint
from ctxkeep.daemon.store.records import MessageRecord, SessionRecord

Message = dict[str, Any]


_OF_USER = ", the user's own messages among them"


def checkpoint_block(checkpoints: list[Checkpoint]) -> str:
    """The checkpoints in the order they were made (oldest first, but for a user's message
    kept verbatim longer than its answer: its checkpoint comes later, its heading says which
    messages), as they open the prompt: a new one never moves those the server holds."""
    if not checkpoints:
        return ""
    parts = ["Summary of the earlier conversation, oldest part first:"]
    parts += [f"{checkpoint_heading(c.age, c.first_seq, c.last_seq, c.of_user)}\n{c.summary}"
              for c in checkpoints]
    return "\n\n".join(parts)


def checkpoint_heading(age: str, first_seq: int, last_seq: int, of_user: bool) -> str:
    """The line that opens one checkpoint in the prompt."""
    return f"[{age} checkpoint, messages {first_seq}-{last_seq}{_OF_USER if of_user else ''}]"


def system_parts(session: SessionRecord, context: ActiveContext) -> list[str]:
    """What the system message is made of: the system prompt, the goal block, the
    checkpoints (those that are not empty)."""
    parts = [session.system, goal_markers.render(context.goals), checkpoint_block(context.checkpoints)]
    return [p for p in parts if p]


def system_text(session: SessionRecord, context: ActiveContext) -> str:
    """The system message: its parts, a blank line between them."""
    return "\n\n".join(system_parts(session, context))


def wire(m: MessageRecord, short: bool = False, vision: bool = False) -> list[Message]:
    """A stored message as the chat API takes it: a `tool` message as one message per
    result (`short`: level 1's head and tail of each), an answer with its tool calls, a
    message with the images the model sees (`vision`, and not `short`) by their hashes
    (`send_images` puts their bytes in), else with their notes in its text."""
    if m.tool_results:
        return [{"role": "tool", "content": brief if short else r.content, "tool_name": r.tool_name}
                for r, brief in zip(m.tool_results, short_results(m))]
    seen = bool(m.images) and vision and not short
    out: Message = {"role": m.role, "content": prompt_content(m, short, seen)}
    if m.tool_calls:
        out["tool_calls"] = msgspec.to_builtins(m.tool_calls)
    if seen:
        out["images"] = [i.hash for i in m.images]
    return [out]


def mergeable(m: Message) -> bool:
    """Whether a message may merge with a neighbour of its role (a tool result, or an
    answer that calls tools, stands alone: templates pair calls and results; a message
    with images keeps them to itself)."""
    return m["role"] != "tool" and "tool_calls" not in m and "images" not in m


def _messages(session: SessionRecord, context: ActiveContext, active: list[MessageRecord]) -> list[Message]:
    system = system_text(session, context)
    out = [{"role": "system", "content": system}] if system else []
    summarized = set(context.file_summaries)
    return out + [w for m in active for w in wire(m, m.seq in summarized, session.vision)]


def _merged(out: list[Message], m: Message) -> None:
    """Append `m`, merged into the last message when both have its role and may merge."""
    if out and out[-1]["role"] == m["role"] and mergeable(out[-1]) and mergeable(m):
        out[-1] = {"role": m["role"], "content": f"{out[-1]['content']}\n\n{m['content']}"}
    else:
        out.append(dict(m))


def normalize(messages: list[Message]) -> list[Message]:
    """A list every chat template accepts: system messages first (merged into one),
    then no two consecutive messages of the same role (merged, blank line between) but
    for tool results and the answers that call them."""
    system = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    out: list[Message] = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    for m in messages:
        if m["role"] != "system":
            _merged(out, m)
    return out


def context_messages(session: SessionRecord, context: ActiveContext,
                     active: list[MessageRecord]) -> list[Message]:
    """The system message and the active context, as the model will see them."""
    return normalize(_messages(session, context, active))


def build_messages(session: SessionRecord, context: ActiveContext, active: list[MessageRecord],
                   user: MessageRecord) -> list[Message]:
    """A turn's prompt: system message (prompt, goals, checkpoints), active context, the new
    user message."""
    return normalize(_messages(session, context, active) + wire(user, vision=session.vision))


#: `normalize` part-way through the active messages: their own system texts, and the
#: other messages with consecutive ones of one role merged.
Normalized = tuple[list[str], list[Message]]


def _normalize_step(state: Normalized, m: MessageRecord, key: Hashable) -> Normalized:
    """One message's step; the key is (seqs in level 1's short form, whether the model sees
    images)."""
    system, out = state
    summarized, vision = cast(tuple[AbstractSet[int], bool], key)
    for w in wire(m, m.seq in summarized, vision):
        if w["role"] != "system":
            _merged(out, w)
        elif w["content"]:
            system.append(w["content"])
    return state


class TurnPrompts:
    """`build_messages`, with the active context folded per session (context/fold.py): a
    turn whose context only grew builds only its new messages."""

    def __init__(self) -> None:
        self.folded: PrefixFold[Normalized] = PrefixFold(
            lambda: ([], []), _normalize_step, lambda state: (list(state[0]), list(state[1])))

    def build(self, session: SessionRecord, context: ActiveContext, active: list[MessageRecord],
              user: MessageRecord, recalled: str = "") -> list[Message]:
        """Equal to `build_messages(session, context, active, user)`; a `recalled` block
        (retrieval/select.py) follows the new message: the prompt up to the end of the
        message is what the next turn sends again, so the server's cache of it stays good
        (a block before the message made the next turn read the message again)."""
        system, out = self.folded.fold(session.id, (frozenset(context.file_summaries), session.vision), active)
        system, out = list(system), list(out)  # the kept state stays as it is
        _normalize_step((system, out), user, (frozenset(), session.vision))  # as build_messages shows it
        if recalled:  # after the message as shown, its files and notes included
            out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{recalled}"}
        texts = [t for t in (system_text(session, context), *system) if t]
        return ([{"role": "system", "content": "\n\n".join(texts)}] if texts else []) + out
