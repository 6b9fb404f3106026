"""Rotation: plan which golden rows retire next quarter, and what replaces them.

25 % of each cohort retires every quarter. The draw is biased toward strata where vendor scores
saturate (where the mean correct rate across vendors is high, a row tells vendors apart least):
each group of rows (rows sharing a URL retire together, as they were split together) gets weight
exp(bias × saturation of its stratum), and groups are drawn without replacement by weighted
random keys (Efraimidis–Spirakis), the randomness keyed by the split secret so the plan is
reproducible by the operator and unpredictable to anyone else.

Rotation keeps the holdout's share (30 % of every cohort is private):
- a retiring cohort keeps its share: each side of the split retires its own 25 % (the next
  group drawn comes from the side furthest behind its share, in the biased order of that side);
- the incoming rows, which are next quarter's new cohort, are split by the key like any fresh
  cohort, 70/30 within every stratum. They do not inherit the retired rows' sides: the bias
  concentrates retirements in a few strata, where the retired mix of sides is whatever the draw
  happened to give (an inherited new cohort drifted as far as 14 % holdout).
Each retired group is replaced by a candidate group of its own stratum. A windowed registry's
stratum (the Federal Register: new every quarter, `golden.registry_window`) retires whole, beside
the share of the others, and is replaced from the documents published since its last draw.

The plan is a file for review (it names holdout rows, so it lives in the private store); nothing
is rewritten until the operator applies it (`bench quarter next`, `review.quarter`). The pool of
replacements leaves out every row the benchmark ever used in any quarter (golden rows retired or
not, decoys): a retired row never returns, so a retired holdout row is never published.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bench_assets.golden.pools import load_pool, without_overlap
from bench_assets.golden.registry_window import WindowDraw
from bench_assets.golden.rows import GoldenRow, split_groups
from bench_assets.golden.store import load_golden_rows
from bench_assets.manifest import Manifest
from bench_assets.split.assign import assign_split, snapshot_family, split_key
from bench_assets.storage.warehouse import Warehouse

RETIRE_SHARE = 0.25
SATURATION_BIAS = 3.0  # weight = exp(bias × saturation): a saturated stratum (1.0) weighs e³ ≈ 20 × an unsolved one


def saturation_by_stratum(scores: pd.DataFrame) -> dict[str, float]:
    """Per stratum, the mean over vendors of the vendor's correct rate (rows a vendor cannot serve left out)."""
    if scores.empty:
        return {}
    served = scores[scores["response_class"] != "unsupported"]
    per_vendor = (
        served.assign(correct=served["correct"].fillna(False).astype(float))
        .groupby(["stratum", "vendor"])["correct"]
        .mean()
    )
    return {str(s): float(v) for s, v in per_vendor.groupby(level=0).mean().items()}


def _uniform(key: bytes, *parts: str) -> float:
    digest = hmac.new(key, "\x1f".join(parts).encode(), hashlib.sha256).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2**64


@dataclass(frozen=True)
class RotationPlan:
    retire: list[dict[str, Any]]
    replacements: list[dict[str, Any]]
    cohorts: dict[str, dict[str, Any]]
    saturation: dict[str, float]


