"""dagster-webserver and dagster-daemon as real subprocesses, for tests that drive the operator's path.

The UI sends GraphQL to the webserver; asset backfills, schedules and the run queue are executed
only by the daemon. `DagsterServices` starts both against a Dagster home and a bench home, speaks
GraphQL to the webserver (what the UI sends), and stops both by their own process ids.

Both reach the code location through one gRPC code server of its own, as in the deployment
(deploy/workspace.yaml) and under `dagster dev`: a daemon given a `python_module` workspace starts
its own code server and replaces it every minute (it reloads the workspace to pick up code
changes), each replacement importing the whole code location again.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from bench_assets.simulator.server import free_port

BIN = Path(sys.executable).parent
LAUNCH_BACKFILL = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message stack } } }"""
BACKFILL_STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  __typename ... on PartitionBackfill { status numPartitions error { message } }
  ... on PythonError { message } } }"""
LAUNCH_RUN = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message stack }
  ... on InvalidSubsetError { message } ... on RunConfigValidationInvalid { errors { message } } } }"""
RUN_STATUS = """query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }"""
REPOSITORY = {"repositoryLocationName": "bench", "repositoryName": "__repository__"}
RUN_ENDED = {"SUCCESS", "FAILURE", "CANCELED"}
TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED", "CANCELING"}


