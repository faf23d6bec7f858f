"""One worked exchange per request type, and the error codes each request can answer:
the examples and error lists of docs/protocol.md (a test round-trips every example)."""

import msgspec

from . import events, replies, requests, subjects
from .errors import ErrorCode
from .goals import Decision, GoalCheckpoint, Goals, GoalsInput
from .imported import ImportedMessage
from .memory_examples import MEMORY_FORGET, MEMORY_SEARCH
from .structs import (
    BackendStatus,
    DaemonStatus,
    FileUse,
    MessageInfo,
    ModelInfo,
    OllamaStatus,
    SearchHit,
    Segments,
    SessionInfo,
    SnapshotInfo,
    Usage,
)
from .tool_examples import IMAGE_GET, SET_TOOLS
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
    ollama=OllamaStatus(host="http://127.0.0.1:11434", reachable=True, version="0.12.6"),
    backends=[BackendStatus(name="ollama", kind="ollama", host="http://127.0.0.1:11434",
                            reachable=True, version="0.12.6")],
    default_model="llama3.2")
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
    requests.Regenerate: (
        requests.Regenerate(id="12", session=_SID),
        replies.Accepted(id="12", session_id=_SID, generation_id="c4d1e07b9a3f", ahead=0),
        [events.SessionUpdated(seq=40, time=_T, session_id=_SID, session=_BUSY),
         events.QueryReceived(seq=41, time=_T, session_id=_SID, generation_id="c4d1e07b9a3f",
                              message=_USER, model="llama3.2"),
         events.GenerationToken(seq=42, time=_T, session_id=_SID, generation_id="c4d1e07b9a3f",
                                index=0, text="Air scatters blue light most."),
         events.ResponseGeneration(seq=43, time=_T, session_id=_SID, generation_id="c4d1e07b9a3f",
                                   message=msgspec.structs.replace(
                                       _ANSWER, seq=4, content="Air scatters blue light most.",
                                       eval_count=6, alternative_of=3),
                                   token_count=431, eval_count=6, window=8192),
         events.SessionUpdated(seq=44, time=_T, session_id=_SID, session=_AFTER)]),
    requests.Edit: (
        requests.Edit(id="13", session=_SID, seq=2, text="And in three words?"),
        replies.Accepted(id="13", session_id=_SID, generation_id="0b7e5d2c91fa", ahead=0),
        [events.SessionUpdated(seq=45, time=_T, session_id=_SID, session=_BUSY),
         events.QueryReceived(seq=46, time=_T, session_id=_SID, generation_id="0b7e5d2c91fa",
                              message=msgspec.structs.replace(
                                  _USER, seq=4, content="And in three words?", alternative_of=2),
                              model="llama3.2"),
         events.GenerationToken(seq=47, time=_T, session_id=_SID, generation_id="0b7e5d2c91fa",
                                index=0, text="Air scatters blue."),
         events.ResponseGeneration(seq=48, time=_T, session_id=_SID, generation_id="0b7e5d2c91fa",
                                   message=msgspec.structs.replace(
                                       _ANSWER, seq=5, content="Air scatters blue.", eval_count=4,
                                       reply_to=4, alternative_of=3),
                                   token_count=420, eval_count=4, window=8192),
         events.SessionUpdated(seq=49, time=_T, session_id=_SID, session=_AFTER)]),
    requests.Alternative: (
        requests.Alternative(id="14", session=_SID, seq=3),
        replies.SessionReply(id="14", session=msgspec.structs.replace(
            _AFTER, message_count=5, token_count=431, token_count_exact=False)),
        [events.SessionUpdated(seq=50, time=_T, session_id=_SID, session=msgspec.structs.replace(
            _AFTER, message_count=5, token_count=431, token_count_exact=False))]),
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
    requests.SetTools: SET_TOOLS,
    requests.ImageGet: IMAGE_GET,
    requests.MemorySearch: MEMORY_SEARCH,
    requests.MemoryForget: MEMORY_FORGET,
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
    requests.Prompt: (requests.Prompt(id="41", session=_SID), replies.PromptReply(
        id="41", session_id=_SID, window=8192, tokens=96, parts=[
            replies.PromptPart(kind="system", text="Answer briefly.", tokens=9),
            replies.PromptPart(kind="message", role="user", seq=0, text="Why is the sky blue?", tokens=12),
            replies.PromptPart(kind="message", role="assistant", seq=1, tokens=75, shown="shortened",
                               text="Sunlight is scattered by the air…\n[… 1,843 characters omitted …]\n…so it looks blue.")]),
        []),
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
    requests.SessionImport: (
        requests.SessionImport(id="31", name="imported", model="qwen2.5:7b", messages=[
            ImportedMessage(role="user", content="Why is the sky blue?"),
            ImportedMessage(role="assistant", content="Rayleigh scattering.")]),
        replies.SessionReply(id="31", session=msgspec.structs.replace(
            _NEW, name="imported", model="qwen2.5:7b", message_count=2, token_count=31)),
        [events.SessionCreated(seq=60, time=_T, session_id=_SID, session=msgspec.structs.replace(
            _NEW, name="imported", model="qwen2.5:7b", message_count=2, token_count=31))]),
    requests.Branch: (
        requests.Branch(id="36", session="chat-1", at=1),
        replies.SessionReply(id="36", session=msgspec.structs.replace(
            _NEW, id="77c01e5a9b42", name="chat-1 (branch)", message_count=2, token_count=412,
            token_count_exact=False,
            branched_from=_SID, branched_at=1)),
        [events.SessionCreated(seq=61, time=_T, session_id="77c01e5a9b42", session=msgspec.structs.replace(
            _NEW, id="77c01e5a9b42", name="chat-1 (branch)", message_count=2, token_count=412,
            token_count_exact=False,
            branched_from=_SID, branched_at=1))]),
    requests.Search: (
        requests.Search(id="32", query="rayleigh scattering"),
        replies.SearchReply(id="32", total=1, words=["rayleigh", "scattering"], hits=[SearchHit(
            session_id=_SID, session_name="chat-1", message=MessageInfo(
                seq=1, role="assistant", content="Rayleigh scattering: shorter wavelengths scatter more.",
                created=_T, model="llama3.2"))]), []),
    requests.ModelsPull: (
        requests.ModelsPull(id="33", model="qwen2.5:7b"),
        replies.PullAccepted(id="33", pull_id="9f2c41d07a11", model="qwen2.5:7b"),
        [events.ModelPullProgress(seq=70, time=_T, pull_id="9f2c41d07a11", model="qwen2.5:7b",
                                  status="pulling manifest"),
         events.ModelPullProgress(seq=71, time=_T, pull_id="9f2c41d07a11", model="qwen2.5:7b",
                                  status="pulling 2bada8a74506", completed=1_200_000_000,
                                  total=4_683_075_271),
         events.ModelPullResult(seq=72, time=_T, pull_id="9f2c41d07a11", model="qwen2.5:7b",
                                status="ok")]),
    requests.ModelsList: (
        requests.ModelsList(id="30"),
        replies.ModelsReply(id="30", default_model="qwen2.5:7b", models=[
            ModelInfo(name="qwen2.5:7b", size=4683087332, parameter_size="7.6B", family="qwen2",
                      context_length=32768, loaded=True, default=True, hosts=["ollama"]),
            ModelInfo(name="nomic-embed-text:latest", size=274302450, parameter_size="137M",
                      family="nomic-bert", context_length=2048, hosts=["ollama"])]), []),
    requests.ModelsDefault: (
        requests.ModelsDefault(id="34", model="qwen2.5:7b"),
        replies.DefaultModelReply(id="34", model="qwen2.5:7b",
                                  config_path="/home/ada/.config/ctxkeep/config.toml"), []),
}