def plan_rotation(
    rows: list[GoldenRow],
    split: dict[str, str],
    saturation: dict[str, float],
    candidates: list[GoldenRow],
    key: bytes,
    snapshot_id: str,
    share: float = RETIRE_SHARE,
    bias: float = SATURATION_BIAS,
    used_candidates: frozenset[str] = frozenset(),
    public_share: float = 0.7,
    fresh_strata: frozenset[str] = frozenset(),
) -> RotationPlan:
    """Choose share × rows rows to retire in every cohort (in whole groups, to within half a group;
    each side of the split its own share, to within a group), biased toward saturated strata, and
    a replacement group of the same stratum for each; the replacements (next quarter's new cohort)
    are split `public_share` / rest within every stratum by the key. A stratum in `fresh_strata`
    (a windowed registry's, new every quarter) retires whole, beside the share of the others."""
    groups = split_groups(rows)

    def side_of(gid: str) -> str:
        return split.get(members[gid][0].id) or "public"

    members: dict[str, list[GoldenRow]] = defaultdict(list)
    for row in rows:
        members[groups[row.id]].append(row)
    by_cohort: dict[str, list[str]] = defaultdict(list)
    for gid, group in members.items():
        by_cohort[group[0].cohort].append(gid)
    cand_groups = split_groups(candidates)
    cand_members: dict[str, list[GoldenRow]] = defaultdict(list)
    for row in candidates:
        if row.id not in used_candidates:
            cand_members[cand_groups[row.id]].append(row)
    pool: dict[str, list[str]] = defaultdict(list)
    for gid in sorted(cand_members, key=lambda g: _uniform(key, "candidate", snapshot_id, g)):
        pool[cand_members[gid][0].stratum].append(gid)

    retire, incoming, cohorts = [], [], {}
    for cohort in sorted(by_cohort):
        fresh = [g for g in by_cohort[cohort] if members[g][0].stratum in fresh_strata]
        gids = [g for g in by_cohort[cohort] if members[g][0].stratum not in fresh_strata]
        n_rows = sum(len(members[g]) for g in gids)

        def weighted_key(gid: str, cohort: str = cohort) -> float:  # Efraimidis–Spirakis: u^(1/w), largest drawn
            weight = math.exp(bias * saturation.get(members[gid][0].stratum, 0.0))
            return math.log(_uniform(key, "rotation", snapshot_id, cohort, gid)) / weight

        # Each side of the split retires its own share, so the cohort keeps its 70/30: the next
        # group comes from the side furthest behind its share (within a side, the biased order).
        target = share * n_rows
        order = {
            side: sorted((g for g in gids if side_of(g) == side), key=weighted_key, reverse=True)
            for side in ("public", "holdout")
        }
        side_target = {side: share * sum(len(members[g]) for g in mine) for side, mine in order.items()}
        side_taken = dict.fromkeys(order, 0)
        chosen, taken = [], 0
        while taken < target - 0.5 and any(order.values()):
            side = max((s for s in order if order[s]), key=lambda s: (side_target[s] - side_taken[s], s))
            gid = order[side].pop(0)
            size = len(members[gid])
            if taken + size <= target + size / 2:  # whole groups, to within half a group
                chosen.append(gid)
                taken += size
                side_taken[side] += size
        by_stratum: dict[str, int] = defaultdict(int)
        for gid in sorted(chosen + fresh):
            group = members[gid]
            stratum = group[0].stratum
            by_stratum[stratum] += len(group)
            replacement = pool[stratum].pop(0) if pool[stratum] else None
            new_rows = cand_members[replacement] if replacement else []
            for row in group:
                retire.append(
                    {
                        "row_id": row.id,
                        "cohort": cohort,
                        "stratum": stratum,
                        "task_type": row.task_type,
                        "split": split.get(row.id),
                        "group": gid,
                        "replaced_by": [r.id for r in new_rows] or None,
                    }
                )
            incoming += [(row, gid) for row in new_rows]
        fresh_rows = sum(len(members[g]) for g in fresh)
        cohorts[cohort] = {
            "rows": n_rows + fresh_rows,
            "retire_target": round(target, 2),
            "retire_rows": taken + fresh_rows,
            "retire_share": round(taken / n_rows, 4) if n_rows else 0.0,
            "fresh_strata_rows": fresh_rows,  # retired whole, outside the share
            "holdout_rows": sum(len(members[g]) for g in by_cohort[cohort] if side_of(g) == "holdout"),
            "retire_holdout_rows": side_taken["holdout"]
            + sum(len(members[g]) for g in fresh if side_of(g) == "holdout"),
            "retired_by_stratum": dict(sorted(by_stratum.items())),
            "unreplaced_groups": len({r["group"] for r in retire if r["cohort"] == cohort and not r["replaced_by"]}),
        }
    # the incoming rows are next quarter's new cohort: split by the key like any fresh cohort
    # (70/30 within every stratum), not by the sides of the rows they replace, which the saturation
    # bias leaves at whatever mix it drew
    sides = assign_split([row for row, _ in incoming], key, public_share)
    replacements = [
        {
            "row_id": row.id,
            "stratum": row.stratum,
            "task_type": row.task_type,
            "takes_split": sides[row.id],
            "replaces_group": gid,
        }
        for row, gid in incoming
    ]
    return RotationPlan(retire=retire, replacements=replacements, cohorts=cohorts, saturation=saturation)


def quarter_of(snapshot_id: str) -> tuple[int, int]:
    """(year, quarter) of a snapshot id (`web_search-2026-q3-e1` -> (2026, 3)); (0, 0) without one."""
    match = re.search(r"-(20[0-9]{2})-q([1-4])", snapshot_id)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def family_snapshots(warehouse: Warehouse, snapshot_id: str) -> list[str]:
    """The benchmark's snapshots (versions too) of `snapshot_id`'s quarter and before that the
    warehouse holds rows of: what is planned from a quarter never depends on quarters drawn after it."""
    family = snapshot_family(snapshot_id)
    ids = warehouse.query_df(
        "SELECT DISTINCT snapshot_id FROM golden_rows WHERE snapshot_id LIKE ? ESCAPE '\\'",
        [family.replace("_", "\\_") + "-20%"],
    )["snapshot_id"]
    return sorted(str(i) for i in ids if quarter_of(str(i)) <= quarter_of(snapshot_id))


