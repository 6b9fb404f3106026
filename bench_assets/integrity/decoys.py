"""Decoys: the holdout is sent hidden among decoy queries of the same strata and shape.

A vendor sees public queries (it can read them in the published split), holdout queries and
decoys. Decoys make the holdout unrecognisable on the wire: per stratum there are
`ratio` × as many decoy rows as holdout rows, drawn in whole groups (rows sharing a URL, as the
split draws the holdout), so decoys come as the holdout does, a page's search, extract and answer
rows together. Every request is built by the same adapter from (capability, text, n), paced by the
same limiter, and the order of all queries is a shuffle keyed by the split secret, so neither the
requests nor their order separate the holdout from the decoys. Decoy responses are archived with
role `decoy` and never scored.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import defaultdict

from bench_assets.fetch import FetchItem
from bench_assets.golden import GoldenRow
from bench_assets.scoring import capability_of
from bench_assets.split import split_groups


class DecoyPoolTooSmall(ValueError):
    pass


def _keyed(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()


def select_decoys(pool: list[GoldenRow], rows: list[GoldenRow], split: dict[str, str], key: bytes,
                  ratio: float, snapshot_id: str) -> list[GoldenRow]:
    """The decoy rows of a snapshot: per stratum, whole groups of pool rows in an order keyed by
    the secret until they number round(ratio × the stratum's holdout rows). Raises
    DecoyPoolTooSmall when a stratum's pool cannot supply that many."""
    if ratio <= 0:
        return []
    holdout_rows: dict[str, int] = defaultdict(int)
    for row in rows:
        if split.get(row.id) == "holdout":
            holdout_rows[row.stratum] += 1
    groups = split_groups(pool)
    members: dict[str, list[GoldenRow]] = defaultdict(list)
    stratum_of: dict[str, str] = {}
    for row in pool:
        members[groups[row.id]].append(row)
        stratum_of.setdefault(groups[row.id], row.stratum)
    chosen: list[GoldenRow] = []
    short = []
    for stratum in sorted(holdout_rows):
        want = round(ratio * holdout_rows[stratum])
        candidates = sorted((g for g, s in stratum_of.items() if s == stratum),
                            key=lambda g: _keyed(key, "decoy", snapshot_id, stratum, g))
        taken = 0
        for gid in candidates:
            if taken >= want:
                break
            chosen.extend(members[gid])
            taken += len(members[gid])
        if taken < want:
            short.append(f"{stratum}: {taken} of {want}")
    if short:
        raise DecoyPoolTooSmall("the decoy pool is too small for decoys.ratio = "
                                f"{ratio:g} ({'; '.join(short)}); add decoy rows or lower the ratio")
    return chosen


def interleaved_items(rows: list[GoldenRow], split: dict[str, str], decoys: list[GoldenRow], capabilities,
                      num_results: int, key: bytes, snapshot_id: str, vendor: str) -> list[FetchItem]:
    """What one vendor is sent: golden rows (role public or holdout) and decoys (role decoy), the
    same FetchItem for each, in one order shuffled by HMAC(secret, snapshot, vendor, query). The
    order is unpredictable without the secret even to someone who knows every query id."""
    items = [FetchItem(r.id, split.get(r.id, "public"), capability_of(r), r.request_text, num_results)
             for r in rows if capability_of(r) in capabilities]
    items += [FetchItem(d.id, "decoy", capability_of(d), d.request_text, num_results)
              for d in decoys if capability_of(d) in capabilities]
    return sorted(items, key=lambda i: _keyed(key, "order", snapshot_id, vendor, i.query_id, i.capability))


def decoys_for_snapshot(manifest, rows: list[GoldenRow], split: dict[str, str], private_dir) -> list[GoldenRow]:
    """The snapshot's decoys from its manifest's pool (`decoys`), keyed by its split secret.
    Pool problems are input errors (BenchInputError) naming the manifest field to fix."""
    from bench_assets.errors import BenchInputError
    from bench_assets.integrity.pools import load_pool
    from bench_assets.split import split_key

    if manifest.decoys.ratio <= 0 or not any(split.get(r.id) == "holdout" for r in rows):
        return []
    key = split_key(manifest.split.key_env, manifest.mode)
    pool = load_pool(manifest, manifest.decoys, "decoy", private_dir, rows)
    from bench_assets.integrity.errata import base_of

    try:  # keyed by the original snapshot id, so an errata version re-sends the decoys its base sent
        return select_decoys(pool, rows, split, key, manifest.decoys.ratio, base_of(manifest.snapshot_id))
    except DecoyPoolTooSmall as exc:
        raise BenchInputError(f"manifest of {manifest.snapshot_id}", [(None, "decoys", str(exc))]) from None


def expected_decoy_calls(manifest, rows: list[GoldenRow], private_dir) -> dict[str, int]:
    """The decoy calls per capability a snapshot will make, for `bench estimate` (the split and
    the draw are keyed, so this needs the split secret, as the run does)."""
    from bench_assets.split import assign_split, split_key

    split = assign_split(rows, split_key(manifest.split.key_env, manifest.mode), manifest.split.public_share)
    calls: dict[str, int] = defaultdict(int)
    for decoy in decoys_for_snapshot(manifest, rows, split, private_dir):
        calls[capability_of(decoy)] += 1
    return dict(calls)
