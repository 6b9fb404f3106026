"""Whether the warehouse file is still the file this process last left: what lets a connection
skip the checks already made on it (the schema, the custody journal's position).

A state is taken under the warehouse's lock, after the connection closed (DuckDB checkpoints on
close, so the file is as the next connection will find it). It is the file's and its write-ahead
log's identity and times (device, inode, size, mtime and ctime in nanoseconds) and a digest of
the file's first three blocks: DuckDB's main header and its two database headers, one of which
every checkpoint rewrites with a new iteration number. The times alone are not enough: a file
written over in place (an old backup copied back) within one clock tick of the last close keeps
its inode, size and coarse timestamps, but not its headers; a file moved aside and replaced (a
restore) has another inode. A state that differs in any part means "check again": a false
"changed" costs one check, a false "unchanged" would skip one, hence every part.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

# DuckDB's main header and its two alternating database headers (Storage::FILE_HEADER_SIZE each)
_HEADER_BYTES = 3 * 4096

FileState = tuple[object, ...]


def file_state(path: Path) -> FileState | None:
    """The state of the DuckDB file at `path` and of its write-ahead log (None: no file)."""
    try:
        with path.open("rb") as f:
            stat = _stat_of(f.fileno())
            headers = hashlib.blake2b(f.read(_HEADER_BYTES), digest_size=16).digest()
    except FileNotFoundError:
        return None
    wal = path.with_name(path.name + ".wal")
    try:
        wal_stat: tuple[int, ...] | None = _stat_of(wal)
    except FileNotFoundError:
        wal_stat = None
    return (stat, headers, wal_stat)


def _stat_of(target: int | Path) -> tuple[int, ...]:
    st = os.stat(target)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class Checked:
    """A file state this process checked: its schema was current and, if known, the custody
    journal's entry the file had committed (None: a write since, to be read again)."""

    state: FileState
    position: int | None


class CheckedFiles:
    """Per process, per warehouse file: the last state checked (forked children inherit it, which
    is right: the state is compared with the file before it is trusted)."""

    def __init__(self) -> None:
        self._by_path: dict[str, Checked] = {}
        self._guard = threading.Lock()

    def still(self, path: Path) -> Checked | None:
        """What was checked of `path`, if the file is still in that state (call under the lock)."""
        with self._guard:
            known = self._by_path.get(str(path))
        if known is None or file_state(path) != known.state:
            return None
        return known

    def remember(self, path: Path, position: int | None) -> None:
        """The file as it is now was checked (call under the lock, after the connection closed)."""
        state = file_state(path)
        with self._guard:
            if state is None:
                self._by_path.pop(str(path), None)
            else:
                self._by_path[str(path)] = Checked(state, position)

    def forget(self, path: Path) -> None:
        with self._guard:
            self._by_path.pop(str(path), None)


CHECKED = CheckedFiles()
