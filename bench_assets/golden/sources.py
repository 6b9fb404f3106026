"""Where a snapshot's golden rows come from: the planted demo corpus, or a file of hand-verified
rows in the private store (registries: `bench_assets.registries`, issue 19)."""

from __future__ import annotations

from pathlib import Path

from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import GoldenRow, dump_golden_rows, load_numbered_golden_file
from bench_assets.manifest import Manifest


def golden_source_rows(manifest: Manifest, private_dir: Path) -> tuple[Path, list[tuple[int, GoldenRow]]]:
    """The snapshot's golden rows with their line numbers, and the private file they were read from.

    The planted demo set is generated from the planted corpus into the private store first, so the
    rows, the pages the simulator serves and the facts the rows assert come from one source and the
    holdout never enters git. A malformed row raises BenchInputError naming file, line and field."""
    if manifest.golden.source == "planted_demo":
        path = private_dir / "golden" / f"{manifest.snapshot_id}.jsonl"
        dump_golden_rows(demo_golden_rows(rows_per_stratum=manifest.golden.rows_per_stratum), path)
    else:
        assert manifest.golden.path is not None  # GoldenSource requires a path for a file source
        path = private_dir / manifest.golden.path
    return path, load_numbered_golden_file(path)
