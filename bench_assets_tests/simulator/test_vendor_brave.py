"""Brave Search API: our adapter against the simulator over a real socket, and, Brave having no official
Python SDK, against Brave's error bodies as published (fixtures/vendors/brave/SOURCES.md) and
search responses built from its documented fields."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.brave import MANIFEST_DEFAULTS, BraveAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.documented_shape import shape_differences
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "brave"
ADAPTER = BraveAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200
    assert resp.headers["x-ratelimit-limit"] and resp.headers["x-ratelimit-remaining"]
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.published.startswith(page.published)
    # description plus the extra snippets the adapter asks for
    assert hit.snippet.count("\n") >= 1 and page.paragraphs[0] in hit.snippet
    assert not any("<strong>" in r.snippet for r in parsed.results)  # decorations turned off
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("GET", "/res/v1/web/search", True)
    assert logged["params"] == {
        "q": page.query,
        "count": "10",
        "extra_snippets": "true",
        "text_decorations": "false",
    }
    assert logged["headers"]["accept"] == "application/json"
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005)


def test_parsing_leaves_the_response_body_untouched():
    fixture = json.loads((contract.fixtures / "search_example.json").read_text())
    body = fixture["body"]
    before = json.dumps(body, sort_keys=True)
    ADAPTER.parse_ok(VendorTask("search", "q"), body, {})
    assert json.dumps(body, sort_keys=True) == before


@pytest.mark.parametrize("name", ["search_example", "search_no_web_section"])
def test_documented_search_responses_parse_to_the_expected_urls(name):
    fixture = json.loads((contract.fixtures / f"{name}.json").read_text())
    parsed = ADAPTER.parse(
        VendorTask("search", "q"), fixture["status"], fixture["headers"], json.dumps(fixture["body"])
    )
    assert parsed.error_class is None
    assert [r.url for r in parsed.results] == fixture["expected_urls"]
    assert [r.rank for r in parsed.results] == list(range(1, len(fixture["expected_urls"]) + 1))
    if "expected_published" in fixture:
        assert [r.published for r in parsed.results] == fixture["expected_published"]
        first = fixture["body"]["web"]["results"][0]
        assert parsed.results[0].snippet == "\n".join([first["description"], *first["extra_snippets"]])
    assert parsed.billed_units == {"request.search": 1.0}  # Brave bills every successful request


def test_the_simulator_answers_in_the_documented_shape(simulator):
    """The simulator's response has every field the documented example has, at the same paths."""
    example = json.loads((contract.fixtures / "search_example.json").read_text())["body"]
    resp, _ = contract.call(simulator, VendorTask("search", contract.golden_page().query, 5))
    body = resp.json()
    assert body["type"] == example["type"] == "search"
    assert body["web"]["type"] == "search" and body["query"]["original"]
    for result in body["web"]["results"]:
        assert {"type", "title", "url", "description", "page_age", "age", "meta_url"} <= set(result)
        assert result["type"] == "search_result"


def test_offset_pages_through_the_results(simulator):
    query = contract.golden_page().query
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    headers = {"X-Subscription-Token": sim_key(VENDOR), "Accept": "application/json"}

    def urls(**params) -> list[str]:
        body = httpx.get(url, params={"q": query, **params}, headers=headers, timeout=10).json()
        return [r["url"] for r in body["web"]["results"]]

    six = urls(count=6)
    assert len(set(six)) == 6
    assert urls(count=3) + urls(count=3, offset=1) == six


@pytest.mark.parametrize("decorations", [None, "true"])
def test_descriptions_carry_strong_tags_unless_decorations_are_turned_off(simulator, decorations):
    """text_decorations defaults to true ("Include highlighting markers (default: true)",
    brave/brave-search-mcp-server README): the query's words come back in <strong> tags."""
    query = contract.golden_page().query
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    params = {"q": query, "count": 5} | ({"text_decorations": decorations} if decorations else {})
    body = httpx.get(url, params=params, headers={"X-Subscription-Token": sim_key(VENDOR)}, timeout=10).json()
    assert any("<strong>" in r["description"] for r in body["web"]["results"])
    plain = httpx.get(
        url,
        params={**params, "text_decorations": "false"},
        headers={"X-Subscription-Token": sim_key(VENDOR)},
        timeout=10,
    ).json()
    assert not any("<strong>" in r["description"] for r in plain["web"]["results"])
    assert [r["description"].replace("<strong>", "").replace("</strong>", "") for r in body["web"]["results"]] == [
        r["description"] for r in plain["web"]["results"]
    ]


def test_a_missing_key_is_a_422_validation_error_on_the_header_classed_auth(simulator, sim_logs):
    """Brave's answer when X-Subscription-Token is not sent (brave/brave-search-mcp-server#56)."""
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.get(url, params={"q": "anything"}, timeout=10)
    error = resp.json()["error"]
    assert resp.status_code == 422 and error["code"] == "VALIDATION"
    assert error["meta"]["errors"][0]["loc"] == ["header", "x-subscription-token"]
    assert ADAPTER.parse(VendorTask("search", "x"), 422, dict(resp.headers), resp.text).error_class == "auth"
    assert sim_logs.billing() == []


