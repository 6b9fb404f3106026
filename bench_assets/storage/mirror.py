"""A local directory kept in step with a prefix of object storage, for machines that share no disk.

The pipeline reads and writes files under the bench home: the snapshot directories (manifests,
the exported public split, replies, errata versions), the private store (golden files, holdout,
decoys, dead rows, review packets) and the published site. On one machine they are just there.
With `$BENCH_FILES_URL`, each machine's directories are copies of prefixes in object storage: a
step pulls what changed there before it runs and pushes what it changed after (the Dagster
resource `BenchPaths` does both around every step; the CLI around its commands).

A file is pulled when this machine does not have it or has only an older pulled copy of it; a
file written here (or shipped with the code, like a manifest) is never overwritten by a pull,
and is pushed. A file deleted here that was pulled is deleted there. What was pulled or pushed,
with its size and time here and its version there, is kept in `.bench-mirror.json` in the
directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

STATE_FILE = ".bench-mirror.json"


def _remote_version(info: dict[str, Any]) -> str:
    """What changes when the object changes: its ETag (S3, GCS), else its size and time."""
    for key in ("ETag", "etag", "md5Hash", "content_settings"):
        if info.get(key):
            return str(info[key])
    return f"{info.get('size')}:{info.get('LastModified') or info.get('mtime') or info.get('updated')}"


class DirectoryMirror:
    """`local` kept in step with `url` (any fsspec URL)."""

    def __init__(self, local: Path, url: str):
        self.local = local
        self.url = url.rstrip("/")
        self.fs, root = fsspec.core.url_to_fs(self.url, use_listings_cache=False)
        self.root = root.rstrip("/")
        self.is_local = isinstance(self.fs, LocalFileSystem)

    def __repr__(self) -> str:
        return f"DirectoryMirror({str(self.local)!r} <-> {self.url!r})"

    # ------------------------------------------------------------------ state

    def _state_path(self) -> Path:
        return self.local / STATE_FILE

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self._state_path().read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return data.get("files", {}) if data.get("url") == self.url else {}

    def _save(self, files: dict[str, dict[str, Any]]) -> None:
        self.local.mkdir(parents=True, exist_ok=True)
        temporary = self._state_path().with_suffix(".tmp")
        temporary.write_text(json.dumps({"url": self.url, "files": files}, sort_keys=True))
        os.replace(temporary, self._state_path())

    def _local_files(self) -> dict[str, tuple[int, int]]:
        if not self.local.exists():
            return {}
        found = {}
        for path in self.local.rglob("*"):
            if path.is_file() and path.name != STATE_FILE and not path.name.endswith(".tmp"):
                st = path.stat()
                found[path.relative_to(self.local).as_posix()] = (st.st_size, st.st_mtime_ns)
        return found

    def _remote_files(self) -> dict[str, str]:
        try:
            found = self.fs.find(self.root, detail=True)
        except FileNotFoundError:
            return {}
        prefix = self.root + "/"
        return {
            str(name)[len(prefix) :]: _remote_version(info)
            for name, info in found.items()
            if str(name).startswith(prefix) and info.get("type", "file") == "file"
        }

    # ------------------------------------------------------------------ pull and push

    def pull(self) -> int:
        """Bring what changed there here (never over a file changed here). Returns files changed."""
        state, local, remote = self._load(), self._local_files(), self._remote_files()
        changed = 0
        for rel, version in sorted(remote.items()):
            known = state.get(rel)
            here = local.get(rel)
            if here is not None and (known is None or tuple(known["local"]) != here):
                continue  # written here since (or never pulled): it is pushed, not overwritten
            if here is not None and known is not None and known["remote"] == version:
                continue  # up to date
            target = self.local / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.pull.tmp")
            self.fs.get_file(f"{self.root}/{rel}", str(temporary))
            os.replace(temporary, target)
            st = target.stat()
            state[rel] = {"local": [st.st_size, st.st_mtime_ns], "remote": version}
            changed += 1
        for rel in sorted(set(state) - set(remote)):
            here = local.get(rel)
            if here is not None and tuple(state[rel]["local"]) == here:
                (self.local / rel).unlink()  # deleted there, unchanged here
                changed += 1
            state.pop(rel)
        self._save(state)
        return changed

    def push(self) -> int:
        """Send what changed here there (and delete there what was deleted here). Returns files changed."""
        state, local = self._load(), self._local_files()
        changed = 0
        for rel, here in sorted(local.items()):
            known = state.get(rel)
            if known is not None and tuple(known["local"]) == here:
                continue
            destination = f"{self.root}/{rel}"
            self.fs.makedirs(destination.rsplit("/", 1)[0], exist_ok=True)
            self.fs.put_file(str(self.local / rel), destination)
            state[rel] = {"local": list(here), "remote": _remote_version(self.fs.info(destination))}
            changed += 1
        for rel in sorted(set(state) - set(local)):
            destination = f"{self.root}/{rel}"
            if self.fs.exists(destination):
                self.fs.rm(destination)
            state.pop(rel)
            changed += 1
        self._save(state)
        return changed
