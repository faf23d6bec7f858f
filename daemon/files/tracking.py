"""Which files a session referenced, and which it has not used lately (for compaction)."""

from ctxkeep.daemon.store.records import FileRefRecord
from ctxkeep.protocol.structs import FileUse


def file_uses(refs: list[FileRefRecord], next_seq: int, unused_in_last: int = 0) -> list[FileUse]:
    """One entry per file (by real path), latest use first; with `unused_in_last` = N,
    only files no message among the last N referenced."""
    by_file: dict[str, list[FileRefRecord]] = {}
    for ref in refs:
        by_file.setdefault(ref.real_path or ref.path, []).append(ref)
    uses = []
    for records in by_file.values():
        latest = records[-1]
        if unused_in_last and latest.message_seq >= next_seq - unused_in_last:
            continue
        uses.append(FileUse(path=latest.path, mode=latest.mode, tokens=latest.tokens,
                            sha256=latest.sha256, mtime=latest.mtime, uses=len(records),
                            first_seq=records[0].message_seq, last_seq=latest.message_seq))
    return sorted(uses, key=lambda u: u.last_seq, reverse=True)
