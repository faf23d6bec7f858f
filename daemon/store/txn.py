"""The type of the store's transactions: LMDB's, whose keys and values are bytes (the store
never asks LMDB for buffers, which its type stubs allow for)."""

from typing import TYPE_CHECKING

import lmdb

if TYPE_CHECKING:
    Txn = lmdb.Transaction[bytes]
else:
    Txn = lmdb.Transaction
