"""The fetch engine against the real simulator injecting faults over a real socket.

Each test sets a fault plan on the simulator (`POST /_sim/faults`), fetches a few queries into a
real partition DuckDB file, and checks what the operator relies on: every query ends with one
final archived attempt and a class, Retry-After is honoured, retries are bounded, and the spend
we compute equals what the simulated vendor billed (its billing log). Waits go through an
injected `sleep` that records them, so nothing here depends on the clock.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC
from pathlib import Path

import httpx
import pandas as pd
import pytest
import yaml

from bench_assets.adapters import get_adapter
from bench_assets.errors import BenchInputError
from bench_assets.fetch.classify import classify_response
from bench_assets.fetch.engine import FetchItem, FetchSettings, fetch_partition, retry_after_seconds
from bench_assets.fetch.spend import archived_spend
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.faults import FAULT_KINDS, FaultPlan, fault_plan_from_env, parse_fault_plan
from bench_assets.storage.archive import PartitionArchive
from bench_assets_tests.helpers import DEMO_MANIFEST

SPEC = yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]


@pytest.fixture()
def faults(simulator):
    """Set a fault plan on the session simulator (logs cleared first); cleared again afterwards."""
    base = simulator.base_url
    httpx.post(f"{base}/_sim/reset", timeout=5)

    def set_plan(plan: dict) -> None:
        response = httpx.post(f"{base}/_sim/faults", json=plan, timeout=5)
        assert response.status_code == 200, response.text

    yield set_plan
    httpx.post(f"{base}/_sim/faults", json={}, timeout=5)
    httpx.post(f"{base}/_sim/reset", timeout=5)


def billing(simulator) -> list[dict]:
    return httpx.get(f"{simulator.base_url}/_sim/billing", timeout=5).json()


def settings(simulator, vendor: str, **overrides) -> FetchSettings:
    spec = SPEC[vendor]
    values = {
        "endpoints": {c: simulated_url(u, simulator.base_url) for c, u in spec["endpoints"].items()},
        "api_key": sim_key(vendor),
        "options": {},
        "rate_limits_per_second": dict.fromkeys(spec["endpoints"], 500.0),
        "concurrency": 4,
        "timeout_seconds": 2.0,
        "max_attempts": 3,
        "prices_usd": spec["prices_usd"],
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
    }
    return FetchSettings(**{**values, **overrides})


class RecordedSleep:
    """Stands in for asyncio.sleep: records each wait and yields without waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


def fetch(
    tmp_path: Path, vendor: str, items: list[FetchItem], fetch_settings: FetchSettings, sleep=asyncio.sleep
) -> tuple[object, pd.DataFrame]:
    archive = PartitionArchive(tmp_path / f"{vendor}.duckdb", "web_search-2026-q3", vendor)
    try:
        stats = asyncio.run(fetch_partition(get_adapter(vendor), items, fetch_settings, archive, sleep=sleep))
        return stats, archive.frame()
    finally:
        archive.close()


def searches(n: int, prefix: str = "quarterly revenue") -> list[FetchItem]:
    return [FetchItem(f"q{i:03d}", "public", "search", f"{prefix} {i}") for i in range(n)]


def final_classes(vendor: str, raw: pd.DataFrame) -> dict[str, str]:
    adapter = get_adapter(vendor)
    out = {}
    for r in raw[raw["final"]].itertuples(index=False):
        status = None if pd.isna(r.http_status) else int(r.http_status)
        out[r.query_id] = classify_response(
            adapter, r.capability, status, json.loads(r.response_headers_json or "{}"), r.body, r.transport_error
        ).response_class
    return out


def assert_every_query_settled_once(raw: pd.DataFrame, items: list[FetchItem]) -> None:
    finals = raw[raw["final"]]
    assert sorted(finals["query_id"]) == sorted(i.query_id for i in items)  # exactly one final each
    last = raw.groupby("query_id")["attempt"].max()
    assert (finals.set_index("query_id")["attempt"] == last.loc[finals["query_id"]]).all()  # final = last attempt


def spend_matches_billing(vendor: str, raw: pd.DataFrame, simulator) -> None:
    ours = float(archived_spend(get_adapter(vendor), SPEC[vendor]["prices_usd"], raw).sum())
    billed = sum(b["usd"] for b in billing(simulator) if b["vendor"] == vendor)
    assert ours == pytest.approx(billed, abs=1e-9), (ours, billed)


# ##### RETRY-AFTER AND BOUNDED RETRIES


