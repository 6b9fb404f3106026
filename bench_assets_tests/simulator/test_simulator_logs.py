"""The simulator's request and billing logs are bounded ($BENCH_SIM_LOG_LIMIT records each, the most
recent), and a log that dropped records says so (507) instead of reading as a whole log."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from bench_assets.errors import BenchInputError
from bench_assets.simulator.app import build_app, create_simulator, sim_key
from bench_assets.simulator.logs import DEFAULT_LOG_LIMIT, BoundedLog
from bench_assets.simulator.server import _check_environment

SEARCH = "/h/api.exa.ai/search"
KEY = {"x-api-key": sim_key("exa")}


def test_a_log_reads_as_the_json_array_of_its_records():
    log = BoundedLog(limit=10)
    records = [{"vendor": "exa", "at": 1.5, "body": 'ünïcode "quoted"', "units": {"request.search": 1.0}}, {"n": 2}]
    for record in records:
        log.append(record)
    # the bytes starlette's JSONResponse wrote for the list of dicts the log used to be
    assert log.json() == json.dumps(records, ensure_ascii=False, separators=(",", ":")).encode()
    assert log.records() == records and len(log) == 2 and log.dropped == 0


def test_a_log_keeps_the_last_records_and_counts_the_dropped_ones():
    log = BoundedLog(limit=3)
    for i in range(5):
        log.append({"i": i})
    assert [r["i"] for r in log.records()] == [2, 3, 4] and log.dropped == 2
    log.clear()
    assert log.records() == [] and log.dropped == 0
    keeps_none = BoundedLog(limit=0)
    keeps_none.append({"i": 0})
    assert keeps_none.records() == [] and keeps_none.dropped == 1


@pytest.fixture()
def limited(monkeypatch):
    monkeypatch.setenv("BENCH_SIM_LOG_LIMIT", "3")
    simulator = create_simulator(pages_per_stratum=2, latency_scale=0.0)
    with TestClient(build_app(simulator), base_url="http://sim") as client:
        yield client


def test_the_simulator_logs_are_bounded_and_never_silently_short(limited):
    client = limited
    for i in range(2):
        assert client.post(SEARCH, json={"query": f"quarterly revenue {i}"}, headers=KEY).status_code == 200
    assert len(client.get("/_sim/requests").json()) == 2  # within the limit: the whole log, as always
    for i in range(2, 5):
        assert client.post(SEARCH, json={"query": f"quarterly revenue {i}"}, headers=KEY).status_code == 200
    for name in ("requests", "billing"):
        whole = client.get(f"/_sim/{name}")
        assert whole.status_code == 507, name
        assert whole.json()["dropped"] == 2 and whole.json()["kept"] == 3
        assert "BENCH_SIM_LOG_LIMIT" in whole.json()["error"] and "?partial=true" in whole.json()["error"]
        partial = client.get(f"/_sim/{name}", params={"partial": "true"})
        assert partial.status_code == 200 and len(partial.json()) == 3
    kept = client.get("/_sim/requests", params={"partial": "true"}).json()
    assert [json.loads(r["body"])["query"] for r in kept] == [f"quarterly revenue {i}" for i in (2, 3, 4)]
    assert client.post("/_sim/reset").status_code == 200  # a reset starts a whole log again
    assert client.get("/_sim/requests").json() == [] and client.get("/_sim/billing").json() == []


def test_the_log_limit_is_checked_before_the_simulator_starts():
    assert DEFAULT_LOG_LIMIT >= 100_000
    _check_environment({"BENCH_SIM_LOG_LIMIT": "0"})
    with pytest.raises(BenchInputError, match="BENCH_SIM_LOG_LIMIT"):
        _check_environment({"BENCH_SIM_LOG_LIMIT": "-1"})
    with pytest.raises(BenchInputError, match="BENCH_SIM_LOG_LIMIT"):
        _check_environment({"BENCH_SIM_LOG_LIMIT": "lots"})
