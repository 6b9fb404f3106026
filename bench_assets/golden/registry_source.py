"""A snapshot's registry-sourced golden set: fetch (or re-read) the registries, archive every
response, draw the rows by the key, and keep the undrawn rows as the reserve pools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench_assets.golden.registry_fetch import fetch_registries
from bench_assets.golden.registry_rows import RegistryGolden, candidate_report, draw_registry_rows, split_reserve
from bench_assets.golden.rows import dump_golden_rows
from bench_assets.golden.sources import private_golden_path
from bench_assets.manifest import Manifest
from bench_assets.storage.warehouse import Warehouse


def registry_golden(
    manifest: Manifest, private_dir: Path, warehouse: Warehouse, rewrite: Callable[[str], str], key: bytes
) -> RegistryGolden:
    """Fetch what the archive does not already hold, record every attempt in `registry_responses`
    (before anything is drawn, so the evidence survives whatever follows), then draw. A registry
    that fails gives no rows and is reported; nothing here raises for it."""
    snapshot_id = manifest.snapshot_id
    archived = warehouse.rows("registry_responses", snapshot_id, order_by="registry, request_key, attempt")
    outcomes, frame = fetch_registries(manifest, rewrite, archived)
    warehouse.replace_rows("registry_responses", frame, {"snapshot_id": snapshot_id})
    draws = draw_registry_rows(manifest, outcomes, key)
    decoys, candidates = split_reserve(draws, key)
    dump_golden_rows(decoys, private_golden_path(private_dir, snapshot_id, "decoys"))
    dump_golden_rows(candidates, private_golden_path(private_dir, snapshot_id, "candidates"))
    return RegistryGolden([row for d in draws for row in d.drawn], candidate_report(outcomes, draws))
