"""Events: what the daemon publishes on the event socket (XPUB -> SUB).

Two frames: the topic (see `subjects`), then the JSON body. Every body has
`type` (the subject), `seq` (numbered from 1 across the whole daemon: a gap
means the subscriber missed something and should re-read state with a
request), `time`, and `session_id` ("" for daemon-wide events). Clients skip
event types they do not know.
"""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from . import subjects
from .goals import Goals
from .structs import (
    Count,
    DaemonStatus,
    MessageInfo,
    RecalledPassage,
    SessionInfo,
    SnapshotInfo,
    Usage,
)


class Event(msgspec.Struct, tag_field="type", kw_only=True):
    """Fields every event carries."""

    seq: Count = 0
    time: float = 0.0
    session_id: str = ""


class DaemonStatusEvent(Event, tag=subjects.DAEMON_STATUS):
    """The daemon's status: sent to each new subscriber, and when the daemon stops."""

    status: DaemonStatus
    stopping: bool = False


class SessionCreated(Event, tag=subjects.SESSION_CREATED):
    """A session was created."""

    session: SessionInfo


class SessionUpdated(Event, tag=subjects.SESSION_UPDATED):
    """A session's settings, name or counts changed."""

    session: SessionInfo


class SessionDeleted(Event, tag=subjects.SESSION_DELETED):
    """A session was deleted."""


class QueryReceived(Event, tag=subjects.QUERY_RECEIVED):
    """A user turn was stored and its generation starts."""

    generation_id: str
    message: MessageInfo
    model: str


class GenerationRecalled(Event, tag=subjects.GENERATION_RECALLED):
    """Recall put passages of earlier messages into the turn's prompt (a marked block
    after the new message, oldest first): sent before the prompt goes out, when something
    was recalled or recall was cut. `tokens` is their estimate (the turn's exact count includes
    them); `by_meaning`, whether embeddings ranked them beside their words."""

    generation_id: str
    recalled: list[RecalledPassage]
    tokens: Count
    by_meaning: bool = False
    #: What recall found room for (estimated tokens) before any bound cut it; equal to
    #: `tokens` when nothing was cut.
    found_tokens: Count = 0
    #: Why the block holds less than recall found, in words ("" when nothing was cut):
    #: the reading bound (`recall_read_seconds`) never takes it below its best few passages.
    cut: str = ""
    #: Of `tokens`, those of memory's passages (from the user's other sessions).
    memory_tokens: Count = 0


class GenerationToken(Event, tag=subjects.GENERATION_TOKEN):
    """Answer text as it streams, batched (about every 30 ms). `index` counts batches from 0."""

    generation_id: str
    index: Count
    text: str


class GenerationThinking(Event, tag=subjects.GENERATION_THINKING):
    """Thinking text of a thinking model, batched like tokens."""

    generation_id: str
    index: Count
    text: str


class GenerationWaiting(Event, tag=subjects.GENERATION_WAITING):
    """The model server took the request but has sent nothing yet: said after 2 s, then
    every 5 s until the first token. `state` says what it is doing, as far as its list of
    loaded models tells: `loading` the model into memory (this may take minutes), the model
    is loaded and `processing` the prompt, or the server is `not_answering` that question
    either. A loaded model that sends nothing for `first_token_timeout` seconds ends the
    turn with `ollama_not_answering`."""

    generation_id: str
    model: str
    #: Seconds since the request went out.
    waited: float
    state: Literal["loading", "processing", "not_answering"]
    #: The same in words, for a status line.
    message: str


class ResponseGeneration(Event, tag=subjects.RESPONSE_GENERATION):
    """The answer is complete and stored. Terminal event of a generation."""

    generation_id: str
    message: MessageInfo
    #: The exact size of the prompt sent, as the model server counted it (Ollama's
    #: prompt_eval_count, an OpenAI server's usage.prompt_tokens; the answer's tokens are
    #: eval_count, not part of it). The daemon's estimate when the server did not say
    #: (`token_count_exact` false).
    token_count: Count
    #: Tokens in the answer.
    eval_count: Count
    window: Count
    #: What the next prompt holds before its new message: this prompt without its recall
    #: block, with this answer (SessionInfo.next_tokens).
    next_tokens: Count = 0
    #: True when token_count shows Ollama dropped part of the prompt anyway.
    truncated: bool = False
    #: The daemon's estimate of the prompt before it was sent (calibrated per model).
    prompt_estimate: Count = 0
    #: Durations in nanoseconds, as Ollama reports them (measured by the daemon for
    #: an OpenAI server).
    total_duration: Count = 0
    load_duration: Count = 0
    prompt_eval_duration: Count = 0
    eval_duration: Count = 0
    #: The model server that answered (its name in config.toml).
    host: str = ""
    #: False when the server did not count the prompt and token_count is an estimate.
    token_count_exact: bool = True
    #: Of token_count, the tokens the server's prompt cache served rather than read (null:
    #: it did not say): Ollama's prompt_eval_cached_count, llama.cpp's cache_n.
    cached_tokens: Count | None = None


