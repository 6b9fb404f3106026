"""Publication: the snapshot's site, data files and charts, with a blocking holdout-leak scan."""


import base64
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pandas as pd

from bench_assets import charts
from bench_assets.defs.golden import load_golden_from_warehouse
from bench_assets.defs.leaderboard import current_leaderboard, markdown_leaderboard, vendor_leaderboard
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, input_errors_as_failures
from bench_assets.defs.split import public_split_records
from bench_assets.drilldown import query_drilldowns
from bench_assets.errors import BenchInputError
from bench_assets.golden import GoldenRow, load_golden_file
from bench_assets.integrity.dead_rows import load_dead_rows
from bench_assets.integrity.declaration import DECLARATION_FILE, disclosures_markdown
from bench_assets.integrity.errata import load_published_errata
from bench_assets.integrity.leaks import LeakGuard
from bench_assets.integrity.publication import PublicationGuard
from bench_assets.integrity.replies import REPLY_SUFFIXES
from bench_assets.manifest import Manifest
from bench_assets.publish import Reply, file_digest, render_site
from bench_assets.ttr import ttr_figures
from bench_assets.verify import row_urls
from bench_assets.warehouse import Warehouse


def snapshot_replies(snapshot_dir: Path, recorded: pd.DataFrame) -> dict[str, Reply]:
    """Vendors' replies filed beside the manifest (`replies/<vendor>.md` or `.txt`), as their bytes.
    A reply recorded in `vendor_replies` must still be the bytes recorded there (it is published
    as received): a changed file is an input error."""
    sha_of = {(r.vendor, Path(r.path).name): r.sha256 for r in recorded.itertuples(index=False)} if len(recorded) else {}
    replies = {}
    for path in sorted((snapshot_dir / "replies").glob("*")):
        if path.suffix in REPLY_SUFFIXES and path.is_file():
            reply = Reply(path.name, path.read_bytes())
            expected = sha_of.get((path.stem, path.name))
            if expected is not None and expected != reply.sha256:
                raise BenchInputError(str(path), [(None, "<file>", (
                    f"changed since it was filed (recorded sha256 {expected}, now {reply.sha256}): a reply is "
                    "published as received; file the new one with `bench review reply`"))])
            replies[path.stem] = reply
    return replies


