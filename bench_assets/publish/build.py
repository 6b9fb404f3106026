"""What a snapshot's published files are built from, read from each vendor's archive once: the
one assembly that publication and `bench rescore` both consume.

Each vendor's archived responses are read as scoring reads them (`score.partition.read_archive`)
and scored by the code that scored them (`score_rows`); from that one reading come the vendor's
verdict on every golden row (`VendorBuild.scores`), its part of the evidence bundle, its
drill-down entry for every public row, its verdicts listed on its page, and its share of the
integrity files (decoy spend, holdout commitments). Publication renders the site from the builds
with the leaderboard `vendor_leaderboard` recorded, and refuses when a vendor's stored verdicts
are not what its archive scores to now (`stale_vendors`); rescore aggregates the builds' verdicts
again and compares what it renders with what was published.

Vendors are built side by side, each in a process of its own (`runtime.in_processes`, the
heaviest archives first), so no step holds more than a vendor's archive or two at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.errors import NotReadyError
from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.publish.drilldown import row_figures, vendor_entries
from bench_assets.publish.evidence import VendorFiles, final_attempts, read_vendor_evidence
from bench_assets.publish.guard import VendorIntegrity, vendor_integrity
from bench_assets.runtime import collector_paused, give_back_memory, in_processes, worker_count
from bench_assets.runtime.packed import PackedEntries
from bench_assets.runtime.progress import Track, untracked
from bench_assets.score.partition import SCORE_COLUMNS, SCORE_DTYPES, read_archive, score_rows
from bench_assets.split.leaks import LeakGuard
from bench_assets.storage.warehouse import Warehouse


@dataclass
class VendorBuild:
    """One vendor's share of the publication, from its archive: its verdict on every golden row
    (`scores`, as scoring derives it; empty when its fetch is not complete), its part of the
    evidence bundle (`files`: `no_evidence` says why it has none), its drill-down entry for each
    public row (packed until the pages are rendered), its figures on each public row in their
    order (`figures`: `drilldown.row_figures`, for its page, its JSON file and
    `public_row_scores.csv`), and its share of the integrity files."""

    vendor: str
    scores: pd.DataFrame
    files: VendorFiles
    entries: PackedEntries
    figures: list[dict[str, Any]]
    integrity: VendorIntegrity | None = None


def build_vendor(
    manifest: Manifest,
    vendor: str,
    rows: list[GoldenRow],
    split: Mapping[str, str],
    raw: pd.DataFrame,
    guard: LeakGuard,
    commitment_key: bytes | None = None,
) -> VendorBuild | None:
    """One vendor's build from `raw`, every archived attempt of the vendor (all roles); None when
    it has none. `guard` withholds what names a private row; with `commitment_key` its share of
    the integrity files is read too (`guard.vendor_integrity`)."""
    if raw.empty:
        return None
    snapshot_id = manifest.snapshot_id
    spec = manifest.vendors[vendor]
    integrity = vendor_integrity(manifest, vendor, raw, commitment_key) if commitment_key is not None else None
    public = [r for r in rows if split.get(r.id) == "public"]
    try:
        archive = read_archive(
            get_adapter(spec.adapter), spec.prices_usd, rows, raw, f"{snapshot_id}|{vendor}", spec.capabilities
        )
    except NotReadyError as exc:  # its fetch is not complete: it is not scored, so it has no evidence
        empty = pd.DataFrame(columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
        return VendorBuild(vendor, empty, VendorFiles(no_evidence=str(exc)), PackedEntries.pack([], {}), [], integrity)
    scored = score_rows(
        snapshot_id, vendor, manifest.fidelity_weights, manifest.answer_k, rows, dict(split), archive.evidence
    )
    results = scored.results  # each result URL's normalized form, as scoring derived it
    forms = dict(zip(results["url"].tolist(), results["url_normalized"].tolist()))
    guard.learn_url_forms(forms)  # the bundle and the drill-down ask it about these URLs
    evidence = read_vendor_evidence(manifest, vendor, public, archive, guard, forms)
    files = VendorFiles.of(vendor, evidence)
    entries = vendor_entries(manifest, vendor, public, scored, archive, guard, final_attempts(evidence.attempts))
    del evidence
    figures = [row_figures(row, entries[row.id]) for row in public if row.id in entries]
    build = VendorBuild(
        vendor, scored.scores, files, PackedEntries.pack([r.id for r in public], entries), figures, integrity
    )
    del entries, archive, scored, forms
    give_back_memory()
    return build


@dataclass
class SnapshotBuild:
    """Every vendor's build (`VendorBuild`, in vendor order; a vendor without archived responses
    has none), and the golden rows and split they were built against."""

    manifest: Manifest
    rows: list[GoldenRow]
    split: dict[str, str]
    vendors: list[VendorBuild]

    @property
    def public_rows(self) -> list[GoldenRow]:
        return [r for r in self.rows if self.split.get(r.id) == "public"]

    @property
    def scores(self) -> pd.DataFrame:
        """Every vendor's verdict on every golden row, as scoring derives it from the archive."""
        frames = [b.scores for b in self.vendors if len(b.scores)]
        if not frames:
            return pd.DataFrame(columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
        return pd.concat(frames, ignore_index=True)

    @property
    def integrity(self) -> dict[str, VendorIntegrity]:
        return {b.vendor: b.integrity for b in self.vendors if b.integrity is not None}


def build_snapshot(
    warehouse: Warehouse,
    manifest: Manifest,
    rows: list[GoldenRow],
    split: dict[str, str],
    guard: LeakGuard,
    commitment_key: bytes | None = None,
    track: Track = untracked,
) -> SnapshotBuild:
    """Every vendor's build from its own archive, side by side in processes of their own
    (`runtime.in_processes`, `runtime.worker_count` at once), the heaviest archives first;
    `track` follows the builds as they come."""
    snapshot_id = manifest.snapshot_id

    def build(vendor: str) -> VendorBuild | None:
        # its objects form no cycles worth the collector's walks
        with collector_paused():
            raw = warehouse.rows("raw_responses", snapshot_id, vendor=vendor)  # all roles: spend is priced over them
            return build_vendor(manifest, vendor, rows, split, raw, guard, commitment_key)

    vendors = sorted(manifest.vendors)
    sizes = warehouse.public_body_chars(snapshot_id)
    built = track(
        in_processes(vendors, build, worker_count(len(vendors)), lambda v: sizes.get(v, 0)), len(vendors), "vendors"
    )
    return SnapshotBuild(manifest, rows, split, [b for b in built if b is not None])


def stale_vendors(stored: pd.DataFrame, build: SnapshotBuild) -> dict[str, int]:
    """Per vendor, the golden rows whose stored verdict (`row_scores`) is not what its archive
    scores to now (a vendor scored by other code, or its verdicts changed since): empty when every
    stored verdict is the build's."""
    columns = [c for c in SCORE_COLUMNS if c != "snapshot_id"]
    out = {}
    for b in build.vendors:
        mine = stored[stored["vendor"] == b.vendor] if len(stored) else stored
        if b.scores.empty and mine.empty:
            continue
        left = _canonical(mine, columns)
        right = _canonical(b.scores, columns)
        if len(left) != len(right) or not left.equals(right):
            merged = left.merge(right, how="outer", indicator=True)
            differing = set(merged.loc[merged["_merge"] != "both", "row_id"])
            out[b.vendor] = len(differing) or abs(len(left) - len(right))
    return out


def _canonical(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """A vendor's row scores in one shape: scoring's columns and dtypes, sorted by row."""
    return (
        frame[columns]
        .astype({c: t for c, t in SCORE_DTYPES.items() if c in columns})
        .sort_values("row_id")
        .reset_index(drop=True)
    )
