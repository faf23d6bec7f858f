"""Records that requests, replies and events carry: sessions, messages, usage, status."""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .counts import Count, Seq
from .images import ImageRef
from .limits import Options as Options  # re-exported
from .limits import OptionValue as OptionValue
from .memory import MemoryMode, MemoryRef
from .servers import BackendStatus as BackendStatus  # re-exported
from .servers import ModelInfo as ModelInfo
from .servers import OllamaStatus as OllamaStatus
from .status import DaemonStatus as DaemonStatus  # re-exported
from .status import ModelSpeed as ModelSpeed
from .status import ModelSummaries as ModelSummaries
from .tools import ToolCall, ToolResult, ToolSpec

Role = Literal["system", "user", "assistant", "tool"]
#: message: said by the user or the model. summary: written by a compaction to stand
#: for the messages before it.
MessageKind = Literal["message", "summary"]
#: complete: a whole message. interrupted: an answer cut short (cancel, stream
#: cut, model error); it stays in history but never enters the active context.
MessageStatus = Literal["complete", "interrupted"]


class SessionInfo(msgspec.Struct, kw_only=True):
    """A chat session as clients see it."""

    id: str
    name: str
    model: str
    system: str = ""
    options: Options = {}
    num_ctx: Count
    #: num_ctx capped by the model's context_length (0 until the model is asked).
    window: Count = 0
    created: float
    updated: float
    message_count: Count = 0
    #: prompt_eval_count of the last completed turn: the exact size of the last prompt sent
    #: (without its answer). After anything that changed the prompt since — a compaction,
    #: an undo, a new system prompt, window, goal or pin — an estimate of the prompt as it
    #: now stands, until the next turn (then token_count_exact is false).
    token_count: Count = 0
    token_count_exact: bool = True
    #: What the next prompt holds before its new message, as far as it is known: after a
    #: turn, the prompt's exact count less its recall block plus the answer just written
    #: (the gauge, `sessions` and `/usage` show this); otherwise token_count.
    next_tokens: Count = 0
    #: True while a generation or compaction runs or waits for this session.
    busy: bool = False
    #: Compactions so far.
    compactions: Count = 0
    #: The model that writes summaries ("" = the daemon's compaction_model, else `model`).
    compaction_model: str = ""
    #: The reliability score, 0..1 (model size, 15 % less per compaction, floor 30 %).
    reliability: float = 1.0
    #: Automatic compaction for this session (null: the daemon's setting), and its
    #: thresholds ([] = the daemon's).
    auto_compaction: bool | None = None
    thresholds: list[float] = []
    #: Recall for this session (null: the daemon's setting), and the most tokens it may add
    #: to a prompt (null: the daemon's recall_budget).
    recall: bool | None = None
    recall_budget: int | None = None
    #: Memory across sessions (null: the daemon's `memory`); whether memory may recall this
    #: session elsewhere (false: forgotten as a whole), and the messages it forgot.
    memory: MemoryMode | None = None
    remembered: bool = True
    forgotten: list[Seq] = []
    #: The share of the prompt tokens the server's cache served, over the turns whose
    #: server said (null: none did): a turn costs only what the cache did not hold.
    cache_hit_rate: float | None = None
    #: A branch: the id of the session it was taken from ("" if none; that session may
    #: have been deleted since), and the seq of the last message of its history it shares.
    branched_from: str = ""
    branched_at: int = -1
    #: The tools its turns offer the model when a `send` names none (`session.set_tools`).
    tools: list[ToolSpec] = []


class AttachedFile(msgspec.Struct, kw_only=True):
    """An @file reference of a user message, as expanded into the prompt."""

    #: As written in the message.
    path: str
    #: full, summary, listing, lines A-B, or the element's name.
    mode: str
    tokens: Count = 0
    #: Why the file was not read ("" when it was): the note the prompt carries instead.
    error: str = ""
    sha256: str = ""
    size: Count = 0
    mtime: float = 0.0


class FileUse(msgspec.Struct, kw_only=True):
    """A file referenced in a session: its latest expansion and how often it was used."""

    path: str
    mode: str
    tokens: Count
    sha256: str
    mtime: float
    uses: Count
    #: Sequence numbers of the first and the latest message that referenced it.
    first_seq: Seq
    last_seq: Seq


