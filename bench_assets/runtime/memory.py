"""Memory and the garbage collector: giving back what a finished piece of work took, and keeping
the cyclic collector away from objects that form no cycles worth its walks.

Freed memory stays with the process: Arrow's allocator keeps what it freed for reuse, and so does
the C library's for the many small blocks Python strings and frames take. `give_back_memory`
asks both to return it, so a long run's peak is one piece of work over what it keeps, not every
piece's leftovers. Scoring and publication build hundreds of thousands of small objects that live
until their piece of work is done and form no cycles; the cyclic collector walks them again and
again as they pile up, so such work runs with it paused (`collector_paused`): reference counting
still frees every object as it goes. A long-lived server freezes what it built at start-up
(`freeze_heap`), so the collector's full passes leave it alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any


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
    arrow = sys.modules.get("pyarrow")  # a process that never loaded Arrow has nothing in its pool
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the duration (reference counting still frees
    every object as it goes); its state is restored on the way out, and any cycle made meanwhile
    is found by its next run."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_heap() -> None:
    """Keep every object alive now out of the collector's future passes (a server's corpus and
    index, built once and kept for its whole life)."""
    gc.collect()
    gc.freeze()


def stop_collector() -> None:
    """The cyclic collector off for the rest of this process (a forked child that exits once its
    job is sent: its collections would walk every object the job made, for nothing)."""
    gc.disable()


def available_memory_mib() -> int:
    """Memory the system can give without swapping, in MiB (`MemAvailable`; where there is no
    /proc/meminfo, the physical memory)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (ValueError, OSError, AttributeError):
        return 4096
