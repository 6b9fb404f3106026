"""Vendor review: the packets that freeze a snapshot before publication, next quarter's rotation
plan, and the next quarter drawn from it."""

from collections.abc import Iterator
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from bench_assets.defs.aggregate import vendor_leaderboard
from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import register_snapshot_partitions, snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, WarehouseResource
from bench_assets.manifest import load_manifest

if TYPE_CHECKING:
    import pandas as pd


def _md(df: "pd.DataFrame", empty: str) -> dg.MetadataValue:
    return dg.MetadataValue.md(df.to_markdown(index=False) if len(df) else empty)


FREEZE_CONFIG = {"ops": {"review_packets": {"config": {"freeze": True}}}}


class ReviewPacketsConfig(dg.Config):
    """Sending the packets freezes the snapshot, so it is never a side effect of "Materialize all"."""

    freeze: bool = Field(
        default=False,
        description="true: send the packets and freeze the snapshot (draft → frozen). Left false, as "
        '"Materialize all" leaves it, the step sends nothing, freezes nothing and says so.',
    )


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="review",
    deps=[vendor_leaderboard],
    kinds={"json"},
    output_required=False,  # without `freeze: true` nothing is sent, and nothing is materialized
)
@reports_bench_errors
def review_packets(
    context: dg.AssetExecutionContext, config: ReviewPacketsConfig, paths: BenchPaths, duckdb: WarehouseResource
) -> Iterator[dg.MaterializeResult]:
    """One review packet per vendor, written to the private store with the date it is sent: the
    vendor's public rows, its raw responses and scores on them, its plan, and only aggregates for
    the holdout. Writing them freezes the snapshot (draft → frozen), so it runs only with the
    config `freeze: true` (`bench review send`, or the launchpad); "Materialize all" leaves it
    alone. Publication then waits until every vendor has had its packet for `review.business_days`
    US business days. A packet whose content did not change keeps its original date; a changed one
    is sent again and its clock restarts."""
    from bench_assets.aggregate.leaderboard import current_leaderboard
    from bench_assets.review.business_days import today
    from bench_assets.review.packets import send_packets
    from bench_assets.storage import lifecycle

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    lifecycle.refuse_if_published(warehouse, snapshot_id, "review_packets")
    if not config.freeze:
        context.log.warning(
            f"review_packets: nothing sent, {snapshot_id} not frozen. Sending the packets freezes the snapshot; "
            "launch it with the config `freeze: true` (bench review send, or the launchpad: "
            "ops: {review_packets: {config: {freeze: true}}})"
        )
        return
    manifest = paths.manifest(snapshot_id)
    sent = send_packets(warehouse, manifest, current_leaderboard(warehouse, manifest), paths.private, today())
    df = sent.records
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(df),
            "status": lifecycle.FROZEN,
            "sent_today": dg.MetadataValue.json(sent.resent),
            "packets": _md(
                df[["vendor", "sent_on", "opens_on", "public_rows", "responses"]] if len(df) else df, "no vendors"
            ),
            "publishable_from": str(max(df["opens_on"])) if len(df) else "—",
            "private_dir": str(sent.out_dir),
        }
    )


@dg.asset(partitions_def=snapshots_partitions_def, group_name="review", deps=[vendor_leaderboard], kinds={"yaml"})
@reports_bench_errors
def rotation_plan(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource, gateway: VendorGateway
) -> dg.MaterializeResult:
    """Next quarter's rotation, for review: 25 % of each cohort retires (each side of the split its
    own 25 %, so the cohort keeps its holdout share), drawn with a bias toward strata where vendor
    scores saturate, each group replaced from its stratum's candidate pool; the replacements, next
    quarter's new cohort, are split 70/30 within every stratum by the key. Written to the private
    store (it names holdout rows); nothing is rewritten until an operator applies it to the next
    snapshot's golden set. A windowed registry's stratum (the Federal Register) retires whole, its
    replacements the documents published since its last draw (asked for, and archived, here)."""
    import pandas as pd

    from bench_assets.golden.registry_window import draw_window, windowed_registries
    from bench_assets.review.business_days import today
    from bench_assets.review.quarter import next_snapshot_id
    from bench_assets.review.rotation import family_snapshots, plan_next_quarter

    snapshot_id = context.partition_key
    warehouse, manifest = duckdb.warehouse(), paths.manifest(snapshot_id)
    window = None
    if windowed_registries(manifest):
        window = draw_window(
            warehouse,
            manifest,
            family_snapshots(warehouse, snapshot_id),
            next_snapshot_id(snapshot_id),
            today(),
            lambda url: gateway.url(url, manifest.mode),
        )
    plan, path = plan_next_quarter(warehouse, manifest, paths.private, today(), window=window)
    cohorts = pd.DataFrame(
        [{"cohort": c, **{k: v for k, v in d.items() if k != "retired_by_stratum"}} for c, d in plan.cohorts.items()]
    )
    strata = pd.DataFrame(
        [
            {"stratum": s, "saturation": round(v, 3), "retired": sum(1 for r in plan.retire if r["stratum"] == s)}
            for s, v in sorted(plan.saturation.items())
        ]
    )
    new_cohort = (
        pd.DataFrame(plan.replacements, columns=["stratum", "takes_split"])
        .groupby(["stratum", "takes_split"])
        .size()
        .unstack(fill_value=0)
    )  # counts only: the plan file names the rows
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(plan.retire),
            "plan_file": dg.MetadataValue.path(str(path)),
            "cohorts": _md(cohorts, "no rows"),
            "strata": _md(strata, "no scores yet"),
            "replacements": len(plan.replacements),
            "new_cohort": dg.MetadataValue.md(new_cohort.to_markdown() if len(new_cohort) else "no replacements"),
        }
    )


@dg.asset(partitions_def=snapshots_partitions_def, group_name="review", deps=[vendor_leaderboard], kinds={"yaml"})
@reports_bench_errors
def next_quarter(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource, gateway: VendorGateway
) -> dg.MaterializeResult:
    """The quarter after this snapshot, drawn in one step (`review.quarter`): the rotation planned
    by the one planner (25 % of each cohort, biased toward saturated strata) and applied, the
    replacements drawn with their content from the candidate pool, the next golden set written to
    the private store and the next manifest (vendors, plans and prices carried over) written for
    review; the next snapshot and its vendors are added as partitions. A windowed registry's stratum
    (the Federal Register) is drawn whole from the documents published since its last draw. Refuses,
    naming each stratum and its shortfall, when the pool cannot replace what the plan retires."""
    import pandas as pd

    from bench_assets.review.business_days import today
    from bench_assets.review.quarter import draw_next_quarter

    mode = paths.manifest(context.partition_key).mode
    drawn = draw_next_quarter(
        duckdb.warehouse(),
        paths.snapshots_dir,
        paths.private,
        context.partition_key,
        today(),
        rewrite=lambda url: gateway.url(url, mode),
    )
    manifest = load_manifest(drawn.manifest_path)
    register_snapshot_partitions(context.instance, drawn.snapshot_id, manifest.vendors)
    return dg.MaterializeResult(
        metadata={
            "next_snapshot": drawn.snapshot_id,
            "manifest": dg.MetadataValue.path(str(drawn.manifest_path)),
            "plan_file": dg.MetadataValue.path(str(drawn.plan_path)),
            "carried_over": drawn.carried_over,
            "new_rows": drawn.new_rows,
            "biased_by_scores": drawn.scored,
            "to_renew": ", ".join(drawn.to_renew),
            "rotation_by_stratum": _md(pd.DataFrame(drawn.by_stratum), "no rows"),
        }
    )
