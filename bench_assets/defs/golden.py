"""Golden truth: the snapshot's golden rows, their verification, and dead rows' replacement (with
the daily schedule that keeps replacing them)."""

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

import dagster as dg

from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import SNAPSHOTS_PARTITIONS_NAME, snapshots_partitions_def
from bench_assets.defs.resources import (
    BenchPaths,
    VendorGateway,
    WarehouseResource,
    bench_paths_from_env,
    warehouse_from_env,
)
from bench_assets.defs.snapshots import snapshot_manifest

if TYPE_CHECKING:
    import pandas as pd

VERIFIED_CHECK = "every_golden_row_verified"
REGISTRIES_CHECK = "every_registry_gave_candidates"
DEAD_ROW_CHECK = "dead_rows_replaced_within_7_days"


def _md(df: "pd.DataFrame", empty: str = "none") -> dg.MetadataValue:
    return dg.MetadataValue.md(df.to_markdown(index=False) if len(df) else empty)


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="golden",
    deps=[snapshot_manifest],
    kinds={"duckdb"},
    check_specs=[
        dg.AssetCheckSpec(
            REGISTRIES_CHECK,
            asset="golden_rows",
            description="Every registry of a registry-sourced snapshot gave candidate rows (a registry that "
            "was down, rate-limited, changed its format or returned incomplete records gives none).",
        )
    ],
)
@reports_bench_errors
def golden_rows(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource, gateway: VendorGateway
) -> dg.MaterializeResult:
    """Golden truth rows of the snapshot (registry, hand-verified or planted), each with stratum,
    cohort, provenance, verification record and task. Registry rows are drawn (keyed by the split
    secret) from the registries' records, every registry response archived in `registry_responses`.
    A malformed row fails the load with its file, line and field, and nothing is written."""
    import pandas as pd

    from bench_assets.golden.registry_source import registry_golden
    from bench_assets.golden.sources import golden_source_rows
    from bench_assets.golden.store import golden_frame
    from bench_assets.split.assign import split_key
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "golden_rows")  # before the private golden file is rewritten
    manifest = paths.manifest(snapshot_id)
    registry = None
    if manifest.golden.source == "registry":
        key = split_key(manifest.split.key_env, manifest.mode)
        registry = registry_golden(manifest, paths.private, warehouse, lambda u: gateway.url(u, manifest.mode), key)
    path, numbered = golden_source_rows(manifest, paths.private, registry.rows if registry else None)
    df = golden_frame(snapshot_id, numbered, str(path))
    warehouse.replace_rows("golden_rows", df, {"snapshot_id": snapshot_id})
    counts = df.groupby(["stratum", "task_type"]).size().unstack(fill_value=0)
    report = pd.DataFrame(registry.report if registry else [])
    silent = registry.silent_registries if registry else []
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(df),
            "strata": len(counts),
            "source": str(path),
            "rows_by_stratum": dg.MetadataValue.md(counts.to_markdown()),
            "registry_candidates": _md(report, "not registry-sourced"),
            "registry_candidates_json": dg.MetadataValue.json(registry.report if registry else []),
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=REGISTRIES_CHECK,
                passed=not silent,
                severity=dg.AssetCheckSeverity.WARN,
                description=f"no candidate rows from {', '.join(silent)}: see registry_responses"
                if silent
                else "every registry gave candidate rows"
                if registry
                else "not registry-sourced",
                metadata={"registries_without_candidates": dg.MetadataValue.json(silent)},
            )
        ],
    )


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="golden",
    deps=[golden_rows],
    kinds={"duckdb"},
    check_specs=[
        dg.AssetCheckSpec(
            VERIFIED_CHECK,
            asset="golden_verifications",
            blocking=True,
            description="Every golden row was fetched and its facts found on its page.",
        )
    ],
)
@reports_bench_errors
def golden_verifications(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource, gateway: VendorGateway
) -> dg.MaterializeResult:
    """Each golden row checked against its live page before any vendor is called: the page
    answers 200 and carries the row's title, phrases, cells, numbers or answer. Failures are
    recorded as evidence; the blocking check stops the fetch while any row fails."""
    import pandas as pd

    from bench_assets.golden.store import load_golden_rows
    from bench_assets.golden.verify import failure_report, verification_frame, verify_rows
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "golden_verifications")  # before any page is fetched
    manifest = paths.manifest(snapshot_id)
    rows = load_golden_rows(warehouse, snapshot_id)
    results = verify_rows(rows, lambda url: gateway.url(url, manifest.mode), manifest.golden.contact)
    warehouse.replace_rows(
        "golden_verifications", verification_frame(snapshot_id, results), {"snapshot_id": snapshot_id}
    )
    failed = sum(not v.passed for v in results)
    # Dagster's event log is not the private store: public rows by id, holdout rows (and rows not
    # yet split: verification comes first) only as counts; the rest stays in DuckDB
    public, counts = failure_report(results, {r.id: r.stratum for r in rows}, warehouse.split(snapshot_id))
    details: dict[str, dg.MetadataValue | str] = (
        {"failed_rows": "none"}
        if not failed
        else {
            "failed_by_stratum": _md(pd.DataFrame(counts).fillna(0).convert_dtypes()),
            "failed_public_rows": _md(
                pd.DataFrame(public[:20]), "none (holdout rows, and rows before the split, are counted only)"
            ),
            "details": f"every failed row with its failures: DuckDB table golden_verifications "
            f"(snapshot_id = '{snapshot_id}' AND NOT passed)",
        }
    )
    return dg.MaterializeResult(
        metadata={"dagster/row_count": len(results), "passed": len(results) - failed, "failed": failed},
        check_results=[
            dg.AssetCheckResult(
                check_name=VERIFIED_CHECK,
                passed=not failed,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata=details,
                description=f"{failed} of {len(results)} golden rows failed verification"
                if failed
                else f"all {len(results)} golden rows verified",
            )
        ],
    )


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="golden",
    deps=[golden_verifications, "query_split"],
    kinds={"duckdb"},
    check_specs=[
        dg.AssetCheckSpec(
            DEAD_ROW_CHECK,
            asset="dead_golden_rows",
            description="Every dead golden row is replaced: a warning from day 5 "
            "without a replacement, a failure after day 7.",
        )
    ],
)
@reports_bench_errors
def dead_golden_rows(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource, gateway: VendorGateway
) -> dg.MaterializeResult:
    """Golden rows that failed verification, marked dead with the date, each replaced by a verified
    candidate of the same stratum and task type that takes its side of the split. The replacement
    is adopted into the snapshot's golden rows, verification and split (and the exported public
    split), so the fetch can go ahead; re-running re-applies recorded replacements, never redraws.
    Materialize it after a failed verification, and daily while rows wait for a replacement."""
    from bench_assets.golden.verify import verify_rows
    from bench_assets.review.business_days import today
    from bench_assets.split.replacements import replace_dead_rows
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "dead_golden_rows")
    manifest = paths.manifest(snapshot_id)
    outcome = replace_dead_rows(
        warehouse,
        manifest,
        paths.private,
        paths.snapshots_dir,
        lambda rows: verify_rows(rows, lambda url: gateway.url(url, manifest.mode)),
        today(),
    )
    dead, check, shown = outcome.dead, outcome.check, outcome.shown  # Dagster shows public rows only
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(dead),
            "replaced": int(dead["replacement_row_id"].notna().sum()),
            "waiting": int(dead["replacement_row_id"].isna().sum()),
            "note": outcome.note or "—",
            "dead_rows_by_stratum": _md(shown.by_stratum),
            "public_dead_rows": _md(shown.public),
            "details": f"every dead row: DuckDB table dead_rows (snapshot_id = '{snapshot_id}')",
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=DEAD_ROW_CHECK,
                passed=check.passed,
                description=check.description,
                severity=dg.AssetCheckSeverity.ERROR if check.severity == "ERROR" else dg.AssetCheckSeverity.WARN,
                metadata={
                    "days_without_replacement": dg.MetadataValue.json(shown.public_days),
                    "holdout_days_without_replacement_by_stratum": dg.MetadataValue.json(shown.private_days_by_stratum),
                },
            )
        ],
    )


