"""A live key never reaches DuckDB, Dagster's logs, the private review packets or a published file.

The test plays a live run, through to publication: recognisable keys in the environment (read
through dg.EnvVar), the manifest in `live` mode with endpoints on a simulator that accepts those
keys, and a vendor for every way a key travels: a header of its own (Exa's x-api-key), a query
parameter (SerpApi's api_key), `Authorization: Bearer` (Tavily, Firecrawl, and Jina, whose Reader
fetches the extract rows) and `Authorization: Bot` (Kagi). A live snapshot publishes only after
the vendor-review period, so the review packets are sent (materialized for real) and then dated
back beyond the ten US business days the gate asks for; publication must then succeed and write
the site. Then every table of every DuckDB file, every file under the Dagster home (event logs,
compute logs), every file under data/ (private store, published site) and the captured output
are searched for the keys and the split secret.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from bench_assets.business_days import add_business_days, business_days_between
from bench_assets.defs.resources import KEY_ENVS, BenchPaths, VendorGateway, vendor_keys_from_env
from bench_assets.simulator.app import simulated_url
from bench_assets.simulator.server import start_simulator
from bench_assets.warehouse import Warehouse
from bench_assets_tests.helpers import GOLDEN_STAGES, SNAPSHOT, VENDOR_STAGES, assets, make_home, vendor_key

# One vendor per way a key is sent (see the module docstring).
KEYS = {"exa": "exa-PLANTED-9f3c1d2e7a4b", "serpapi": "serpapi-PLANTED-5e8a0b6c2d1f",
        "tavily": "tvly-PLANTED-3b7e1a9c4d20", "firecrawl": "fc-PLANTED-8d2c6f0a1e5b",
        "jina": "jina_PLANTED-4f1a7c3e9b62", "kagi": "kagi-PLANTED-2e9d5b8a0c7f"}
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


def date_packets_back(warehouse_file: Path, snapshot_id: str, business_days: int) -> date:
    """Move the review packets' send date (and the freeze it logged) back to a day at least
    `business_days` US business days before today: as if they had been sent then. Thirty calendar
    days back always holds at least ten business days, whatever the holidays."""
    today = datetime.now(timezone.utc).date()
    sent_on = today - timedelta(days=30)
    assert business_days_between(sent_on, today) >= business_days
    with Warehouse(warehouse_file).connect() as con:
        con.execute("UPDATE review_packets SET sent_on = ?, opens_on = ? WHERE snapshot_id = ?",
                    [sent_on, add_business_days(sent_on, business_days), snapshot_id])
        con.execute("UPDATE snapshot_lifecycle SET changed_at = ? WHERE snapshot_id = ? AND status = 'frozen'",
                    [datetime.combine(sent_on, time(12), tzinfo=timezone.utc), snapshot_id])
    return sent_on


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
        monkeypatch.setenv(KEY_ENVS[vendor], key)
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
        # The review packets go out (the snapshot freezes), and are dated back past the review period.
        assert dg.materialize(assets("vendor_leaderboard", "review_packets"), instance=instance,
                              partition_key=SNAPSHOT, resources=resources).success
        sent_on = date_packets_back(home / "data" / "warehouse" / "bench.duckdb", SNAPSHOT,
                                    data.get("review", {}).get("business_days", 10))
        published = dg.materialize(assets("published_snapshot"), instance=instance, partition_key=SNAPSHOT,
                                   resources=resources)
        assert published.success
    out = home / "data" / "publish" / SNAPSHOT
    assert (out / "index.html").is_file() and (out / "leaderboard.json").is_file()
    review = json.loads((out / "review.json").read_text())
    assert review["status"] == "published"
    assert {v["packet_sent_on"] for v in review["vendors"].values()} == {sent_on.isoformat()}
    published_files = [p for p in out.rglob("*") if p.is_file()]
    assert len(published_files) > 20

    warehouse = home / "data" / "warehouse"
    con = duckdb.connect(str(warehouse / "bench.duckdb"), read_only=True)
    try:
        ok = con.execute("SELECT vendor, capability, count(*) FROM raw_responses WHERE http_status = 200 AND final "
                         "GROUP BY 1, 2").fetchall()
        redacted = con.execute("SELECT count(*) FROM raw_responses WHERE request_json LIKE '%<redacted>%'").fetchone()[0]
        status = con.execute("SELECT status FROM snapshots WHERE snapshot_id = ?", [SNAPSHOT]).fetchone()[0]
    finally:
        con.close()
    # the keys worked: every vendor answered on every endpoint it has (Jina's Reader included)
    answered = {(v, c) for v, c, n in ok if n > 0}
    assert answered == {(v, c) for v in KEYS for c in data["vendors"][v]["endpoints"]}
    assert ("jina", "extract") in answered
    assert redacted > 0 and status == "published"

    haystacks: dict[str, str] = {}
    for db in warehouse.rglob("*.duckdb"):
        haystacks[str(db)] = all_text_in_duckdb(db)
    for path in list(dagster_home.rglob("*")) + list((home / "data").rglob("*")):
        if path.is_file() and path.suffix != ".duckdb":
            haystacks[str(path)] = path.read_bytes().decode("utf-8", "replace")
    captured = capfd.readouterr()
    haystacks["stdout/stderr"] = captured.out + captured.err
    assert all(str(p) in haystacks for p in published_files)  # the published site is scanned, file by file
    assert any("/private/review/" in where for where in haystacks)  # so are the review packets
    secrets = {**KEYS, "split key": SPLIT_KEY}
    leaks = [(where, name) for where, text in haystacks.items() for name, key in secrets.items() if key in text]
    assert leaks == []
    assert len(haystacks) > 10