class DagsterServices:
    """A webserver and (optionally stopped and restarted) daemon on 127.0.0.1, sharing one environment."""

    def __init__(self, workdir: Path, env: dict[str, str], workspace: Path, cwd: Path):
        """`workspace` names the code location (a `python_module` entry, as the repository's
        workspace.yaml); the services serve it from one code server (`code_server_workspace`)."""
        self.workdir, self.env, self.cwd = workdir, env, cwd
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "dagster.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (the services write to it until stop())
        self.webserver: subprocess.Popen | None = None
        self.daemon: subprocess.Popen | None = None
        self.code_server: subprocess.Popen | None = None
        self._module, self._location = code_location(workspace)
        self._code_port = free_port()
        self.workspace = workdir / "workspace.yaml"
        self.workspace.write_text(code_server_workspace(self._location, self._code_port))

    # ------------------------------------------------------------------ processes

    def start_code_server(self, timeout: float = 180.0) -> None:
        """The code location's gRPC server (`dagster api grpc`, as deploy/ runs it), waited for: it
        loads the code location before it listens, so a webserver started after it finds it loaded."""
        if self.code_server is not None:
            return
        self.code_server = subprocess.Popen(
            [
                *(str(BIN / "dagster"), "api", "grpc", "-m", self._module, "--location-name", self._location),
                *("-h", "127.0.0.1", "-p", str(self._code_port)),
            ],
            env=self.env,
            cwd=self.cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while not listening(self._code_port):
            assert self.code_server.poll() is None, f"the code server exited:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"the code server not up in {timeout}s:\n{self.log_tail()}"
            time.sleep(0.5)

    def start_webserver(self, timeout: float = 180.0, wait: bool = True) -> None:
        """Start the webserver and (unless `wait` is false: then `wait_webserver`) wait until it
        serves the code location."""
        self.start_code_server()
        self.webserver = subprocess.Popen(
            [str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(self.port), "-w", str(self.workspace)],
            env=self.env,
            cwd=self.cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        if wait:
            self.wait_webserver(timeout)

    def wait_webserver(self, timeout: float = 180.0) -> None:
        assert self.webserver is not None, "start_webserver first"
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert self.webserver.poll() is None, f"dagster-webserver exited:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"dagster-webserver not up in {timeout}s:\n{self.log_tail()}"
            time.sleep(1)
        # the code location loads after the server answers: wait until its assets are served
        while True:
            data = self.graphql(
                "{ workspaceOrError { ... on Workspace { locationEntries { name "
                "locationOrLoadError { __typename } } } } }"
            )
            entries = data["workspaceOrError"]["locationEntries"]
            if entries and all(
                e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"
                for e in entries
            ):
                return
            assert not any(
                e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError" for e in entries
            ), f"code location failed to load:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"code location not loaded in {timeout}s:\n{self.log_tail()}"
            time.sleep(1)

    def start_daemon(self) -> None:
        self.start_code_server()
        self.daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(self.workspace)],
            env=self.env,
            cwd=self.cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        for proc in (self.daemon, self.webserver):
            if proc is not None and proc.poll() is None:
                proc.terminate()
        if self.code_server is not None and self.code_server.poll() is None:
            # it keeps no state, and `dagster api grpc` outlives SIGTERM for as long as gRPC's
            # threads wait (30 s and more here), where the Kubernetes deployment's grace period kills it
            self.code_server.kill()
        for proc in (self.daemon, self.webserver, self.code_server):
            if proc is None:
                continue
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self._log.close()

    def log_tail(self, chars: int = 4000) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    # ------------------------------------------------------------------ GraphQL

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        response = httpx.post(f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=120)
        response.raise_for_status()
        body = response.json()
        assert "errors" not in body, body["errors"]
        return body["data"]

    def launch_backfill(self, params: dict) -> str:
        """`launchPartitionBackfill`, as the UI's "Launch backfill" sends it; returns the backfill id."""
        launched = self.graphql(LAUNCH_BACKFILL, {"p": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        return launched["backfillId"]

    def wait_backfill(self, backfill_id: str, timeout: float) -> str:
        """Poll the backfill until the daemon finishes it; returns its final status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.graphql(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
            if status.get("status") in TERMINAL:
                return status["status"]
            assert self.daemon is None or self.daemon.poll() is None, f"dagster-daemon exited:\n{self.log_tail()}"
            time.sleep(2)
        raise AssertionError(f"backfill {backfill_id} did not finish in {timeout}s:\n{self.log_tail()}")

    def launch_run(self, job: str, tags: dict[str, str], assets: list[str] | None = None) -> str:
        """`launchRun` of a job (or of the named assets of Dagster's implicit asset job), as the UI's
        "Materialize" sends it for a partition (its tags); the daemon's run queue launches the run.
        Returns the run id."""
        selector = {**REPOSITORY, "jobName": job}
        if assets is not None:
            selector["assetSelection"] = [{"path": [name]} for name in assets]
        params = {
            "selector": selector,
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        launched = self.graphql(LAUNCH_RUN, {"p": params})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        return launched["run"]["runId"]

    def run_status(self, run_id: str) -> str:
        run = self.graphql(RUN_STATUS, {"id": run_id})["runOrError"]
        assert run["__typename"] == "Run", run
        return run["status"]

    def wait_run(self, run_id: str, timeout: float) -> str:
        """Poll the run until it ends; returns its final status."""
        deadline = time.monotonic() + timeout
        while (status := self.run_status(run_id)) not in RUN_ENDED:
            assert time.monotonic() < deadline, f"run {run_id} did not end in {timeout}s ({status}):\n{self.log_tail()}"
            assert self.daemon is None or self.daemon.poll() is None, f"dagster-daemon exited:\n{self.log_tail()}"
            time.sleep(1)
        return status

    def backfill(self, params: dict, timeout: float = 600.0) -> tuple[str, str]:
        backfill_id = self.launch_backfill(params)
        return backfill_id, self.wait_backfill(backfill_id, timeout)


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def code_location(workspace: Path) -> tuple[str, str]:
    """The module and location name of the workspace's one `python_module` code location."""
    (entry,) = yaml.safe_load(workspace.read_text())["load_from"]
    module = entry["python_module"]
    return module["module_name"], module["location_name"]


def code_server_workspace(location: str, port: int) -> str:
    """A workspace of one code location served over gRPC on 127.0.0.1 (deploy/workspace.yaml's shape)."""
    return yaml.safe_dump(
        {"load_from": [{"grpc_server": {"host": "127.0.0.1", "port": port, "location_name": location}}]}
    )


def services_env(dagster_home: Path, home: Path, **extra: str) -> dict[str, str]:
    """The environment of the webserver, the daemon and the runs they launch."""
    return {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "BENCH_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "yes",
        **extra,
    }