# ##### THE DAILY DEAD-ROW CHECK

DEAD_ROWS_CRON = "0 6 * * *"  # daily, 06:00 UTC

dead_rows_job = dg.define_asset_job(
    "dead_rows_job",
    selection=[dead_golden_rows],
    partitions_def=snapshots_partitions_def,
    description="One snapshot's dead golden rows: replacements drawn, and the day-5 warn / day-7 fail check "
    "evaluated (launched daily by dead_rows_schedule).",
)


def dead_row_run_requests(duckdb: WarehouseResource, day: date, known: set[str] | None = None) -> list[dg.RunRequest]:
    """One run request per snapshot not yet published that has a dead row without a replacement,
    or a golden row failing verification (not yet recorded as dead), keyed by snapshot and day.
    `known`: the registered `snapshots` partitions (others cannot be launched)."""
    from bench_assets.golden.dead_rows import snapshots_awaiting_replacement

    return [
        dg.RunRequest(
            run_key=f"{snapshot_id}@{day.isoformat()}",
            partition_key=snapshot_id,
            tags={"bench/dead_rows_check": day.isoformat()},
        )
        for snapshot_id in snapshots_awaiting_replacement(duckdb.warehouse())
        if known is None or snapshot_id in known
    ]


def dead_rows_schedule(duckdb: WarehouseResource) -> dg.ScheduleDefinition:
    """The daily dead-row schedule, reading the warehouse `duckdb` (bound when defined, as the
    sentinel probe schedule's is: the code location binds the same warehouse as its assets')."""

    @dg.schedule(
        name="dead_rows_schedule",
        cron_schedule=DEAD_ROWS_CRON,
        job=dead_rows_job,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Daily: materializes dead_golden_rows for every snapshot not yet published with a dead "
        "golden row awaiting its replacement, so the check warns from day 5 and fails after "
        "day 7 without anyone having to remember. Running by default.",
    )
    def dead_rows_daily(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
        tick = context.scheduled_execution_time or datetime.now(UTC)
        try:
            known = set(context.instance.get_dynamic_partitions(SNAPSHOTS_PARTITIONS_NAME))
        except dg.DagsterInvariantViolationError:  # evaluated without an instance: launch what the warehouse says
            known = None
        requests = dead_row_run_requests(duckdb, tick.date(), known)
        return requests or dg.SkipReason(f"no snapshot awaiting a dead-row replacement on {tick.date().isoformat()}")

    return dead_rows_daily


dead_rows_daily = dead_rows_schedule(warehouse_from_env(bench_paths_from_env()))
