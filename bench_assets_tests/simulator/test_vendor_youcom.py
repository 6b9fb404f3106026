"""You.com search and contents: our adapter and the official SDK against the simulator over a real
socket, and the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.youcom import MANIFEST_DEFAULTS, YoucomAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "youcom"
ADAPTER = YoucomAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.snippet and hit.published.startswith(page.published)
    assert hit.content is None  # a plain search returns snippets, not page bodies
    assert parsed.request_id == resp.json()["metadata"]["search_uuid"]
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("GET", "/v1/search", True)
    assert logged["params"] == {"query": page.query, "count": "10"}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005)


def test_extract_round_trip_returns_the_page_text(simulator, sim_logs):
    page = contract.golden_page(1)
    resp, parsed = contract.call(simulator, VendorTask("extract", page.url))
    assert resp.status_code == 200 and parsed.error_class is None
    (result,) = parsed.results
    assert result.url == page.url and result.title == page.title
    for phrase in page.anchor_phrases:
        assert phrase in result.content  # markdown
    assert json.loads(sim_logs.requests()[0]["body"]) == {"urls": [page.url], "formats": ["markdown"]}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"page.extract": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.001)


def test_extract_of_an_unknown_page_is_not_found_and_not_billed(simulator, sim_logs):
    resp, parsed = contract.call(simulator, VendorTask("extract", "https://nowhere.test/missing"))
    assert resp.status_code == 200
    assert parsed.error_class == "not_found" and parsed.billed_units == {}
    assert sim_logs.billing()[0]["usd"] == 0


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator):
    from youdotcom import You

    page = contract.golden_page()
    # youdotcom sends search and contents to ydc-index.io unless the per-method server_url is given.
    # Its client argument takes an httpx.Client, whose response hook keeps the raw response.
    captured: list[httpx.Response] = []
    server = simulated_url("https://ydc-index.io", simulator.base_url)
    with (
        httpx.Client(event_hooks={"response": [captured.append]}) as http,
        You(api_key_auth=sim_key(VENDOR), client=http) as you,
    ):
        # The SDK's default search (3.6.0): POST /v1/search with knowledge="core" and highlights extraction.
        sdk = you.search(query=page.query, count=10, server_url=server)
        assert sdk.results.web and sdk.metadata.search_uuid  # pydantic SearchResponse
        raw = captured[-1]
        assert raw.request.method == "POST"
        ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text)
        assert [r.url for r in ours.results] == [r.url for r in sdk.results.web]
        assert all(r.snippet for r in ours.results)  # highlights stand in for the omitted snippets
        assert ours.request_id == sdk.metadata.search_uuid

        pages = you.contents(urls=[page.url], formats=["markdown"], server_url=server)  # List[ContentsResponse]
        raw = captured[-1]
        ours = ADAPTER.parse(VendorTask("extract", page.url), raw.status_code, dict(raw.headers), raw.text)
        assert [r.url for r in ours.results] == [p.url for p in pages]
        assert ours.results[0].content == pages[0].markdown


def test_official_sdk_raises_its_errors_on_the_simulators_error_bodies(simulator):
    from youdotcom import You, errors

    server = simulated_url("https://ydc-index.io", simulator.base_url)
    with You(api_key_auth="wrong") as you, pytest.raises(errors.UnauthorizedResponseError):
        you.search(query="anything", server_url=server)
    with You(api_key_auth=sim_key(VENDOR)) as you, pytest.raises(errors.UnprocessableEntityResponseError):
        you.search(query="anything", count=1000, knowledge=None, extraction=None, server_url=server)


def test_wrong_key_gets_the_vendor_401_and_is_classed_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401)
    assert isinstance(resp.json()["detail"], str)


@pytest.mark.parametrize("params", [{}, {"query": ""}, {"query": "x", "count": "0"}, {"query": "x", "count": "101"}])
def test_invalid_request_gets_the_vendor_422(simulator, params):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.get(url, params=params, headers={"X-API-Key": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 422 and ("detail" in resp.json() or "error" in resp.json())
    assert ADAPTER.parse(VendorTask("search", "x"), 422, dict(resp.headers), resp.text).error_class == "bad_request"


def test_news_results_follow_web_results_without_duplicates():
    body = {
        "results": {
            "web": [
                {
                    "url": "https://a.test/1",
                    "title": "A",
                    "description": "d",
                    "snippets": ["s1", "s2"],
                    "page_age": "2026-05-01T00:00:00",
                }
            ],
            "news": [
                {"url": "https://n.test/2", "title": "N", "description": "news d", "page_age": "2026-06-01"},
                {"url": "https://a.test/1", "title": "A again"},
            ],
        },
        "metadata": {"request_uuid": "0f0e", "query": "q", "latency": 0.2},
    }
    parsed = ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps(body))
    assert [(r.rank, r.url) for r in parsed.results] == [(1, "https://a.test/1"), (2, "https://n.test/2")]
    assert parsed.results[0].snippet == "d\ns1\ns2" and parsed.results[1].published == "2026-06-01"
    assert parsed.request_id == "0f0e"  # older responses name it request_uuid


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):  # contents answers a JSON array, not an object
        ADAPTER.parse(VendorTask("extract", "https://a.test/"), 200, {}, json.dumps({"markdown": "x"}))


def test_adapter_get_search_matches_the_sdks_typed_get_contract(simulator, sim_logs):
    # The SDK only ever POSTs /v1/search, so its round trip above says nothing about our GET. Its
    # generated models still carry You.com's GET /v1/search contract: `models.SearchRequest` (the
    # query parameters of the GET operation) and `models.SearchResponse` (the body both methods
    # answer with). Our GET request must be one that model accepts, field for field, and the
    # simulator's answer to it one the SDK's response model reads to the same results as we do.
    from youdotcom import models

    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    options = {"country": "US", "freshness": "month", "safesearch": "moderate"}
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), options)
    assert req.method == "GET" and req.json_body is None
    assert set(req.params) <= set(models.SearchRequest.model_fields)  # no parameter the GET operation lacks
    typed = models.SearchRequest.model_validate(req.params)
    assert (typed.query, typed.count) == (page.query, 10)
    resp = contract.send(req)
    assert resp.status_code == 200
    assert sim_logs.requests()[0]["method"] == "GET"
    sdk = models.SearchResponse.model_validate(resp.json())
    ours = contract.parse(task, resp)
    assert [r.url for r in ours.results] == [r.url for r in [*(sdk.results.web or []), *(sdk.results.news or [])]]
    assert ours.request_id == sdk.metadata.search_uuid


test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_the_sdk_mockservers_get_search_body_is_valid_for_the_sdks_model():
    from youdotcom import models

    fixture = json.loads((contract.fixtures / "ok_sdk_mockserver_get_search.json").read_text())
    sdk = models.SearchResponse.model_validate(fixture["body"])
    assert [r.url for r in [*(sdk.results.web or []), *(sdk.results.news or [])]] == fixture["expected_urls"]


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()


FULL_PAGE = YoucomAdapter.modes["full_page"]


def test_full_page_search_attaches_each_page_and_bills_each_one_fetched_live(simulator, sim_logs):
    # you.com/docs/administration/billing: full page extraction "$1.00 per 1,000 pages fetched live",
    # on top of $5 per 1,000 calls; extraction_source fetch: "Every result is crawled live".
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task, options=FULL_PAGE)
    assert resp.status_code == 200 and parsed.error_class is None and parsed.results
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"]) == ("POST", "/v1/search")
    assert json.loads(logged["body"]) == {
        "query": page.query,
        "count": 10,
        "extraction": {
            "extraction_mode": "full_page",
            "extraction_source": "fetch",
            "full_page": {"extraction_formats": ["markdown"]},
        },
    }
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.snippet and all(phrase in hit.content for phrase in page.anchor_phrases)
    pages = len(parsed.results)
    assert parsed.billed_units == {"request.search": 1.0, "page.extract": float(pages)}
    (bill,) = sim_logs.billing()
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005 + 0.001 * pages)
    assert ADAPTER.expected_units(task, FULL_PAGE) == {"request.search": 1.0, "page.extract": 10.0}


def test_full_page_ranks_as_the_default_search_and_is_slower(simulator):
    # You.com documents fresher content "at higher latency" for fetch, not a better ranking.
    from bench_assets.simulator.profiles import mode_profile

    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    _, default = contract.call(simulator, task)
    _, full = contract.call(simulator, task, options=FULL_PAGE)
    assert [r.url for r in full.results] == [r.url for r in default.results]
    assert all(r.content for r in full.results) and not any(r.content for r in default.results)
    assert mode_profile(VENDOR, "full_page").latency_ms > mode_profile(VENDOR, None).latency_ms


def test_full_page_request_is_the_sdks_and_the_sdk_reads_the_answer_as_we_do(simulator):
    # youdotcom 3.6.0's `models.Extraction` is strict (extra="forbid", "mirrors the extraction
    # schema enforced by the deployed Search API"): our extraction object must be one it accepts,
    # and the SDK's own full_page search of the simulator must read to our results and pages.
    from youdotcom import You, models

    page = contract.golden_page()
    req = ADAPTER.build(VendorTask("search", page.query, 10), "https://ydc-index.io/v1/search", "k", FULL_PAGE)
    typed = models.Extraction.model_validate(req.json_body["extraction"])
    assert typed.model_dump(mode="json", exclude_none=True) == req.json_body["extraction"]
    with pytest.raises(ValueError):  # the check can fail
        models.Extraction.model_validate({**req.json_body["extraction"], "depth": "deep"})

    captured: list[httpx.Response] = []
    server = simulated_url("https://ydc-index.io", simulator.base_url)
    with (
        httpx.Client(event_hooks={"response": [captured.append]}) as http,
        You(api_key_auth=sim_key(VENDOR), client=http) as you,
    ):
        sdk = you.search(
            query=page.query, count=10, knowledge=None, extraction=req.json_body["extraction"], server_url=server
        )
    raw = captured[-1]
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text)
    assert [r.url for r in ours.results] == [r.url for r in sdk.results.web]
    assert [r.content for r in ours.results] == [r.contents.markdown for r in sdk.results.web]


@pytest.mark.parametrize("source", ["blend", "cache"])
def test_a_source_whose_bill_the_response_does_not_tell_is_refused(source):
    with pytest.raises(ValueError, match="fetch"):
        ADAPTER.build(
            VendorTask("search", "q"), "https://ydc-index.io/v1/search", "k", {**FULL_PAGE, "extraction_source": source}
        )


def test_an_unknown_extraction_field_gets_the_vendor_422(simulator):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    body = {"query": "ok", "extraction": {"extraction_mode": "full_page", "depth": "deep"}}
    resp = httpx.post(url, json=body, headers={"X-API-Key": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 422
    assert ADAPTER.parse(VendorTask("search", "ok"), 422, dict(resp.headers), resp.text).error_class == "bad_request"