@pytest.mark.parametrize("kind, expected_wait", [("rate_limited", 7.0), ("rate_limited_http_date", 7.0)])
def test_retry_after_is_honoured_as_the_minimum_wait(tmp_path, simulator, faults, kind, expected_wait):
    faults({"retry_after_seconds": 7, "max_faults_per_request": 1, "vendors": {"brave": {kind: 1.0}}})
    sleep = RecordedSleep()
    items = searches(4)
    stats, raw = fetch(tmp_path, "brave", items, settings(simulator, "brave"), sleep=sleep)
    assert_every_query_settled_once(raw, items)
    assert set(final_classes("brave", raw).values()) == {"ok"}
    assert (raw.groupby("query_id").size() == 2).all()  # one 429, then the answer
    assert len(stats.waits) == 4
    # An HTTP-date has one-second resolution and is read a moment after it was written.
    assert all(expected_wait - 1.5 <= w <= expected_wait + 0.5 for w in stats.waits), stats.waits
    spend_matches_billing("brave", raw, simulator)


def test_no_retry_after_falls_back_to_bounded_backoff(tmp_path, simulator, faults):
    faults({"max_faults_per_request": 2, "vendors": {"brave": {"rate_limited_no_retry_after": 1.0}}})
    items = searches(3)
    stats, raw = fetch(
        tmp_path,
        "brave",
        items,
        settings(simulator, "brave", backoff_initial=0.5, backoff_max=3.0),
        sleep=RecordedSleep(),
    )
    assert (raw.groupby("query_id").size() == 3).all()
    assert set(final_classes("brave", raw).values()) == {"ok"}
    assert len(stats.waits) == 6 and all(0.5 <= w <= 3.0 for w in stats.waits), stats.waits


def test_a_retry_after_beyond_the_cap_ends_the_query_instead_of_waiting(tmp_path, simulator, faults):
    faults({"retry_after_seconds": 86_400, "vendors": {"brave": {"rate_limited": 1.0}}})
    sleep = RecordedSleep()
    items = searches(12)  # more than the concurrency: later queries start after earlier 429s
    stats, raw = fetch(
        tmp_path, "brave", items, settings(simulator, "brave", retry_after_max=60.0, concurrency=2), sleep=sleep
    )
    assert_every_query_settled_once(raw, items)
    assert len(raw) == 12  # one attempt each: asked to come back tomorrow, we stop
    assert set(final_classes("brave", raw).values()) == {"rate_limited"}
    # the query ends; it does not pause the endpoint for the queries after it
    assert stats.waits == [] and stats.pauses == [] and sleep.waits == []
    assert billing(simulator) == []


def test_a_long_retry_after_holds_neither_the_run_nor_the_probes_beside_it(tmp_path, simulator, faults):
    """Real time, real sleeps: a vendor asking for 600 s on every call (more than the 120 s the
    manifest allows by default) while a run's fetch and a sentinel probe call it at once, each
    with more queries than its concurrency. Both end within seconds, each query with one attempt;
    the old pause of 120 s per answer held them for minutes."""
    faults({"retry_after_seconds": 600, "vendors": {"serper": {"rate_limited": 1.0}}})
    run_items, probe_items = searches(16, "run"), searches(6, "probe")
    each = settings(simulator, "serper", concurrency=2)  # retry_after_max: the default, 120 s

    async def both() -> list:
        archives = [
            PartitionArchive(tmp_path / "serper.duckdb", "web_search-2026-q3", "serper"),
            PartitionArchive(tmp_path / "probes.duckdb", "web_search-2026-q3@probe", "serper"),
        ]
        try:
            await asyncio.wait_for(
                asyncio.gather(
                    fetch_partition(get_adapter("serper"), run_items, each, archives[0]),
                    fetch_partition(get_adapter("serper"), probe_items, each, archives[1]),
                ),
                timeout=30,
            )
            return [a.frame() for a in archives]
        finally:
            for a in archives:
                a.close()

    started = time.monotonic()
    run_raw, probe_raw = asyncio.run(both())
    assert time.monotonic() - started < 30
    for raw, items in ((run_raw, run_items), (probe_raw, probe_items)):
        assert_every_query_settled_once(raw, items)
        assert len(raw) == len(items)
        assert set(final_classes("serper", raw).values()) == {"rate_limited"}


