"""files: the files a session referenced."""

from ctxkeep.protocol import requests
from ctxkeep.protocol.replies import FilesReply
from ctxkeep.daemon.files.tracking import file_uses
from ctxkeep.daemon.handlers.registry import handles


@handles(requests.Files)
async def files(daemon, req: requests.Files) -> FilesReply:
    record = daemon.store.session(req.session)
    uses = file_uses(daemon.store.file_refs(record.id), record.next_seq, req.unused_in_last)
    return FilesReply(id=req.id, session_id=record.id, files=uses)
