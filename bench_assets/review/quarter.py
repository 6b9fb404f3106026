"""The next quarter, drawn from the last in one step.

From a snapshot whose golden stages ran (and, for the saturation bias, whose vendors were
scored), `draw_next_quarter`:
- plans the rotation with `review.rotation.plan_next_quarter` (the one planner: 25 % of each
  cohort, each side of the split its own share, biased toward saturated strata; the pool leaves
  out every row the benchmark ever used);
- asks a windowed registry (the Federal Register) for the documents published since its last
  draw (`golden.registry_window`, archived under the next snapshot): its stratum is drawn whole
  from them;
- refuses, naming each stratum and its shortfall, when the candidate pool cannot replace every
  group the plan retires (nothing is written then but the registry's archived answers);
- writes the next quarter's golden set whole to the private store: the rows carried over as they
  were (their cohort kept), and the replacements with their content, as the new cohort;
- writes the next snapshot's manifest for the operator to review: vendors, plans, prices, terms
  and settings carried over, the golden source the file above, the candidate and decoy pools
  carried forward (the planted candidate reserve grown by a quarter's worth, the planted decoys as
  they are; a registry's or a file's pool as a private file of what is left of it).
The split of the next quarter is then made by `query_split` as always: carried-over rows keep
their recorded side (holdout wins if any earlier quarter held a row out), and the new cohort is
split 70/30 within every stratum by the key, which is what the plan's `takes_split` says.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import reserve_size
from bench_assets.golden.pools import load_pool, planted_reserve_pages
from bench_assets.golden.registry_rows import cohort_of
from bench_assets.golden.registry_window import draw_window, windowed_registries
from bench_assets.golden.rows import GoldenRow, dump_golden_rows, split_groups
from bench_assets.golden.sources import private_golden_path
from bench_assets.golden.store import load_golden_rows
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.review.rotation import (
    RotationPlan,
    candidate_pool,
    family_history,
    family_row_ids,
    family_snapshots,
    plan_next_quarter,
)
from bench_assets.storage.warehouse import Warehouse

# Hand-entered files beside a manifest that are dated evidence of their quarter (agent_trials.yaml:
# a trial is one attempt on one day): not carried into the next quarter, whose trials are run anew;
# carried, a vendor's old trial would read as the new quarter's evidence.
RENEWED_FILES = ("agent_trials.yaml",)


def next_snapshot_id(snapshot_id: str) -> str:
    """The snapshot of the quarter after: `web_search-2026-q4` -> `web_search-2027-q1` (a version
    `-eN` is drawn from like its quarter)."""
    match = re.fullmatch(r"(.+)-(20[0-9]{2})-q([1-4])(-e[0-9]+)?", snapshot_id)
    if not match:
        raise BenchInputError(snapshot_id, [(None, "snapshot_id", "no quarter (like -2026-q3) in the snapshot id")])
    family, year, quarter = match.group(1), int(match.group(2)), int(match.group(3))
    year, quarter = (year + 1, 1) if quarter == 4 else (year, quarter + 1)
    return f"{family}-{year}-q{quarter}"


@dataclass(frozen=True)
class NextQuarter:
    """What `draw_next_quarter` wrote, and the rotation per stratum."""

    snapshot_id: str
    manifest_path: Path
    golden_path: Path
    plan_path: Path
    plan: RotationPlan
    by_stratum: list[dict[str, Any]]  # stratum, rows, retired, share, saturation, new_rows
    carried_over: int
    new_rows: int
    scored: bool  # the last quarter had scores: the draw was biased by saturation
    to_renew: list[str]  # dated evidence of the last quarter left behind, for the operator to renew


def shortfalls(plan: RotationPlan, pool_left: dict[str, int]) -> list[tuple[str, str]]:
    """(stratum, message) for each stratum where the plan retires a group the pool could not replace."""
    retired: dict[str, set[str]] = defaultdict(set)
    unreplaced: dict[str, set[str]] = defaultdict(set)
    rows_out: dict[str, int] = defaultdict(int)
    for r in plan.retire:
        retired[r["stratum"]].add(r["group"])
        rows_out[r["stratum"]] += 1
        if not r["replaced_by"]:
            unreplaced[r["stratum"]].add(r["group"])
    return [
        (
            stratum,
            f"stratum {stratum}: the plan retires {len(retired[stratum])} groups ({rows_out[stratum]} rows) but the "
            f"candidate pool supplies only {len(retired[stratum]) - len(missing)} unused groups "
            f"(short by {len(missing)}; {pool_left.get(stratum, 0)} left over after the draw)",
        )
        for stratum, missing in sorted(unreplaced.items())
    ]


def _pool_entry(
    manifest: Manifest, pool: Any, kind: str, rows: list[GoldenRow], private_dir: Path, next_id: str, drop: frozenset
) -> dict[str, Any]:
    """The next manifest's pool: the planted reserve (the candidates' grown), else a private file of what is left."""
    source = manifest.pool_source(pool)
    if source == "planted_demo":
        if kind == "decoy":
            return {"source": "planted_demo"}
        # the simulated web grows by a quarter's reserve each quarter (prefix-stable: the pages
        # the last quarter served, used or not, stay the first ones), so N quarters never run dry
        grown = planted_reserve_pages(manifest, pool) + reserve_size(max(1, manifest.golden.rows_per_stratum // 3))
        return {"source": "planted_demo", "reserve_pages": grown}
    left = [r for r in load_pool(manifest, pool, kind, private_dir, rows) if r.id not in drop]
    path = private_golden_path(private_dir, next_id, f"{kind}s")
    dump_golden_rows(left, path)
    return {"source": "file", "path": path.relative_to(private_dir).as_posix()}


def next_manifest(
    manifest_path: Path, manifest: Manifest, next_id: str, golden_path: str, pools: dict[str, dict[str, Any]]
) -> str:
    """The next snapshot's manifest text: the last one's settings, vendors, plans and prices
    carried over, its golden set the drawn file, its pools carried forward, no `supersedes`."""
    data = yaml.safe_load(manifest_path.read_text(encoding="utf-8"))
    old_quarter = re.search(r"(20[0-9]{2})-q([1-4])", manifest.snapshot_id)
    new_quarter = re.search(r"(20[0-9]{2})-q([1-4])", next_id)
    data["snapshot_id"] = next_id
    if data.get("title") and old_quarter and new_quarter:
        data["title"] = data["title"].replace(
            f"{old_quarter.group(1)} Q{old_quarter.group(2)}", f"{new_quarter.group(1)} Q{new_quarter.group(2)}"
        )
    data.pop("supersedes", None)
    data["golden"] = {
        "source": "file",
        "path": golden_path,
        "rows_per_stratum": manifest.golden.rows_per_stratum,  # sizes the planted reserve pools
    }
    data["candidates"] = pools["candidates"]
    data["decoys"] = {**pools["decoys"], "ratio": manifest.decoys.ratio}
    header = (
        f"# Snapshot manifest of {next_id}, drawn from {manifest.snapshot_id} by `bench quarter next`.\n"
        "# Carried over for review before anything runs: vendors, plans, prices, pricing and terms files,\n"
        "# settings. The golden set is the rotated one (private store); the pools are carried forward.\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def draw_next_quarter(
    warehouse: Warehouse,
    snapshots_dir: Path,
    private_dir: Path,
    snapshot_id: str,
    on: date,
    rewrite: Callable[[str], str] = str,
) -> NextQuarter:
    """Draw the quarter after `snapshot_id` (see the module docstring). Refuses (BenchInputError)
    when the next manifest exists already or the pool falls short; nothing is written then but the
    windowed registries' answers, archived as evidence. `rewrite` routes a registry's URL (to the
    simulator in simulate mode)."""
    manifest_path = snapshots_dir / snapshot_id / "manifest.yaml"
    manifest = load_manifest(manifest_path)
    next_id = next_snapshot_id(snapshot_id)
    next_dir = snapshots_dir / next_id
    if (next_dir / "manifest.yaml").exists():
        raise BenchInputError(
            str(next_dir / "manifest.yaml"),
            [
                (
                    None,
                    "<file>",
                    f"{next_id} was drawn already: review its manifest, or `bench snapshot remove {next_id}` "
                    "and draw it again",
                )
            ],
        )
    rows = load_golden_rows(warehouse, snapshot_id)
    scored = bool(len(warehouse.rows("row_scores", snapshot_id, columns=["row_id"])))
    window = (
        draw_window(warehouse, manifest, family_snapshots(warehouse, snapshot_id), next_id, on, rewrite)
        if windowed_registries(manifest)
        else None
    )
    plan, plan_path = plan_next_quarter(warehouse, manifest, private_dir, on, applied_to=next_id, window=window)

    used = family_row_ids(warehouse, snapshot_id)
    history = family_history(warehouse, snapshot_id)
    candidates = {r.id: r for r in candidate_pool(manifest, private_dir, rows + history, window)}
    drawn = {rep["row_id"] for rep in plan.replacements}
    left_groups = split_groups([r for r in candidates.values() if r.id not in used and r.id not in drawn])
    pool_left: dict[str, int] = defaultdict(int)
    for gid in set(left_groups.values()):
        pool_left[candidates[gid].stratum] += 1
    short = shortfalls(plan, pool_left)
    if short:
        raise BenchInputError(
            f"candidate pool of {snapshot_id} ({manifest.pool_source(manifest.candidates)})",
            [
                *(
                    (
                        None,
                        f"candidates ({stratum})",
                        message
                        + (f"; drawn fresh: {window.report[stratum]}" if window and stratum in window.report else ""),
                    )
                    for stratum, message in short
                ),
                (None, "candidates", f"nothing of {next_id} was written: add candidate rows, then draw it again"),
            ],
        )

    new_cohort = cohort_of(next_id)
    retired = {r["row_id"] for r in plan.retire}
    carried = [r for r in rows if r.id not in retired]
    incoming = [candidates[rep["row_id"]].model_copy(update={"cohort": new_cohort}) for rep in plan.replacements]
    golden_path = private_golden_path(private_dir, next_id)
    pools: dict[str, dict[str, Any]] = {
        "candidates": _pool_entry(
            manifest, manifest.candidates, "candidate", rows + history, private_dir, next_id, used | drawn
        ),
        "decoys": (
            _pool_entry(manifest, manifest.decoys, "decoy", rows, private_dir, next_id, frozenset())
            if manifest.decoys.ratio > 0
            else {"source": manifest.pool_source(manifest.decoys)}
        ),
    }
    dump_golden_rows(carried + incoming, golden_path)
    next_dir.mkdir(parents=True, exist_ok=True)
    if window is not None:  # asked again for the quarter after, from this draw's day
        pools["candidates"]["registries"] = {
            name: spec.model_dump(exclude_defaults=True) for name, spec in windowed_registries(manifest).items()
        }
    text = next_manifest(manifest_path, manifest, next_id, golden_path.relative_to(private_dir).as_posix(), pools)
    (next_dir / "manifest.yaml").write_text(text, encoding="utf-8")
    load_manifest(next_dir / "manifest.yaml")  # what was written validates
    to_renew = [name for name in RENEWED_FILES if (snapshots_dir / snapshot_id / name).exists()]

    by_stratum = []
    for stratum in sorted({r.stratum for r in rows}):
        n = sum(r.stratum == stratum for r in rows)
        out = sum(1 for r in plan.retire if r["stratum"] == stratum)
        by_stratum.append(
            {
                "stratum": stratum,
                "rows": n,
                "retired": out,
                "share": round(out / n, 3) if n else 0.0,
                "saturation": round(plan.saturation[stratum], 3) if stratum in plan.saturation else None,
                "new_rows": sum(r.stratum == stratum for r in incoming),
            }
        )
    return NextQuarter(
        snapshot_id=next_id,
        manifest_path=next_dir / "manifest.yaml",
        golden_path=golden_path,
        plan_path=plan_path,
        plan=plan,
        by_stratum=by_stratum,
        carried_over=len(carried),
        new_rows=len(incoming),
        scored=scored,
        to_renew=to_renew,
    )
