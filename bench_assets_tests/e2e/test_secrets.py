"""A live key never reaches DuckDB, Dagster's logs, the private review packets or a published file;
and what `bench estimate` promised before that live run is what the vendors billed.

One live run, through to publication, serves both (a module fixture): recognisable keys in the
environment (read through dg.EnvVar from the variables the manifest names), the manifest in `live`
mode with endpoints on a simulator that accepts those keys, and every vendor, so every way a key
travels is covered: a header of its own (Exa's and Parallel's x-api-key, Serper's X-API-KEY,
You.com's X-API-Key, Brave's X-Subscription-Token), a query parameter (SerpApi's api_key),
`Authorization: Bearer` (Tavily, Firecrawl, Perplexity, Linkup, and Jina, whose Reader fetches the
extract rows) and `Authorization: Bot` (Kagi); and every unit a vendor bills (requests, credits,
results, tokens). Before anything is called, the operator's estimate (`bench estimate --json`,
the real command) is taken. The vendors' first try has a key with a trailing newline, the
commonest .env mistake, which must be refused before anything is sent. A live snapshot publishes
only after the vendor-review period, so the review packets are sent (materialized for real) and
then dated back beyond the ten US business days the gate asks for; publication must then succeed
and write the site. Then every table of every DuckDB file, every file under the Dagster home
(event logs, compute logs), every file under data/ (private store, published site) and the run's
captured output are searched for the keys and the split secret; and the estimate is held to the
simulated vendors' billing log (test_spend.py's docstring says why and how closely).

The smaller tests hold the two guards on their own: a key that would not travel as it is is
refused when it is read, and whatever a vendor or the transport echoes of a key is scrubbed
before it is archived.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from urllib.parse import quote, quote_plus

import dagster as dg
import duckdb
import httpx
import pytest
import yaml

from bench_assets.adapters import available_adapters, get_adapter
from bench_assets.adapters.base import VendorTask, scrub_secrets
from bench_assets.cli import main as cli
from bench_assets.defs.resources import BenchPaths, VendorGateway, VendorKeys, vendor_keys_from_env
from bench_assets.defs.review import FREEZE_CONFIG
from bench_assets.errors import BenchInputError
from bench_assets.fetch.engine import FetchItem, FetchSettings, fetch_partition
from bench_assets.manifest import load_manifest
from bench_assets.review.business_days import add_business_days, business_days_between
from bench_assets.simulator.app import simulated_url
from bench_assets.simulator.server import start_simulator
from bench_assets.split.leaks import parquet_readings
from bench_assets.storage.archive import PartitionArchive
from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    assets,
    make_home,
    register_partitions,
    vendor_key,
    warehouse_rows,
)
from bench_assets_tests.helpers import resources as bench_resources

# What the live-key and the spend claims need: every adapter (each sends its key its own way, and any
# of them could echo it where the others do not; each bills its own unit: requests, credits, results,
# tokens), one configuration each (a mode changes the request's options and the price, not where the
# key goes nor how the bill is counted: test_configurations bills two modes of one provider); and two
# pages a stratum (`rows_per_stratum=6` below), the fewest at which the split secret draws a holdout
# and decoys, so the secret is at work, the review packets hold holdout aggregates to be searched, and
# the holdout's and the decoys' calls are estimated and billed too.
VENDORS = sorted(available_adapters())  # every vendor there is

# Every vendor, so every way a key is sent (see the module docstring).
KEYS = {
    "exa": "exa-PLANTED-9f3c1d2e7a4b",
    "serpapi": "serpapi-PLANTED-5e8a0b6c2d1f",
    "tavily": "tvly-PLANTED-3b7e1a9c4d20",
    "firecrawl": "fc-PLANTED-8d2c6f0a1e5b",
    "jina": "jina_PLANTED-4f1a7c3e9b62",
    "kagi": "kagi-PLANTED-2e9d5b8a0c7f",
    "serper": "serper-PLANTED-7c0e4b9d2a5f",
    "brave": "brave-PLANTED-1d6f8a3c0e9b",
    "youcom": "ydc-PLANTED-6a2e9c4f1b8d",
    "parallel": "par-PLANTED-0b5d7e2a9c3f",
    "linkup": "lnk-PLANTED-9e3a1c6f4d0b",
    "perplexity": "pplx-PLANTED-4c8b2f7e0a1d",
    "keenable": "keen_PLANTED-5b1e8d3f7a2c",
    "valyu": "val_PLANTED-8f2a6c0d4e9b",
}
SPLIT_KEY = "split-PLANTED-0c4e9a7b31d5"


USAGE_BILLED = {"jina"}  # bills usage (tokens) no one knows before the call
RESULT_BILLED = {"valyu"}  # bills each result returned: the estimate (a full page) is the most it bills
# Bills whole credits for every fifth successful URL of a key (Tavily extract): the estimate is the
# per-URL average, so the bill is within one block of it, wherever the key's count stood.
AMORTISED = {"tavily": 1 * 0.008}


def decoy_calls_and_spend(home, vendor: str) -> tuple[dict[str, int], float]:
    """Decoy queries are sent and billed like any other, but never scored: read them from the archive."""
    from bench_assets.fetch.spend import archived_spend

    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        raw = con.execute("SELECT * FROM raw_responses WHERE vendor = ? AND role = 'decoy'", [vendor]).df()
    finally:
        con.close()
    if raw.empty:
        return {}, 0.0
    spec = manifest.vendors[vendor]
    spend = float(archived_spend(get_adapter(spec.adapter), spec.prices_usd, raw).sum())
    calls = raw[raw["final"]].groupby("capability").size().to_dict()
    return {k: int(v) for k, v in calls.items()}, spend


def bench_estimate_printed(home) -> str:
    """What `bench estimate SNAPSHOT --json`, the real command, prints for the bench home."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(out):
        env.setenv("BENCH_HOME", str(home))
        env.delenv("BENCH_PRIVATE_DIR", raising=False)
        assert cli.main(["estimate", SNAPSHOT, "--json"]) == 0
    return out.getvalue()


