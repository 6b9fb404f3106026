"""Run the simulator: in this process (`serve`) or as a child process stopped by its pid."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO

import httpx

from bench_assets.errors import BenchInputError
from bench_assets.simulator.app import _env_number, build_app, create_simulator
from bench_assets.simulator.faults import fault_plan_from_env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port: int, host: str = "127.0.0.1", quiet: bool = False) -> None:
    import uvicorn  # only the process that serves needs the server (start_simulator's parent does not)

    sim = create_simulator()
    app = build_app(sim)
    base = f"http://{host}:{port}"
    if not quiet:
        vendors: dict[str, list[str]] = {}
        for r in sim.routes:
            url = f"{base}/h/{r.host}"
            vendors.setdefault(r.vendor, [])
            if url not in vendors[r.vendor]:
                vendors[r.vendor].append(url)
        print(f"bench simulator on {base} (pid {os.getpid()})", flush=True)
        for vendor, urls in sorted(vendors.items()):
            print(f"  {vendor:<11} {'  '.join(urls)}", flush=True)
        print(f"  planted site {base}/h/<host>/<path>   logs: {base}/_sim/requests  {base}/_sim/billing", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


@dataclass
class SimulatorProcess:
    """A simulator running in a child process; `stop()` ends it by its process id."""

    pid: int
    port: int
    process: subprocess.Popen
    # Its stderr goes to a file, not a pipe nobody reads: a long run's warnings would fill a pipe
    # and block the simulator mid-request.
    stderr: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self.stderr is not None:
            self.stderr.close()

    def __enter__(self) -> SimulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_simulator(
    port: int | None = None, env: dict[str, str] | None = None, timeout: float = 30.0
) -> SimulatorProcess:
    """Start the simulator as a child process and wait until it answers its health check."""
    port = port or free_port()
    child_env = {**os.environ, **(env or {})}
    _check_environment(child_env)  # a bad variable fails here, naming it, not as a dead child process
    stderr = tempfile.TemporaryFile(prefix="bench-simulator-")  # noqa: SIM115 (open while the child lives; closed by stop())
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench_assets.simulator.server", "--port", str(port), "--quiet"],
        env=child_env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stderr.seek(0)
            err = stderr.read().decode(errors="replace")
            stderr.close()
            raise RuntimeError(f"simulator exited with {proc.returncode}: {err[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/_sim/health", timeout=1.0).status_code == 200:
                return SimulatorProcess(pid=proc.pid, port=port, process=proc, stderr=stderr)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    proc.wait(timeout=10)
    stderr.close()
    raise RuntimeError(f"simulator did not answer on port {port} within {timeout}s")


def _check_environment(environ: dict[str, str]) -> None:
    """Raise BenchInputError for a malformed simulator variable (the child would refuse it anyway)."""
    fault_plan_from_env(environ)
    _env_number("BENCH_SIM_PAGES_PER_STRATUM", "14", int, 1, environ)
    _env_number("BENCH_SIM_LATENCY_SCALE", "1.0", float, 0.0, environ)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench simulator", description="Run the local vendor simulator.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.host, args.quiet)
    except BenchInputError as exc:
        print(f"bench simulator: bad input:\n{exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
