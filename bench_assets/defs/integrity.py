"""Integrity assets: the decoys sent with the holdout, the vendors' review packets (which freeze a
snapshot), the rotation plan, dead golden rows, and the daily schedule of the dead-row check."""


import json
from datetime import date, datetime, timezone

import dagster as dg
import duckdb
import pandas as pd
import yaml

from bench_assets.business_days import review_clock, today
from bench_assets.defs.golden import golden_verifications, load_golden_from_warehouse
from bench_assets.defs.leaderboard import current_leaderboard, vendor_leaderboard
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, bench_paths_from_env, input_errors_as_failures
from bench_assets.defs.split import public_split_records, query_split
from bench_assets.errors import BenchInputError
from bench_assets.golden import GoldenRow
from bench_assets.integrity import lifecycle
from bench_assets.integrity.dead_rows import (dead_row_check, dead_rows_file, dead_rows_shown, draw_replacement,
                                              load_dead_rows)
from bench_assets.integrity.decoys import decoys_for_snapshot
from bench_assets.integrity.publication import load_public_evidence, packets_for_snapshot
from bench_assets.integrity.pools import load_pool
from bench_assets.integrity.review import packet_bytes, packet_sha256
from bench_assets.integrity.rotation import RETIRE_SHARE, SATURATION_BIAS, plan_rotation, saturation_by_stratum
from bench_assets.split import split_key
from bench_assets.verify import verify_rows


def snapshot_split(paths: BenchPaths, snapshot_id: str) -> dict[str, str]:
    df = paths.warehouse().query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    return dict(zip(df["row_id"], df["split"]))


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[query_split], kinds={"duckdb"})
def decoy_queries(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """The decoys sent with the holdout: per stratum, `decoys.ratio` × as many rows as the holdout,
    drawn in whole groups from the decoy pool in an order keyed by the split secret. Private (the
    private store and DuckDB only), archived when sent, never scored. Each vendor fetch draws the
    same decoys from the same function, so this record is for the operator."""
    snapshot_id = context.partition_key
    lifecycle.refuse_if_published(paths.warehouse(), snapshot_id, "decoy_queries")
    manifest = paths.manifest(snapshot_id)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split = snapshot_split(paths, snapshot_id)
    with input_errors_as_failures():
        decoys = decoys_for_snapshot(manifest, rows, split, paths.private)
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "row_id": d.id, "stratum": d.stratum, "task_type": d.task_type,
                        "request_text": d.request_text} for d in decoys],
                      columns=["snapshot_id", "row_id", "stratum", "task_type", "request_text"])
    paths.warehouse().replace_rows("decoy_queries", df, {"snapshot_id": snapshot_id})
    private_file = paths.private / "decoys" / f"{snapshot_id}.jsonl"
    private_file.parent.mkdir(parents=True, exist_ok=True)
    private_file.write_text("".join(d.model_dump_json() + "\n" for d in decoys))
    holdout = pd.Series([r.stratum for r in rows if split.get(r.id) == "holdout"]).value_counts()
    table = pd.DataFrame({"holdout": holdout, "decoys": df["stratum"].value_counts() if len(df) else 0}).fillna(0)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(df), "ratio": manifest.decoys.ratio,
        "source": manifest.pool_source(manifest.decoys), "by_stratum": dg.MetadataValue.md(table.astype(int).to_markdown()),
    })


