"""Perplexity Search API: our adapter and the official SDK against the simulator over a real socket,
and the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.perplexity import MANIFEST_DEFAULTS, PerplexityAdapter
from bench_assets.golden.planted import build_corpus
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.index import SearchIndex, tokenize, unit_hash
from bench_assets.simulator.profiles import PROFILES

VENDOR = "perplexity"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "vendors" / VENDOR
ADAPTER = PerplexityAdapter()


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
    assert [r.rank for r in parsed.results] == list(range(1, len(parsed.results) + 1))
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.snippet and hit.published == page.published
    assert parsed.request_id == resp.json()["id"]
    # The documented request went out: POST /search with query and max_results, key as a Bearer token.
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("POST", "/search", True)
    assert json.loads(logged["body"]) == {"query": page.query, "max_results": 10}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert estimated_usd(parsed.billed_units) == pytest.approx(bill["usd"])
    assert bill["usd"] == pytest.approx(PROFILES[VENDOR].usd_per_request["search"])


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator):
    from perplexity import Perplexity

    page = golden_page()
    # perplexityai takes base_url (or PERPLEXITY_BASE_URL) and appends /search to it.
    client = Perplexity(
        api_key=sim_key(VENDOR), base_url=simulated_url("https://api.perplexity.ai", simulator.base_url), max_retries=0
    )
    raw = client.search.with_raw_response.create(query=page.query, max_results=10)
    sdk = raw.parse()  # pydantic SearchCreateResponse: fails on any field the simulator gets wrong
    assert sdk.id and sdk.results
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text())
    assert [r.url for r in ours.results] == [r.url for r in sdk.results]
    assert [r.snippet for r in ours.results] == [r.snippet for r in sdk.results]
    assert ours.request_id == sdk.id


def test_official_sdk_raises_its_auth_error_on_a_wrong_key(simulator):
    import perplexity

    client = perplexity.Perplexity(
        api_key="wrong", max_retries=0, base_url=simulated_url("https://api.perplexity.ai", simulator.base_url)
    )
    with pytest.raises(perplexity.AuthenticationError):
        client.search.create(query="anything at all")


def test_wrong_key_gets_the_vendor_401_and_is_classed_auth(simulator, sim_logs):
    resp, parsed = call(simulator, VendorTask("search", "some query"), key="pplx-wrong")
    assert resp.status_code == 401
    assert set(resp.json()["error"]) == {"message", "type", "code"}
    assert parsed.error_class == "auth"
    assert sim_logs.billing() == []


@pytest.mark.parametrize(
    "body", [{}, {"query": ""}, {"query": "ok", "max_results": 21}, {"query": "ok", "max_results": 0}]
)
def test_invalid_request_gets_the_vendor_400(simulator, body):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(url, json=body, headers={"Authorization": f"Bearer {sim_key(VENDOR)}"}, timeout=10)
    assert resp.status_code == 400
    assert resp.json()["error"]["type"] == "invalid_request_error"
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
    with pytest.raises(MalformedResponse):  # valid JSON, but not the documented shape
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"id": "x", "results": None}))
