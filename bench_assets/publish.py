"""Rendering a snapshot's published files from one leaderboard record.

`data/publish/<snapshot_id>/`: index.html, a page per vendor, methodology.html, leaderboard.json,
leaderboard.csv, public_split.jsonl and errata.json. Everything works offline (no CDN). The
holdout never reaches these files: `find_holdout_leaks` scans them before they are kept.
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import io
import json
import shutil
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from bench_assets import metrics
from bench_assets.classify import RESPONSE_CLASSES
from bench_assets.leaderboard import HEADLINE_METRICS, leaderboard_rows
from bench_assets.manifest import Manifest

TEMPLATES = Path(__file__).parent / "templates"
LEADERBOARD_COLUMNS = ["correct_rate", "hit_at_1", "hit_at_5", "hit_at_10", "fidelity_mean", "coverage",
                       "cost_per_correct_usd", "overfit_gap", "latency_p50_ms"]
SCOPE_COLUMNS = ["correct_rate", "hit_at_1", "hit_at_5", "hit_at_10", "fidelity_mean", "coverage"]
DEFINITIONS = ["normalize_url", "hit_at_k", "extraction_fidelity", "answer_in_text", "wilson_interval",
               "overfit_gap", "cost_per_correct", "km_median", "tie_groups"]


def format_figure(metric: str, fig: dict[str, Any] | None) -> str:
    """One figure as shown on every HTML surface: value, then n and the interval."""
    if not fig or fig.get("value") is None:
        return "—"
    v = fig["value"]
    if metric.endswith("_usd"):
        text = f"${v:.4f}"
    elif metric.endswith("_ms"):
        text = f"{v:.0f} ms"
    else:
        text = f"{v:.3f}"
    detail = f"n={fig['n']}"
    if fig.get("low") is not None and fig.get("high") is not None:
        detail += f" [{fig['low']:.3f}, {fig['high']:.3f}]"
    return f'{text}<span class="ci">{detail}</span>'


def _interval(fig: dict[str, Any]) -> str:
    if fig.get("low") is None or fig.get("high") is None:
        return "—"
    return f"[{fig['low']:.3f}, {fig['high']:.3f}]"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    env.globals.update(fmt=format_figure, interval=_interval)
    return env


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def leaderboard_csv(board: dict[str, Any]) -> str:
    rows = leaderboard_rows(board)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def render_site(out_dir: Path, board: dict[str, Any], manifest: Manifest, public_rows: list[dict[str, Any]],
                errata: list[dict[str, Any]]) -> list[Path]:
    """Write every published file of the snapshot; returns the paths written."""
    env = _environment()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    written: list[Path] = []

    def put(rel: str, text: str) -> None:
        _write(out_dir / rel, text)
        written.append(out_dir / rel)

    put("index.html", env.get_template("index.html.j2").render(board=board, columns=LEADERBOARD_COLUMNS, root=""))
    for e in board["vendors"]:
        if e["status"] == "scored":
            put(f"vendors/{e['vendor']}.html", env.get_template("vendor.html.j2").render(
                board=board, e=e, scope_columns=SCOPE_COLUMNS, root="../"))
    definitions = [(name, inspect.cleandoc(getattr(metrics, name).__doc__ or "")) for name in DEFINITIONS
                   if hasattr(metrics, name)]
    put("methodology.html", env.get_template("methodology.html.j2").render(
        board=board, manifest=manifest, definitions=definitions, classes=RESPONSE_CLASSES, root=""))
    put("leaderboard.json", json.dumps(board, indent=2, sort_keys=True) + "\n")
    put("leaderboard.csv", leaderboard_csv(board))
    put("public_split.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in public_rows))
    put("errata.json", json.dumps(errata, indent=2) + "\n")
    for asset in ("style.css", "sort.js"):
        put(asset, (TEMPLATES / asset).read_text(encoding="utf-8"))
    return written


def find_holdout_leaks(out_dir: Path, holdout: list[dict[str, Any]]) -> list[str]:
    """Every place a holdout id, query text or golden URL appears in a published file."""
    needles: list[tuple[str, str]] = []
    for row in holdout:
        needles.append(("id", row["row_id"]))
        if row.get("request_text"):
            needles.append(("text", row["request_text"]))
        for url in row.get("golden_urls", []):
            needles.append(("url", url))
    leaks = []
    for path in sorted(out_dir.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for kind, needle in needles:
            if needle and needle in text:
                leaks.append(f"{path.relative_to(out_dir)}: holdout {kind} {needle[:60]!r}")
    return leaks


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


__all__ = ["render_site", "find_holdout_leaks", "leaderboard_csv", "format_figure", "HEADLINE_METRICS"]
