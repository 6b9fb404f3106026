"""Response classification with the real adapters: one class per archived response, a 200 can fail.

Each case is an archived final attempt as the fetch engine stores it (status, headers, body,
transport error), read by the vendor's own adapter the way scoring reads it.
"""

from __future__ import annotations

import json

import pytest

from bench_assets.adapters import get_adapter
from bench_assets.fetch.classify import (
    RESPONSE_CLASSES,
    SPEND_CEILING_REACHED,
    classify_response,
    is_challenge,
    looks_like_challenge,
)
from bench_assets.simulator.faults import CHALLENGE_HTML

JSON = {"content-type": "application/json"}
CLOUDFLARE_PAGE = CHALLENGE_HTML.format(host="api.exa.ai", ray="8f1e2d3c4b5a6978")
CLOUDFLARE_HEADERS = {"content-type": "text/html; charset=UTF-8", "cf-mitigated": "challenge", "server": "cloudflare"}
RECAPTCHA_PAGE = (
    "<!DOCTYPE html><html><head><title>Sorry...</title></head><body><p>Our systems have detected "
    'unusual traffic from your computer network.</p><div class="g-recaptcha"></div></body></html>'
)
EXA_OK = {
    "requestId": "req-1",
    "results": [
        {"url": "https://example.com/a", "title": "A", "text": "alpha"},
        {"url": "https://example.com/b", "title": "B", "text": "beta"},
    ],
    "costDollars": {"total": 0.007},
}


def classify(
    vendor: str,
    capability: str,
    status: int | None,
    body: str | dict | None = None,
    headers: dict[str, str] | None = None,
    transport_error: str | None = None,
):
    text = json.dumps(body) if isinstance(body, dict) else body
    return classify_response(
        get_adapter(vendor), capability, status, JSON if headers is None else headers, text, transport_error
    )


# ##### ONE CASE PER CLASS


def test_ok_carries_the_parsed_results():
    c = classify("exa", "search", 200, EXA_OK)
    assert c.response_class == "ok"
    assert [r.url for r in c.parsed.results] == ["https://example.com/a", "https://example.com/b"]
    assert c.parsed.request_id == "req-1" and c.detail is None


@pytest.mark.parametrize(
    "vendor, capability, status, body",
    [
        ("exa", "search", 200, {"requestId": "req-2", "results": []}),
        ("brave", "search", 200, {"type": "search", "web": {"results": []}}),
        (
            "serpapi",
            "search",
            200,
            {
                "search_metadata": {"id": "s1", "status": "Success"},
                "error": "Google hasn't returned any results for this query.",
            },
        ),
        # Jina answers a search that finds nothing with 422 "No search results": an empty list, not an error
        (
            "jina",
            "search",
            422,
            {
                "data": None,
                "code": 422,
                "name": "AssertionFailureError",
                "status": 42206,
                "message": "No search results available for query x",
                "readableMessage": "AssertionFailureError: No search results available for query x",
            },
        ),
    ],
)
def test_a_success_with_no_results_is_empty(vendor, capability, status, body):
    c = classify(vendor, capability, status, body)
    assert c.response_class == "empty", c
    assert c.parsed is not None and c.parsed.results == ()


@pytest.mark.parametrize(
    "status, headers, body",
    [
        (200, CLOUDFLARE_HEADERS, CLOUDFLARE_PAGE),  # a 200 challenge page: the CDN answered, not the vendor
        (200, {"content-type": "text/html"}, CLOUDFLARE_PAGE),  # no header: the page alone gives it away
        (200, {"content-type": "text/html"}, RECAPTCHA_PAGE),
        (403, {"content-type": "text/html"}, CLOUDFLARE_PAGE),  # a managed challenge is served as 403: not "auth"
        (429, {"content-type": "text/html"}, RECAPTCHA_PAGE),  # a bot wall's 429 is not the vendor's quota
        (503, CLOUDFLARE_HEADERS, CLOUDFLARE_PAGE),
        (403, {"cf-mitigated": "challenge"}, ""),  # Cloudflare's own marker, whatever the body
    ],
)
def test_a_challenge_page_is_blocked_at_any_status(status, headers, body):
    c = classify("exa", "search", status, body, headers)
    assert c.response_class == "blocked", c
    assert c.parsed is None and str(status) in c.detail


@pytest.mark.parametrize(
    "vendor, status, body",
    [
        ("exa", 401, {"requestId": "r", "error": "Invalid API key"}),
        ("exa", 403, "Access denied: invalid API key"),  # a vendor's plain-text 403 is not a challenge page
        ("brave", 422, {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 422}}),
        ("tavily", 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}),
    ],
)
def test_a_refused_key_is_auth(vendor, status, body):
    assert classify(vendor, "search", status, body).response_class == "auth"


@pytest.mark.parametrize(
    "vendor, status, body",
    [
        ("exa", 402, {"requestId": "r", "error": "out of credits", "tag": "NO_MORE_CREDITS"}),
        ("brave", 402, {"type": "ErrorResponse", "error": {"code": "CREDIT_EXHAUSTED", "status": 402}}),
        ("serpapi", 429, {"error": "Your account has run out of searches."}),
    ],
)
def test_exhausted_credit_is_quota(vendor, status, body):
    assert classify(vendor, "search", status, body).response_class == "quota"


@pytest.mark.parametrize(
    "vendor, status, body",
    [
        ("exa", 429, {"requestId": "r", "error": "rate limit exceeded"}),
        ("serpapi", 429, {"error": "Too many requests. Please slow down."}),
        ("tavily", 429, {"detail": {"error": "Rate limit exceeded"}}),
    ],
)
def test_a_429_that_outlasted_the_retries_is_rate_limited_not_quota(vendor, status, body):
    """A rate-limit storm is not an empty account: the two are counted apart everywhere classes are."""
    assert classify(vendor, "search", status, body).response_class == "rate_limited"


