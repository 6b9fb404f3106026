"""Vendors' replies: a standing right of reply, published verbatim and linked from the vendor's row.

A reply is stored as the bytes received (`data/snapshots/<snapshot>/replies/<vendor>.md` or
`.txt`), recorded in `vendor_replies` with its SHA-256, and published as that same file (the page
beside it shows the text, escaped). Before publication it simply goes with the snapshot. After
publication the snapshot is immutable, so a reply makes a new version, as an erratum does
(`<id>-eN`, superseding the latest published version): every row and archive is copied, nothing
is re-fetched or re-scored, the figures are the same, and the version history (`errata.json`)
gains an entry saying whose reply it adds. The old version stays as it was.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.aggregate.leaderboard import current_leaderboard
from bench_assets.errors import BenchInputError
from bench_assets.manifest import load_manifest
from bench_assets.publish import errata as versions
from bench_assets.storage import lifecycle
from bench_assets.storage.warehouse import Warehouse

REPLY_SUFFIXES = (".md", ".txt")


def reply_filename(vendor: str, source: Path) -> str:
    return f"{vendor}{source.suffix if source.suffix in REPLY_SUFFIXES else '.txt'}"


def store_reply(
    warehouse: Warehouse, snapshot_dir: Path, snapshot_id: str, vendor: str, source: Path, received_on: date
) -> tuple[Path, str]:
    """Copy the reply byte for byte beside the snapshot's manifest (replacing the vendor's earlier
    reply there) and record it in `vendor_replies`; returns (stored file, SHA-256)."""
    target = snapshot_dir / "replies" / reply_filename(vendor, source)
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in target.parent.glob(f"{vendor}.*"):
        old.unlink()
    shutil.copyfile(source, target)  # verbatim: the bytes as received
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    warehouse.replace_rows(
        "vendor_replies",
        pd.DataFrame(
            [
                {
                    "snapshot_id": snapshot_id,
                    "vendor": vendor,
                    "received_on": received_on,
                    "path": str(target),
                    "sha256": digest,
                }
            ]
        ),
        {"snapshot_id": snapshot_id, "vendor": vendor},
    )
    return target, digest


def reply_entry(
    vendor: str,
    received_on: date,
    digest: str,
    filename: str,
    base: str,
    source: str,
    new: str,
    figures: dict[str, Any],
) -> dict[str, Any]:
    """The version-history entry of a reply (errata.json): nothing re-run, no figure changed."""
    return {
        "id": f"reply-{vendor}-{new.rpartition('-e')[2]}",
        "date": received_on.isoformat(),
        "vendor": vendor,
        "action": "reply",
        "what": f"{vendor}'s reply, received {received_on.isoformat()}, published verbatim "
        f"(replies/{filename}, sha256 {digest})",
        "why": "the standing right of reply (methodology § 03): a published snapshot is immutable, so the "
        "reply is published as a new version",
        "who": vendor,
        "changes": {},
        "snapshot": base,
        "corrects": source,
        "version": new,
        "summary": f"{vendor} reply ({source} → {new}): published verbatim; nothing re-run, no figure changed",
        "before": figures,
        "after": {**figures, "snapshot_id": new},
        "changed": {},
    }


def file_reply(
    paths: Any,
    warehouse: Warehouse,
    snapshot_id: str,
    vendor: str,
    source: Path,
    received_on: date,
    materializer: Callable[[], tuple[versions.Materialize, Callable[[str], object]]],
) -> dict[str, Any]:
    """File a vendor's reply to a snapshot. Unpublished: stored with it. Published: stored in a new
    version that is published at once, with nothing re-run (`materializer()` gives the
    (materialize, register) pair that runs Dagster). Returns what was done."""
    manifest = load_manifest(paths.manifest_path(snapshot_id))
    if vendor not in manifest.vendors:
        raise BenchInputError(
            f"reply for {snapshot_id}", [(None, "vendor", f"{vendor!r} is not a configured vendor of {snapshot_id}")]
        )
    if not source.is_file():
        raise BenchInputError(str(source), [(None, "<file>", "reply file not found")])
    if lifecycle.snapshot_status(warehouse, snapshot_id) != lifecycle.PUBLISHED:
        stored, digest = store_reply(
            warehouse, paths.snapshots_dir / snapshot_id, snapshot_id, vendor, source, received_on
        )
        return {"version": snapshot_id, "new_version": False, "path": stored, "sha256": digest}

    base = versions.base_of(snapshot_id)
    all_versions, published = versions.published_versions(paths, warehouse, base)
    source_version = published[-1]  # a reply goes with the latest published version
    if all_versions[-1] != source_version:
        new = all_versions[-1]
        record = versions.applied_record(warehouse, new)
        if record is None or record["action"] != "reply" or record["corrected_version"] != source_version:
            what = f"made by {record['erratum_id']}" if record else "not made by a reply"
            raise BenchInputError(
                str(paths.manifest_path(new)),
                [
                    (
                        None,
                        "supersedes",
                        (
                            f"{new} is an unpublished version {what}: finish it (`bench errata apply`) before filing a reply"
                        ),
                    )
                ],
            )
    else:
        new = versions.version_id(base, len(all_versions))
    materialize, register = materializer()
    previous = versions.load_published_errata(paths.snapshots_dir / source_version / "errata.json")
    figures = versions.vendor_figures(
        current_leaderboard(warehouse, load_manifest(paths.manifest_path(source_version))), vendor
    )
    new_dir = versions.start_version(paths, warehouse, source_version, new, vendor, {}, materialize, register)
    versions.copy_rows(warehouse, source_version, new, None, refetch=False)
    versions.copy_archives(warehouse, source_version, new, skip_vendor=None)
    stored, digest = store_reply(warehouse, new_dir, new, vendor, source, received_on)
    materialize(("vendor_leaderboard",), new)  # the same aggregates, re-derived from the copied scores
    entry = reply_entry(vendor, received_on, digest, stored.name, base, source_version, new, figures)
    (new_dir / "errata.json").write_text(json.dumps([*previous, entry], indent=2) + "\n")
    versions.record_version(warehouse, base, entry["id"], source_version, new, vendor, "reply", entry)
    materialize(("published_snapshot",), new)
    return {"version": new, "new_version": True, "corrects": source_version, "path": stored, "sha256": digest}