def family_row_ids(warehouse: Warehouse, snapshot_id: str) -> frozenset[str]:
    """Every row id the benchmark used up to `snapshot_id`'s quarter: golden rows (retired ones
    too), dead rows and their replacements, decoys."""
    snapshots = family_snapshots(warehouse, snapshot_id) or [snapshot_id]
    marks = ", ".join("?" * len(snapshots))
    ids: set[str] = set()
    for sql in (
        f"SELECT row_id FROM golden_rows WHERE snapshot_id IN ({marks})",
        f"SELECT row_id FROM dead_rows WHERE snapshot_id IN ({marks})",
        f"SELECT replacement_row_id AS row_id FROM dead_rows WHERE snapshot_id IN ({marks}) "
        "AND replacement_row_id IS NOT NULL",
        f"SELECT row_id FROM decoy_queries WHERE snapshot_id IN ({marks})",
    ):
        ids.update(str(x) for x in warehouse.query_df(sql, snapshots)["row_id"])
    return frozenset(ids)


def family_history(warehouse: Warehouse, snapshot_id: str) -> list[GoldenRow]:
    """The golden rows of the benchmark's earlier quarters (each row once), so a pool drawn for
    `snapshot_id` leaves out their pages and questions too, not only their ids."""
    seen: dict[str, GoldenRow] = {}
    for other in family_snapshots(warehouse, snapshot_id):
        if other != snapshot_id:
            for row in load_golden_rows(warehouse, other):
                seen.setdefault(row.id, row)
    return list(seen.values())


def candidate_pool(
    manifest: Manifest, private_dir: Path, golden: list[GoldenRow], window: WindowDraw | None
) -> list[GoldenRow]:
    """The replacements the planner draws from: the manifest's candidate pool, where a stratum
    drawn fresh from its registry's window takes the window's rows instead of what an older draw
    left; none of them sharing an id, a request text or a URL with `golden`."""
    pool = load_pool(manifest, manifest.candidates, "candidate", private_dir, golden)
    if window is None:
        return pool
    return [r for r in pool if r.stratum not in window.strata] + without_overlap(window.rows, golden)


def plan_next_quarter(
    warehouse: Warehouse,
    manifest: Manifest,
    private_dir: Path,
    on: date,
    applied_to: str | None = None,
    window: WindowDraw | None = None,
) -> tuple[RotationPlan, Path]:
    """Plan next quarter's rotation of the snapshot and write it, for review, to the private store
    (it names holdout rows). Nothing is rewritten here: `bench quarter next` (`review.quarter`)
    applies it to the next snapshot (`applied_to`, recorded in the plan). The strata of `window`
    (windowed registries asked for the next quarter's window) retire whole and are replaced from
    its rows only."""
    snapshot_id = manifest.snapshot_id
    rows = load_golden_rows(warehouse, snapshot_id)
    split = warehouse.split(snapshot_id)
    scores = warehouse.rows("row_scores", snapshot_id, columns=["vendor", "stratum", "response_class", "correct"])
    used = warehouse.query_df(
        "SELECT replacement_row_id FROM dead_rows WHERE snapshot_id = ? AND replacement_row_id IS NOT NULL",
        [snapshot_id],
    )["replacement_row_id"]
    # a row the benchmark ever used (a golden row of any of its quarters, retired or not, or a
    # decoy) never comes back as a replacement: a retired holdout row drawn again could be published
    history = family_history(warehouse, snapshot_id)
    candidates = candidate_pool(manifest, private_dir, rows + history, window)
    key = split_key(manifest.split.key_env, manifest.mode)
    saturation = saturation_by_stratum(scores)
    plan = plan_rotation(
        rows,
        split,
        saturation,
        candidates,
        key,
        snapshot_id,
        used_candidates=frozenset(used) | family_row_ids(warehouse, snapshot_id),
        public_share=manifest.split.public_share,
        fresh_strata=window.strata if window else frozenset(),
    )
    record = {
        "snapshot_id": snapshot_id,
        "plans_the_quarter_after": snapshot_id,
        "generated_on": str(on),
        "retire_share": RETIRE_SHARE,
        "saturation_bias": SATURATION_BIAS,
        "how": "per cohort and per side of the split (each side retires its own share, so the cohort keeps its "
        "holdout share), whole groups drawn with weight exp(bias x stratum saturation), keyed by the split "
        "secret; each replaced from its stratum's candidate pool; the replacements (the new cohort) split "
        f"{manifest.split.public_share:.0%} public within every stratum by the key (takes_split)",
        "saturation_by_stratum": {k: round(v, 4) for k, v in sorted(saturation.items())},
        "fresh_strata": dict(sorted(window.report.items())) if window else {},
        "cohorts": plan.cohorts,
        "retire": plan.retire,
        "replacements": plan.replacements,
        "note": (
            f"Applied to {applied_to} by `bench quarter next` (its golden set and manifest, for review)."
            if applied_to
            else "A plan for review. Nothing is rewritten: `bench quarter next` applies it to the next quarter."
        ),
    }
    path = private_dir / "rotation" / f"{snapshot_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
    return plan, path