@pytest.mark.parametrize(
    "kind, final_class",
    [
        ("rate_limited", "rate_limited"),
        ("rate_limited_http_date", "rate_limited"),
        ("rate_limited_no_retry_after", "rate_limited"),
        ("server_error", "server"),
        ("connection_reset", "server"),
        ("challenge", "blocked"),
        ("truncated", "malformed"),
        ("malformed", "malformed"),
        ("timeout", "timeout"),
    ],
)
def test_a_fault_that_never_clears_ends_after_max_attempts_with_its_class(
    tmp_path, simulator, faults, kind, final_class
):
    faults({"retry_after_seconds": 1, "hang_seconds": 3, "vendors": {"brave": {kind: 1.0}}})
    items = searches(3)
    stats, raw = fetch(
        tmp_path,
        "brave",
        items,
        settings(simulator, "brave", max_attempts=3, timeout_seconds=0.4),
        sleep=RecordedSleep(),
    )
    assert_every_query_settled_once(raw, items)
    assert (raw.groupby("query_id").size() == 3).all()  # bounded: exactly max_attempts
    assert set(final_classes("brave", raw).values()) == {final_class}
    # Brave bills per request: a billed response we could not read is charged at that price.
    spend_matches_billing("brave", raw, simulator)
    assert stats.spend_usd == pytest.approx(sum(b["usd"] for b in billing(simulator)), abs=1e-9)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_fault_is_survived_by_a_retry_and_billed_retries_are_spend(tmp_path, simulator, faults, kind):
    # Exa prices each call in its body (costDollars): a truncated body is charged like the same
    # query's readable answer. Search and extract both, so each capability is exercised.
    faults(
        {
            "retry_after_seconds": 1,
            "hang_seconds": 4,
            "slow_body_seconds": 0.3,
            "max_faults_per_request": 1,
            "vendors": {"exa": {kind: 1.0}},
        }
    )
    items = searches(3) + [
        FetchItem(f"x{i}", "public", "extract", url)
        for i, url in enumerate(
            ["https://investors.mirkawen.test/reports/q2-2026-results", "https://nope.test/missing"]
        )
    ]
    # a deadline well above a loaded machine's answer time (the retry is answered normally: a
    # 1 s deadline saw it time out under a full parallel suite), well below the hang
    _stats, raw = fetch(tmp_path, "exa", items, settings(simulator, "exa", timeout_seconds=2.5), sleep=RecordedSleep())
    assert_every_query_settled_once(raw, items)
    classes = final_classes("exa", raw)
    assert all(classes[i.query_id] in ("ok", "empty", "rejected") for i in items), classes
    expected_attempts = 1 if kind == "slow_body" else 2  # a slow body within the deadline is just slow
    assert (raw.groupby("query_id").size() == expected_attempts).all(), raw[["query_id", "attempt", "http_status"]]
    billed_calls = len(billing(simulator))
    assert billed_calls == len(items) * (2 if kind in ("truncated", "malformed") else 1)
    spend_matches_billing("exa", raw, simulator)


def test_a_body_that_drips_past_the_deadline_ends_as_a_timeout_and_is_billed(tmp_path, simulator, faults):
    faults({"slow_body_seconds": 5, "vendors": {"brave": {"slow_body": 1.0}}})
    items = searches(2)
    _stats, raw = fetch(tmp_path, "brave", items, settings(simulator, "brave", max_attempts=1, timeout_seconds=0.5))
    assert_every_query_settled_once(raw, items)
    assert set(final_classes("brave", raw).values()) == {"timeout"}
    assert (raw["http_status"] == 200).all() and raw["transport_error"].str.contains("after headers").all()
    spend_matches_billing("brave", raw, simulator)  # the vendor sent a 200: it bills it


def test_an_enforced_rate_limit_is_not_exceeded_by_our_pacing(tmp_path, simulator, faults):
    faults({"vendors": {"brave": {"rate_limit_per_second": 40}}})
    items = searches(30)
    _stats, raw = fetch(
        tmp_path, "brave", items, settings(simulator, "brave", rate_limits_per_second={"search": 40.0}, concurrency=8)
    )
    assert (raw["http_status"] == 200).all() and len(raw) == 30  # no 429: evenly paced at the limit
    injected = httpx.get(f"{simulator.base_url}/_sim/faults", timeout=5).json()["injected"]
    assert injected == []


# ##### THE FAULT PLAN AS INPUT


def test_the_same_request_meets_the_same_faults_and_a_retry_is_a_new_draw():
    plan = FaultPlan(vendors={"exa": dict.fromkeys(FAULT_KINDS, 0.09)})
    draws = [plan.choose("exa", f"key{i}", 1) for i in range(400)]
    assert draws == [plan.choose("exa", f"key{i}", 1) for i in range(400)]
    assert set(draws) == set(FAULT_KINDS) | {None}
    assert [plan.choose("exa", f"key{i}", 2) for i in range(400)] != draws
    assert plan.choose("brave", "key1", 1) is None  # no entry, no "*": no faults


