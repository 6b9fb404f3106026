"""Sentinel probes: planted pages, a 6-hourly probe of every vendor, and its evidence.

`sentinel_pages` publishes a batch of pages we control (to the simulator's site, or to a deploy
directory the operator puts online) and records each page's authoritative publish time.
`sentinel_probe_schedule` (running by default) launches `sentinel_probe_job` every 6 hours: for
every snapshot with a sentinel still in its 30-day window, one run that asks each configured
vendor for every page it has not yet returned. The tick's scheduled time travels to the run in
its run config (`probe_at`) and tags, and is the key of everything the run writes, so a re-run
of a tick replaces its rows and pays for nothing twice; a missed tick loses only resolution,
because the next tick probes everything still pending.
"""

from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import dagster as dg
from pydantic import Field

from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import (
    BenchPaths,
    VendorGateway,
    VendorKeys,
    WarehouseResource,
    bench_paths_from_env,
    warehouse_from_env,
)
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.sentinels import PROBE_CRON


@lru_cache(maxsize=32)
def _manifest_at(path: str, mtime_ns: int) -> Manifest:
    return load_manifest(path)


def snapshot_manifest_of(paths: BenchPaths, snapshot_id: str) -> Manifest:
    """The snapshot's manifest, parsed once per version of the file (every tick reads it)."""
    path = paths.manifest_path(snapshot_id)
    if not path.exists():
        return paths.manifest(snapshot_id)  # fails with the manifest's own message
    return _manifest_at(str(path), path.stat().st_mtime_ns)


class SentinelBatchConfig(dg.Config):
    """One batch of sentinel pages to publish."""

    batch_id: str = Field(default="", description="Batch name; default b<publish time> (required in live mode).")
    count: int = Field(default=12, description="Pages in the batch.")
    base_url: str = Field(default="", description="Site the pages live on (required in live mode: a site you control).")
    published_at: str = Field(
        default="",
        description=(
            "ISO-8601 publish time. Simulated: default is the simulator clock's now. Live: leave empty to write the "
            "pages to the deploy directory, then re-materialize with the time they went online to confirm it."
        ),
    )
    deploy_dir: str = Field(
        default="", description="Live mode: where the pages are written (default data/sentinels/<snapshot>)."
    )


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="sentinels",
    kinds={"duckdb", "html"},
    tags={"bench/stage": "sentinels"},
)
@reports_bench_errors
def sentinel_pages(
    context: dg.AssetExecutionContext,
    config: SentinelBatchConfig,
    paths: BenchPaths,
    duckdb: WarehouseResource,
    gateway: VendorGateway,
) -> dg.MaterializeResult:
    """Sentinel pages planted for the snapshot: each has a unique phrase (three invented words)
    that finds it and nothing else, and an authoritative publish time. Simulated mode publishes
    the batch to the simulator's site; live mode writes it to a deploy directory and records
    the publish time the operator confirms. Every batch of the snapshot is kept; publishing the
    same batch again keeps its pages and its confirmed time."""
    from bench_assets.sentinels.pages import parse_utc, plant_batch

    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    batch = plant_batch(
        duckdb.warehouse(),
        manifest.mode,
        snapshot_id,
        batch_id=config.batch_id,
        count=config.count,
        base_url=config.base_url,
        published_at=parse_utc(config.published_at) if config.published_at else None,
        deploy_dir=Path(config.deploy_dir)
        if config.deploy_dir
        else paths.snapshots_dir.parent / "sentinels" / snapshot_id,
        sim_base=gateway.sim_base,
    )
    window_from, window_until = batch.window
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(batch.rows),
            "batch_id": batch.batch_id,
            "mode": manifest.mode,
            "status": f"published {batch.published_at.isoformat()}"
            if batch.published_at
            else f"written to {batch.deploy_dir}: deploy it, then materialize again with published_at = the time it went online",
            "probed_from": dg.MetadataValue.timestamp(window_from) if window_from else "not yet published",
            "probed_until": dg.MetadataValue.timestamp(window_until) if window_until else "not yet published",
            "pages": dg.MetadataValue.md(batch.rows[["sentinel_id", "phrase", "url"]].to_markdown(index=False)),
        }
    )


