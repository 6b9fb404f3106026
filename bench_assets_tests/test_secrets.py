"""A live key never reaches DuckDB, Dagster's logs or a published file.

The test plays a live run: recognisable keys in the environment (read through dg.EnvVar), the
manifest in `live` mode with endpoints on a simulator that accepts those keys, one vendor that
takes its key in a header (Exa) and one in a query parameter (SerpApi). Then it searches every
table of every DuckDB file, every file under the Dagster home (event logs, compute logs) and
every published file for the keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from bench_assets.defs.resources import BenchPaths, VendorGateway, vendor_keys_from_env
from bench_assets.simulator.app import simulated_url
from bench_assets.simulator.server import start_simulator
from bench_assets_tests.helpers import GOLDEN_STAGES, SNAPSHOT, VENDOR_STAGES, assets, make_home, vendor_key

KEYS = {"exa": "exa-PLANTED-9f3c1d2e7a4b", "serpapi": "serpapi-PLANTED-5e8a0b6c2d1f"}
SPLIT_KEY = "split-PLANTED-0c4e9a7b31d5"


def all_text_in_duckdb(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        chunks = []
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            chunks.append(con.execute(f"SELECT CAST(COLUMNS(*) AS VARCHAR) FROM {table}").df().to_csv())
        return "\n".join(chunks)
    finally:
        con.close()


@pytest.fixture(scope="module")
def keyed_simulator():
    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0.05", "BENCH_SIM_EXTRA_KEYS": json.dumps(KEYS)})
    yield sim
    sim.stop()


def test_live_keys_never_reach_storage_logs_or_published_files(tmp_path, monkeypatch, keyed_simulator, capfd):
    sim = keyed_simulator.base_url
    home = make_home(tmp_path / "home", list(KEYS), rows_per_stratum=6)
    manifest_path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    monkeypatch.setenv("BENCH_SPLIT_KEY", SPLIT_KEY)
    for vendor, key in KEYS.items():
        monkeypatch.setenv({"exa": "EXA_API_KEY", "serpapi": "SERPAPI_API_KEY"}[vendor], key)
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        resources = {"paths": BenchPaths(root=str(home)), "gateway": VendorGateway(simulator_url=sim),
                     "vendor_keys": vendor_keys_from_env()}
        # Golden stages verify the planted pages through the simulator (simulated mode) ...
        assert dg.materialize(assets(*GOLDEN_STAGES), instance=instance, partition_key=SNAPSHOT,
                              resources=resources).success
        # ... then the vendors are called as in a live run: real keys, endpoints given in the manifest.
        data = yaml.safe_load(manifest_path.read_text())
        data["mode"] = "live"
        for vendor in KEYS:
            spec = data["vendors"][vendor]
            spec["endpoints"] = {cap: simulated_url(url, sim) for cap, url in spec["endpoints"].items()}
        manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
        for vendor in KEYS:
            result = dg.materialize(assets(*VENDOR_STAGES), instance=instance, partition_key=vendor_key(vendor),
                                    resources=resources)
            assert result.success
        results = dg.materialize(assets("vendor_leaderboard", "published_snapshot"), instance=instance,
                                 partition_key=SNAPSHOT, resources=resources, raise_on_error=False)
    warehouse = home / "data" / "warehouse"
    con = duckdb.connect(str(warehouse / "bench.duckdb"), read_only=True)
    try:
        ok = con.execute("SELECT vendor, count(*) FROM raw_responses WHERE http_status = 200 AND final GROUP BY 1").fetchall()
        redacted = con.execute("SELECT count(*) FROM raw_responses WHERE request_json LIKE '%<redacted>%'").fetchone()[0]
    finally:
        con.close()
    assert {v for v, n in ok if n > 0} == set(KEYS)  # the keys worked: the vendors answered
    assert redacted > 0
    haystacks: dict[str, str] = {}
    for db in warehouse.rglob("*.duckdb"):
        haystacks[str(db)] = all_text_in_duckdb(db)
    for path in list(dagster_home.rglob("*")) + list((home / "data").rglob("*")):
        if path.is_file() and path.suffix != ".duckdb":
            haystacks[str(path)] = path.read_bytes().decode("utf-8", "replace")
    captured = capfd.readouterr()
    haystacks["stdout/stderr"] = captured.out + captured.err
    published = list((home / "data" / "publish").rglob("*"))
    if results.success:
        assert published, "publication succeeded but wrote nothing"
    secrets = {**KEYS, "split key": SPLIT_KEY}
    leaks = [(where, name) for where, text in haystacks.items() for name, key in secrets.items() if key in text]
    assert leaks == []
    assert len(haystacks) > 10
