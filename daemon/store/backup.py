"""A consistent copy of the store, taken while the daemon runs.

    ctxkeepd backup DEST     (what `ctxkeep daemon backup DEST` runs)

LMDB lets another process read the environment during writes; the copy is
one read transaction, compacted. To restore: stop the daemon, put the copy's
`data.mdb` in place of the store's, start the daemon.
"""

from pathlib import Path

import lmdb


def backup(store: Path, dest: Path) -> Path:
    if not (store / "data.mdb").exists():
        raise FileNotFoundError(f"no store at {store}")
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    if any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty: give a new folder")
    env = lmdb.open(str(store), readonly=True, max_dbs=16, lock=True)
    try:
        env.copy(str(dest), compact=True)
    finally:
        env.close()
    copy = dest / "data.mdb"
    copy.chmod(0o600)  # the conversations are private, whatever the folder's mode
    return copy
