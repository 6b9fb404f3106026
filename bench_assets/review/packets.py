"""Vendor review: one packet per vendor, sent before publication.

A vendor's packet holds what the vendor may check before anything is published: its public rows,
its raw responses to them, its scores on them, its pinned plan and prices, and for the holdout
only aggregates (n, correct rate with its interval, the overfit gap). No holdout id, query, URL
or response is in it. Each packet has a SHA-256 of its content; sending it records the date.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.errors import HoldoutLeakError
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.store import load_golden_rows
from bench_assets.manifest import Manifest
from bench_assets.review.business_days import review_clock
from bench_assets.split.leaks import LeakGuard, readings
from bench_assets.storage import lifecycle
from bench_assets.storage.warehouse import Warehouse

RAW_COLUMNS = [
    "query_id",
    "capability",
    "attempt",
    "started_at",
    "latency_ms",
    "request_json",
    "http_status",
    "response_headers_json",
    "body",
    "body_sha256",
    "transport_error",
    "final",
]
SCORE_COLUMNS = [
    "row_id",
    "stratum",
    "task_type",
    "response_class",
    "n_results",
    "first_hit_rank",
    "hit_at_1",
    "hit_at_3",
    "hit_at_5",
    "hit_at_10",
    "fidelity",
    "fidelity_label",
    "correct",
    "miss_reason",
    "billed_usd",
    "latency_ms",
    "attempts",
]


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


def vendor_packet(
    snapshot_id: str,
    vendor: str,
    mode: str,
    vendor_spec: dict[str, Any],
    board_entry: dict[str, Any],
    public_rows: list[dict[str, Any]],
    raw_public: pd.DataFrame,
    scores_public: pd.DataFrame,
) -> dict[str, Any]:
    """The review packet of one vendor (deterministic: the same inputs give the same bytes)."""
    split = (board_entry.get("breakdown") or {}).get("split", {})
    return {
        "snapshot_id": snapshot_id,
        "vendor": vendor,
        "mode": mode,
        "vendor_spec": vendor_spec,
        "public_rows": sorted(public_rows, key=lambda r: r["id"]),
        "raw_responses": _records(raw_public.sort_values(["query_id", "capability", "attempt"]), RAW_COLUMNS),
        "scores": _records(scores_public.sort_values("row_id"), SCORE_COLUMNS),
        "aggregates": {
            "metrics": board_entry.get("metrics", {}),
            "breakdown": board_entry.get("breakdown", {}),
            "response_classes": board_entry.get("response_classes", {}),
            "headline_eligible": board_entry.get("headline_eligible"),
            "reasons": board_entry.get("reasons", []),
        },
        "holdout_aggregates": {
            "metrics": split.get("holdout", {}),
            "overfit_gap": board_entry.get("metrics", {}).get("overfit_gap"),
        },
    }


def packet_bytes(packet: dict[str, Any]) -> bytes:
    return (json.dumps(packet, sort_keys=True, indent=1, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def packet_sha256(packet: dict[str, Any]) -> str:
    return hashlib.sha256(packet_bytes(packet)).hexdigest()


def public_records(rows: list[GoldenRow], split: dict[str, str]) -> list[dict[str, Any]]:
    return [json.loads(r.model_dump_json()) for r in rows if split.get(r.id) == "public"]


def packets_for_snapshot(
    manifest: Manifest,
    board: dict[str, Any],
    rows: list[GoldenRow],
    split: dict[str, str],
    raw_public: pd.DataFrame,
    scores_public: pd.DataFrame,
) -> dict[str, dict[str, Any]]:
    """Every configured vendor's review packet, as it would be sent now."""
    entries = {e["vendor"]: e for e in board["vendors"]}
    public = public_records(rows, split)
    out = {}
    for vendor, spec in sorted(manifest.vendors.items()):
        raw = raw_public[raw_public["vendor"] == vendor] if len(raw_public) else raw_public
        scores = scores_public[scores_public["vendor"] == vendor] if len(scores_public) else scores_public
        out[vendor] = vendor_packet(
            manifest.snapshot_id,
            vendor,
            manifest.mode,
            json.loads(spec.model_dump_json()),
            entries.get(vendor, {}),
            public,
            raw,
            scores,
        )
    return out


