"""Publication: the snapshot's site, data files and charts, with a blocking holdout-leak scan."""

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.defs.aggregate import vendor_leaderboard
from bench_assets.defs.checks import partition_check
from bench_assets.defs.code_versions import PUBLISH_CODE_VERSION
from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, WarehouseResource
from bench_assets.errors import HoldoutLeakError


def _failure_classes_md(board: dict[str, Any]) -> str:
    rows = {e["vendor"]: e.get("response_classes", {}) for e in board["vendors"] if e["status"] == "scored"}
    if not rows:
        return "no scored vendors"
    import pandas as pd

    df = pd.DataFrame(rows).T.fillna(0).astype(int)
    return df.loc[:, (df != 0).any(axis=0)].to_markdown()


def _chart_previews(out_dir: Path, board: dict[str, Any], observations: dict) -> dict[str, dg.MetadataValue]:
    """The published charts inside markdown (SVG as a data URI, which the Dagster UI's markdown
    allows for images), so an operator sees them without leaving the UI."""
    from bench_assets.publish import charts

    out: dict[str, dg.MetadataValue] = {}
    for chart in charts.site_charts(board, observations):
        path = out_dir / "charts" / f"{chart.name}.svg"
        if path.exists():
            svg = base64.b64encode(path.read_bytes()).decode()
            out[f"chart_{chart.name}"] = dg.MetadataValue.md(
                f"**{chart.title}**\n\n![{chart.name}](data:image/svg+xml;base64,{svg})\n\n{chart.caption}"
            )
    return out


LEAK_CHECK = "no_holdout_in_published_files"


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="results",
    deps=[vendor_leaderboard],
    kinds={"html", "json", "csv"},
    tags={"bench/stage": "publish"},
    code_version=PUBLISH_CODE_VERSION,
    check_specs=[
        partition_check(
            LEAK_CHECK,
            "published_snapshot",
            snapshots_partitions_def,
            description="The leak guard (`split.leaks`) read every file to publish, in every spelling a reader "
            "would read as the same, and found no holdout, dead holdout or decoy id, query text or golden URL. "
            "On a leak nothing is published and the step fails; which rows leaked is written to the private store only.",
        )
    ],
)
@reports_bench_errors
def published_snapshot(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """The published snapshot under data/publish/<snapshot_id>/: the leaderboard (HTML, JSON with
    its schema, CSV), a page and a JSON per vendor, a drill-down page per public golden row,
    charts, methodology generated from the code, exclusions, errata, limitations, disclosures,
    vendors' replies (their bytes as received), the public split and llms.txt. Nothing is kept if
    any holdout, dead holdout or decoy id, query text or golden URL appears in any file, in any
    spelling a reader would read as the same (`split.leaks`)."""
    from bench_assets.publish.format import leaderboard_markdown
    from bench_assets.publish.snapshot import publish_snapshot

    snapshot_id = context.partition_key
    try:
        done = publish_snapshot(
            duckdb.warehouse(), paths.manifest(snapshot_id), paths.snapshots_dir, paths.publish_dir, paths.private
        )
    except HoldoutLeakError as leak:  # the check fails with the guard's counts, then the step does
        yield dg.AssetCheckResult(
            check_name=LEAK_CHECK,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            description=str(leak),
            metadata={k: dg.MetadataValue.md(v) for k, v in leak.details.items()},
        )
        raise
    board, queries = done.inputs.board, done.inputs.queries
    withheld = sum(1 for q in queries for e in q["vendors"] for r in e["results"] if r.withheld)
    yield dg.MaterializeResult(
        check_results=[
            dg.AssetCheckResult(
                check_name=LEAK_CHECK,
                passed=True,
                description=f"no holdout in the {len(done.files)} published files",
                metadata={"files": len(done.files), **done.leak_guard_counts},
            )
        ],
        metadata={
            "dagster/row_count": len(done.files),
            "index": dg.MetadataValue.path(str(done.out_dir / "index.html")),
            "leaderboard": dg.MetadataValue.md(leaderboard_markdown(board)),
            "failure_classes": dg.MetadataValue.md(_failure_classes_md(board)),
            "vendor_pages": sum(1 for e in board["vendors"] if e["status"] == "scored"),
            "public_rows": done.inputs.split_counts["public"],
            "query_pages": len(queries),
            "results_withheld_as_holdout": withheld,
            "charts": sum(1 for p in done.files if p.suffix == ".svg"),
            "holdout_leaks": 0,
            "lifecycle": done.guard.publish_as,
            "leak_guard": dg.MetadataValue.json(done.leak_guard_counts),
            "replies": dg.MetadataValue.json(
                {v: {"file": r.filename, "sha256": r.sha256} for v, r in sorted(done.inputs.replies.items())}
            ),
            **_chart_previews(done.out_dir, board, done.inputs.ttr_observations),
        },
    )
