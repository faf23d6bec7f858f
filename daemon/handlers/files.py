"""files: the files a session referenced."""

from ctxkeep.daemon.files.tracking import file_uses
from ctxkeep.daemon.handlers.registry import handles
from ctxkeep.daemon.services import Services
from ctxkeep.daemon.store.records import SessionRecord
from ctxkeep.protocol import requests
from ctxkeep.protocol.replies import FilesReply


@handles(requests.Files, session=True)
async def files(services: Services, req: requests.Files, record: SessionRecord) -> FilesReply:
    uses = file_uses(services.store.history.file_refs(record.id), record.next_seq, req.unused_in_last)
    return FilesReply(id=req.id, session_id=record.id, files=uses)
