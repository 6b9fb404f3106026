"""One run of a snapshot at a time in a home, said plainly.

Two commands running the same snapshot in one home (two `bench demo`, a demo and `bench errata
apply`) would write the same partition archives and warehouse rows at once. The second stops before
it starts anything, with one line naming the run that holds the snapshot (its pid, command and start
time) and exit 1; the first goes on untouched. Commands on other snapshots run side by side.

The lock is a file lock (`filelock`) beside the warehouse, `runs/<snapshot>.lock`: the operating
system releases it when its process ends, however it ends, so a crashed run never leaves a snapshot
held. Who holds it is written beside it (`runs/<snapshot>.json`) for the message.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from bench_assets.errors import BenchError

HOLDER_WAIT_SECONDS = 2.0  # a run that has just taken the lock writes who it is at once


class SnapshotBusy(BenchError):
    """Another command is running the same snapshot in this home; nothing was started or changed."""


def runs_dir(warehouse_file: str | Path) -> Path:
    return Path(warehouse_file).resolve().parent / "runs"


def _holder(info: Path) -> dict[str, object] | None:
    deadline = time.monotonic() + HOLDER_WAIT_SECONDS
    while True:
        try:
            holder = json.loads(info.read_text(encoding="utf-8"))
            if isinstance(holder, dict):
                return holder
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


@contextmanager
def snapshot_run(warehouse_file: str | Path, snapshot_id: str, command: str) -> Iterator[None]:
    """Hold `snapshot_id` for this process while the block runs (`command`: how the operator would
    name it, e.g. "bench demo"); raises SnapshotBusy at once when another process holds it."""
    folder = runs_dir(warehouse_file)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / f"{snapshot_id}.lock"), timeout=0)
    info = folder / f"{snapshot_id}.json"
    try:
        lock.acquire()
    except Timeout:
        holder = _holder(info) or {}
        who = f"pid {holder.get('pid', '?')} ({holder.get('command', 'another bench command')}, started {holder.get('started_at', 'at an unknown time')})"
        raise SnapshotBusy(
            f"snapshot {snapshot_id} is already being run in this home by {who}; this {command} was not started "
            "and that run is untouched. Wait for it to finish (or stop it), then run again."
        ) from None
    try:
        started = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        info.write_text(
            json.dumps({"pid": os.getpid(), "command": command, "started_at": started, "argv": sys.argv[1:]}),
            encoding="utf-8",
        )
        yield
    finally:
        info.unlink(missing_ok=True)
        lock.release()
