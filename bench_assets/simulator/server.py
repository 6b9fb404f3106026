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
from bench_assets.runtime import freeze_heap
from bench_assets.simulator.app import (
    CANDIDATE_PAGES_ENV,
    DRIFT_QUARTERS_ENV,
    SIM_PREFIX,
    HostPorts,
    _env_number,
    build_app,
    create_simulator,
    vendor_hosts,
)
from bench_assets.simulator.faults import fault_plan_from_env
from bench_assets.simulator.logs import DEFAULT_LOG_LIMIT, LOG_LIMIT_ENV


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bind_host_ports(
    hosts: list[str], address: str, first_port: int, option: str = "--vendor-ports"
) -> dict[str, socket.socket]:
    """A listening socket per vendor host: on ports first_port, first_port + 1, ... in the order
    given, or on free ports when first_port is 0. A port in use is an input error naming it."""
    sockets: dict[str, socket.socket] = {}
    for i, host in enumerate(hosts):
        port = first_port + i if first_port else 0
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            sock.close()
            for opened in sockets.values():
                opened.close()
            raise BenchInputError(
                option, [(None, option.lstrip("-"), f"port {port} ({host}) is not free ({exc.strerror}); pass another")]
            ) from None
        sock.listen(128)
        sock.set_inheritable(True)
        sockets[host] = sock
    return sockets


def serve(port: int, host: str = "127.0.0.1", quiet: bool = False, vendor_ports: int | None = None) -> None:
    """Serve the simulator on `port` (every host under /h/<host>) and each vendor API host at the
    root of its own port, from `vendor_ports` on (default: the ports after `port`; 0: free ports)."""
    import uvicorn  # only the process that serves needs the server (start_simulator's parent does not)

    sim = create_simulator()
    app = build_app(sim)
    # The corpus and its index (many tracked objects) live as long as the process: kept out of the
    # garbage collector's full passes, which otherwise traverse them all every few thousand requests.
    freeze_heap()
    hosts = vendor_hosts(sim)
    first = port + 1 if vendor_ports is None else vendor_ports
    main_socket = bind_host_ports(["the simulator's own"], host, port, option="--port")["the simulator's own"]
    try:
        host_sockets = bind_host_ports(list(hosts), host, first)
    except BenchInputError:
        main_socket.close()
        raise
    for name, sock in host_sockets.items():
        sim.host_urls[name] = f"http://{host}:{sock.getsockname()[1]}"
    base = f"http://{host}:{port}"
    if not quiet:
        print(f"bench simulator on {base} (pid {os.getpid()})", flush=True)
        # One line per vendor, its base URLs (DESIGN.md keeps this form): each of its hosts under /h/
        # on this port, then the same hosts, in the same order, at the root of their own ports.
        print(
            "each vendor's base URLs: under /h/<host> here, then the same hosts at the root of ports of their own "
            "(what an SDK's base-URL option takes)",
            flush=True,
        )
        by_vendor: dict[str, list[str]] = {}
        for name, vendor in hosts.items():
            by_vendor.setdefault(vendor, []).append(name)
        for vendor, names in by_vendor.items():
            urls = [f"{base}{SIM_PREFIX}/{name}" for name in names] + [sim.host_urls[name] for name in names]
            print(f"  {vendor:<11} {'  '.join(urls)}", flush=True)
        print(
            f"  planted site {base}{SIM_PREFIX}/<host>/<path>   logs: {base}/_sim/requests  {base}/_sim/billing",
            flush=True,
        )
    by_port = {sock.getsockname()[1]: name for name, sock in host_sockets.items()}
    config = uvicorn.Config(HostPorts(app, by_port), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[main_socket, *host_sockets.values()])


@dataclass
class SimulatorProcess:
    """A simulator running in a child process; `stop()` ends it by its process id."""

    pid: int
    port: int
    process: subprocess.Popen
    # vendor host -> the root URL of its own port ("api.firecrawl.dev" -> "http://127.0.0.1:PORT")
    host_urls: dict[str, str] = field(default_factory=dict)
    # Its stderr goes to a file, not a pipe nobody reads: a long run's warnings would fill a pipe
    # and block the simulator mid-request.
    stderr: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def root_url(self, real_url: str) -> str:
        """A real vendor URL on its host's own port: https://api.exa.ai/search -> http://127.0.0.1:P/search
        (the form an SDK's base-URL option takes, with no path prefix to lose)."""
        host, _, rest = real_url.split("://", 1)[1].partition("/")
        return self.host_urls[host] + (f"/{rest}" if rest else "")

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
    port: int | None = None, env: dict[str, str] | None = None, timeout: float = 120.0
) -> SimulatorProcess:
    """Start the simulator as a child process and wait until it answers its health check."""
    port = port or free_port()
    child_env = {**os.environ, **(env or {})}
    _check_environment(child_env)  # a bad variable fails here, naming it, not as a dead child process
    stderr = tempfile.TemporaryFile(prefix="bench-simulator-")  # noqa: SIM115 (open while the child lives; closed by stop())
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench_assets.simulator.server", "--port", str(port), "--vendor-ports", "0", "--quiet"],
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
                hosts = httpx.get(f"http://127.0.0.1:{port}/_sim/hosts", timeout=5.0).json()
                roots = {host: info["root"] for host, info in hosts.items() if info["root"]}
                return SimulatorProcess(pid=proc.pid, port=port, process=proc, host_urls=roots, stderr=stderr)
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
    _env_number(LOG_LIMIT_ENV, str(DEFAULT_LOG_LIMIT), int, 0, environ)
    _env_number(CANDIDATE_PAGES_ENV, "0", int, 0, environ)
    _env_number(DRIFT_QUARTERS_ENV, "0", int, 0, environ)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench simulator", description="Run the local vendor simulator.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--vendor-ports",
        type=int,
        default=None,
        help="first port of the per-vendor-host ports (default: --port + 1; 0: free ports)",
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.host, args.quiet, args.vendor_ports)
    except BenchInputError as exc:
        print(f"bench simulator: bad input:\n{exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
