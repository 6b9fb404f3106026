"""Resources: where files live, the warehouse, vendor keys, and the simulator gateway.

What a resource does with the warehouse, the simulator or object storage is imported when it
does it: every process that loads the code location defines these resources, few use them all."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import yaml
from dagster_duckdb import DuckDBResource
from pydantic import PrivateAttr

from bench_assets.adapters import available_adapters, default_key_env
from bench_assets.adapters.base import key_problem
from bench_assets.errors import BenchInputError
from bench_assets.manifest import Manifest, check_snapshot_id, load_manifest

if TYPE_CHECKING:
    import duckdb

    from bench_assets.storage.mirror import DirectoryMirror
    from bench_assets.storage.warehouse import Warehouse

# The variable each vendor's key is read from unless its manifest entry names another (`key_env`).
KEY_ENVS = {vendor: default_key_env(vendor) for vendor in sorted(available_adapters())}


def _root() -> Path:
    return Path(os.environ.get("BENCH_HOME", os.getcwd())).resolve()


class BenchPaths(dg.ConfigurableResource):
    """Where the snapshot manifests, the private store and the published files live.

    `files_url` (beyond one machine: deploy/README.md) keeps the snapshot directories, the
    published site and the private store in step with object storage (`<files_url>/snapshots`,
    `/publish`, `/private`, or the private store at `private_url`): pulled before every step,
    what the step changed pushed after it (`bench_assets.storage.mirror`)."""

    root: str = ""
    private_dir: str = ""
    files_url: str = ""
    private_url: str = ""

    def mirrors(self) -> list[DirectoryMirror]:
        if not self.files_url:
            return []
        from bench_assets.storage.mirror import DirectoryMirror

        base = self.files_url.rstrip("/")
        return [
            DirectoryMirror(self.snapshots_dir, f"{base}/snapshots"),
            DirectoryMirror(self.publish_dir, f"{base}/publish"),
            DirectoryMirror(self.private, self.private_url or f"{base}/private"),
        ]

    def pull(self) -> None:
        for mirror in self.mirrors():
            mirror.pull()

    def push(self) -> None:
        for mirror in self.mirrors():
            mirror.push()

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self.pull()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.push()

    def _root(self) -> Path:
        return Path(self.root).resolve() if self.root else _root()

    @property
    def home(self) -> Path:
        """The bench home: `data/` (snapshots, pricing pages, publications) lives under it."""
        return self._root()

    @property
    def snapshots_dir(self) -> Path:
        return self._root() / "data" / "snapshots"

    @property
    def publish_dir(self) -> Path:
        return self._root() / "data" / "publish"

    @property
    def private(self) -> Path:
        return Path(self.private_dir).resolve() if self.private_dir else self._root() / "data" / "private"

    def manifest_path(self, snapshot_id: str) -> Path:
        """The snapshot's manifest, `snapshot_id` refused unless it is a snapshot id: every asset
        reads its partition's manifest first, so a partition key like `../snapshots/x` (the UI
        accepts any) stops there, before a file is read or written."""
        return self.snapshots_dir / check_snapshot_id(snapshot_id) / "manifest.yaml"

    def manifest(self, snapshot_id: str) -> Manifest:
        return load_manifest(self.manifest_path(snapshot_id))

    def default_warehouse_file(self) -> Path:
        return self._root() / "data" / "warehouse" / "bench.duckdb"


class WarehouseResource(DuckDBResource):
    """The warehouse: the central DuckDB file (`database`) and the partition archives beside it,
    opened through dagster-duckdb (its back-off while another process holds a file) and used
    through `bench_assets.storage.warehouse.Warehouse`, which adds what DuckDBResource does not:
    a cross-process lock around every read-write connection, the schema, transactions,
    read-only connections for schedules and sensors, and the Parquet data path.

    `lake_url` switches the data path: empty keeps every table in the single DuckDB file; a local
    directory or an fsspec URL (s3://bucket/bench) stores each vendor partition's raw responses,
    results and scores there as Parquet, read back through DuckDB views (`bench_assets.storage.lake`)."""

    lake_url: str = ""
    # Beyond one machine (deploy/README.md): the central file's home in object storage and the
    # Postgres database where machines take turns; where the custody journal lives (default:
    # beside the warehouse, or under `shared_url`); each vendor's account-wide pacing log in Redis.
    shared_url: str = ""
    lock_url: str = ""
    journal_url: str = ""
    pacing_url: str = ""

    def warehouse(self) -> Warehouse:
        from bench_assets.storage.warehouse import Warehouse

        if self.shared_url and not self.lake_url:
            raise BenchInputError(
                "$BENCH_WAREHOUSE_URL",
                [(None, "BENCH_LAKE_URL", "a shared warehouse keeps the fan-out tables in the lake: set it too")],
            )
        return Warehouse(
            Path(self.database).resolve(),
            lake_url=self.lake_url or None,
            connector=self._connect,
            journal_url=self.journal_url or None,
            shared_url=self.shared_url or None,
            lock_url=self.lock_url or None,
            pacing_url=self.pacing_url or None,
        )

    def _connect(self, path: str) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        # DuckDBResource backs off on every IOError for about 100 s, worth it for a lock another
        # process holds; a file that is no DuckDB database at all is opened directly, to say so at once
        from bench_assets.storage.file_health import is_foreign
        from bench_assets.storage.warehouse import direct_connection

        if is_foreign(Path(path)):
            return direct_connection(path)
        return DuckDBResource(database=path, connection_config=self.connection_config).get_connection()


class VendorKeys(dg.ConfigurableResource):
    """Live API keys by the name of the environment variable that holds them, each bound with
    dg.EnvVar: run config, the UI and the logs only ever show the variable's name."""

    by_env: dict[str, str] = {}  # noqa: RUF012 (pydantic copies a field's default per instance)

    def key_in(self, env: str) -> str:
        value = self.by_env.get(env, "")
        if isinstance(value, dg.EnvVar):  # used outside a run, where Dagster has not resolved it yet
            return value.get_value() or ""
        return value


def declared_key_envs(snapshots_dir: Path) -> set[str]:
    """The key variables the snapshot manifests name (`vendors.<name>.key_env`). Read leniently:
    a manifest that does not validate is reported, file, line and field, when its snapshot runs."""
    names = set()
    for path in sorted(snapshots_dir.glob("*/manifest.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        vendors = data.get("vendors") if isinstance(data, dict) else None
        for spec in vendors.values() if isinstance(vendors, dict) else ():
            env = spec.get("key_env") if isinstance(spec, dict) else None
            if isinstance(env, str) and env:
                names.add(env)
    return names


def vendor_keys_from_env(snapshots_dir: Path | None = None) -> VendorKeys:
    """Every key variable a manifest may name (the default names and each manifest's `key_env`)
    that is set, bound with dg.EnvVar; a demo needs none. A run's process loads the definitions
    afresh, so a manifest added after the UI started is seen by its runs."""
    names = set(KEY_ENVS.values()) | declared_key_envs(snapshots_dir or bench_paths_from_env().snapshots_dir)
    return VendorKeys(by_env={env: dg.EnvVar(env) for env in sorted(names) if os.environ.get(env)})


class VendorGateway(dg.ConfigurableResource):
    """Where vendor and page requests go: the real hosts in live mode, the simulator otherwise.

    In simulated mode with no `simulator_url`, a simulator is started for the step and stopped
    after it, so a snapshot can be materialized from the UI with nothing else running.
    """

    simulator_url: str = ""
    _started: Any = PrivateAttr(default=None)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._started is not None:
            self._started.stop()
            self._started = None

    def sim_base(self) -> str:
        if self.simulator_url:
            return self.simulator_url
        if self._started is None:
            from bench_assets.simulator.server import start_simulator

            self._started = start_simulator()
        return self._started.base_url

    def url(self, real_url: str, mode: str) -> str:
        from bench_assets.simulator.app import simulated_url

        return real_url if mode == "live" else simulated_url(real_url, self.sim_base())

    def api_key(self, vendor: str, mode: str, keys: VendorKeys, key_env: str | None = None) -> str:
        """The key a vendor is called with: in live mode the one in `key_env` (the manifest's
        `vendors.<vendor>.key_env`; default: the vendor's usual variable), refused with the
        variable named (never the value) when it is missing or would not travel as it is."""
        provider = vendor.partition(".")[0]  # a configuration (`exa.deep`) uses its provider's account
        if mode != "live":
            from bench_assets.simulator.app import sim_key

            return sim_key(provider)
        env = key_env or default_key_env(provider)
        key = keys.key_in(env)
        if not key:
            raise BenchInputError(
                f"${env}",
                [
                    (
                        None,
                        env,
                        f"no API key for {vendor} in live mode: set ${env} in "
                        "the environment of the code location (never commit it)",
                    )
                ],
            )
        problem = key_problem(key)
        if problem:
            raise BenchInputError(
                f"${env}", [(None, env, f"the API key for {vendor} {problem}; fix the variable (the key was not sent)")]
            )
        return key


def bench_paths_from_env() -> BenchPaths:
    """The paths the code location binds ($BENCH_HOME, $BENCH_PRIVATE_DIR; beyond one machine
    $BENCH_FILES_URL and $BENCH_PRIVATE_URL)."""
    return BenchPaths(
        root=os.environ.get("BENCH_HOME", ""),
        private_dir=os.environ.get("BENCH_PRIVATE_DIR", ""),
        files_url=os.environ.get("BENCH_FILES_URL", ""),
        private_url=os.environ.get("BENCH_PRIVATE_URL", ""),
    )


def warehouse_from_env(paths: BenchPaths | None = None) -> WarehouseResource:
    """The warehouse the code location binds ($BENCH_WAREHOUSE, default data/warehouse/bench.duckdb
    under the bench home; $BENCH_LAKE_URL, the switch to the Parquet data path; beyond one machine
    $BENCH_WAREHOUSE_URL, $BENCH_LOCK_URL, $BENCH_JOURNAL_URL and $BENCH_PACING_URL: deploy/README.md)."""
    default = (paths or bench_paths_from_env()).default_warehouse_file()
    return WarehouseResource(
        database=str(Path(os.environ.get("BENCH_WAREHOUSE") or default).resolve()),
        lake_url=os.environ.get("BENCH_LAKE_URL", ""),
        shared_url=os.environ.get("BENCH_WAREHOUSE_URL", ""),
        lock_url=os.environ.get("BENCH_LOCK_URL", ""),
        journal_url=os.environ.get("BENCH_JOURNAL_URL", ""),
        pacing_url=os.environ.get("BENCH_PACING_URL", ""),
    )


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "paths": bench_paths_from_env(),
            "duckdb": warehouse_from_env(),
            "gateway": VendorGateway(simulator_url=os.environ.get("BENCH_SIMULATOR_URL", "")),
            "vendor_keys": vendor_keys_from_env(),
        }
    )
