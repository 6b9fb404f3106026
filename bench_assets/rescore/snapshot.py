"""`bench rescore`: re-derive every score and aggregate from the archive, compare with every published surface.

No vendor is called: the raw responses in the warehouse are parsed, classified and scored again
with the current code, aggregated, and the whole published site is rendered again from the result,
with the renderer publication uses (`publish.site_inputs` → `SiteInputs.render`), into a
temporary directory. Then it is compared with what was published or stored:

- `leaderboard.json`, `leaderboard.csv`, `vendors/<vendor>.json` and `public_row_scores.csv` in
  `data/publish/<snapshot>/`, figure by figure;
- every other published file (the HTML pages, the charts' SVG, llms.txt, the integrity files, the
  stylesheet ...) byte for byte: a file that differs is reported with, for HTML and SVG, the first
  text that differs and where it sits (vendor, table, metric), else the first line that differs;
  a file on one side only is reported as missing or added;
- the `publications` table, which recorded every published file's SHA-256: a file changed since
  publication is reported even where its figures agree, and every difference says whether the
  file is still as published;
- the `row_scores` table (one verdict per vendor and golden row), so a row-level change that
  cancels out in the aggregates is still reported;
- the `vendor_metrics` table, which every page is rendered from, and the `vendor_comparisons`
  table (every pair's paired test, which rank ranges and letters follow from).

It also compares its own code, Python, package and adapter versions and the input files' SHA-256
with those the publication recorded (`fetch.versions`) and warns, without failing, where they
differ: a re-derivation that agrees under other versions is still worth knowing about.

Rendering reads no clock: the one date the site states (the review record's publication date) is
taken from the publication's record, so an untouched snapshot re-renders byte for byte. Each
difference names the surface, the vendor, the figure, row or text, and both values. After a
scoring fix this costs nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from selectolax.lexbor import LexborHTMLParser

from bench_assets.adapters import get_adapter
from bench_assets.agent_ready.records import load_trial_records
from bench_assets.aggregate import eligibility
from bench_assets.aggregate.comparisons import COMPARISON_COLUMNS, vendor_comparisons
from bench_assets.aggregate.figures import METRIC_COLUMNS, vendor_metrics
from bench_assets.aggregate.leaderboard import build_leaderboard
from bench_assets.errors import BenchInputError
from bench_assets.fetch.versions import environment_record, recorded_versions, version_warnings
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.store import load_golden_rows
from bench_assets.golden.verify import row_urls
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.publish.files import EXTRA_FILE_NOTES
from bench_assets.publish.guard import PublicationGuard
from bench_assets.publish.inputs import private_terms, site_inputs, ttr_as_of
from bench_assets.publish.site import SiteInputs
from bench_assets.score.partition import RESULT_COLUMNS, SCORE_COLUMNS, score_partition
from bench_assets.sentinels.probes import rederive_outcomes
from bench_assets.sentinels.ttr import AS_OF_METRIC, snapshot_ttr_metrics
from bench_assets.split.assign import split_key
from bench_assets.split.decoys import decoys_for_snapshot
from bench_assets.split.leaks import LeakGuard
from bench_assets.storage import lifecycle
from bench_assets.storage.warehouse import Warehouse

TOLERANCE = 1e-9
ROW_SCORES = "row_scores (DuckDB)"
VENDOR_METRICS = "vendor_metrics (DuckDB)"
VENDOR_COMPARISONS = "vendor_comparisons (DuckDB)"
# Published files compared figure by figure (the rest of the site is compared as files).
FIGURE_FILES = ("leaderboard.json", "leaderboard.csv", "pairwise.csv", "public_row_scores.csv")
EXCERPT = 120  # characters of a differing line shown each side


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
        return (
            f"{self.surface} · vendor {self.vendor or '—'} · {self.item}: "
            f"{side} {self.published!r}, derived {self.derived!r}"
        )


@dataclass
class RescoreReport:
    snapshot_id: str
    rows_rescored: int = 0
    vendors: list[str] = field(default_factory=list)
    surfaces: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = (
            f"rescored {self.snapshot_id}: {self.rows_rescored} row scores for {len(self.vendors)} vendors "
            f"from archived responses (no vendor called); compared {', '.join(self.surfaces) or 'nothing'}"
        )
        head += "".join(f"\nnote: {n}" for n in self.notes)
        head += "".join(f"\nwarning: {w}" for w in self.warnings)
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
        vendor, _, rest = path[len(prefix) :].partition("]")
        return vendor, rest.lstrip(".") or "(entry)"
    return None, path


def compare_csv(
    surface: str, published: str, derived: str, key: tuple[str, ...], vendor_column: str = "vendor"
) -> list[Difference]:
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
            out.append(
                Difference(surface, vendor, where or "row", None if a is None else "row", None if b is None else "row")
            )
            continue
        for column in columns:
            if not same_value(a[column] or None, b[column] or None, text=True):
                item = f"{where}: {column}" if where else column
                out.append(Difference(surface, vendor, item, a[column], b[column]))
    return out


def compare_frames(
    surface: str, stored: pd.DataFrame, derived: pd.DataFrame, key: list[str], columns: list[str]
) -> list[Difference]:
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
                out.append(
                    Difference(
                        surface, vendor, f"{where}: {column}", _plain(a[k].get(column)), _plain(b[k].get(column))
                    )
                )
    return out


# ##### RE-DERIVING


def _with_ttr(
    metrics: pd.DataFrame, warehouse: Warehouse, manifest: Manifest
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Time-to-retrievability re-derived from the archived probe responses (each re-read with
    its vendor's adapter), over the probe ticks the aggregate included (its `ttr_as_of`).
    Returns the metrics with it, the sentinel pages and the re-derived probes (for the chart)."""
    snapshot_id = manifest.snapshot_id
    pages = warehouse.query_df("SELECT * FROM sentinel_pages WHERE snapshot_id = ?", [snapshot_id])
    probes = warehouse.query_df("SELECT * FROM sentinel_probes WHERE snapshot_id = ?", [snapshot_id])
    probes = rederive_outcomes(probes, pages, {v: get_adapter(s.adapter) for v, s in manifest.vendors.items()})
    as_of = warehouse.query_df(
        "SELECT max(value) AS t FROM vendor_metrics WHERE snapshot_id = ? AND metric = ?", [snapshot_id, AS_OF_METRIC]
    )["t"][0]
    if pd.isna(as_of):
        return metrics, pages, probes
    ttr = snapshot_ttr_metrics(snapshot_id, pages, probes, datetime.fromtimestamp(float(as_of), UTC))
    return (pd.concat([metrics, ttr], ignore_index=True) if len(ttr) else metrics), pages, probes


