"""What can go wrong in the store, as exceptions the request layer turns into codes."""


class StoreError(Exception):
    """The store cannot do what was asked; the message says why."""


class UnknownSession(StoreError):
    """No session has that id or name."""


class AmbiguousSession(StoreError):
    """A reference matches more than one session."""


class NameTaken(StoreError):
    """Another session already has that name."""


class StoreTooNew(StoreError):
    """The store was written by a newer ctxkeep."""


class ContextChanged(StoreError):
    """The active context changed while a compaction was being prepared."""


class NoSuchSnapshot(StoreError):
    """No snapshot has that id (or the id is not one)."""
