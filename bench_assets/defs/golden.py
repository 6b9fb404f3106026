"""Golden truth: the snapshot's manifest, its golden rows, and their verification."""


import hashlib
import json
from datetime import datetime, timezone

import dagster as dg
import pandas as pd

from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, input_errors_as_failures
from bench_assets.golden import GoldenRow, dump_golden_rows, load_numbered_golden_file
from bench_assets.integrity.lifecycle import refuse_if_published, snapshot_status
from bench_assets.simulator.corpus import demo_golden_rows
from bench_assets.split import recorded_split
from bench_assets.verify import failure_report, verify_rows


def load_golden_from_warehouse(paths: BenchPaths, snapshot_id: str) -> list[GoldenRow]:
    df = paths.warehouse().query_df(
        "SELECT row_id, cohort, stratum, provenance, task_json, verification_json FROM golden_rows "
        "WHERE snapshot_id = ? ORDER BY source_line", [snapshot_id])
    if df.empty:
        raise dg.Failure(f"no golden rows for {snapshot_id}: materialize golden_rows first")
    return [GoldenRow.model_validate({"id": r.row_id, "cohort": r.cohort, "stratum": r.stratum,
                                      "provenance": r.provenance, "task": json.loads(r.task_json),
                                      "verification": json.loads(r.verification_json)})
            for r in df.itertuples(index=False)]


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", kinds={"duckdb", "yaml"})
def snapshot_manifest(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """The snapshot's pinned manifest (mode, vendors, plans, prices, limits, exclusions, k values,
    fidelity weights), validated and recorded with its SHA-256 so every number traces back to it."""
    snapshot_id = context.partition_key
    refuse_if_published(paths.warehouse(), snapshot_id, "snapshot_manifest")
    path = paths.manifest_path(snapshot_id)
    manifest = paths.manifest(snapshot_id)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "mode": manifest.mode, "manifest_path": str(path),
                        "manifest_sha256": digest, "manifest_json": manifest.model_dump_json(),
                        "status": snapshot_status(paths.warehouse(), snapshot_id),  # lifecycle state is kept
                        "registered_at": datetime.now(timezone.utc)}])
    paths.warehouse().replace_rows("snapshots", df, {"snapshot_id": snapshot_id})
    return dg.MaterializeResult(metadata={
        "mode": manifest.mode, "manifest_sha256": digest, "vendors": dg.MetadataValue.json(sorted(manifest.vendors)),
        "excluded": dg.MetadataValue.json([e.vendor for e in manifest.excluded]),
    })


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[snapshot_manifest], kinds={"duckdb"})
def golden_rows(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """Golden truth rows of the snapshot (registry, hand-verified or planted), each with stratum,
    cohort, provenance, verification record and task. A malformed row fails the load with its
    file, line and field, and nothing is written."""
    snapshot_id = context.partition_key
    refuse_if_published(paths.warehouse(), snapshot_id, "golden_rows")  # before the private golden file is rewritten
    manifest = paths.manifest(snapshot_id)
    if manifest.golden.source == "planted_demo":
        # The demo golden set is generated from the planted corpus into the private store, so the
        # rows, the pages and the facts come from one source and the holdout never enters git.
        path = paths.private / "golden" / f"{snapshot_id}.jsonl"
        dump_golden_rows(demo_golden_rows(rows_per_stratum=manifest.golden.rows_per_stratum), path)
    else:
        path = paths.private / manifest.golden.path
    with input_errors_as_failures():
        numbered = load_numbered_golden_file(path)
    df = pd.DataFrame([{
        "snapshot_id": snapshot_id, "row_id": r.id, "cohort": r.cohort, "stratum": r.stratum,
        "provenance": r.provenance, "task_type": r.task_type, "request_text": r.request_text,
        "task_json": r.task.model_dump_json(), "verification_json": r.verification.model_dump_json(),
        "source_file": str(path), "source_line": line} for line, r in numbered])
    paths.warehouse().replace_rows("golden_rows", df, {"snapshot_id": snapshot_id})
    counts = df.groupby(["stratum", "task_type"]).size().unstack(fill_value=0)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(df), "strata": len(counts), "source": str(path),
        "rows_by_stratum": dg.MetadataValue.md(counts.to_markdown()),
    })


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[golden_rows], kinds={"duckdb"},
          check_specs=[dg.AssetCheckSpec("every_golden_row_verified", asset="golden_verifications", blocking=True,
                                         description="Every golden row was fetched and its facts found on its page.")])
def golden_verifications(context: dg.AssetExecutionContext, paths: BenchPaths, gateway: VendorGateway) -> dg.MaterializeResult:
    """Each golden row checked against its live page before any vendor is called: the page
    answers 200 and carries the row's title, phrases, cells, numbers or answer. Failures are
    recorded as evidence; the blocking check stops the fetch while any row fails."""
    snapshot_id = context.partition_key
    refuse_if_published(paths.warehouse(), snapshot_id, "golden_verifications")  # before any page is fetched
    manifest = paths.manifest(snapshot_id)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    results = verify_rows(rows, lambda url: gateway.url(url, manifest.mode))
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "row_id": v.row_id, "checked_at": v.checked_at,
                        "checked_url": v.checked_url, "http_status": v.http_status, "content_sha256": v.content_sha256,
                        "passed": v.passed, "failures_json": json.dumps(v.failures)} for v in results])
    paths.warehouse().replace_rows("golden_verifications", df, {"snapshot_id": snapshot_id})
    failed = [v for v in results if not v.passed]
    # Dagster's event log is not the private store: public rows by id, holdout rows (and rows
    # not yet split: verification comes first) only as counts; the rest stays in DuckDB
    public, counts = failure_report(results, {r.id: r.stratum for r in rows},
                                    recorded_split(paths.warehouse(), snapshot_id))
    failure_meta = {"failed_rows": "none"}
    if failed:
        by_stratum = pd.DataFrame(counts).fillna(0)
        failure_meta = {
            "failed_by_stratum": dg.MetadataValue.md(by_stratum.astype({c: int for c in by_stratum.columns[2:]})
                                                     .to_markdown(index=False)),
            "failed_public_rows": dg.MetadataValue.md(pd.DataFrame(public[:20]).to_markdown(index=False)) if public
            else "none (holdout rows, and rows before the split, are counted only)",
            "details": f"every failed row with its failures: DuckDB table golden_verifications "
                       f"(snapshot_id = '{snapshot_id}' AND NOT passed)"}
    return dg.MaterializeResult(
        metadata={"dagster/row_count": len(df), "passed": len(results) - len(failed), "failed": len(failed)},
        check_results=[dg.AssetCheckResult(
            check_name="every_golden_row_verified", passed=not failed,
            severity=dg.AssetCheckSeverity.ERROR,
            description=f"{len(failed)} of {len(results)} golden rows failed verification" if failed else
            f"all {len(results)} golden rows verified",
            metadata=failure_meta)],
    )
