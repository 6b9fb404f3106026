"""One vendor partition's fetch, end to end: its items, the engine run, the archived attempts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from bench_assets.adapters import get_adapter
from bench_assets.errors import BenchInputError
from bench_assets.fetch.engine import FetchItem, FetchSettings, FetchStats, fetch_partition
from bench_assets.fetch.plan import fetch_settings, interleaved_items
from bench_assets.fetch.preflight import preflight_spend
from bench_assets.fetch.spend import archived_spend
from bench_assets.golden.store import load_golden_rows
from bench_assets.golden.verify import require_verified
from bench_assets.manifest import Manifest, field_line
from bench_assets.split.assign import split_key
from bench_assets.split.decoys import recorded_decoys
from bench_assets.storage.archive import PartitionArchive
from bench_assets.storage.warehouse import Warehouse


def unpriced_unit_error(manifest_path: Path, vendor: str, stats: FetchStats) -> BenchInputError:
    """What stops a partition whose vendor billed a unit the manifest does not price: the manifest's
    price table named with its line, the units, and what happens on the next run."""
    units = ", ".join(repr(u) for u in sorted(stats.unpriced_units))
    loc = ("vendors", vendor, "prices_usd")
    return BenchInputError(
        str(manifest_path),
        [
            (
                field_line(manifest_path, loc),
                ".".join(loc),
                f"{vendor} billed a response in {units}, which this price table does not price, so its spend (and "
                f"the spend ceiling) could not be known: the fetch stopped ({stats.unpriced_stops} calls not sent, "
                "archived as not sent; every response received is archived). Add the price of each unit from the "
                "vendor's archived pricing page and materialize the partition again: the calls not sent are sent "
                "then, nothing is paid twice",
            )
        ],
    )


@dataclass(frozen=True)
class PartitionFetch:
    """What a partition's fetch sent and archived: its items, its statistics, its archive file, the
    archive's attempts in all and final ones by HTTP status ("no response" when none came), the
    partition's rows in the warehouse once the archive was copied there, and the attempts the
    archive took back from the warehouse before anything was sent (`Warehouse.seed_partition_archive`)."""

    items: list[FetchItem]
    stats: FetchStats
    settings: FetchSettings
    archive: Path
    attempts: int
    final_status_counts: dict[str, int]
    rows: int = 0
    seeded: int = 0


def provider_spend_elsewhere(warehouse: Warehouse, manifest: Manifest, vendor: str) -> float:
    """USD the other configurations of `vendor`'s provider billed in this snapshot (their preflight
    calls and their fetched responses in the warehouse): the spend ceiling is the provider's, so a
    configuration's fetch may spend only what its siblings left."""
    provider = manifest.vendors[vendor].provider
    spent = 0.0
    for sibling in manifest.configurations_of(provider):
        if sibling == vendor:
            continue
        spec = manifest.vendors[sibling]
        adapter = get_adapter(spec.adapter)
        spent += preflight_spend(warehouse, manifest.snapshot_id, sibling, adapter, spec.prices_usd)
        raw = warehouse.rows("raw_responses", manifest.snapshot_id, sibling, order_by="query_id, capability, attempt")
        if len(raw):
            spent += float(archived_spend(adapter, spec.prices_usd, raw).sum())
    return spent


def fetch_vendor_partition(
    warehouse: Warehouse,
    manifest: Manifest,
    vendor: str,
    private_dir: Path,
    url: Callable[[str], str],
    api_key: str,
    log: Callable[[str], None] = lambda m: None,
) -> PartitionFetch:
    """Send every golden row (and the decoys hiding the holdout) to `vendor`, archiving each attempt
    in the partition's own DuckDB file, then copy the archive into the warehouse; items already
    answered are not sent again (never paid twice). Refused (NotReadyError) while any golden row is
    unverified.

    All of it under the partition's lease, one holder at a time on any machine: a second run of
    the partition (a second launch, a Celery step delivered again) waits, then finds every item
    answered and copies nothing new; none opens the archive while another writes or reads it. An
    archive that a failed write left unusable is cleared first (`PartitionArchive`), and one that
    lacks attempts the warehouse holds (lost, cleared) takes them back before anything is sent."""
    snapshot_id = manifest.snapshot_id
    spec = manifest.vendors[vendor]
    adapter = get_adapter(spec.adapter)
    with warehouse.session():  # the partition's inputs at one opening of the file
        require_verified(warehouse, snapshot_id)
        rows = load_golden_rows(warehouse, snapshot_id)
        split = warehouse.split(snapshot_id)
    # holdout queries go out hidden among the decoys the split stage drew, in a keyed order
    holdout = any(s == "holdout" for s in split.values())
    decoys = recorded_decoys(private_dir, snapshot_id) if holdout and manifest.decoys.ratio > 0 else []
    items = interleaved_items(
        rows,
        split,
        decoys,
        spec.capabilities,
        manifest.results_per_query,
        split_key(manifest.split.key_env, manifest.mode),
        snapshot_id,
        vendor,
    )
    siblings = len(manifest.configurations_of(spec.provider)) > 1
    lake = warehouse.lake
    # Configurations of one provider share its spend ceiling: they fetch one at a time (they share
    # its rate limit too, so little is lost), each after reading what the others billed.
    provider_turn = (
        warehouse.partition_lease(snapshot_id, f"@{spec.provider}")
        if siblings and spec.spend_ceiling_usd is not None
        else nullcontext()
    )
    # one fetch of the partition at a time, on whichever machine (a second delivery waits, then pays nothing)
    with provider_turn, warehouse.partition_lease(snapshot_id, vendor):
        # one ceiling for the snapshot and the provider: what its preflight calls and its other
        # configurations billed is taken off it
        spent_before = preflight_spend(warehouse, snapshot_id, vendor, adapter, spec.prices_usd)
        elsewhere = provider_spend_elsewhere(warehouse, manifest, vendor) if siblings else 0.0
        settings = fetch_settings(spec, url, api_key, warehouse.pacing_store, spent_before=spent_before + elsewhere)
        if spent_before and spec.spend_ceiling_usd is not None:
            log(f"preflight spent ${spent_before:.4f} of the ${spec.spend_ceiling_usd} ceiling")
        if elsewhere and spec.spend_ceiling_usd is not None:
            others = ", ".join(v for v in manifest.configurations_of(spec.provider) if v != vendor)
            log(f"{others} spent ${elsewhere:.4f} of {spec.provider}'s ${spec.spend_ceiling_usd} ceiling")
        archive = PartitionArchive(
            warehouse.partition_file(snapshot_id, vendor),
            snapshot_id,
            vendor,
            connector=warehouse.connector,
            also_to=(lambda rows: lake.write_archive_segment(snapshot_id, vendor, rows)) if lake else None,
        )
        try:
            if archive.cleared:
                log(archive.cleared)
            seeded = warehouse.seed_partition_archive(snapshot_id, vendor, archive.con)
            if seeded:
                log(
                    f"{seeded} attempts the warehouse holds were missing from {archive.path}: copied back, not sent again"
                )
            stats = asyncio.run(fetch_partition(adapter, items, settings, archive, log=log))
            attempts, finals = archive.counts()
        finally:
            archive.close()
        # a fetch stopped by an unpriced unit leaves the warehouse untouched (its spend is unknown)
        loaded = 0 if stats.unpriced_units else warehouse.load_partition_archive(snapshot_id, vendor, archive.path)
    return PartitionFetch(items, stats, settings, archive.path, attempts, finals, loaded, seeded)
