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

import json
import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.agent_ready.records import load_trial_records
from bench_assets.aggregate import eligibility
from bench_assets.aggregate.cohort import snapshot_cohort
from bench_assets.aggregate.comparisons import COMPARISON_COLUMNS, vendor_comparisons
from bench_assets.aggregate.figures import METRIC_COLUMNS, snapshot_fresh_rows, vendor_metrics
from bench_assets.aggregate.leaderboard import build_leaderboard, public_comparisons_frame
from bench_assets.aggregate.provenance import set_status
from bench_assets.errors import BenchInputError
from bench_assets.fetch.versions import environment_record, recorded_versions, version_warnings
from bench_assets.golden.store import load_golden_rows
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.publish.build import SnapshotBuild, build_snapshot
from bench_assets.publish.files import EXTRA_FILE_NOTES
from bench_assets.publish.guard import PublicationGuard, holdout_commitment_key
from bench_assets.publish.inputs import private_needles, site_inputs, ttr_as_of
from bench_assets.publish.site import SiteInputs
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
from bench_assets.runtime import ForkedJob
from bench_assets.runtime.progress import Step, Track, unannounced, untracked
from bench_assets.score.partition import SCORE_COLUMNS
from bench_assets.sentinels.probes import rederive_outcomes
from bench_assets.sentinels.ttr import AS_OF_METRIC, snapshot_ttr_metrics
from bench_assets.split.assign import split_key
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
    with warehouse.session():
        pages = warehouse.query_df("SELECT * FROM sentinel_pages WHERE snapshot_id = ?", [snapshot_id])
        probes = warehouse.query_df("SELECT * FROM sentinel_probes WHERE snapshot_id = ?", [snapshot_id])
        as_of = warehouse.query_df(
            "SELECT max(value) AS t FROM vendor_metrics WHERE snapshot_id = ? AND metric = ?",
            [snapshot_id, AS_OF_METRIC],
        )["t"][0]
    probes = rederive_outcomes(probes, pages, {v: get_adapter(s.adapter) for v, s in manifest.vendors.items()})
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


def commitment_key(manifest: Manifest) -> tuple[bytes | None, str | None]:
    """The key of the snapshot's holdout commitments (`publish.guard.holdout_commitment_key`),
    from the split secret; without the secret (a live snapshot, $BENCH_SPLIT_KEY unset) None, and
    a note saying what that leaves unchecked."""
    try:
        secret = split_key(manifest.split.key_env, manifest.mode)
    except BenchInputError as exc:
        return None, (
            f"integrity files not re-derived ({exc}); the published copies are checked against their recorded SHA-256"
        )
    return holdout_commitment_key(secret, manifest.snapshot_id), None


def derived_site_inputs(
    root: Path,
    warehouse: Warehouse,
    manifest: Manifest,
    board: dict[str, Any],
    build: SnapshotBuild,
    metrics: pd.DataFrame,
    pages: pd.DataFrame,
    probes: pd.DataFrame,
    key: bytes | None,
) -> SiteInputs:
    """What publication would render the site from, with the re-derived record, every vendor's
    build and the probes. Integrity's files (holdout commitments, exclusions ledger, review record)
    are rendered as the publication guard renders them, dated by the publication's record; their
    keyed digests need the split secret, so without it (`key` None) the published copies are used
    (and checked against their recorded SHA-256 only)."""
    snapshot_id = manifest.snapshot_id
    out_dir = root / "data" / "publish" / snapshot_id
    with warehouse.session():  # its reads (status, publication date, integrity's tables, replies): one connection
        if key is not None:
            published = lifecycle.snapshot_status(warehouse, snapshot_id) == lifecycle.PUBLISHED
            guard = PublicationGuard(
                warehouse,
                manifest,
                board,
                build.rows,
                build.split,
                split_key(manifest.split.key_env, manifest.mode),
                lifecycle.PUBLISHED if published else lifecycle.DRAFT,
                _publication_date(warehouse, snapshot_id, out_dir),
            )
            extra = guard.files(build.integrity)
        else:
            extra = {
                rel: (out_dir / rel).read_text(encoding="utf-8")
                for rel in EXTRA_FILE_NOTES
                if (out_dir / rel).is_file()
            }
        replies = warehouse.rows("vendor_replies", snapshot_id, columns=["vendor", "path", "sha256"])
    return site_inputs(
        manifest,
        board,
        build,
        snapshot_dir=root / "data" / "snapshots" / snapshot_id,
        sentinel_pages=pages,
        sentinel_probes=probes,
        as_of=ttr_as_of(metrics),
        recorded_replies=replies,
        extra_files=extra,
    )


