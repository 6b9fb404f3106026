"""Holdout commitments: audit the holdout later without leaking it now (commit now, reveal later).

At publication, every archived holdout raw response (every attempt with a body, per vendor) is
committed to by a keyed digest, HMAC-SHA-256(commitment key, body), published sorted, with no id,
query or URL. A plain SHA-256 would not do: a vendor keeps the responses it served, could hash
each one and learn from the published set exactly which of its queries were holdout. The
commitment key is derived from the split secret and the snapshot id; its own SHA-256 is published
beside the commitments, and the key is revealed together with the holdout when the holdout is
retired. Anyone can then recompute every commitment from the revealed raw responses, and check
that the count per vendor and the combined digest match what was published before.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

SCHEME = (
    "hmac-sha256(commitment_key, utf8(body)); commitment_key = hmac-sha256(split_key, "
    "'holdout-commitment|' + snapshot_id without its errata suffix -eN)"
)


def commitment_key(split_secret: bytes, snapshot_id: str) -> bytes:
    """The per-snapshot key of the commitments (revealed with the holdout, never the split secret itself)."""
    return hmac.new(split_secret, f"holdout-commitment|{snapshot_id}".encode(), hashlib.sha256).digest()


def commit(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode("utf-8"), hashlib.sha256).hexdigest()


def vendor_commitments(key: bytes, bodies: Iterable[str]) -> list[str]:
    """One vendor's commitments: every holdout body's keyed digest, sorted."""
    return sorted(commit(key, body) for body in bodies)


def commitments_record(snapshot_id: str, per_vendor: Mapping[str, list[str]], key: bytes) -> dict[str, Any]:
    """The published commitments record from each vendor's commitments (`vendor_commitments`)."""
    vendors = {
        v: {"responses": len(c), "commitments": c, "digest": hashlib.sha256("\n".join(c).encode()).hexdigest()}
        for v, c in sorted(per_vendor.items())
    }
    combined = hashlib.sha256("\n".join(f"{v}\t{e['digest']}" for v, e in vendors.items()).encode()).hexdigest()
    return {
        "snapshot_id": snapshot_id,
        "scheme": SCHEME,
        "commitment_key_sha256": hashlib.sha256(key).hexdigest(),
        "note": "Each holdout raw response archived for this snapshot (every attempt with a body), committed to "
        "with a keyed digest and listed sorted, with no id, query or URL. The key is revealed with the "
        "holdout, so the responses can then be checked against these commitments.",
        "vendors": vendors,
        "combined_digest": combined,
    }


def holdout_commitments(snapshot_id: str, raw: pd.DataFrame, key: bytes) -> dict[str, Any]:
    """The published commitments record. `raw` holds archived attempts (any roles); only the
    holdout ones with a body are committed to, per vendor, sorted; nothing identifies a row."""
    per_vendor: dict[str, list[str]] = {}
    if len(raw):
        held = raw[(raw["role"] == "holdout") & raw["body"].notna()]
        for vendor, part in held.groupby("vendor", sort=True):
            per_vendor[str(vendor)] = vendor_commitments(key, part["body"])
    return commitments_record(snapshot_id, per_vendor, key)


def verify_commitments(record: dict[str, Any], raw: pd.DataFrame, key: bytes) -> list[str]:
    """Differences between a published commitments record and revealed raw responses + key (empty: they match)."""
    problems = []
    if hashlib.sha256(key).hexdigest() != record["commitment_key_sha256"]:
        problems.append("the revealed key is not the committed key")
    again = holdout_commitments(record["snapshot_id"], raw, key)
    for vendor in sorted(set(record["vendors"]) | set(again["vendors"])):
        a, b = record["vendors"].get(vendor), again["vendors"].get(vendor)
        if a is None or b is None or a["commitments"] != b["commitments"]:
            problems.append(f"{vendor}: revealed responses do not match the commitments")
    if again["combined_digest"] != record["combined_digest"]:
        problems.append("combined digest differs")
    return problems
