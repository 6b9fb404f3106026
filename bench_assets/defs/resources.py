"""Resources: where files live, the warehouse, vendor keys, and the simulator gateway."""


import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from bench_assets.errors import BenchInputError
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.warehouse import SnapshotImmutableError, Warehouse

KEY_ENVS = {"exa": "EXA_API_KEY", "brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY", "serper": "SERPER_API_KEY",
            "serpapi": "SERPAPI_API_KEY", "jina": "JINA_API_KEY", "firecrawl": "FIRECRAWL_API_KEY",
            "perplexity": "PERPLEXITY_API_KEY", "linkup": "LINKUP_API_KEY", "parallel": "PARALLEL_API_KEY",
            "youcom": "YDC_API_KEY", "kagi": "KAGI_API_KEY"}


@contextmanager
def input_errors_as_failures():
    """Bad operator input fails the step with the message naming file, line and field, not a stack trace."""
    try:
        yield
    except BenchInputError as exc:
        raise dg.Failure(description=str(exc), metadata={"input": exc.source}) from None


def _root() -> Path:
    return Path(os.environ.get("BENCH_HOME", os.getcwd())).resolve()


class StepWarehouse(Warehouse):
    """The warehouse as an asset uses it: a write to a published snapshot fails the step with a
    dg.Failure naming the errata process (the warehouse itself refuses such writes)."""

    def replace_rows(self, table: str, df: Any, where: dict[str, str]) -> int:
        try:
            return super().replace_rows(table, df, where)
        except SnapshotImmutableError as exc:
            raise dg.Failure(str(exc)) from None


class BenchPaths(dg.ConfigurableResource):
    """Where the snapshot manifests, the private store, the warehouse and published files live.

    `lake_url` switches the data path: empty keeps every table in the single DuckDB file; a local
    directory or an fsspec URL (s3://bucket/bench) stores each vendor partition's raw responses,
    results and scores there as Parquet, read back through DuckDB views (`bench_assets.lake`)."""

    root: str = ""
    private_dir: str = ""
    warehouse_path: str = ""
    lake_url: str = ""

    def _root(self) -> Path:
        return Path(self.root).resolve() if self.root else _root()

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
        return self.snapshots_dir / snapshot_id / "manifest.yaml"

    def manifest(self, snapshot_id: str) -> Manifest:
        with input_errors_as_failures():
            return load_manifest(self.manifest_path(snapshot_id))

    def warehouse(self) -> Warehouse:
        path = Path(self.warehouse_path).resolve() if self.warehouse_path else self._root() / "data" / "warehouse" / "bench.duckdb"
        return StepWarehouse(path, lake_url=self.lake_url or None)


class VendorKeys(dg.ConfigurableResource):
    """Live API keys, injected from the environment with dg.EnvVar; never stored or logged."""

    exa: str = ""
    brave: str = ""
    tavily: str = ""
    serper: str = ""
    serpapi: str = ""
    jina: str = ""
    firecrawl: str = ""
    perplexity: str = ""
    linkup: str = ""
    parallel: str = ""
    youcom: str = ""
    kagi: str = ""

    def key_for(self, vendor: str) -> str:
        return getattr(self, vendor, "")


def vendor_keys_from_env() -> VendorKeys:
    """Only keys present in the environment are bound, so a demo needs none."""
    return VendorKeys(**{v: dg.EnvVar(env) for v, env in KEY_ENVS.items() if os.environ.get(env)})


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
        return real_url if mode == "live" else simulated_url(real_url, self.sim_base())

    def api_key(self, vendor: str, mode: str, keys: VendorKeys) -> str:
        if mode == "live":
            key = keys.key_for(vendor)
            if not key:
                raise dg.Failure(f"no API key for {vendor}: set ${KEY_ENVS.get(vendor, vendor.upper() + '_API_KEY')}")
            return key
        return sim_key(vendor)


def bench_paths_from_env() -> BenchPaths:
    """The paths the code location binds ($BENCH_HOME, $BENCH_PRIVATE_DIR, $BENCH_WAREHOUSE, and
    $BENCH_LAKE_URL, the switch to the Parquet data path)."""
    return BenchPaths(root=os.environ.get("BENCH_HOME", ""), private_dir=os.environ.get("BENCH_PRIVATE_DIR", ""),
                      warehouse_path=os.environ.get("BENCH_WAREHOUSE", ""),
                      lake_url=os.environ.get("BENCH_LAKE_URL", ""))


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={
        "paths": bench_paths_from_env(),
        "gateway": VendorGateway(simulator_url=os.environ.get("BENCH_SIMULATOR_URL", "")),
        "vendor_keys": vendor_keys_from_env(),
    })
