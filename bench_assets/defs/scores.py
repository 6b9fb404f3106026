"""Scores of one vendor partition, re-derived from the archived raw responses."""


import dagster as dg
import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.defs.fetch import vendor_responses
from bench_assets.defs.golden import load_golden_from_warehouse
from bench_assets.defs.partitions import snapshot_and_vendor, snapshot_vendor_partitions_def
from bench_assets.defs.resources import BenchPaths
from bench_assets.scoring import score_partition


@dg.asset(partitions_def=snapshot_vendor_partitions_def, group_name="vendors", deps=[vendor_responses],
          kinds={"duckdb"}, tags={"bench/stage": "score"})
def vendor_scores(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """Per-row verdicts for one snapshot x vendor: the response class (ok, empty, blocked, auth,
    quota, server, timeout, malformed, rejected, unsupported), hit@1/3/5/10, extraction fidelity,
    the answer rows' rubric score and rule, correctness and billed cost, computed deterministically
    from archived responses only; a failed response is scored, as not correct."""
    snapshot_id, vendor = snapshot_and_vendor(context)
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    where = {"snapshot_id": snapshot_id, "vendor": vendor}
    if vendor not in manifest.vendors:
        for table in ("row_scores", "response_results"):
            warehouse.replace_rows(table, pd.DataFrame(), where)
        return dg.MaterializeResult(metadata={"status": "not scored: vendor not configured", "dagster/row_count": 0})
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    raw = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ?", [snapshot_id, vendor])
    scores, results = score_partition(snapshot_id, vendor, get_adapter(manifest.vendors[vendor].adapter), manifest,
                                      rows, dict(zip(split_df["row_id"], split_df["split"])), raw)
    warehouse.replace_rows("row_scores", scores, where)
    warehouse.replace_rows("response_results", results, where)
    classes = scores["response_class"].value_counts().to_dict()
    supported = scores[scores["response_class"] != "unsupported"]
    by_task = supported.groupby("task_type")["correct"].mean().astype(float).round(3)
    answers = supported.loc[supported["task_type"] == "answer", "answer_score"].astype(float)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(scores), "results_rows": len(results),
        "response_classes": dg.MetadataValue.json({k: int(v) for k, v in classes.items()}),
        "correct_rate_by_task": dg.MetadataValue.md(by_task.to_frame().to_markdown()),
        "spend_usd": round(float(scores["billed_usd"].sum()), 6),
        **({"answer_score_mean": round(float(answers.mean()), 3)} if len(answers) else {}),
    })
