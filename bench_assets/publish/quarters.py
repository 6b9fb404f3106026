"""The quarters read together: above the snapshot folders of `data/publish/`, an index page
(`index.html`) and machine-readable files (`quarters.json`, `quarters.csv`) of every published
quarter, read from the published files alone (each folder's `leaderboard.json`, `errata.json` and
`public_row_scores.csv`), so anyone can rebuild them from the folders.

Per vendor and quarter: the ranking figure with its interval and rank range, the overfit gap
with its interval. A gap whose interval stays above zero quarter after quarter is the
methodology's tuning signal ("a persistent positive gap indicates tuning to the published set"):
it is named where it happens. Between consecutive quarters, on the public rows carried over (same
rows, asked again): each vendor's paired change, McNemar's exact test as within a snapshot.
Errata versions (`<id>-eN` folders) are listed with the quarter they correct. Per vendor, a chart
of both figures across the quarters (`trends/<vendor>.svg`).

Rewritten after every publication; the snapshot folders themselves are never touched.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from itertools import pairwise
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from bench_assets.metrics.paired import mcnemar_exact_p
from bench_assets.publish.charts import quarter_trend_figure, render
from bench_assets.publish.errata import base_of

TEMPLATES = Path(__file__).parent / "templates"
INDEX_FILES = ("index.html", "quarters.json", "quarters.csv")
TRENDS_DIR = "trends"  # one chart per vendor across the quarters, beside the index
CSV_COLUMNS = [
    "snapshot_id",
    "quarter",
    "mode",
    "vendor",
    "status",
    "rank_metric",
    "rank_value",
    "rank_low",
    "rank_high",
    "rank_n",
    "rank_best",
    "rank_worst",
    "overfit_gap",
    "overfit_gap_low",
    "overfit_gap_high",
    "overfit_gap_positive",
]


def _quarter_key(snapshot_id: str) -> tuple[int, int]:
    match = re.search(r"-(20[0-9]{2})-q([1-4])", snapshot_id)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _figure(metrics: dict[str, Any], name: str) -> dict[str, Any]:
    fig = metrics.get(name) or {}
    return {k: fig.get(k) for k in ("value", "low", "high", "n")}


def read_quarters(publish_dir: Path) -> list[dict[str, Any]]:
    """Every published quarter (the newest version of each, its earlier versions and errata listed
    with it), oldest first."""
    folders = sorted(p.parent for p in publish_dir.glob("*/leaderboard.json"))
    by_base: dict[str, list[Path]] = {}
    for folder in folders:
        by_base.setdefault(base_of(folder.name), []).append(folder)
    quarters = []
    for base in sorted(by_base, key=lambda b: (_quarter_key(b), b)):
        versions = sorted(by_base[base], key=lambda p: (len(p.name), p.name))
        latest = versions[-1]
        board = json.loads((latest / "leaderboard.json").read_text(encoding="utf-8"))
        errata: list[dict[str, Any]] = []
        for version in versions:
            path = version / "errata.json"
            if path.exists():
                for entry in json.loads(path.read_text(encoding="utf-8")) or []:
                    if entry.get("id") not in {e.get("id") for e in errata}:
                        errata.append(entry)
        quarters.append(
            {
                "snapshot_id": base,
                "folder": latest.name,
                "versions": [v.name for v in versions],
                "title": board.get("title", ""),
                "mode": board.get("mode"),
                "rank_metric": board.get("rank_metric"),
                "board": board,
                "errata": [
                    {k: e.get(k) for k in ("id", "date", "vendor", "what", "version", "summary")} for e in errata
                ],
                "dir": latest,
            }
        )
    return quarters


def vendor_rows(quarters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per quarter and vendor: the ranking figure and its interval, the rank range, the overfit gap."""
    rows = []
    for q in quarters:
        for v in q["board"].get("vendors", []):
            metrics = v.get("metrics") or {}
            rank = _figure(metrics, q["rank_metric"] or "correct_rate")
            gap = _figure(metrics, "overfit_gap")
            rng = v.get("rank_range") or {}
            rows.append(
                {
                    "snapshot_id": q["snapshot_id"],
                    "quarter": "{}-q{}".format(*_quarter_key(q["snapshot_id"])),
                    "mode": q["mode"],
                    "vendor": v["vendor"],
                    "status": v.get("status"),
                    "rank_metric": q["rank_metric"],
                    "rank_value": rank["value"],
                    "rank_low": rank["low"],
                    "rank_high": rank["high"],
                    "rank_n": rank["n"],
                    "rank_best": rng.get("best"),
                    "rank_worst": rng.get("worst"),
                    "overfit_gap": gap["value"],
                    "overfit_gap_low": gap["low"],
                    "overfit_gap_high": gap["high"],
                    "overfit_gap_positive": gap["low"] is not None and gap["low"] > 0,
                }
            )
    return rows


