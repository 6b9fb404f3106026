"""Errata: corrections to a published snapshot, as new versions that keep the old figures.

A published snapshot is immutable. A correction is an erratum entry in
`data/snapshots/<snapshot>/errata.yaml` (what, why, who, which vendor partition, the action, the
date, and optional changes to that vendor's manifest entry, e.g. a corrected price table).
`bench errata apply <snapshot> <erratum id>` then:

1. takes the latest published version of the snapshot (`<id>`, or `<id>-e1`, … after earlier errata);
2. writes the new version's manifest `data/snapshots/<id>-eN/manifest.yaml` (`supersedes` the
   version it corrects, with the vendor's changes applied) and copies that version's warehouse rows
   and per-vendor archives under the new id: golden rows, verification, split, decoys, every other
   vendor's responses and scores, agent trials, sentinel probes, review record;
3. re-runs only the erratum's vendor partition: `rescore` re-scores its archived responses (nothing
   is called), `refetch` fetches it again;
4. recomputes the aggregates, writes `errata.json` with the vendor's figures before (the corrected
   version) and after (the new one), and publishes the new version (immutable in turn).
The corrected version's warehouse rows, archive and published directory are never touched.

A vendor's reply to a published snapshot makes a version the same way, with nothing re-run
(`bench_assets.publish.replies`). Every version records its change in the `errata` table before
it is published: publication of a manifest with `supersedes` checks that record (the version it
corrects exists and is published, and an erratum or a reply stands behind the new one), so
`supersedes` alone never skips the vendor review.

`errata.json` (the version history carried from version to version and published) is validated
entry by entry (`PublishedErratum`): a malformed file is an input error naming the file, the
entry and the field.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench_assets.aggregate.leaderboard import HEADLINE_METRICS, current_leaderboard
from bench_assets.errors import BenchInputError
from bench_assets.manifest import SNAPSHOT_ID_PATTERN, load_manifest
from bench_assets.storage import lifecycle
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse

ERRATA_FILE = "errata.yaml"
# Rows of the corrected version copied under the new version's id (the erratum's vendor's rows
# of VENDOR_TABLES are re-derived instead). Metrics, publications and lifecycle are the new version's own.
COPIED_TABLES = (
    "golden_rows",
    "golden_verifications",
    "query_split",
    "decoy_queries",
    "raw_responses",
    "response_results",
    "row_scores",
    "agent_trials",
    "sentinel_pages",
    "sentinel_probes",
    "review_packets",
    "vendor_replies",
    "dead_rows",
)
VENDOR_TABLES = ("response_results", "row_scores")
# Files beside the manifest carried into the new version (replies, disclosures, trials, …).
NOT_CARRIED = {"manifest.yaml", ERRATA_FILE, "errata.json", "rotation_plan.yaml"}


class Erratum(BaseModel):
    """One correction to a published snapshot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    date: date
    vendor: str = Field(min_length=1, description="the vendor partition the correction re-runs")
    action: Literal["rescore", "refetch"] = Field(
        description="rescore: re-score archived responses; refetch: call again"
    )
    what: str = Field(min_length=1, description="what was wrong")
    why: str = Field(min_length=1, description="why it is corrected (evidence, the vendor's report)")
    who: str = Field(min_length=1, description="who decided the correction")
    changes: dict[str, Any] = Field(default={}, description="fields of the vendor's manifest entry to replace")


