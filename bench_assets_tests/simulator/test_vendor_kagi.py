"""Kagi Search API: our adapter and the official SDK against the simulator over a real socket, and
the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json
import os
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.kagi import MANIFEST_DEFAULTS, KagiAdapter
from bench_assets.golden.planted import build_corpus
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.index import SearchIndex, tokenize, unit_hash
from bench_assets.simulator.profiles import PROFILES

VENDOR = "kagi"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "vendors" / VENDOR
ADAPTER = KagiAdapter()


@lru_cache(maxsize=1)
def easy_golden_pages() -> tuple:
    """Golden pages with an easy query for this vendor: in its simulated index (coverage < 1 leaves some
    out) and ahead of the 10th-best other page by more than the profile's rank noise can make up."""
    corpus = build_corpus(pages_per_stratum=int(os.environ.get("BENCH_SIM_PAGES_PER_STRATUM", "14")))
    index, profile = SearchIndex(corpus), PROFILES[VENDOR]
    easy = []
    for page in corpus.golden_pages:
        scores = sorted(index.bm25.get_scores(tokenize(page.query)), reverse=True)
        if (
            unit_hash(VENDOR, "coverage", page.url) < profile.coverage
            and scores[0] > 0
            and 1 - scores[10] / scores[0] > (1 - profile.quality) * 1.6
        ):
            easy.append(page)
    return tuple(easy)


def golden_page(i: int = 0):
    return easy_golden_pages()[i]


def call(simulator, task: VendorTask, key: str | None = None):
    endpoint = simulated_url(MANIFEST_DEFAULTS["endpoints"][task.capability], simulator.base_url)
    req = ADAPTER.build(task, endpoint, key or sim_key(VENDOR), {})
    resp = httpx.request(
        req.method, req.url, headers=req.headers, params=req.params or None, json=req.json_body, timeout=10
    )
    return resp, ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)


def estimated_usd(units: dict[str, float]) -> float:
    return sum(count * MANIFEST_DEFAULTS["prices_usd"][unit] for unit, count in units.items())


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = call(simulator, task)
    assert resp.status_code == 200
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.snippet and hit.published.startswith(page.published)
    body = resp.json()
    assert parsed.request_id == body["meta"]["id"]
    # Related searches (t=1) are in data[] but are not results.
    assert any(item["t"] == 1 for item in body["data"])
    assert len(parsed.results) == sum(item["t"] == 0 for item in body["data"])
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("GET", "/api/v0/search", True)
    assert logged["params"] == {"q": page.query, "limit": "10"}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert estimated_usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.012)


def test_api_balance_goes_down_by_the_price_of_each_search(simulator):
    page = golden_page()
    first, _ = call(simulator, VendorTask("search", page.query))
    second, _ = call(simulator, VendorTask("search", page.query))
    drop = first.json()["meta"]["api_balance"] - second.json()["meta"]["api_balance"]
    assert drop == pytest.approx(MANIFEST_DEFAULTS["prices_usd"]["request.search"], abs=1e-6)


def check_typed_dict(value, cls) -> None:
    """`value` has every required key of the TypedDict `cls` and no key it does not declare."""
    assert isinstance(value, dict)
    assert cls.__required_keys__ <= set(value), f"{cls.__name__} misses {cls.__required_keys__ - set(value)}"
    assert set(value) <= cls.__required_keys__ | cls.__optional_keys__, f"{cls.__name__} has unknown keys"


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator, monkeypatch):
    from kagiapi import KagiClient
    from kagiapi.models import Meta, SearchItem, SearchResponse

    page = golden_page()
    # kagiapi has no base-URL option: its URL is the class attribute KagiClient.BASE_URL, patched here.
    monkeypatch.setattr(KagiClient, "BASE_URL", simulated_url("https://kagi.com/api/v0", simulator.base_url))
    client = KagiClient(api_key=sim_key(VENDOR))
    captured = []
    client.session.hooks["response"].append(lambda response, *args, **kwargs: captured.append(response))
    sdk = client.search(page.query, limit=10)
    # kagiapi's models are TypedDicts it never checks (and pydantic cannot read typing.TypedDict on
    # Python 3.11), so the simulator's answer is held to their declared keys here.
    check_typed_dict(sdk, SearchResponse)
    check_typed_dict(sdk["meta"], Meta)
    assert isinstance(sdk["meta"]["api_balance"], float)
    for item in sdk["data"]:
        check_typed_dict(item, SearchItem)
        if item["t"] == 0:
            assert isinstance(item["rank"], int) and datetime.fromisoformat(item["published"])
        else:
            assert item["t"] == 1 and all(isinstance(s, str) for s in item["list"])
    raw = captured[-1]
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text)
    assert [r.url for r in ours.results] == [item["url"] for item in sdk["data"] if item["t"] == 0]
    assert ours.request_id == sdk["meta"]["id"]


def test_official_sdk_raises_on_a_wrong_key(simulator, monkeypatch):
    import requests
    from kagiapi import KagiClient

    monkeypatch.setattr(KagiClient, "BASE_URL", simulated_url("https://kagi.com/api/v0", simulator.base_url))
    with pytest.raises(requests.HTTPError) as raised:
        KagiClient(api_key="wrong").search("anything")
    assert raised.value.response.status_code == 401


def test_wrong_key_gets_the_vendor_401_and_is_classed_auth(simulator, sim_logs):
    resp, parsed = call(simulator, VendorTask("search", "some query"), key="wrong")
    assert resp.status_code == 401
    assert resp.json()["error"][0]["code"] == 2 and resp.json()["data"] is None
    assert parsed.error_class == "auth"
    assert sim_logs.billing() == []


@pytest.mark.parametrize("params", [{}, {"q": " "}, {"q": "x", "limit": "ten"}])
def test_malformed_request_gets_the_vendor_400_code_1(simulator, params):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.get(url, params=params, headers={"Authorization": f"Bot {sim_key(VENDOR)}"}, timeout=10)
    assert resp.status_code == 400 and resp.json()["error"][0]["code"] == 1
    assert ADAPTER.parse(VendorTask("search", "x"), 400, dict(resp.headers), resp.text).error_class == "bad_request"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("error_*.json")), ids=lambda p: p.stem)
def test_documented_error_bodies_are_classified(path):
    fixture = json.loads(path.read_text())
    parsed = ADAPTER.parse(
        VendorTask("search", "q"), fixture["status"], fixture["headers"], json.dumps(fixture["body"])
    )
    assert parsed.error_class == fixture["expected_class"]
    assert parsed.results == ()


def test_truncated_json_is_malformed(simulator):
    resp, _ = call(simulator, VendorTask("search", golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("search", "q"), 200, dict(resp.headers), resp.text[: len(resp.text) // 2])
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"meta": {"id": "x"}, "data": None}))
