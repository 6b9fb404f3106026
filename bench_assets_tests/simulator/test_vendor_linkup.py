"""Linkup search and fetch: our adapter and the official SDK against the simulator over a real socket,
and the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.linkup import MANIFEST_DEFAULTS, LinkupAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "linkup"
ADAPTER = LinkupAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
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
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005)


def test_extract_round_trip_returns_the_page_text(simulator, sim_logs):
    page = contract.golden_page(1)
    task = VendorTask("extract", page.url)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200 and parsed.error_class is None
    (result,) = parsed.results
    assert result.url == page.url and result.title == page.title
    for phrase in page.anchor_phrases:
        assert phrase in result.content
    assert json.loads(sim_logs.requests()[0]["body"]) == {"url": page.url, "renderJs": False}
    (bill,) = sim_logs.billing()
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.001)


def test_extract_of_an_unknown_page_is_not_found(simulator, sim_logs):
    resp, parsed = contract.call(simulator, VendorTask("extract", "https://nowhere.test/missing"))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "FETCH_TARGET_NOT_FOUND"
    assert parsed.error_class == "not_found"
    assert sim_logs.billing() == []


def test_an_empty_search_is_an_empty_result_not_an_error(simulator, sim_logs):
    resp, parsed = contract.call(simulator, VendorTask("search", "qqqqzzzz xxyyzz"))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "SEARCH_QUERY_NO_RESULT"
    assert parsed.error_class is None and parsed.results == () and parsed.billed_units == {}
    assert sim_logs.billing() == []


def test_deep_is_its_own_mode_and_an_undocumented_depth_is_refused():
    # The response does not say which depth ran: deep is a configuration of its own (`linkup.deep`),
    # priced by its manifest entry ($0.05, data/pricing/linkup.md), never a request option of `linkup`.
    endpoint = "https://api.linkup.so/v1/search"
    deep = ADAPTER.build(VendorTask("search", "q"), endpoint, "k", ADAPTER.modes["deep"])
    assert deep.json_body["depth"] == "deep"
    assert ADAPTER.build(VendorTask("search", "q"), endpoint, "k", {}).json_body["depth"] == "standard"
    with pytest.raises(ValueError):
        ADAPTER.build(VendorTask("search", "q"), endpoint, "k", {"depth": "deeper"})


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator, monkeypatch):
    from linkup import LinkupClient

    page = contract.golden_page()
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
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401)
    assert resp.json()["statusCode"] == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED"


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


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("extract", "https://a.test/"), 200, {}, json.dumps({"favicon": "x"}))


test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()