class MessageInfo(msgspec.Struct, kw_only=True):
    """One message of a session's history."""

    seq: Seq
    role: Role
    content: str
    thinking: str = ""
    created: float
    status: MessageStatus = "complete"
    #: Why an interrupted message stopped (an error code), else "".
    error: str = ""
    #: For an assistant message: the model that wrote it.
    model: str = ""
    #: Tokens: eval_count for an assistant message, else 0.
    eval_count: Count = 0
    kind: MessageKind = "message"
    #: The @file references of a user message, expanded after its text in the prompt.
    files: list[AttachedFile] = []
    #: For an answer: the seq of the user message it answers (-1: none). A queued turn
    #: stores its question at once, so answers can follow later questions in history.
    reply_to: Annotated[int, Meta(ge=-1)] = -1
    #: For a regenerated answer: the seq of the answer it replaced (-1: none).
    alternative_of: Annotated[int, Meta(ge=-1)] = -1
    #: For an answer: the messages recall brought into the prompt it answered, and those
    #: memory brought from other sessions.
    recalled: list[Seq] = []
    remembered: list[MemoryRef] = []
    #: For an answer: why its prompt's recall held less than recall found, in words ("": it
    #: held all of it).
    recall_cut: str = ""
    #: For an answer: the tools it calls (its generation ended to have them run).
    tool_calls: list[ToolCall] = []
    #: For a `tool` message: what each call of the answer before it returned (`content`
    #: is them as one text).
    tool_results: list[ToolResult] = []
    #: For an answer: why the model stopped, as Ollama says it ("stop", "length", ...).
    done_reason: str = ""
    #: For an answer to a turn that asked for a `format`: what is wrong with its shape ("": valid).
    format_error: str = ""
    images: list[ImageRef] = []


class RecalledPassage(msgspec.Struct, kw_only=True):
    """A passage of an earlier message that recall put into a prompt (a whole message is
    part 0 of 1)."""

    seq: Seq
    part: Count = 0
    parts: Count = 1
    role: Role
    #: When the message was said (Unix seconds), as the block shows it to the model: when it
    #: was stored, or the time the stamps a front-end wrote into its conversation give it.
    created: float
    text: str
    #: From another session's history (memory): its id and name ("": this session's).
    session_id: str = ""
    session_name: str = ""


class CompactionMark(msgspec.Struct, kw_only=True):
    """Where a compaction happened in the full history, and its log line."""

    #: The seq of the first message stored after it (its own summary, if it wrote one):
    #: the line goes just before that message, or after the last one when none follows.
    at: Seq
    #: E.g. `── compacted: 82,400 → ~14,200 tokens (68,200 freed) ──`, as the compaction's
    #: `compaction.result` event said it.
    marker: str
    level: Count = 0
    time: float = 0.0


class SearchHit(msgspec.Struct, kw_only=True):
    """A message that matched a search."""

    session_id: str
    session_name: str
    message: MessageInfo


class Segments(msgspec.Struct, kw_only=True):
    """Tokens of the active context by kind (estimates, scaled to an exact total when known)."""

    system: Count = 0
    #: Goals, locked decisions and pinned messages.
    pinned: Count = 0
    #: Expanded @file references.
    files: Count = 0
    #: Summaries and checkpoints written by compactions.
    summaries: Count = 0
    #: The conversation's own messages.
    recent: Count = 0
    #: Passages of earlier messages that recall put into the last prompt (part of its count).
    recalled: Count = 0


class CheckpointInfo(msgspec.Struct, kw_only=True):
    """A summary of older history made by automatic compaction; it ages as more follow."""

    id: str
    #: recent, old, ancient or merged: each step re-compressed smaller.
    age: Literal["recent", "old", "ancient", "merged"]
    #: The history sequence numbers it covers.
    first_seq: Seq
    last_seq: Seq
    summary: str
    original_tokens: Count
    current_tokens: Count
    compressions: Count = 1
    key_decisions: list[str] = []
    files: list[str] = []
    next_steps: list[str] = []
    created: float = 0.0
    #: The summary holds the user's own earlier messages too (they passed half the
    #: conversation's budget).
    of_user: bool = False


class SnapshotInfo(msgspec.Struct, kw_only=True):
    """A saved state of a session's context, restorable (history is never touched)."""

    id: str
    created: float
    #: "manual", or why it was taken automatically (e.g. "before compaction level 3").
    reason: str
    messages: Count
    checkpoints: Count
    token_count: Count
    compactions: Count
    #: Already put back by an `undo` (the next undo goes further back).
    undone: bool = False


class Usage(msgspec.Struct, kw_only=True):
    """How full a session's context window is."""

    tokens: Count
    window: Count
    #: tokens / window, 0.0 .. 1.0 (may pass 1.0 only for an estimate).
    fill: float
    #: True when `tokens` is Ollama's prompt_eval_count, False for an estimate (shown with ~).
    exact: bool
    #: What the next prompt holds before its new message (SessionInfo.next_tokens).
    next_tokens: Count = 0
    segments: Segments = msgspec.field(default_factory=Segments)
    #: Messages in the active context.
    messages: Count = 0
    #: The conversation's budget: window − reply room − system − goals/pins − checkpoints,
    #: and the conversation's tokens as a share of it (what automatic compaction watches).
    budget: Count = 0
    budget_fill: float = 0.0
    #: The reliability score, 0..1 (model size × 15 % less per compaction, floor 30 %).
    reliability: float = 1.0
    #: Of the last prompt, the tokens the server's prompt cache served (null: it did not
    #: say); over the session's turns whose server said, the share its cache served.
    cached_tokens: Count | None = None
    cache_hit_rate: float | None = None
