"""Where a snapshot's golden rows come from: the planted demo corpus, a file of hand-verified
rows in the private store, or registries (drawn by `golden.registry_rows`, fetched by
`golden.registry_fetch`), each optionally mixed with further sources whose strata are declared."""

from __future__ import annotations

from pathlib import Path

from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import GoldenRow, dump_golden_rows, load_golden_file, load_numbered_golden_file
from bench_assets.manifest import Manifest


def private_golden_path(private_dir: Path, snapshot_id: str, kind: str = "") -> Path:
    """The private file of a snapshot's generated rows (`kind`: "" for the golden set, or the
    registry reserve pools "decoys" / "candidates")."""
    return private_dir / "golden" / f"{snapshot_id}{'.' + kind if kind else ''}.jsonl"


def mixed_rows(manifest: Manifest, private_dir: Path) -> list[GoldenRow]:
    """The rows of `golden.mix`: each source's rows in its declared strata; a declared stratum the
    source has no row in is an input error naming the field."""
    rows: list[GoldenRow] = []
    for i, mix in enumerate(manifest.golden.mix):
        found = (
            demo_golden_rows(rows_per_stratum=mix.rows_per_stratum)
            if mix.source == "planted_demo"
            else load_golden_file(private_dir / (mix.path or ""))
        )
        kept = [r for r in found if r.stratum in mix.strata]
        empty = sorted(set(mix.strata) - {r.stratum for r in kept})
        if empty:
            raise BenchInputError(
                f"manifest of {manifest.snapshot_id}",
                [(None, f"golden.mix.{i}.strata", f"no {mix.source} rows in stratum {', '.join(empty)}")],
            )
        rows += kept
    return rows


def golden_source_rows(
    manifest: Manifest, private_dir: Path, registry_rows: list[GoldenRow] | None = None
) -> tuple[Path, list[tuple[int, GoldenRow]]]:
    """The snapshot's golden rows with their line numbers, and the private file they were read from.

    The planted demo set is generated from the planted corpus into the private store first, so the
    rows, the pages the simulator serves and the facts the rows assert come from one source and the
    holdout never enters git; so are registry rows (`registry_rows`, already drawn) and mixed
    sources. A malformed row raises BenchInputError naming file, line and field."""
    source = manifest.golden.source
    if source == "file" and not manifest.golden.mix:
        path = private_dir / (manifest.golden.path or "")
        return path, load_numbered_golden_file(path)
    if source == "planted_demo":
        rows = demo_golden_rows(rows_per_stratum=manifest.golden.rows_per_stratum)
    elif source == "registry":
        rows = list(registry_rows or [])
    else:
        rows = load_golden_file(private_dir / (manifest.golden.path or ""))
    path = private_golden_path(private_dir, manifest.snapshot_id)
    dump_golden_rows(rows + mixed_rows(manifest, private_dir), path)
    return path, load_numbered_golden_file(path)
