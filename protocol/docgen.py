"""Generates `docs/protocol.md` and `docs/protocol.schema.json` from the Structs.

    python -m ctxkeep.protocol.docgen docs/

A test regenerates both and fails when the committed files differ.
"""

import inspect
import json
import sys
from pathlib import Path

import msgspec

from . import events, replies, requests, subjects
from .errors import ErrorCode
from .models import (
    AttachedFile, CheckpointInfo, DaemonStatus, Decision, FileUse, GoalCheckpoint, Goals, GoalsInput,
    MessageInfo, OllamaStatus, Segments, SessionInfo, SnapshotInfo, Usage,
)
from .version import PROTOCOL_VERSION

_T = 1795000000.0
_SESSION = SessionInfo(id="3f2a9c4b1d7e", name="chat-1", model="llama3.2", num_ctx=8192,
                       window=8192, created=_T, updated=_T + 60, message_count=2, token_count=412)
_BUSY = msgspec.structs.replace(_SESSION, message_count=4, token_count=431, busy=True)
_AFTER = msgspec.structs.replace(_BUSY, busy=False)
_USER = MessageInfo(seq=2, role="user", content="And in one sentence?", created=_T + 61)
_ANSWER = MessageInfo(seq=3, role="assistant", content="Sunlight scatters off air molecules.",
                      created=_T + 62, model="llama3.2", eval_count=9, reply_to=2)
_STATUS = DaemonStatus(
    version="0.1.0", protocol=PROTOCOL_VERSION, pid=4242, started=_T, uptime=3600.0, sessions=1,
    generations_running=0, control_endpoint="ipc:///run/user/1000/ctxkeep/ctl",
    events_endpoint="ipc:///run/user/1000/ctxkeep/events",
    store_path="/home/me/.local/share/ctxkeep/store", last_seq=17,
    ollama=OllamaStatus(host="http://127.0.0.1:11434", reachable=True, version="0.12.6"))
_SID = _SESSION.id
#: The same session just created: no messages, its count an estimate of the empty prompt.
_NEW = msgspec.structs.replace(_SESSION, updated=_T, message_count=0, token_count=6,
                               token_count_exact=False)
_GEN = "b81c07d2e4f9"
_CMP = "5e0d4f1a9c22"
_GOALS = Goals(goal="Implement user authentication",
               checkpoints=[GoalCheckpoint(description="Design the login flow", status="completed")],
               decisions=[Decision(description="Use JWT for authentication", locked=True)],
               artifacts=["Created src/auth/login.ts"], next_steps=["Add token refresh"], updated=_T)
_SNAPSHOT = SnapshotInfo(id="18a3f0c2d4e5b600", created=_T,
                         reason="before compaction (automatic: threshold crossed)",
                         messages=14, checkpoints=1, token_count=5210, compactions=2)
_USAGE = Usage(tokens=6120, window=8192, fill=6120 / 8192, exact=False, messages=40,
               segments=Segments(system=12, summaries=0, recent=6108))

_SYSTEM = msgspec.structs.replace(_SESSION, system="Answer briefly.", token_count=417,
                                  token_count_exact=False)