class ProbeConfig(dg.Config):
    """The ticks a probe run stands for."""

    probe_at: list[str] = Field(
        default=[],
        description=(
            "ISO-8601 scheduled times of the ticks this run probes, in order (sentinel_probe_schedule sets one; a "
            "simulated catch-up may list many). Empty: now (the simulator's clock in simulated mode). Live mode "
            "probes only the latest tick: an older one is superseded by it."
        ),
    )


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="sentinels",
    deps=[sentinel_pages],
    kinds={"duckdb"},
    tags={"bench/stage": "probe"},
)
@reports_bench_errors
def sentinel_probes(
    context: dg.AssetExecutionContext,
    config: ProbeConfig,
    paths: BenchPaths,
    duckdb: WarehouseResource,
    gateway: VendorGateway,
    vendor_keys: VendorKeys,
) -> dg.MaterializeResult:
    """Probe evidence for the snapshot's sentinel pages: at each 6-hourly tick, every vendor is
    asked for the unique phrase of every page it has not yet returned and that is at most 30 days
    old, through its normal adapter and the fetch engine. Each probe is kept with its time,
    vendor, sentinel, found or not, rank, billed cost and the raw response; all attempts stay
    in the snapshot's probe archive. A tick's rows are replaced when it is re-run (nothing is paid
    twice); a missed tick is caught up by the next, which probes everything still pending."""
    from bench_assets.fetch.engine import FetchSettings
    from bench_assets.fetch.plan import fetch_settings
    from bench_assets.sentinels.pages import latest_tick, tick_key
    from bench_assets.sentinels.probes import run_ticks
    from bench_assets.sentinels.ttr import ttr_figures, ttr_markdown

    manifest = snapshot_manifest_of(paths, context.partition_key)
    warehouse = duckdb.warehouse()

    def settings_for(vendor: str, spent_before: float) -> FetchSettings:
        spec = manifest.vendors[vendor]
        return fetch_settings(
            spec,
            lambda u: gateway.url(u, manifest.mode),
            gateway.api_key(vendor, manifest.mode, vendor_keys, key_env=spec.key_env),
            warehouse.pacing_store,
            capabilities=["search"],
            spent_before=spent_before,
        )

    run = run_ticks(warehouse, manifest, config.probe_at, settings_for, gateway.sim_base, log=context.log.warning)
    if not run.ticks:
        latest = tick_key(latest_tick(datetime.now(UTC)))
        return dg.MaterializeResult(
            metadata={"dagster/row_count": 0, "ticks": 0, "status": f"superseded by the tick of {latest}"}
        )
    df = run.rows
    found_now = df[df["found"].astype(bool)].groupby("vendor").size().to_dict() if len(df) else {}
    return dg.MaterializeResult(
        metadata={
            "ticks": len(run.ticks),
            "first_tick": tick_key(run.ticks[0]),
            "last_tick": tick_key(run.ticks[-1]),
            "dagster/row_count": len(df),
            "due": run.due,
            "sent_this_run": sum(s.sent for s in run.stats),
            "reused_from_archive": sum(s.skipped_archived for s in run.stats),
            "found": dg.MetadataValue.json({v: int(n) for v, n in found_now.items()}),
            "spend_usd": round(float(df["billed_usd"].sum()) if len(df) else 0.0, 6),
            "not_probed": dg.MetadataValue.json(run.not_probed),
            "superseded_ticks": dg.MetadataValue.json([tick_key(t) for t in run.superseded]),
            "time_to_retrievability": dg.MetadataValue.md(ttr_markdown(ttr_figures(run.pages, run.history))),
        }
    )


# ##### THE 6-HOURLY SCHEDULE

sentinel_probe_job = dg.define_asset_job(
    "sentinel_probe_job",
    selection=[sentinel_probes],
    partitions_def=snapshots_partitions_def,
    description="One probe tick of one snapshot's sentinel pages (launched by sentinel_probe_schedule).",
)


def probe_run_requests(paths: BenchPaths, duckdb: WarehouseResource, tick: datetime) -> list[dg.RunRequest]:
    """One run request per snapshot with a probe due at `tick`, keyed by snapshot and tick."""
    from bench_assets.sentinels.pages import tick_key
    from bench_assets.sentinels.probes import snapshots_due

    key = tick_key(tick)
    return [
        dg.RunRequest(
            run_key=f"{snapshot_id}@{key}",
            partition_key=snapshot_id,
            run_config=dg.RunConfig(ops={"sentinel_probes": ProbeConfig(probe_at=[tick.isoformat()])}),
            tags={"bench/probe_at": key, "bench/sentinel_probe": snapshot_id},
        )
        for snapshot_id in snapshots_due(duckdb.warehouse(), tick, lambda s: snapshot_manifest_of(paths, s))
    ]


def probe_schedule(paths: BenchPaths, duckdb: WarehouseResource) -> dg.ScheduleDefinition:
    """The 6-hourly probe schedule, reading the manifests at `paths` and the warehouse `duckdb`.

    Both are bound when the schedule is defined rather than as Dagster resources: building
    resources for an evaluation costs a Dagster instance each tick, and the schedule needs nothing
    but this one read. The code location binds the same ones as its assets'."""

    @dg.schedule(
        name="sentinel_probe_schedule",
        cron_schedule=PROBE_CRON,
        job=sentinel_probe_job,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Every 6 hours: one run per snapshot whose sentinel pages some vendor has not yet "
        "returned (within their 30 days). Running by default.",
    )
    def sentinel_probe_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
        from bench_assets.sentinels.pages import parse_utc, tick_key

        tick = parse_utc(context.scheduled_execution_time or datetime.now(UTC))
        requests = probe_run_requests(paths, duckdb, tick)
        return requests or dg.SkipReason(f"no sentinel page due for a probe at {tick_key(tick)}")

    return sentinel_probe_schedule


sentinel_probe_schedule = probe_schedule(bench_paths_from_env(), warehouse_from_env(bench_paths_from_env()))
