"""Beyond one machine: the deployment configuration is valid Dagster configuration, and a
snapshot runs against Postgres instance storage (Debian's PostgreSQL, started by CI).

Kubernetes cannot run here, so the K8s launcher's configuration is validated against the
launcher's own schema; everything that can run here (Postgres storage, queued coordination with
per-vendor limits) runs for real.
"""

from __future__ import annotations

import os
import shutil
import uuid

import dagster as dg
import pytest
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config

from bench_assets_tests.helpers import REPO, SNAPSHOT, make_home, run_whole_snapshot

DEPLOY = REPO / "deploy"
PG = {"DAGSTER_PG_HOST": os.environ.get("DAGSTER_PG_HOST", "127.0.0.1"),
      "DAGSTER_PG_USER": os.environ.get("DAGSTER_PG_USER", "bench"),
      "DAGSTER_PG_PASSWORD": os.environ.get("DAGSTER_PG_PASSWORD", "bench")}


def _class(entry: dict):
    import importlib

    # `dagster.core.*` is the documented spelling; Dagster's loader maps it to `dagster._core.*`.
    module = entry["module"].replace("dagster.core.", "dagster._core.", 1)
    return getattr(importlib.import_module(module), entry["class"])


@pytest.mark.parametrize("name", ["dagster.yaml", "dagster-local-postgres.yaml"])
def test_deploy_instance_config_validates_against_dagster_schemas(tmp_path, monkeypatch, name):
    for key, value in {**PG, "DAGSTER_PG_DB": "bench"}.items():
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


def test_repo_instance_config_validates(tmp_path):
    shutil.copy(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limits[0]["key"] == "dagster/partition/vendor" and limits[0]["limit"] == 1


def test_deploy_workspace_points_at_a_grpc_code_location():
    workspace = yaml.safe_load((DEPLOY / "workspace.yaml").read_text())
    assert workspace["load_from"][0]["grpc_server"]["location_name"] == "bench"


@pytest.fixture()
def postgres_database():
    psycopg2 = pytest.importorskip("psycopg2")
    try:
        admin = psycopg2.connect(host=PG["DAGSTER_PG_HOST"], user=PG["DAGSTER_PG_USER"],
                                 password=PG["DAGSTER_PG_PASSWORD"], dbname="postgres", connect_timeout=3)
    except psycopg2.OperationalError as exc:
        if os.environ.get("CI"):
            raise  # CI starts PostgreSQL in .ci/run: its absence there is a failure, not a skip
        pytest.skip(f"no PostgreSQL on {PG['DAGSTER_PG_HOST']} ({exc}); .ci/run starts one")
    admin.autocommit = True
    name = f"bench_test_{uuid.uuid4().hex[:10]}"
    admin.cursor().execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def test_snapshot_runs_against_postgres_instance_storage(tmp_path, monkeypatch, simulator, postgres_database):
    for key, value in {**PG, "DAGSTER_PG_DB": postgres_database}.items():
        monkeypatch.setenv(key, value)
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(DEPLOY / "dagster-local-postgres.yaml", dagster_home / "dagster.yaml")
    home = make_home(tmp_path / "home", ["brave", "exa"], rows_per_stratum=6)
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        run_whole_snapshot(instance, home, simulator.base_url, ["brave", "exa"])
        runs = instance.get_runs()
        assert len(runs) == 4 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        assert instance.get_dynamic_partitions("snapshots") == [SNAPSHOT]
    import psycopg2

    con = psycopg2.connect(host=PG["DAGSTER_PG_HOST"], user=PG["DAGSTER_PG_USER"],
                           password=PG["DAGSTER_PG_PASSWORD"], dbname=postgres_database)
    try:
        cur = con.cursor()
        cur.execute("SELECT count(*) FROM runs")
        assert cur.fetchone()[0] == 4  # the runs live in Postgres, not in a local SQLite file
    finally:
        con.close()
    assert (home / "data" / "publish" / SNAPSHOT / "leaderboard.json").exists()
