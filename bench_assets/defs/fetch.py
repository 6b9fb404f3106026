"""Vendor fetch: every golden row sent to one vendor, every attempt archived as evidence."""

import dagster as dg

from bench_assets.defs.checks import check_result, partition_check
from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.golden import golden_verifications
from bench_assets.defs.partitions import snapshot_and_vendor, snapshot_vendor_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, VendorKeys, WarehouseResource
from bench_assets.defs.split import decoy_queries, query_split

FETCH_CHECK = "every_row_answered_or_classified"


@dg.asset(
    partitions_def=snapshot_vendor_partitions_def,
    group_name="vendors",
    deps=[golden_verifications, query_split, decoy_queries],
    kinds={"duckdb"},
    tags={"bench/stage": "fetch"},
    check_specs=[
        partition_check(
            FETCH_CHECK,
            "vendor_responses",
            snapshot_vendor_partitions_def,
            description="Every row (query x capability) the partition had to send has exactly one final "
            "archived attempt, an answer or a classified failure (timeout, connection error, not sent and why): "
            "nothing dropped, nothing counted twice.",
        )
    ],
)
@reports_bench_errors
def vendor_responses(
    context: dg.AssetExecutionContext,
    paths: BenchPaths,
    duckdb: WarehouseResource,
    gateway: VendorGateway,
    vendor_keys: VendorKeys,
) -> dg.MaterializeResult:
    """Raw vendor responses for one snapshot x vendor: the exact request (secrets redacted), status,
    headers, body, latency and time of every attempt. Archived per response in the partition's own
    DuckDB file, then loaded into the warehouse; a re-run never pays twice for a response it has.
    A run that sends requests records the code, Python, package and adapter versions and the input
    files' SHA-256 it ran with (`fetch_versions`). It logs its progress as it goes (rows done of the
    rows to send, this run's spend, answers not ok by class) and reports this run's spend, not the
    archive's."""
    import pandas as pd

    from bench_assets.aggregate.checks import Finding, fetch_completeness
    from bench_assets.fetch.partition import fetch_vendor_partition, unpriced_unit_error
    from bench_assets.fetch.versions import record_fetch_versions
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id, vendor = snapshot_and_vendor(context)
    manifest = paths.manifest(snapshot_id)
    warehouse = duckdb.warehouse()
    where = {"snapshot_id": snapshot_id, "vendor": vendor}
    refuse_if_published(warehouse, snapshot_id, "vendor_responses")  # before any vendor is paid
    if vendor not in manifest.vendors:
        excluded = {e.vendor: e.reason for e in manifest.excluded}
        warehouse.replace_rows("raw_responses", pd.DataFrame(), where)
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": 0,
                "status": f"excluded: {excluded[vendor]}" if vendor in excluded else "not configured in the manifest",
            },
            check_results=[check_result(FETCH_CHECK, Finding(True, "vendor not configured: no rows to send"))],
        )
    spec = manifest.vendors[vendor]
    done = fetch_vendor_partition(
        warehouse,
        manifest,
        vendor,
        paths.private,
        lambda u: gateway.url(u, manifest.mode),
        gateway.api_key(vendor, manifest.mode, vendor_keys, key_env=spec.key_env),
        log=context.log.info,
    )
    if done.stats.unpriced_units:  # stopped: the archive keeps every attempt, the warehouse is not touched
        raise unpriced_unit_error(paths.manifest_path(snapshot_id), vendor, done.stats)
    rows = done.rows  # the archive, copied into the warehouse under the partition's lease
    with warehouse.session():  # the run's record and the completeness check's read at one opening of the file
        versions = record_fetch_versions(warehouse, manifest, vendor, paths.home, paths.private, done.stats.sent)
        finals = warehouse.query_df(
            "SELECT query_id, capability, attempt, http_status, transport_error FROM raw_responses "
            "WHERE snapshot_id = ? AND vendor = ? AND final",
            [snapshot_id, vendor],
        )
    stats = done.stats
    completeness = fetch_completeness({(i.query_id, i.capability) for i in done.items}, finals)
    return dg.MaterializeResult(
        check_results=[check_result(FETCH_CHECK, completeness)],
        metadata={
            "dagster/row_count": rows,
            "queries": len(done.items),
            "decoys": sum(i.role == "decoy" for i in done.items),
            "sent_this_run": stats.sent,
            "reused_from_archive": stats.skipped_archived,
            "taken_back_from_warehouse": done.seeded,
            "attempts_this_run": stats.attempts,
            "retries_this_run": stats.retries,
            # what this run sent and was billed; the partition's archive (every run) beside it
            "spend_this_run_usd": round(stats.spend_usd, 6),
            "spend_in_archive_usd": round(stats.archive_spend_usd, 6),
            **(
                {"spend_note": f"nothing sent: all {stats.skipped_archived} rows already archived"}
                if stats.sent == 0
                else {}
            ),
            "not_ok_this_run": dg.MetadataValue.json({k: v for k, v in stats.final_by_class.items() if k != "ok"}),
            "spend_ceiling_stops": stats.ceiling_stops,
            "wall_seconds": round(stats.wall_seconds, 2),
            "final_status_counts": dg.MetadataValue.json(done.final_status_counts),
            # a copy typed by its items: Mapping's key type is invariant, and these keys are Literals
            "endpoints": dg.MetadataValue.json(dict(spec.endpoints.items())),
            "plan": spec.plan,
            "code_commit": (versions or {}).get("code", {}).get("commit", "unchanged: nothing was sent"),
        },
    )
