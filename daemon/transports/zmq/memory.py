"""Giving freed memory back to the system.

glibc keeps what a program frees for its next allocations; after a burst of many small
ones (libzmq's copies of a hostile subscriber's subscriptions, freed when its connection
ends) the daemon's resident size would stay at its peak. `malloc_trim` returns the free
pages. Elsewhere (another C library) it does nothing.
"""

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; False where that cannot be done."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
