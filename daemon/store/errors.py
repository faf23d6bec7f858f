"""What can go wrong in the store: each error carries the protocol's code for it."""

from ctxkeep.protocol import ErrorCode


class StoreError(Exception):
    """The store cannot do what was asked (a disk or LMDB failure); the message says why."""

    code = ErrorCode.STORAGE_ERROR


class UnknownSession(StoreError):
    """No session has that id or name."""

    code = ErrorCode.UNKNOWN_SESSION


class AmbiguousSession(StoreError):
    """A reference matches more than one session."""

    code = ErrorCode.AMBIGUOUS_SESSION


class NameTaken(StoreError):
    """Another session already has that name."""

    code = ErrorCode.INVALID_ARGUMENT


class StoreTooNew(StoreError):
    """The store was written by a newer ctxkeep."""


class ContextChanged(StoreError):
    """The active context changed while a compaction was being prepared."""


class NoSuchSnapshot(StoreError):
    """No snapshot has that id (or the id is not one)."""

    code = ErrorCode.INVALID_ARGUMENT


class Undecodable(StoreError):
    """A record that would not decode once stored: it is refused, nothing is written."""

    code = ErrorCode.INVALID_ARGUMENT
