"""The 70/30 public/holdout split per stratum, keyed by a secret."""


import json

import dagster as dg
import pandas as pd

from bench_assets.defs.golden import golden_rows, load_golden_from_warehouse
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, input_errors_as_failures
from bench_assets.integrity.lifecycle import refuse_if_published
from bench_assets.split import assign_split, recorded_split, split_key


def public_split_records(rows, split: dict[str, str]) -> list[dict]:
    """The public rows as published: the whole row, so a researcher can re-score them."""
    return [json.loads(r.model_dump_json()) for r in rows if split[r.id] == "public"]


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[golden_rows], kinds={"duckdb"})
def query_split(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """Which golden rows are public (70 %) and which are holdout (30 %), within every stratum.
    Keyed by the secret in $BENCH_SPLIT_KEY: stable across re-runs, unpredictable without it.
    Once recorded, a row's side never changes: re-materializing keeps every recorded side, and
    only rows never assigned get one (a dead row's replacement takes the dead row's side, as
    `dead_rows` records it). Rows the benchmark's earlier snapshots gave out keep their side
    (holdout if any held them out), so next quarter never publishes this quarter's holdout. The
    public split is exported beside the manifest; the holdout stays in the private store."""
    snapshot_id = context.partition_key
    warehouse = paths.warehouse()
    refuse_if_published(warehouse, snapshot_id, "query_split")
    manifest = paths.manifest(snapshot_id)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    with input_errors_as_failures():
        key = split_key(manifest.split.key_env, manifest.mode)
    # a public row may already be exported and a holdout row sent as holdout: never move either
    recorded = recorded_split(warehouse, snapshot_id)
    split = assign_split(rows, key, manifest.split.public_share, recorded=recorded)
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "row_id": r.id, "stratum": r.stratum, "split": split[r.id]}
                       for r in rows])
    warehouse.replace_rows("query_split", df, {"snapshot_id": snapshot_id})
    public_path = paths.snapshots_dir / snapshot_id / "public_split.jsonl"
    public_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in public_split_records(rows, split)))
    holdout_path = paths.private / "holdout" / f"{snapshot_id}.jsonl"
    holdout_path.parent.mkdir(parents=True, exist_ok=True)
    holdout_path.write_text("".join(r.model_dump_json() + "\n" for r in rows if split[r.id] == "holdout"))
    table = df.groupby(["stratum", "split"]).size().unstack(fill_value=0)
    kept = sum(1 for r in rows if r.id in recorded)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(df), "public": int((df["split"] == "public").sum()),
        "holdout": int((df["split"] == "holdout").sum()), "public_split_file": str(public_path),
        "kept_recorded": kept, "newly_assigned": len(rows) - kept,
        "by_stratum": dg.MetadataValue.md(table.to_markdown()),
    })
