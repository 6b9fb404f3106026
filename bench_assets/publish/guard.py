"""What publication asks of integrity: may this snapshot be published now, which extra files go
with it (holdout commitments, the exclusions ledger, the review record), and the lifecycle step
once the files are in place.

`published_snapshot` calls `PublicationGuard.begin(...)` before rendering anything, writes
`guard.files(...)` (from every vendor's share, read with its build: `vendor_integrity`) into the
staging directory, and calls `guard.finish()` after the files were moved into place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.errors import PublicationRefused
from bench_assets.fetch.spend import archived_spend
from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.publish import exclusions
from bench_assets.publish.errata import applied_record, base_of
from bench_assets.review.business_days import clock_is_fixed, today
from bench_assets.review.gate import GateResult, evaluate_review_gate
from bench_assets.split import commitments
from bench_assets.split.assign import split_key
from bench_assets.storage import lifecycle
from bench_assets.storage.warehouse import ERRATA_PROCESS, Warehouse


def _failure(message: str, **details: Any) -> PublicationRefused:
    return PublicationRefused(message, {k: str(v) for k, v in details.items()})


def version_problems(warehouse: Warehouse, manifest: Manifest) -> list[str]:
    """Why a manifest that `supersedes` another may not publish without its own review (empty:
    it may). The version it supersedes must exist and be published, and an applied erratum or a
    filed reply, recorded in the `errata` table for exactly this version, must stand behind it."""

    snapshot_id, source = manifest.snapshot_id, manifest.supersedes
    assert source is not None  # asked only of a manifest that supersedes another
    problems = []
    if base_of(source) != base_of(snapshot_id):
        problems.append(f"{source} is not a version of {base_of(snapshot_id)}")
    registered = warehouse.query_df("SELECT status FROM snapshots WHERE snapshot_id = ?", [source])
    if registered.empty:
        problems.append(f"the snapshot it supersedes, {source}, does not exist (never registered)")
    elif lifecycle.snapshot_status(warehouse, source) != lifecycle.PUBLISHED:
        problems.append(
            f"the snapshot it supersedes, {source}, is {lifecycle.snapshot_status(warehouse, source)}, "
            "not published (only a published snapshot has versions)"
        )
    record = applied_record(warehouse, snapshot_id)
    if record is None:
        problems.append(
            f"no applied erratum or filed reply stands behind {snapshot_id} (versions are made by "
            "`bench errata apply` or `bench review reply`, never by editing `supersedes`)"
        )
    elif record["corrected_version"] != source:
        problems.append(
            f"the change recorded for {snapshot_id} ({record['erratum_id']}) corrects "
            f"{record['corrected_version']}, not {source}"
        )
    elif record["action"] == "reply":
        replies = warehouse.query_df(
            "SELECT vendor FROM vendor_replies WHERE snapshot_id = ? AND vendor = ?", [snapshot_id, record["vendor"]]
        )
        if replies.empty:
            problems.append(f"{snapshot_id} was made for {record['vendor']}'s reply, which is not filed with it")
    return problems


@dataclass(frozen=True)
class VendorIntegrity:
    """One vendor's share of the integrity files, read from its archived attempts: the decoy
    queries it was sent and what every decoy attempt billed (None: no decoy attempt archived),
    and the commitments to its holdout bodies (None: no holdout attempt with a body)."""

    vendor: str
    decoys: tuple[int, float] | None
    commitments: list[str] | None


def holdout_commitment_key(split_secret: bytes, snapshot_id: str) -> bytes:
    """The key of a snapshot's holdout commitments: one for the snapshot and its errata versions,
    so the same response has the same commitment in each."""
    return commitments.commitment_key(split_secret, base_of(snapshot_id))


def vendor_integrity(manifest: Manifest, vendor: str, raw: pd.DataFrame, key: bytes) -> VendorIntegrity:
    """`VendorIntegrity` from every archived attempt of the vendor (`raw`, all roles), as
    `PublicationGuard` reads it from the warehouse; `key` the commitment key. A vendor's part is
    built from the same reading of its archive (`publish.vendor_part`), so nothing is read twice."""
    decoy = raw[raw["role"] == "decoy"].reset_index(drop=True)
    decoys = None
    if len(decoy):
        spec = manifest.vendors.get(vendor)
        usd = float(archived_spend(get_adapter(spec.adapter), spec.prices_usd, decoy).sum()) if spec else 0.0
        decoys = (int(decoy["query_id"].nunique()), usd)
    held = raw.loc[(raw["role"] == "holdout") & raw["body"].notna(), "body"]
    return VendorIntegrity(vendor, decoys, commitments.vendor_commitments(key, held) if len(held) else None)


@dataclass
class PublicationGuard:
    """The integrity side of one publication of a snapshot."""

    warehouse: Warehouse
    manifest: Manifest
    board: dict[str, Any]
    rows: list[GoldenRow]
    split: dict[str, str]
    split_secret: bytes
    publish_as: str  # "published" (immutable from now on) or "draft" (a simulated preview)
    on: date
    gate: GateResult | None = None

    @classmethod
    def begin(
        cls,
        warehouse: Warehouse,
        manifest: Manifest,
        board: dict[str, Any],
        rows: list[GoldenRow],
        split: dict[str, str],
    ) -> PublicationGuard:
        """Decide whether the snapshot may be published now; raise PublicationRefused saying why not."""

        snapshot_id = manifest.snapshot_id
        status = lifecycle.snapshot_status(warehouse, snapshot_id)
        on = today()
        gate = None
        if status == lifecycle.PUBLISHED:
            raise _failure(
                f"snapshot {snapshot_id} is published and immutable: nothing is re-rendered or overwritten. "
                f"{ERRATA_PROCESS}",
                snapshot=snapshot_id,
            )
        if manifest.supersedes:
            problems = version_problems(warehouse, manifest)
            if problems:
                raise _failure(
                    f"{snapshot_id} supersedes {manifest.supersedes} but cannot be published without its "
                    "own vendor review: " + "; ".join(problems),
                    snapshot=snapshot_id,
                )
            publish_as = lifecycle.PUBLISHED  # a version of a published snapshot: its base went through review
        elif status == lifecycle.FROZEN:
            gate = evaluate_review_gate(warehouse, manifest, board, rows, split, on)
            if not gate.passed:
                raise _failure(f"{snapshot_id}: {gate.summary()}", snapshot=snapshot_id, today=on)
            publish_as = lifecycle.PUBLISHED
        elif manifest.mode == "simulated":
            publish_as = lifecycle.DRAFT  # a simulated draft is a preview: it may be published again
        else:
            raise _failure(
                f"{snapshot_id} is a {manifest.mode} draft: send the vendors their review packets first "
                f"(materialize review_packets), then publish after {manifest.review.business_days} US "
                "business days",
                snapshot=snapshot_id,
            )
        return cls(
            warehouse,
            manifest,
            board,
            rows,
            split,
            split_key(manifest.split.key_env, manifest.mode),
            publish_as,
            on,
            gate,
        )

    @property
    def commitment_key(self) -> bytes:
        return holdout_commitment_key(self.split_secret, self.manifest.snapshot_id)

    def files(self, shares: Mapping[str, VendorIntegrity]) -> dict[str, str]:
        """The integrity files published with the snapshot: relative path → text, from every
        vendor's share of them (`vendor_integrity`, read with its build)."""
        snapshot_id = self.manifest.snapshot_id
        scores = self.warehouse.query_df(
            "SELECT vendor, row_id, task_type, response_class FROM row_scores WHERE snapshot_id = ?", [snapshot_id]
        )
        dead = self.warehouse.query_df("SELECT * FROM dead_rows WHERE snapshot_id = ?", [snapshot_id])
        decoy_spend = {v: share.decoys for v, share in sorted(shares.items()) if share.decoys is not None}
        ledger = exclusions.exclusions_ledger(self.manifest, scores, self.board, decoy_spend, dead, self.split)
        committed = {v: share.commitments for v, share in sorted(shares.items()) if share.commitments is not None}
        commitments_record = commitments.commitments_record(snapshot_id, committed, self.commitment_key)
        return {
            "holdout_commitments.json": json.dumps(commitments_record, indent=1) + "\n",
            "exclusions.json": exclusions.ledger_json(ledger, snapshot_id),
            "exclusions.csv": exclusions.ledger_csv(ledger),
            "review.json": json.dumps(self.review_record(), indent=2) + "\n",
        }

    def review_record(self) -> dict[str, Any]:
        """The snapshot's lifecycle and review record as published."""
        snapshot_id = self.manifest.snapshot_id
        sent = self.warehouse.query_df(
            "SELECT * FROM review_packets WHERE snapshot_id = ? ORDER BY vendor", [snapshot_id]
        )
        replies = self.warehouse.query_df("SELECT * FROM vendor_replies WHERE snapshot_id = ?", [snapshot_id])
        reply_of = {r.vendor: r for r in replies.itertuples(index=False)}
        vendors = {}
        for r in sent.itertuples(index=False):
            reply = reply_of.get(r.vendor)
            vendors[r.vendor] = {
                "packet_sent_on": pd.Timestamp(r.sent_on).date().isoformat(),
                "publishable_from": pd.Timestamp(r.opens_on).date().isoformat(),
                "business_days": int(r.business_days),
                "packet_sha256": r.packet_sha256,
                "reply": None
                if reply is None
                else {
                    "received_on": pd.Timestamp(reply.received_on).date().isoformat(),
                    "file": f"replies/{Path(reply.path).name}",
                    "sha256": reply.sha256,
                },
            }
        if self.publish_as == lifecycle.DRAFT:
            note = (
                "simulated draft preview: no review packets are required and the snapshot stays a draft "
                "(it may be published again)"
            )
        elif self.manifest.supersedes:
            note = (
                f"version of {self.manifest.supersedes} made by an applied erratum or a vendor's reply (see "
                "errata.json); its vendors reviewed the version it corrects"
            )
        else:
            note = (
                f"published after the review period: every vendor had its packet for at least "
                f"{self.manifest.review.business_days} US business days (weekends and federal holidays skipped)"
            )
        return {
            "snapshot_id": snapshot_id,
            "status": self.publish_as,
            "published_on": self.on.isoformat(),
            "supersedes": self.manifest.supersedes,
            "note": note,
            "vendors": vendors,
        }

    def finish(self) -> None:
        """After the files are in place: a reviewed (or errata) snapshot becomes published, immutable."""
        if self.publish_as == lifecycle.PUBLISHED:
            lifecycle.set_status(
                self.warehouse,
                self.manifest.snapshot_id,
                lifecycle.PUBLISHED,
                f"published on {self.on}"
                + (" (bench clock fixed by a test)" if clock_is_fixed() else "")
                + (f"; {self.gate.summary()}" if self.gate else ""),
            )