def private_terms(paths: BenchPaths, manifest: Manifest, warehouse: Warehouse, rows: list[GoldenRow],
                  split: dict[str, str]) -> tuple[list[dict], dict[str, int]]:
    """What must never be published, besides the decoys: every holdout row of the snapshot, and
    every holdout row that died and was replaced (no longer in the golden set, still private).
    Returns the terms and their counts."""
    def term(r: GoldenRow) -> dict:
        return {"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}

    terms = [term(r) for r in rows if split.get(r.id) == "holdout"]
    dead_ids = set(warehouse.query_df("SELECT row_id FROM dead_rows WHERE snapshot_id = ? AND split = 'holdout'",
                                      [manifest.snapshot_id])["row_id"]) - {r.id for r in rows}
    kept = load_dead_rows(paths.private, manifest.snapshot_id)
    missing = dead_ids - set(kept)
    if missing:  # recorded before dead rows were kept whole: read them from the golden source file
        source = (paths.private / "golden" / f"{manifest.snapshot_id}.jsonl" if manifest.golden.source == "planted_demo"
                  else paths.private / (manifest.golden.path or ""))
        try:
            kept.update({r.id: r for r in load_golden_file(source) if r.id in missing})
        except (BenchInputError, OSError):
            pass
    for row_id in sorted(dead_ids):
        # a dead row that cannot be read any more is still guarded by its id
        terms.append(term(kept[row_id]) if row_id in kept else {"row_id": row_id, "request_text": None, "golden_urls": []})
    return terms, {"holdout_rows": len(terms) - len(dead_ids), "dead_holdout_rows": len(dead_ids),
                   "dead_holdout_rows_unreadable": len(dead_ids - set(kept))}


def ttr_observations(warehouse: Warehouse, snapshot_id: str) -> dict[str, tuple[list[float], list[bool]]]:
    """Each vendor's sentinel subjects (hours, found) for the Kaplan–Meier chart, derived from the
    sentinel tables by `ttr.ttr_figures` (the same derivation as the TTR metric); empty until probes ran."""
    pages = warehouse.query_df("SELECT * FROM sentinel_pages WHERE snapshot_id = ?", [snapshot_id])
    probes = warehouse.query_df("SELECT vendor, sentinel_id, probed_at, response_class, found FROM sentinel_probes "
                                "WHERE snapshot_id = ?", [snapshot_id])
    if pages.empty or probes.empty:
        return {}
    return {v: (list(f.durations), list(f.observed)) for v, f in ttr_figures(pages, probes).items() if f.sentinels}


def _failure_classes_md(board: dict) -> str:
    rows = {e["vendor"]: e.get("response_classes", {}) for e in board["vendors"] if e["status"] == "scored"}
    if not rows:
        return "no scored vendors"
    df = pd.DataFrame(rows).T.fillna(0).astype(int)
    df = df.loc[:, (df != 0).any(axis=0)]
    return df.to_markdown()


def _chart_previews(out_dir: Path, board: dict, observations: dict) -> dict[str, dg.MetadataValue]:
    """The published charts inside markdown (SVG as a data URI, which the Dagster UI's markdown
    allows for images), so an operator sees them without leaving the UI."""
    out = {}
    for chart in charts.site_charts(board, observations):
        path = out_dir / "charts" / f"{chart.name}.svg"
        if path.exists():
            svg = base64.b64encode(path.read_bytes()).decode()
            out[f"chart_{chart.name}"] = dg.MetadataValue.md(
                f"**{chart.title}**\n\n![{chart.name}](data:image/svg+xml;base64,{svg})\n\n{chart.caption}")
    return out


@dg.asset(partitions_def=snapshots_partitions_def, group_name="results", deps=[vendor_leaderboard],
          kinds={"html", "json", "csv"}, tags={"bench/stage": "publish"})
def published_snapshot(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """The published snapshot under data/publish/<snapshot_id>/: the leaderboard (HTML, JSON with
    its schema, CSV), a page and a JSON per vendor, a drill-down page per public golden row,
    charts, methodology generated from the code, exclusions, errata, limitations, disclosures,
    vendors' replies (their bytes as received), the public split and llms.txt. Nothing is kept if
    any holdout, dead holdout or decoy id, query text or golden URL appears in any file, in any
    spelling a reader would read as the same (`integrity.leaks`)."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    board = current_leaderboard(warehouse, manifest)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    snapshot_dir = paths.snapshots_dir / snapshot_id
    with input_errors_as_failures():
        # lifecycle and review gate first (a published snapshot is never re-rendered), then the inputs
        guard = PublicationGuard.begin(warehouse, manifest, board, rows, split, paths.private)
        errata = load_published_errata(snapshot_dir / "errata.json")
        replies = snapshot_replies(snapshot_dir, warehouse.query_df(
            "SELECT vendor, path, sha256 FROM vendor_replies WHERE snapshot_id = ?", [snapshot_id]))
    disclosures = disclosures_markdown(snapshot_dir / DECLARATION_FILE)
    terms, term_counts = private_terms(paths, manifest, warehouse, rows, split)
    leak_guard = LeakGuard(terms + guard.leak_needles)  # decoys are private like the holdout
    scores = warehouse.query_df("SELECT * FROM row_scores WHERE snapshot_id = ? AND split = 'public'", [snapshot_id])
    results = warehouse.query_df(
        "SELECT r.* FROM response_results r JOIN query_split q USING (snapshot_id, row_id) "
        "WHERE r.snapshot_id = ? AND q.split = 'public'", [snapshot_id])
    raw = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ? AND role = 'public'", [snapshot_id])
    queries = query_drilldowns(manifest, rows, split, scores, results, raw, leak_guard)
    observations = ttr_observations(warehouse, snapshot_id)
    counts = {"total": len(rows), "public": sum(1 for s in split.values() if s == "public"),
              "holdout": sum(1 for s in split.values() if s == "holdout")}
    out_dir = paths.publish_dir / snapshot_id
    paths.publish_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{snapshot_id}-", dir=paths.publish_dir))
    try:
        written = render_site(staging / snapshot_id, board, manifest, public_split_records(rows, split), errata,
                              queries=queries, ttr_observations=observations, replies=replies,
                              disclosures=disclosures, split_counts=counts,
                              extra_files=guard.files())  # holdout commitments, exclusions ledger, review record
        started = time.perf_counter()
        leaks = leak_guard.scan(staging / snapshot_id)
        scan_seconds = time.perf_counter() - started
        if leaks:
            raise dg.Failure(f"holdout leak: {len(leaks)} occurrences in the files to publish; nothing was published",
                             metadata={"leaks": dg.MetadataValue.md("\n".join(f"- {x}" for x in leaks[:50]))})
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.move(str(staging / snapshot_id), str(out_dir))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    now = datetime.now(timezone.utc)
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "path": str(p.relative_to(out_dir)), "sha256": file_digest(p),
                        "bytes": p.stat().st_size, "published_at": now} for p in files])
    warehouse.replace_rows("publications", df, {"snapshot_id": snapshot_id})
    guard.finish()
    withheld = sum(1 for q in queries for e in q["vendors"] for r in e["results"] if r["withheld"])
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(files), "index": dg.MetadataValue.path(str(out_dir / "index.html")),
        "leaderboard": dg.MetadataValue.md(markdown_leaderboard(board)),
        "failure_classes": dg.MetadataValue.md(_failure_classes_md(board)),
        "files_written": len(written), "vendor_pages": sum(1 for e in board["vendors"] if e["status"] == "scored"),
        "public_rows": counts["public"], "query_pages": len(queries), "results_withheld_as_holdout": withheld,
        "charts": sum(1 for p in files if p.suffix == ".svg"), "holdout_leaks": 0, "lifecycle": guard.publish_as,
        "leak_guard": dg.MetadataValue.json({**term_counts, "decoys": len(guard.leak_needles),
                                             "scan_seconds": round(scan_seconds, 3)}),
        "replies": dg.MetadataValue.json({v: {"file": r.filename, "sha256": r.sha256} for v, r in sorted(replies.items())}),
        **_chart_previews(out_dir, board, observations),
    })