def tuning_signals(rows: list[dict[str, Any]], quarters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Vendors whose overfit gap's interval lies above zero in two or more consecutive quarters."""
    order = [q["snapshot_id"] for q in quarters]
    positive = {(r["vendor"], r["snapshot_id"]) for r in rows if r["overfit_gap_positive"]}
    signals = []
    for vendor in sorted({r["vendor"] for r in rows}):
        run: list[str] = []
        for snapshot in order:
            if (vendor, snapshot) in positive:
                run.append(snapshot)
                continue
            if len(run) >= 2:
                signals.append({"vendor": vendor, "quarters": run})
            run = []
        if len(run) >= 2:
            signals.append({"vendor": vendor, "quarters": run})
    return signals


def paired_changes(quarters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per vendor and pair of consecutive quarters, on the public rows both scored for it: rows
    correct only before, only after, the change in correct rate and McNemar's exact p."""
    out = []
    for before, after in pairwise(quarters):
        frames = []
        for q in (before, after):
            path = q["dir"] / "public_row_scores.csv"
            if not path.exists():
                break
            frames.append(pd.read_csv(path, usecols=["row_id", "vendor", "correct"]))
        if len(frames) < 2:
            continue
        both = frames[0].merge(frames[1], on=["row_id", "vendor"], suffixes=("_before", "_after"))
        for vendor, group in sorted(both.groupby("vendor"), key=lambda kv: str(kv[0])):
            was = group["correct_before"].astype("boolean").fillna(False).astype(bool)
            now = group["correct_after"].astype("boolean").fillna(False).astype(bool)
            only_before, only_after = int((was & ~now).sum()), int((~was & now).sum())
            out.append(
                {
                    "vendor": str(vendor),
                    "from": before["snapshot_id"],
                    "to": after["snapshot_id"],
                    "rows": len(group),
                    "correct_only_before": only_before,
                    "correct_only_after": only_after,
                    "change": round((only_after - only_before) / len(group), 6) if len(group) else None,
                    "mcnemar_p": round(mcnemar_exact_p(only_before, only_after), 6),
                }
            )
    return out


def write_quarters_index(publish_dir: Path) -> list[Path]:
    """Write `index.html`, `quarters.json` and `quarters.csv` above the snapshot folders (nothing
    when no quarter is published). Returns the files written. Two snapshots published beside each
    other both rewrite it: one at a time (a lock beside the site, not in it), each reading every
    quarter published so far, so the last one written lists both."""
    with FileLock(f"{publish_dir}.lock"):
        return _write_quarters_index(publish_dir)


def _write_quarters_index(publish_dir: Path) -> list[Path]:
    quarters = read_quarters(publish_dir)
    if not quarters:
        return []
    rows = vendor_rows(quarters)
    signals = tuning_signals(rows, quarters)
    changes = paired_changes(quarters)
    listed = [{k: v for k, v in q.items() if k not in ("board", "dir")} for q in quarters]
    record = {
        "quarters": listed,
        "vendors": rows,
        "tuning_signals": signals,
        "paired_changes": changes,
        "notes": {
            "tuning_signal": "an overfit gap (public minus holdout accuracy) whose 95 % interval lies above "
            "zero in two or more consecutive quarters: the methodology's sign of tuning to the published set",
            "paired_changes": "public rows carried over from one quarter to the next, scored for the vendor "
            "in both: rows correct only before / only after, McNemar's exact test",
        },
    }
    (publish_dir / "quarters.json").write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (publish_dir / "quarters.csv").write_text(buffer.getvalue())
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    vendors = sorted({r["vendor"] for r in rows})
    cell = {(r["vendor"], r["snapshot_id"]): r for r in rows}
    trends = write_trend_charts(publish_dir, rows, quarters, signals)
    trend_files = [publish_dir / t["src"] for t in trends]
    html = env.get_template("quarters.html.j2").render(
        quarters=listed,
        vendors=vendors,
        cell=cell,
        signals=signals,
        changes=changes,
        notes=record["notes"],
        trends=trends,
    )
    (publish_dir / "index.html").write_text(html)
    return [publish_dir / name for name in INDEX_FILES] + trend_files


def write_trend_charts(
    publish_dir: Path, rows: list[dict[str, Any]], quarters: list[dict[str, Any]], signals: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One chart per vendor across the quarters (`trends/<vendor>.svg`, charts.quarter_trend_figure),
    drawn from the rows the tables show; returns what the page shows of each: its file, its
    caption (with the tuning signal where the gap stays above zero)."""
    trends_dir = publish_dir / TRENDS_DIR
    if trends_dir.exists():
        shutil.rmtree(trends_dir)  # a vendor no longer published leaves no stale chart
    order = {q["snapshot_id"]: i for i, q in enumerate(quarters)}
    metric = quarters[-1]["rank_metric"] or "correct_rate"
    shown = []
    for vendor in sorted({r["vendor"] for r in rows}):
        mine = sorted((r for r in rows if r["vendor"] == vendor), key=lambda r: order[r["snapshot_id"]])
        signal = [q for s in signals if s["vendor"] == vendor for q in s["quarters"]]
        figure = quarter_trend_figure(vendor, mine, metric, signal)
        if figure is None:
            continue
        trends_dir.mkdir(exist_ok=True)
        path = trends_dir / f"{vendor}.svg"
        path.write_bytes(render(figure, "svg"))
        statement = (
            f"The overfit gap's interval lies above zero in {', '.join(signal)}: the methodology's sign of "
            "tuning to the published set."
            if signal
            else "The overfit gap's interval does not stay above zero in two consecutive quarters."
        )
        shown.append(
            {
                "vendor": vendor,
                "src": path.relative_to(publish_dir).as_posix(),
                "alt": f"{vendor}: {metric} and overfit gap with 95 % intervals per quarter",
                "caption": f"{vendor}: {metric} (left) and overfit gap (right) per quarter, with 95 % intervals. "
                + statement,
                "signal": bool(signal),
            }
        )
    return shown
