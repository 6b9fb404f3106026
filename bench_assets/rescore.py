"""`bench rescore`: re-derive every score and aggregate from the archive, compare with every published surface.

No vendor is called: the raw responses in the warehouse are parsed, classified and scored again
with the current code, aggregated, and every surface that carries a figure is rendered again from
the result and compared, figure by figure, with what was published or stored:

- `leaderboard.json`, `leaderboard.csv`, `vendors/<vendor>.json` and `public_row_scores.csv` in
  `data/publish/<snapshot>/`;
- the `row_scores` table (one verdict per vendor and golden row), so a row-level change that
  cancels out in the aggregates is still reported;
- the `vendor_metrics` table, which every page is rendered from.

Each difference names the surface, the vendor, the figure or row, and both values. After a
scoring fix this costs nothing.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.agent_ready import records_from_frame
from bench_assets.aggregate import METRIC_COLUMNS, vendor_metrics
from bench_assets.drilldown import HoldoutGuard, query_drilldowns, vendor_row_verdicts
from bench_assets.golden import GoldenRow
from bench_assets.integrity import eligibility
from bench_assets.leaderboard import build_leaderboard
from bench_assets.manifest import load_manifest
from bench_assets.publish import leaderboard_csv, public_row_scores_csv, vendor_json
from bench_assets.scoring import RESULT_COLUMNS, SCORE_COLUMNS, score_partition
from bench_assets.sentinels import rederive_outcomes
from bench_assets.ttr import AS_OF_METRIC, snapshot_ttr_metrics
from bench_assets.verify import row_urls
from bench_assets.warehouse import Warehouse

TOLERANCE = 1e-9
ROW_SCORES = "row_scores (DuckDB)"
VENDOR_METRICS = "vendor_metrics (DuckDB)"


@dataclass(frozen=True)
class Difference:
    """One figure that differs: where (`surface`: a published file or a warehouse table), whose
    (`vendor`, None for a snapshot-wide field), which (`item`: the metric, column or row), and the
    published (or stored) and re-derived values (None: absent on that side)."""

    surface: str
    vendor: str | None
    item: str
    published: Any
    derived: Any

    def __str__(self) -> str:
        side = "stored" if self.surface.endswith("(DuckDB)") else "published"
        return (f"{self.surface} · vendor {self.vendor or '—'} · {self.item}: "
                f"{side} {self.published!r}, derived {self.derived!r}")


@dataclass
class RescoreReport:
    snapshot_id: str
    rows_rescored: int = 0
    vendors: list[str] = field(default_factory=list)
    surfaces: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    def summary(self) -> str:
        head = (f"rescored {self.snapshot_id}: {self.rows_rescored} row scores for {len(self.vendors)} vendors "
                f"from archived responses (no vendor called); compared {', '.join(self.surfaces) or 'nothing'}")
        if not self.differences:
            return head + "\nno differences"
        return head + f"\n{len(self.differences)} differences:\n" + "\n".join(f"  {d}" for d in self.differences)


# ##### COMPARING


def _plain(x: Any) -> Any:
    """pandas' and numpy's scalars as plain Python (missing values as None)."""
    if x is None or x is pd.NA or x is pd.NaT:
        return None
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def _number(x: Any, text: bool) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if text and isinstance(x, str) and x.strip():
        try:
            return float(x)
        except ValueError:
            return None
    return None


def same_value(published: Any, derived: Any, tol: float = TOLERANCE, *, text: bool = False) -> bool:
    """Equal as figures: numbers within `tol` (with `text`, numeric CSV cells too), anything else exactly."""
    published, derived = _plain(published), _plain(derived)
    if isinstance(published, bool) or isinstance(derived, bool):
        return isinstance(published, bool) and isinstance(derived, bool) and published == derived
    a, b = _number(published, text), _number(derived, text)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return published == derived


def _keyed(items: list[Any]) -> tuple[str, dict[Any, Any]] | None:
    """A list of records matched by their `vendor` or `row_id` field, when it identifies each one."""
    for key in ("vendor", "row_id"):
        if items and all(isinstance(x, dict) and key in x for x in items):
            keys = [x[key] for x in items]
            if len(set(keys)) == len(keys):
                return key, dict(zip(keys, items))
    return None


def compare_json(path: str, published: Any, derived: Any) -> Iterator[tuple[str, Any, Any]]:
    """Every leaf that differs between two JSON documents, as (path, published, derived). Lists of
    records are matched by `vendor` or `row_id`, so one missing record does not shift the rest."""
    if isinstance(published, dict) and isinstance(derived, dict):
        for key in sorted(set(published) | set(derived), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in derived:
                yield sub, published[key], None
            elif key not in published:
                yield sub, None, derived[key]
            else:
                yield from compare_json(sub, published[key], derived[key])
    elif isinstance(published, list) and isinstance(derived, list):
        left, right = _keyed(published), _keyed(derived)
        if left and right and left[0] == right[0]:
            a, b = left[1], right[1]
            for k in list(a) + [k for k in b if k not in a]:
                sub = f"{path}[{k}]"
                if k not in b:
                    yield sub, a[k], None
                elif k not in a:
                    yield sub, None, b[k]
                else:
                    yield from compare_json(sub, a[k], b[k])
            return
        if len(published) != len(derived):
            yield f"{path} (items)", len(published), len(derived)
        for i, (a, b) in enumerate(zip(published, derived)):
            yield from compare_json(f"{path}[{i}]", a, b)
    elif not same_value(published, derived):
        yield path, published, derived


def _vendor_in(path: str) -> tuple[str | None, str]:
    """`vendors[exa].metrics.x` → ("exa", "metrics.x")."""
    prefix = "vendors["
    if path.startswith(prefix) and "]" in path:
        vendor, _, rest = path[len(prefix):].partition("]")
        return vendor, rest.lstrip(".") or "(entry)"
    return None, path


def compare_csv(surface: str, published: str, derived: str, key: tuple[str, ...],
                vendor_column: str = "vendor") -> list[Difference]:
    """Cell by cell, rows matched on `key`: every cell that differs, every row on one side only."""
    def rows(text: str) -> tuple[list[str], dict[tuple[str, ...], dict[str, str]]]:
        reader = csv.DictReader(io.StringIO(text))
        return list(reader.fieldnames or []), {tuple(r.get(k, "") for k in key): r for r in reader}

    pub_cols, pub = rows(published)
    der_cols, der = rows(derived)
    out: list[Difference] = []
    for column in [c for c in der_cols if c not in pub_cols]:
        out.append(Difference(surface, None, f"column {column}", None, "present"))
    for column in [c for c in pub_cols if c not in der_cols]:
        out.append(Difference(surface, None, f"column {column}", "present", None))
    columns = [c for c in der_cols if c in pub_cols and c not in key]
    for k in list(pub) + [k for k in der if k not in pub]:
        record = dict(zip(key, k))
        vendor = record.get(vendor_column)
        where = ", ".join(f"{c} {v}" for c, v in record.items() if c != vendor_column)
        a, b = pub.get(k), der.get(k)
        if a is None or b is None:
            out.append(Difference(surface, vendor, where or "row", None if a is None else "row",
                                  None if b is None else "row"))
            continue
        for column in columns:
            if not same_value(a[column] or None, b[column] or None, text=True):
                item = f"{where}: {column}" if where else column
                out.append(Difference(surface, vendor, item, a[column], b[column]))
    return out


def compare_frames(surface: str, stored: pd.DataFrame, derived: pd.DataFrame, key: list[str],
                   columns: list[str]) -> list[Difference]:
    """A warehouse table against its re-derivation, row by row on `key`, column by column."""
    def index(df: pd.DataFrame) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {tuple(_plain(r[k]) for k in key): r for r in df.to_dict("records")}

    a, b = index(stored), index(derived)
    out: list[Difference] = []
    for k in list(a) + [k for k in b if k not in a]:
        record = dict(zip(key, k))
        vendor = record.pop("vendor", None)
        where = " ".join(str(v) for v in record.values())
        if k not in b or k not in a:
            out.append(Difference(surface, vendor, where, "row" if k in a else None, "row" if k in b else None))
            continue
        for column in columns:
            if not same_value(a[k].get(column), b[k].get(column)):
                out.append(Difference(surface, vendor, f"{where}: {column}", _plain(a[k].get(column)),
                                      _plain(b[k].get(column))))
    return out


# ##### RE-DERIVING


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


def rescore_snapshot(root: Path, snapshot_id: str, warehouse_path: str | None = None,
                     lake_url: str | None = None) -> RescoreReport:
    """Re-derive the snapshot's row scores, aggregates and published files from its archive and
    report every difference from what is stored and published. Reads only; calls no vendor."""
    manifest = load_manifest(root / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    warehouse = Warehouse(warehouse_path or root / "data" / "warehouse" / "bench.duckdb", lake_url=lake_url)
    golden = warehouse.query_df("SELECT * FROM golden_rows WHERE snapshot_id = ? ORDER BY source_line", [snapshot_id])
    rows = [GoldenRow.model_validate({"id": r.row_id, "cohort": r.cohort, "stratum": r.stratum,
                                      "provenance": r.provenance, "task": json.loads(r.task_json),
                                      "verification": json.loads(r.verification_json)})
            for r in golden.itertuples(index=False)]
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    raw_all = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ?", [snapshot_id])
    report = RescoreReport(snapshot_id)
    frames, result_frames = [], []
    for vendor, spec in sorted(manifest.vendors.items()):
        raw = raw_all[raw_all["vendor"] == vendor]
        if raw.empty:
            continue
        scores, results = score_partition(snapshot_id, vendor, get_adapter(spec.adapter), manifest, rows, split, raw)
        frames.append(scores)
        result_frames.append(results)
        report.vendors.append(vendor)
    scores = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SCORE_COLUMNS)
    results = pd.concat(result_frames, ignore_index=True) if result_frames else pd.DataFrame(columns=RESULT_COLUMNS)
    report.rows_rescored = len(scores)
    metrics = vendor_metrics(snapshot_id, scores) if len(scores) else pd.DataFrame(columns=METRIC_COLUMNS)
    complete = {v for v, n in scores.groupby("vendor").size().items() if n == len(rows)} if len(scores) else set()
    metrics = _with_ttr(metrics, warehouse, manifest)
    # Agent-ready trials are evidence like raw responses: read as archived, not re-run.
    trials = records_from_frame(warehouse.query_df("SELECT * FROM agent_trials WHERE snapshot_id = ?", [snapshot_id]))
    board = build_leaderboard(manifest, metrics, complete, trials,
                              snapshot_reasons=eligibility.snapshot_reasons(warehouse, manifest))  # e.g. no declaration
    derived_board = json.loads(json.dumps(board))

    # The warehouse: every row's verdict, and the aggregates the pages are rendered from.
    stored_scores = warehouse.query_df("SELECT * FROM row_scores WHERE snapshot_id = ?", [snapshot_id])
    report.differences += compare_frames(ROW_SCORES, stored_scores, scores, ["vendor", "row_id"],
                                         [c for c in SCORE_COLUMNS if c not in ("snapshot_id", "vendor", "row_id")])
    stored_metrics = warehouse.query_df("SELECT * FROM vendor_metrics WHERE snapshot_id = ?", [snapshot_id])
    report.differences += compare_frames(VENDOR_METRICS, stored_metrics, metrics,
                                         ["vendor", "scope", "scope_value", "metric"], ["value", "n", "low", "high"])
    report.surfaces += [ROW_SCORES, VENDOR_METRICS]

    out_dir = root / "data" / "publish" / snapshot_id
    published_path = out_dir / "leaderboard.json"
    if not published_path.exists():
        report.differences.append(Difference(str(published_path), None, "leaderboard.json", None,
                                             "nothing published yet"))
        return report
    for path, a, b in compare_json("", json.loads(published_path.read_text()), derived_board):
        vendor, item = _vendor_in(path)
        report.differences.append(Difference("leaderboard.json", vendor, item, a, b))
    report.differences += compare_csv("leaderboard.csv", _read(out_dir / "leaderboard.csv"),
                                      leaderboard_csv(derived_board), ("vendor",))
    report.surfaces += ["leaderboard.json", "leaderboard.csv"]

    # Per-vendor files and per-row verdicts come from the public rows' drill-down, as published.
    holdout = [{"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}
               for r in rows if split.get(r.id) == "holdout"]
    public_ids = {r.id for r in rows if split.get(r.id) == "public"}
    queries = query_drilldowns(manifest, rows, split, scores[scores["row_id"].isin(public_ids)],
                               results[results["row_id"].isin(public_ids)],
                               raw_all[raw_all["role"] == "public"] if len(raw_all) else raw_all,
                               HoldoutGuard(holdout))
    scored = [e for e in derived_board["vendors"] if e["status"] == "scored"]
    expected = {e["vendor"]: json.loads(vendor_json(derived_board, e, vendor_row_verdicts(queries, e["vendor"])))
                for e in scored}
    on_disk = {p.stem: p for p in sorted((out_dir / "vendors").glob("*.json"))}
    for vendor in sorted(set(expected) | set(on_disk)):
        surface = f"vendors/{vendor}.json"
        if vendor not in on_disk or vendor not in expected:
            report.differences.append(Difference(surface, vendor, "(file)", "present" if vendor in on_disk else None,
                                                 "present" if vendor in expected else None))
            continue
        for path, a, b in compare_json("", json.loads(on_disk[vendor].read_text()), expected[vendor]):
            report.differences.append(Difference(surface, vendor, path, a, b))
    report.surfaces.append("vendors/*.json")
    row_csv = out_dir / "public_row_scores.csv"
    if queries or row_csv.exists():
        report.differences += compare_csv("public_row_scores.csv", _read(row_csv),
                                          public_row_scores_csv(queries) if queries else "", ("row_id", "vendor"))
        report.surfaces.append("public_row_scores.csv")
    return report


def _read(path: Path) -> str:
    """A published file's text; a missing file reads as empty, so each of its figures is reported."""
    return path.read_text(encoding="utf-8") if path.exists() else ""
