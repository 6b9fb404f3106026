"""Tavily's API as documented: POST /search and /extract on api.tavily.com, key as Bearer token."""

from __future__ import annotations

import threading
from collections import Counter

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "tavily"
HOST = "api.tavily.com"
CREDIT_USD = 0.008  # pay-as-you-go price of one credit
SEARCH_CREDITS = {"basic": 1, "fast": 1, "ultra-fast": 1, "advanced": 2}
# Extract costs 1 credit per 5 successful URLs (basic), 2 per 5 (advanced)
# (docs.tavily.com/documentation/api-credits; docs.tavily.com/examples/quick-tutorials/extract-api).
# Credits are whole: usage.credits is 0 until a key's fifth successful URL, then 1 (2), and so on,
# amortised over the key's calls, not 0.2 a URL. The running count is kept per key and depth.
EXTRACT_CREDITS_PER_5_URLS = {"basic": 1, "advanced": 2}
_extracted: Counter[tuple[str, str]] = Counter()
_extracted_lock = threading.Lock()


def amortised_extract_credits(key: str, depth: str, successes: int) -> int:
    """Whole credits a call with `successes` extracted URLs is charged: the 5-URL blocks the key's
    running count of successful URLs completes with this call."""
    with _extracted_lock:
        before = _extracted[key, depth]
        _extracted[key, depth] = before + successes
    return ((before + successes) // 5 - before // 5) * EXTRACT_CREDITS_PER_5_URLS[depth]


def _error(status: int, message: str) -> Response:
    return JSONResponse({"detail": {"error": message}}, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    return _error(401, "Unauthorized: missing or invalid API key.")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # 432: "This request exceeds your plan's set usage limit" (vendors.md §2; the SDK raises
    # ForbiddenError for 403/432/433). 433, reportedly the pay-as-you-go limit (?), is read the same way.
    return _error(
        432, "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com"
    )


# The API reference's OpenAPI examples (fixtures/vendors/tavily/SOURCES.md).
DOCUMENTED_ERRORS = {
    429: "Your request has been blocked due to excessive requests. Please reduce rate of requests.",
    500: "Internal Server Error",
}


def error_response(status: int, message: str) -> Response:
    # Every Tavily error is {"detail": {"error": ...}}, with the documented message where there is one.
    return _error(status, DOCUMENTED_ERRORS.get(status, message))


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict) or not isinstance(body.get("query"), str) or not body["query"].strip():
        return _error(400, "Query is missing.")
    query = body["query"]
    if len(query) > 400:
        return _error(400, "Query is too long. Max query length is 400 characters.")
    depth = body.get("search_depth") or "basic"
    if depth not in SEARCH_CREDITS:
        return _error(400, f"Invalid search depth: {depth}. Must be one of {sorted(SEARCH_CREDITS)}.")
    n = body.get("max_results", 5)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0 or n > 20:
        return _error(400, "max_results must be between 0 and 20.")
    topic = body.get("topic") or "general"
    raw = body.get("include_raw_content")
    request_id = sim.request_id(VENDOR)
    results = []
    await sim.mode_delay(VENDOR, depth, query)
    for hit in sim.search(VENDOR, query, n, mode=depth):
        item = {
            "url": sim.result_url(VENDOR, hit.page),
            "title": hit.page.title,
            "content": hit.snippet,
            "score": hit.score,
        }
        if raw:  # "Only if `include_raw_content` is true" (openapi-search.yaml)
            item["raw_content"] = sim.extract(VENDOR, hit.page)
        if topic == "news":  # Tavily returns published_date for the news topic only
            item["published_date"] = f"{hit.page.published}T00:00:00Z"
        results.append(item)
    credits = SEARCH_CREDITS[depth]
    sim.bill(VENDOR, "search", request_id, units={"credit": credits}, usd=round(credits * CREDIT_USD, 6))
    # No `answer` (none is generated) and no null in its place: the API reference's OpenAPI types
    # it as a string (fixtures/vendors/tavily/openapi-search.yaml).
    out = {
        "query": query,
        "images": [],
        "results": results,
        "response_time": 0.87,
        "request_id": request_id,
    }
    if body.get("include_usage"):
        out["usage"] = {"credits": credits}
    return JSONResponse(out)


async def extract(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    urls = body.get("urls") if isinstance(body, dict) else None
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        return _error(400, "urls is required.")
    if len(urls) > 20:
        return _error(400, "Max 20 URLs are allowed.")
    depth = body.get("extract_depth") or "basic"
    if depth not in EXTRACT_CREDITS_PER_5_URLS:
        return _error(400, f"Invalid extract depth: {depth}.")
    request_id = sim.request_id(VENDOR)
    results, failed = [], []
    for url in urls:
        page = sim.page(url)
        if page is None:
            failed.append({"url": url, "error": "Failed to fetch url"})
            continue
        results.append({"url": url, "raw_content": sim.extract(VENDOR, page), "images": []})
    key = req.headers.get("authorization", "")
    credits = amortised_extract_credits(key, depth, len(results))
    sim.bill(VENDOR, "extract", request_id, units={"credit": credits}, usd=round(credits * CREDIT_USD, 6))
    out = {"results": results, "failed_results": failed, "response_time": 0.42, "request_id": request_id}
    if body.get("include_usage"):
        out["usage"] = {"credits": credits}
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "POST", "/search", search, auth_header="authorization", auth_scheme="Bearer"),
        VendorRoute(VENDOR, HOST, "POST", "/extract", extract, auth_header="authorization", auth_scheme="Bearer"),
    ]