def test_the_manifests_spend_ceiling_is_quota_evidence_not_sent():
    c = classify("exa", "search", None, None, {}, transport_error=SPEND_CEILING_REACHED)
    assert c.response_class == "quota" and "spend ceiling" in c.detail


@pytest.mark.parametrize(
    "vendor, status, body, transport_error",
    [
        ("exa", 500, {"requestId": "r", "error": "internal error"}, None),
        ("exa", 502, "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>", None),
        # SerpApi reports an upstream failure inside a 200
        ("serpapi", 200, {"search_metadata": {"id": "s", "status": "Error"}, "error": "upstream failure"}, None),
        ("exa", None, None, "connection_error: ConnectError: connection reset by peer"),
    ],
)
def test_server_errors_and_lost_connections_are_server(vendor, status, body, transport_error):
    c = classify(vendor, "search", status, body, transport_error=transport_error)
    assert c.response_class == "server", c


@pytest.mark.parametrize(
    "transport_error, status", [("timeout: ReadTimeout", None), ("timeout: ReadTimeout after headers", 200)]
)
def test_no_complete_answer_in_time_is_timeout(transport_error, status):
    # "after headers": the status arrived, the body did not; what arrived is not read as an answer
    c = classify("exa", "search", status, '{"results": [{"url": "https://exa', transport_error=transport_error)
    assert c.response_class == "timeout" and c.parsed is None


@pytest.mark.parametrize(
    "vendor, capability, body",
    [
        ("exa", "search", '{"requestId": "r", "results": [{"url": "https://example.com/a", "ti'),  # truncated
        ("exa", "search", json.dumps(EXA_OK) + '\n}{"garbage": tru'),  # the vendor's body followed by garbage
        ("exa", "search", json.dumps({"requestId": "r", "data": []})),  # valid JSON, not the vendor's shape
        ("firecrawl", "extract", json.dumps({"success": "yes", "data": {}})),
        ("brave", "search", "[]"),
    ],
)
def test_a_200_the_adapter_cannot_read_is_malformed(vendor, capability, body):
    c = classify(vendor, capability, 200, body)
    assert c.response_class == "malformed", c
    assert c.parsed is None and vendor in c.detail


@pytest.mark.parametrize(
    "vendor, status, body",
    [
        ("exa", 400, {"requestId": "r", "error": "numResults must be at most 100"}),
        ("exa", 404, {"requestId": "r", "error": "not found"}),
    ],
)
def test_a_request_the_vendor_refuses_as_invalid_is_rejected(vendor, status, body):
    assert classify(vendor, "search", status, body).response_class == "rejected"


def test_every_class_is_one_of_the_published_classes():
    cases = [
        classify("exa", "search", 200, EXA_OK),
        classify("exa", "search", 200, CLOUDFLARE_PAGE),
        classify("exa", "search", 500, {"error": "x"}),
        classify("exa", "search", 200, "{"),
    ]
    assert {c.response_class for c in cases} <= set(RESPONSE_CLASSES)


def test_an_attempt_with_neither_status_nor_transport_error_is_refused():
    with pytest.raises(ValueError, match="neither an HTTP status nor a transport error"):
        classify("exa", "search", None, None)


# ##### THE CHALLENGE TEST ITSELF


def test_challenge_markers_in_json_or_a_vendors_text_are_not_a_challenge():
    # a JSON answer that mentions a captcha is an answer
    body = json.dumps({"results": [{"url": "https://example.com", "title": "How CAPTCHA works"}]})
    assert not looks_like_challenge(body)
    assert not is_challenge(200, JSON, body)
    assert not is_challenge(401, {}, "Access denied")  # a vendor's plain-text 4xx keeps its code
    assert is_challenge(503, {}, "DDoS protection by Cloudflare")  # plain text, but a 5xx
    assert not looks_like_challenge(None) and not looks_like_challenge("")


def test_every_surface_that_enumerates_the_classes_has_rate_limited_apart_from_quota():
    """The classes scoring gives are the classes counted, described and allowed by the schema:
    the aggregation's counts and the CSV's `class_<name>` columns (both generated from
    RESPONSE_CLASSES), the methodology's meanings and the leaderboard schema."""
    from bench_assets.aggregate.leaderboard import leaderboard_rows
    from bench_assets.publish.files import leaderboard_schema
    from bench_assets.publish.format import CLASS_MEANINGS

    assert "rate_limited" in RESPONSE_CLASSES and "quota" in RESPONSE_CLASSES
    assert set(CLASS_MEANINGS) == set(RESPONSE_CLASSES)
    assert "rate limit" not in CLASS_MEANINGS["quota"] and "retry" in CLASS_MEANINGS["rate_limited"]
    vendor = leaderboard_schema()["$defs"]["vendor"]["properties"]["response_classes"]
    assert vendor["propertyNames"]["enum"] == list(RESPONSE_CLASSES)
    entry = {
        "vendor": "exa",
        "status": "scored",
        "headline_eligible": False,
        "metrics": {},
        "reasons": [],
        "response_classes": {"ok": 3, "quota": 1, "rate_limited": 2},
    }
    row = leaderboard_rows({"rank_metric": "correct_rate", "vendors": [entry]})[0]
    assert (row["class_quota"], row["class_rate_limited"], row["class_ok"]) == (1, 2, 3)
