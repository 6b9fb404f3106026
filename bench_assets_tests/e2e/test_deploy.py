"""Beyond one machine: the deployment configuration is valid Dagster configuration, and a
snapshot runs through a real dagster-daemon against Postgres instance storage (a PostgreSQL server
of the test session's own) with the Parquet data path.

Kubernetes cannot run here, so the K8s launcher's configuration is validated against the
launcher's own schema; everything that can run here (Postgres storage, the webserver and daemon
as separate processes, queued runs with per-vendor limits, Parquet objects instead of one DuckDB
file) runs for real.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config

from bench_assets_tests.helpers import REPO, SNAPSHOT, make_home

DEPLOY = REPO / "deploy"


def _class(entry: dict):
    import importlib

    # `dagster.core.*` is the documented spelling; Dagster's loader maps it to `dagster._core.*`.
    module = entry["module"].replace("dagster.core.", "dagster._core.", 1)
    return getattr(importlib.import_module(module), entry["class"])


@pytest.mark.parametrize("name", ["dagster.yaml", "dagster-local-postgres.yaml"])
def test_deploy_instance_config_validates_against_dagster_schemas(tmp_path, monkeypatch, name):
    placeholders = {
        "DAGSTER_PG_HOST": "h",
        "DAGSTER_PG_USER": "u",
        "DAGSTER_PG_PASSWORD": "p",
        "DAGSTER_PG_DB": "bench",
    }
    for key, value in placeholders.items():  # the schema checks types, not a server
        monkeypatch.setenv(key, value)
    shutil.copy(DEPLOY / name, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))  # the instance schema itself
    raw = yaml.safe_load((DEPLOY / name).read_text())
    for section in ("run_coordinator", "run_launcher"):
        if section in raw:
            cls = _class(raw[section])
            result = validate_config(cls.config_type(), raw[section].get("config", {}))
            assert result.success, (section, [e.message for e in result.errors])
    assert "postgres" in config["storage"]


def test_every_kubernetes_run_mounts_the_shared_warehouse_and_private_store():
    # Every run opens the snapshot-level DuckDB file and the private store: a run pod without
    # the shared volume would see an empty warehouse and fail (or, worse, write a private copy).
    launcher = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())["run_launcher"]["config"]
    env = dict(v.split("=", 1) for v in launcher["env_vars"] if "=" in v)
    [mount] = launcher["volume_mounts"]
    [volume] = launcher["volumes"]
    assert mount["name"] == volume["name"] and volume["persistentVolumeClaim"]["claimName"]
    for variable in ("BENCH_WAREHOUSE", "BENCH_PRIVATE_DIR"):
        assert Path(env[variable]).is_relative_to(mount["mountPath"]), variable
    assert "bench-vendor-keys" in launcher["env_secrets"]  # keys from a secret, never in the file


def test_repo_instance_config_validates(tmp_path):
    shutil.copy(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limits[0]["key"] == "dagster/partition/vendor" and limits[0]["limit"] == 1


def test_deploy_workspace_points_at_a_grpc_code_location():
    workspace = yaml.safe_load((DEPLOY / "workspace.yaml").read_text())
    assert workspace["load_from"][0]["grpc_server"]["location_name"] == "bench"


@pytest.fixture()
def postgres_database(postgres):
    with postgres.database() as name:
        yield name


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_snapshot_runs_through_the_daemon_on_postgres_with_the_parquet_data_path(
    tmp_path, simulator, postgres, postgres_database
):
    """The step between `make dev` and Kubernetes, for real: Postgres instance storage, the webserver
    and the daemon as their own processes, the queued run coordinator, and the Parquet data path.
    The operator registers the snapshot with the CLI and backfills it over GraphQL, as the UI does."""
    from bench_assets.definitions import defs
    from bench_assets.defs.jobs import backfill_params, snapshot_selection
    from bench_assets.storage.lake import LAKE_TABLES
    from bench_assets_tests.e2e.dagster_services import DagsterServices, services_env

    vendors = ["brave", "exa"]
    dagster_home = tmp_path / "dagster_home"
    postgres.instance_file(DEPLOY / "dagster-local-postgres.yaml", dagster_home)
    home = make_home(tmp_path / "home", vendors, rows_per_stratum=6)
    lake = tmp_path / "object-store" / "bench"
    env = services_env(
        dagster_home,
        home,
        BENCH_SIMULATOR_URL=simulator.base_url,
        BENCH_LAKE_URL=str(lake),
        **postgres.env,
        DAGSTER_PG_DB=postgres_database,
    )
    subprocess.run(
        [str(Path(sys.executable).parent / "bench"), "snapshot", "add", SNAPSHOT],
        env=env,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    services = DagsterServices(tmp_path, env, REPO / "workspace.yaml", REPO)
    try:
        services.start_webserver()
        services.start_daemon()
        keys = snapshot_selection.resolve(defs().resolve_asset_graph())
        backfill_id, status = services.backfill(backfill_params(sorted(keys), [SNAPSHOT]), timeout=1300)
    finally:
        services.stop()
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status

    con = postgres.connect(postgres_database)
    try:
        cur = con.cursor()
        # the runs, the backfill and the snapshot partition live in Postgres, not in a local SQLite file
        cur.execute(
            "SELECT r.status, count(*) FROM runs r JOIN run_tags t ON t.run_id = r.run_id "
            "WHERE t.key = 'dagster/backfill' AND t.value = %s GROUP BY 1",
            [backfill_id],
        )
        by_status = dict(cur.fetchall())
        cur.execute(
            "SELECT t.value FROM runs r JOIN run_tags t ON t.run_id = r.run_id WHERE t.key = 'dagster/partition/vendor'"
        )
        vendor_runs = sorted(v for (v,) in cur.fetchall())
        # every run went through the queue the daemon drains (the queued run coordinator)
        cur.execute("SELECT count(DISTINCT run_id) FROM event_logs WHERE dagster_event_type = 'PIPELINE_ENQUEUED'")
        enqueued = cur.fetchone()[0]
        cur.execute("SELECT status FROM bulk_actions WHERE key = %s", [backfill_id])
        backfill_status = cur.fetchone()[0]
        cur.execute("SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'snapshots'")
        partitions = [r[0] for r in cur.fetchall()]
    finally:
        con.close()
    assert set(by_status) == {"SUCCESS"} and by_status["SUCCESS"] >= len(vendors) + 2, (
        by_status
    )  # a run per vendor + snapshot
    assert vendor_runs == vendors and enqueued == by_status["SUCCESS"]  # a run per configured vendor, no other
    assert backfill_status == status and partitions == [SNAPSHOT]

    # the fan-out stages wrote Parquet objects, not the central file; the site was published from them
    objects = sorted(str(p.relative_to(lake)) for p in lake.rglob("*.parquet"))
    assert objects == sorted(
        f"{t}/snapshot_id={SNAPSHOT}/vendor={v}/part.parquet" for t in LAKE_TABLES for v in vendors
    )
    central = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        assert [central.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in LAKE_TABLES] == [0] * len(
            LAKE_TABLES
        )
        assert central.execute("SELECT count(DISTINCT vendor) FROM vendor_metrics").fetchone()[0] == len(vendors)
    finally:
        central.close()
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    assert sorted(e["vendor"] for e in board["vendors"] if e["status"] == "scored") == vendors
