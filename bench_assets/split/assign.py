"""The 70/30 public/holdout split, within every stratum, keyed by a secret.

Deterministic for a given key (stable across re-runs), unpredictable without it: groups are
ordered by HMAC-SHA256(key, group id). Rows that share a URL (a page's search, extract and answer
rows) form one group and land in the same split, so a public row never reveals a holdout URL.

Once given out, a side is kept: a public row may already be exported, a holdout row already sent
as holdout. So a snapshot's recorded split (its `query_split` rows, and from `dead_rows` each dead
row's side, which its replacement takes) is passed back in, and only rows never assigned get a
side. The same holds across quarters: a row the benchmark's earlier snapshots (same family, e.g.
`web_search-2026-q3` for `web_search-2026-q4`) gave out keeps that side, holdout if any of them
held it out, so next quarter's public split never reveals this quarter's holdout. A snapshot of
a new benchmark has nothing recorded and gets the plain keyed split.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from bench_assets.errors import BenchInputError
from bench_assets.golden.rows import GoldenRow, split_groups

DEMO_SPLIT_KEY = "bench-demo-split-key-not-secret"


def split_key(env_name: str, mode: str) -> bytes:
    """The split secret from the environment; simulated snapshots may fall back to the public demo key."""
    value = os.environ.get(env_name)
    if value:
        return value.encode()
    if mode == "simulated":
        return DEMO_SPLIT_KEY.encode()
    raise BenchInputError(
        f"${env_name}",
        [(None, env_name, f"the split key is required in {mode} mode; set it in the environment (never commit it)")],
    )


def assign_split(
    rows: list[GoldenRow], key: bytes, public_share: float = 0.7, recorded: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Return row id -> 'public' | 'holdout' with round((1 - public_share) * groups) holdout groups
    within every stratum of every cohort.

    `recorded`: sides already given out (row id -> side), which never change: once a snapshot's
    split is recorded, a public row may have been published and a holdout row sent as holdout.
    A row without a recorded side joins the side of a recorded row of its group (holdout if its
    group spans both, so no public row names a holdout page); whole new groups fill each stratum
    of their cohort toward its holdout share in the keyed order. With nothing recorded this is the plain keyed split.
    """
    recorded = {r: s for r, s in (recorded or {}).items() if s in ("public", "holdout")}
    groups = split_groups(rows)
    bucket_of_group: dict[str, tuple[str, str]] = {}
    sides_of_group: dict[str, set[str]] = {}
    for row in rows:
        bucket_of_group.setdefault(groups[row.id], (row.stratum, row.cohort))
        if row.id in recorded:
            sides_of_group.setdefault(groups[row.id], set()).add(recorded[row.id])
    group_side = {gid: ("holdout" if "holdout" in sides else "public") for gid, sides in sides_of_group.items()}
    # the holdout share holds within every stratum of every cohort ("30 % of every cohort is
    # private"): a new quarter's cohort is split on its own, as the rotation plan split it, not
    # topped up to whatever share the carried-over rows of its stratum happen to have
    by_bucket: dict[tuple[str, str], list[str]] = {}
    for gid, bucket in bucket_of_group.items():
        by_bucket.setdefault(bucket, []).append(gid)
    for (stratum, _cohort), gids in by_bucket.items():
        fresh = sorted(
            (g for g in gids if g not in group_side),
            key=lambda g: hmac.new(key, f"{stratum}\x1f{g}".encode(), hashlib.sha256).hexdigest(),
        )
        held = sum(1 for g in gids if group_side.get(g) == "holdout")
        n_holdout = min(len(fresh), max(0, round(len(gids) * (1.0 - public_share)) - held))
        group_side.update({g: ("holdout" if i < n_holdout else "public") for i, g in enumerate(fresh)})
    return {r.id: recorded.get(r.id, group_side[groups[r.id]]) for r in rows}


def snapshot_family(snapshot_id: str) -> str:
    """The benchmark a snapshot belongs to: `web_search-2026-q3-e1` -> `web_search`."""
    return re.split(r"-20[0-9]{2}-q[1-4]", snapshot_id, maxsplit=1)[0]


def _given_out(warehouse, where: str, params: list) -> list[tuple[str, str]]:
    """(row id, side) pairs from `query_split` and from `dead_rows` (a dead row's side, and its
    replacement's, which takes it) of the snapshots `where` selects."""
    pairs = list(
        warehouse.query_df(f"SELECT row_id, split FROM query_split WHERE {where}", params).itertuples(
            index=False, name=None
        )
    )
    dead = warehouse.query_df(
        f"SELECT row_id, split, replacement_row_id FROM dead_rows WHERE {where} AND split IS NOT NULL", params
    )
    for row_id, side, replacement in dead.itertuples(index=False, name=None):
        pairs.append((row_id, side))
        if isinstance(replacement, str):
            pairs.append((replacement, side))
    return pairs


def recorded_split(warehouse, snapshot_id: str) -> dict[str, str]:
    """The sides already given out for this snapshot's rows (row id -> side): its own (`query_split`
    and `dead_rows`), then, for rows it has not recorded, those of the family's other snapshots,
    holdout winning when they differ. Empty for the first split of a new benchmark."""
    recorded: dict[str, str] = {}
    for row_id, side in _given_out(warehouse, "snapshot_id = ?", [snapshot_id]):
        recorded.setdefault(row_id, side)
    family = snapshot_family(snapshot_id)
    earlier: dict[str, str] = {}
    for row_id, side in _given_out(
        warehouse,
        "snapshot_id <> ? AND snapshot_id LIKE ? ESCAPE '\\'",
        [snapshot_id, family.replace("_", "\\_") + "-20%"],
    ):
        if earlier.get(row_id) != "holdout":
            earlier[row_id] = side
    for row_id, side in earlier.items():
        recorded.setdefault(row_id, side)
    return recorded


def public_split_records(rows: list[GoldenRow], split: Mapping[str, str]) -> list[dict]:
    """The public rows as published: the whole row, so a researcher can re-score them."""
    return [json.loads(r.model_dump_json()) for r in rows if split[r.id] == "public"]


def public_split_path(snapshots_dir: Path, snapshot_id: str) -> Path:
    return snapshots_dir / snapshot_id / "public_split.jsonl"


def holdout_file(private_dir: Path, snapshot_id: str) -> Path:
    """The snapshot's holdout rows, whole, in the private store (never in git, never published)."""
    return private_dir / "holdout" / f"{snapshot_id}.jsonl"


def export_split(
    rows: list[GoldenRow], split: Mapping[str, str], snapshots_dir: Path, private_dir: Path, snapshot_id: str
) -> Path:
    """Write the public split beside the manifest (it ships in the repo) and the holdout to the
    private store (never in git, never published). Returns the public file."""
    public_path = public_split_path(snapshots_dir, snapshot_id)
    public_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in public_split_records(rows, split)))
    holdout_path = holdout_file(private_dir, snapshot_id)
    holdout_path.parent.mkdir(parents=True, exist_ok=True)
    holdout_path.write_text("".join(r.model_dump_json() + "\n" for r in rows if split[r.id] == "holdout"))
    return public_path


def split_frame(snapshot_id: str, rows: list[GoldenRow], split: Mapping[str, str]) -> pd.DataFrame:
    """`query_split` rows."""
    return pd.DataFrame(
        [{"snapshot_id": snapshot_id, "row_id": r.id, "stratum": r.stratum, "split": split[r.id]} for r in rows],
        columns=["snapshot_id", "row_id", "stratum", "split"],
    )
