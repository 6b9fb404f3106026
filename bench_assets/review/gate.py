"""The review gate: a frozen snapshot publishes only when every vendor's packet was sent at least
`review.business_days` US business days ago (weekends and federal holidays skipped, see
`bench_assets.review.business_days`) and still matches what would be published. A vendor whose
figures changed after its packet went out is sent a new packet, and its clock starts again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pandas as pd

from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.review.business_days import review_clock
from bench_assets.review.packets import load_public_evidence, packet_sha256, packets_for_snapshot
from bench_assets.storage.warehouse import Warehouse


@dataclass
class GateResult:
    """Whether a frozen snapshot may be published on a day, and why not."""

    on: date
    passed: bool
    vendors: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.passed:
            return f"review gate passed on {self.on}"
        return f"review gate closed on {self.on}: " + "; ".join(self.problems)


def review_gate(
    vendors: list[str], sent: pd.DataFrame, current_sha256: dict[str, str], on: date, business_days: int
) -> GateResult:
    """Evaluate the gate. `sent` is the review_packets rows of the snapshot; `current_sha256`
    the digest each vendor's packet would have now."""
    result = GateResult(on=on, passed=True)
    by_vendor = {r.vendor: r for r in sent.itertuples(index=False)} if len(sent) else {}
    for vendor in sorted(vendors):
        rec = by_vendor.get(vendor)
        if rec is None:
            result.problems.append(f"{vendor}: no review packet sent")
            result.vendors[vendor] = {"sent_on": None, "opens_on": None, "business_days_elapsed": 0}
            continue
        sent_on = pd.Timestamp(rec.sent_on).date()
        clock = review_clock(sent_on, on, business_days)
        entry = {
            "sent_on": sent_on.isoformat(),
            "opens_on": clock.opens_on.isoformat(),
            "business_days_elapsed": clock.elapsed,
            "business_days_required": business_days,
            "packet_sha256": rec.packet_sha256,
        }
        result.vendors[vendor] = entry
        if current_sha256.get(vendor) != rec.packet_sha256:
            result.problems.append(
                f"{vendor}: figures changed since its packet was sent on {sent_on}; "
                "send it again (materialize review_packets)"
            )
        elif not clock.passed:
            result.problems.append(
                f"{vendor}: packet sent {sent_on}, {clock.elapsed} of {business_days} business "
                f"days elapsed; publishable from {clock.opens_on}"
            )
    result.passed = not result.problems
    return result


def evaluate_review_gate(
    warehouse: Warehouse,
    manifest: Manifest,
    board: dict[str, Any],
    rows: list[GoldenRow],
    split: dict[str, str],
    on: date,
) -> GateResult:
    raw, scores = load_public_evidence(warehouse, manifest.snapshot_id)
    current = {v: packet_sha256(p) for v, p in packets_for_snapshot(manifest, board, rows, split, raw, scores).items()}
    sent = warehouse.query_df("SELECT * FROM review_packets WHERE snapshot_id = ?", [manifest.snapshot_id])
    return review_gate(sorted(manifest.vendors), sent, current, on, manifest.review.business_days)
