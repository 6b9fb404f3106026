"""Test helpers: a temporary bench home with a small manifest, and materialization through Dagster."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from bench_assets.adapters import available_adapters
from bench_assets.defs.partitions import register_snapshot_partitions
from bench_assets.defs.resources import BenchPaths, VendorGateway, VendorKeys, WarehouseResource
from bench_assets.storage.warehouse import TABLES

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded vendor bodies, R reference cases
DEMO_MANIFEST = REPO / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml"
SNAPSHOT = "web_search-2026-q3"
GOLDEN_STAGES = (
    "snapshot_manifest",
    "golden_rows",
    "golden_verifications",
    "query_split",
    "dead_golden_rows",
    "decoy_queries",
)
VENDOR_STAGES = ("vendor_responses", "vendor_scores")
RESULT_STAGES = ("vendor_leaderboard", "published_snapshot")


CHROMIUM = Path("/usr/bin/chromium")
# The flags this machine's closed network needs (no background connections, no QUIC).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require(available: bool, what: str) -> None:
    """Skip a test whose system dependency is missing on a developer's machine, but fail it in CI
    (`$CI` set), where `.ci/run` installs that dependency: a missing one there is a broken set-up,
    and a silent skip would hide it."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing, but CI (.ci/run) installs it", pytrace=False)
    pytest.skip(f"{what} is missing; .ci/run installs it")


def warehouse_rows(home: Path, sql: str, params=()) -> list[tuple]:
    """Rows of a query on a home's warehouse, opened read-only (as a reader, not a writer)."""
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def vendor_entry_from_defaults(vendor: str) -> dict:
    """The manifest entry of an adapter the demo manifest does not run (Keenable, Valyu): its
    module's MANIFEST_DEFAULTS, the demo's ceilings, and its archived pricing file, as
    scripts/write_demo_manifest.py would pin it."""
    cls = available_adapters()[vendor]
    pricing = REPO / "data" / "pricing" / f"{vendor}.md"
    return {
        "adapter": vendor,
        "adapter_version": cls.version,
        **importlib.import_module(cls.__module__).MANIFEST_DEFAULTS,
        "spend_ceiling_usd": 25.0,
        "timeout_seconds": 30,
        "max_attempts": 4,
        "pricing_source": {
            "file": str(pricing.relative_to(REPO)),
            "sha256": hashlib.sha256(pricing.read_bytes()).hexdigest(),
            "archived_on": "2026-11-29",
        },
    }


def make_home(tmp: Path, vendors: list[str], rows_per_stratum: int = 15, snapshot: str = SNAPSHOT, edit=None) -> Path:
    """A bench home under tmp with the demo manifest cut down to `vendors` (a vendor the demo does
    not run pinned from its adapter's defaults) and fast pacing."""
    data = yaml.safe_load(DEMO_MANIFEST.read_text())
    data["snapshot_id"] = snapshot
    data["vendors"] = {
        v: {**(data["vendors"].get(v) or vendor_entry_from_defaults(v)), "rate_limit_per_second": 200, "concurrency": 8}
        for v in vendors
    }
    data["golden"]["rows_per_stratum"] = rows_per_stratum
    if edit:
        edit(data)
    path = tmp / "data" / "snapshots" / snapshot / "manifest.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp


def resources(home: Path, sim_url: str, private_dir: str = "", lake_url: str = "") -> dict:
    paths = BenchPaths(root=str(home), private_dir=private_dir)
    warehouse = WarehouseResource(database=str(paths.default_warehouse_file()), lake_url=lake_url)
    return {
        "paths": paths,
        "duckdb": warehouse,
        "gateway": VendorGateway(simulator_url=sim_url),
        "vendor_keys": VendorKeys(),
    }


def assets(*names: str) -> list:
    from bench_assets.definitions import unbound_assets

    return unbound_assets(*names)


def materialize(instance, home: Path, sim_url: str, names, partition_key, raise_on_error=True, run_config=None):
    return dg.materialize(
        assets(*names),
        instance=instance,
        partition_key=partition_key,
        resources=resources(home, sim_url),
        raise_on_error=raise_on_error,
        run_config=run_config,
    )


def vendor_key(vendor: str, snapshot: str = SNAPSHOT) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"snapshot": snapshot, "vendor": vendor})


def register_partitions(instance, snapshots: list[str], vendors: list[str] | None = None) -> None:
    """Register snapshots and vendors as partitions, as `bench snapshot add` does; by default every
    adapter's vendor, so that a test may run the partition of a vendor its manifest leaves out."""
    for snapshot in snapshots:
        register_snapshot_partitions(instance, snapshot, sorted(available_adapters()) if vendors is None else vendors)


