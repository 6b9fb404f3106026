"""Every adapter reads any body it is handed: a shape the vendor documents parses, anything else is
`malformed` evidence (MalformedResponse, which classification records), never another exception
and never a result whose URL is not a string.

The named cases are bodies vendors publish or bodies seen from them (fixtures/vendors/<vendor>/,
each cited in SOURCES.md there); the property tests feed every adapter arbitrary JSON, and the
vendors' own bodies with parts replaced by arbitrary JSON, at success and error statuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench_assets.adapters import available_adapters, get_adapter
from bench_assets.adapters.base import VENDOR_ERROR_CLASSES, MalformedResponse, ParsedResponse, VendorTask
from bench_assets.fetch.classify import classify_response
from bench_assets_tests.helpers import FIXTURES

VENDORS = sorted(available_adapters())
FIXTURE_DIR = FIXTURES / "vendors"


def fixture(vendor: str, name: str) -> dict[str, Any]:
    return json.loads((FIXTURE_DIR / vendor / f"{name}.json").read_text())


def read(
    vendor: str, capability: str, status: int, body: Any, text: str = "https://example.com/page"
) -> ParsedResponse:
    raw = body if isinstance(body, str) else json.dumps(body)
    return get_adapter(vendor).parse(VendorTask(capability, text), status, {}, raw)  # type: ignore[arg-type]


def classified(vendor: str, capability: str, status: int, body: Any) -> str:
    raw = body if isinstance(body, str) else json.dumps(body)
    return classify_response(get_adapter(vendor), capability, status, {}, raw, None).response_class  # type: ignore[arg-type]


# ##### THE NAMED CASES


@pytest.mark.parametrize("name", ["error_422_subscription_token_invalid", "error_422_subscription_token_invalid_bare"])
def test_braves_422_for_an_invalid_subscription_token_is_an_auth_failure(name):
    case = fixture("brave", name)
    assert read("brave", "search", case["status"], case["body"]).error_class == "auth"
    assert classified("brave", "search", case["status"], case["body"]) == "auth"


def test_braves_422_for_an_invalid_parameter_is_still_a_bad_request():
    body = {"error": {"code": "VALIDATION", "meta": {"errors": [{"loc": ["query", "count"]}]}, "status": 422}}
    assert read("brave", "search", 422, body).error_class == "bad_request"


def test_firecrawl_search_with_scrape_options_can_answer_a_flat_list():
    case = fixture("firecrawl", "ok_search_scraped_content_docs")
    parsed = read("firecrawl", "search", case["status"], case["body"])
    assert [r.url for r in parsed.results] == case["expected_urls"]
    assert parsed.results[0].content and parsed.results[0].content.startswith("# Firecrawl")
    # an item that is a bare URL is a result with that URL (as Firecrawl's own SDKs read it)
    bare = read(
        "firecrawl",
        "search",
        200,
        {"success": True, "data": {"web": ["https://a.test/1", {"url": "https://a.test/2"}]}},
    )
    assert [r.url for r in bare.results] == ["https://a.test/1", "https://a.test/2"]


def test_a_serpapi_body_whose_search_metadata_is_not_an_object_is_malformed():
    case = fixture("serpapi", "malformed_200_search_metadata_not_object")
    with pytest.raises(MalformedResponse):
        read("serpapi", "search", case["status"], case["body"])
    assert classified("serpapi", "search", case["status"], case["body"]) == case["expected_class"]


@pytest.mark.parametrize(
    ("vendor", "capability", "body"),
    [
        ("exa", "search", {"results": [{"url": 7, "title": "x"}, {"url": "https://a.test/1", "title": 3}]}),
        ("firecrawl", "extract", {"success": True, "data": {"markdown": "text", "metadata": {"sourceURL": 12345}}}),
        ("firecrawl", "search", {"success": True, "data": {"web": [{"url": ["x"]}, {"url": "https://a.test/1"}]}}),
        (
            "jina",
            "search",
            {"code": 200, "data": [{"url": None, "content": "a"}, {"url": "https://a.test/1", "title": 1.5}]},
        ),
        ("youcom", "extract", [{"url": 5, "markdown": "x"}, {"url": "https://a.test/1", "title": [], "markdown": "y"}]),
        ("linkup", "search", {"results": [{"url": {"u": 1}, "name": "n"}, {"url": "https://a.test/1", "name": "n"}]}),
        (
            "serper",
            "search",
            {"searchParameters": {}, "organic": [{"link": 3}, {"link": "https://a.test/1", "snippet": 9}]},
        ),
    ],
)
def test_a_result_whose_url_is_not_a_string_never_reaches_the_results(vendor, capability, body):
    parsed = read(vendor, capability, 200, body)
    assert all(isinstance(r.url, str) for r in parsed.results)
    assert [r.url for r in parsed.results] in (["https://a.test/1"], ["https://example.com/page"])
    assert [r.rank for r in parsed.results] == list(range(1, len(parsed.results) + 1))
    for r in parsed.results:
        assert all(v is None or isinstance(v, str) for v in (r.title, r.snippet, r.content, r.published))


@pytest.mark.parametrize("vendor", VENDORS)
def test_json_nested_too_deep_to_read_is_malformed_at_success_and_an_error_class_otherwise(vendor):
    deep = "[" * 100_000 + "]" * 100_000
    capability = sorted(get_adapter(vendor).capabilities)[0]
    with pytest.raises(MalformedResponse):
        read(vendor, capability, 200, deep)
    assert read(vendor, capability, 500, deep).error_class in VENDOR_ERROR_CLASSES


# ##### ANY JSON AT ALL

KEYS = st.sampled_from(
    [
        "url",
        "link",
        "title",
        "results",
        "data",
        "web",
        "organic",
        "search_metadata",
        "status",
        "success",
        "error",
        "code",
        "meta",
        "metadata",
        "markdown",
        "content",
        "snippet",
        "description",
        "text",
        "items",
        "hits",
        "sourceURL",
        "publishedDate",
        "date",
        "requestId",
        "id",
        "organic_results",
        "search_results",
        "excerpts",
        "answer",
        "sources",
        "detail",
        "type",
        "costDollars",
        "creditsUsed",
        "usage",
        "published",
        "page_age",
    ]
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.just("https://example.org/a"),
)
ANY_JSON = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(KEYS | st.text(max_size=4), inner, max_size=6)
    ),
    max_leaves=30,
)
STATUSES = st.sampled_from(
    [200, 200, 200, 201, 204, 400, 401, 402, 403, 404, 408, 409, 410, 422, 429, 432, 433, 500, 502, 503]
)


def vendor_bodies() -> dict[str, list[tuple[str, Any]]]:
    """Each vendor's recorded bodies (ok_, error_ and documented examples) with their capability."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for vendor in VENDORS:
        for path in sorted((FIXTURE_DIR / vendor).glob("*.json")):
            data = json.loads(path.read_text())
            if isinstance(data, dict) and "body" in data and not isinstance(data["body"], str):
                out.setdefault(vendor, []).append((data.get("capability", "search"), data["body"]))
            elif (
                isinstance(data, (dict, list))
                and not str(path.name).endswith("schema.json")
                and "openapi" not in path.name
            ):
                out.setdefault(vendor, []).append(("search", data))
    return out


