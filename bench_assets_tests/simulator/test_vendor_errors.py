"""Every vendor's failure answers, as the simulator sends them and as our adapters, the official
SDKs and the fetch engine read them: out of credit, injected 429s and 500s, and keys.

Out of credit: each vendor has a simulated account balance (unlimited unless set with
`POST /_sim/credits`), every billed call draws on it, and once it is used up the vendor answers
with its own documented out-of-credit response (Exa 402 NO_MORE_CREDITS, Tavily 432, Serper 400
"Not enough credits", SerpApi and Linkup 429, Kagi 400 with code 101, …). Our adapter must class
it `quota`, the vendor's SDK must raise its own error for it, and the fetch engine must record it
as `quota` evidence after one attempt instead of retrying what no retry can fix.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from functools import lru_cache
from pathlib import Path

import httpx
import pytest
import yaml

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import VendorTask
from bench_assets.fetch.classify import classify_response
from bench_assets.fetch.engine import FetchItem, FetchSettings, fetch_partition
from bench_assets.golden.planted import build_corpus
from bench_assets.simulator.app import build_app, create_simulator, sim_key, simulated_url
from bench_assets.simulator.profiles import PROFILES
from bench_assets.storage.archive import PartitionArchive
from bench_assets_tests.helpers import (
    DEMO_MANIFEST,
    SNAPSHOT,
)
from bench_assets_tests.simulator.vendor_contract import sdk_base_url

SPEC = yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]
VENDORS = sorted(PROFILES)
# A simulated vendor the demo does not run is called as its adapter's MANIFEST_DEFAULTS pin it.
for _vendor in VENDORS:
    if _vendor not in SPEC:
        SPEC[_vendor] = importlib.import_module(f"bench_assets.adapters.{_vendor}").MANIFEST_DEFAULTS
CALLS = [(v, cap) for v in VENDORS for cap in sorted(SPEC[v]["endpoints"])]

# Each vendor's documented out-of-credit answer: HTTP status, and what its body says.
OUT_OF_CREDIT = {
    "exa": (402, lambda b: b["tag"] == "NO_MORE_CREDITS" and set(b) == {"requestId", "error", "tag"}),
    "tavily": (432, lambda b: "usage limit" in b["detail"]["error"]),
    "brave": (429, lambda b: b["error"]["code"] == "RATE_LIMITED" and b["error"]["meta"]["quota_current"] >= 2000),
    "serper": (400, lambda b: b == {"message": "Not enough credits", "statusCode": 400}),
    "serpapi": (429, lambda b: "run out of searches" in b["error"]),
    "jina": (402, lambda b: b["name"] == "InsufficientBalanceError" and b["code"] == 402),
    "firecrawl": (402, lambda b: b["success"] is False and "Insufficient credits" in b["error"]),
    "perplexity": (401, lambda b: b["error"]["type"] == "insufficient_quota"),
    "linkup": (429, lambda b: b["statusCode"] == 429 and b["error"]["code"] == "INSUFFICIENT_FUNDS_CREDITS"),
    "parallel": (402, lambda b: b["type"] == "error" and b["error"]["ref_id"]),
    "youcom": (402, lambda b: b["error"] == "payment_required"),
    "kagi": (400, lambda b: b["data"] is None and b["error"][0]["code"] == 101),
    "valyu": (402, lambda b: b == {"message": "Insufficient credits"}),
    "keenable": (402, lambda b: bool(b["message"])),
}


FIXTURES = Path(__file__).parent.parent / "fixtures" / "vendors"
# (vendor, status, class) with no recorded body: SerpApi's recorded server error is a 503; Brave's
# out-of-quota 429 and its 5xx bodies are not published (fixtures/vendors/brave/SOURCES.md).
# Valyu publishes no 429 or 5xx body; Keenable no 402 or 5xx body (their SOURCES.md).
NO_FIXTURE = {
    ("serpapi", 500, "server"),
    ("brave", 429, "quota"),
    ("brave", 500, "server"),
    ("valyu", 429, "rate_limited"),
    ("valyu", 500, "server"),
    ("keenable", 402, "quota"),
    ("keenable", 500, "server"),
}


def conforms(sent, documented) -> bool:
    """Everything the simulator sent is in the documented body, with the same JSON type."""
    if isinstance(sent, dict):
        return isinstance(documented, dict) and all(
            k in documented and conforms(v, documented[k]) for k, v in sent.items()
        )
    if isinstance(sent, list):
        return isinstance(documented, list) and (not sent or not documented or conforms(sent[0], documented[0]))
    if sent is None or isinstance(sent, (bool, str)):
        return type(documented) is type(sent)
    return isinstance(documented, (int, float)) and not isinstance(documented, bool)


def assert_documented(vendor: str, resp: httpx.Response, expected_class: str) -> None:
    """The answer has the shape of the vendor's recorded body for that status and class
    (bench_assets_tests/fixtures/vendors/<vendor>/error_*.json, each naming its source)."""
    recorded = [json.loads(p.read_text()) for p in sorted((FIXTURES / vendor).glob(f"error_{resp.status_code}_*.json"))]
    recorded = [
        r["body"] for r in recorded if (r.get("expected_class") or r.get("expected_error_class")) == expected_class
    ]
    if (vendor, resp.status_code, expected_class) in NO_FIXTURE:
        assert not recorded
        return
    assert recorded, f"no recorded {vendor} {resp.status_code} body of class {expected_class}"
    assert any(conforms(resp.json(), body) for body in recorded), (resp.text, recorded)


@lru_cache(maxsize=1)
def golden_page():
    return build_corpus(pages_per_stratum=14).golden_pages[0]


def text_for(capability: str) -> str:
    return golden_page().query if capability == "search" else golden_page().url


def call(base: str, vendor: str, capability: str, key: str | None = None, text: str | None = None) -> httpx.Response:
    """One call built by our adapter, sent to the simulator."""
    req = get_adapter(vendor).build(
        VendorTask(capability, text or text_for(capability), 10),
        simulated_url(SPEC[vendor]["endpoints"][capability], base),
        key or sim_key(vendor),
        dict(SPEC[vendor].get("options") or {}),
    )
    return httpx.request(
        req.method, req.url, headers=req.headers, params=req.params or None, json=req.json_body, timeout=10
    )


def read(vendor: str, capability: str, resp: httpx.Response):
    """Our adapter's class for a response, and the class the scoring layer gives it."""
    adapter = get_adapter(vendor)
    parsed = adapter.parse(
        VendorTask(capability, text_for(capability)), resp.status_code, dict(resp.headers), resp.text
    )
    classified = classify_response(adapter, capability, resp.status_code, dict(resp.headers), resp.text, None)
    return parsed.error_class, classified.response_class


