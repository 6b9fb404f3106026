"""Linkup search and fetch: our adapter and the official SDK against the simulator over a real socket,
and the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.linkup import MANIFEST_DEFAULTS, LinkupAdapter
from bench_assets.golden.planted import build_corpus
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.index import SearchIndex, tokenize, unit_hash
from bench_assets.simulator.profiles import PROFILES

VENDOR = "linkup"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "vendors" / VENDOR
ADAPTER = LinkupAdapter()


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


def call(simulator, task: VendorTask, key: str | None = None, options: dict | None = None):
    endpoint = simulated_url(MANIFEST_DEFAULTS["endpoints"][task.capability], simulator.base_url)
    req = ADAPTER.build(task, endpoint, key or sim_key(VENDOR), options or {})
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
    assert hit.title == page.title and hit.snippet  # Linkup's title field is `name`
    assert hit.url.startswith("http://")  # this vendor's URL style; normalization undoes it
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("POST", "/v1/search", True)
    body = json.loads(logged["body"])
    sent = (body["q"], body["depth"], body["outputType"], body["maxResults"])
    assert sent == (page.query, "standard", "searchResults", 10)
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert estimated_usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005)


def test_extract_round_trip_returns_the_page_text(simulator, sim_logs):
    page = golden_page(1)
    task = VendorTask("extract", page.url)
    resp, parsed = call(simulator, task)
    assert resp.status_code == 200 and parsed.error_class is None
    (result,) = parsed.results
    assert result.url == page.url and result.title == page.title
    for phrase in page.anchor_phrases:
        assert phrase in result.content
    assert json.loads(sim_logs.requests()[0]["body"]) == {"url": page.url, "renderJs": False}
    (bill,) = sim_logs.billing()
    assert estimated_usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.001)


def test_extract_of_an_unknown_page_is_not_found(simulator, sim_logs):
    resp, parsed = call(simulator, VendorTask("extract", "https://nowhere.test/missing"))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "FETCH_TARGET_NOT_FOUND"
    assert parsed.error_class == "not_found"
    assert sim_logs.billing() == []


def test_an_empty_search_is_an_empty_result_not_an_error(simulator, sim_logs):
    resp, parsed = call(simulator, VendorTask("search", "qqqqzzzz xxyyzz"))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "SEARCH_QUERY_NO_RESULT"
    assert parsed.error_class is None and parsed.results == () and parsed.billed_units == {}
    assert sim_logs.billing() == []


def test_deep_search_is_refused_because_its_price_cannot_be_read_back():
    with pytest.raises(ValueError):
        ADAPTER.build(VendorTask("search", "q"), "https://api.linkup.so/v1/search", "k", {"depth": "deep"})


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator, monkeypatch):
    from linkup import LinkupClient

    page = golden_page()
    # linkup-sdk takes base_url (default https://api.linkup.so/v1). It exposes no raw response, so the
    # httpx.Response it got is kept by wrapping its one transport method, _request.
    captured: list[httpx.Response] = []
    original = LinkupClient._request

    def spy(self, *args, **kwargs):
        response = original(self, *args, **kwargs)
        captured.append(response)
        return response

    monkeypatch.setattr(LinkupClient, "_request", spy)
    client = LinkupClient(
        api_key=sim_key(VENDOR), base_url=simulated_url("https://api.linkup.so/v1", simulator.base_url)
    )
    sdk = client.search(page.query, depth="standard", output_type="searchResults", max_results=10)
    assert sdk.results  # pydantic LinkupSearchResults: fails on any field the simulator gets wrong
    raw = captured[-1]
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text)
    assert [r.url for r in ours.results] == [r.url for r in sdk.results]
    assert [r.title for r in ours.results] == [r.name for r in sdk.results]

    fetched = client.fetch(page.url)  # LinkupFetchResponse
    raw = captured[-1]
    ours = ADAPTER.parse(VendorTask("extract", page.url), raw.status_code, dict(raw.headers), raw.text)
    assert ours.results[0].content == fetched.markdown


def test_official_sdk_raises_its_errors_on_the_simulators_error_bodies(simulator):
    import linkup

    base = simulated_url("https://api.linkup.so/v1", simulator.base_url)
    with pytest.raises(linkup.LinkupAuthenticationError):
        linkup.LinkupClient(api_key="wrong", base_url=base).search("q", depth="standard", output_type="searchResults")
    client = linkup.LinkupClient(api_key=sim_key(VENDOR), base_url=base)
    with pytest.raises(linkup.LinkupNoResultError):
        client.search("qqqqzzzz xxyyzz", depth="standard", output_type="searchResults")
    with pytest.raises(linkup.LinkupFetchTargetNotFoundError):
        client.fetch("https://nowhere.test/missing")


def test_wrong_key_gets_the_vendor_401_and_is_classed_auth(simulator, sim_logs):
    resp, parsed = call(simulator, VendorTask("search", "some query"), key="wrong")
    assert resp.status_code == 401
    assert resp.json()["statusCode"] == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED"
    assert parsed.error_class == "auth"
    assert sim_logs.billing() == []


@pytest.mark.parametrize(
    "body, field",
    [
        ({"depth": "standard", "outputType": "searchResults"}, "q"),
        ({"q": "x", "outputType": "searchResults"}, "depth"),
        ({"q": "x", "depth": "standard", "outputType": "list"}, "outputType"),
    ],
)
def test_invalid_request_gets_the_vendor_400(simulator, body, field):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(url, json=body, headers={"Authorization": f"Bearer {sim_key(VENDOR)}"}, timeout=10)
    assert resp.status_code == 400
    error = resp.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["field"] == field
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
        ADAPTER.parse(VendorTask("extract", "https://a.test/"), 200, {}, json.dumps({"favicon": "x"}))
