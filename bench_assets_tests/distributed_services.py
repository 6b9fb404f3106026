"""The services machines share beyond one machine, as real processes on 127.0.0.1, for the tests:
Redis (Debian's redis-server: the Celery broker and the account-wide pacing store), an S3 API
(moto's server: the object store) and a PostgreSQL database of its own (the Dagster instance, the
warehouse's turns and versions).

Each is started by the test that needs it and stopped by its own process id. A missing system
service skips the test on a developer's machine and fails it in CI (`helpers.require`), where
`.ci/run` installs and starts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import fsspec
import httpx
import psycopg2
import redis

from bench_assets.simulator.server import free_port
from bench_assets_tests.helpers import require

PG = {
    "DAGSTER_PG_HOST": os.environ.get("DAGSTER_PG_HOST", "127.0.0.1"),
    "DAGSTER_PG_USER": os.environ.get("DAGSTER_PG_USER", "bench"),
    "DAGSTER_PG_PASSWORD": os.environ.get("DAGSTER_PG_PASSWORD", "bench"),
}
# moto accepts any credentials; these keep boto from looking for real ones
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench-test",
    "AWS_SECRET_ACCESS_KEY": "bench-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A redis-server of its own on a free loopback port (nothing persisted); yields its URL."""
    binary = shutil.which("redis-server")
    require(binary is not None, "redis-server (Debian package redis-server)")
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = open(workdir / "redis.log", "ab")  # noqa: SIM115 (the server writes to it until stopped)
    proc = subprocess.Popen(
        [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if redis.Redis.from_url(url, socket_timeout=1).ping():
                    break
            except redis.exceptions.ConnectionError:
                pass
            assert proc.poll() is None, (workdir / "redis.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "redis-server did not answer in 30 s"
            time.sleep(0.1)
        yield url
    finally:
        _stop(proc)
        log.close()


@dataclass(frozen=True)
class ObjectStore:
    endpoint: str
    bucket: str
    env: dict[str, str]  # what a process needs to reach it (fsspec's s3fs reads these)

    def url(self, *parts: str) -> str:
        return "s3://" + "/".join([self.bucket, *parts])

    def filesystem(self) -> fsspec.AbstractFileSystem:
        return fsspec.filesystem(
            "s3", endpoint_url=self.endpoint, key="bench-test", secret="bench-test", use_listings_cache=False
        )


@contextmanager
def s3_server(workdir: Path) -> Iterator[ObjectStore]:
    """moto's S3 server (a real S3 API over HTTP) on a free loopback port, with one bucket."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = open(workdir / "moto.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(endpoint, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (workdir / "moto.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "moto's S3 server did not answer in 60 s"
            time.sleep(0.2)
        store = ObjectStore(endpoint, "bench", {**S3_CREDENTIALS, "AWS_ENDPOINT_URL_S3": endpoint})
        store.filesystem().mkdir(store.bucket)
        # s3fs caches its filesystems by arguments: one made for an earlier server (its endpoint
        # from the environment) would outlive that server in this process
        fsspec.get_filesystem_class("s3").clear_instance_cache()
        yield store
    finally:
        fsspec.get_filesystem_class("s3").clear_instance_cache()
        _stop(proc)
        log.close()


@contextmanager
def postgres_database() -> Iterator[str]:
    """A database of its own on the PostgreSQL server CI starts; yields its name."""
    try:
        admin = psycopg2.connect(
            host=PG["DAGSTER_PG_HOST"],
            user=PG["DAGSTER_PG_USER"],
            password=PG["DAGSTER_PG_PASSWORD"],
            dbname="postgres",
            connect_timeout=3,
        )
    except psycopg2.OperationalError as exc:
        require(False, f"PostgreSQL on {PG['DAGSTER_PG_HOST']} ({exc})")
    admin.autocommit = True
    name = f"bench_test_{uuid.uuid4().hex[:10]}"
    admin.cursor().execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        _drop_database(admin, name)
        admin.close()


def _drop_database(admin, name: str) -> None:
    """Drop a test database. FORCE cannot end a session Postgres itself runs on it (a background
    worker owned by another role): wait for it, and leave the database behind rather than fail a
    test that passed."""
    for attempt in range(5):
        try:
            admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            return
        except psycopg2.errors.InsufficientPrivilege:
            time.sleep(1 + attempt)


def postgres_url(database: str) -> str:
    return f"postgresql://{PG['DAGSTER_PG_USER']}:{PG['DAGSTER_PG_PASSWORD']}@{PG['DAGSTER_PG_HOST']}:5432/{database}"
