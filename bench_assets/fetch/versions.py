"""The code, environment and input files a snapshot was fetched and published with.

Every vendor partition's fetch (`vendor_responses`) and every publication record the git commit of
the code (and whether its tree had uncommitted changes), the Python version, the version of every
installed package that can change a figure, each vendor's adapter version, and the SHA-256 of the
manifest, the golden set, the public split and the archived pricing pages. They are stored in
`fetch_versions` (one row per fetch run that sent requests, or the first run of a partition) and
`publication_versions` (one row per publication), published in `leaderboard.json` (`versions`) and
on the disclosures page, and `bench rescore` warns when its own differ (`version_warnings`).

Where the commit comes from: the package's own directory when it sits in a git checkout (the
repository, a worktree); else the `vcs_info` pip records in `direct_url.json` when it installed
the code from a git URL; else `$BENCH_CODE_COMMIT`, which an image build can set; else the
commit is recorded as "unknown" with the reason (a wheel carries no commit), never guessed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.manifest import Manifest
from bench_assets.storage.warehouse import Warehouse

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # bench_assets/
DISTRIBUTION = "bench"
# Installed packages whose version can change a published figure or file: the orchestration and
# storage (dagster, duckdb, pyarrow), transport (httpx), the numerics (pandas, numpy, scipy),
# parsing (pydantic, PyYAML, selectolax), the simulator's ranking (rank-bm25), and the rendering of
# pages and charts (jinja2, markdown-it-py, matplotlib, tabulate).
FIGURE_PACKAGES = (
    "dagster",
    "dagster-duckdb",
    "duckdb",
    "httpx",
    "pandas",
    "numpy",
    "scipy",
    "pyarrow",
    "pydantic",
    "PyYAML",
    "selectolax",
    "rank-bm25",
    "jinja2",
    "markdown-it-py",
    "matplotlib",
    "tabulate",
)
UNKNOWN = "unknown"


# ##### THE CODE'S COMMIT


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), *args],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
        # status must not take the index lock another process (or git command) may hold
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    )
    return done.stdout


# What a run itself writes into the checkout when the bench home is the checkout: the public split
# it exports, the vendors' replies it files, the errata versions it makes (`<id>-e<n>/`, manifest and
# all) and the sentinel pages it deploys. None of it is code, and every input a figure depends on is
# fingerprinted on its own (`input_files`), so these never make the code `dirty`.
RUN_WRITTEN = (
    "data/snapshots/*/public_split.jsonl",
    "data/snapshots/*/replies/**",
    "data/snapshots/*-e[0-9]*/**",
    "data/sentinels/**",
)
_NOT_RUN_WRITTEN = (".", *(f":(glob,exclude){pattern}" for pattern in RUN_WRITTEN))


def code_version(package_dir: Path = PACKAGE_DIR) -> dict[str, Any]:
    """The commit of the running code: `{commit, dirty, source}` (see the module). `dirty` is
    True when the checkout has uncommitted changes (tracked or untracked files, `git status`) other
    than the files a run writes itself (`RUN_WRITTEN`), then `changes_sha256` fingerprints them;
    None when it cannot be known (an installed package)."""
    checkout = package_dir.parent
    if (checkout / ".git").exists():  # a directory in a clone, a file in a worktree
        try:
            commit = _git(checkout, "rev-parse", "HEAD").strip()
            # every untracked file listed on its own, so a folder of run output is not one entry
            status = _git(checkout, "status", "--porcelain", "--untracked-files=all", "--", *_NOT_RUN_WRITTEN)
            out: dict[str, Any] = {"commit": commit, "dirty": bool(status.strip()), "source": "git checkout"}
            if status.strip():
                diff = _git(checkout, "diff", "HEAD", "--binary", "--", *_NOT_RUN_WRITTEN)
                out["changes_sha256"] = hashlib.sha256((status + diff).encode()).hexdigest()
            return out
        except (OSError, subprocess.SubprocessError) as exc:
            reason = f"git failed in {checkout.name}: {type(exc).__name__}"
            return {"commit": UNKNOWN, "dirty": None, "source": f"{UNKNOWN}: {reason}"}
    recorded = _pip_vcs_commit()
    if recorded:
        return {"commit": recorded, "dirty": None, "source": "installed by pip from a git URL (direct_url.json)"}
    if os.environ.get("BENCH_CODE_COMMIT", "").strip():
        return {
            "commit": os.environ["BENCH_CODE_COMMIT"].strip(),
            "dirty": None,
            "source": "$BENCH_CODE_COMMIT, set where the code was installed",
        }
    return {
        "commit": UNKNOWN,
        "dirty": None,
        "source": f"{UNKNOWN}: the code is not in a git checkout (installed from a wheel or an archive, which "
        "carries no commit) and neither pip's direct_url.json nor $BENCH_CODE_COMMIT names one",
    }


def _pip_vcs_commit() -> str | None:
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        commit = (json.loads(text or "{}").get("vcs_info") or {}).get("commit_id")
    except (ValueError, AttributeError):
        return None
    return str(commit) if commit else None


# ##### THE ENVIRONMENT AND THE INPUT FILES


def package_versions(names: Iterable[str] = FIGURE_PACKAGES) -> dict[str, str | None]:
    """Each package's installed version (None: not installed), and bench's own."""
    out: dict[str, str | None] = {}
    for name in (DISTRIBUTION, *names):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def python_version() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def adapter_versions(manifest: Manifest, vendors: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """Per vendor: its adapter module, the version the code implements and the version the manifest pins."""
    out = {}
    for vendor in sorted(vendors if vendors is not None else manifest.vendors):
        spec = manifest.vendors[vendor]
        out[vendor] = {
            "adapter": spec.adapter,
            "version": str(get_adapter(spec.adapter).version),
            "pinned": str(spec.adapter_version),
        }
    return out


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _shown(path: Path, root: Path, private_dir: Path) -> str:
    """A path as published: relative to the bench home, or to the private store (never absolute)."""
    for base, prefix in ((private_dir, "private:"), (root, "")):
        try:
            return prefix + path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return path.name


def input_files(
    manifest: Manifest, root: Path, private_dir: Path, vendors: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """SHA-256 of the snapshot's inputs: its manifest, golden set (the private file the rows were
    read from), public split and each vendor's archived pricing page and terms (with the SHA-256 the
    manifest pins for each). A file that cannot be read has `sha256: null`."""
    snapshot_dir = root / "data" / "snapshots" / manifest.snapshot_id
    golden = (
        private_dir / "golden" / f"{manifest.snapshot_id}.jsonl"
        if manifest.golden.source == "planted_demo"
        else private_dir / (manifest.golden.path or "")
    )
    files: dict[str, dict[str, Any]] = {}
    for label, path in (
        ("manifest", snapshot_dir / "manifest.yaml"),
        ("golden_set", golden),
        ("public_split", snapshot_dir / "public_split.jsonl"),
    ):
        files[label] = {"path": _shown(path, root, private_dir), "sha256": _digest(path)}
    for vendor in sorted(vendors if vendors is not None else manifest.vendors):
        spec = manifest.vendors[vendor]
        for label, source in (("pricing", spec.pricing_source), ("terms", spec.evidence_terms)):
            if source is not None:
                files[f"{label}/{vendor}"] = {
                    "path": source.file,
                    "sha256": _digest(root / source.file),
                    "pinned_sha256": source.sha256,
                }
    return files


def environment_record(
    manifest: Manifest, root: Path, private_dir: Path, vendors: Iterable[str] | None = None
) -> dict[str, Any]:
    """Everything the module records, now: `recorded_at`, `code`, `python`, `packages`, `adapters`
    and `files` (of `vendors`, default every vendor of the manifest)."""
    chosen = list(vendors) if vendors is not None else None
    return _canonical(
        {
            "recorded_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "code": code_version(),
            "python": python_version(),
            "packages": package_versions(),
            "adapters": adapter_versions(manifest, chosen),
            "files": input_files(manifest, root, private_dir, chosen),
        }
    )


def _canonical(record: Mapping[str, Any]) -> dict[str, Any]:
    """Keys in sorted order at every level, as a record read back from the warehouse has them, so
    a page rendered from either lists them alike."""
    out: dict[str, Any] = json.loads(json.dumps(record, sort_keys=True))
    return out


# ##### STORED AND READ BACK


def record_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record as a row of `fetch_versions` / `publication_versions` (maps as JSON)."""
    code = record["code"]
    return {
        "recorded_at": pd.Timestamp(record["recorded_at"]),
        "code_commit": code["commit"],
        "code_dirty": code.get("dirty"),
        "code_source": code["source"],
        "code_changes_sha256": code.get("changes_sha256"),
        "python": record["python"],
        "packages_json": json.dumps(record["packages"], sort_keys=True),
        "adapters_json": json.dumps(record["adapters"], sort_keys=True),
        "files_json": json.dumps(record["files"], sort_keys=True),
    }