@pytest.fixture()
def sim(sim_control):
    return sim_control


# ##### OUT OF CREDIT, AS THE VENDOR DOCUMENTS IT


# Tavily charges extract credits whole, every fifth URL of a key (its own test covers it): most
# single extracts cost nothing, so "a balance worth one call" does not apply to them.
PRICED_PER_CALL = [c for c in CALLS if c != ("tavily", "extract")]


@pytest.mark.parametrize("vendor, capability", PRICED_PER_CALL)
def test_a_balance_worth_one_call_pays_for_exactly_one_then_the_vendor_answers_as_documented(sim, vendor, capability):
    first = call(sim.url, vendor, capability)
    assert first.status_code == 200, first.text
    assert read(vendor, capability, first) == (None, "ok")
    price = sim.billing()[-1]["usd"]
    assert price > 0
    assert sim.credits({vendor: price}).status_code == 200
    paid = call(sim.url, vendor, capability)
    assert paid.status_code == 200 and len(sim.billing()) == 2
    assert sim.accounts()[vendor]["balance"] == pytest.approx(0.0, abs=1e-9)
    if vendor == "kagi":  # Kagi reports the balance left after the call: the same account
        assert paid.json()["meta"]["api_balance"] == pytest.approx(0.0, abs=1e-9)
    refused = call(sim.url, vendor, capability)
    status, documented = OUT_OF_CREDIT[vendor]
    assert refused.status_code == status and documented(refused.json()), refused.text
    assert_documented(vendor, refused, "quota")
    assert read(vendor, capability, refused) == ("quota", "quota")
    assert len(sim.billing()) == 2  # the refusal is not billed
    assert sim.credits({vendor: None}).status_code == 200  # unlimited again
    assert call(sim.url, vendor, capability).status_code == 200


