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
    AttachedFile, CheckpointInfo, DaemonStatus, Decision, FileUse, GoalCheckpoint, Goals,
    MessageInfo, OllamaStatus, Segments, SessionInfo, SnapshotInfo, Usage,
)
from .version import PROTOCOL_VERSION

_T = 1795000000.0
_SESSION = SessionInfo(id="3f2a9c4b1d7e", name="chat-1", model="llama3.2", num_ctx=8192,
                       window=8192, created=_T, updated=_T + 60, message_count=2, token_count=412)
_USER = MessageInfo(seq=2, role="user", content="And in one sentence?", created=_T + 61)
_ANSWER = MessageInfo(seq=3, role="assistant", content="Sunlight scatters off air molecules.",
                      created=_T + 62, model="llama3.2", eval_count=9)
_STATUS = DaemonStatus(
    version="0.1.0", protocol=PROTOCOL_VERSION, pid=4242, started=_T, uptime=3600.0, sessions=1,
    generations_running=0, control_endpoint="ipc:///run/user/1000/ctxkeep/ctl",
    events_endpoint="ipc:///run/user/1000/ctxkeep/events",
    store_path="/home/me/.local/share/ctxkeep/store", last_seq=17,
    ollama=OllamaStatus(host="http://127.0.0.1:11434", reachable=True, version="0.12.6"))
_SID = _SESSION.id
_GEN = "b81c07d2e4f9"
_CMP = "5e0d4f1a9c22"
_GOALS = Goals(goal="Implement user authentication",
               checkpoints=[GoalCheckpoint(description="Design the login flow", status="completed")],
               decisions=[Decision(description="Use JWT for authentication", locked=True)],
               artifacts=["Created src/auth/login.ts"], next_steps=["Add token refresh"], updated=_T)
_SNAPSHOT = SnapshotInfo(id="18a3f0c2d4e5b600", created=_T, reason="before compaction level 3",
                         messages=14, checkpoints=1, token_count=5210, compactions=2)
_USAGE = Usage(tokens=6120, window=8192, fill=6120 / 8192, exact=True, messages=40,
               segments=Segments(system=12, summaries=0, recent=6108))

#: One worked exchange per request type: (request, reply, events that follow).
EXAMPLES: dict[type, tuple[requests.Request, replies.Reply, list[events.Event]]] = {
    requests.Hello: (requests.Hello(id="1", client="my-script"),
                     replies.HelloReply(id="1", daemon="0.1.0", protocol=PROTOCOL_VERSION, pid=4242,
                                        subjects=[subjects.DAEMON_STATUS, "..."]), []),
    requests.Ping: (requests.Ping(id="2"), replies.Pong(id="2", time=_T), []),
    requests.Status: (requests.Status(id="3"), replies.StatusReply(id="3", status=_STATUS), []),
    requests.SessionCreate: (
        requests.SessionCreate(id="4", model="llama3.2"),
        replies.SessionReply(id="4", session=SessionInfo(**{**msgspec.structs.asdict(_SESSION),
                                                            "message_count": 0, "token_count": 0})),
        [events.SessionCreated(seq=18, time=_T, session_id=_SID, session=_SESSION)]),
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
         events.SessionUpdated(seq=24, time=_T, session_id=_SID, session=_SESSION),
         events.ContextUsage(seq=25, time=_T, session_id=_SID,
                             usage=Usage(tokens=431, window=8192, fill=431 / 8192, exact=True))]),
    requests.Cancel: (
        requests.Cancel(id="11", session=_SID),
        replies.Cancelled(id="11", session_id=_SID, cancelled=True, generation_id=_GEN),
        [events.GenerationError(seq=30, time=_T, session_id=_SID, generation_id=_GEN,
                                code=ErrorCode.CANCELLED.value, message="cancelled by a client",
                                partial="Sunlight scat", stored_seq=5)]),
    requests.SetSystem: (requests.SetSystem(id="12", session=_SID, system="Answer briefly."),
                         replies.SessionReply(id="12", session=msgspec.structs.replace(
                             _SESSION, system="Answer briefly.")), []),
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
                   [events.SessionUpdated(seq=60, time=_T, session_id=_SID, session=_SESSION)]),
    requests.GoalsGet: (requests.GoalsGet(id="18", session=_SID),
                        replies.GoalsReply(id="18", session_id=_SID, goals=_GOALS), []),
    requests.GoalsSet: (requests.GoalsSet(id="19", session=_SID, goals=_GOALS),
                        replies.GoalsReply(id="19", session_id=_SID, goals=_GOALS),
                        [events.GoalUpdated(seq=61, time=_T, session_id=_SID, goals=_GOALS)]),
    requests.SnapshotCreate: (requests.SnapshotCreate(id="20", session=_SID),
                              replies.SnapshotReply(id="20", session_id=_SID, snapshot=_SNAPSHOT),
                              [events.SnapshotCreated(seq=62, time=_T, session_id=_SID,
                                                      snapshot=_SNAPSHOT)]),
    requests.SnapshotList: (requests.SnapshotList(id="21", session=_SID),
                            replies.SnapshotsReply(id="21", session_id=_SID, snapshots=[_SNAPSHOT]), []),
    requests.SnapshotRestore: (requests.SnapshotRestore(id="22", session=_SID),
                               replies.SnapshotReply(id="22", session_id=_SID, snapshot=_SNAPSHOT),
                               [events.SnapshotRestored(seq=63, time=_T, session_id=_SID,
                                                        snapshot=_SNAPSHOT)]),
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
             _SESSION, token_count=1480, token_count_exact=False, compactions=1)),
         events.ContextUsage(seq=54, time=_T, session_id=_SID, usage=Usage(
             tokens=1480, window=8192, fill=1480 / 8192, exact=False, messages=9,
             segments=Segments(system=12, summaries=310, recent=1158)))]),
}


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
      has missed events (ZeroMQ drops when a subscriber falls far behind) and
      should re-read what it shows with requests. After a restart the
      numbering begins again at 1.
    - Each new subscription is greeted with a `daemon.status` event; seeing it
      tells you the subscription is live (subscribe to `daemon.status` too if
      your other prefixes do not cover it).
    - A generation ends with exactly one terminal event: `response.generation`
      (done) or `generation.error` (failed or cancelled).
    - Ignore event types you do not know: new ones may be added in a minor version;
      new fields always have defaults.

    ## A session from the shell

    ```python
    import json, os, zmq
    run = os.environ["XDG_RUNTIME_DIR"] + "/ctxkeep"
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB); sub.connect(f"ipc://{run}/events"); sub.subscribe(b"")
    sub.recv_multipart()                                   # the daemon.status greeting
    ctl = ctx.socket(zmq.DEALER); ctl.connect(f"ipc://{run}/ctl")
    ctl.send(json.dumps({"type": "session.create", "id": "1"}).encode())
    sid = json.loads(ctl.recv())["session"]["id"]
    ctl.send(json.dumps({"type": "send", "id": "2", "session": sid, "text": "Hello"}).encode())
    gen = json.loads(ctl.recv())["generation_id"]
    while True:
        topic, body = sub.recv_multipart(); event = json.loads(body)
        if event.get("generation_id") != gen: continue
        if event["type"] == "generation.token": print(event["text"], end="", flush=True)
        if event["type"] in ("response.generation", "generation.error"): break
    ```
    """))
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
                GoalCheckpoint, Decision, CheckpointInfo, SnapshotInfo, DaemonStatus, OllamaStatus):
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
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "protocol.md").write_text(render_markdown(), encoding="utf-8")
    (folder / "protocol.schema.json").write_text(render_schema(), encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
