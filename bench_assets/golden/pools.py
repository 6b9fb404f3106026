"""Row pools beside the golden set: decoys sent with the holdout, and candidates that replace
dead or rotated rows. The planted demo draws them from its reserve pages (same templates, their
own random streams); a live snapshot from private JSONL files in the golden-row format."""

from __future__ import annotations

from pathlib import Path

from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import reserve_rows, reserve_size
from bench_assets.golden.rows import GoldenRow, load_golden_file
from bench_assets.golden.verify import row_urls
from bench_assets.manifest import Manifest, RowPool


def planted_reserve_pages(manifest: Manifest, pool: RowPool) -> int:
    """Reserve pages per stratum of a planted pool: its `reserve_pages`, else half the golden pages
    (what the simulator serves by default, see build_corpus)."""
    return pool.reserve_pages or reserve_size(max(1, manifest.golden.rows_per_stratum // 3))


def load_pool(
    manifest: Manifest, pool: RowPool, kind: str, private_dir: Path, golden: list[GoldenRow]
) -> list[GoldenRow]:
    """The pool's rows (`kind` is "decoy" or "candidate"), minus any that share an id, a request
    text or a URL with a golden row. A file pool without a path is an input error."""
    source = manifest.pool_source(pool)
    if source == "registry" and not pool.path:
        # the registry records the keyed draw left over, written beside the golden set by golden_rows
        reserve = private_dir / "golden" / f"{manifest.snapshot_id}.{kind}s.jsonl"
        if not reserve.exists():
            raise BenchInputError(
                str(reserve), [(None, "<file>", "no registry reserve yet: materialize golden_rows first")]
            )
        rows = load_golden_file(reserve) if reserve.stat().st_size else []
        for mix in manifest.golden.mix:  # a planted stratum mixed in keeps its own reserve pages
            if mix.source == "planted_demo":
                size = reserve_size(max(1, mix.rows_per_stratum // 3))
                rows += [r for r in reserve_rows(kind, size, cohort=golden[0].cohort) if r.stratum in mix.strata]
    elif source == "planted_demo":
        # exactly the reserve pages a simulator serving this golden set serves (see build_corpus)
        cohort = golden[0].cohort if golden else "2026-q3"
        base = reserve_size(max(1, manifest.golden.rows_per_stratum // 3))
        rows = reserve_rows(kind, planted_reserve_pages(manifest, pool), cohort=cohort, base=base)
    else:
        if not pool.path:
            field = "decoys.path" if kind == "decoy" else "candidates.path"
            raise BenchInputError(
                f"manifest of {manifest.snapshot_id}",
                [
                    (
                        None,
                        field,
                        (
                            f"a {kind} pool is needed: set {field} (a JSONL file of golden-row records in the private "
                            "directory)"
                            + (", or decoys.ratio: 0 to send the holdout without decoys" if kind == "decoy" else "")
                        ),
                    )
                ],
            )
        rows = load_golden_file(private_dir / pool.path)
    return without_overlap(rows, golden)


def without_overlap(rows: list[GoldenRow], golden: list[GoldenRow]) -> list[GoldenRow]:
    """`rows` minus any that share an id, a request text or a URL with a row of `golden`."""
    ids = {r.id for r in golden}
    texts = {r.request_text for r in golden}
    urls = {u for r in golden for u in row_urls(r)}
    return [r for r in rows if r.id not in ids and r.request_text not in texts and not (set(row_urls(r)) & urls)]