#: One worked exchange per request type: (request, reply, events that follow).
EXAMPLES: dict[type, tuple[requests.Request, replies.Reply, list[events.Event]]] = {
    requests.Hello: (requests.Hello(id="1", client="my-script"),
                     replies.HelloReply(id="1", daemon="0.1.0", protocol=PROTOCOL_VERSION, pid=4242,
                                        subjects=[subjects.DAEMON_STATUS, "..."]), []),
    requests.Ping: (requests.Ping(id="2"), replies.Pong(id="2", time=_T), []),
    requests.Status: (requests.Status(id="3"), replies.StatusReply(id="3", status=_STATUS), []),
    requests.SessionCreate: (
        requests.SessionCreate(id="4", model="llama3.2"),
        replies.SessionReply(id="4", session=_NEW),
        [events.SessionCreated(seq=18, time=_T, session_id=_SID, session=_NEW),
         events.ContextUsage(seq=19, time=_T, session_id=_SID, usage=Usage(
             tokens=6, window=8192, fill=6 / 8192, exact=False, segments=Segments(system=6)))]),
    requests.SessionList: (requests.SessionList(id="5"),
                           replies.SessionsReply(id="5", sessions=[_SESSION]), []),
    requests.SessionGet: (requests.SessionGet(id="6", session="chat-1"),
                          replies.SessionReply(id="6", session=_SESSION), []),
    requests.SessionRename: (
        requests.SessionRename(id="7", session=_SID, name="sky"),
        replies.SessionReply(id="7", session=msgspec.structs.replace(_SESSION, name="sky")),
        [events.SessionUpdated(seq=19, time=_T, session_id=_SID,
                               session=msgspec.structs.replace(_SESSION, name="sky"))]),
    requests.SessionDelete: (requests.SessionDelete(id="8", session="sky"),
                             replies.Deleted(id="8", session_id=_SID),
                             [events.SessionDeleted(seq=40, time=_T, session_id=_SID)]),
    requests.History: (
        requests.History(id="9", session=_SID, start=2, limit=2),
        replies.HistoryReply(id="9", session_id=_SID, messages=[_USER, _ANSWER], total=4, next=None),
        []),
    requests.Send: (
        requests.Send(id="10", session=_SID, text="And in one sentence?", cwd="/home/me/project"),
        replies.Accepted(id="10", session_id=_SID, generation_id=_GEN, ahead=0),
        [events.QueryReceived(seq=20, time=_T, session_id=_SID, generation_id=_GEN,
                              message=_USER, model="llama3.2"),
         events.GenerationToken(seq=21, time=_T, session_id=_SID, generation_id=_GEN, index=0,
                                text="Sunlight"),
         events.GenerationToken(seq=22, time=_T, session_id=_SID, generation_id=_GEN, index=1,
                                text=" scatters off air molecules."),
         events.ResponseGeneration(seq=23, time=_T, session_id=_SID, generation_id=_GEN,
                                   message=_ANSWER, token_count=431, eval_count=9, window=8192,
                                   total_duration=412000000, load_duration=1200000,
                                   prompt_eval_duration=98000000, eval_duration=301000000),
         events.SessionUpdated(seq=24, time=_T, session_id=_SID, session=_BUSY),
         events.ContextUsage(seq=25, time=_T, session_id=_SID,
                             usage=Usage(tokens=431, window=8192, fill=431 / 8192, exact=True,
                                         messages=4, segments=Segments(system=6, recent=425))),
         events.SessionUpdated(seq=26, time=_T, session_id=_SID, session=_AFTER)]),
    requests.Cancel: (
        requests.Cancel(id="11", session=_SID),
        replies.Cancelled(id="11", session_id=_SID, cancelled=True, generation_id=_GEN),
        [events.GenerationError(seq=30, time=_T, session_id=_SID, generation_id=_GEN,
                                code=ErrorCode.CANCELLED.value, message="cancelled by a client",
                                partial="Sunlight scat", stored_seq=5),
         events.SessionUpdated(seq=31, time=_T, session_id=_SID, session=_SESSION)]),
    requests.SetSystem: (
        requests.SetSystem(id="12", session=_SID, system="Answer briefly."),
        replies.SessionReply(id="12", session=_SYSTEM),
        [events.SessionUpdated(seq=32, time=_T, session_id=_SID, session=_SYSTEM),
         events.ContextUsage(seq=33, time=_T, session_id=_SID, usage=Usage(
             tokens=417, window=8192, fill=417 / 8192, exact=False, messages=2,
             segments=Segments(system=10, recent=407)))]),
    requests.SetModel: (
        requests.SetModel(id="13", session=_SID, model="qwen2.5:7b", num_ctx=16384,
                          options={"temperature": 0.3}),
        replies.SessionReply(id="13", session=msgspec.structs.replace(
            _SESSION, model="qwen2.5:7b", num_ctx=16384, window=16384,
            options={"temperature": 0.3})), []),
    requests.Files: (
        requests.Files(id="16", session=_SID),
        replies.FilesReply(id="16", session_id=_SID, files=[FileUse(
            path="src/app.py", mode="summary", tokens=412, sha256="9f2c" + "0" * 60,
            mtime=_T - 3600, uses=2, first_seq=4, last_seq=12)]), []),
    requests.Pin: (requests.Pin(id="17", session=_SID, seq=3),
                   replies.SessionReply(id="17", session=_SESSION),
                   [events.SessionUpdated(seq=60, time=_T, session_id=_SID, session=_SESSION),
                    events.ContextUsage(seq=61, time=_T, session_id=_SID, usage=_USAGE)]),
    requests.GoalsGet: (requests.GoalsGet(id="18", session=_SID),
                        replies.GoalsReply(id="18", session_id=_SID, goals=_GOALS), []),
    requests.GoalsSet: (requests.GoalsSet(id="19", session=_SID,
                                          goals=msgspec.convert(msgspec.to_builtins(_GOALS), GoalsInput)),
                        replies.GoalsReply(id="19", session_id=_SID, goals=_GOALS),
                        [events.GoalUpdated(seq=62, time=_T, session_id=_SID, goals=_GOALS),
                         events.SessionUpdated(seq=63, time=_T, session_id=_SID, session=_SESSION),
                         events.ContextUsage(seq=64, time=_T, session_id=_SID, usage=_USAGE)]),
    requests.SnapshotCreate: (requests.SnapshotCreate(id="20", session=_SID),
                              replies.SnapshotReply(id="20", session_id=_SID, snapshot=_SNAPSHOT),
                              [events.SnapshotCreated(seq=65, time=_T, session_id=_SID,
                                                      snapshot=_SNAPSHOT)]),
    requests.SnapshotList: (requests.SnapshotList(id="21", session=_SID),
                            replies.SnapshotsReply(id="21", session_id=_SID, snapshots=[_SNAPSHOT]), []),
    requests.SnapshotRestore: (requests.SnapshotRestore(id="22", session=_SID),
                               replies.SnapshotReply(id="22", session_id=_SID, snapshot=_SNAPSHOT),
                               [events.SnapshotRestored(seq=66, time=_T, session_id=_SID,
                                                        snapshot=_SNAPSHOT),
                                events.SessionUpdated(seq=67, time=_T, session_id=_SID, session=_SESSION),
                                events.ContextUsage(seq=68, time=_T, session_id=_SID, usage=_USAGE)]),
    requests.SnapshotDelete: (requests.SnapshotDelete(id="23", session=_SID, snapshot_id=_SNAPSHOT.id),
                              replies.SnapshotReply(id="23", session_id=_SID, snapshot=_SNAPSHOT), []),
    requests.Usage: (requests.Usage(id="14", session=_SID),
                     replies.UsageReply(id="14", session_id=_SID, usage=_USAGE), []),
    requests.Compact: (
        requests.Compact(id="15", session=_SID, requested_by="cli"),
        replies.CompactionAccepted(id="15", session_id=_SID, compaction_id=_CMP),
        [events.CompactionRequest(seq=50, time=_T, session_id=_SID, compaction_id=_CMP,
                                  requested_by="cli", tokens_before=6120, messages=32),
         events.CompactionProgress(seq=51, time=_T, session_id=_SID, compaction_id=_CMP, step=1,
                                   steps=1, detail="summarized part 1 of 1"),
         events.CompactionResult(seq=52, time=_T, session_id=_SID, compaction_id=_CMP, status="ok",
                                 tokens_before=6120, tokens_after=1480, tokens_freed=4640,
                                 marker="── compacted: 6,120 → ~1,480 tokens (4,640 freed) ──",
                                 summarized=32, kept=8, summary_seq=41),
         events.SessionUpdated(seq=53, time=_T, session_id=_SID, session=msgspec.structs.replace(
             _SESSION, token_count=1480, token_count_exact=False, compactions=1, busy=True)),
         events.ContextUsage(seq=54, time=_T, session_id=_SID, usage=Usage(
             tokens=1480, window=8192, fill=1480 / 8192, exact=False, messages=9,
             segments=Segments(system=12, summaries=310, recent=1158))),
         events.SessionUpdated(seq=55, time=_T, session_id=_SID, session=msgspec.structs.replace(
             _SESSION, token_count=1480, token_count_exact=False, compactions=1, busy=False))]),
}