def failure_text(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    data = failure.event_specific_data
    return (data.user_failure_data.description if data.user_failure_data else None) or data.error.message


def all_text_in_duckdb(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        chunks = []
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            chunks.append(con.execute(f"SELECT CAST(COLUMNS(*) AS VARCHAR) FROM {table}").df().to_csv())
        return "\n".join(chunks)
    finally:
        con.close()


def send_packets_dated_back(instance, resources: dict, home: Path, manifest: dict) -> date:
    """Send the snapshot's review packets (it freezes), then date them back past the review period
    the manifest sets, as if sent then: what a live snapshot needs before it may publish."""
    assert dg.materialize(
        assets("vendor_leaderboard", "review_packets"),
        instance=instance,
        partition_key=SNAPSHOT,
        resources=resources,
        run_config=FREEZE_CONFIG,
    ).success
    business_days = manifest.get("review", {}).get("business_days", 10)
    return date_packets_back(home / "data" / "warehouse" / "bench.duckdb", SNAPSHOT, business_days)


def date_packets_back(warehouse_file: Path, snapshot_id: str, business_days: int) -> date:
    """Move the review packets' send date (and the freeze it logged) back to a day at least
    `business_days` US business days before today: as if they had been sent then. Thirty calendar
    days back always holds at least ten business days, whatever the holidays."""
    today = datetime.now(UTC).date()
    sent_on = today - timedelta(days=30)
    assert business_days_between(sent_on, today) >= business_days
    with Warehouse(warehouse_file).connect() as con:
        con.execute(
            "UPDATE review_packets SET sent_on = ?, opens_on = ? WHERE snapshot_id = ?",
            [sent_on, add_business_days(sent_on, business_days), snapshot_id],
        )
        con.execute(
            "UPDATE snapshot_lifecycle SET changed_at = ? WHERE snapshot_id = ? AND status = 'frozen'",
            [datetime.combine(sent_on, time(12), tzinfo=UTC), snapshot_id],
        )
    return sent_on


@contextlib.contextmanager
def output_sent_to(path: Path):
    """Everything the process writes to stdout and stderr goes to `path` while the block runs, as
    capfd takes it for a test: at the file descriptors (C code, child processes) and through
    sys.stdout/sys.stderr (Python, Dagster's console log). capfd is per test; the live run is a
    module fixture, so it captures its output itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    with path.open("wb", buffering=0) as sink:
        text = io.TextIOWrapper(sink, encoding="utf-8", errors="replace", newline="", write_through=True)
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        try:
            for fd in saved:
                os.dup2(sink.fileno(), fd)
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield
        finally:
            text.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            text.detach()  # the sink is closed by its own `with`


@dataclass(frozen=True)
class LiveRun:
    """What the live run left, and what it recorded on the way for the tests to assert."""

    home: Path
    dagster_home: Path
    manifest: dict  # as the vendors were called: live mode, endpoints on the keyed simulator
    key_envs: dict[str, str]  # vendor -> the variable the manifest names for its key
    estimate: dict  # `bench estimate --json`, before anything was called
    estimate_printed: str
    billed_before_the_run: list[dict]  # the billing log right after the estimate
    refusal: str  # the failure of the try with a trailing newline in Exa's key
    refused_exa_archived: bool
    sent_after_the_refusal: list[dict]  # Exa's requests in the simulator's log right after that try
    sent_on: date  # the review packets' send date, moved back past the review period
    billing: list[dict]  # the simulated vendors' billing log after the run
    output: str  # stdout and stderr of the whole run, fd and Python level
    probes: tuple[str, str]  # written to fd 1 and sys.stderr inside the capture: it holds both levels

    @property
    def billed(self) -> dict[str, float]:
        billed: dict[str, float] = defaultdict(float)
        for entry in self.billing:
            billed[entry["vendor"]] += entry["usd"]
        return dict(billed)


@pytest.fixture(scope="module")
def keyed_simulator():
    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0.05", "BENCH_SIM_EXTRA_KEYS": json.dumps(KEYS)})
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def live_run(tmp_path_factory, keyed_simulator) -> LiveRun:
    """One live run of every vendor through to publication, for the key claims and the spend claims
    (each vendor sends its key its own way and bills its own unit, so both need all of them)."""
    sim = keyed_simulator.base_url
    tmp = tmp_path_factory.mktemp("live")
    home = make_home(tmp / "home", list(KEYS), rows_per_stratum=6)
    manifest_path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    dagster_home = tmp / "dagster_home"
    dagster_home.mkdir()
    captured = tmp / "output.txt"
    probes = ("fd-1-probe-7d1c", "sys-stderr-probe-3a9e")
    httpx.post(f"{sim}/_sim/reset", timeout=5)
    with pytest.MonkeyPatch.context() as env, output_sent_to(captured):
        os.write(1, probes[0].encode())
        sys.stderr.write(probes[1])
        env.setenv("BENCH_SPLIT_KEY", SPLIT_KEY)
        key_envs = {
            vendor: spec["key_env"] for vendor, spec in yaml.safe_load(manifest_path.read_text())["vendors"].items()
        }
        for vendor, key in KEYS.items():
            env.setenv(key_envs[vendor], key)
        # The operator's estimate first, before anything is called (the split key set, as the run has it).
        estimate_printed = bench_estimate_printed(home)
        billed_before_the_run = httpx.get(f"{sim}/_sim/billing", timeout=5).json()
        with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
            register_partitions(instance, [SNAPSHOT])
            resources = {**bench_resources(home, sim), "vendor_keys": vendor_keys_from_env(home / "data" / "snapshots")}
            # Golden stages verify the planted pages through the simulator (simulated mode) ...
            assert dg.materialize(
                assets(*GOLDEN_STAGES), instance=instance, partition_key=SNAPSHOT, resources=resources
            ).success
            # ... then the vendors are called as in a live run: real keys, endpoints given in the manifest.
            data = yaml.safe_load(manifest_path.read_text())
            data["mode"] = "live"
            for spec in data["vendors"].values():
                spec["endpoints"] = {cap: simulated_url(url, sim) for cap, url in spec["endpoints"].items()}
            manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
            # First try: a key with a trailing newline, as a careless .env gives it (asserted below).
            env.setenv(key_envs["exa"], KEYS["exa"] + "\n")
            refused = dg.materialize(
                assets(*VENDOR_STAGES),
                instance=instance,
                partition_key=vendor_key("exa"),
                resources=resources,
                raise_on_error=False,
            )
            assert not refused.success
            refusal = failure_text(refused)
            refused_exa_archived = (
                Warehouse(home / "data" / "warehouse" / "bench.duckdb").partition_file(SNAPSHOT, "exa").exists()
            )
            sent_after_the_refusal = [
                r for r in httpx.get(f"{sim}/_sim/requests", timeout=5).json() if r["vendor"] == "exa"
            ]
            env.setenv(key_envs["exa"], KEYS["exa"])  # fixed, and the run goes on
            for vendor in KEYS:
                assert dg.materialize(
                    assets(*VENDOR_STAGES), instance=instance, partition_key=vendor_key(vendor), resources=resources
                ).success
            # The review packets go out (the snapshot freezes), and are dated back past the review period.
            sent_on = send_packets_dated_back(instance, resources, home, data)
            assert dg.materialize(
                assets("published_snapshot"), instance=instance, partition_key=SNAPSHOT, resources=resources
            ).success
        billing = httpx.get(f"{sim}/_sim/billing", timeout=5).json()
    return LiveRun(
        home=home,
        dagster_home=dagster_home,
        manifest=data,
        key_envs=key_envs,
        estimate=json.loads(estimate_printed),
        estimate_printed=estimate_printed,
        billed_before_the_run=billed_before_the_run,
        refusal=refusal,
        refused_exa_archived=refused_exa_archived,
        sent_after_the_refusal=sent_after_the_refusal,
        sent_on=sent_on,
        billing=billing,
        output=captured.read_bytes().decode("utf-8", "replace"),
        probes=probes,
    )


# ##### THE KEYS


def test_every_vendor_is_played_with_the_variable_its_manifest_names(live_run):
    assert set(live_run.key_envs) == set(KEYS) == set(VENDORS)  # every vendor there is


def test_a_key_with_a_trailing_newline_is_refused_before_anything_is_sent(live_run):
    """Naming the variable and never the value; nothing archived, no request made."""
    exa_env = live_run.key_envs["exa"]
    assert f"${exa_env}: field '{exa_env}'" in live_run.refusal and "trailing" in live_run.refusal, live_run.refusal
    assert KEYS["exa"] not in live_run.refusal
    assert not live_run.refused_exa_archived
    assert live_run.sent_after_the_refusal == []


def test_live_keys_never_reach_storage_logs_or_published_files(live_run):
    home, data = live_run.home, live_run.manifest
    out = home / "data" / "publish" / SNAPSHOT
    assert (out / "index.html").is_file() and (out / "leaderboard.json").is_file()
    review = json.loads((out / "review.json").read_text())
    assert review["status"] == "published"
    assert {v["packet_sent_on"] for v in review["vendors"].values()} == {live_run.sent_on.isoformat()}
    published_files = [p for p in out.rglob("*") if p.is_file()]
    assert len(published_files) > 20

    warehouse = home / "data" / "warehouse"
    ok = warehouse_rows(
        home, "SELECT vendor, capability, count(*) FROM raw_responses WHERE http_status = 200 AND final GROUP BY 1, 2"
    )
    [(redacted,)] = warehouse_rows(home, "SELECT count(*) FROM raw_responses WHERE request_json LIKE '%<redacted>%'")
    [(status,)] = warehouse_rows(home, "SELECT status FROM snapshots WHERE snapshot_id = ?", [SNAPSHOT])
    # the keys worked: every vendor answered on every endpoint it has (Jina's Reader included)
    answered = {(v, c) for v, c, n in ok if n > 0}
    assert answered == {(v, c) for v in KEYS for c in data["vendors"][v]["endpoints"]}
    assert ("jina", "extract") in answered
    assert redacted > 0 and status == "published"

    haystacks: dict[str, str] = {}
    for db in warehouse.rglob("*.duckdb"):
        haystacks[str(db)] = all_text_in_duckdb(db)
    for path in list(live_run.dagster_home.rglob("*")) + list((home / "data").rglob("*")):
        if path.is_file() and path.suffix == ".parquet":  # the evidence bundle: compressed, so read its cells
            haystacks[str(path)] = "\n".join(parquet_readings(path.read_bytes()))
        elif path.is_file() and path.suffix != ".duckdb":
            haystacks[str(path)] = path.read_bytes().decode("utf-8", "replace")
    # The run's captured output: it holds what was written at both levels, and Dagster's console log.
    assert all(probe in live_run.output for probe in live_run.probes)
    assert "STEP_SUCCESS" in live_run.output and "RUN_SUCCESS" in live_run.output
    haystacks["stdout/stderr"] = live_run.output
    haystacks["bench estimate --json"] = live_run.estimate_printed
    assert all(str(p) in haystacks for p in published_files)  # the published site is scanned, file by file
    assert any("/private/review/" in where for where in haystacks)  # so are the review packets
    secrets = {**KEYS, "split key": SPLIT_KEY}
    leaks = [(where, name) for where, text in haystacks.items() for name, key in secrets.items() if key in text]
    assert leaks == []
    assert len(haystacks) > 10


# ##### THE SAME RUN'S BILL (what test_spend.py's module docstring promises)


def test_the_estimate_made_before_the_run_is_what_the_simulated_vendors_bill(live_run):
    home, billed, estimate = live_run.home, live_run.billed, live_run.estimate
    assert live_run.billed_before_the_run == []  # the estimate called nothing
    by_vendor = {e["vendor"]: e for e in estimate["vendors"]}
    assert set(by_vendor) == set(VENDORS) and estimate["decoy_calls"]  # decoys are estimated too
    sent = warehouse_rows(home, "SELECT vendor, capability, count(*) FROM raw_responses WHERE final GROUP BY 1, 2")
    calls: dict[str, dict[str, int]] = defaultdict(dict)
    for vendor, capability, n in sent:
        calls[vendor][capability] = n
    for vendor in VENDORS:
        est = by_vendor[vendor]
        assert est["calls"] == calls[vendor], vendor  # every query, holdout and decoy the run sent
        assert not est["unpriced_units"] and est["within_ceiling"], vendor
        if vendor in USAGE_BILLED:
            continue
        if vendor in AMORTISED:
            assert est["caveat"] and "fifth" in est["caveat"]
            assert abs(billed[vendor] - est["usd"]) <= AMORTISED[vendor] + 1e-9, (vendor, billed[vendor], est["usd"])
            continue
        if vendor in RESULT_BILLED:
            assert est["caveat"] and "result" in est["caveat"]
            assert 0 < billed[vendor] <= est["usd"] + 1e-9, (vendor, billed[vendor], est["usd"])
            continue
        assert est["caveat"] is None
        assert billed[vendor] == pytest.approx(est["usd"], rel=1e-9, abs=1e-9), (vendor, billed[vendor], est["usd"])
    assert estimate["total_usd"] == pytest.approx(sum(e["usd"] for e in estimate["vendors"]))


def test_jinas_bill_lies_between_its_documented_minimum_and_the_estimate(live_run):
    home, billed, estimate, billing = live_run.home, live_run.billed, live_run.estimate, live_run.billing
    jina = next(e for e in estimate["vendors"] if e["vendor"] == "jina")
    price = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").vendors["jina"].prices_usd["token"]
    assert "tokens" in jina["caveat"]  # the estimate says what it assumes
    adapter = get_adapter("jina")
    minimum = jina["calls"]["search"] * adapter.SEARCH_MIN_TOKENS_PER_10 * price  # a search bills at least this
    assert minimum <= billed["jina"] <= jina["usd"]
    # The estimate's assumption holds call by call: no call billed more tokens than it figured.
    figured = {cap: adapter.expected_units(VendorTask(cap, "", 10), {})["token"] for cap in ("search", "extract")}
    calls = [b for b in billing if b["vendor"] == "jina"]
    assert len(calls) == sum(jina["calls"].values())
    assert all(0 < b["units"]["token"] <= figured[b["endpoint"]] for b in calls)


def test_published_spend_equals_the_billing_log(live_run):
    home, billed = live_run.home, live_run.billed
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    assert {e["vendor"] for e in scored} == set(VENDORS)
    for e in scored:
        _, decoy_spend = decoy_calls_and_spend(home, e["vendor"])
        published = e["metrics"]["spend_usd"]["value"]
        assert published + decoy_spend == pytest.approx(billed[e["vendor"]], abs=1e-6), e["vendor"]


# ##### THE TWO GUARDS ON THEIR OWN


@pytest.mark.parametrize(
    "value, problem",
    [
        ("exa-PLANTED-9f3c1d2e7a4b\n", "trailing"),
        ("exa-PLANTED-9f3c1d2e7a4b\r\n", "trailing"),
        (" exa-PLANTED-9f3c1d2e7a4b", "leading"),
        ("exa-PLANTED-9f3c1d2e7a4b\x7f", "U+007F"),
        ("exa-PLANTED\t9f3c1d2e7a4b", "U+0009"),
    ],
)
def test_a_key_that_would_not_travel_as_it_is_is_refused_naming_the_variable_only(value, problem, monkeypatch):
    monkeypatch.setenv("EXA_TEAM_B_KEY", value)
    keys = vendor_keys_from_env()  # no manifest names EXA_TEAM_B_KEY: not bound
    assert "EXA_TEAM_B_KEY" not in keys.by_env
    keys = VendorKeys(by_env={"EXA_TEAM_B_KEY": dg.EnvVar("EXA_TEAM_B_KEY")})
    with pytest.raises(BenchInputError) as refused:  # an asset's step fails with it as a dg.Failure
        VendorGateway(simulator_url="http://127.0.0.1:1").api_key("exa", "live", keys, key_env="EXA_TEAM_B_KEY")
    message = str(refused.value)
    assert message.startswith("$EXA_TEAM_B_KEY: field 'EXA_TEAM_B_KEY': the API key for exa") and problem in message
    assert "PLANTED" not in message


def test_the_key_comes_from_the_variable_the_manifest_names(tmp_path, monkeypatch):
    home = make_home(tmp_path, ["exa", "kagi"], edit=lambda d: d["vendors"]["exa"].update(key_env="EXA_TEAM_B_KEY"))
    monkeypatch.setenv("EXA_TEAM_B_KEY", KEYS["exa"])
    monkeypatch.setenv("EXA_API_KEY", "the-default-variable-is-not-read")
    monkeypatch.delenv("KAGI_API_KEY", raising=False)
    keys = vendor_keys_from_env(home / "data" / "snapshots")
    # bound with dg.EnvVar: the resource's config holds the variable's name, never its value
    config = repr(keys.get_resource_definition().config_schema.default_value)
    assert "EXA_TEAM_B_KEY" in config and KEYS["exa"] not in config
    manifest = BenchPaths(root=str(home)).manifest(SNAPSHOT)
    gateway = VendorGateway(simulator_url="http://127.0.0.1:1")
    exa, kagi = manifest.vendors["exa"], manifest.vendors["kagi"]
    assert exa.key_env == "EXA_TEAM_B_KEY" and kagi.key_env == "KAGI_API_KEY"  # the default name
    assert keys.process_config_and_initialize().key_in("EXA_TEAM_B_KEY") == KEYS["exa"]  # as a run resolves it
    assert gateway.api_key("exa", "live", keys, key_env=exa.key_env) == KEYS["exa"]
    with pytest.raises(
        BenchInputError, match=r"\$KAGI_API_KEY: field 'KAGI_API_KEY': no API key for kagi in live mode"
    ):
        gateway.api_key("kagi", "live", keys, key_env=kagi.key_env)
    assert gateway.api_key("kagi", "simulated", keys, key_env=kagi.key_env) == "sim-kagi-key"  # no key needed


@pytest.mark.parametrize(
    "text, expected",
    [
        # httpx refusing a header with a newline quotes the header, key and all
        (
            f"connection_error: LocalProtocolError: Illegal header value b'Bearer {KEYS['tavily']}\\n'",
            "connection_error: LocalProtocolError: Illegal header value b'Bearer <redacted>'",
        ),
        (f'{{"error": "Invalid key {KEYS["tavily"]}"}}', '{"error": "Invalid key <redacted>"}'),
        (
            f"GET /search?api_key={quote(KEYS['serpapi'] + '/x', safe='').lower()}&q=a",
            "GET /search?api_key=<redacted>&q=a",
        ),
        (f"a message cut short after {KEYS['tavily'][:9]}", "a message cut short after <redacted>"),
        ("nothing secret here, tvly-", "nothing secret here, tvly-"),
        (None, None),
    ],
)
def test_scrub_secrets_replaces_every_form_of_a_key(text, expected):
    assert scrub_secrets(text, [KEYS["tavily"] + "\n", KEYS["serpapi"] + "/x"]) == expected


def test_what_a_vendor_or_the_transport_echoes_of_the_key_is_archived_scrubbed(tmp_path):
    """A key in the URL (SerpApi's api_key) echoed back in an error body, a header and a success
    body, and quoted by a transport error: the archive keeps the evidence, not the key."""
    key = "serpapi+PLANTED/5e8a=0b6c"  # characters that URL-encoding changes

    def vendor(request: httpx.Request) -> httpx.Response:
        q = request.url.params["q"]
        if q == "echoes in an error":
            return httpx.Response(
                401, headers={"x-echo": key}, json={"error": f"Invalid API key: {key}. Request: {request.url}"}
            )
        if q == "breaks the transport":
            raise httpx.LocalProtocolError(f"Illegal header value b'{key}\\n'")
        return httpx.Response(
            200,
            json={
                "search_metadata": {"id": "s1", "status": "Success"},
                "search_parameters": {"api_key": key, "q": q},
                "organic_results": [{"position": 1, "link": "https://a.test/", "title": "A"}],
            },
        )

    items = [
        FetchItem(f"q{i}", "public", "search", text)
        for i, text in enumerate(["echoes in an error", "breaks the transport", "answers"])
    ]
    settings = FetchSettings(
        endpoints={"search": "https://serpapi.com/search"},
        api_key=key,
        options={},
        rate_limits_per_second={"search": 100.0},
        concurrency=2,
        timeout_seconds=5,
        max_attempts=1,
        prices_usd={"request.search": 0.015},
    )
    archive = PartitionArchive(tmp_path / "serpapi.duckdb", SNAPSHOT, "serpapi")
    try:
        asyncio.run(
            fetch_partition(get_adapter("serpapi"), items, settings, archive, transport=httpx.MockTransport(vendor))
        )
        raw = archive.frame().set_index("query_id")
    finally:
        archive.close()
    archived = raw.to_csv()
    # as sent, every URL encoding (httpx's and aiohttp's leave "/" raw), and as httpx put it in the echoed URL
    assert all(form not in archived for form in (key, quote(key, safe=""), quote_plus(key), quote(key)))
    assert "<redacted>" in raw.loc["q0", "body"] and "<redacted>" in raw.loc["q0", "response_headers_json"]
    assert (
        raw.loc["q1", "transport_error"]
        == "connection_error: LocalProtocolError: Illegal header value b'<redacted>\\n'"
    )
    assert json.loads(raw.loc["q0", "request_json"])["params"]["api_key"] == "<redacted>"
    body = raw.loc["q2", "body"]
    assert raw.loc["q2", "body_sha256"] == hashlib.sha256(body.encode()).hexdigest()  # the hash of what is kept
    parsed = get_adapter("serpapi").parse(VendorTask("search", "answers"), 200, {}, body)
    assert [r.url for r in parsed.results] == ["https://a.test/"]  # the evidence still reads