BODIES = vendor_bodies()


def assert_read_or_malformed(vendor: str, capability: str, status: int, text: str) -> None:
    adapter = get_adapter(vendor)
    if capability not in adapter.capabilities:
        return
    try:
        parsed = adapter.parse(VendorTask(capability, "https://example.com/page"), status, {}, text)  # type: ignore[arg-type]
    except MalformedResponse:
        assert 200 <= status < 300, (
            "only a success body can be malformed; an error status is classed by the vendor's codes"
        )
        return
    assert isinstance(parsed, ParsedResponse)
    assert parsed.error_class is None or parsed.error_class in VENDOR_ERROR_CLASSES
    for r in parsed.results:
        assert isinstance(r.url, str), r
        assert all(v is None or isinstance(v, str) for v in (r.title, r.snippet, r.content, r.published)), r
    assert [r.rank for r in parsed.results] == sorted(r.rank for r in parsed.results)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(VENDORS), st.sampled_from(["search", "extract"]), STATUSES, ANY_JSON)
def test_any_json_is_read_or_malformed(vendor, capability, status, body):
    assert_read_or_malformed(vendor, capability, status, json.dumps(body))


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    node = copy
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = new
    return copy


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(BODIES)), STATUSES, st.data())
def test_the_vendors_own_bodies_with_any_part_replaced_are_read_or_malformed(vendor, status, data):
    capability, body = data.draw(st.sampled_from(BODIES[vendor]))
    for _ in range(data.draw(st.integers(1, 3))):
        body = _replaced(body, data.draw(st.sampled_from(_paths(body))), data.draw(ANY_JSON))
    assert_read_or_malformed(vendor, capability, status, json.dumps(body))


def test_every_vendor_has_recorded_bodies_to_mutate():
    assert set(BODIES) == set(VENDORS)
    assert all(Path(FIXTURE_DIR / v / "SOURCES.md").exists() for v in VENDORS)