_SESSION_ERRORS = [("unknown_session", "no session has that id, name or id prefix"),
                   ("ambiguous_session", "an id prefix of 4+ characters matches several sessions")]
_STORE = [("storage_error", "the store could not write (disk full?); nothing was changed")]

#: The error codes each request can answer, beyond the frame errors every request can get
#: (`bad_frame`, `frame_too_large`, `bad_json`, `unknown_type`, `invalid_request`,
#: `unsupported_version`, `internal`).
ERRORS: dict[type, list[tuple[str, str]]] = {
    requests.Hello: [], requests.Ping: [], requests.Status: [],
    requests.SessionCreate: [("invalid_argument", "the name is taken"), *_STORE],
    requests.SessionList: [],
    requests.SessionGet: _SESSION_ERRORS,
    requests.SessionRename: [*_SESSION_ERRORS, ("invalid_argument", "the name is taken"), *_STORE],
    requests.SessionDelete: [*_SESSION_ERRORS, ("busy", "the session has a job queued or running: "
                                                "cancel it, or wait for its terminal event"), *_STORE],
    requests.History: _SESSION_ERRORS,
    requests.Send: [*_SESSION_ERRORS, ("invalid_argument", "the text is empty"),
                    ("shutting_down", "the daemon is stopping"), *_STORE],
    requests.Cancel: _SESSION_ERRORS,
    requests.SetSystem: [*_SESSION_ERRORS, *_STORE],
    requests.SetModel: [*_SESSION_ERRORS, ("invalid_argument", "thresholds are not three rising "
                                                               "fractions"), *_STORE],
    requests.Files: _SESSION_ERRORS,
    requests.Pin: [*_SESSION_ERRORS, ("invalid_argument", "the session has no such message"), *_STORE],
    requests.GoalsGet: _SESSION_ERRORS,
    requests.GoalsSet: [*_SESSION_ERRORS, *_STORE],
    requests.SnapshotCreate: [*_SESSION_ERRORS, *_STORE],
    requests.SnapshotList: _SESSION_ERRORS,
    requests.SnapshotRestore: [*_SESSION_ERRORS, ("busy", "the session has a job queued or running"),
                               ("invalid_argument", "no such snapshot, or (undo) no compaction "
                                                    "left to undo"), *_STORE],
    requests.SnapshotDelete: [*_SESSION_ERRORS, ("invalid_argument", "no such snapshot"), *_STORE],
    requests.Usage: _SESSION_ERRORS,
    requests.Compact: [*_SESSION_ERRORS, ("busy", "a compaction of the session is already queued "
                                                  "or running (other jobs do not block it: it queues)"),
                       ("shutting_down", "the daemon is stopping"),
                       ("ollama_unreachable, model_not_found, ollama_error",
                        "`dry_run` only: the compaction model's window could not be asked")],
}

