"""Jina Search (s.jina.ai) and Reader (r.jina.ai): our adapter against the simulator over a real
socket, and against fixtures constructed from Jina's open-source service (jina-ai/reader; Jina has
no official SDK and no published example bodies: fixtures/vendors/jina/SOURCES.md)."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.jina import MANIFEST_DEFAULTS, JinaAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key
from bench_assets_tests.simulator.documented_shape import shape_differences
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "jina"
ADAPTER = JinaAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_returns_page_bodies_and_bills_tokens(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.headers["Accept"] == "application/json" and req.params == {"q": page.query, "count": 10}
    assert req.redacted()["headers"]["Authorization"] == "<redacted>"
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    top = parsed.results[0]
    assert top.snippet and page.anchor_phrases[0] in top.content  # search returns page bodies in `content`
    # At least 10,000 tokens per request per 10 results; the header and meta.usage agree.
    assert parsed.billed_units == {"token": float(resp.json()["meta"]["usage"]["tokens"])}
    assert parsed.billed_units["token"] >= 10_000 and resp.headers["X-Usage-Tokens"] == str(
        int(parsed.billed_units["token"])
    )
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_reader_round_trip_returns_anchor_phrases_and_bills_output_tokens(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    req = ADAPTER.build(task, contract.endpoint("extract", simulator.base_url), sim_key(VENDOR), {})
    assert req.url.endswith("/h/r.jina.ai/" + page.url)  # the target URL is the path
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    (result,) = parsed.results
    assert result.url == page.url and result.title == page.title and result.published.startswith(page.published)
    for phrase in page.anchor_phrases:
        assert phrase in result.content
    data_tokens = resp.json()["data"]["usage"]["tokens"]
    assert parsed.billed_units == {"token": float(data_tokens)} and 0 < data_tokens < 10_000
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_reader_of_unreachable_url_is_not_found(simulator):
    task = VendorTask("extract", "https://nowhere.invalid/page")
    resp = contract.send(ADAPTER.build(task, contract.endpoint("extract", simulator.base_url), sim_key(VENDOR), {}))
    assert resp.status_code == 422 and resp.json()["name"] == "AssertionFailureError"
    assert ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text).error_class == "not_found"


def test_reader_key_is_optional_but_a_wrong_key_is_refused(simulator, sim_logs):
    page = contract.top_ranked_page
    url = contract.endpoint("extract", simulator.base_url) + page.url
    anonymous = httpx.get(url, headers={"Accept": "application/json"}, timeout=10)
    assert anonymous.status_code == 200 and anonymous.json()["data"]["url"] == page.url
    assert [b["usd"] for b in sim_logs.billing()] == [0]  # anonymous Reader use is free
    wrong = httpx.get(url, headers={"Accept": "application/json", "Authorization": "Bearer jina_wrong"}, timeout=10)
    assert wrong.status_code == 401 and wrong.json()["name"] == "AuthenticationFailedError"
    assert ADAPTER.parse(VendorTask("extract", page.url), 401, dict(wrong.headers), wrong.text).error_class == "auth"


def test_search_wrong_or_missing_key_gets_401_classified_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401, key="jina_wrong", text="anything at all")
    assert resp.json()["name"] == "AuthenticationFailedError"
    keyless = httpx.get(
        contract.endpoint("search", simulator.base_url),
        params={"q": "x"},
        headers={"Accept": "application/json"},
        timeout=10,
    )
    assert keyless.status_code == 401 and keyless.json()["name"] == "AuthenticationRequiredError"
    assert sim_logs.billing() == []


def test_search_count_out_of_range_gets_400(simulator):
    headers = {"Accept": "application/json", "Authorization": f"Bearer {sim_key(VENDOR)}"}
    resp = httpx.get(
        contract.endpoint("search", simulator.base_url), params={"q": "x", "count": "50"}, headers=headers, timeout=10
    )
    assert resp.status_code == 400 and resp.json()["name"] == "ParamValidationError"
    assert ADAPTER.parse(VendorTask("search", "x"), 400, dict(resp.headers), resp.text).error_class == "bad_request"


@pytest.mark.parametrize("name", ["search_example", "reader_example"])
def test_documented_example_responses_parse_to_expected_urls(name):
    fx = json.loads((contract.fixtures / f"{name}.json").read_text())
    task = VendorTask(fx["capability"], fx.get("task_url", "jina reader"))
    parsed = ADAPTER.parse(task, fx["status"], fx.get("headers", {}), json.dumps(fx["body"]))
    assert [r.url for r in parsed.results] == fx["expected_urls"]
    assert [r.published for r in parsed.results] == fx["expected_published"]
    assert parsed.billed_units == fx["expected_billed_units"]
    assert all(r.content for r in parsed.results)
    if "expected_content_contains" in fx:
        assert fx["expected_content_contains"] in parsed.results[0].content


# What the documented Reader example shows that depends on the page: its own meta tags.
SOMETIMES = {"search": set(), "extract": {"data.metadata.viewport"}}


@pytest.mark.parametrize("capability, example", [("search", "search_example"), ("extract", "reader_example")])
def test_the_simulator_answers_in_the_documented_shape(simulator, capability, example):
    """The JSON envelope, every key the documented example shows at every level with the same JSON
    type (a key only some documented results have is checked when present), and the usage header."""
    fixture = json.loads((contract.fixtures / f"{example}.json").read_text())
    page = contract.top_ranked_page
    task = VendorTask(capability, page.query if capability == "search" else page.url, 10)
    resp = contract.send(ADAPTER.build(task, contract.endpoint(capability, simulator.base_url), sim_key(VENDOR), {}))
    assert resp.status_code == 200
    body = resp.json()
    assert shape_differences(fixture["body"], body, SOMETIMES[capability]) == []
    assert (body["code"], body["status"]) == (fixture["body"]["code"], fixture["body"]["status"])
    assert set(fixture["headers"]) == {"Content-Type", "X-Usage-Tokens"}  # the documented headers
    assert resp.headers["Content-Type"].split(";")[0] == "application/json"
    assert int(resp.headers["X-Usage-Tokens"]) == body["meta"]["usage"]["tokens"]
    if capability == "search":
        assert len(body["data"]) == 10  # every result was compared


def test_tokens_fall_back_to_header_then_per_item_usage():
    fx = json.loads((contract.fixtures / "search_example.json").read_text())
    body = fx["body"]
    del body["meta"]
    task = VendorTask("search", "jina reader")
    assert ADAPTER.parse(task, 200, {"X-Usage-Tokens": "12000"}, json.dumps(body)).billed_units == {"token": 12000.0}
    # The floor is spread over the results (searcher.ts assignChargeAmount): the items add up to it.
    assert ADAPTER.parse(task, 200, {}, json.dumps(body)).billed_units == {"token": 10000.0}


def _search(simulator, params: dict, headers: dict | None = None) -> httpx.Response:
    auth = {"Accept": "application/json", "Authorization": f"Bearer {sim_key(VENDOR)}", **(headers or {})}
    return httpx.get(contract.endpoint("search", simulator.base_url), params=params, headers=auth, timeout=10)


def test_count_defaults_to_ten(simulator):
    """`count: number = 10` in jina-ai/reader src/api/searcher.ts."""
    resp = _search(simulator, {"q": contract.top_ranked_page.query})
    assert resp.status_code == 200 and len(resp.json()["data"]) == 10


def test_the_search_floor_is_spread_over_the_results_usage(simulator, sim_logs):
    """Three results of short pages cost the 10,000-token floor, and each result carries
    ceil(10000 / 3) of it in usage.tokens, as searcher.ts assignChargeAmount writes it."""
    resp = _search(simulator, {"q": contract.top_ranked_page.query, "count": 3})
    body = resp.json()
    assert body["meta"]["usage"]["tokens"] == 10_000 == int(resp.headers["X-Usage-Tokens"])
    assert [item["usage"]["tokens"] for item in body["data"]] == [3334, 3334, 3334]
    parsed = ADAPTER.parse(VendorTask("search", "q", 3), 200, dict(resp.headers), resp.text)
    assert parsed.billed_units == {"token": 10_000.0}
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_a_token_budget_below_the_charge_is_a_409_quota_error_billed_nothing(simulator, sim_logs):
    """X-Token-Budget below the charge: 409 BudgetExceededError (errors.ts code 40904), which no
    retry can fix: quota, like an exhausted balance."""
    resp = _search(simulator, {"q": contract.top_ranked_page.query, "count": 3}, {"X-Token-Budget": "5000"})
    assert resp.status_code == 409
    assert (resp.json()["name"], resp.json()["status"]) == ("BudgetExceededError", 40904)
    assert "Token budget (5000) exceeded" in resp.json()["message"]
    assert ADAPTER.parse(VendorTask("search", "q"), 409, dict(resp.headers), resp.text).error_class == "quota"
    assert sim_logs.billing() == []


def test_the_estimate_keeps_to_the_floor_and_the_cap():
    assert ADAPTER.expected_units(VendorTask("search", "q", 3), {}) == {"token": 10_000.0}
    assert ADAPTER.expected_units(VendorTask("search", "q", 20), {}) == {"token": 40_000.0}


def test_error_fixtures_cover_documented_statuses():
    assert {401, 402, 409, 429, 500} <= contract.recorded_error_statuses


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_raises_malformed(simulator):
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    contract.assert_truncated_answer_is_malformed(simulator, task)
    with pytest.raises(MalformedResponse):  # a search answer where reader data (an object) belongs
        ADAPTER.parse(task, 200, {}, json.dumps({"code": 200, "status": 20000, "data": []}))


def test_jinas_published_search_example_parses_into_results_and_bills_its_items_tokens():
    """Jina's own example answer (fixtures/vendors/jina/SOURCES.md) has no `meta` and no header:
    the call is billed the tokens its results carry."""
    fixture = json.loads((contract.fixtures / "search_published_example.json").read_text())
    body = fixture["body"]
    parsed = ADAPTER.parse(VendorTask("search", "When was Jina AI founded?"), 200, {}, json.dumps(body))
    assert [r.url for r in parsed.results] == [item["url"] for item in body["data"]]
    assert [r.content for r in parsed.results] == [item["content"] for item in body["data"]]
    assert [r.snippet for r in parsed.results] == [item["description"] for item in body["data"]]
    assert parsed.billed_units == {"token": float(sum(item["usage"]["tokens"] for item in body["data"]))}
    assert "meta" not in body  # so the per-result usage, not meta.usage, was what was read


def test_the_simulators_search_answer_has_the_shape_of_jinas_published_example(simulator):
    example = json.loads((contract.fixtures / "search_published_example.json").read_text())["body"]
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    resp = contract.send(ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {}))
    assert resp.status_code == 200
    assert shape_differences(example, resp.json()) == []
