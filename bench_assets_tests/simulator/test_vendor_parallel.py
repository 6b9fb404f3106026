"""Parallel v1 search and extract: our adapter and the official SDK against the simulator over a real
socket, and the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.parallel import MANIFEST_DEFAULTS, ParallelAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "parallel"
ADAPTER = ParallelAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.snippet and hit.published == page.published
    assert parsed.request_id == resp.json()["search_id"] and parsed.request_id.startswith("search_")
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("POST", "/v1/search", True)
    assert json.loads(logged["body"]) == {"search_queries": [page.query], "advanced_settings": {"max_results": 10}}
    (bill,) = sim_logs.billing()
    # Units come from the response's usage[{name, count}] list, not from a guess.
    assert resp.json()["usage"] == [{"name": "sku_search", "count": 1}]
    assert parsed.billed_units == {"request.search": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005)


def test_more_than_ten_results_bill_the_extra_results(simulator, sim_logs):
    resp, parsed = contract.call(simulator, VendorTask("search", "2026 council guide results", 15))
    assert resp.status_code == 200
    extra = len(parsed.results) - 10
    assert extra > 0
    assert parsed.billed_units == {"request.search": 1.0, "result.search_extra": float(extra)}
    (bill,) = sim_logs.billing()
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"])


def test_extract_round_trip_returns_the_page_text(simulator, sim_logs):
    page = contract.golden_page(1)
    resp, parsed = contract.call(simulator, VendorTask("extract", page.url))
    assert resp.status_code == 200 and parsed.error_class is None
    (result,) = parsed.results
    assert result.url == page.url and result.title == page.title and result.published == page.published
    for phrase in page.anchor_phrases:
        assert phrase in result.content  # full_content
    assert parsed.request_id.startswith("extract_")
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.extract": 1.0}  # excerpts + full content: still one URL
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.001)


def test_extract_of_an_unknown_page_is_not_found(simulator, sim_logs):
    resp, parsed = contract.call(simulator, VendorTask("extract", "https://nowhere.test/missing"))
    assert resp.status_code == 200 and resp.json()["errors"][0]["http_status_code"] == 404
    assert parsed.error_class == "not_found"
    assert contract.usd(parsed.billed_units) == pytest.approx(sim_logs.billing()[0]["usd"]) == 0


def sdk_client(simulator):
    """Parallel's own SDK pointed at the simulator. parallel-web takes base_url (or
    PARALLEL_BASE_URL) and appends /v1/search, /v1/extract. Stainless clients build their models
    leniently by default; with _strict_response_validation the parse raises
    APIResponseValidationError when a field SearchResult / ExtractResponse requires is missing or
    of another type. Fields the models do not declare are still accepted."""
    from parallel import Parallel

    return Parallel(
        api_key=sim_key(VENDOR),
        base_url=simulated_url("https://api.parallel.ai", simulator.base_url),
        max_retries=0,
        _strict_response_validation=True,
    )


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator):
    page = contract.golden_page()
    client = sdk_client(simulator)
    raw = client.with_raw_response.search(search_queries=[page.query], advanced_settings={"max_results": 10})
    sdk = raw.parse()
    assert sdk.results and sdk.usage[0].name == "sku_search"
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text())
    assert [r.url for r in ours.results] == [r.url for r in sdk.results]
    assert ours.request_id == sdk.search_id

    raw = client.with_raw_response.extract(urls=[page.url], advanced_settings={"full_content": True})
    sdk = raw.parse()  # ExtractResponse, strictly validated
    ours = ADAPTER.parse(VendorTask("extract", page.url), raw.status_code, dict(raw.headers), raw.text())
    assert [r.url for r in ours.results] == [r.url for r in sdk.results]
    assert ours.results[0].content == sdk.results[0].full_content


def test_official_sdk_raises_its_errors_on_the_simulators_error_bodies(simulator):
    import parallel

    base = simulated_url("https://api.parallel.ai", simulator.base_url)
    with pytest.raises(parallel.AuthenticationError):
        parallel.Parallel(api_key="wrong", base_url=base, max_retries=0).search(search_queries=["a b c"])
    with pytest.raises(parallel.UnprocessableEntityError):  # an objective-only body is a 422 on /v1
        parallel.Parallel(api_key=sim_key(VENDOR), base_url=base, max_retries=0).search(
            search_queries=[], objective="find the Q2 results"
        )


def test_wrong_key_gets_the_vendor_401_and_is_classed_auth(simulator, sim_logs):
    resp, parsed = contract.wrong_key_answer(simulator, sim_logs, 401, text="some query here")
    assert resp.json()["type"] == "error" and {"ref_id", "message"} <= set(resp.json()["error"])
    assert parsed.request_id == resp.json()["error"]["ref_id"]


@pytest.mark.parametrize(
    "body",
    [{"objective": "only an objective"}, {"search_queries": []}, {"search_queries": ["a b c"], "max_results": 5}],
)
def test_invalid_request_gets_the_vendor_422(simulator, body):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(url, json=body, headers={"x-api-key": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 422 and resp.json()["type"] == "error"
    assert ADAPTER.parse(VendorTask("search", "x"), 422, dict(resp.headers), resp.text).error_class == "bad_request"


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"search_id": "search_x"}))


test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_published_bodies_are_valid_for_the_sdks_model():
    # parallel-web's pydantic model of the /v1/search answer validates Parallel's own example.
    from parallel.types import SearchResult

    for path in contract.ok_fixtures:
        fixture = json.loads(path.read_text())
        model = SearchResult.model_validate(fixture["body"])
        assert [r.url for r in model.results] == fixture["expected_urls"]


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()


@pytest.mark.parametrize("capability", ["search", "extract"])
def test_adapter_requests_match_the_sdks_typed_request(capability):
    # parallel-web's ClientSearchParams / ClientExtractParams are the typed /v1 bodies: every
    # field we send must be one they declare, with a value their annotations accept.
    from parallel.types.client_extract_params import ClientExtractParams
    from parallel.types.client_search_params import ClientSearchParams
    from pydantic import TypeAdapter

    params = ClientSearchParams if capability == "search" else ClientExtractParams
    text = "q2 results" if capability == "search" else "https://example.org/a"
    body = ADAPTER.build(VendorTask(capability, text, 10), "https://api.parallel.ai/v1/x", "k", {}).json_body
    assert set(body) <= set(params.__annotations__)
    assert TypeAdapter(params).validate_python(body) == body
    with pytest.raises(ValueError):  # the check can fail
        TypeAdapter(params).validate_python({**body, "advanced_settings": "all"})


# ##### THE SEARCH MODES (advanced, the default, and basic: each its own configuration)


def test_the_basic_mode_request_is_parallels_documented_example():
    """Parallel's own example of a basic-mode request (fixtures/vendors/parallel/SOURCES.md): the
    adapter's request in mode basic sends the same `mode` and the documented fields only."""
    from parallel.types import client_search_params

    example = json.loads((contract.fixtures / "request_basic_mode_docs_example.json").read_text())["request"]
    query = example["search_queries"][0]
    sent = ADAPTER.build(
        VendorTask("search", query, 10), "https://api.parallel.ai/v1/search", "k", ADAPTER.modes["basic"]
    )
    assert sent.json_body["mode"] == example["mode"] == "basic"
    assert sent.json_body["search_queries"] == [query]
    documented = set(client_search_params.ClientSearchParams.__annotations__)  # the SDK's request fields
    assert set(example) <= documented and set(sent.json_body) <= documented