class VersionFigures(BaseModel):
    """A vendor's published figures in one version (an erratum's before / after)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    snapshot_id: str = Field(pattern=SNAPSHOT_ID_PATTERN)
    status: str | None = None
    position: int | None = None
    rank_group: int | None = None  # versions published before rank letters replaced rank groups
    rank_letters: str | None = None
    rank_range: dict[str, int] | None = None
    headline_eligible: bool | None = None
    plan: str | None = None
    metrics: dict[str, dict[str, Any]] = {}


class PublishedErratum(BaseModel):
    """One entry of errata.json: a correction (rescore, refetch) or a vendor's reply, and the
    version it made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    date: date
    vendor: str = Field(min_length=1)
    action: Literal["rescore", "refetch", "reply"]
    what: str = Field(min_length=1)
    why: str = Field(min_length=1)
    who: str = Field(min_length=1)
    changes: dict[str, Any] = {}
    snapshot: str = Field(pattern=SNAPSHOT_ID_PATTERN, description="the original snapshot id")
    corrects: str = Field(pattern=SNAPSHOT_ID_PATTERN, description="the version it corrects")
    version: str = Field(pattern=SNAPSHOT_ID_PATTERN, description="the version it made")
    summary: str = Field(min_length=1)
    before: VersionFigures | None = None
    after: VersionFigures | None = None
    changed: dict[str, dict[str, Any]] = {}


def load_published_errata(path: Path) -> list[dict[str, Any]]:
    """Read and validate errata.json (a list of entries); returns the entries as written (so they
    are carried and published unchanged). A bad file raises BenchInputError naming file, entry and field."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise BenchInputError(str(path), [(None, "<file>", f"not UTF-8 text: {exc.reason}")]) from None
    except json.JSONDecodeError as exc:
        raise BenchInputError(str(path), [(exc.lineno, "<json>", exc.msg)]) from None
    if not isinstance(data, list):
        raise BenchInputError(str(path), [(None, "<file>", "errata.json must be a list of entries")])
    problems: list[tuple[int | None, str, str]] = []
    ids = set()
    for i, item in enumerate(data):
        try:
            entry = PublishedErratum.model_validate(item)
        except ValidationError as exc:
            problems += [
                (None, f"[{i}]" + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in e["loc"]), e["msg"])
                for e in exc.errors()
            ]
            continue
        if entry.id in ids:
            problems.append((None, f"[{i}].id", f"duplicate entry id {entry.id!r}"))
        ids.add(entry.id)
    if problems:
        raise BenchInputError(str(path), problems)
    return data


def load_errata(path: Path) -> list[Erratum]:
    """Validate errata.yaml (a list of entries, or {errata: [...]}); errors name the file, entry and field."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text) or []
    except yaml.YAMLError as exc:
        raise BenchInputError(str(path), [(None, "<yaml>", str(exc).splitlines()[0])]) from exc
    if isinstance(data, dict):
        data = data.get("errata", [])
    if not isinstance(data, list):
        raise BenchInputError(str(path), [(None, "<file>", "errata.yaml must be a list of entries")])
    entries = []
    problems: list[tuple[int | None, str, str]] = []
    seen = set()
    for i, item in enumerate(data):
        try:
            entry = Erratum.model_validate(item)
        except ValidationError as exc:
            problems += [
                (None, f"[{i}].{'.'.join(str(p) for p in e['loc']) or '<entry>'}", e["msg"]) for e in exc.errors()
            ]
            continue
        if entry.id in seen:
            problems.append((None, f"[{i}].id", f"duplicate erratum id {entry.id!r}"))
        seen.add(entry.id)
        entries.append(entry)
    if problems:
        raise BenchInputError(str(path), problems)
    return entries


def base_of(snapshot_id: str) -> str:
    """The original snapshot id of a version (`x-2026-q3-e2` → `x-2026-q3`)."""
    head, _, tail = snapshot_id.rpartition("-e")
    return head if tail.isdigit() and head else snapshot_id


def version_id(base: str, n: int) -> str:
    return base if n == 0 else f"{base}-e{n}"