def test_kagi_reports_its_balance_from_the_same_account(sim):
    assert sim.credits({"kagi": 0.05}).status_code == 200
    balances = [call(sim.url, "kagi", "search").json()["meta"]["api_balance"] for _ in range(4)]
    assert balances == pytest.approx([0.038, 0.026, 0.014, 0.002])  # meta.api_balance: what is left
    refused = call(sim.url, "kagi", "search")  # $0.002 does not cover a $0.012 search: code 101, unbilled
    assert refused.status_code == 400 and refused.json()["error"][0]["code"] == 101
    assert sim.accounts()["kagi"] == {"balance": pytest.approx(0.002), "spent": pytest.approx(0.048)}
    assert len(sim.billing()) == 4


def test_reset_makes_every_account_unlimited_and_bad_balances_are_refused_naming_the_field(sim):
    assert sim.credits({"exa": 0}).status_code == 200
    assert call(sim.url, "exa", "search").status_code == 402
    bad = sim.credits({"exa": -1, "acme": 1})
    assert bad.status_code == 400
    assert "field 'exa'" in bad.json()["error"] and "field 'acme'" in bad.json()["error"]
    assert sim.accounts()["exa"]["balance"] == 0  # the bad request changed nothing
    httpx.post(f"{sim.url}/_sim/reset", timeout=5)
    assert sim.accounts() == {}
    assert call(sim.url, "exa", "search").status_code == 200


def _sdk_exa(base):
    from exa_py import Exa

    with pytest.raises(ValueError, match="402") as raised:
        Exa(api_key=sim_key("exa"), base_url=simulated_url("https://api.exa.ai", base)).search("q", num_results=1)
    return raised


def _sdk_tavily(base):
    from tavily import TavilyClient
    from tavily.errors import ForbiddenError

    with pytest.raises(ForbiddenError, match="usage limit") as raised:
        TavilyClient(api_key=sim_key("tavily"), api_base_url=simulated_url("https://api.tavily.com", base)).search("q")
    return raised


def _sdk_serpapi(base):
    import serpapi

    client = serpapi.Client(api_key=sim_key("serpapi"), timeout=10)
    client.BASE_DOMAIN = simulated_url("https://serpapi.com", base)
    with pytest.raises(serpapi.HTTPError) as raised:
        client.search(engine="google", q="q")
    assert raised.value.status_code == 429 and "run out of searches" in raised.value.error
    return raised


def _sdk_firecrawl(base):
    from firecrawl import Firecrawl
    from firecrawl.v2.utils.error_handler import PaymentRequiredError

    with pytest.raises(PaymentRequiredError, match="Insufficient credits") as raised:
        Firecrawl(api_key=sim_key("firecrawl"), api_url=sdk_base_url(base, "https://api.firecrawl.dev")).search(
            "q", limit=3
        )
    return raised


def _sdk_perplexity(base):
    import perplexity

    client = perplexity.Perplexity(
        api_key=sim_key("perplexity"), max_retries=0, base_url=simulated_url("https://api.perplexity.ai", base)
    )
    with pytest.raises(perplexity.AuthenticationError, match="credit") as raised:  # 401, as reported (?)
        client.search.create(query="q")
    return raised


def _sdk_linkup(base):
    import linkup

    client = linkup.LinkupClient(api_key=sim_key("linkup"), base_url=simulated_url("https://api.linkup.so/v1", base))
    with pytest.raises(linkup.LinkupInsufficientCreditError) as raised:
        client.search("q", depth="standard", output_type="searchResults")
    return raised


def _sdk_parallel(base):
    import parallel

    client = parallel.Parallel(
        api_key=sim_key("parallel"), base_url=simulated_url("https://api.parallel.ai", base), max_retries=0
    )
    with pytest.raises(parallel.APIStatusError) as raised:
        client.search(search_queries=["a b c"])
    assert raised.value.status_code == 402
    return raised