def test_each_mode_is_sent_and_billed_at_its_documented_price(simulator, sim_logs):
    page = contract.golden_page()
    for mode in ("advanced", "basic"):
        httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
        resp, parsed = contract.call(simulator, VendorTask("search", page.query, 10), options=ADAPTER.modes[mode])
        assert resp.status_code == 200 and parsed.error_class is None and parsed.results
        (logged,) = sim_logs.requests()
        assert json.loads(logged["body"])["mode"] == mode
        (bill,) = sim_logs.billing()
        # $5 per 1,000 requests whichever the mode (data/pricing/parallel.md)
        assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005), mode


def test_the_official_sdk_reads_a_basic_mode_answer_as_our_adapter_does(simulator):
    page = contract.golden_page()
    client = sdk_client(simulator)
    raw = client.with_raw_response.search(search_queries=[page.query], mode="basic")
    sdk = raw.parse()
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text())
    assert sdk.results and [r.url for r in ours.results] == [r.url for r in sdk.results]


@pytest.mark.parametrize("mode", ["turbo", "fast", "pro"])
def test_a_mode_without_a_price_on_parallels_pricing_page_is_refused(mode):
    with pytest.raises(ValueError, match="no price"):
        ADAPTER.build(VendorTask("search", "q"), "https://api.parallel.ai/v1/search", "k", {"mode": mode})