def _record(row: Mapping[str, Any]) -> dict[str, Any]:
    dirty = row.get("code_dirty")
    code = {
        "commit": row["code_commit"],
        "dirty": None
        if dirty is None or dirty is pd.NA or (isinstance(dirty, float) and dirty != dirty)
        else bool(dirty),
        "source": row["code_source"],
    }
    if isinstance(row.get("code_changes_sha256"), str):
        code["changes_sha256"] = row["code_changes_sha256"]
    recorded = pd.Timestamp(row["recorded_at"]).tz_convert("UTC")
    return _canonical(
        {
            "recorded_at": recorded.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "code": code,
            "python": row["python"],
            "packages": json.loads(row["packages_json"] or "{}"),
            "adapters": json.loads(row["adapters_json"] or "{}"),
            "files": json.loads(row["files_json"] or "{}"),
        }
    )


def record_fetch_versions(
    warehouse: Warehouse, manifest: Manifest, vendor: str, root: Path, private_dir: Path, sent: int
) -> dict[str, Any] | None:
    """Add this fetch run's record to the partition's `fetch_versions` rows when it sent requests
    (or the partition has none yet): a run that only re-read the archive changed no response.
    Returns the record added, None when nothing was added."""
    snapshot_id = manifest.snapshot_id
    history = warehouse.rows("fetch_versions", snapshot_id, vendor)
    if sent == 0 and len(history):
        return None
    record = environment_record(manifest, root, private_dir, [vendor])
    row = {"snapshot_id": snapshot_id, "vendor": vendor, "responses_sent": int(sent), **record_row(record)}
    rows = pd.concat([history, pd.DataFrame([row])], ignore_index=True) if len(history) else pd.DataFrame([row])
    warehouse.replace_rows("fetch_versions", rows, {"snapshot_id": snapshot_id, "vendor": vendor})
    return record