def run_whole_snapshot(instance, home: Path, sim_url: str, vendors: list[str], snapshot: str = SNAPSHOT) -> None:
    register_partitions(instance, [snapshot], vendors)
    materialize(instance, home, sim_url, GOLDEN_STAGES, snapshot)
    for v in vendors:
        materialize(instance, home, sim_url, VENDOR_STAGES, vendor_key(v, snapshot))
    materialize(instance, home, sim_url, RESULT_STAGES, snapshot)


def env_for(home: Path, sim_url: str) -> dict[str, str]:
    return {**os.environ, "BENCH_HOME": str(home), "BENCH_SIMULATOR_URL": sim_url}


def warehouse_of(home: Path, lake_url: str = ""):
    """The warehouse of a bench home, opened as the code location opens it."""
    return resources(home, "", lake_url=lake_url)["duckdb"].warehouse()


# A valid hand-entered agent-ready trial (the operator's record of a sign-up tried by hand).
GOOD_TRIAL = {
    "vendor": "brave",
    "method": "manual",
    "date": "2026-07-01",
    "outcome": "human_required",
    "reason": "dashboard sign-up asks for a credit card",
    "evidence": "https://example.org/brave-trial.mp4",
    "operator": "a. operator",
}


def write_trials(directory: Path, trials) -> Path:
    """Hand-entered agent-ready trials as `agent_trials.yaml` in `directory` (a snapshot's folder)."""
    path = directory / "agent_trials.yaml"
    path.write_text(yaml.safe_dump({"trials": trials}, sort_keys=False))
    return path


def check_evaluations(result, asset: str) -> list:
    """The asset check evaluations of one asset in a run's result (golden_rows carries its own registry check)."""
    return [c for c in result.get_asset_check_evaluations() if c.asset_key == dg.AssetKey(asset)]


def unwrapped(printed: str) -> str:
    """What a `bench` command printed, each message whole again: the CLI wraps its messages at 100
    columns, continuation lines indented; they are joined back to their line."""
    return re.sub(r"\n +", " ", printed)


FRONT_PAGES = ("index", "methodology", "exclusions", "errata", "limitations", "disclosures", "data")


def public_task_types(out: Path) -> dict[str, str]:
    """Each public row's task type (row id -> search, answer or extract), from the published split."""
    rows = (json.loads(line) for line in (out / "public_split.jsonl").read_text().splitlines())
    return {row["id"]: row["task"]["type"] for row in rows}


def page_kind(rel: str, task_types: dict[str, str]) -> str:
    """The type of the published HTML page at `rel` (a path in the site): a front page by its name,
    the rows' listing, a row's page by its task type, a vendor's page or its further rows, a reply."""
    folder, _, name = rel.rpartition("/")
    stem = name.removesuffix(".html")
    if not folder:
        assert stem in FRONT_PAGES, f"a published page of no known type: {rel}"
        return stem
    if folder == "queries":
        return "queries listing" if stem.split("-")[0] == "index" else f"query ({task_types[stem]})"
    if folder == "vendors":
        return "vendor rows" if stem.rsplit("-", 1)[-1].isdigit() else "vendor"
    if folder == "replies":
        return "reply"
    raise AssertionError(f"a published page of no known type: {rel}")


def page_types(out: Path) -> dict[str, str]:
    """One published page of each type (type -> path in the site): the front pages, the rows'
    listing, a row's page per task type, a vendor's page (and its further rows, when a vendor has
    that many) and a reply. Every published HTML file is of one of these types."""
    task_types = public_task_types(out)
    found: dict[str, str] = {}
    for path in sorted(out.rglob("*.html")):
        rel = path.relative_to(out).as_posix()
        found.setdefault(page_kind(rel, task_types), rel)
    return found


# ##### BAD INPUT: the warehouse's digest, a manifest edited for one test, a failed step's message


def fingerprint(home: Path) -> dict[str, str]:
    """A digest of every table of the warehouse and every partition archive, row by row."""
    warehouse = home / "data" / "warehouse" / "bench.duckdb"
    out = {}
    for path in [warehouse, *sorted((warehouse.parent / "partitions").rglob("*.duckdb"))]:
        con = duckdb.connect(str(path), read_only=True)
        try:
            present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            for table in sorted(present & set(TABLES)):
                rows = con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
                out[f"{path.name}:{table}"] = hashlib.sha256(repr(rows).encode()).hexdigest() + f" ({len(rows)} rows)"
        finally:
            con.close()
    return out


@contextmanager
def manifest_edited(home: Path, edit=None, text: str | None = None):
    path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    original = path.read_text()
    if text is None:
        data = yaml.safe_load(original)
        edit(data)
        text = yaml.safe_dump(data, sort_keys=False)
    path.write_text(text)
    try:
        yield path
    finally:
        path.write_text(original)


def failure_text(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    data = failure.event_specific_data
    return (data.user_failure_data.description if data.user_failure_data else None) or data.error.message
