"""Giving back the memory a vendor's archive took, once its part of the publication is built.

A vendor's archived responses, their parsed forms and its evidence tables come and go (16,000
responses a vendor at 12,600 golden rows). Freed, their memory stays with the process: Arrow's
allocator keeps what it freed for reuse, and so does the C library's for the many small blocks
Python strings and frames take. Asked after each vendor, both give it back to the system, so a
publication's peak is one vendor's archive over what it keeps, not every vendor's leftovers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any

import pyarrow as pa


@cache
def _malloc_trim() -> Any:
    """glibc's `malloc_trim`, where there is one (Linux); None elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def give_back_memory() -> None:
    """Return freed memory to the system: Arrow's pool's, and the C library's free heap."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