def _rate_limited(plan: str, rate: tuple[int, int], quota: tuple[int, int]) -> str:
    """A 429 in the shape brave/brave-search-mcp-server src/BraveAPI/types.ts declares
    (RateLimitErrorResponse); the numbers are ours."""
    meta = {"plan": plan, "rate_limit": rate[0], "rate_current": rate[1], "quota_limit": quota[0]}
    meta |= {"quota_current": quota[1], "component": "rate_limiter"}
    error = {"id": "x", "status": 429, "code": "RATE_LIMITED", "detail": "Request rate limit exceeded for plan"}
    return json.dumps({"type": "ErrorResponse", "error": {**error, "meta": meta}, "time": 1})


@pytest.mark.parametrize(
    "plan, rate, quota, expected",
    [
        ("Free", (1, 1), (2000, 15), "rate_limited"),  # the per-second rate: retry later
        ("Free", (1, 1), (2000, 2000), "quota"),  # the month's quota used up: no retry helps
        ("Free", (1, 0), (2000, 2001), "quota"),
        ("Search", (50, 50), (0, 14), "rate_limited"),  # a paid plan reports no monthly quota (0)
    ],
)
def test_a_429_is_out_of_quota_only_when_the_monthly_quota_is_used_up(plan, rate, quota, expected):
    body = _rate_limited(plan, rate, quota)
    assert ADAPTER.parse(VendorTask("search", "q"), 429, {}, body).error_class == expected


def test_out_of_credit_is_the_429_with_the_quota_used_up(sim_control):
    assert sim_control.credits({VENDOR: 0}).status_code == 200
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], sim_control.url)
    resp = httpx.get(url, params={"q": "anything"}, headers={"X-Subscription-Token": sim_key(VENDOR)}, timeout=10)
    meta = resp.json()["error"]["meta"]
    assert resp.status_code == 429 and resp.json()["error"]["code"] == "RATE_LIMITED"
    assert meta["quota_current"] >= meta["quota_limit"] > 0
    assert ADAPTER.parse(VendorTask("search", "x"), 429, dict(resp.headers), resp.text).error_class == "quota"


@pytest.mark.parametrize(
    "status, code, expected",
    [
        (422, "SUBSCRIPTION_TOKEN_INVALID", "auth"),
        (404, "SUBSCRIPTION_NOT_FOUND", "auth"),
        (402, "CREDIT_EXHAUSTED", "quota"),
        (422, "VALIDATION", "bad_request"),
        (500, "INTERNAL_ERROR", "server"),
    ],
)
def test_codes_with_no_published_body_are_classified_by_code(status, code, expected):
    """Codes seen in Brave's answers but with no full published body: our own envelope around them."""
    body = {"type": "ErrorResponse", "error": {"id": "x", "status": status, "code": code, "detail": "d", "meta": {}}}
    assert ADAPTER.parse(VendorTask("search", "q"), status, {}, json.dumps(body)).error_class == expected


def test_wrong_key_gets_the_vendor_422_and_is_classed_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(
        simulator, sim_logs, 422
    )  # nothing billed: Brave bills successful requests only
    assert resp.json()["type"] == "ErrorResponse" and resp.json()["error"]["code"] == "SUBSCRIPTION_TOKEN_INVALID"


@pytest.mark.parametrize(
    "params", [{}, {"q": " "}, {"q": "x", "count": "21"}, {"q": "x", "offset": "10"}, {"q": " ".join(["w"] * 51)}]
)
def test_invalid_parameters_get_the_vendor_422_and_are_a_bad_request(simulator, params):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.get(url, params=params, headers={"X-Subscription-Token": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "VALIDATION"
    # Same status as a bad token, but not an auth failure: the code tells them apart.
    assert ADAPTER.parse(VendorTask("search", "x"), 422, dict(resp.headers), resp.text).error_class == "bad_request"


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"type": "search", "web": {"results": "none"}}))


# ##### BRAVE'S OWN TYPES OF THE RESPONSE (fixtures/vendors/brave/web_search_response.schema.json)

RESPONSE_TYPES = jsonschema.Draft202012Validator(
    json.loads((contract.fixtures / "web_search_response.schema.json").read_text())
)


def _type_errors(body: dict) -> list[str]:
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in RESPONSE_TYPES.iter_errors(body))


