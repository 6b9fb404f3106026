"""Parallel's API as documented: POST /v1/search and /v1/extract on api.parallel.ai, key in x-api-key."""

from __future__ import annotations

import uuid

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "parallel"
HOST = "api.parallel.ai"
MODES = ("turbo", "fast", "basic", "advanced")
INCLUDED_RESULTS = 10  # a search includes 10 results; each further result is $1 per 1,000
EXTRA_RESULT_USD = 0.001
TURBO_USD = 0.001
# Fields the legacy /v1beta body had at the top level; /v1 answers them with 422 (docs rate-limits page).
V1BETA_ONLY = ("max_results", "fetch_policy", "processor", "max_chars_per_result", "excerpts", "full_content")


def _hex_id(prefix: str, request_id: str) -> str:
    return f"{prefix}_{uuid.uuid5(uuid.NAMESPACE_URL, request_id).hex}"


def _error(status: int, message: str, request_id: str, detail: dict | None = None) -> Response:
    error: dict = {"ref_id": _hex_id("ref", request_id), "message": message}
    if detail is not None:
        error["detail"] = detail
    return JSONResponse({"type": "error", "error": error}, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    # (?) The 401 message text is not documented; the envelope is the SDK's ErrorResponse.
    return _error(401, "Unauthorized: invalid or missing API key", "unauthorized")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # (?) The status for insufficient credit is not documented (vendors.md §10): 402 Payment Required
    # is assumed, in the SDK's ErrorResponse envelope (the SDK raises a plain APIStatusError for it).
    return _error(402, "Insufficient credit: add credits to your account to continue", sim.request_id(VENDOR))


def error_response(status: int, message: str) -> Response:
    return _error(status, message, f"error-{status}")  # the SDK's ErrorResponse envelope


def _invalid(request_id: str, field: str, message: str) -> Response:
    return _error(
        422,
        "Request validation error",
        request_id,
        {"errors": [{"loc": ["body", field], "msg": message, "type": "value_error"}]},
    )


def _excerpts(text: str, limit: int = 3) -> list[str]:
    return [p for p in text.split("\n") if p.strip()][:limit]


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    request_id = sim.request_id(VENDOR)
    if not isinstance(body, dict):
        return _invalid(request_id, "body", "Input should be a valid JSON object")
    for field in V1BETA_ONLY:
        if field in body:
            return _invalid(request_id, field, f"'{field}' is not a /v1/search field; use advanced_settings")
    queries = body.get("search_queries")
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) and q.strip() for q in queries):
        return _invalid(request_id, "search_queries", "At least one search query is required")
    mode = body.get("mode") or "advanced"
    if mode not in MODES:
        return _invalid(request_id, "mode", f"Input should be one of {', '.join(MODES)}")
    settings = body.get("advanced_settings") or {}
    n = settings.get("max_results") or INCLUDED_RESULTS
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > 40:
        return _invalid(request_id, "advanced_settings.max_results", "Input should be between 1 and 40")
    await sim.mode_delay(VENDOR, mode, queries[0])
    hits, seen = [], set()
    for q in [*queries, body.get("objective") or ""]:
        for hit in sim.search(VENDOR, q, n, mode=mode) if q else []:
            if hit.page.url not in seen:
                seen.add(hit.page.url)
                hits.append(hit)
    hits.sort(key=lambda h: -h.score)  # results are ordered by decreasing relevance across queries
    hits = hits[:n]
    results = [
        {
            "url": sim.result_url(VENDOR, h.page),
            "title": h.page.title,
            "publish_date": h.page.published,
            "excerpts": [h.snippet],
        }
        for h in hits
    ]
    usage = [{"name": "sku_search", "count": 1}]
    extra = max(0, len(results) - INCLUDED_RESULTS)
    if extra:
        usage.append({"name": "sku_search_additional_results", "count": extra})  # (?) SKU name
    base = TURBO_USD if mode == "turbo" else sim.mode_profile(VENDOR, mode).usd_per_request["search"]
    units = {"request.search": 1.0, **({"result.search_extra": float(extra)} if extra else {})}
    sim.bill(VENDOR, "search", request_id, units=units, usd=round(base + extra * EXTRA_RESULT_USD, 6))
    return JSONResponse(
        {
            "search_id": _hex_id("search", request_id),
            "session_id": body.get("session_id") or _hex_id("session", request_id),
            "results": results,
            "warnings": None,
            "usage": usage,
        }
    )


async def extract(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    request_id = sim.request_id(VENDOR)
    if not isinstance(body, dict):
        return _invalid(request_id, "body", "Input should be a valid JSON object")
    for field in V1BETA_ONLY:
        if field in body:
            return _invalid(request_id, field, f"'{field}' is not a /v1/extract field; use advanced_settings")
    urls = body.get("urls")
    if not isinstance(urls, list) or not urls or len(urls) > 20 or not all(isinstance(u, str) for u in urls):
        return _invalid(request_id, "urls", "Between 1 and 20 URLs are required")
    settings = body.get("advanced_settings") or {}
    full = settings.get("full_content", False)
    max_chars = full.get("max_chars_per_result") if isinstance(full, dict) else None
    results, errors = [], []
    for url in urls:
        page = sim.page(url)
        if page is None:
            # (?) error_type spelling is not documented; the SDK only says it is a string.
            errors.append({"url": url, "error_type": "fetch_error", "http_status_code": 404, "content": None})
            continue
        text = sim.extract(VENDOR, page)
        item = {"url": url, "title": page.title, "publish_date": page.published, "excerpts": _excerpts(text)}
        if full:
            item["full_content"] = text[:max_chars] if max_chars else text
        results.append(item)
    usage = []
    if results:
        usage.append({"name": "sku_extract_excerpts", "count": len(results)})
        if full:
            usage.append({"name": "sku_extract_full_content", "count": len(results)})
    # Extract is priced per extracted URL ($1 per 1,000), whatever parts were asked for.
    sim.bill(
        VENDOR,
        "extract",
        request_id,
        units={"request.extract": float(len(results))},
        usd=round(sim.profile(VENDOR).usd_per_request["extract"] * len(results), 6),
    )
    return JSONResponse(
        {
            "extract_id": _hex_id("extract", request_id),
            "session_id": body.get("session_id") or _hex_id("session", request_id),
            "results": results,
            "errors": errors,
            "warnings": None,
            "usage": usage,
        }
    )


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "POST", "/v1/search", search, auth_header="x-api-key"),
        VendorRoute(VENDOR, HOST, "POST", "/v1/extract", extract, auth_header="x-api-key"),
    ]
