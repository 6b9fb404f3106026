"""The 70/30 public/holdout split, within every stratum, keyed by a secret.

Deterministic for a given key (stable across re-runs), unpredictable without it: groups are
ordered by HMAC-SHA256(key, group id). Rows that share a URL (a page's search, extract and answer
rows) form one group and land in the same split, so a public row never reveals a holdout URL.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from bench_assets.errors import BenchInputError
from bench_assets.golden import GoldenRow

DEMO_SPLIT_KEY = "bench-demo-split-key-not-secret"


def split_key(env_name: str, mode: str) -> bytes:
    """The split secret from the environment; simulated snapshots may fall back to the public demo key."""
    value = os.environ.get(env_name)
    if value:
        return value.encode()
    if mode == "simulated":
        return DEMO_SPLIT_KEY.encode()
    raise BenchInputError(f"${env_name}", [(None, env_name, f"the split key is required in {mode} mode; "
                                                           "set it in the environment (never commit it)")])


def _urls(row: GoldenRow) -> list[str]:
    return row.urls


def split_groups(rows: list[GoldenRow]) -> dict[str, str]:
    """Map each row id to its group id (the smallest row id among rows linked by shared URLs)."""
    parent = {r.id: r.id for r in rows}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, str] = {}
    for row in rows:
        for url in _urls(row):
            if url in owner:
                a, b = find(owner[url]), find(row.id)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                owner[url] = row.id
    return {r.id: find(r.id) for r in rows}


def assign_split(rows: list[GoldenRow], key: bytes, public_share: float = 0.7) -> dict[str, str]:
    """Return row id -> 'public' | 'holdout' with round((1 - public_share) * groups) holdout groups per stratum."""
    groups = split_groups(rows)
    stratum_of_group: dict[str, str] = {}
    for row in rows:
        stratum_of_group.setdefault(groups[row.id], row.stratum)
    by_stratum: dict[str, list[str]] = {}
    for gid, stratum in stratum_of_group.items():
        by_stratum.setdefault(stratum, []).append(gid)
    holdout_groups: set[str] = set()
    for stratum, gids in by_stratum.items():
        ordered = sorted(gids, key=lambda g: hmac.new(key, f"{stratum}\x1f{g}".encode(), hashlib.sha256).hexdigest())
        n_holdout = round(len(ordered) * (1.0 - public_share))
        holdout_groups.update(ordered[:n_holdout])
    return {r.id: ("holdout" if groups[r.id] in holdout_groups else "public") for r in rows}
