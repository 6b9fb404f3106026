"""The exclusions ledger: everything left out of a snapshot's figures, with its reason and effect.

One machine-readable table published with the snapshot (`exclusions.json`, `exclusions.csv`):
vendors excluded by the manifest, rows a vendor cannot serve (no such capability), golden rows
that died in verification, decoys, and configured vendors that were not run. Each entry says
what it is (vendor or rows), the reason code, the evidence, who decided, and the effect on
denominators. Holdout rows are counted, never named.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.manifest import Manifest

LEDGER_COLUMNS = [
    "scope",
    "subject",
    "vendor",
    "reason_code",
    "reason",
    "evidence",
    "decided_by",
    "effect_on_denominators",
    "rows_affected",
    "spend_usd",
]


def exclusions_ledger(
    manifest: Manifest,
    scores: pd.DataFrame,
    board: dict[str, Any],
    decoys_per_vendor: dict[str, tuple[int, float]],
    dead: pd.DataFrame,
    split: dict[str, str],
) -> list[dict[str, Any]]:
    """The ledger entries of a snapshot. `scores` is row_scores (all splits), `dead` the dead_rows
    table (each row with the side of the split it was on), `decoys_per_vendor` the decoy queries
    archived per vendor and what they were billed. `split` is the current split (a fallback for
    dead rows recorded without their side)."""
    out: list[dict[str, Any]] = []
    for e in manifest.excluded:
        out.append(
            {
                "scope": "vendor",
                "subject": e.vendor,
                "vendor": e.vendor,
                "reason_code": e.reason_code,
                "reason": e.reason,
                "evidence": e.evidence,
                "decided_by": e.decided_by,
                "effect_on_denominators": "never called, never scored: in no denominator and no ranking",
                "rows_affected": None,
            }
        )
    for entry in board.get("vendors", []):
        if entry.get("status") == "not_run":
            out.append(
                {
                    "scope": "vendor",
                    "subject": entry["vendor"],
                    "vendor": entry["vendor"],
                    "reason_code": "not_run",
                    "reason": entry.get("reason") or "no scores",
                    "evidence": "no row_scores for the vendor",
                    "decided_by": "bench pipeline",
                    "effect_on_denominators": "not ranked; no figures published",
                    "rows_affected": None,
                }
            )
    if len(scores):
        unsupported = scores[scores["response_class"] == "unsupported"]
        for (vendor, task_type), part in unsupported.groupby(["vendor", "task_type"], sort=True):
            spec = manifest.vendors.get(vendor)
            measured_by = (
                [v for v in manifest.configurations_of(spec.provider) if task_type in manifest.vendors[v].capabilities]
                if spec is not None and task_type in get_adapter(spec.adapter).capabilities
                else []
            )
            out.append(
                {
                    "scope": "rows",
                    "subject": f"{task_type} rows",
                    "vendor": vendor,
                    "reason_code": "unsupported_capability",
                    "reason": f"{vendor} has no endpoint for {task_type} rows in this snapshot"
                    + (
                        f": its provider's {task_type} call is the same request in every mode, measured once, "
                        f"under {', '.join(measured_by)}"
                        if measured_by
                        else ""
                    ),
                    "evidence": f"manifest endpoints: {sorted(spec.endpoints) if spec else '—'}; adapter "
                    f"{spec.adapter if spec else '—'}",
                    "decided_by": "bench pipeline (adapter capabilities)",
                    "effect_on_denominators": f"{len(part)} rows left out of {vendor}'s correct rate and coverage "
                    f"denominators and of its paired comparisons; no {task_type} figure for {vendor}",
                    "rows_affected": len(part),
                }
            )
    if len(dead):
        for stratum, part in dead.groupby("stratum", sort=True):
            # the side a dead row was on is recorded with it: a replaced row has left the split table
            recorded = part["split"] if "split" in part else [None] * len(part)
            public = sorted(
                r
                for r, side in zip(part["row_id"], recorded)
                if (side if isinstance(side, str) else split.get(r)) == "public"
            )
            replaced = int(part["replacement_row_id"].notna().sum())
            out.append(
                {
                    "scope": "rows",
                    "subject": f"dead golden rows in {stratum}",
                    "vendor": None,
                    "reason_code": "dead_golden_row",
                    "reason": "the row failed verification (its page or fact no longer holds)",
                    "evidence": f"{len(part)} rows dead since {min(part['dead_since'])}; {replaced} replaced from the "
                    f"stratum's candidate pool; public ones: {', '.join(public) or 'none'} (holdout rows "
                    "are counted, not named)",
                    "decided_by": "golden verification",
                    "effect_on_denominators": "left out of every vendor's denominators; a replacement row takes its place",
                    "rows_affected": len(part),
                }
            )
    for vendor, (n, usd) in sorted(decoys_per_vendor.items()):
        if n:
            out.append(
                {
                    "scope": "queries",
                    "subject": "decoy queries",
                    "vendor": vendor,
                    "reason_code": "decoy",
                    "reason": "sent interleaved with the holdout so that it cannot be told apart on the wire",
                    "evidence": f"{n} decoy queries archived (ratio {manifest.decoys.ratio:g} per holdout row), "
                    f"billed ${usd:.4f}; their text is private",
                    "decided_by": "methodology (holdout custody)",
                    "effect_on_denominators": "archived, never scored: in no denominator; their spend is not in "
                    "the vendor's spend or cost per correct",
                    "rows_affected": int(n),
                    "spend_usd": round(float(usd), 6),
                }
            )
    for entry in out:
        entry.setdefault("spend_usd", None)
    return out


def ledger_json(entries: list[dict[str, Any]], snapshot_id: str) -> str:
    return (
        json.dumps(
            {"snapshot_id": snapshot_id, "columns": LEDGER_COLUMNS, "exclusions": entries}, indent=2, sort_keys=False
        )
        + "\n"
    )


def ledger_csv(entries: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=LEDGER_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for e in entries:
        writer.writerow({k: "" if e.get(k) is None else e.get(k) for k in LEDGER_COLUMNS})
    return buf.getvalue()
