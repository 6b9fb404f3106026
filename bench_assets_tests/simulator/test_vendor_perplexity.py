"""Perplexity Search API: our adapter and the official SDK against the simulator over a real socket,
and the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.perplexity import MANIFEST_DEFAULTS, PerplexityAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.profiles import PROFILES
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "perplexity"
ADAPTER = PerplexityAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
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
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"])
    assert bill["usd"] == pytest.approx(PROFILES[VENDOR].usd_per_request["search"])


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator):
    from perplexity import Perplexity

    page = contract.golden_page()
    # perplexityai takes base_url (or PERPLEXITY_BASE_URL) and appends /search to it. Stainless
    # clients build their models leniently by default; with _strict_response_validation the parse
    # raises APIResponseValidationError when a field SearchCreateResponse requires is missing or of
    # another type. Fields the model does not declare are still accepted.
    client = Perplexity(
        api_key=sim_key(VENDOR),
        base_url=simulated_url("https://api.perplexity.ai", simulator.base_url),
        max_retries=0,
        _strict_response_validation=True,
    )
    raw = client.search.with_raw_response.create(query=page.query, max_results=10)
    sdk = raw.parse()
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
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401, key="pplx-wrong")
    assert set(resp.json()["error"]) == {"message", "type", "code"}


@pytest.mark.parametrize(
    "body", [{}, {"query": ""}, {"query": "ok", "max_results": 21}, {"query": "ok", "max_results": 0}]
)
def test_invalid_request_gets_the_vendor_400(simulator, body):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(url, json=body, headers={"Authorization": f"Bearer {sim_key(VENDOR)}"}, timeout=10)
    assert resp.status_code == 400
    assert resp.json()["error"]["type"] == "invalid_request_error"
    assert ADAPTER.parse(VendorTask("search", "x"), 400, dict(resp.headers), resp.text).error_class == "bad_request"


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):  # valid JSON, but not the documented shape
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"id": "x", "results": None}))


test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_published_bodies_are_valid_for_the_sdks_model():
    # The SDK's pydantic model of POST /search validates Perplexity's own example: our fixture is
    # the shape the vendor's client expects, not only the shape our adapter reads.
    from perplexity.types import SearchCreateResponse

    for path in contract.ok_fixtures:
        body = json.loads(path.read_text())["body"]
        model = SearchCreateResponse.model_validate(body)
        assert [r.url for r in model.results] == json.loads(path.read_text())["expected_urls"]


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()


@pytest.mark.parametrize("options", [{}, {"country": "US", "search_context_size": "high", "max_tokens_per_page": 512}])
def test_adapter_requests_match_the_sdks_typed_request(options):
    # perplexityai's SearchCreateParams is the typed POST /search body: every field we send must
    # be one it declares, with a value its annotation accepts.
    from perplexity.types.search_create_params import SearchCreateParams
    from pydantic import TypeAdapter

    body = ADAPTER.build(VendorTask("search", "q", 25), "https://api.perplexity.ai/search", "k", options).json_body
    assert set(body) <= set(SearchCreateParams.__annotations__)
    assert TypeAdapter(SearchCreateParams).validate_python(body) == body
    with pytest.raises(ValueError):  # the check can fail
        TypeAdapter(SearchCreateParams).validate_python({**body, "max_results": "ten"})


def test_fast_search_sends_its_search_type_is_read_alike_and_billed_its_own_price(simulator, sim_logs):
    # docs.perplexity.ai/docs/search/fast-search: `search_type: "fast"` on POST /search, "$1.00 per
    # 1,000 Fast Search requests instead of $5.00"; "Results use the same response format as
    # standard web search" (the documented example, ok_search_api_reference.json, is read above).
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task, options=ADAPTER.modes["fast"])
    assert resp.status_code == 200 and parsed.error_class is None and parsed.results
    (logged,) = sim_logs.requests()
    assert json.loads(logged["body"]) == {"query": page.query, "max_results": 10, "search_type": "fast"}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}  # priced by the configuration: $0.001
    assert bill["usd"] == pytest.approx(0.001)


def test_the_sdk_types_the_default_search_type_and_not_yet_fast():
    # The docs say the Python library rejects search_type="fast" (send it with extra_body); the
    # installed perplexityai 0.46.1 still types it "web" | "people". The default mode's body is one
    # the SDK accepts; fast is the documented exception, and the adapter writes the body itself.
    from perplexity.types.search_create_params import SearchCreateParams
    from pydantic import TypeAdapter

    web = ADAPTER.build(VendorTask("search", "q", 10), "https://api.perplexity.ai/search", "k", ADAPTER.modes["web"])
    assert TypeAdapter(SearchCreateParams).validate_python(web.json_body) == web.json_body
    fast = ADAPTER.build(VendorTask("search", "q", 10), "https://api.perplexity.ai/search", "k", ADAPTER.modes["fast"])
    assert fast.json_body == {**web.json_body, "search_type": "fast"}
    with pytest.raises(ValueError):
        TypeAdapter(SearchCreateParams).validate_python(fast.json_body)


def test_an_undocumented_search_type_is_refused_by_the_adapter_and_the_simulator(simulator):
    with pytest.raises(ValueError, match="web, fast"):
        ADAPTER.build(VendorTask("search", "q"), "https://api.perplexity.ai/search", "k", {"search_type": "deep"})
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(
        url,
        json={"query": "ok", "search_type": "deep"},
        headers={"Authorization": f"Bearer {sim_key(VENDOR)}"},
        timeout=10,
    )
    assert resp.status_code == 400 and "search_type" in resp.json()["error"]["message"]