GUARANTEES = """
## Jobs: accepted, queued, busy, and how every job ends

`send` and `compact` start *jobs*. The reply (`accepted`, `compaction.accepted`) comes at
once; the work is reported on the event socket.

- **Accepted means stored.** When `accepted` leaves the daemon, the question is committed
  and synced to disk, whether it runs at once or waits (`ahead` > 0: jobs of the session
  before it). A session runs its jobs one at a time, in order; sessions run at once.
- **Every accepted job ends with exactly one terminal event**, whatever happens: a
  generation with `response.generation` or `generation.error`, a compaction with
  `compaction.result`. This holds for a job cancelled while queued (its terminal event
  comes at once, its body never runs), cancelled while running, failing with any error,
  or cut by the daemon stopping (`shutting_down`). If the daemon is killed, the next start
  marks every question left without an answer with an empty answer of status
  `interrupted` and error `daemon_restarted`.
- **Every question gets an answer record.** An answer (complete or interrupted) names its
  question in `reply_to`. A queued question is stored before earlier questions are
  answered, so history may read question, question, answer, answer; the active context
  (what the model sees) always pairs them.
- **`busy` follows the queue.** A session is busy while it has a job queued or running.
  `session.updated` is published with `busy: true` when its first job is accepted and
  with `busy: false` after the terminal event (and any automatic compaction) of its last
  job. `session.delete` and `snapshot.restore` answer `busy` meanwhile; `send` and
  `compact` queue instead.
- **Every change to what the model would see is announced**: `session.updated` and
  `context.usage` after a turn, a compaction, an undo or restore, `session.set_system`,
  `session.set_model`, `goals.set` and `pin`. After anything but a turn, `usage.exact` is
  `false` and `usage.tokens` is a fresh estimate of the prompt as it now stands, until the
  next turn's exact count.
- **Compaction is the daemon's**: a client asks for one with `compact`; only the daemon
  publishes `compaction.request`, `compaction.progress` and `compaction.result`. Every
  `compaction.request` is followed by exactly one `compaction.result`, a manual one even
  when there is nothing to do (`skipped`). Automatic compaction runs inside a turn's job
  (before its prompt when the prompt would not fit, after its answer when the budget
  crossed a threshold), one `compaction.request`/`compaction.result` pair per level.
  A result `ok` always made the context smaller (`tokens_after` < `tokens_before`); a step
  that would not shrink it is `failed` and changed nothing.
- **No prompt is sent that does not fit**: with its estimate raised by the estimator's
  measured error, plus room for the answer (`num_predict` is set to the room left), or
  the turn ends with `context_overflow` — decided before anything is compacted when no
  compaction could make it fit.

## Naming a session

Wherever a request has `session`, it may be the session's id, its name, or a prefix of
its id of at least 4 characters that matches exactly one session (else
`ambiguous_session`).

## Frame sizes

A frame up to `max_frame_bytes` (configurable, default 1 MiB) is read and answered. A
frame above it, up to 8 × `max_frame_bytes`, is answered with `frame_too_large` and
otherwise ignored. A frame above 8 × `max_frame_bytes` is dropped by ZeroMQ itself, which
also closes that client's connection: no reply comes, and the client must reconnect.
JSON nested deeper than 64 arrays or objects is answered with `bad_json`. Replies
are kept under the cap too: a `history` page is cut short, with `next` pointing on.

## Compaction markers

A client shows a compaction where it happened with the `marker` of its `compaction.result`:

- manual: `── compacted: 6,120 → ~1,480 tokens (4,640 freed) ──`
- automatic, with the level in words: `── compacted (files as summaries): …`,
  `── compacted (older messages set aside): …`, `── compacted (checkpoint): …`

`~` marks the estimate: the next turn's exact count replaces it.

## What the fields mean

| field | meaning |
|---|---|
| `response.generation.token_count`, `session.token_count` | Ollama's `prompt_eval_count`: the exact size of the last *prompt* sent, without the answer (the answer's tokens are `eval_count`) |
| `session.token_count_exact`, `usage.exact` | false when the prompt changed since that count: `token_count`/`tokens` is then the daemon's estimate of the prompt as it now stands |
| `response.generation.prompt_estimate` | the daemon's estimate of that prompt, made before it was sent (calibrated per model from earlier counts) |
| `response.generation.truncated` | true when the count shows Ollama cut the prompt anyway (at or over the window, or far below the estimate): the answer may have missed the oldest messages |
| `usage.budget`, `usage.budget_fill` | the conversation's budget — window − reply room − system − goals/pins − checkpoints — and its messages' tokens over it: what automatic compaction watches (thresholds apply to it) |
| `compaction.*.level`, `strategy` | 0 / `summary`: a manual compaction; 1 / `file_compress`: @file references shown as summaries; 2 / `message_prune`: low-relevance messages left the active context; 3 / `checkpoint`: older messages summarized into a checkpoint, older checkpoints re-compressed |
| `AttachedFile.mode` | `full` (the file as it is), `summary` (its outline), `lines` (a range), `element` (one function or class), `listing` (a folder's entries) |
| `context.warning.kind` | `reliability` (the score fell below 40 % after compactions), `user_summary` (the user's own oldest messages passed half the budget and are now kept as a summary, shown as such) |
| `ollama.checked`, `ollama.reachable` | `checked` is false until the first check or model call; after that `reachable` says whether the last one got an answer |
"""


