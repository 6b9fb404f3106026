"""`bench simulator` serves every vendor API host at the root of a port of its own, beside `/h/<host>`
on its main port, and prints both: one app, one request log, faults and balances for both forms."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import httpx
import pytest

from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.profiles import PROFILES
from bench_assets.simulator.server import free_port
from bench_assets_tests.helpers import REPO


def test_a_vendor_on_its_own_port_is_the_same_vendor_as_under_its_host_prefix(simulator, sim_control):
    exa_root = simulator.root_url("https://api.exa.ai/search")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/search", exa_root) and simulator.base_url not in exa_root
    body = {"query": "tokenizer latency", "numResults": 3}
    headers = {"x-api-key": sim_key("exa")}
    by_port = httpx.post(exa_root, json=body, headers=headers, timeout=10)
    by_prefix = httpx.post(simulated_url("https://api.exa.ai/search", simulator.base_url), json=body, headers=headers)
    assert by_port.status_code == by_prefix.status_code == 200
    assert [r["url"] for r in by_port.json()["results"]] == [r["url"] for r in by_prefix.json()["results"]]
    logged = httpx.get(f"{simulator.base_url}/_sim/requests", timeout=5).json()
    assert [(r["host"], r["path"]) for r in logged] == [("api.exa.ai", "/search")] * 2
    assert len(sim_control.billing()) == 2
    # balances and faults hold for both forms
    sim_control.credits({"exa": 0})
    assert httpx.post(exa_root, json=body, headers=headers, timeout=10).status_code == 402
    sim_control.credits({"exa": None})
    sim_control.faults({"vendors": {"exa": {"rate_limited": 1.0}}})
    assert httpx.post(exa_root, json=body, headers=headers, timeout=10).status_code == 429
    sim_control.faults({"vendors": {"exa": {"connection_reset": 1.0}}})  # the socket of the vendor's own port
    with pytest.raises(httpx.TransportError):
        httpx.post(exa_root, json=body, headers=headers, timeout=10)
    sim_control.faults({"vendors": {"exa": {"challenge": 1.0}}})
    challenge = httpx.post(exa_root, json=body, headers=headers, timeout=10)
    assert challenge.headers["cf-mitigated"] == "challenge" and "api.exa.ai" in challenge.text


def test_each_host_has_its_own_port_and_a_port_serves_only_its_host(simulator):
    hosts = httpx.get(f"{simulator.base_url}/_sim/hosts", timeout=5).json()
    assert {"api.exa.ai", "api.firecrawl.dev", "kagi.com", "s.jina.ai", "r.jina.ai"} <= set(hosts)
    roots = [info["root"] for info in hosts.values()]
    assert all(roots) and len(set(roots)) == len(roots) == len(simulator.host_urls)
    kagi = simulator.root_url("https://kagi.com")
    # Exa's path on Kagi's port is Kagi's 404, not Exa's answer
    assert httpx.post(f"{kagi}/search", json={"query": "x"}, timeout=5).status_code == 404
    assert httpx.get(f"{kagi}/_sim/health", timeout=5).status_code == 404  # the controls stay on the main port


def test_bench_simulator_prints_each_vendors_base_urls():
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "BENCH_SIM_LATENCY_SCALE": "0"}
    command = [sys.executable, "-m", "bench_assets.cli.main", "simulator", "--port", str(port), "--vendor-ports", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "planted site" in line:
                break
        vendor_lines = [line.split() for line in lines if line.startswith("  ") and "planted site" not in line]
        assert sorted(words[0] for words in vendor_lines) == sorted(PROFILES)  # one line per vendor
        printed = {}
        for _vendor, *urls in vendor_lines:  # its hosts under /h/, then the same hosts on their own ports
            prefixed, roots = urls[: len(urls) // 2], urls[len(urls) // 2 :]
            assert all(u.startswith(f"http://127.0.0.1:{port}/h/") for u in prefixed)
            printed.update({u.split("/h/")[1]: root for u, root in zip(prefixed, roots, strict=True)})
        hosts = httpx.get(f"http://127.0.0.1:{port}/_sim/hosts", timeout=5).json()
        assert printed == {host: info["root"] for host, info in hosts.items()}
        answer = httpx.get(
            f"{printed['kagi.com']}/api/v0/search",
            params={"q": "tokenizer"},
            headers={"Authorization": f"Bot {sim_key('kagi')}"},
            timeout=10,
        )
        assert answer.status_code == 200 and answer.json()["meta"]["api_balance"] > 0
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_a_vendor_port_in_use_is_refused_naming_the_option():
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        first = taken.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [
            sys.executable,
            "-m",
            "bench_assets.cli.main",
            "simulator",
            "--port",
            str(port),
            "--vendor-ports",
            str(first),
        ]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert "--vendor-ports" in done.stderr and f"port {first}" in done.stderr, done.stderr


def test_root_url_keeps_the_real_path(simulator):
    firecrawl = simulator.host_urls["api.firecrawl.dev"]
    assert simulator.root_url("https://api.firecrawl.dev") == firecrawl
    assert simulator.root_url("https://kagi.com/api/v0") == simulator.host_urls["kagi.com"] + "/api/v0"
