"""Where `leaderboard.json` itself comes from: when the snapshot was published, a hash over the
files published with it, the license of the data, the snapshot's status and a one-line disclaimer.

`generated_at` is the time the publication recorded (`publication_versions.recorded_at`, published
as `versions.publication.recorded_at`), never the clock of whoever renders the file, so `bench
rescore` re-renders the same bytes; it is null in a record that is not a publication (the Dagster
preview, review packets).

`content_hash` covers every file published in the snapshot's folder except `leaderboard.json`
itself and `llms.txt` (which states the hash: `HASH_EXCLUDED`). It is the SHA-256 of the lines
`<sha256 of the file>  <path>\\n` (two spaces, the format `sha256sum` prints), one per file, sorted
by path (relative to the folder, `/`-separated, byte order), written `sha256:<hex>`. The
`publications` table records every file's SHA-256, so the warehouse gives the same hash. An
outsider recomputes it in the folder with

    find . -type f ! -path ./leaderboard.json ! -path ./llms.txt -printf '%P\\n' | LC_ALL=C sort \\
      | xargs -d '\\n' sha256sum | sha256sum

and `bench reproduce DIR` checks it (`folder_content_hash`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench_assets.manifest import Manifest

LICENSE = "CC-BY-4.0"
LICENSE_URL = "https://creativecommons.org/licenses/by/4.0/"
LICENSE_NOTE = (
    "The published data (leaderboard.json, the CSV files, the public split, the evidence bundle and the pages) is "
    "licensed under the Creative Commons Attribution 4.0 International license (CC-BY-4.0): cite the snapshot id. "
    "Vendors' replies are published verbatim and remain their authors'."
)
HASH_EXCLUDED = ("leaderboard.json", "llms.txt")
HASH_METHOD = (
    "SHA-256 over the lines '<sha256>  <path>\\n' (sha256sum's format) of every file in the snapshot's folder "
    "but leaderboard.json and llms.txt, sorted by path in byte order; in the folder: find . -type f ! -path "
    "./leaderboard.json ! -path ./llms.txt -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum"
)

SIMULATED, DRAFT, PUBLISHED, PUBLISHED_WITH_ERRATA = "simulated", "draft", "published", "published_with_errata"
DISCLAIMERS = {
    SIMULATED: "Simulated: every vendor is the local simulator, so these figures show the pipeline working and "
    "must not be quoted as a comparison of real vendors.",
    DRAFT: "Draft: not yet through vendor review; the figures may change before publication.",
    PUBLISHED: "Published after vendor review: measured figures with n and 95 % intervals; only those marked "
    "headline-eligible may be quoted as a comparison.",
    PUBLISHED_WITH_ERRATA: "A corrected version of a published snapshot (see errata.json): measured figures with "
    "n and 95 % intervals; only those marked headline-eligible may be quoted as a comparison.",
}


def snapshot_status(manifest: Manifest, lifecycle_status: str | None) -> str:
    """The status `leaderboard.json` states: `simulated` for a simulated snapshot whatever its
    lifecycle; otherwise `published` once it publishes as published (`published_with_errata` for a
    version made by an erratum or a reply), else `draft`. `lifecycle_status`: `storage.lifecycle`'s
    state the snapshot publishes as (None: not being published)."""
    if manifest.mode == "simulated":
        return SIMULATED
    if lifecycle_status != PUBLISHED:
        return DRAFT
    return PUBLISHED_WITH_ERRATA if manifest.supersedes else PUBLISHED


def set_status(board: dict[str, Any], manifest: Manifest, lifecycle_status: str | None) -> None:
    """Put the snapshot's status and its disclaimer in `board`."""
    status = snapshot_status(manifest, lifecycle_status)
    board["status"] = status
    board["disclaimer"] = DISCLAIMERS[status]


def generated_at(versions: Mapping[str, Any] | None) -> str | None:
    """When the publication was recorded (`versions.publication.recorded_at`); None without one."""
    publication = (versions or {}).get("publication") or {}
    at = publication.get("recorded_at")
    return None if at is None else str(at)


def provenance_fields(manifest: Manifest, versions: Mapping[str, Any] | None) -> dict[str, Any]:
    """The provenance `build_leaderboard` puts in the record; `status` as for a record not being
    published and `content_hash` null until the files are rendered (`with_content_hash`)."""
    status = snapshot_status(manifest, None)
    return {
        "generated_at": generated_at(versions),
        "content_hash": None,
        "content_hash_method": HASH_METHOD,
        "license": LICENSE,
        "license_url": LICENSE_URL,
        "status": status,
        "disclaimer": DISCLAIMERS[status],
    }


def content_hash(digests: Iterable[tuple[str, str]]) -> str:
    """`sha256:<hex>` of the files' (path, SHA-256) pairs, leaving out `HASH_EXCLUDED` (see the module)."""
    lines = "".join(f"{digest}  {rel}\n" for rel, digest in sorted(digests) if rel not in HASH_EXCLUDED)
    return "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()


def folder_content_hash(folder: Path) -> str:
    """`content_hash` of the files in a published folder as they are on disk."""
    return content_hash(
        (p.relative_to(folder).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in folder.rglob("*")
        if p.is_file()
    )