@pytest.mark.parametrize("params", [{"count": 10}, {"count": 5, "extra_snippets": "true", "text_decorations": "false"}])
def test_the_simulators_answer_has_the_fields_braves_types_require(simulator, params):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    q = contract.golden_page().query
    resp = httpx.get(url, params={"q": q, **params}, headers={"X-Subscription-Token": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 200 and resp.json()["web"]["results"]
    assert _type_errors(resp.json()) == []


@pytest.mark.parametrize("name", ["search_example", "search_no_web_section"])
def test_the_search_fixtures_have_the_fields_braves_types_require(name):
    assert _type_errors(json.loads((contract.fixtures / f"{name}.json").read_text())["body"]) == []


def test_braves_types_are_not_vacuous():
    result = {"type": "search_result", "title": "t", "url": "u", "language": "en", "family_friendly": True}
    errors = _type_errors({"type": "search", "web": {"type": "search", "results": [result]}})
    assert "web: 'family_friendly' is a required property" in errors
    assert "web/results/0: 'subtype' is a required property" in errors


# ##### THE LLM CONTEXT ENDPOINT (mode llm_context: an endpoint of its own, another response)

LLM_CONTEXT = "https://api.search.brave.com/res/v1/llm/context"


def llm_context_call(simulator, task: VendorTask):
    req = ADAPTER.build(
        task, simulated_url(LLM_CONTEXT, simulator.base_url), sim_key(VENDOR), ADAPTER.modes["llm_context"]
    )
    resp = httpx.request(req.method, req.url, headers=req.headers, params=req.params, timeout=10)
    return req, resp, ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)


def test_braves_documented_llm_context_response_parses_to_its_pages_and_their_content():
    """The Standard Response of Brave's own LLM Context documentation (fixtures/vendors/brave/SOURCES.md)."""
    fixture = json.loads((contract.fixtures / "llm_context_example.json").read_text())
    parsed = ADAPTER.parse(
        VendorTask("search", fixture["request"]["q"]), 200, fixture["headers"], json.dumps(fixture["body"])
    )
    assert parsed.error_class is None
    assert [r.url for r in parsed.results] == fixture["expected_urls"]
    assert [r.published for r in parsed.results] == fixture["expected_published"]  # the ISO one of `age`
    (first,) = fixture["body"]["grounding"]["generic"]
    assert parsed.results[0].title == first["title"]
    assert parsed.results[0].content == parsed.results[0].snippet == "\n".join(first["snippets"])
    assert parsed.billed_units == {"request.search": 1.0}  # billed per request, like Web Search


def test_llm_context_round_trip_finds_the_golden_page_with_its_content_and_bills_the_search_price(simulator, sim_logs):
    page = contract.golden_page()
    _, resp, parsed = llm_context_call(simulator, VendorTask("search", page.query, 10))
    assert resp.status_code == 200 and parsed.error_class is None
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.published == page.published
    assert any(phrase in hit.content for phrase in page.anchor_phrases)  # page text, not a description
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("GET", "/res/v1/llm/context", True)
    assert logged["params"] == {"q": page.query, "maximum_number_of_urls": "10"}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.005)


def test_the_simulators_llm_context_answer_has_the_documented_shape(simulator):
    example = json.loads((contract.fixtures / "llm_context_example.json").read_text())["body"]
    _, resp, _ = llm_context_call(simulator, VendorTask("search", contract.golden_page().query, 5))
    body = resp.json()
    assert 0 < len(body["grounding"]["generic"]) <= 5
    assert shape_differences(example["grounding"], body["grounding"]) == []
    # `sources` is keyed by URL: one entry per page given, each of the documented shape
    assert set(body["sources"]) == {g["url"] for g in body["grounding"]["generic"]}
    (documented,) = example["sources"].values()
    assert all(shape_differences(documented, s) == [] for s in body["sources"].values())


def test_llm_context_is_answered_to_a_post_as_to_a_get(simulator):
    """Brave documents both (POST with a JSON body)."""
    query = contract.golden_page().query
    url = simulated_url(LLM_CONTEXT, simulator.base_url)
    headers = {"X-Subscription-Token": sim_key(VENDOR), "Accept": "application/json"}
    got = httpx.get(url, params={"q": query, "maximum_number_of_urls": 4}, headers=headers, timeout=10).json()
    posted = httpx.post(url, json={"q": query, "maximum_number_of_urls": 4}, headers=headers, timeout=10).json()
    assert [g["url"] for g in posted["grounding"]["generic"]] == [g["url"] for g in got["grounding"]["generic"]]
    bad = httpx.get(url, params={"q": query, "maximum_number_of_urls": 51}, headers=headers, timeout=10)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "VALIDATION"


def test_each_brave_mode_is_sent_to_its_own_endpoint_only():
    task = VendorTask("search", "q")
    context = ADAPTER.build(task, LLM_CONTEXT, "k", ADAPTER.modes["llm_context"])
    assert context.method == "GET" and context.params == {"q": "q", "maximum_number_of_urls": 10}
    web = ADAPTER.build(task, MANIFEST_DEFAULTS["endpoints"]["search"], "k", ADAPTER.modes["web"])
    assert web.params["count"] == 10 and "maximum_number_of_urls" not in web.params
    with pytest.raises(ValueError, match="not the mode's endpoint"):
        ADAPTER.build(task, MANIFEST_DEFAULTS["endpoints"]["search"], "k", ADAPTER.modes["llm_context"])
    with pytest.raises(ValueError, match="not the mode's endpoint"):
        ADAPTER.build(task, LLM_CONTEXT, "k", {})  # the default mode is Web Search