def _sdk_youcom(base):
    from youdotcom import You, errors

    with You(api_key_auth=sim_key("youcom")) as you, pytest.raises(errors.YouError) as raised:
        you.search(query="q", server_url=simulated_url("https://ydc-index.io", base))
    assert raised.value.status_code == 402 and json.loads(raised.value.body)["error"] == "payment_required"
    return raised


def _sdk_kagi(base):
    import requests
    from kagiapi import KagiClient

    original = KagiClient.BASE_URL
    KagiClient.BASE_URL = sdk_base_url(base, "https://kagi.com/api/v0")
    try:
        with pytest.raises(requests.HTTPError) as raised:
            KagiClient(api_key=sim_key("kagi")).search("q")
    finally:
        KagiClient.BASE_URL = original
    assert raised.value.response.status_code == 400 and raised.value.response.json()["error"][0]["code"] == 101
    return raised


SDKS = {
    "exa": _sdk_exa,
    "tavily": _sdk_tavily,
    "serpapi": _sdk_serpapi,
    "firecrawl": _sdk_firecrawl,
    "perplexity": _sdk_perplexity,
    "linkup": _sdk_linkup,
    "parallel": _sdk_parallel,
    "youcom": _sdk_youcom,
    "kagi": _sdk_kagi,
}  # Brave, Serper and Jina have no official Python SDK; Valyu's and Keenable's are not installed


@pytest.mark.parametrize("vendor", sorted(SDKS))
def test_the_official_sdk_raises_its_own_error_when_out_of_credit(sim, vendor):
    assert sim.credits({vendor: 0}).status_code == 200
    SDKS[vendor](sim.url)
    assert sim.billing() == []


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_fetch_out_of_credit_records_quota_evidence_once_per_query_and_bills_nothing(tmp_path, sim, vendor):
    assert sim.credits({vendor: 0}).status_code == 200
    spec = SPEC[vendor]
    items = [FetchItem(f"q{i}", "public", "search", f"{golden_page().query} {i}") for i in range(3)]
    if "extract" in spec["endpoints"]:
        items.append(FetchItem("x0", "public", "extract", golden_page().url))
    settings = FetchSettings(
        endpoints={c: simulated_url(u, sim.url) for c, u in spec["endpoints"].items()},
        api_key=sim_key(vendor),
        options=dict(spec.get("options") or {}),
        rate_limits_per_second=dict.fromkeys(spec["endpoints"], 500.0),
        concurrency=4,
        timeout_seconds=5.0,
        max_attempts=4,
        prices_usd=spec["prices_usd"],
        backoff_initial=0.01,
        backoff_max=0.05,
    )
    adapter = get_adapter(vendor)
    archive = PartitionArchive(tmp_path / f"{vendor}.duckdb", SNAPSHOT, vendor)
    try:
        stats = asyncio.run(fetch_partition(adapter, items, settings, archive))
        raw = archive.frame()
    finally:
        archive.close()
    assert len(raw) == len(items) and raw["final"].all()  # one attempt each: no retry can pay the bill
    assert stats.retries == 0 and stats.spend_usd == 0.0
    classes = {
        r.query_id: classify_response(
            adapter, r.capability, int(r.http_status), json.loads(r.response_headers_json), r.body, r.transport_error
        ).response_class
        for r in raw.itertuples(index=False)
    }
    assert set(classes.values()) == {"quota"}, classes
    assert (raw["http_status"] == OUT_OF_CREDIT[vendor][0]).all()
    assert sim.billing() == []


# ##### INJECTED 429 AND 500: THE VENDOR'S OWN ERROR BODY


