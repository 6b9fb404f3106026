"""A published snapshot folder as `bench reproduce` reads it: nothing but its own files.

The public golden rows (`public_split.jsonl`), the evidence bundle (`evidence/bundle.json` and its
Parquet files) and the published figures (`leaderboard.json`, `leaderboard.csv`, `pairwise.csv`,
`public_row_scores.csv`, `vendors/<vendor>.json`). A file that is missing or cannot be read is an
input error naming the file; a Parquet file whose SHA-256 is not the one the bundle's index
records, or one the index does not list, is reported as a difference, not an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench_assets.errors import BenchInputError
from bench_assets.golden.rows import GoldenRow, load_golden_file
from bench_assets.publish.evidence import ATTEMPT_COLUMNS, FORMAT_VERSION, INDEX_FILE, RESULT_COLUMNS, table_path
from bench_assets.rescore.compare import Difference


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise BenchInputError(str(path), [(None, "<file>", "not found: is this a published snapshot folder?")])
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BenchInputError(str(path), [(None, "<file>", f"not JSON: {exc}")]) from None


def _read_table(path: Path, columns: tuple[Any, ...]) -> list[dict[str, Any]]:
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise BenchInputError(str(path), [(None, "<file>", f"not a Parquet file: {exc}")]) from None
    missing = [c.name for c in columns if c.name not in table.column_names]
    if missing:
        raise BenchInputError(
            str(path), [(None, name, "column missing (see evidence.schema.json)") for name in missing]
        )
    return list(table.to_pylist())


@dataclass
class VendorEvidence:
    """One vendor's part of the bundle: its entry in the index and where its two tables are; the
    tables' rows are read when asked for (`load`), one vendor at a time."""

    vendor: str
    settings: dict[str, Any]
    attempts_path: Path
    results_path: Path

    @property
    def level(self) -> str:
        return str(self.settings["evidence_level"])

    def load(self) -> LoadedEvidence:
        return LoadedEvidence(
            self.vendor,
            self.settings,
            _read_table(self.attempts_path, ATTEMPT_COLUMNS),
            _read_table(self.results_path, RESULT_COLUMNS),
        )


@dataclass
class LoadedEvidence:
    """One vendor's evidence read: its settings and its two tables' rows."""

    vendor: str
    settings: dict[str, Any]
    attempts: list[dict[str, Any]]
    results: list[dict[str, Any]]

    @property
    def level(self) -> str:
        return str(self.settings["evidence_level"])


@dataclass
class PublishedFolder:
    """Everything `bench reproduce` reads, from the folder alone."""

    root: Path
    index: dict[str, Any]
    rows: list[GoldenRow]
    board: dict[str, Any]
    vendors: dict[str, VendorEvidence] = field(default_factory=dict)
    integrity: list[Difference] = field(default_factory=list)

    @property
    def snapshot_id(self) -> str:
        return str(self.index["snapshot_id"])

    def text(self, rel: str) -> str:
        """A published file's text; a missing file reads as empty, so each of its figures is reported."""
        path = self.root / rel
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def json(self, rel: str) -> Any:
        return _read_json(self.root / rel)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_folder(root: Path) -> PublishedFolder:
    """Read a published snapshot folder: its index, public rows, leaderboard and each vendor's
    evidence; every Parquet file checked against the SHA-256 the index records for it."""
    root = Path(root)
    if not root.is_dir():
        raise BenchInputError(str(root), [(None, "<dir>", "not a directory")])
    if not (root / INDEX_FILE).is_file() and (root / "leaderboard.json").is_file():
        raise BenchInputError(
            str(root / INDEX_FILE),
            [(None, "<file>", "not found: this snapshot was published without an evidence bundle; re-publish it")],
        )
    index = _read_json(root / INDEX_FILE)
    if not isinstance(index, dict) or index.get("format_version") != FORMAT_VERSION:
        raise BenchInputError(
            str(root / INDEX_FILE),
            [(None, "format_version", f"this bench reads evidence bundles of format {FORMAT_VERSION}")],
        )
    board = _read_json(root / "leaderboard.json")
    if board.get("snapshot_id") != index.get("snapshot_id"):
        raise BenchInputError(
            str(root / "leaderboard.json"),
            [(None, "snapshot_id", f"{board.get('snapshot_id')!r}, but the bundle is {index.get('snapshot_id')!r}")],
        )
    folder = PublishedFolder(root, index, load_golden_file(root / "public_split.jsonl"), board)
    listed = dict(index.get("files") or {})
    on_disk = {p.relative_to(root).as_posix() for p in (root / "evidence").rglob("*.parquet")}
    for rel in sorted(on_disk - set(listed)):
        folder.integrity.append(Difference(rel, None, "(file) not in evidence/bundle.json", None, "present"))
    for rel, record in sorted(listed.items()):
        path = root / rel
        if not path.is_file():
            folder.integrity.append(Difference(rel, None, "(file)", "listed in evidence/bundle.json", None))
        elif _digest(path) != record.get("sha256"):
            folder.integrity.append(Difference(rel, None, "sha256", record.get("sha256"), _digest(path)))
    for vendor, settings in sorted((index.get("vendors") or {}).items()):
        attempts, results = root / table_path("attempts", vendor), root / table_path("results", vendor)
        if not attempts.is_file() and not results.is_file():
            continue  # a vendor with no archived responses has no evidence (not run)
        for path in (attempts, results):
            if not path.is_file():
                raise BenchInputError(str(path), [(None, "<file>", f"not found, though {vendor} has evidence")])
        folder.vendors[vendor] = VendorEvidence(vendor, settings, attempts, results)
    return folder
