"""The request methods shared by the sync and asyncio clients.

Each builds one request and hands it to `self.request`, which blocks (sync
client) or returns an awaitable (asyncio client). The return types written here
are the sync client's; the asyncio client's, the same awaited, are in `aio.pyi`,
written from these by `aio_types.py` (a test keeps it current).
"""

from typing import Any

from ..protocol import requests
from ..protocol.memory import MemoryForget, MemorySearch
from ..protocol.replies import (
    Accepted,
    Cancelled,
    CompactionAccepted,
    CompactionPlan,
    DefaultModelReply,
    Deleted,
    FilesReply,
    GoalsReply,
    HelloReply,
    HistoryReply,
    ImageReply,
    MemoryForgotten,
    MemoryHits,
    ModelsReply,
    Pong,
    PromptReply,
    PullAccepted,
    SearchReply,
    SessionReply,
    SessionsReply,
    SnapshotReply,
    SnapshotsReply,
    StatusReply,
    UsageReply,
)


class Calls:
    """One method per request type."""

    def request(self, request: requests.Request, expect: type) -> Any:  # pragma: no cover
        raise NotImplementedError

    def hello(self, client: str = "ctxkeep-python") -> HelloReply:
        return self.request(requests.Hello(client=client), HelloReply)

    def ping(self) -> Pong:
        return self.request(requests.Ping(), Pong)

    def status(self) -> StatusReply:
        return self.request(requests.Status(), StatusReply)

    def create_session(self, **fields: Any) -> SessionReply:
        return self.request(requests.SessionCreate(**fields), SessionReply)

    def sessions(self) -> SessionsReply:
        return self.request(requests.SessionList(), SessionsReply)

    def session(self, ref: str) -> SessionReply:
        return self.request(requests.SessionGet(session=ref), SessionReply)

    def rename(self, ref: str, name: str) -> SessionReply:
        return self.request(requests.SessionRename(session=ref, name=name), SessionReply)

    def delete(self, ref: str) -> Deleted:
        return self.request(requests.SessionDelete(session=ref), Deleted)

    def history(self, ref: str, start: int = 0, limit: int = 100, active: bool = False) -> HistoryReply:
        return self.request(requests.History(session=ref, start=start, limit=limit, active=active),
                            HistoryReply)

    def send(self, ref: str, text: str = "", cwd: str = "", think: bool | None = None, **turn: Any) -> Accepted:
        """A turn; `turn` takes `send`'s other fields (tools, tool_results, format, ...)."""
        return self.request(requests.Send(session=ref, text=text, cwd=cwd, think=think, **turn), Accepted)

    def image(self, digest: str) -> ImageReply:
        """An image's bytes (base64 in `data`), by the hash a message's `images` item gives."""
        return self.request(requests.ImageGet(hash=digest), ImageReply)

    def set_tools(self, ref: str, tools: list) -> SessionReply:
        return self.request(requests.SetTools(session=ref, tools=tools), SessionReply)

    def cancel(self, ref: str, generation_id: str = "") -> Cancelled:
        return self.request(requests.Cancel(session=ref, generation_id=generation_id), Cancelled)

    def set_system(self, ref: str, system: str) -> SessionReply:
        return self.request(requests.SetSystem(session=ref, system=system), SessionReply)

    def set_model(self, ref: str, **fields: Any) -> SessionReply:
        return self.request(requests.SetModel(session=ref, **fields), SessionReply)

    def prompt(self, ref: str) -> PromptReply:
        """What the model would see now, part by part (each with its tokens)."""
        return self.request(requests.Prompt(session=ref), PromptReply)

    def usage(self, ref: str) -> UsageReply:
        return self.request(requests.Usage(session=ref), UsageReply)

    def compact(self, ref: str, tail_turns: int | None = None, instructions: str = "",
                requested_by: str = "") -> CompactionAccepted:
        """Start a compaction (reply: compaction.accepted; the outcome comes as events)."""
        return self.request(requests.Compact(session=ref, tail_turns=tail_turns,
                                             instructions=instructions, requested_by=requested_by),
                            CompactionAccepted)

    def compaction_plan(self, ref: str, tail_turns: int | None = None) -> CompactionPlan:
        """What a compaction would do now (a dry run: nothing changes)."""
        return self.request(requests.Compact(session=ref, tail_turns=tail_turns, dry_run=True),
                            CompactionPlan)

    def files(self, ref: str, unused_in_last: int = 0) -> FilesReply:
        return self.request(requests.Files(session=ref, unused_in_last=unused_in_last), FilesReply)

    def pin(self, ref: str, seq: int, pinned: bool = True) -> SessionReply:
        return self.request(requests.Pin(session=ref, seq=seq, pinned=pinned), SessionReply)

    def goals(self, ref: str) -> GoalsReply:
        return self.request(requests.GoalsGet(session=ref), GoalsReply)

    def set_goals(self, ref: str, goals: Any) -> GoalsReply:
        return self.request(requests.GoalsSet(session=ref, goals=goals), GoalsReply)

    def snapshot(self, ref: str, reason: str = "manual") -> SnapshotReply:
        return self.request(requests.SnapshotCreate(session=ref, reason=reason), SnapshotReply)

    def snapshots(self, ref: str) -> SnapshotsReply:
        return self.request(requests.SnapshotList(session=ref), SnapshotsReply)

    def restore(self, ref: str, snapshot_id: str = "") -> SnapshotReply:
        """Restore a snapshot; without an id, undo the last compaction."""
        return self.request(requests.SnapshotRestore(session=ref, snapshot_id=snapshot_id), SnapshotReply)

    def delete_snapshot(self, ref: str, snapshot_id: str) -> SnapshotReply:
        return self.request(requests.SnapshotDelete(session=ref, snapshot_id=snapshot_id), SnapshotReply)

    def regenerate(self, ref: str, think: bool | None = None, continues: bool = False) -> Accepted:
        """A new answer to the session's last question (see `regenerate`); with `continues`,
        the last answer gone on from where it stopped."""
        return self.request(requests.Regenerate(session=ref, think=think, continues=continues), Accepted)

    def edit(self, ref: str, seq: int | None, text: str, cwd: str = "", think: bool | None = None) -> Accepted:
        """Question `seq` (None: the last one) asked again as `text` (see `edit`)."""
        return self.request(requests.Edit(session=ref, seq=seq, text=text, cwd=cwd, think=think), Accepted)

    def alternative(self, ref: str, seq: int) -> SessionReply:
        """Answer `seq` made the one the model sees (see `alternative`)."""
        return self.request(requests.Alternative(session=ref, seq=seq), SessionReply)

    def branch(self, ref: str, at: int | None = None, name: str = "") -> SessionReply:
        """A new session with `ref`'s history up to message `at` (see `session.branch`)."""
        return self.request(requests.Branch(session=ref, at=at, name=name), SessionReply)

    def import_session(self, **fields: Any) -> SessionReply:
        """A conversation brought in (see `session.import`)."""
        return self.request(requests.SessionImport(**fields), SessionReply)

    def search(self, query: str, session: str = "", limit: int = 50) -> SearchReply:
        return self.request(requests.Search(query=query, session=session, limit=limit), SearchReply)

    def memory_search(self, query: str, session: str = "", limit: int = 20) -> MemoryHits:
        """What memory could bring back for `query` (as a turn of `session` would see it)."""
        return self.request(MemorySearch(query=query, session=session, limit=limit), MemoryHits)

    def memory_forget(self, ref: str, seqs: list[int] | None = None, undo: bool = False) -> MemoryForgotten:
        """Have memory forget a session (no `seqs`) or some of its messages; `undo` remembers."""
        return self.request(MemoryForget(session=ref, seqs=seqs or [], undo=undo), MemoryForgotten)

    def pull_model(self, model: str) -> PullAccepted:
        """Have Ollama download a model; its events carry the reply's `pull_id`."""
        return self.request(requests.ModelsPull(model=model), PullAccepted)

    def set_default_model(self, model: str, force: bool = False) -> DefaultModelReply:
        """Make `model` the default of new sessions (the daemon records it in config.toml)."""
        return self.request(requests.ModelsDefault(model=model, force=force), DefaultModelReply)

    def models(self) -> ModelsReply:
        """The models installed in Ollama, and the default one."""
        return self.request(requests.ModelsList(), ModelsReply)