def _type_name(t: msgspec.inspect.Type) -> str:
    """A short readable name for a field type."""
    if isinstance(t, msgspec.inspect.UnionType):
        return " | ".join(_type_name(x) for x in t.types)
    if isinstance(t, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType)):
        return f"list[{_type_name(t.item_type)}]"
    if isinstance(t, msgspec.inspect.DictType):
        return f"object of {_type_name(t.value_type)}"
    if isinstance(t, msgspec.inspect.StructType):
        return t.cls.__name__
    if isinstance(t, msgspec.inspect.LiteralType):
        return " | ".join(json.dumps(v) for v in t.values)
    names = {"StrType": "string", "IntType": "integer", "FloatType": "number",
             "BoolType": "boolean", "NoneType": "null"}
    name = names.get(type(t).__name__, type(t).__name__)
    bounds = [f"{k} {getattr(t, a)}" for k, a in (("≥", "ge"), ("≤", "le"), (">", "gt"),
                                                  ("min length", "min_length"),
                                                  ("max length", "max_length"))
              if getattr(t, a, None) is not None]
    return f"{name} ({', '.join(bounds)})" if bounds else name


def _fields(cls: type) -> list[str]:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    rows = ["| field | type | default |", "|---|---|---|"]
    tag = cls.__struct_config__.tag
    if tag is not None:
        rows.append(f'| `type` | `"{tag}"` | required |')
    for f in info.fields:
        default = "required" if f.required else f"`{json.dumps(msgspec.to_builtins(f.default if f.default is not msgspec.NODEFAULT else f.default_factory()))}`"
        rows.append(f"| `{f.name}` | {_type_name(f.type)} | {default} |")
    return rows


