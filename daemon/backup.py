"""A consistent copy of the store, taken while the daemon runs.

    python -m ctxkeep.daemon.backup DEST     (what `ctxkeep daemon backup DEST` runs)

LMDB lets another process read the environment during writes; the copy is
one read transaction, compacted. To restore: stop the daemon, put the copy's
`data.mdb` in place of the store's, start the daemon.
"""

import sys
from pathlib import Path

import lmdb

from .config import ConfigError, load


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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: ctxkeep daemon backup DEST", file=sys.stderr)
        return 2
    try:
        copy = backup(load().resolved_store(), Path(argv[0]))
    except (ConfigError, OSError, lmdb.Error) as exc:
        print(f"ctxkeep: backup failed: {exc}", file=sys.stderr)
        return 1
    print(f"backed up to {copy} ({copy.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
