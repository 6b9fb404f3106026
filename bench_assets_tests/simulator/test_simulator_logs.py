"""The simulator's request and billing logs are bounded ($BENCH_SIM_LOG_LIMIT records each, the most
recent), kept on disk rather than in the simulator's memory, and a log that dropped records says
so (507) instead of reading as a whole log."""

from __future__ import annotations

import json
import os
import random
import tracemalloc
from collections import deque

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


def test_a_log_reads_as_a_list_of_its_last_records_whatever_it_was_sent():
    """Appends, reads and resets in any order, against a deque of the same length (the log copies
    its kept records to a fresh file now and then: nothing may be lost or repeated)."""
    chance = random.Random(29)
    for _ in range(200):
        limit = chance.randint(0, 6)
        log, kept, dropped = BoundedLog(limit), deque(maxlen=limit), 0
        for i in range(chance.randint(0, 40)):
            if chance.random() < 0.05:
                log.clear()
                kept.clear()
                dropped = 0
                continue
            if chance.random() < 0.2:
                assert log.records() == list(kept)
            record = {"i": i, "text": "ü" * chance.randint(0, 3)}
            dropped += len(kept) == limit
            kept.append(record)
            log.append(record)
        assert (log.records(), log.dropped, len(log)) == (list(kept), dropped, len(kept))


def test_a_log_holds_its_records_on_disk_and_a_bounded_number_of_them():
    record = {"vendor": "exa", "path": "/search", "body": json.dumps({"query": "q " * 200})}
    log = BoundedLog(limit=2_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(10_000):
            log.append(record)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    size = len(json.dumps(record, separators=(",", ":")))
    assert held < 2_000 * size / 10  # in memory: where the records start, not the records
    assert os.fstat(log._file.fileno()).st_size <= 2 * 2_000 * (size + 1)  # on disk: twice the limit at most
    assert len(log.records()) == 2_000 and log.dropped == 8_000


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
