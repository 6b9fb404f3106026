"""Decoys: the holdout is sent hidden among decoy queries of the same strata and shape.

A vendor sees public queries (it can read them in the published split), holdout queries and
decoys. Decoys make the holdout unrecognisable on the wire: per stratum there are
`ratio` × as many decoy rows as holdout rows, drawn in whole groups (rows sharing a URL, as the
split draws the holdout), so decoys come as the holdout does, a page's search, extract and answer
rows together. Every request is built by the same adapter from (capability, text, n), paced by the
same limiter, and the order of all queries is a shuffle keyed by the split secret, so neither the
requests nor their order separate the holdout from the decoys. Decoy responses are archived with
role `decoy` and never scored.

Across quarters: most of the holdout stays from one quarter to the next (a quarter rotates 25 %
of each cohort), so a vendor comparing two quarters' logs sees the holdout's queries again. The
decoys must come back as the holdout does, or the repeated non-public queries would be the
holdout. So the draw is not keyed by the snapshot: per stratum and holdout cohort (the quarter
its rows entered), the decoys are a prefix of one order of the pool's groups keyed by the split
secret, the stratum and the cohort. While a cohort's holdout rows persist, their decoys persist;
when rotation retires some of them, the cohort's decoys shrink by as many (the last ones drawn
go); a new cohort's holdout gets decoys of its own. Cohorts draw oldest first, each from the pool
rows of its own cohort when the pool has any in the stratum, else from the rows no older cohort
took. With one shared pool, a decoy retired from an old cohort can be drawn again by a newer one;
a fresh pool per cohort (as the planted demo has) rules that out.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import defaultdict
from pathlib import Path

import pandas as pd

from bench_assets.adapters.base import Capability
from bench_assets.errors import BenchInputError, NotReadyError
from bench_assets.golden.pools import load_pool
from bench_assets.golden.rows import GoldenRow, capability_of, load_golden_file, split_groups
from bench_assets.manifest import Manifest
from bench_assets.split.assign import assign_split, split_key


class DecoyPoolTooSmall(ValueError):
    pass


def _keyed(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()


def select_decoys(
    pool: list[GoldenRow], rows: list[GoldenRow], split: dict[str, str], key: bytes, ratio: float
) -> list[GoldenRow]:
    """The decoy rows of a snapshot: per stratum and holdout cohort (oldest first), whole groups of
    pool rows in an order keyed by the secret, the stratum and the cohort (never the snapshot),
    until they number round(ratio × that cohort's holdout rows in the stratum). Raises
    DecoyPoolTooSmall when a stratum's pool cannot supply that many."""
    if ratio <= 0:
        return []
    holdout_rows: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        if split.get(row.id) == "holdout":
            holdout_rows[(row.stratum, row.cohort)] += 1
    groups = split_groups(pool)
    members: dict[str, list[GoldenRow]] = defaultdict(list)
    first: dict[str, GoldenRow] = {}
    for row in pool:
        members[groups[row.id]].append(row)
        first.setdefault(groups[row.id], row)
    chosen: list[GoldenRow] = []
    taken: set[str] = set()
    short = []
    for stratum, cohort in sorted(holdout_rows):
        want = round(ratio * holdout_rows[(stratum, cohort)])
        in_stratum = [g for g, r in first.items() if r.stratum == stratum and g not in taken]
        own = [g for g in in_stratum if first[g].cohort == cohort]
        candidates = sorted(own or in_stratum, key=lambda g: _keyed(key, "decoy", stratum, cohort, g))
        got = 0
        for gid in candidates:
            if got >= want:
                break
            chosen.extend(members[gid])
            taken.add(gid)
            got += len(members[gid])
        if got < want:
            short.append(f"{stratum} (cohort {cohort}): {got} of {want}")
    if short:
        raise DecoyPoolTooSmall(
            "the decoy pool is too small for decoys.ratio = "
            f"{ratio:g} ({'; '.join(short)}); add decoy rows or lower the ratio"
        )
    return chosen


def decoys_for_snapshot(
    manifest: Manifest, rows: list[GoldenRow], split: dict[str, str], private_dir: Path
) -> list[GoldenRow]:
    """The snapshot's decoys from its manifest's pool (`decoys`), keyed by its split secret.
    Pool problems are input errors (BenchInputError) naming the manifest field to fix."""
    if manifest.decoys.ratio <= 0 or not any(split.get(r.id) == "holdout" for r in rows):
        return []
    key = split_key(manifest.split.key_env, manifest.mode)
    pool = load_pool(manifest, manifest.decoys, "decoy", private_dir, rows)
    try:  # not keyed by the snapshot: an errata version, and the next quarter, draw the same decoys
        return select_decoys(pool, rows, split, key, manifest.decoys.ratio)
    except DecoyPoolTooSmall as exc:
        raise BenchInputError(f"manifest of {manifest.snapshot_id}", [(None, "decoys", str(exc))]) from None


def expected_decoy_calls(manifest: Manifest, rows: list[GoldenRow], private_dir: Path) -> dict[Capability, int]:
    """The decoy calls per capability a snapshot will make, for `bench estimate` (the split and
    the draw are keyed, so this needs the split secret, as the run does)."""
    split = assign_split(rows, split_key(manifest.split.key_env, manifest.mode), manifest.split.public_share)
    calls: dict[Capability, int] = defaultdict(int)
    for decoy in decoys_for_snapshot(manifest, rows, split, private_dir):
        calls[capability_of(decoy)] += 1
    return dict(calls)


def decoys_file(private_dir: Path, snapshot_id: str) -> Path:
    """Where a snapshot's decoys are kept whole, in the private store."""
    return private_dir / "decoys" / f"{snapshot_id}.jsonl"


def recorded_decoys(private_dir: Path, snapshot_id: str) -> list[GoldenRow]:
    """The decoys the split stage drew and recorded for the snapshot (`record_decoys`: the
    `decoy_queries` asset); NotReadyError when none were recorded yet."""
    path = decoys_file(private_dir, snapshot_id)
    if not path.exists():
        raise NotReadyError(
            f"the decoys of {snapshot_id} are not recorded ({path}); materialize decoy_queries for this snapshot first"
        )
    return load_golden_file(path)


def record_decoys(snapshot_id: str, decoys: list[GoldenRow], private_dir: Path) -> pd.DataFrame:
    """Keep the decoys whole in the private store; returns their `decoy_queries` rows."""
    path = decoys_file(private_dir, snapshot_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(d.model_dump_json() + "\n" for d in decoys))
    return pd.DataFrame(
        [
            {
                "snapshot_id": snapshot_id,
                "row_id": d.id,
                "stratum": d.stratum,
                "task_type": d.task_type,
                "request_text": d.request_text,
            }
            for d in decoys
        ],
        columns=["snapshot_id", "row_id", "stratum", "task_type", "request_text"],
    )
