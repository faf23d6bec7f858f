"""The LMDB store: sessions, history, snapshots, caches, backups."""