@dg.asset(partitions_def=snapshots_partitions_def, group_name="review", deps=[vendor_leaderboard], kinds={"json"})
def review_packets(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """One review packet per vendor, written to the private store with the date it is sent: the
    vendor's public rows, its raw responses and scores on them, its plan, and only aggregates for
    the holdout. Writing them freezes the snapshot (draft → frozen); publication then waits until
    every vendor has had its packet for `review.business_days` US business days. A packet whose
    content did not change keeps its original date; a changed one is sent again and its clock restarts."""
    snapshot_id = context.partition_key
    warehouse = paths.warehouse()
    lifecycle.refuse_if_published(warehouse, snapshot_id, "review_packets")
    manifest = paths.manifest(snapshot_id)
    board = current_leaderboard(warehouse, manifest)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split = snapshot_split(paths, snapshot_id)
    raw, scores = load_public_evidence(warehouse, snapshot_id)
    packets = packets_for_snapshot(manifest, board, rows, split, raw, scores)
    previous = warehouse.query_df("SELECT * FROM review_packets WHERE snapshot_id = ?", [snapshot_id])
    previous = {r.vendor: r for r in previous.itertuples(index=False)}
    out_dir = paths.private / "review" / snapshot_id
    out_dir.mkdir(parents=True, exist_ok=True)
    # a packet goes to the vendor: nothing of the holdout but aggregates (ids and query texts are
    # scanned; URLs are not, since a vendor's own raw responses may list any page it returned)
    needles = [{"row_id": r.id, "request_text": r.request_text if r.task_type != "extract" else None}
               for r in rows if split.get(r.id) == "holdout"]
    leaks = [(vendor, kind, needle) for vendor, packet in packets.items()
             for text in [packet_bytes(packet).decode("utf-8")]
             for row in needles for kind, needle in (("id", row["row_id"]), ("text", row["request_text"]))
             if needle and needle in text]
    if leaks:  # which rows, only in the private store: Dagster's event log may not name the holdout
        leaks_file = paths.private / "leaks" / f"{snapshot_id}.review_packets.txt"  # not beside the packets
        leaks_file.parent.mkdir(parents=True, exist_ok=True)
        leaks_file.write_text("".join(f"{vendor}: holdout {kind} {needle!r}\n" for vendor, kind, needle in leaks))
        counts = pd.DataFrame(leaks, columns=["vendor", "kind", "needle"]).groupby(["vendor", "kind"]).size()
        raise dg.Failure(f"review packets of {snapshot_id} would reveal the holdout ({len(leaks)} occurrences; "
                         f"which rows: {leaks_file})",
                         metadata={"leaks": dg.MetadataValue.md(counts.rename("occurrences").reset_index()
                                                                .to_markdown(index=False)),
                                   "which_rows": dg.MetadataValue.path(str(leaks_file))})
    sent_on = today()
    records, resent = [], []
    for vendor, packet in packets.items():
        digest = packet_sha256(packet)
        path = out_dir / f"{vendor}.json"
        before = previous.get(vendor)
        if before is not None and before.packet_sha256 == digest and path.exists():
            day = pd.Timestamp(before.sent_on).date()
        else:
            path.write_bytes(packet_bytes(packet))
            day = sent_on
            resent.append(vendor)
        records.append({"snapshot_id": snapshot_id, "vendor": vendor, "sent_on": day,
                        "business_days": manifest.review.business_days,
                        "opens_on": review_clock(day, day, manifest.review.business_days).opens_on,
                        "packet_path": str(path), "packet_sha256": digest, "public_rows": len(packet["public_rows"]),
                        "responses": len(packet["raw_responses"])})
    df = pd.DataFrame(records)
    warehouse.replace_rows("review_packets", df, {"snapshot_id": snapshot_id})
    lifecycle.set_status(warehouse, snapshot_id, lifecycle.FROZEN,
                         f"review packets sent to {', '.join(resent) or 'nobody new'} on {sent_on}")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(df), "status": lifecycle.FROZEN, "sent_today": dg.MetadataValue.json(resent),
        "packets": dg.MetadataValue.md(df[["vendor", "sent_on", "opens_on", "public_rows", "responses"]]
                                       .to_markdown(index=False)),
        "publishable_from": str(max(df["opens_on"])) if len(df) else "—",
        "private_dir": str(out_dir),
    })



