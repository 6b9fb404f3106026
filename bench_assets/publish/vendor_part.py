"""A vendor's share of a publication, built from its archive alone: its part of the evidence
bundle and its drill-down entry for every public row.

Publication and `bench rescore` read a vendor's archived responses (16,000 a vendor at 12,600
golden rows), build what the published files need from them, and let them go before the next
vendor's are read: no step holds every vendor's bodies at once. What scoring read from each
final response (`score.partition.read_evidence`) is read once and serves both the bundle and the
drill-down, and each response is parsed once (`publish.parse_once`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bench_assets.adapters.base import Adapter
from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.publish.drilldown import vendor_entries
from bench_assets.publish.evidence import VendorFiles, vendor_files
from bench_assets.publish.guard import VendorIntegrity, vendor_integrity
from bench_assets.publish.memory import give_back_memory
from bench_assets.publish.packed import PackedEntries
from bench_assets.score.partition import RowEvidence
from bench_assets.split.leaks import LeakGuard


@dataclass
class VendorPart:
    """What one vendor gives the published files: its part of the evidence bundle (None: it has
    no archived response) and its drill-down entry per public row (`drilldown.vendor_entries`),
    packed (`publish.packed`) until the pages are rendered."""

    vendor: str
    files: VendorFiles | None
    entries: PackedEntries
    integrity: VendorIntegrity | None = None  # its share of the integrity files, when asked for


def vendor_part(
    manifest: Manifest,
    vendor: str,
    public_rows: list[GoldenRow],
    raw: pd.DataFrame,
    scores: pd.DataFrame,
    results: pd.DataFrame,
    guard: LeakGuard,
    evidence: Mapping[str, RowEvidence] | None = None,
    shared: dict[Any, Any] | None = None,
    adapter: Adapter | None = None,
    verdicts: Mapping[str, Any] | None = None,
    commitment_key: bytes | None = None,
) -> VendorPart:
    """One vendor's part: `raw` every archived attempt of the vendor (all roles), `scores` and
    `results` its row scores and parsed results (at least the public rows'), `guard` the leak
    guard that withholds what names a private row, `evidence` what scoring read from the archive
    per row when the caller has it (`bench rescore` scores the vendor just before) and `adapter`
    the adapter it was read with (`publish.parse_once`: its responses are not parsed again),
    `shared` one copy of each text shown across vendors (`drilldown.vendor_entries`), `verdicts`
    what scoring found for each row from `evidence` (`score.partition.score_rows`). With
    `commitment_key`, its share of the integrity files is read from `raw` too (`guard.vendor_integrity`)."""
    files, read = vendor_files(manifest, vendor, public_rows, raw, guard, evidence, adapter)
    entries = vendor_entries(manifest, vendor, public_rows, scores, results, raw, guard, read, shared, verdicts)
    integrity = vendor_integrity(manifest, vendor, raw, commitment_key) if commitment_key is not None else None
    part = VendorPart(vendor, files, PackedEntries.pack([r.id for r in public_rows], entries), integrity)
    del entries, read
    give_back_memory()
    return part