@pytest.mark.parametrize("vendor", VENDORS)
def test_injected_429_and_500_carry_the_vendors_own_error_body(sim, vendor):
    envelope = set(call(sim.url, vendor, "search", key="wrong-key").json())  # the vendor's documented 401 shape
    sim.faults({"retry_after_seconds": 3, "vendors": {vendor: {"rate_limited": 1.0}}})
    limited = call(sim.url, vendor, "search")
    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert set(limited.json()) == envelope, limited.text
    assert read(vendor, "search", limited)[0] == "rate_limited"
    assert_documented(vendor, limited, "rate_limited")
    sim.faults({"vendors": {vendor: {"server_error": 1.0}}})
    statuses = {}
    for i in range(40):  # which of 500/502/503 a request meets is a deterministic draw per request
        resp = call(sim.url, vendor, "search", text=f"{golden_page().query} {i}")
        statuses.setdefault(resp.status_code, resp)
        if 500 in statuses:
            break
    failed = statuses[500]
    assert set(failed.json()) == envelope, failed.text
    assert read(vendor, "search", failed)[0] == "server"
    assert_documented(vendor, failed, "server")
    assert sim.billing() == []


# ##### KEYS: ONE CHECK FOR EVERY ROUTE


@pytest.fixture()
def in_process(monkeypatch):
    """An in-process simulator (small corpus) accepting an extra key from $BENCH_SIM_EXTRA_KEYS."""
    from starlette.testclient import TestClient

    from bench_assets.simulator import app as sim_app

    monkeypatch.setenv("BENCH_SIM_EXTRA_KEYS", json.dumps({"jina": "jina-EXTRA-key", "exa": "exa-EXTRA-key"}))
    sim_app._extra_keys.cache_clear()
    simulator = create_simulator(pages_per_stratum=5, latency_scale=0.0)
    with TestClient(build_app(simulator), base_url="http://sim") as client:
        yield simulator, client
    sim_app._extra_keys.cache_clear()


def test_exa_takes_its_key_in_x_api_key_or_as_a_bearer_token(in_process):
    _simulator, client = in_process
    url = "/h/api.exa.ai/search"
    for headers in (
        {"x-api-key": sim_key("exa")},
        {"Authorization": f"Bearer {sim_key('exa')}"},
        {"Authorization": "Bearer exa-EXTRA-key"},
    ):
        assert client.post(url, json={"query": "quarterly revenue"}, headers=headers).status_code == 200, headers
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"}, {"Authorization": sim_key("exa")}):
        resp = client.post(url, json={"query": "quarterly revenue"}, headers=headers)
        assert resp.status_code == 401 and resp.json()["tag"] == "INVALID_API_KEY", headers
    logged = [r["headers"] for r in client.get("/_sim/requests").json()]
    assert not any("authorization" in h or "x-api-key" in h for h in logged)  # keys are never logged


def test_jina_reader_accepts_every_key_the_simulator_accepts_and_bills_only_keyed_reads(in_process):
    simulator, client = in_process
    simulator.signup.keys["jina-ISSUED-key"] = "jina"  # as the sign-up flow records a key it issued
    page = next(iter(simulator.corpus.golden_pages))
    url = f"/h/r.jina.ai/{page.url}"
    for key in (sim_key("jina"), "jina-EXTRA-key", "jina-ISSUED-key"):
        resp = client.get(url, headers={"Authorization": f"Bearer {key}", "Accept": "application/json"})
        assert resp.status_code == 200 and resp.json()["data"]["title"] == page.title, key
        assert (
            client.get(
                "/h/s.jina.ai/",
                params={"q": page.query},
                headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            ).status_code
            == 200
        )
    wrong = client.get(url, headers={"Authorization": "Bearer jina-wrong", "Accept": "application/json"})
    assert wrong.status_code == 401 and wrong.json()["name"] == "AuthenticationFailedError"
    anonymous = client.get(url, headers={"Accept": "application/json"})
    assert anonymous.status_code == 200  # the key is optional at Reader
    reads = [b for b in client.get("/_sim/billing").json() if b["endpoint"] == "extract"]
    assert [b["units"]["token"] > 0 for b in reads] == [True, True, True, False]  # anonymous reads are free
    # An anonymous read draws on no account, so it is served even when the account is empty.
    assert client.post("/_sim/credits", json={"jina": 0}).status_code == 200
    assert client.get(url, headers={"Accept": "application/json"}).status_code == 200
    keyed = client.get(url, headers={"Authorization": f"Bearer {sim_key('jina')}", "Accept": "application/json"})
    assert keyed.status_code == 402 and keyed.json()["name"] == "InsufficientBalanceError"