def rescore_snapshot(
    root: Path,
    snapshot_id: str,
    warehouse: Warehouse | None = None,
    *,
    lake_url: str | None = None,
    private_dir: str | Path | None = None,
    step: Step = unannounced,
    track: Track = untracked,
) -> RescoreReport:
    """Re-derive the snapshot's row scores, aggregates and published files from its archive and
    report every difference from what is stored and published. Reads only (each re-rendered file is
    compared as it is rendered, none is written); calls no vendor. `private_dir` defaults to
    $BENCH_PRIVATE_DIR, else data/private (where the publication found the dead holdout rows and the decoys).
    `step` is entered around each stage and `track` follows the vendors and the site's parts (the
    command line shows them)."""
    manifest = load_manifest(root / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    if warehouse is None:
        warehouse = Warehouse(root / "data" / "warehouse" / "bench.duckdb", lake_url=lake_url)
    with warehouse.session():
        rows = load_golden_rows(warehouse, snapshot_id)
        split = warehouse.split(snapshot_id)
    private = (
        Path(private_dir) if private_dir else Path(os.environ.get("BENCH_PRIVATE_DIR") or root / "data" / "private")
    )
    out_dir = root / "data" / "publish" / snapshot_id
    published_path = out_dir / "leaderboard.json"
    report = RescoreReport(snapshot_id)
    with step(f"reading the archive of {snapshot_id} (golden rows, split, leak guard)"):
        leak_guard, _ = private_needles(private, manifest, warehouse, rows, split)
        key, note = commitment_key(manifest)
    if note is not None:
        report.notes.append(note)
    # every vendor built from its archive exactly as publication builds it (`publish.build`)
    with step(f"re-scoring {len(manifest.vendors)} vendors from their archived responses"):
        build = build_snapshot(warehouse, manifest, rows, split, leak_guard, key, track)
    scores = build.scores
    report.vendors = [b.vendor for b in build.vendors]
    report.rows_rescored = len(scores)

    def row_scores_compared() -> tuple[list[Difference], pd.DataFrame, pd.DataFrame]:
        """Every row's verdict against the stored one, and the vendors compared pairwise (over
        all rows, and over the public ones for the public figures)."""
        differences = compare_frames(
            ROW_SCORES,
            warehouse.rows("row_scores", snapshot_id),
            scores,
            ["vendor", "row_id"],
            [c for c in SCORE_COLUMNS if c not in ("snapshot_id", "vendor", "row_id")],
        )
        return differences, vendor_comparisons(snapshot_id, scores), public_comparisons_frame(scores, snapshot_id)

    # The warehouse: every row's verdict compared, and the pairwise comparisons derived, in a forked
    # child (`runtime.ForkedJob`) while the metrics are derived here; then the board.
    with step("aggregates, pairwise comparisons, row verdicts compared"), ForkedJob(row_scores_compared) as compared:
        with warehouse.session():  # the small reads at once (the child waits for its own read meanwhile)
            fresh = snapshot_fresh_rows(warehouse, snapshot_id)
            # Agent-ready trials are evidence like raw responses: read as archived, not re-run; so are the
            # versions the snapshot was fetched and published with (this run's own are compared below).
            trials = load_trial_records(warehouse, snapshot_id)
            recorded = recorded_versions(warehouse, snapshot_id)
            reasons = eligibility.snapshot_reasons(warehouse, manifest)  # e.g. no declaration
        metrics = vendor_metrics(snapshot_id, scores, fresh) if len(scores) else pd.DataFrame(columns=METRIC_COLUMNS)
        complete = {v for v, n in scores.groupby("vendor").size().items() if n == len(rows)} if len(scores) else set()
        metrics, pages, probes = _with_ttr(metrics, warehouse, manifest)
        row_differences, comparisons, public_comparisons = compared.result()
    report.differences += row_differences
    with warehouse.session():
        cohort = snapshot_cohort(warehouse, manifest)
        # the status it was published as: a snapshot now published was published as such, else as a draft
        published = lifecycle.snapshot_status(warehouse, snapshot_id) == lifecycle.PUBLISHED
        stored_metrics = warehouse.rows("vendor_metrics", snapshot_id)
        stored_comparisons = warehouse.rows("vendor_comparisons", snapshot_id)
    board = build_leaderboard(
        manifest,
        metrics,
        complete,
        trials,
        snapshot_reasons=reasons,
        comparisons=comparisons,
        versions=recorded,
        public_comparisons=public_comparisons,
        cohort=cohort,
    )
    set_status(board, manifest, lifecycle.PUBLISHED if published else lifecycle.DRAFT)
    derived_board = json.loads(json.dumps(board))
    report.warnings += _version_warnings(recorded, environment_record(manifest, root, private))

    report.differences += compare_frames(
        VENDOR_METRICS,
        stored_metrics,
        metrics,
        ["vendor", "scope", "scope_value", "metric"],
        ["value", "n", "low", "high"],
    )
    report.differences += compare_frames(
        VENDOR_COMPARISONS,
        stored_comparisons,
        comparisons,
        ["vendor_a", "vendor_b"],
        [c for c in COMPARISON_COLUMNS if c not in ("snapshot_id", "vendor_a", "vendor_b")],
    )
    report.surfaces += [ROW_SCORES, VENDOR_METRICS, VENDOR_COMPARISONS]

    if not published_path.exists():
        report.differences.append(
            Difference(str(published_path), None, "leaderboard.json", None, "nothing published yet")
        )
        return report
    # The whole site, rendered again from the re-derived record as publication renders it; each
    # file is compared with the published one as it is rendered (nothing is written).
    with step("re-rendering the site and comparing every published file"):
        inputs = derived_site_inputs(root, warehouse, manifest, derived_board, build, metrics, pages, probes, key)
        site = SiteComparison(out_dir, _compared_by_figure)
        inputs.render(site, track)
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
        # as rendered: the record with the content hash of the re-rendered files
        rendered = json.loads(kept["leaderboard.json"]) if "leaderboard.json" in kept else derived_board
        for path, a, b in compare_json("", json.loads(published_board), rendered):
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
