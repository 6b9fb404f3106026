"""Scores of one vendor partition, re-derived from the archived raw responses."""

import dagster as dg

from bench_assets.defs.checks import check_result, partition_check
from bench_assets.defs.code_versions import SCORING_CODE_VERSION
from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.fetch import vendor_responses
from bench_assets.defs.partitions import snapshot_and_vendor, snapshot_vendor_partitions_def
from bench_assets.defs.resources import BenchPaths, WarehouseResource

SCORES_CHECK = "every_row_scored_once"


@dg.asset(
    partitions_def=snapshot_vendor_partitions_def,
    group_name="vendors",
    deps=[vendor_responses],
    kinds={"duckdb"},
    tags={"bench/stage": "score"},
    code_version=SCORING_CODE_VERSION,
    check_specs=[
        partition_check(
            SCORES_CHECK,
            "vendor_scores",
            snapshot_vendor_partitions_def,
            description="Every golden row of the snapshot has exactly one verdict for the vendor, in a known "
            "response class: none missing, none scored twice, none for a row that is not golden.",
        )
    ],
)
@reports_bench_errors
def vendor_scores(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource
) -> dg.MaterializeResult:
    """Per-row verdicts for one snapshot x vendor: the response class (ok, empty, blocked, auth,
    quota, server, timeout, malformed, rejected, unsupported), hit@1/3/5/10, extraction fidelity,
    the answer rows' rubric score and rule, correctness and billed cost, computed deterministically
    from archived responses only; a failed response is scored, as not correct."""
    import pandas as pd

    from bench_assets.aggregate.checks import Finding, scores_completeness
    from bench_assets.score.partition import score_vendor_partition

    snapshot_id, vendor = snapshot_and_vendor(context)
    manifest = paths.manifest(snapshot_id)
    warehouse = duckdb.warehouse()
    where = {"snapshot_id": snapshot_id, "vendor": vendor}
    if vendor not in manifest.vendors:
        for table in ("row_scores", "response_results"):
            warehouse.replace_rows(table, pd.DataFrame(), where)
        return dg.MaterializeResult(
            metadata={"status": "not scored: vendor not configured", "dagster/row_count": 0},
            check_results=[check_result(SCORES_CHECK, Finding(True, "vendor not configured: nothing to score"))],
        )
    scores, results = score_vendor_partition(warehouse, manifest, vendor)
    with warehouse.session():  # the writes and the completeness check's read at one opening of the file
        warehouse.replace_rows("row_scores", scores, where)
        warehouse.replace_rows("response_results", results, where)
        golden = warehouse.rows("golden_rows", snapshot_id, columns=["row_id"])["row_id"]
    supported = scores[scores["response_class"] != "unsupported"]
    answers = supported.loc[supported["task_type"] == "answer", "answer_score"].astype(float)
    return dg.MaterializeResult(
        check_results=[check_result(SCORES_CHECK, scores_completeness(golden, scores))],
        metadata={
            "dagster/row_count": len(scores),
            "results_rows": len(results),
            "response_classes": dg.MetadataValue.json(
                {k: int(v) for k, v in scores["response_class"].value_counts().to_dict().items()}
            ),
            "correct_rate_by_task": dg.MetadataValue.md(
                supported.groupby("task_type")["correct"].mean().astype(float).round(3).to_frame().to_markdown()
            ),
            "spend_usd": round(float(scores["billed_usd"].sum()), 6),
            **({"answer_score_mean": round(float(answers.mean()), 3)} if len(answers) else {}),
        },
    )