def record_publication_versions(warehouse: Warehouse, snapshot_id: str, record: Mapping[str, Any]) -> None:
    """Store the publication's record (the one rendered into its files)."""
    row = {"snapshot_id": snapshot_id, **record_row(record)}
    warehouse.replace_rows("publication_versions", pd.DataFrame([row]), {"snapshot_id": snapshot_id})


def recorded_versions(warehouse: Warehouse, snapshot_id: str) -> dict[str, Any]:
    """The snapshot's recorded versions as `leaderboard.json` publishes them: `fetch` (vendor → its
    fetch runs' records, oldest first, each with `responses_sent`) and `publication` (or None)."""
    fetches = warehouse.rows("fetch_versions", snapshot_id, order_by="vendor, recorded_at")
    fetch: dict[str, list[dict[str, Any]]] = {}
    for row in fetches.to_dict("records"):
        fetch.setdefault(str(row["vendor"]), []).append({**_record(row), "responses_sent": int(row["responses_sent"])})
    published = warehouse.rows("publication_versions", snapshot_id)
    return {"fetch": fetch, "publication": _record(published.iloc[0].to_dict()) if len(published) else None}


# ##### COMPARED


def version_warnings(recorded: Mapping[str, Any], current: Mapping[str, Any], what: str) -> list[str]:
    """Every way `current` (this process's record) differs from `recorded` (what `what` recorded):
    the commit and uncommitted changes, Python, each package, each adapter and each input file."""
    out = []
    rc, cc = recorded.get("code") or {}, current.get("code") or {}
    if rc.get("commit") != cc.get("commit"):
        out.append(f"code commit {cc.get('commit')} differs from {what}'s {rc.get('commit')}")
    elif rc.get("dirty") or cc.get("dirty"):
        if rc.get("changes_sha256") != cc.get("changes_sha256"):
            out.append(f"uncommitted changes differ from {what}'s (same commit {cc.get('commit')})")
    if recorded.get("python") != current.get("python"):
        out.append(f"Python {current.get('python')} differs from {what}'s {recorded.get('python')}")
    for group, field in (("packages", None), ("adapters", "version"), ("files", "sha256")):
        before, now = recorded.get(group) or {}, current.get(group) or {}
        for name in sorted(set(before) & set(now)):
            a = before[name] if field is None else (before[name] or {}).get(field)
            b = now[name] if field is None else (now[name] or {}).get(field)
            if a != b:
                out.append(f"{group[:-1]} {name}: {b} differs from {what}'s {a}")
    return out
