"""`bench rescore`: re-derive every score and aggregate from the archive, compare with every published surface.

No vendor is called: the raw responses in the warehouse are parsed, classified and scored again
with the current code, aggregated, and the whole published site is rendered again from the result,
with the renderer publication uses (`publish.site_inputs` → `SiteInputs.render`), each file
compared as it is rendered (`rescore.compare.SiteComparison`; nothing is written). It is
compared with what was published or stored:

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

import gc
import json
import os
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.agent_ready.records import load_trial_records
from bench_assets.aggregate import eligibility
from bench_assets.aggregate.comparisons import COMPARISON_COLUMNS, vendor_comparisons
from bench_assets.aggregate.figures import METRIC_COLUMNS, vendor_metrics
from bench_assets.aggregate.leaderboard import build_leaderboard, public_comparisons_frame
from bench_assets.errors import BenchInputError
from bench_assets.fetch.versions import environment_record, recorded_versions, version_warnings
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.store import load_golden_rows
from bench_assets.golden.verify import row_urls
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.publish.files import EXTRA_FILE_NOTES
from bench_assets.publish.guard import PublicationGuard, holdout_commitment_key
from bench_assets.publish.inputs import private_terms, site_inputs, ttr_as_of
from bench_assets.publish.parse_once import parse_once
from bench_assets.publish.site import SiteInputs
from bench_assets.publish.vendor_part import VendorPart, vendor_part
from bench_assets.publish.workers import ForkedJob, in_processes, worker_count
from bench_assets.rescore.compare import (
    FIGURE_FILES,
    ROW_SCORES,
    VENDOR_COMPARISONS,
    VENDOR_METRICS,
    Difference,
    RescoreReport,
    SiteComparison,
    compare_csv,
    compare_frames,
    compare_json,
    read_text,
    vendor_in,
)
from bench_assets.score.partition import SCORE_COLUMNS, cyclic_gc_paused, read_evidence, score_rows
from bench_assets.sentinels.probes import rederive_outcomes
from bench_assets.sentinels.ttr import AS_OF_METRIC, snapshot_ttr_metrics
from bench_assets.split.assign import split_key
from bench_assets.split.decoys import decoys_for_snapshot
from bench_assets.split.leaks import LeakGuard
from bench_assets.storage import lifecycle
from bench_assets.storage.warehouse import Warehouse

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


@dataclass
class PrivateNeedles:
    """What the re-rendered site must not show (the holdout, dead holdout rows and decoys), as the
    publication gathered it, the split secret its integrity files are keyed with (None without
    it: they cannot be re-derived, `note` says so)."""

    leak_guard: LeakGuard
    secret: bytes | None
    note: str | None


def private_needles(
    manifest: Manifest, warehouse: Warehouse, rows: list[GoldenRow], split: dict[str, str], private_dir: Path
) -> PrivateNeedles:
    """The leak guard the publication used (every private row and decoy) and the split secret."""
    terms, _ = private_terms(private_dir, manifest, warehouse, rows, split)
    note = None
    try:
        secret: bytes | None = split_key(manifest.split.key_env, manifest.mode)
        decoys = decoys_for_snapshot(manifest, rows, split, private_dir)
    except BenchInputError as exc:
        secret, decoys = None, []
        note = (
            f"integrity files and decoys not re-derived ({exc}); the published copies are checked against "
            "their recorded SHA-256"
        )
    needles = [{"row_id": d.id, "request_text": d.request_text, "golden_urls": row_urls(d)} for d in decoys]
    return PrivateNeedles(LeakGuard(terms + needles), secret, note)


def derived_site_inputs(
    root: Path,
    warehouse: Warehouse,
    manifest: Manifest,
    board: dict[str, Any],
    rows: list[GoldenRow],
    split: dict[str, str],
    vendor_parts: list[VendorPart],
    metrics: pd.DataFrame,
    pages: pd.DataFrame,
    probes: pd.DataFrame,
    private: PrivateNeedles,
    notes: list[str],
) -> SiteInputs:
    """What publication would render the site from, with the re-derived record, each vendor's
    part re-derived from its archive (`vendor_part`) and the probes. Integrity's files (holdout
    commitments, exclusions ledger, review record) are rendered as the publication guard renders
    them, dated by the publication's record; their keyed digests need the split secret, so
    without it (a live snapshot, $BENCH_SPLIT_KEY unset) the published copies are used and checked
    against their recorded SHA-256 only (said in `notes`)."""
    snapshot_id = manifest.snapshot_id
    out_dir = root / "data" / "publish" / snapshot_id
    if private.note is not None:
        notes.append(private.note)
    if private.secret is not None:
        published = lifecycle.snapshot_status(warehouse, snapshot_id) == lifecycle.PUBLISHED
        guard = PublicationGuard(
            warehouse,
            manifest,
            board,
            rows,
            split,
            private.secret,
            lifecycle.PUBLISHED if published else lifecycle.DRAFT,
            _publication_date(warehouse, snapshot_id, out_dir),
        )
        extra = guard.files({p.vendor: p.integrity for p in vendor_parts if p.integrity is not None})
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
        vendor_parts=vendor_parts,
        sentinel_pages=pages,
        sentinel_probes=probes,
        as_of=ttr_as_of(metrics),
        recorded_replies=warehouse.rows("vendor_replies", snapshot_id, columns=["vendor", "path", "sha256"]),
        extra_files=extra,
    )


@dataclass
class RescoredVendor:
    """One vendor re-derived from its archive: its row scores, and its part of the site (None
    when nothing is published to compare with)."""

    vendor: str
    scores: pd.DataFrame
    part: VendorPart | None


def rescore_vendor(
    warehouse: Warehouse,
    manifest: Manifest,
    vendor: str,
    rows: list[GoldenRow],
    split: dict[str, str],
    leak_guard: LeakGuard | None,
    shared: dict[Any, Any] | None = None,
    commitment_key: bytes | None = None,
) -> RescoredVendor | None:
    """Score one vendor again from its archived responses (`score.partition`: each final response
    classified and parsed, every attempt priced) and, with `leak_guard`, build its part of the
    site from the same reading, with `commitment_key` its share of the integrity files too (None:
    the vendor has no archived response)."""
    # as scoring does: its objects form no cycles worth the collector's walks
    with cyclic_gc_paused():
        snapshot_id = manifest.snapshot_id
        raw = warehouse.rows("raw_responses", snapshot_id, vendor=vendor)
        if raw.empty:
            return None
        spec = manifest.vendors[vendor]
        adapter = parse_once(get_adapter(spec.adapter))  # scoring and the evidence bundle read each body once
        evidence = read_evidence(adapter, spec.prices_usd, rows, raw, f"{snapshot_id}|{vendor}")
        verdicts: dict[str, Any] = {}
        scores, results = score_rows(
            snapshot_id, vendor, manifest.fidelity_weights, manifest.answer_k, rows, split, evidence, verdicts
        )
        if leak_guard is None:
            return RescoredVendor(vendor, scores, None)
        public = [r for r in rows if split.get(r.id) == "public"]
        public_ids = {r.id for r in public}
        part = vendor_part(
            manifest,
            vendor,
            public,
            raw,
            scores[scores["row_id"].isin(public_ids)],
            results[results["row_id"].isin(public_ids)],
            leak_guard,
            evidence,
            shared,
            adapter,
            verdicts,
            commitment_key,
        )
        return RescoredVendor(vendor, scores, part)


def rescore_snapshot(
    root: Path,
    snapshot_id: str,
    warehouse: Warehouse | None = None,
    *,
    lake_url: str | None = None,
    private_dir: str | Path | None = None,
) -> RescoreReport:
    """Re-derive the snapshot's row scores, aggregates and published files from its archive and
    report every difference from what is stored and published. Reads only (each re-rendered file is
    compared as it is rendered, none is written); calls no vendor. `private_dir` defaults to
    $BENCH_PRIVATE_DIR, else data/private (where the publication found the dead holdout rows and the decoy pool)."""
    manifest = load_manifest(root / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    if warehouse is None:
        warehouse = Warehouse(root / "data" / "warehouse" / "bench.duckdb", lake_url=lake_url)
    rows = load_golden_rows(warehouse, snapshot_id)
    split = warehouse.split(snapshot_id)
    private = (
        Path(private_dir) if private_dir else Path(os.environ.get("BENCH_PRIVATE_DIR") or root / "data" / "private")
    )
    out_dir = root / "data" / "publish" / snapshot_id
    published_path = out_dir / "leaderboard.json"
    # the site is re-rendered only when there is one to compare with
    needles = private_needles(manifest, warehouse, rows, split, private) if published_path.exists() else None
    report = RescoreReport(snapshot_id)
    frames, parts = [], []
    vendors = sorted(manifest.vendors)
    leak_guard = needles.leak_guard if needles else None
    # each vendor's share of the integrity files is read with its part (it needs the split secret)
    key = holdout_commitment_key(needles.secret, snapshot_id) if needles and needles.secret is not None else None
    parent = os.getpid()

    def rescored(vendor: str) -> RescoredVendor | None:
        # in a forked child (`publish.workers`) the warehouse's file lock is the child's own
        mine = warehouse if os.getpid() == parent else warehouse.for_child()
        if os.getpid() != parent:
            gc.disable()  # for good: see `publish.snapshot.published_vendor_parts`
        return rescore_vendor(mine, manifest, vendor, rows, split, leak_guard, commitment_key=key)

    # each vendor from its own archive, side by side in processes of their own (`publish.workers`),
    # the heaviest first
    sizes = warehouse.public_body_chars(snapshot_id)
    for done in in_processes(vendors, rescored, worker_count(len(vendors)), lambda v: sizes.get(v, 0)):
        if done is None:
            continue
        frames.append(done.scores)
        if done.part is not None:
            parts.append(done.part)
        report.vendors.append(done.vendor)
    scores = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SCORE_COLUMNS)
    report.rows_rescored = len(scores)

    def row_scores_compared() -> tuple[list[Difference], pd.DataFrame, pd.DataFrame]:
        """Every row's verdict against the stored one, and the vendors compared pairwise (over
        all rows, and over the public ones for the public figures)."""
        mine = warehouse if os.getpid() == parent else warehouse.for_child()
        differences = compare_frames(
            ROW_SCORES,
            mine.rows("row_scores", snapshot_id),
            scores,
            ["vendor", "row_id"],
            [c for c in SCORE_COLUMNS if c not in ("snapshot_id", "vendor", "row_id")],
        )
        return differences, vendor_comparisons(snapshot_id, scores), public_comparisons_frame(scores, snapshot_id)

    # The warehouse: every row's verdict (150,000 at 12,600 rows) compared, and the pairwise
    # comparisons derived, in a forked child while the metrics are derived here; then the board.
    with ForkedJob(row_scores_compared) as compared:
        metrics = vendor_metrics(snapshot_id, scores) if len(scores) else pd.DataFrame(columns=METRIC_COLUMNS)
        complete = {v for v, n in scores.groupby("vendor").size().items() if n == len(rows)} if len(scores) else set()
        metrics, pages, probes = _with_ttr(metrics, warehouse, manifest)
        # Agent-ready trials are evidence like raw responses: read as archived, not re-run; so are the
        # versions the snapshot was fetched and published with (this run's own are compared below).
        trials = load_trial_records(warehouse, snapshot_id)
        recorded = recorded_versions(warehouse, snapshot_id)
        reasons = eligibility.snapshot_reasons(warehouse, manifest)  # e.g. no declaration
        row_differences, comparisons, public_comparisons = compared.result()
    report.differences += row_differences
    board = build_leaderboard(
        manifest,
        metrics,
        complete,
        trials,
        snapshot_reasons=reasons,
        comparisons=comparisons,
        versions=recorded,
        public_comparisons=public_comparisons,
    )
    derived_board = json.loads(json.dumps(board))
    report.warnings += _version_warnings(recorded, environment_record(manifest, root, private))

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

    if needles is None:
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
        parts,
        metrics,
        pages,
        probes,
        needles,
        report.notes,
    )
    # each file is compared with the published one as it is rendered (nothing is written)
    site = SiteComparison(out_dir, _compared_by_figure)
    inputs.render(site)
    report.differences += _compare_published(out_dir, site, derived_board, warehouse, snapshot_id, report)
    return report


def _compared_by_figure(rel: str) -> bool:
    """The files compared figure by figure (their re-rendered content is kept)."""
    return rel in FIGURE_FILES or (rel.startswith("vendors/") and rel.endswith(".json"))


def _compare_published(
    out_dir: Path,
    site: SiteComparison,
    derived_board: dict[str, Any],
    warehouse: Warehouse,
    snapshot_id: str,
    report: RescoreReport,
) -> list[Difference]:
    """The published files against the re-rendered ones: the figure files figure by figure, then
    every file as a file and against the publication's record."""
    kept = {rel: data.decode("utf-8") for rel, data in site.kept.items()}
    found: list[Difference] = []
    # a file whose text is the re-rendered text has the same figures: only others are read as JSON
    published_board = read_text(out_dir / "leaderboard.json")
    if published_board != kept.get("leaderboard.json"):
        for path, a, b in compare_json("", json.loads(published_board), derived_board):
            vendor, item = vendor_in(path)
            found.append(Difference("leaderboard.json", vendor, item, a, b))
    found += compare_csv(
        "leaderboard.csv",
        read_text(out_dir / "leaderboard.csv"),
        kept.get("leaderboard.csv", ""),
        ("vendor",),
    )
    found += compare_csv(
        "pairwise.csv",
        read_text(out_dir / "pairwise.csv"),
        kept.get("pairwise.csv", ""),
        ("vendor_a", "vendor_b"),
        vendor_column="vendor_a",
    )
    report.surfaces += ["leaderboard.json", "leaderboard.csv", "pairwise.csv"]

    # Per-vendor files and per-row verdicts, from the public rows' drill-down.
    expected = {Path(rel).stem: text for rel, text in sorted(kept.items()) if rel.startswith("vendors/")}
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
        published = read_text(on_disk[vendor])
        if published == expected[vendor]:
            continue
        for path, a, b in compare_json("", json.loads(published), json.loads(expected[vendor])):
            found.append(Difference(surface, vendor, path, a, b))
    report.surfaces.append("vendors/*.json")
    row_csv = out_dir / "public_row_scores.csv"
    if "public_row_scores.csv" in kept or row_csv.exists():
        found += compare_csv(
            "public_row_scores.csv", read_text(row_csv), kept.get("public_row_scores.csv", ""), ("row_id", "vendor")
        )
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
    files = site.differences(recorded, figure_differences)
    report.surfaces.append(f"site ({len(site.checks)} files re-rendered: pages, charts, data files)")
    if recorded:
        report.surfaces.append("publications (SHA-256 per file)")
    return found + files


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