def new_version_manifest(source_text: str, new_id: str, supersedes: str, vendor: str, changes: dict[str, Any]) -> str:
    """The new version's manifest YAML: the corrected version's, re-identified, with the vendor's changes."""
    data = yaml.safe_load(source_text)
    data["snapshot_id"] = new_id
    data["supersedes"] = supersedes
    if changes:
        if vendor not in data.get("vendors", {}):
            raise BenchInputError(f"erratum for {vendor}", [(None, "vendor", f"{vendor!r} is not a configured vendor")])
        data["vendors"][vendor] = {**data["vendors"][vendor], **changes}
    header = f"# Errata version of {base_of(new_id)}: corrects {supersedes}. Written by `bench errata apply`.\n"
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def copy_rows(warehouse: Warehouse, source: str, new: str, vendor: str | None, refetch: bool) -> dict[str, int]:
    """Copy the corrected version's rows under the new id in one transaction; returns rows per
    table. The rows `vendor`'s partition re-derives are left out (all of them with `vendor=None`,
    as for a reply, which re-runs nothing)."""
    copied = {}
    with warehouse.transaction(changes=[(table, {"snapshot_id": new}) for table in COPIED_TABLES]) as con:
        for table in COPIED_TABLES:
            cols = ", ".join(c for c in TABLES[table].column_names if c != "snapshot_id")
            where = "snapshot_id = ?"
            params: list[Any] = [new, source]
            skip_vendor = vendor is not None and (table in VENDOR_TABLES or (table == "raw_responses" and refetch))
            if skip_vendor:
                where += " AND vendor <> ?"
                params.append(vendor)
            con.execute(f"DELETE FROM {table} WHERE snapshot_id = ?", [new])
            con.execute(
                f"INSERT INTO {table} (snapshot_id, {cols}) SELECT ?, {cols} FROM {table} WHERE {where}", params
            )
            counted = con.execute(f"SELECT count(*) FROM {table} WHERE snapshot_id = ?", [new]).fetchone()
            assert counted is not None  # count(*) always returns one row
            copied[table] = counted[0]
    return copied


def copy_archives(warehouse: Warehouse, source: str, new: str, skip_vendor: str | None) -> list[str]:
    """Copy each vendor's raw-response archive under the new id (so a later re-run pays nothing twice)."""
    done = []
    for src in sorted((warehouse.partitions_dir / source).glob("*.duckdb")):
        vendor = src.stem
        if vendor == skip_vendor:
            continue
        dst = warehouse.partition_file(new, vendor)
        dst.parent.mkdir(parents=True, exist_ok=True)
        with warehouse.open_file(dst) as con:
            con.execute(TABLES["raw_responses"].create_sql())
            con.execute(f"ATTACH '{src}' AS src (READ_ONLY)")
            con.execute("DELETE FROM raw_responses WHERE snapshot_id = ?", [new])
            con.execute(
                "INSERT INTO raw_responses SELECT * REPLACE (?::VARCHAR AS snapshot_id) FROM src.raw_responses "
                "WHERE snapshot_id = ?",
                [new, source],
            )
            con.execute("DETACH src")
        done.append(vendor)
    return done


def carry_files(source_dir: Path, new_dir: Path) -> list[str]:
    """Files beside the corrected version's manifest (public split, replies, disclosures, …) into the new version."""
    carried = []
    for path in sorted(source_dir.rglob("*")):
        rel = path.relative_to(source_dir)
        if path.is_file() and rel.parts[0] not in NOT_CARRIED:
            (new_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, new_dir / rel)
            carried.append(rel.as_posix())
    return carried


def vendor_figures(board: dict[str, Any], vendor: str) -> dict[str, Any]:
    """A vendor's published figures in one version, as an erratum's before / after."""
    entry = next((e for e in board["vendors"] if e["vendor"] == vendor), None) or {}
    return {
        "snapshot_id": board["snapshot_id"],
        "status": entry.get("status"),
        "position": entry.get("position"),
        "rank_letters": entry.get("rank_letters"),
        "rank_range": entry.get("rank_range"),
        "headline_eligible": entry.get("headline_eligible"),
        "plan": entry.get("plan"),
        "metrics": {k: v for k, v in (entry.get("metrics") or {}).items() if k in HEADLINE_METRICS},
    }


