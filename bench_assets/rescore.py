"""`bench rescore`: re-derive every score and aggregate from the archive, compare with what was published.

No vendor is called: the raw responses in the warehouse are parsed, classified and scored again
with the current code, aggregated, and the resulting leaderboard compared figure by figure with
the published `leaderboard.json`. After a scoring fix this costs nothing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.aggregate import vendor_metrics
from bench_assets.golden import GoldenRow
from bench_assets.agent_ready import records_from_frame
from bench_assets.leaderboard import build_leaderboard
from bench_assets.manifest import load_manifest
from bench_assets.scoring import score_partition
from bench_assets.sentinels import rederive_outcomes
from bench_assets.ttr import AS_OF_METRIC, snapshot_ttr_metrics
from bench_assets.warehouse import Warehouse


@dataclass
class RescoreReport:
    snapshot_id: str
    rows_rescored: int = 0
    vendors: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = (f"rescored {self.snapshot_id}: {self.rows_rescored} row scores for {len(self.vendors)} vendors "
                f"from archived responses (no vendor called)")
        if not self.differences:
            return head + "\nno differences from the published leaderboard"
        return head + f"\n{len(self.differences)} differences from the published leaderboard:\n" + \
            "\n".join(f"  {d}" for d in self.differences)


def _compare(path: str, published: Any, derived: Any, out: list[str], tol: float = 1e-9) -> None:
    if isinstance(published, dict) and isinstance(derived, dict):
        for key in sorted(set(published) | set(derived)):
            if key not in derived:
                out.append(f"{path}.{key}: published {published[key]!r}, not derived")
            elif key not in published:
                out.append(f"{path}.{key}: derived {derived[key]!r}, not published")
            else:
                _compare(f"{path}.{key}", published[key], derived[key], out, tol)
    elif isinstance(published, list) and isinstance(derived, list):
        if len(published) != len(derived):
            out.append(f"{path}: published {len(published)} items, derived {len(derived)}")
        for i, (a, b) in enumerate(zip(published, derived)):
            label = a.get("vendor", i) if isinstance(a, dict) else i
            _compare(f"{path}[{label}]", a, b, out, tol)
    elif isinstance(published, (int, float)) and isinstance(derived, (int, float)) and not isinstance(published, bool):
        if not math.isclose(float(published), float(derived), rel_tol=tol, abs_tol=tol):
            out.append(f"{path}: published {published}, derived {derived}")
    elif published != derived:
        out.append(f"{path}: published {published!r}, derived {derived!r}")


def _with_ttr(metrics: pd.DataFrame, warehouse: Warehouse, manifest) -> pd.DataFrame:
    """Time-to-retrievability re-derived from the archived probe responses (each re-read with
    its vendor's adapter), over the probe ticks the aggregate included (its `ttr_as_of`)."""
    snapshot_id = manifest.snapshot_id
    as_of = warehouse.query_df("SELECT max(value) AS t FROM vendor_metrics WHERE snapshot_id = ? AND metric = ?",
                               [snapshot_id, AS_OF_METRIC])["t"][0]
    if pd.isna(as_of):
        return metrics
    pages = warehouse.query_df("SELECT sentinel_id, url, published_at FROM sentinel_pages WHERE snapshot_id = ?",
                               [snapshot_id])
    probes = warehouse.query_df("SELECT * FROM sentinel_probes WHERE snapshot_id = ?", [snapshot_id])
    probes = rederive_outcomes(probes, pages, {v: get_adapter(s.adapter) for v, s in manifest.vendors.items()})
    ttr = snapshot_ttr_metrics(snapshot_id, pages, probes, datetime.fromtimestamp(float(as_of), timezone.utc))
    return pd.concat([metrics, ttr], ignore_index=True) if len(ttr) else metrics


def rescore_snapshot(root: Path, snapshot_id: str, warehouse_path: str | None = None) -> RescoreReport:
    manifest = load_manifest(root / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    warehouse = Warehouse(warehouse_path or root / "data" / "warehouse" / "bench.duckdb")
    golden = warehouse.query_df("SELECT * FROM golden_rows WHERE snapshot_id = ? ORDER BY source_line", [snapshot_id])
    rows = [GoldenRow.model_validate({"id": r.row_id, "cohort": r.cohort, "stratum": r.stratum,
                                      "provenance": r.provenance, "task": json.loads(r.task_json),
                                      "verification": json.loads(r.verification_json)})
            for r in golden.itertuples(index=False)]
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    raw_all = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ?", [snapshot_id])
    report = RescoreReport(snapshot_id)
    frames = []
    for vendor, spec in sorted(manifest.vendors.items()):
        raw = raw_all[raw_all["vendor"] == vendor]
        if raw.empty:
            continue
        scores, _ = score_partition(snapshot_id, vendor, get_adapter(spec.adapter), manifest, rows, split, raw)
        frames.append(scores)
        report.vendors.append(vendor)
    scores = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    report.rows_rescored = len(scores)
    metrics = vendor_metrics(snapshot_id, scores) if len(scores) else pd.DataFrame(
        columns=["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"])
    complete = {v for v, n in scores.groupby("vendor").size().items() if n == len(rows)} if len(scores) else set()
    metrics = _with_ttr(metrics, warehouse, manifest)
    # Agent-ready trials are evidence like raw responses: read as archived, not re-run.
    trials = records_from_frame(warehouse.query_df("SELECT * FROM agent_trials WHERE snapshot_id = ?", [snapshot_id]))
    derived = json.loads(json.dumps(build_leaderboard(manifest, metrics, complete, trials)))
    published_path = root / "data" / "publish" / snapshot_id / "leaderboard.json"
    if not published_path.exists():
        report.differences.append(f"{published_path}: nothing published yet")
        return report
    _compare("leaderboard", json.loads(published_path.read_text()), derived, report.differences)
    return report
