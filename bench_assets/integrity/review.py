"""Vendor review: one packet per vendor, and the gate that holds publication for the review period.

A vendor's packet holds what the vendor may check before anything is published: its public rows,
its raw responses to them, its scores on them, its pinned plan and prices, and for the holdout
only aggregates (n, correct rate with its interval, the overfit gap). No holdout id, query, URL
or response is in it. Each packet has a SHA-256 of its content; sending it records the date.

The gate: a frozen snapshot publishes only when every vendor's packet was sent at least
`review.business_days` US business days ago (weekends and federal holidays skipped, see
`bench_assets.business_days`) and still matches what would be published. A vendor whose figures
changed after its packet went out is sent a new packet, and its clock starts again.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pandas as pd

from bench_assets.business_days import review_clock

RAW_COLUMNS = ["query_id", "capability", "attempt", "started_at", "latency_ms", "request_json", "http_status",
               "response_headers_json", "body", "body_sha256", "transport_error", "final"]
SCORE_COLUMNS = ["row_id", "stratum", "task_type", "response_class", "n_results", "first_hit_rank", "hit_at_1",
                 "hit_at_3", "hit_at_5", "hit_at_10", "fidelity", "fidelity_label", "correct", "billed_usd",
                 "latency_ms", "attempts"]


def _plain(value: Any) -> Any:
    """A JSON-ready scalar (pandas NA/NaN → None, timestamps → ISO text)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "item"):
        return value.item()
    return value


def _records(df: pd.DataFrame, columns: list[str]) -> list[dict[str, Any]]:
    cols = [c for c in columns if c in df.columns]
    return [{c: _plain(v) for c, v in zip(cols, row)} for row in df[cols].itertuples(index=False, name=None)]


def vendor_packet(snapshot_id: str, vendor: str, mode: str, vendor_spec: dict[str, Any],
                  board_entry: dict[str, Any], public_rows: list[dict[str, Any]], raw_public: pd.DataFrame,
                  scores_public: pd.DataFrame) -> dict[str, Any]:
    """The review packet of one vendor (deterministic: the same inputs give the same bytes)."""
    split = (board_entry.get("breakdown") or {}).get("split", {})
    return {
        "snapshot_id": snapshot_id, "vendor": vendor, "mode": mode,
        "vendor_spec": vendor_spec,
        "public_rows": sorted(public_rows, key=lambda r: r["id"]),
        "raw_responses": _records(raw_public.sort_values(["query_id", "capability", "attempt"]), RAW_COLUMNS),
        "scores": _records(scores_public.sort_values("row_id"), SCORE_COLUMNS),
        "aggregates": {"metrics": board_entry.get("metrics", {}), "breakdown": board_entry.get("breakdown", {}),
                       "response_classes": board_entry.get("response_classes", {}),
                       "headline_eligible": board_entry.get("headline_eligible"),
                       "reasons": board_entry.get("reasons", [])},
        "holdout_aggregates": {"metrics": split.get("holdout", {}),
                               "overfit_gap": board_entry.get("metrics", {}).get("overfit_gap")},
    }


def packet_bytes(packet: dict[str, Any]) -> bytes:
    return (json.dumps(packet, sort_keys=True, indent=1, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def packet_sha256(packet: dict[str, Any]) -> str:
    return hashlib.sha256(packet_bytes(packet)).hexdigest()


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


def review_gate(vendors: list[str], sent: pd.DataFrame, current_sha256: dict[str, str], on: date,
                business_days: int) -> GateResult:
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
        entry = {"sent_on": sent_on.isoformat(), "opens_on": clock.opens_on.isoformat(),
                 "business_days_elapsed": clock.elapsed, "business_days_required": business_days,
                 "packet_sha256": rec.packet_sha256}
        result.vendors[vendor] = entry
        if current_sha256.get(vendor) != rec.packet_sha256:
            result.problems.append(f"{vendor}: figures changed since its packet was sent on {sent_on}; "
                                   "send it again (materialize review_packets)")
        elif not clock.passed:
            result.problems.append(f"{vendor}: packet sent {sent_on}, {clock.elapsed} of {business_days} business "
                                   f"days elapsed; publishable from {clock.opens_on}")
    result.passed = not result.problems
    return result