@pytest.mark.parametrize(
    "text, field",
    [
        ('{"vendors": {"exa": {"timeout": 1.5}}}', "vendors.exa.timeout"),
        ('{"vendors": {"exa": {"timeout": 0.6, "truncated": 0.6}}}', "vendors.exa"),
        ('{"vendors": {"acme": {}}}', "vendors"),
        ('{"vendors": {"exa": {"tiemout": 0.1}}}', "vendors.exa.tiemout"),
        ('{"hang_seconds": -1}', "hang_seconds"),
        ('{"vendors": {"exa": ', "<json>"),
        ("[1, 2]", "<plan>"),
    ],
)
def test_a_malformed_fault_plan_names_the_variable_and_field(text, field):
    with pytest.raises(BenchInputError) as err:
        fault_plan_from_env({"BENCH_SIM_FAULTS": text})
    assert f"$BENCH_SIM_FAULTS: field '{field}'" in str(err.value)


def test_the_control_endpoint_rejects_a_bad_plan_and_keeps_the_old_one(simulator, faults):
    faults({"vendors": {"exa": {"timeout": 0.25}}})
    response = httpx.post(f"{simulator.base_url}/_sim/faults", content=b'{"vendors": {"exa": {"timeout": 2}}}')
    assert response.status_code == 400 and "vendors.exa.timeout" in response.json()["error"]
    plan = httpx.get(f"{simulator.base_url}/_sim/faults").json()["plan"]
    assert plan["vendors"]["exa"]["timeout"] == 0.25


def test_retry_after_parses_seconds_and_http_dates():
    from datetime import datetime

    now = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "120"}, now) == 120.0
    assert retry_after_seconds({"retry-after": "Wed, 01 Jul 2026 12:00:30 GMT"}, now) == 30.0
    assert retry_after_seconds({"retry-after": "Wed, 01 Jul 2026 11:00:00 GMT"}, now) == 0.0  # in the past
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None
    assert parse_fault_plan("{}", "x") == FaultPlan()


@pytest.mark.parametrize("vendor", ["brave", "serpapi", "exa"])  # GET, GET, POST
def test_every_request_on_the_wire_is_an_archived_attempt_and_resets_never_pass_max_attempts(
    tmp_path, simulator, faults, vendor
):
    """A connection reset before the answer: the simulator's log of injected faults counts the
    requests that reached it. aiohttp used to re-send a GET once by itself after a reset, so the
    first try was never archived and a query went out up to twice max_attempts times."""
    faults({"vendors": {vendor: {"connection_reset": 1.0}}})
    items = searches(4)
    _stats, raw = fetch(tmp_path, vendor, items, settings(simulator, vendor, max_attempts=3), sleep=RecordedSleep())
    assert_every_query_settled_once(raw, items)
    on_the_wire = httpx.get(f"{simulator.base_url}/_sim/faults", timeout=5).json()["injected"]
    assert {f["fault"] for f in on_the_wire} == {"connection_reset"}
    assert len(on_the_wire) == len(raw) == 3 * len(items)  # each one archived, none beyond max_attempts
    assert raw["transport_error"].str.startswith("connection_error: ").all()
    assert set(final_classes(vendor, raw).values()) == {"server"}


def test_only_the_requests_of_a_vendor_a_plan_covers_are_counted():
    """A snapshot at scale sends hundreds of thousands of distinct requests: a simulator with no
    faults planned for a vendor keeps nothing per request of it (it counted every one, held for
    the simulator's life). Under a plan, a request's attempts are counted as before."""
    from starlette.testclient import TestClient

    from bench_assets.simulator.app import build_app, create_simulator

    sim = create_simulator(pages_per_stratum=2, latency_scale=0.0)
    search = {
        "url": "/h/api.exa.ai/search",
        "json": {"query": "quarterly revenue"},
        "headers": {"x-api-key": sim_key("exa")},
    }
    with TestClient(build_app(sim), base_url="http://sim") as client:
        assert client.post(**search).status_code == 200
        assert sim.faults.attempts == {}
        sim.faults.set_plan(
            parse_fault_plan('{"max_faults_per_request": 0, "vendors": {"exa": {"timeout": 1.0}}}', "t")
        )
        for _ in range(2):
            assert client.post(**search).status_code == 200  # faults capped at none: served, but counted
        sim.faults.set_plan(FaultPlan())
        assert client.post(**search).status_code == 200
    assert list(sim.faults.attempts.values()) == [2]
