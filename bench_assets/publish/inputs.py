"""What a publication is rendered from (`SiteInputs`), gathered from the warehouse's tables and
the files beside the manifest. The publication asset and `bench rescore` both go through
`site_inputs`, so rescore re-renders exactly what publication rendered."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.aggregate.declaration import (
    DECLARATION_FILE,
    disclosures_markdown,
)
from bench_assets.errors import BenchInputError
from bench_assets.golden.dead_rows import load_dead_rows
from bench_assets.golden.rows import GoldenRow, load_golden_file
from bench_assets.golden.verify import row_urls
from bench_assets.manifest import Manifest
from bench_assets.publish.build import SnapshotBuild
from bench_assets.publish.drilldown import DrilldownRecords
from bench_assets.publish.errata import load_published_errata
from bench_assets.publish.evidence import bundle_of
from bench_assets.publish.replies import REPLY_SUFFIXES
from bench_assets.publish.site import Reply, SiteInputs
from bench_assets.review.rotation import family_snapshots
from bench_assets.sentinels.ttr import AS_OF_METRIC, ttr_figures
from bench_assets.split.assign import holdout_file
from bench_assets.split.decoys import recorded_decoys
from bench_assets.split.leaks import LeakGuard

# ##### THE INPUTS OF A PUBLICATION (read by the publication asset and by `bench rescore`)


def snapshot_replies(snapshot_dir: Path, recorded: pd.DataFrame) -> dict[str, Reply]:
    """Vendors' replies filed beside the manifest (`replies/<vendor>.md` or `.txt`), as their bytes.
    A reply recorded in `vendor_replies` must still be the bytes recorded there (it is published
    as received): a changed file is an input error."""

    sha_of = (
        {(r.vendor, Path(r.path).name): r.sha256 for r in recorded.itertuples(index=False)} if len(recorded) else {}
    )
    replies = {}
    for path in sorted((snapshot_dir / "replies").glob("*")):
        if path.suffix in REPLY_SUFFIXES and path.is_file():
            reply = Reply(path.name, path.read_bytes())
            expected = sha_of.get((path.stem, path.name))
            if expected is not None and expected != reply.sha256:
                raise BenchInputError(
                    str(path),
                    [
                        (
                            None,
                            "<file>",
                            (
                                f"changed since it was filed (recorded sha256 {expected}, now {reply.sha256}): a reply is "
                                "published as received; file the new one with `bench review reply`"
                            ),
                        )
                    ],
                )
            replies[path.stem] = reply
    return replies


def ttr_as_of(metrics_frame: pd.DataFrame) -> datetime | None:
    """The last probe tick the leaderboard's time-to-retrievability figures include (their
    `ttr_as_of` row in `vendor_metrics`), None before the first probe."""

    if metrics_frame.empty or "metric" not in metrics_frame:
        return None
    values = metrics_frame.loc[metrics_frame["metric"] == AS_OF_METRIC, "value"].dropna()
    return datetime.fromtimestamp(float(values.max()), UTC) if len(values) else None


def ttr_observations(
    pages: pd.DataFrame, probes: pd.DataFrame, as_of: datetime | None = None
) -> dict[str, tuple[list[float], list[bool]]]:
    """Each vendor's sentinel subjects (hours, found) for the Kaplan–Meier chart, derived by
    `ttr.ttr_figures` (the same derivation as the TTR figure) from the probes of ticks up to
    `as_of` (the ticks the leaderboard's figure includes), so the curve and the figure agree."""

    if pages.empty or probes.empty:
        return {}
    if as_of is not None:
        probes = probes[pd.to_datetime(probes["tick_at"], utc=True) <= as_of]
        if probes.empty:
            return {}
    return {v: (list(f.durations), list(f.observed)) for v, f in ttr_figures(pages, probes).items() if f.sentinels}


def private_terms(
    private_dir: Path, manifest: Manifest, warehouse: Any, rows: list[GoldenRow], split: Mapping[str, str]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """What must never be published, besides the decoys: every holdout row of the snapshot, every
    holdout row that died and was replaced (no longer in the golden set, still private), and every
    row an earlier quarter of the benchmark held out (`earlier_quarters_holdout`).
    Returns the terms and their counts."""

    def term(r: GoldenRow) -> dict[str, Any]:
        return {"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}

    terms = [term(r) for r in rows if split.get(r.id) == "holdout"]
    with warehouse.session():  # a read per earlier quarter: one connection
        dead_ids = set(
            warehouse.query_df(
                "SELECT row_id FROM dead_rows WHERE snapshot_id = ? AND split = 'holdout'", [manifest.snapshot_id]
            )["row_id"]
        ) - {r.id for r in rows}
        held = {r.id for r in rows if split.get(r.id) == "holdout"} | dead_ids
        earlier = earlier_quarters_holdout(private_dir, warehouse, manifest.snapshot_id, held)
    kept = load_dead_rows(private_dir, manifest.snapshot_id)
    missing = dead_ids - set(kept)
    if missing:  # recorded before dead rows were kept whole: read them from the golden source file
        source = (
            private_dir / "golden" / f"{manifest.snapshot_id}.jsonl"
            if manifest.golden.source == "planted_demo"
            else private_dir / (manifest.golden.path or "")
        )
        try:
            kept.update({r.id: r for r in load_golden_file(source) if r.id in missing})
        except (BenchInputError, OSError):
            pass
    for row_id in sorted(dead_ids):
        # a dead row that cannot be read any more is still guarded by its id
        terms.append(
            term(kept[row_id]) if row_id in kept else {"row_id": row_id, "request_text": None, "golden_urls": []}
        )
    terms += earlier
    return terms, {
        "holdout_rows": len(terms) - len(dead_ids) - len(earlier),
        "dead_holdout_rows": len(dead_ids),
        "dead_holdout_rows_unreadable": len(dead_ids - set(kept)),
        "earlier_quarters_holdout_rows": len(earlier),
    }


def earlier_quarters_holdout(
    private_dir: Path, warehouse: Any, snapshot_id: str, held_here: set[str]
) -> list[dict[str, Any]]:
    """Custody across quarters: the terms of every row an earlier quarter of the benchmark held
    out (retired since, or carried over), besides those this snapshot holds out itself, read
    whole from each quarter's private holdout file (by id alone if it cannot be read)."""
    terms: dict[str, dict[str, Any]] = {}
    for other in family_snapshots(warehouse, snapshot_id):
        if other == snapshot_id:
            continue
        held = (
            set(
                warehouse.query_df(
                    "SELECT row_id FROM query_split WHERE snapshot_id = ? AND split = 'holdout'", [other]
                )["row_id"]
            )
            - held_here
        )
        try:
            whole = {r.id: r for r in load_golden_file(holdout_file(private_dir, other)) if r.id in held}
        except (BenchInputError, OSError):
            whole = {}
        for row_id in sorted(held - set(terms)):
            row = whole.get(row_id)
            terms[row_id] = (
                {"row_id": row.id, "request_text": row.request_text, "golden_urls": row_urls(row)}
                if row
                else {"row_id": row_id, "request_text": None, "golden_urls": []}
            )
    return list(terms.values())


def private_needles(
    private_dir: Path, manifest: Manifest, warehouse: Any, rows: list[GoldenRow], split: Mapping[str, str]
) -> tuple[LeakGuard, dict[str, int]]:
    """What no published file may name (`split.leaks.LeakGuard`): every holdout row, every dead
    holdout row (`private_terms`) and every decoy the split stage recorded (`recorded_decoys`).
    Returns the guard and how many of each it holds."""
    terms, counts = private_terms(private_dir, manifest, warehouse, rows, split)
    holdout = any(split.get(r.id) == "holdout" for r in rows)
    decoys = recorded_decoys(private_dir, manifest.snapshot_id) if holdout and manifest.decoys.ratio > 0 else []
    needles = [{"row_id": d.id, "request_text": d.request_text, "golden_urls": row_urls(d)} for d in decoys]
    return LeakGuard(terms + needles), {**counts, "decoys": len(decoys)}


def site_inputs(
    manifest: Manifest,
    board: dict[str, Any],
    build: SnapshotBuild,
    *,
    snapshot_dir: Path,
    sentinel_pages: pd.DataFrame,
    sentinel_probes: pd.DataFrame,
    recorded_replies: pd.DataFrame,
    extra_files: Mapping[str, str],
    as_of: datetime | None = None,
) -> SiteInputs:
    """The inputs of a snapshot's site: `board` the leaderboard record; `build` every vendor's
    build from its archive (`publish.build`: its evidence bundle files, its drill-down entries and
    verdicts of the public rows); the sentinel pages and probes (up to the tick `as_of`) for the
    Kaplan–Meier chart; `recorded_replies` the `vendor_replies` table; `extra_files` integrity's
    published files. The errata, the replies and the operator's declaration are read from
    `snapshot_dir`."""
    rows, split = build.rows, build.split
    public = build.public_rows
    figures = {b.vendor: b.figures for b in build.vendors}
    return SiteInputs(
        board=board,
        manifest=manifest,
        public_rows=[json.loads(r.model_dump_json()) for r in public],
        errata=load_published_errata(snapshot_dir / "errata.json"),
        queries=DrilldownRecords(manifest, public, {b.vendor: b.entries for b in build.vendors}),
        listing=public_listing(public, figures),
        figures=figures,
        ttr_observations=ttr_observations(sentinel_pages, sentinel_probes, as_of),
        replies=snapshot_replies(snapshot_dir, recorded_replies),
        disclosures=disclosures_markdown(snapshot_dir / DECLARATION_FILE),
        split_counts={
            "total": len(rows),
            "public": sum(1 for s in split.values() if s == "public"),
            "holdout": sum(1 for s in split.values() if s == "holdout"),
        },
        extra_files=dict(extra_files),
        # the manifest's paths (its archived terms) are relative to the repository: data/snapshots/<id>/..
        evidence=bundle_of(manifest, {b.vendor: b.files for b in build.vendors}, snapshot_dir.parent.parent.parent),
    )


def public_listing(public: list[GoldenRow], figures: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each public row's line in the queries' listing: its id, stratum, task and request, and how
    many vendors were scored on it and answered it correctly (`unsupported` vendors left out)."""
    scored: dict[str, list[dict[str, Any]]] = {}
    for vendor_figures in figures.values():
        for f in vendor_figures:
            if f["response_class"] != "unsupported":
                scored.setdefault(f["row_id"], []).append(f)
    return [
        {
            "row_id": r.id,
            "stratum": r.stratum,
            "task_type": r.task_type,
            "request_text": r.request_text,
            "n_correct": sum(1 for f in scored.get(r.id, ()) if f["correct"]),
            "n_scored": len(scored.get(r.id, ())),
        }
        for r in public
    ]
