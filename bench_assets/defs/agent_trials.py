"""Agent-ready trials of a snapshot: the harness against the simulator, and hand-entered live trials."""


import dagster as dg
import pandas as pd

from bench_assets.agent_ready import agent_ready_by_vendor, load_hand_entered, records_from_frame, trials_frame
from bench_assets.agent_trials import (
    Mailbox, SearchProbe, register_mailbox_with_simulator, run_planned_trials, simulated_plan,
)
from bench_assets.defs.golden import snapshot_manifest
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, input_errors_as_failures
from bench_assets.integrity.lifecycle import refuse_if_published
from bench_assets.warehouse import Warehouse

HAND_ENTERED_FILE = "agent_trials.yaml"


def load_trial_records(warehouse: Warehouse, snapshot_id: str):
    """The snapshot's trial records as stored in `agent_trials`."""
    return records_from_frame(warehouse.query_df("SELECT * FROM agent_trials WHERE snapshot_id = ?", [snapshot_id]))


# Partitioned by snapshot like the leaderboard it feeds: a snapshot's trials are run (or entered)
# for that snapshot and replaced as a whole on a re-run, while a published snapshot keeps its own.
@dg.asset(partitions_def=snapshots_partitions_def, group_name="vendors", deps=[snapshot_manifest],
          kinds={"duckdb", "yaml"}, tags={"bench/stage": "agent_trials"})
def agent_trials(context: dg.AssetExecutionContext, paths: BenchPaths, gateway: VendorGateway) -> dg.MaterializeResult:
    """Agent-ready trials, one row per vendor per trial: method (OTP e-mail, device code, keyless,
    x402, manual), date, outcome, reason and the evidence (every step, secrets removed). In
    simulated mode the harness signs up at each simulated vendor as an agent would and proves the
    key with one search; trials run by hand against live vendors are loaded from
    data/snapshots/<id>/agent_trials.yaml, validated (a bad record names file, line and field)."""
    snapshot_id = context.partition_key
    refuse_if_published(paths.warehouse(), snapshot_id, "agent_trials")  # before any trial signs up anywhere
    manifest = paths.manifest(snapshot_id)
    records = []
    hand_path = paths.snapshots_dir / snapshot_id / HAND_ENTERED_FILE
    if hand_path.exists():  # validated first: a bad record fails the step before any trial runs
        vendors = set(manifest.vendors) | {e.vendor for e in manifest.excluded}
        with input_errors_as_failures():
            records += load_hand_entered(hand_path, snapshot_id, vendors)
    if manifest.mode == "simulated":
        sim_base = gateway.sim_base()
        probes = {v: SearchProbe(spec.adapter, spec.endpoints["search"], dict(spec.options))
                  for v, spec in manifest.vendors.items() if "search" in spec.endpoints}
        with Mailbox() as mailbox:
            register_mailbox_with_simulator(sim_base, mailbox)
            records += run_planned_trials(simulated_plan(sim_base), probes,
                                          lambda url: gateway.url(url, manifest.mode),
                                          snapshot_id=snapshot_id, mode="simulated", mailbox=mailbox)
    df = trials_frame(records)
    paths.warehouse().replace_rows("agent_trials", df, {"snapshot_id": snapshot_id})
    summary = agent_ready_by_vendor(records, sorted(manifest.vendors))
    table = pd.DataFrame([{"vendor": r.vendor, "method": r.method, "by": r.recorded_by, "date": r.trial_date,
                           "outcome": r.outcome, "reason": r.reason} for r in records])
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(df), "harness_trials": sum(r.recorded_by == "harness" for r in records),
        "hand_entered": sum(r.recorded_by == "hand" for r in records),
        "agent_ready": dg.MetadataValue.json(sorted(v for v, s in summary.items() if s["ready"])),
        "trials": dg.MetadataValue.md(table.to_markdown(index=False) if len(table) else "no trials"),
    })