def errata_entry(
    erratum: Erratum, base: str, source: str, new: str, before: dict[str, Any], after: dict[str, Any] | None
) -> dict[str, Any]:
    """The erratum as published in errata.json, with the figures before and after."""
    changed = {}
    if after is not None:
        for name in sorted(set(before["metrics"]) | set(after["metrics"])):
            a, b = (before["metrics"].get(name) or {}).get("value"), (after["metrics"].get(name) or {}).get("value")
            if a != b:
                changed[name] = {"before": a, "after": b}
    return {
        "id": erratum.id,
        "date": erratum.date.isoformat(),
        "vendor": erratum.vendor,
        "action": erratum.action,
        "what": erratum.what,
        "why": erratum.why,
        "who": erratum.who,
        "changes": erratum.changes,
        "snapshot": base,
        "corrects": source,
        "version": new,
        "summary": _summary(erratum, source, new, changed),
        "before": before,
        "after": after,
        "changed": changed,
    }


def _summary(erratum: Erratum, source: str, new: str, changed: dict[str, Any]) -> str:
    def fmt(x: Any) -> str:
        return "—" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)

    figures = (
        "; ".join(f"{k} {fmt(v['before'])} → {fmt(v['after'])}" for k, v in changed.items()) or "no figure changed"
    )
    return f"{erratum.vendor} {erratum.action} ({source} → {new}): {figures}"


Materialize = Callable[[tuple[str, ...], Any], None]
PRIVATE_FILES = (
    "holdout/{}.jsonl",
    "decoys/{}.jsonl",
    "golden/{}.jsonl",
    "golden/{}.dead.jsonl",
    "golden/{}.replacements.jsonl",
)


def published_versions(paths: Any, warehouse: Warehouse, base: str) -> tuple[list[str], list[str]]:
    """(every version of `base` that has a manifest, in order; the published ones)."""
    versions = [base]
    while (paths.snapshots_dir / version_id(base, len(versions)) / "manifest.yaml").exists():
        versions.append(version_id(base, len(versions)))
    return versions, [v for v in versions if lifecycle.snapshot_status(warehouse, v) == lifecycle.PUBLISHED]


def applied_record(warehouse: Warehouse, new: str) -> dict[str, Any] | None:
    """The errata-table record of the change that made version `new` (None: none recorded)."""
    df = warehouse.query_df("SELECT * FROM errata WHERE new_version = ?", [new])
    return None if df.empty else df.iloc[0].to_dict()


def start_version(
    paths: Any,
    warehouse: Warehouse,
    source: str,
    new: str,
    vendor: str,
    changes: dict[str, Any],
    materialize: Materialize,
    register: Callable[[str], object],
) -> Path:
    """Write the new version's manifest (superseding `source`, with the vendor's changes), carry
    the files beside the manifest and the private files, and register it. Returns its directory."""
    new_dir = paths.snapshots_dir / new
    new_dir.mkdir(parents=True, exist_ok=True)
    (new_dir / "manifest.yaml").write_text(
        new_version_manifest(paths.manifest_path(source).read_text(encoding="utf-8"), new, source, vendor, changes)
    )
    load_manifest(new_dir / "manifest.yaml")  # the changes must leave a valid manifest
    carry_files(paths.snapshots_dir / source, new_dir)
    for pattern in PRIVATE_FILES:
        src = paths.private / pattern.format(source)
        if src.exists():
            (paths.private / pattern.format(new)).write_bytes(src.read_bytes())
    register(new)
    materialize(("snapshot_manifest",), new)
    return new_dir


def record_version(
    warehouse: Warehouse,
    base: str,
    entry_id: str,
    source: str,
    new: str,
    vendor: str,
    action: str,
    entry: dict[str, Any],
) -> None:
    """Record in the `errata` table the change that stands behind version `new` (before it is published)."""
    warehouse.replace_rows(
        "errata",
        pd.DataFrame(
            [
                {
                    "snapshot_id": base,
                    "erratum_id": entry_id,
                    "corrected_version": source,
                    "new_version": new,
                    "vendor": vendor,
                    "action": action,
                    "applied_at": datetime.now(UTC),
                    "entry_json": json.dumps(entry),
                }
            ]
        ),
        {"snapshot_id": base, "erratum_id": entry_id},
    )