def _doc(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or "")


def _describe(out: list[str], cls: type, name: str) -> None:
    out.extend(["", f"### `{name}`", "", _doc(cls), ""])
    out.extend(_fields(cls))


def _frame(direction: str, frames: list[str]) -> list[str]:
    return [f"{direction} " + frames[0]] + [f"{' ' * len(direction)} {f}" for f in frames[1:]]


def render_markdown() -> str:
    """The whole protocol document."""
    out: list[str] = []
    add = out.append
    add(f"# ctxkeep wire protocol, version {PROTOCOL_VERSION}")
    add("")
    add("_Generated from `protocol/` by `python -m ctxkeep.protocol.docgen docs/`; "
        "do not edit by hand._")
    add("")
    add(inspect.cleandoc("""
    ctxkeepd speaks JSON over two ZeroMQ sockets. Anything with a ZeroMQ binding can be
    a client: this page is all you need.

    ## Sockets

    | socket | daemon side | client side | default endpoint |
    |---|---|---|---|
    | control | ROUTER (bind) | DEALER or REQ (connect) | `ipc://$XDG_RUNTIME_DIR/ctxkeep/ctl` |
    | events | XPUB (bind) | SUB (connect) | `ipc://$XDG_RUNTIME_DIR/ctxkeep/events` |

    Without `XDG_RUNTIME_DIR` the folder is `/tmp/ctxkeep-<uid>`. The environment
    variables `CTXKEEP_CONTROL` and `CTXKEEP_EVENTS` override the endpoints (the
    daemon and the clients both read them). The socket folder is mode 0700.

    ## Requests and replies

    A request is **one frame** holding one JSON object (UTF-8). From a DEALER, send
    just that frame; a REQ socket adds its empty delimiter frame itself, and the
    daemon answers the same way. Every request has:

    - `type`: which request (the sections below);
    - `id`: a string you choose, echoed in the reply, so you may send several
      requests before reading the replies (pipelining); replies to one
      connection come back in the order sent;
    - `v`: the protocol version you speak (default 1). A request with a newer
      `v` than the daemon's gets the error `unsupported_version`.

    Unknown fields are refused (`invalid_request`), so typos never pass silently.

    Every request gets exactly one reply: its usual reply type, or an `error`
    reply with a `code` from the table below and a `message` that says what to
    do. Long work (a generation) is accepted at once (`accepted`) and then
    reported on the event socket. A frame over the daemon's limit
    (`max_frame_bytes`, default 1 MiB) is answered with `frame_too_large`;
    frames far beyond it make ZeroMQ drop the connection.

    ## Events

    Each event is **two frames**: the topic, then the JSON body.

    - The topic is `<subject>/<session_id>`, or `<subject>` alone for
      daemon-wide events. Subscribe by prefix: `""` for everything,
      `generation.` for all generation events, `generation.token/<id>` for one
      session's tokens.
    - The body has `type` (the subject), `seq`, `time` (Unix seconds) and
      `session_id` (`""` when daemon-wide). `seq` counts up by one for every
      event the daemon publishes: a subscriber to everything that sees a jump
      has missed events (ZeroMQ drops when a subscriber falls 64 MiB behind:
      `event_buffer_bytes`; text streams in batches of at most 4 KiB) and
      should re-read what it shows with requests. After a restart the
      numbering begins again at 1.
    - Each new subscription is greeted with a `daemon.status` event; seeing it
      tells you the subscription is live (subscribe to `daemon.status` too if
      your other prefixes do not cover it). A prefix longer than 256 bytes, one past
      256 held by one connection, or one past 4,096 held at once by all subscribers, is
      refused: it gets no greeting and no events (`max_subscriptions_per_client` and
      `max_subscriptions` in the daemon's configuration).
    - Every job ends with exactly one terminal event: `response.generation` or
      `generation.error` for a generation, `compaction.result` for a compaction (see
      below).
    - Ignore event types you do not know: new ones may be added in a minor version;
      new fields always have defaults.

    ## A session from a script

    Runnable as it is: it uses the model named by `MODEL` (default `llama3.2`), and
    prints the daemon's error when that model is not installed.

    ```python
    import json, os, zmq
    run = os.environ.get("XDG_RUNTIME_DIR", f"/tmp/ctxkeep-{os.getuid()}") + "/ctxkeep"
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB); sub.connect(f"ipc://{run}/events"); sub.subscribe(b"")
    sub.recv_multipart()                                   # the daemon.status greeting
    ctl = ctx.socket(zmq.DEALER); ctl.connect(f"ipc://{run}/ctl")
    model = os.environ.get("MODEL", "llama3.2")
    ctl.send(json.dumps({"type": "session.create", "id": "1", "model": model}).encode())
    sid = json.loads(ctl.recv())["session"]["id"]
    ctl.send(json.dumps({"type": "send", "id": "2", "session": sid, "text": "Hello"}).encode())
    gen = json.loads(ctl.recv())["generation_id"]
    while True:
        topic, body = sub.recv_multipart(); event = json.loads(body)
        if event.get("generation_id") != gen: continue
        if event["type"] == "generation.token": print(event["text"], end="", flush=True)
        if event["type"] == "generation.error": print(event["code"], event["message"])
        if event["type"] in ("response.generation", "generation.error"): break
    ```
    """))
    out.extend(GUARANTEES.strip("\n").splitlines())
    add("")
    add("## Request types")
    add("")
    add("In the exchanges, `>` is a frame the client sends on the control socket, `<` a frame "
        "it receives, and `*` an event frame pair on the event socket.")
    for cls in requests.ALL:
        request, reply, follow = EXAMPLES[cls]
        _describe(out, cls, requests.tag_of(cls))
        add("")
        add(f"Reply: `{requests.tag_of(type(reply))}`.")
        add("")
        errors = ERRORS[cls]
        add("Errors: " + ("; ".join(f"`{code}` — {when}" for code, when in errors) if errors
                          else "only the frame errors") + ".")
        add("")
        add("```")
        out.extend(_frame(">", [msgspec.json.encode(request).decode()]))
        out.extend(_frame("<", [msgspec.json.encode(reply).decode()]))
        for event in follow:
            tag = requests.tag_of(type(event))
            out.extend(_frame("*", [subjects.topic(tag, event.session_id),
                                    msgspec.json.encode(event).decode()]))
        add("```")
    add("")
    add("## Reply types")
    for cls in replies.ALL:
        _describe(out, cls, requests.tag_of(cls))
    add("")
    add("## Event types")
    for cls in events.ALL:
        _describe(out, cls, requests.tag_of(cls))
    add("")
    add("## Records")
    for cls in (SessionInfo, MessageInfo, AttachedFile, FileUse, Usage, Segments, Goals,
                GoalCheckpoint, Decision, GoalsInput, CheckpointInfo, SnapshotInfo, DaemonStatus,
                OllamaStatus):
        _describe(out, cls, cls.__name__)
    add("")
    add("## Error codes")
    add("")
    add("| code | meaning |")
    add("|---|---|")
    meanings = {
        "bad_frame": "empty frame, or not exactly one body frame",
        "frame_too_large": "the frame is over `max_frame_bytes`",
        "bad_json": "not UTF-8 JSON, or not a JSON object",
        "unknown_type": "no request has that `type`; the message lists them",
        "invalid_request": "a field is missing, unknown, or of the wrong type (the message gives its path)",
        "unsupported_version": "`v` is newer than the daemon's protocol",
        "unknown_session": "no session has that id, name or id prefix",
        "ambiguous_session": "an id prefix matches several sessions",
        "invalid_argument": "a value is not allowed (an empty message, a taken name)",
        "busy": "the session has work queued or running (restore, delete) or is already compacting (compact); wait for its terminal event or cancel",
        "ollama_unreachable": "no Ollama answers at the configured host",
        "model_not_found": "the model is not installed in Ollama (`ollama pull`)",
        "ollama_error": "Ollama answered with an error",
        "stream_interrupted": "the answer stream broke off; the partial answer is kept, marked interrupted",
        "context_overflow": "the prompt does not fit the window",
        "cancelled": "a client cancelled the job (queued or running)",
        "storage_error": "the store could not write (disk full?); nothing was changed",
        "shutting_down": "the daemon stopped before the job finished (queued ones never started)",
        "daemon_restarted": "ctxkeepd stopped (a crash, a kill) while the answer was being written: "
                            "found and marked at the next start",
        "internal": "a bug: see the daemon's log",
    }
    for code in ErrorCode:
        add(f"| `{code.value}` | {meanings[code.value]} |")
    add("")
    return "\n".join(out)


