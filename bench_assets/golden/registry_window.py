"""A windowed registry's stratum drawn fresh for the next quarter.

A registry that publishes by day (the Federal Register: `Registry.windowed`) gives a stratum that
is new every quarter: the next quarter's draw asks it again for the documents published since its
last draw (the day of the last final `ok` answer the benchmark archived from it, that day included,
up to the draw's day), archives every attempt in `registry_responses` under the next snapshot, and
turns every record of the window into candidate rows of the next quarter's cohort. The rotation
then retires that stratum whole and replaces it from those rows only (`review.rotation`); a row the
benchmark used before never comes back (its id, request text or URL), as for any pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

import pandas as pd

from bench_assets.golden.registry_fetch import fetch_registry
from bench_assets.golden.registry_rows import cohort_of, record_rows
from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest, RegistrySpec
from bench_assets.registries import get_registry
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse


@dataclass
class WindowDraw:
    """What the windowed registries gave the next quarter: the strata drawn fresh, their candidate
    rows, and per registry the window asked and what came back (for the operator and a refusal)."""

    strata: frozenset[str] = frozenset()
    rows: list[GoldenRow] = field(default_factory=list)
    report: dict[str, str] = field(
        default_factory=dict
    )  # stratum -> "federal_register, 2026-11-29..2027-02-27: ok, 40 records"


def windowed_registries(manifest: Manifest) -> dict[str, RegistrySpec]:
    """The registries whose strata are drawn fresh each quarter: a registry-sourced golden set's
    windowed registries, and those its candidate pool carries forward (`candidates.registries`)."""
    own = manifest.golden.registries if manifest.golden.source == "registry" else {}
    return {
        **{name: spec for name, spec in own.items() if get_registry(name).windowed},
        **manifest.candidates.registries,
    }


def last_drawn_on(warehouse: Warehouse, snapshots: Sequence[str], registry: str) -> date | None:
    """The day the benchmark last had an answer from `registry` (a final `ok` attempt) in `snapshots`."""
    if not snapshots:
        return None
    marks = ", ".join("?" * len(snapshots))
    last = warehouse.query_df(
        f"SELECT max(started_at) AS at FROM registry_responses WHERE snapshot_id IN ({marks}) "
        "AND registry = ? AND final AND outcome = 'ok'",
        [*snapshots, registry],
    )["at"].iloc[0]
    return None if pd.isna(last) else pd.Timestamp(last).date()


def draw_window(
    warehouse: Warehouse,
    manifest: Manifest,
    drawn_before: Sequence[str],
    next_id: str,
    on: date,
    rewrite: Callable[[str], str],
) -> WindowDraw:
    """Ask each windowed registry for the documents published from its last draw in `drawn_before`
    (else its `days` before `on`) to `on`, archive the attempts under `next_id`, and make every
    record's rows in `next_id`'s cohort. A registry that fails gives no rows (its outcome is in the
    report and in `registry_responses`); nothing here raises for it."""
    specs = windowed_registries(manifest)
    out = WindowDraw(strata=frozenset(spec.stratum for spec in specs.values()))
    cohort = cohort_of(next_id)
    for name, spec in specs.items():
        days = int(str(spec.options.get("days", 7)))
        since = last_drawn_on(warehouse, drawn_before, name) or on - timedelta(days=days)
        window = spec.model_copy(
            update={"options": {**spec.options, "since": since.isoformat(), "until": on.isoformat()}}
        )
        archived = warehouse.rows("registry_responses", next_id, registry=name, order_by="request_key, attempt")
        outcome, attempts = fetch_registry(name, window, next_id, rewrite, manifest.golden.contact, archived)
        frame = pd.DataFrame(attempts, columns=TABLES["registry_responses"].column_names)
        warehouse.replace_rows("registry_responses", frame, {"snapshot_id": next_id, "registry": name})
        seen: set[str] = set()
        for record in outcome.records:
            if record.record_id not in seen:
                seen.add(record.record_id)
                out.rows += record_rows(record, outcome, window, cohort)
        answers = ", ".join(f"{k} {v}" for k, v in sorted(outcome.outcomes.items())) or "not asked"
        out.report[spec.stratum] = f"{name} asked for {since}..{on}: {answers}, {len(seen)} records"
    return out
