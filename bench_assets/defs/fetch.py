"""Vendor fetch: every golden row sent to one vendor, every attempt archived as evidence."""


import asyncio

import dagster as dg
import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.defs.golden import load_golden_from_warehouse
from bench_assets.defs.golden import golden_verifications
from bench_assets.defs.partitions import snapshot_and_vendor, snapshot_vendor_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, VendorKeys, input_errors_as_failures
from bench_assets.defs.split import query_split
from bench_assets.fetch import FetchSettings, PartitionArchive, fetch_partition
from bench_assets.integrity.decoys import decoys_for_snapshot, interleaved_items
from bench_assets.integrity.lifecycle import refuse_if_published
from bench_assets.split import split_key


def verification_failures(paths: BenchPaths, snapshot_id: str) -> tuple[int, int]:
    df = paths.warehouse().query_df(
        "SELECT count(*) FILTER (WHERE NOT passed) AS failed, count(*) AS total FROM golden_verifications "
        "WHERE snapshot_id = ?", [snapshot_id])
    return int(df["failed"][0]), int(df["total"][0])


@dg.asset(partitions_def=snapshot_vendor_partitions_def, group_name="vendors", deps=[golden_verifications, query_split],
          kinds={"duckdb"}, tags={"bench/stage": "fetch"})
def vendor_responses(context: dg.AssetExecutionContext, paths: BenchPaths, gateway: VendorGateway,
                     vendor_keys: VendorKeys) -> dg.MaterializeResult:
    """Raw vendor responses for one snapshot x vendor: the exact request (secrets redacted), status,
    headers, body, latency and time of every attempt. Archived per response in the partition's own
    DuckDB file, then loaded into the warehouse; a re-run never pays twice for a response it has."""
    snapshot_id, vendor = snapshot_and_vendor(context)
    manifest = paths.manifest(snapshot_id)
    refuse_if_published(paths.warehouse(), snapshot_id, "vendor_responses")  # before any vendor is paid
    if vendor not in manifest.vendors:
        excluded = {e.vendor: e.reason for e in manifest.excluded}
        note = f"excluded: {excluded[vendor]}" if vendor in excluded else "not configured in the manifest"
        paths.warehouse().replace_rows("raw_responses", pd.DataFrame(), {"snapshot_id": snapshot_id, "vendor": vendor})
        return dg.MaterializeResult(metadata={"status": note, "dagster/row_count": 0})
    failed, total = verification_failures(paths, snapshot_id)
    if total == 0 or failed:
        raise dg.Failure(f"golden verification of {snapshot_id} has {failed} failed of {total} rows: "
                         "no vendor is called until every row is verified (or replaced)")
    spec = manifest.vendors[vendor]
    adapter = get_adapter(spec.adapter)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split_df = paths.warehouse().query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    with input_errors_as_failures():  # holdout queries go out hidden among decoys, in a keyed order
        decoys = decoys_for_snapshot(manifest, rows, split, paths.private)
        items = interleaved_items(rows, split, decoys, adapter.capabilities, manifest.results_per_query,
                                  split_key(manifest.split.key_env, manifest.mode), snapshot_id, vendor)
    warehouse = paths.warehouse()
    settings = FetchSettings(
        endpoints={cap: gateway.url(url, manifest.mode) for cap, url in spec.endpoints.items()},
        api_key=gateway.api_key(vendor, manifest.mode, vendor_keys, key_env=spec.key_env), options=dict(spec.options),
        rate_limits_per_second={cap: spec.rate_limit(cap) for cap in spec.endpoints}, concurrency=spec.concurrency,
        timeout_seconds=spec.timeout_seconds, max_attempts=spec.max_attempts, prices_usd=spec.prices_usd,
        spend_ceiling_usd=spec.spend_ceiling_usd, backoff_initial=spec.backoff_initial_seconds,
        backoff_max=spec.backoff_max_seconds, retry_after_max=spec.retry_after_max_seconds,
        vendor_rate_per_second=spec.rate_limit_per_second, pacing_dir=warehouse.pacing_dir)
    archive = PartitionArchive(warehouse.partition_file(snapshot_id, vendor), snapshot_id, vendor)
    try:
        stats = asyncio.run(fetch_partition(adapter, items, settings, archive, log=context.log.info))
        raw = archive.con.execute("SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ? "
                                  "ORDER BY query_id, capability, attempt", [snapshot_id, vendor]).df()
    finally:
        archive.close()
    warehouse.replace_rows("raw_responses", raw, {"snapshot_id": snapshot_id, "vendor": vendor})
    finals = raw[raw["final"]]
    status_counts = finals["http_status"].fillna(-1).astype(int).astype(str).replace("-1", "no response").value_counts()
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(raw), "queries": len(items), "decoys": sum(i.role == "decoy" for i in items),
        "sent_this_run": stats.sent,
        "reused_from_archive": stats.skipped_archived, "attempts_this_run": stats.attempts,
        "retries_this_run": stats.retries, "spend_usd": round(stats.spend_usd, 6),
        "spend_ceiling_stops": stats.ceiling_stops, "wall_seconds": round(stats.wall_seconds, 2),
        "final_status_counts": dg.MetadataValue.json(status_counts.to_dict()),
        "endpoints": dg.MetadataValue.json(spec.endpoints), "plan": spec.plan,
    })
