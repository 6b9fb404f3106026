"""Brave Search API as documented: GET /res/v1/web/search, key in X-Subscription-Token."""

from __future__ import annotations

import time

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "brave"
HOST = "api.search.brave.com"


def _error(status: int, code: str, detail: str, component: str = "authentication") -> Response:
    return JSONResponse(
        {
            "type": "ErrorResponse",
            "error": {
                "id": "00000000-0000-0000-0000-000000000000",
                "status": status,
                "code": code,
                "detail": detail,
                "meta": {"component": component},
            },
            "time": int(time.time()),
        },
        status_code=status,
    )


def unauthorized(req: SimRequest) -> Response:
    # Brave answers an invalid token with 422 SUBSCRIPTION_TOKEN_INVALID (captured live, vendors.md §3).
    return _error(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # (?) vendors.md §3: the code CREDIT_EXHAUSTED is seen in a 3p test; its HTTP status is not
    # documented, 402 is assumed. The envelope is Brave's documented ErrorResponse.
    return _error(
        402,
        "CREDIT_EXHAUSTED",
        "Your plan's credit is exhausted. Add credit in the API dashboard.",
        component="billing",
    )


def error_response(status: int, message: str) -> Response:
    # 429 is RATE_LIMITED (probably, vendors.md §3 (?)); the 500 code is not documented (?).
    if status == 429:
        return _error(429, "RATE_LIMITED", f"Request rate limit exceeded for plan ({message}).", "rate_limiter")
    return _error(status, "INTERNAL_ERROR", message, component="backend")


async def web_search(sim: Simulator, req: SimRequest) -> Response:
    q = req.params.get("q", "")
    if not q.strip() or len(q) > 400 or len(q.split()) > 50:
        return _error(
            422, "VALIDATION", "q is required and must be at most 400 characters and 50 words", component="validation"
        )
    try:
        count = int(req.params.get("count", "20"))
        offset = int(req.params.get("offset", "0"))
    except ValueError:
        return _error(422, "VALIDATION", "count and offset must be integers", component="validation")
    if not 1 <= count <= 20 or not 0 <= offset <= 9:
        return _error(422, "VALIDATION", "count must be 1-20 and offset 0-9", component="validation")
    extra = req.params.get("extra_snippets", "false").lower() == "true"
    # offset counts pages of `count` results
    hits = sim.search(VENDOR, q, count * (offset + 1))[count * offset :]
    results = []
    for hit in hits:
        item = {
            "type": "search_result",
            "title": hit.page.title,
            "url": sim.result_url(VENDOR, hit.page),
            "description": hit.snippet.split(". ")[0],
            "page_age": f"{hit.page.published}T00:00:00",
            "age": hit.page.published,
            "language": "en",
            "family_friendly": True,
            "meta_url": {"scheme": "https", "hostname": hit.page.host},
        }
        if extra:
            item["extra_snippets"] = list(hit.page.paragraphs[:3])
        results.append(item)
    sim.bill(VENDOR, "search", sim.request_id(VENDOR))
    headers = {
        "X-RateLimit-Limit": "50, 15000",
        "X-RateLimit-Policy": "50;w=1, 15000;w=2592000",
        "X-RateLimit-Remaining": "49, 14000",
        "X-RateLimit-Reset": "1, 1000000",
    }
    return JSONResponse(
        {
            "type": "search",
            "query": {"original": q, "more_results_available": False},
            "web": {"type": "search", "results": results},
        },
        headers=headers,
    )


def routes(sim: Simulator) -> list[VendorRoute]:
    return [VendorRoute(VENDOR, HOST, "GET", "/res/v1/web/search", web_search, auth_header="x-subscription-token")]