def _publication_date(warehouse: Warehouse, snapshot_id: str, out_dir: Path) -> date:
    """The date the publication states (its review record's `published_on`), else the date of the
    publication time recorded in `publications`: never today, so an untouched site re-renders as it was."""
    try:
        return date.fromisoformat(json.loads((out_dir / "review.json").read_text(encoding="utf-8"))["published_on"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    recorded = warehouse.query_df(
        "SELECT max(published_at) AS t FROM publications WHERE snapshot_id = ?", [snapshot_id]
    )["t"][0]
    if not pd.isna(recorded):
        return pd.Timestamp(recorded).tz_convert("UTC").date()
    return datetime.now(UTC).date()  # nothing recorded: review.json, if any, is reported


def derived_site_inputs(
    root: Path,
    warehouse: Warehouse,
    manifest: Manifest,
    board: dict[str, Any],
    rows: list[GoldenRow],
    split: dict[str, str],
    scores: pd.DataFrame,
    results: pd.DataFrame,
    raw: pd.DataFrame,
    metrics: pd.DataFrame,
    pages: pd.DataFrame,
    probes: pd.DataFrame,
    private_dir: Path,
    notes: list[str],
) -> SiteInputs:
    """What publication would render the site from, with the re-derived record, scores and probes.
    Integrity's files (holdout commitments, exclusions ledger, review record) are rendered as the
    publication guard renders them, dated by the publication's record; their keyed digests need
    the split secret, so without it (a live snapshot, $BENCH_SPLIT_KEY unset) the published copies
    are used and checked against their recorded SHA-256 only (said in `notes`)."""
    snapshot_id = manifest.snapshot_id
    out_dir = root / "data" / "publish" / snapshot_id
    terms, _ = private_terms(private_dir, manifest, warehouse, rows, split)
    try:
        secret = split_key(manifest.split.key_env, manifest.mode)
        decoys = decoys_for_snapshot(manifest, rows, split, private_dir)
    except BenchInputError as exc:
        secret, decoys = None, []
        notes.append(
            f"integrity files and decoys not re-derived ({exc}); the published copies are checked against "
            "their recorded SHA-256"
        )
    needles = [{"row_id": d.id, "request_text": d.request_text, "golden_urls": row_urls(d)} for d in decoys]
    if secret is not None:
        published = lifecycle.snapshot_status(warehouse, snapshot_id) == lifecycle.PUBLISHED
        guard = PublicationGuard(
            warehouse,
            manifest,
            board,
            rows,
            split,
            secret,
            lifecycle.PUBLISHED if published else lifecycle.DRAFT,
            _publication_date(warehouse, snapshot_id, out_dir),
        )
        extra = guard.files()
    else:
        extra = {
            rel: (out_dir / rel).read_text(encoding="utf-8") for rel in EXTRA_FILE_NOTES if (out_dir / rel).is_file()
        }
    return site_inputs(
        manifest,
        board,
        rows,
        split,
        snapshot_dir=root / "data" / "snapshots" / snapshot_id,
        scores=scores,
        results=results,
        raw=raw,
        sentinel_pages=pages,
        sentinel_probes=probes,
        as_of=ttr_as_of(metrics),
        recorded_replies=warehouse.rows("vendor_replies", snapshot_id, columns=["vendor", "path", "sha256"]),
        leak_guard=LeakGuard(terms + needles),
        extra_files=extra,
    )


# ##### COMPARING PUBLISHED FILES


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(directory: Path) -> dict[str, Path]:
    return (
        {p.relative_to(directory).as_posix(): p for p in sorted(directory.rglob("*")) if p.is_file()}
        if directory.exists()
        else {}
    )


def _vendor_of_file(rel: str) -> str | None:
    """The vendor a file belongs to: vendors/<vendor>.html|json, replies/<vendor>.html."""
    parts = rel.split("/")
    if len(parts) == 2 and parts[0] in ("vendors", "replies"):
        return parts[1].rsplit(".", 1)[0]
    return None


def _where(node: Any) -> tuple[str | None, str]:
    """The vendor a text node belongs to (an ancestor's `data-vendor`, or the drill-down section of
    one vendor) and where it sits: its nearest ancestors that carry an id, vendor, metric, breakdown
    group or response class."""
    vendor, parts = None, []
    current = node.parent
    while current is not None and current.tag not in ("body", "html", "-document"):
        attrs = current.attributes or {}
        if vendor is None and attrs.get("data-vendor"):
            vendor = attrs["data-vendor"]
        if vendor is None and current.tag == "section" and "vendor-result" in (attrs.get("class") or ""):
            vendor = attrs.get("id")
        bits = [f"#{attrs['id']}"] if attrs.get("id") else []
        bits += [
            f"[{k}={attrs[k]}]"
            for k in ("data-vendor", "data-metric", "data-scope-value", "data-class")
            if attrs.get(k)
        ]
        if bits:
            parts.append(current.tag + "".join(bits))
        current = current.parent
    return vendor, " ".join(reversed(parts[:3]))


def _texts(markup: str) -> list[tuple[str, Any]]:
    """The text a reader sees (each text node, whitespace collapsed) with its node; not scripts or styles."""
    out = []
    for node in LexborHTMLParser(markup).root.traverse(include_text=True):
        if node.tag == "-text" and node.parent is not None and node.parent.tag not in ("script", "style"):
            text = " ".join((node.text_content or "").split())
            if text:
                out.append((text, node))
    return out


def _excerpt(line: str, at: int) -> str:
    start = max(0, at - EXCERPT // 3)
    return ("…" if start else "") + line[start : start + EXCERPT] + ("…" if start + EXCERPT < len(line) else "")


def first_difference(rel: str, published: bytes, derived: bytes) -> tuple[str | None, str, Any, Any]:
    """Where two versions of a published file first differ, as (vendor, item, published, derived):
    for HTML and SVG the first text a reader sees that differs, with where it sits; else (or when
    only markup differs) the first line that differs, excerpted; for bytes that are not UTF-8 their
    SHA-256."""
    try:
        a, b = published.decode("utf-8"), derived.decode("utf-8")
    except UnicodeDecodeError:
        return None, "bytes (sha256)", _sha256(published), _sha256(derived)
    if rel.endswith((".html", ".svg")):
        left, right = _texts(a), _texts(b)
        for (x, _node_a), (y, node_b) in zip(left, right):
            if x != y:
                vendor, where = _where(node_b)
                return vendor, f"text in {where}" if where else "text", x, y
        if len(left) != len(right):
            extra, node = (left[len(right)], "published") if len(left) > len(right) else (right[len(left)], "derived")
            vendor, where = _where(extra[1])
            text = extra[0]
            return (
                vendor,
                f"text in {where}" if where else "text",
                text if node == "published" else None,
                text if node == "derived" else None,
            )
    lines_a, lines_b = a.splitlines(), b.splitlines()
    for number, (x, y) in enumerate(zip(lines_a, lines_b), start=1):
        if x != y:
            at = next((i for i, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
            return None, f"line {number}", _excerpt(x, at), _excerpt(y, at)
    number = min(len(lines_a), len(lines_b)) + 1
    return (
        None,
        f"line {number}",
        (lines_a[number - 1] if len(lines_a) >= number else None),
        (lines_b[number - 1] if len(lines_b) >= number else None),
    )


def compare_site(
    out_dir: Path, derived_dir: Path, recorded: dict[str, str], figure_differences: dict[str, int]
) -> list[Difference]:
    """Every published file against its re-rendering and against the SHA-256 recorded at
    publication (`recorded`: path → digest). Files in `figure_differences` (path → differences
    found) were compared figure by figure: for them only a change the figures do not show (e.g.
    formatting) is reported, as a digest that is not the recorded one."""
    published, derived = _files(out_dir), _files(derived_dir)
    out: list[Difference] = []
    for rel in sorted(set(published) | set(derived) | set(recorded)):
        vendor = _vendor_of_file(rel)
        data = published[rel].read_bytes() if rel in published else None
        digest = _sha256(data) if data is not None else None
        as_published = (
            ""
            if rel not in recorded or digest is None
            else (" (as published)" if digest == recorded[rel] else " (changed since publication)")
        )
        if figure_differences.get(rel):
            continue  # its figures differ: reported above
        if data is None:
            out.append(
                Difference(
                    rel,
                    vendor,
                    "(file)",
                    None if rel in derived else "missing: recorded at publication",
                    "present" if rel in derived else None,
                )
            )
            continue
        if rel not in derived:
            out.append(
                Difference(
                    rel,
                    vendor,
                    "(file)",
                    "present" + (" (recorded at publication)" if rel in recorded else " (not recorded at publication)"),
                    None,
                )
            )
            continue
        if rel in figure_differences:  # its figures agree: only other bytes can differ
            if rel in recorded and digest != recorded[rel]:
                out.append(Difference(rel, vendor, "sha256 (figures agree)", recorded[rel], digest))
            continue
        fresh = derived[rel].read_bytes()
        if data != fresh:
            where_vendor, item, a, b = first_difference(rel, data, fresh)
            out.append(Difference(rel, where_vendor or vendor, item + as_published, a, b))
        elif rel in recorded and digest != recorded[rel]:
            out.append(Difference(rel, vendor, "sha256", recorded[rel], digest))
        elif recorded and rel not in recorded:
            out.append(Difference(rel, vendor, "(file) not recorded at publication", None, "present"))
    return out


def rescore_snapshot(
    root: Path,
    snapshot_id: str,
    warehouse: Warehouse | None = None,
    *,
    lake_url: str | None = None,
    private_dir: str | Path | None = None,
) -> RescoreReport:
    """Re-derive the snapshot's row scores, aggregates and published files from its archive and
    report every difference from what is stored and published. Reads only (the site is re-rendered
    into a temporary directory); calls no vendor. `private_dir` defaults to $BENCH_PRIVATE_DIR,
    else data/private (where the publication found the dead holdout rows and the decoy pool)."""
    manifest = load_manifest(root / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    if warehouse is None:
        warehouse = Warehouse(root / "data" / "warehouse" / "bench.duckdb", lake_url=lake_url)
    rows = load_golden_rows(warehouse, snapshot_id)
    split = warehouse.split(snapshot_id)
    raw_all = warehouse.rows("raw_responses", snapshot_id)
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
    metrics, pages, probes = _with_ttr(metrics, warehouse, manifest)
    comparisons = vendor_comparisons(snapshot_id, scores)
    # Agent-ready trials are evidence like raw responses: read as archived, not re-run; so are the
    # versions the snapshot was fetched and published with (this run's own are compared below).
    trials = load_trial_records(warehouse, snapshot_id)
    recorded = recorded_versions(warehouse, snapshot_id)
    board = build_leaderboard(
        manifest,
        metrics,
        complete,
        trials,
        snapshot_reasons=eligibility.snapshot_reasons(warehouse, manifest),  # e.g. no declaration
        comparisons=comparisons,
        versions=recorded,
    )
    derived_board = json.loads(json.dumps(board))
    private = (
        Path(private_dir) if private_dir else Path(os.environ.get("BENCH_PRIVATE_DIR") or root / "data" / "private")
    )
    report.warnings += _version_warnings(recorded, environment_record(manifest, root, private))

    # The warehouse: every row's verdict, and the aggregates the pages are rendered from.
    stored_scores = warehouse.rows("row_scores", snapshot_id)
    report.differences += compare_frames(
        ROW_SCORES,
        stored_scores,
        scores,
        ["vendor", "row_id"],
        [c for c in SCORE_COLUMNS if c not in ("snapshot_id", "vendor", "row_id")],
    )
    stored_metrics = warehouse.rows("vendor_metrics", snapshot_id)
    report.differences += compare_frames(
        VENDOR_METRICS,
        stored_metrics,
        metrics,
        ["vendor", "scope", "scope_value", "metric"],
        ["value", "n", "low", "high"],
    )
    report.differences += compare_frames(
        VENDOR_COMPARISONS,
        warehouse.rows("vendor_comparisons", snapshot_id),
        comparisons,
        ["vendor_a", "vendor_b"],
        [c for c in COMPARISON_COLUMNS if c not in ("snapshot_id", "vendor_a", "vendor_b")],
    )
    report.surfaces += [ROW_SCORES, VENDOR_METRICS, VENDOR_COMPARISONS]

    out_dir = root / "data" / "publish" / snapshot_id
    published_path = out_dir / "leaderboard.json"
    if not published_path.exists():
        report.differences.append(
            Difference(str(published_path), None, "leaderboard.json", None, "nothing published yet")
        )
        return report
    # The whole site, rendered again from the re-derived record as publication renders it.
    inputs = derived_site_inputs(
        root,
        warehouse,
        manifest,
        derived_board,
        rows,
        split,
        scores,
        results,
        raw_all,
        metrics,
        pages,
        probes,
        private,
        report.notes,
    )
    with tempfile.TemporaryDirectory(prefix=f"rescore-{snapshot_id}-") as tmp:
        derived_dir = Path(tmp) / snapshot_id
        inputs.render(derived_dir)
        report.differences += _compare_published(out_dir, derived_dir, derived_board, warehouse, snapshot_id, report)
    return report


def _compare_published(
    out_dir: Path,
    derived_dir: Path,
    derived_board: dict[str, Any],
    warehouse: Warehouse,
    snapshot_id: str,
    report: RescoreReport,
) -> list[Difference]:
    """The published files against the re-rendered ones: the figure files figure by figure, then
    every file as a file and against the publication's record."""
    found: list[Difference] = []
    for path, a, b in compare_json("", json.loads(_read(out_dir / "leaderboard.json")), derived_board):
        vendor, item = _vendor_in(path)
        found.append(Difference("leaderboard.json", vendor, item, a, b))
    found += compare_csv(
        "leaderboard.csv", _read(out_dir / "leaderboard.csv"), _read(derived_dir / "leaderboard.csv"), ("vendor",)
    )
    found += compare_csv(
        "pairwise.csv",
        _read(out_dir / "pairwise.csv"),
        _read(derived_dir / "pairwise.csv"),
        ("vendor_a", "vendor_b"),
        vendor_column="vendor_a",
    )
    report.surfaces += ["leaderboard.json", "leaderboard.csv", "pairwise.csv"]

    # Per-vendor files and per-row verdicts, from the public rows' drill-down.
    expected = {p.stem: p for p in sorted((derived_dir / "vendors").glob("*.json"))}
    on_disk = {p.stem: p for p in sorted((out_dir / "vendors").glob("*.json"))}
    for vendor in sorted(set(expected) | set(on_disk)):
        surface = f"vendors/{vendor}.json"
        if vendor not in on_disk or vendor not in expected:
            found.append(
                Difference(
                    surface,
                    vendor,
                    "(file)",
                    "present" if vendor in on_disk else None,
                    "present" if vendor in expected else None,
                )
            )
            continue
        for path, a, b in compare_json("", json.loads(_read(on_disk[vendor])), json.loads(_read(expected[vendor]))):
            found.append(Difference(surface, vendor, path, a, b))
    report.surfaces.append("vendors/*.json")
    row_csv, derived_rows = out_dir / "public_row_scores.csv", derived_dir / "public_row_scores.csv"
    if derived_rows.exists() or row_csv.exists():
        found += compare_csv("public_row_scores.csv", _read(row_csv), _read(derived_rows), ("row_id", "vendor"))
        report.surfaces.append("public_row_scores.csv")

    # Every published file, and the SHA-256 each had when it was published.
    figure_differences = {
        rel: sum(1 for d in found if d.surface == rel)
        for rel in [*FIGURE_FILES, *(f"vendors/{v}.json" for v in set(expected) | set(on_disk))]
    }
    records = warehouse.rows("publications", snapshot_id, columns=["path", "sha256"])
    recorded = {Path(p).as_posix(): digest for p, digest in zip(records["path"], records["sha256"])}
    if not recorded:
        report.notes.append("no publication record (publications table): files compared with the re-rendering only")
    site = compare_site(out_dir, derived_dir, recorded, figure_differences)
    report.surfaces.append(f"site ({len(_files(derived_dir))} files re-rendered: pages, charts, data files)")
    if recorded:
        report.surfaces.append("publications (SHA-256 per file)")
    return found + site


def _version_warnings(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Where this rescore's code, environment and inputs differ from the publication's record, and
    its adapters from the ones each vendor's responses were last fetched with."""
    out = []
    if recorded.get("publication"):
        out += version_warnings(recorded["publication"], current, "the publication")
    else:
        out.append("no versions were recorded at publication (publication_versions): nothing to compare with")
    for vendor, runs in sorted((recorded.get("fetch") or {}).items()):
        fetched = (runs[-1].get("adapters") or {}).get(vendor, {}).get("version")
        now = (current.get("adapters") or {}).get(vendor, {}).get("version")
        if fetched is not None and now is not None and fetched != now:
            out.append(f"adapter {vendor}: version {now} parses responses fetched with version {fetched}")
    return out


def _read(path: Path) -> str:
    """A published file's text; a missing file reads as empty, so each of its figures is reported."""
    return path.read_text(encoding="utf-8") if path.exists() else ""