class GenerationError(Event, tag=subjects.GENERATION_ERROR):
    """The generation failed or was cancelled. Terminal event of a generation.

    The session's active context is as it was before the turn; any partial
    answer is kept in history with status `interrupted` (its seq in `stored_seq`).
    """

    generation_id: str
    code: str
    message: str
    partial: str = ""
    stored_seq: Annotated[int, Meta(ge=-1)] = -1


class ContextUsage(Event, tag=subjects.CONTEXT_USAGE):
    """How full the session's context window is, after every change."""

    usage: Usage


class CompactionRequest(Event, tag=subjects.COMPACTION_REQUEST):
    """A compaction starts."""

    compaction_id: str
    #: The context before: the last exact count (or an estimate when there is none).
    tokens_before: Count
    #: Messages to summarize, and summarization calls planned.
    messages: Count
    requested_by: str = ""
    calls: Count = 1
    #: 0 for a manual compaction.
    level: Count = 0
    strategy: str = "summary"


class CompactionProgress(Event, tag=subjects.COMPACTION_PROGRESS):
    """A compaction's summaries start (`step` 0) or one summarization call is done
    (`step` of `steps`)."""

    compaction_id: str
    step: Count
    steps: Count
    detail: str = ""
    #: About how many seconds the rest should take, at the speeds the summarizing model
    #: showed on this machine (from the server's timings of its answers); None until it
    #: has answered once.
    expected_s: Annotated[float, Meta(ge=0, le=1e9)] | None = None


class CompactionResult(Event, tag=subjects.COMPACTION_RESULT):
    """How a compaction ended. Only `ok` changed the active context."""

    compaction_id: str
    status: Literal["ok", "skipped", "failed"]
    reason: str = ""
    tokens_before: Count = 0
    #: An estimate (the next turn's exact count replaces it).
    tokens_after: Count = 0
    tokens_freed: Count = 0
    level: Count = 0
    strategy: str = "summary"
    #: The log line, e.g. `── compacted: 82,400 → ~14,200 tokens (68,200 freed) ──`.
    marker: str = ""
    summarized: Count = 0
    kept: Count = 0
    summary_seq: Annotated[int, Meta(ge=-1)] = -1


class GoalUpdated(Event, tag=subjects.GOAL_UPDATED):
    """The session's goal record changed (markers in an answer, or an edit)."""

    goals: Goals


class SnapshotCreated(Event, tag=subjects.SNAPSHOT_CREATED):
    """A snapshot of the session's context state was saved."""

    snapshot: SnapshotInfo


class SnapshotRestored(Event, tag=subjects.SNAPSHOT_RESTORED):
    """The session's context state was put back to a snapshot."""

    snapshot: SnapshotInfo


class ContextWarning(Event, tag=subjects.CONTEXT_WARNING):
    """Something the user should know about the context: `reliability` (the score fell
    below 40 %) or `user_summary` (the user's own oldest messages passed half the budget
    and are now kept as a summary, shown as such)."""

    kind: str
    message: str


class ModelPullProgress(Event, tag=subjects.MODEL_PULL_PROGRESS):
    """How far a `models.pull` has come (Ollama's own steps; at most a few a second)."""

    pull_id: str
    model: str
    #: Ollama's words for the step, e.g. "pulling manifest", "pulling 6a0746a1ec1a".
    status: str
    completed: Count = 0
    total: Count = 0


class ModelPullResult(Event, tag=subjects.MODEL_PULL_RESULT):
    """How a `models.pull` ended: exactly one per accepted pull."""

    pull_id: str
    model: str
    status: Literal["ok", "failed"]
    #: For a failed pull: why, and what to do next.
    code: str = ""
    message: str = ""


AnyEvent = (
    DaemonStatusEvent | SessionCreated | SessionUpdated | SessionDeleted | QueryReceived
    | GenerationToken | GenerationThinking | GenerationWaiting | GenerationRecalled | ResponseGeneration | GenerationError | ContextUsage
    | CompactionRequest | CompactionProgress | CompactionResult | GoalUpdated | SnapshotCreated
    | SnapshotRestored | ContextWarning | ModelPullProgress | ModelPullResult
)
ALL: tuple[type[Event], ...] = AnyEvent.__args__