def render_schema() -> str:
    """JSON Schema of every request, reply and event."""
    (req, rep, ev), components = msgspec.json.schema_components(
        [requests.AnyRequest, replies.AnyReply, events.AnyEvent],
        ref_template="#/$defs/{name}")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"ctxkeep protocol {PROTOCOL_VERSION}",
        "$defs": {**components, "Request": req, "Reply": rep, "Event": ev},
    }
    text = json.dumps(schema, indent=2, sort_keys=True)
    for python, protocol in _schema_names(components).items():
        text = text.replace(f'"#/$defs/{python}"', f'"#/$defs/{protocol}"')
        text = text.replace(f'"{python}": {{', f'"{protocol}": {{')
    return json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def _schema_names(components: dict) -> dict[str, str]:
    """Protocol names for the schema's definitions: `request:usage`, `reply:error`,
    `event:context.usage`, records by their own name — never a Python module path."""
    names: dict[str, str] = {}
    for kind, classes in (("request", requests.ALL), ("reply", replies.ALL), ("event", events.ALL)):
        for cls in classes:
            for python in (cls.__name__, f"{cls.__module__}.{cls.__qualname__}"):
                if python in components:
                    names[python] = f"{kind}:{requests.tag_of(cls)}"
    for python in components:
        if python not in names and "." in python:
            names[python] = python.rsplit(".", 1)[1]
    return names


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "protocol.md").write_text(render_markdown(), encoding="utf-8")
    (folder / "protocol.schema.json").write_text(render_schema(), encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