def load_public_evidence(warehouse: Warehouse, snapshot_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ? AND role = 'public'", [snapshot_id])
    scores = warehouse.query_df("SELECT * FROM row_scores WHERE snapshot_id = ? AND split = 'public'", [snapshot_id])
    return raw, scores


@dataclass(frozen=True)
class SentPackets:
    """The review_packets rows after sending, and which vendors were sent a packet this time."""

    records: pd.DataFrame
    resent: list[str]
    out_dir: Path


def _holdout_leaks(packets: dict[str, dict[str, Any]], rows: list[GoldenRow], split: dict[str, str]) -> list[str]:
    """Holdout ids and query texts in any packet (URLs are not looked for: a vendor's own raw
    responses may list any page it returned)."""
    guard = LeakGuard(
        [
            {"row_id": r.id, "request_text": r.request_text if r.task_type != "extract" else None}
            for r in rows
            if split.get(r.id) == "holdout"
        ],
        urls=False,
    )
    return [
        leak.describe(vendor)
        for vendor, packet in packets.items()
        for leak in guard.find(readings(f"{vendor}.json", packet_bytes(packet).decode("utf-8")))
    ]


def send_packets(
    warehouse: Warehouse, manifest: Manifest, board: dict[str, Any], private_dir: Path, on: date
) -> SentPackets:
    """Write every vendor's packet to the private store and record it, which freezes the snapshot
    (draft -> frozen). A packet whose content did not change keeps its original date; a changed one
    is sent again and its clock restarts. A packet that would reveal the holdout stops everything
    (HoldoutLeakError; which rows only in the private store)."""
    snapshot_id = manifest.snapshot_id
    rows = load_golden_rows(warehouse, snapshot_id)
    split = warehouse.split(snapshot_id)
    packets = packets_for_snapshot(manifest, board, rows, split, *load_public_evidence(warehouse, snapshot_id))
    leaks = _holdout_leaks(packets, rows, split)
    if leaks:
        leaks_file = private_dir / "leaks" / f"{snapshot_id}.review_packets.txt"  # not beside the packets
        leaks_file.parent.mkdir(parents=True, exist_ok=True)
        leaks_file.write_text("".join(f"{x}\n" for x in leaks))
        counts = pd.Series([x.partition(": holdout ")[0] for x in leaks]).value_counts()
        raise HoldoutLeakError(
            f"review packets of {snapshot_id} would reveal the holdout ({len(leaks)} occurrences; "
            f"which rows: {leaks_file})",
            {
                "leaks": counts.rename("occurrences").rename_axis("vendor").reset_index().to_markdown(index=False),
                "which_rows": str(leaks_file),
            },
        )
    previous = {r.vendor: r for r in warehouse.rows("review_packets", snapshot_id).itertuples(index=False)}
    out_dir = private_dir / "review" / snapshot_id
    out_dir.mkdir(parents=True, exist_ok=True)
    records, resent = [], []
    for vendor, packet in packets.items():
        digest, path, before = packet_sha256(packet), out_dir / f"{vendor}.json", previous.get(vendor)
        if before is not None and before.packet_sha256 == digest and path.exists():
            day = pd.Timestamp(before.sent_on).date()
        else:
            path.write_bytes(packet_bytes(packet))
            day = on
            resent.append(vendor)
        records.append(
            {
                "snapshot_id": snapshot_id,
                "vendor": vendor,
                "sent_on": day,
                "business_days": manifest.review.business_days,
                "opens_on": review_clock(day, day, manifest.review.business_days).opens_on,
                "packet_path": str(path),
                "packet_sha256": digest,
                "public_rows": len(packet["public_rows"]),
                "responses": len(packet["raw_responses"]),
            }
        )
    df = pd.DataFrame(records)
    warehouse.replace_rows("review_packets", df, {"snapshot_id": snapshot_id})
    lifecycle.set_status(
        warehouse, snapshot_id, lifecycle.FROZEN, f"review packets sent to {', '.join(resent) or 'nobody new'} on {on}"
    )
    return SentPackets(df, resent, out_dir)