def apply_erratum(
    paths: Any,
    warehouse: Warehouse,
    snapshot_id: str,
    erratum_id: str,
    materialize: Materialize,
    vendor_key: Callable[[str, str], Any],
    register: Callable[[str], object],
) -> dict[str, Any]:
    """Apply one erratum of a published snapshot (see the module docstring). `materialize(names,
    partition_key)` runs assets through Dagster, `vendor_key(snapshot, vendor)` makes a vendor
    partition key and `register(snapshot)` adds a snapshots partition. Returns the errata.json entry."""
    base = base_of(snapshot_id)
    entries = {e.id: e for e in load_errata(paths.snapshots_dir / base / ERRATA_FILE)}
    if erratum_id not in entries:
        raise BenchInputError(
            str(paths.snapshots_dir / base / ERRATA_FILE),
            [(None, "id", f"no erratum {erratum_id!r}; known: {sorted(entries) or 'none'}")],
        )
    erratum = entries[erratum_id]
    applied = warehouse.query_df("SELECT * FROM errata WHERE snapshot_id = ? AND erratum_id = ?", [base, erratum_id])
    if len(applied) and lifecycle.snapshot_status(warehouse, applied["new_version"][0]) == lifecycle.PUBLISHED:
        raise BenchInputError(
            f"erratum {erratum_id}", [(None, "id", f"already applied: version {applied['new_version'][0]}")]
        )
    versions, published = published_versions(paths, warehouse, base)
    if not published:
        raise BenchInputError(
            base,
            [
                (
                    None,
                    "status",
                    f"{base} is not published: errata apply to published "
                    "snapshots; before publication, re-run the partition instead",
                )
            ],
        )
    source = published[-1]
    if versions[-1] != source:
        # an apply that stopped half-way: resume into its version (every step replaces what it wrote)
        new = versions[-1]
        record = applied_record(warehouse, new)
        if load_manifest(paths.manifest_path(new)).supersedes != source or (
            record is not None and record["erratum_id"] != erratum_id
        ):
            raise BenchInputError(
                str(paths.manifest_path(new)),
                [
                    (
                        None,
                        "supersedes",
                        (
                            f"{new} is an unpublished version "
                            + (f"made by {record['erratum_id']}" if record else f"that does not correct {source}")
                            + ": finish or remove it first"
                        ),
                    )
                ],
            )
    else:
        new = version_id(base, len(versions))
    source_manifest = load_manifest(paths.manifest_path(source))
    if erratum.vendor not in source_manifest.vendors:
        raise BenchInputError(
            f"erratum {erratum_id}", [(None, "vendor", f"{erratum.vendor!r} is not a configured vendor of {source}")]
        )
    previous = load_published_errata(
        paths.snapshots_dir / source / "errata.json"
    )  # validated before anything is written
    before = vendor_figures(current_leaderboard(warehouse, source_manifest), erratum.vendor)
    new_dir = start_version(paths, warehouse, source, new, erratum.vendor, erratum.changes, materialize, register)
    copy_rows(warehouse, source, new, erratum.vendor, refetch=erratum.action == "refetch")
    copy_archives(warehouse, source, new, skip_vendor=erratum.vendor if erratum.action == "refetch" else None)
    stages = ("vendor_responses", "vendor_scores") if erratum.action == "refetch" else ("vendor_scores",)
    materialize(stages, vendor_key(new, erratum.vendor))
    materialize(("vendor_leaderboard",), new)
    after = vendor_figures(current_leaderboard(warehouse, load_manifest(new_dir / "manifest.yaml")), erratum.vendor)
    entry = errata_entry(erratum, base, source, new, before, after)
    (new_dir / "errata.json").write_text(json.dumps([*previous, entry], indent=2) + "\n")
    record_version(warehouse, base, erratum.id, source, new, erratum.vendor, erratum.action, entry)
    materialize(("published_snapshot",), new)
    return entry