@dg.asset(partitions_def=snapshots_partitions_def, group_name="review", deps=[vendor_leaderboard], kinds={"yaml"})
def rotation_plan(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """Next quarter's rotation, for review: 25 % of each cohort retires (each side of the split its
    own 25 %, so the cohort keeps its holdout share), drawn with a bias toward strata where vendor
    scores saturate, each group replaced from its stratum's candidate pool; the replacements, next
    quarter's new cohort, are split 70/30 within every stratum by the key. Written to the private
    store (it names holdout rows); nothing is rewritten until an operator applies it to the next
    snapshot's golden set."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split = snapshot_split(paths, snapshot_id)
    scores = warehouse.query_df("SELECT vendor, stratum, response_class, correct FROM row_scores WHERE snapshot_id = ?",
                                [snapshot_id])
    used = warehouse.query_df("SELECT replacement_row_id FROM dead_rows WHERE snapshot_id = ? AND "
                              "replacement_row_id IS NOT NULL", [snapshot_id])["replacement_row_id"]
    with input_errors_as_failures():
        candidates = load_pool(manifest, manifest.candidates, "candidate", paths.private, rows)
        key = split_key(manifest.split.key_env, manifest.mode)
    saturation = saturation_by_stratum(scores)
    plan = plan_rotation(rows, split, saturation, candidates, key, snapshot_id, used_candidates=frozenset(used),
                         public_share=manifest.split.public_share)
    record = {
        "snapshot_id": snapshot_id, "plans_the_quarter_after": snapshot_id, "generated_on": str(today()),
        "retire_share": RETIRE_SHARE, "saturation_bias": SATURATION_BIAS,
        "how": "per cohort and per side of the split (each side retires its own share, so the cohort keeps its "
               "holdout share), whole groups drawn with weight exp(bias x stratum saturation), keyed by the split "
               "secret; each replaced from its stratum's candidate pool; the replacements (the new cohort) split "
               f"{manifest.split.public_share:.0%} public within every stratum by the key (takes_split)",
        "saturation_by_stratum": {k: round(v, 4) for k, v in sorted(saturation.items())},
        "cohorts": plan.cohorts, "retire": plan.retire, "replacements": plan.replacements,
        "note": "A plan for review. Nothing is rewritten: apply it to the next snapshot's golden set by hand.",
    }
    path = paths.private / "rotation" / f"{snapshot_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
    cohorts = pd.DataFrame([{"cohort": c, **{k: v for k, v in d.items() if k != "retired_by_stratum"}}
                            for c, d in plan.cohorts.items()])
    strata = pd.DataFrame([{"stratum": s, "saturation": round(v, 3),
                            "retired": sum(1 for r in plan.retire if r["stratum"] == s)} for s, v in sorted(saturation.items())])
    new_cohort = pd.DataFrame(plan.replacements, columns=["stratum", "takes_split"]).groupby(
        ["stratum", "takes_split"]).size().unstack(fill_value=0)  # counts only: the plan file names the rows
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(plan.retire), "plan_file": dg.MetadataValue.path(str(path)),
        "cohorts": dg.MetadataValue.md(cohorts.to_markdown(index=False) if len(cohorts) else "no rows"),
        "strata": dg.MetadataValue.md(strata.to_markdown(index=False) if len(strata) else "no scores yet"),
        "replacements": len(plan.replacements),
        "new_cohort": dg.MetadataValue.md(new_cohort.to_markdown() if len(new_cohort) else "no replacements"),
    })


DEAD_ROW_CHECK = "dead_rows_replaced_within_7_days"


def _verification_frame(snapshot_id: str, results) -> pd.DataFrame:
    return pd.DataFrame([{"snapshot_id": snapshot_id, "row_id": v.row_id, "checked_at": v.checked_at,
                          "checked_url": v.checked_url, "http_status": v.http_status,
                          "content_sha256": v.content_sha256, "passed": v.passed,
                          "failures_json": json.dumps(v.failures)} for v in results])


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[golden_verifications, query_split],
          kinds={"duckdb"},
          check_specs=[dg.AssetCheckSpec(DEAD_ROW_CHECK, asset="dead_golden_rows",
                                         description="Every dead golden row is replaced: a warning from day 5 "
                                                     "without a replacement, a failure after day 7.")])
def dead_golden_rows(context: dg.AssetExecutionContext, paths: BenchPaths, gateway: VendorGateway) -> dg.MaterializeResult:
    """Golden rows that failed verification, marked dead with the date, each replaced by a verified
    candidate of the same stratum and task type that takes its side of the split. The replacement
    is adopted into the snapshot's golden rows, verification and split (and the exported public
    split), so the fetch can go ahead; re-running re-applies recorded replacements, never redraws.
    Materialize it after a failed verification, and daily while rows wait for a replacement."""
    snapshot_id = context.partition_key
    warehouse = paths.warehouse()
    lifecycle.refuse_if_published(warehouse, snapshot_id, "dead_golden_rows")
    manifest = paths.manifest(snapshot_id)
    golden = load_golden_from_warehouse(paths, snapshot_id)
    by_id = {r.id: r for r in golden}
    split = snapshot_split(paths, snapshot_id)
    ver = warehouse.query_df("SELECT row_id, passed, failures_json FROM golden_verifications WHERE snapshot_id = ?",
                             [snapshot_id])
    failed = {r.row_id: r.failures_json for r in ver.itertuples(index=False) if not r.passed}
    known = warehouse.query_df("SELECT * FROM dead_rows WHERE snapshot_id = ?", [snapshot_id])
    records = {r["row_id"]: dict(r) for r in known.to_dict("records")}
    day = today()
    for row_id, failures in failed.items():
        if row_id not in records and row_id in by_id:
            row = by_id[row_id]
            records[row_id] = {"snapshot_id": snapshot_id, "row_id": row_id, "stratum": row.stratum,
                               "task_type": row.task_type, "split": split.get(row_id), "dead_since": day,
                               "failures_json": failures, "replacement_row_id": None, "replaced_on": None}
    for row_id in [r for r, rec in records.items() if r not in failed and pd.isna(rec["replacement_row_id"])]:
        del records[row_id]  # it verifies again: alive, nothing to replace
    # keep every dead row whole in the private store: once replaced it leaves the golden set, and a
    # dead holdout row must still never be published (publication guards it from this file)
    dead_whole = {**load_dead_rows(paths.private, snapshot_id),
                  **{r: by_id[r] for r in records if r in by_id}}
    dead_whole = {r: row for r, row in dead_whole.items() if r in records}
    dead_path = dead_rows_file(paths.private, snapshot_id)
    dead_path.parent.mkdir(parents=True, exist_ok=True)
    dead_path.write_text("".join(row.model_dump_json() + "\n" for _, row in sorted(dead_whole.items())))

    replacements_path = paths.private / "golden" / f"{snapshot_id}.replacements.jsonl"
    adopted = {}
    if replacements_path.exists():
        adopted = {r.id: r for r in (GoldenRow.model_validate_json(x) for x in replacements_path.read_text().splitlines()
                                     if x.strip())}
    note = ""
    waiting = [rec for rec in records.values() if pd.isna(rec["replacement_row_id"])]
    if waiting:
        try:
            with input_errors_as_failures():
                key = split_key(manifest.split.key_env, manifest.mode)
            candidates = load_pool(manifest, manifest.candidates, "candidate", paths.private, golden + list(adopted.values()))
        except BenchInputError as exc:
            candidates, note = [], f"no candidate pool: {exc}"

        def verified(row: GoldenRow) -> bool:
            return verify_rows([row], lambda url: gateway.url(url, manifest.mode))[0].passed

        used: set[str] = set()
        for rec in sorted(waiting, key=lambda r: r["row_id"]):
            got = draw_replacement(by_id[rec["row_id"]], candidates, used, key, snapshot_id, verified) if candidates else None
            if got is not None:
                row, group = got
                used.add(group)
                adopted[row.id] = row
                rec["replacement_row_id"], rec["replaced_on"] = row.id, day
    replacements_path.parent.mkdir(parents=True, exist_ok=True)
    replacements_path.write_text("".join(r.model_dump_json() + "\n" for r in adopted.values()))

    # adopt every recorded replacement: the dead row leaves the golden set, its replacement takes its place
    to_adopt = [(rec, adopted[rec["replacement_row_id"]]) for rec in records.values()
                if not pd.isna(rec["replacement_row_id"]) and rec["replacement_row_id"] in adopted]
    fresh = [rep for rec, rep in to_adopt if rep.id not in by_id]
    checks = verify_rows(fresh, lambda url: gateway.url(url, manifest.mode)) if fresh else []
    for n, (rec, rep) in enumerate(to_adopt, start=1):
        where_dead = {"snapshot_id": snapshot_id, "row_id": rec["row_id"]}
        where_rep = {"snapshot_id": snapshot_id, "row_id": rep.id}
        if rec["row_id"] in by_id:
            for table in ("golden_rows", "golden_verifications", "query_split"):
                warehouse.replace_rows(table, pd.DataFrame(), where_dead)
        if rep.id not in by_id:
            warehouse.replace_rows("golden_rows", pd.DataFrame([{
                "snapshot_id": snapshot_id, "row_id": rep.id, "cohort": rep.cohort, "stratum": rep.stratum,
                "provenance": rep.provenance, "task_type": rep.task_type, "request_text": rep.request_text,
                "task_json": rep.task.model_dump_json(), "verification_json": rep.verification.model_dump_json(),
                "source_file": str(replacements_path), "source_line": 1_000_000 + n}]), where_rep)
            check = next(c for c in checks if c.row_id == rep.id)
            warehouse.replace_rows("golden_verifications", _verification_frame(snapshot_id, [check]), where_rep)
            warehouse.replace_rows("query_split", pd.DataFrame([{"snapshot_id": snapshot_id, "row_id": rep.id,
                                                                 "stratum": rep.stratum, "split": rec["split"]}]), where_rep)
    df = pd.DataFrame(list(records.values()), columns=["snapshot_id", "row_id", "stratum", "task_type", "split",
                                                       "dead_since", "failures_json", "replacement_row_id", "replaced_on"])
    warehouse.replace_rows("dead_rows", df, {"snapshot_id": snapshot_id})
    if to_adopt:  # the exported public split and the private holdout follow the adopted replacements
        rows = load_golden_from_warehouse(paths, snapshot_id)
        split = snapshot_split(paths, snapshot_id)
        (paths.snapshots_dir / snapshot_id / "public_split.jsonl").write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in public_split_records(rows, split)))
        (paths.private / "holdout" / f"{snapshot_id}.jsonl").write_text(
            "".join(r.model_dump_json() + "\n" for r in rows if split[r.id] == "holdout"))
    result = dead_row_check(df, day)
    shown = dead_rows_shown(df, result.overdue)  # Dagster's event log is not the private store
    return dg.MaterializeResult(
        metadata={"dagster/row_count": len(df), "replaced": int(df["replacement_row_id"].notna().sum()),
                  "waiting": int(df["replacement_row_id"].isna().sum()), "note": note or "—",
                  "dead_rows_by_stratum": dg.MetadataValue.md(shown.by_stratum.to_markdown(index=False)
                                                              if len(df) else "none"),
                  "public_dead_rows": dg.MetadataValue.md(shown.public.to_markdown(index=False)
                                                          if len(shown.public) else "none"),
                  "details": f"every dead row: DuckDB table dead_rows (snapshot_id = '{snapshot_id}')"},
        check_results=[dg.AssetCheckResult(
            check_name=DEAD_ROW_CHECK, passed=result.passed,
            severity=dg.AssetCheckSeverity.ERROR if result.severity == "ERROR" else dg.AssetCheckSeverity.WARN,
            description=result.description,
            metadata={"days_without_replacement": dg.MetadataValue.json(shown.public_days),
                      "holdout_days_without_replacement_by_stratum": dg.MetadataValue.json(
                          shown.private_days_by_stratum)})])


# ----------------------------------------------------------------------------- the daily dead-row check

DEAD_ROWS_CRON = "0 6 * * *"  # daily, 06:00 UTC

dead_rows_job = dg.define_asset_job(
    "dead_rows_job", selection=[dead_golden_rows], partitions_def=snapshots_partitions_def,
    description="One snapshot's dead golden rows: replacements drawn, and the day-5 warn / day-7 fail check "
                "evaluated (launched daily by dead_rows_schedule).")


def dead_row_run_requests(paths: BenchPaths, day: date, known: set[str] | None = None) -> list[dg.RunRequest]:
    """One run request per snapshot not yet published that has a dead row without a replacement,
    or a golden row failing verification (not yet recorded as dead), keyed by snapshot and day.
    `known`: the registered `snapshots` partitions (others cannot be launched)."""
    warehouse = paths.warehouse()
    if not warehouse.path.exists():
        return []
    with warehouse.lock:
        con = duckdb.connect(str(warehouse.path), read_only=True)
        try:
            snapshots = [r[0] for r in con.execute(
                "SELECT s.snapshot_id FROM snapshots s WHERE coalesce(s.status, 'draft') <> 'published' AND ("
                " EXISTS (SELECT 1 FROM dead_rows d WHERE d.snapshot_id = s.snapshot_id AND d.replacement_row_id IS NULL)"
                " OR EXISTS (SELECT 1 FROM golden_verifications v WHERE v.snapshot_id = s.snapshot_id AND NOT v.passed))"
                " ORDER BY 1").fetchall()]
        except duckdb.CatalogException:  # a warehouse with no snapshot yet
            return []
        finally:
            con.close()
    return [dg.RunRequest(run_key=f"{snapshot_id}@{day.isoformat()}", partition_key=snapshot_id,
                          tags={"bench/dead_rows_check": day.isoformat()})
            for snapshot_id in snapshots if known is None or snapshot_id in known]


def dead_rows_schedule(paths: BenchPaths) -> dg.ScheduleDefinition:
    """The daily dead-row schedule, reading the warehouse at `paths` (bound when defined, as the
    sentinel probe schedule's are: the code location binds the same paths as its assets')."""

    @dg.schedule(name="dead_rows_schedule", cron_schedule=DEAD_ROWS_CRON, job=dead_rows_job,
                 execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.RUNNING,
                 description="Daily: materializes dead_golden_rows for every snapshot not yet published with a dead "
                             "golden row awaiting its replacement, so the check warns from day 5 and fails after "
                             "day 7 without anyone having to remember. Running by default.")
    def dead_rows_daily(context: dg.ScheduleEvaluationContext):
        tick = context.scheduled_execution_time or datetime.now(timezone.utc)
        try:
            known = set(context.instance.get_dynamic_partitions("snapshots"))
        except dg.DagsterInvariantViolationError:  # evaluated without an instance: launch what the warehouse says
            known = None
        requests = dead_row_run_requests(paths, tick.date(), known)
        return requests or dg.SkipReason(f"no snapshot awaiting a dead-row replacement on {tick.date().isoformat()}")

    return dead_rows_daily


dead_rows_daily = dead_rows_schedule(bench_paths_from_env())
