"""Exa's API as documented: POST /search and /contents on api.exa.ai, key in x-api-key or as
`Authorization: Bearer` (the OpenAPI spec's securitySchemes accept both)."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "exa"
HOST = "api.exa.ai"
# Exa's pricing since 2026-03-03 (exa.ai/docs/changelog/pricing-update): a search is $7 per 1k
# with the text and highlights of up to 10 results included; $1 per 1k results beyond 10;
# /contents is $1 per 1k pages per content type (text, highlights, summary).
CONTENT_USD = 0.001  # a /contents page, per content type
EXTRA_RESULT_USD = 0.001  # a search result beyond the 10 included
SEARCH_RESULTS_INCLUDED = 10
BEARER = (("authorization", "Bearer"),)
# `type` on /search: the OpenAPI spec's enum (exa-labs/openapi-spec, 2026-04) and lite, added since
# (exa.ai/changelog: "lite is a new search type ... $4 / 1k requests with up to 10 results").
SEARCH_TYPES = ("auto", "neural", "fast", "instant", "lite", "deep-lite", "deep", "deep-reasoning")


def unauthorized(req: SimRequest) -> Response:
    return JSONResponse(
        {"requestId": "unauthorized", "error": "Invalid API key", "tag": "INVALID_API_KEY"}, status_code=401
    )


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # Errors are {requestId, error, tag}; no credit left is 402 NO_MORE_CREDITS (exa.ai/docs/admin/error-codes).
    return JSONResponse(
        {
            "requestId": sim.request_id(VENDOR),
            "tag": "NO_MORE_CREDITS",
            "error": "You have run out of credits. Add credits at https://dashboard.exa.ai/billing",
        },
        status_code=402,
    )


def error_response(status: int, message: str) -> Response:
    # (?) The docs list no tag for 429 or 500; these names follow the documented ones' style.
    tag = {429: "RATE_LIMIT_EXCEEDED", 500: "INTERNAL_ERROR"}.get(status, "UNKNOWN_ERROR")
    return JSONResponse({"requestId": f"error-{status}", "error": message, "tag": tag}, status_code=status)


def _bad_request(request_id: str, message: str) -> Response:
    return JSONResponse({"requestId": request_id, "error": message, "tag": "INVALID_REQUEST_BODY"}, status_code=400)


def _text(sim: Simulator, page, option) -> str | None:
    """The page text when `text` is requested (true or {maxCharacters}), cut to maxCharacters."""
    if not option:
        return None
    text = sim.extract(VENDOR, page)
    if isinstance(option, dict) and option.get("maxCharacters"):
        text = text[: int(option["maxCharacters"])]
    return text


def _result(sim: Simulator, page, text: str | None, snippet: str | None, score: float | None) -> dict:
    out = {
        "id": page.url,
        "url": sim.result_url(VENDOR, page),
        "title": page.title,
        "score": score,
        "publishedDate": f"{page.published}T00:00:00.000Z",
        "author": None,
    }
    if text is not None:
        out["text"] = text
    if snippet is not None:
        out["highlights"] = [snippet]
        out["highlightScores"] = [0.5]
    return out


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    request_id = sim.request_id(VENDOR)
    if not isinstance(body, dict) or not isinstance(body.get("query"), str) or not body["query"].strip():
        return _bad_request(request_id, "query is required")
    n = body.get("numResults", 10)
    if not isinstance(n, int) or n < 1 or n > 100:
        return _bad_request(request_id, "numResults must be between 1 and 100")
    contents = body.get("contents") or {}
    search_type = body.get("type") or "auto"
    if search_type not in SEARCH_TYPES:
        return _bad_request(request_id, f"type must be one of {', '.join(SEARCH_TYPES)}")
    await sim.mode_delay(VENDOR, search_type, body["query"])
    hits = sim.search(VENDOR, body["query"], n, mode=search_type)
    results = []
    for hit in hits:
        text = _text(sim, hit.page, contents.get("text"))
        # Highlights come back only when asked for, like every other content type.
        results.append(_result(sim, hit.page, text, hit.snippet if contents.get("highlights") else None, hit.score))
    # The search price includes text and highlights: the contents cost nothing more.
    extra = max(0, len(results) - SEARCH_RESULTS_INCLUDED)
    resolved = search_type if search_type in ("deep", "deep-reasoning", "deep-lite", "lite") else "neural"
    total = round(sim.mode_profile(VENDOR, search_type).usd_per_request["search"] + EXTRA_RESULT_USD * extra, 6)
    sim.bill(VENDOR, "search", request_id, usd=total)
    return JSONResponse(
        {
            "requestId": request_id,
            # What an auto search resolved to: `searchType` in the OpenAPI spec (fixtures/vendors/exa/
            # openapi.yaml), `resolvedSearchType` where exa-py reads it.
            "searchType": resolved,
            "resolvedSearchType": resolved,
            "searchTime": 120.5,
            "results": results,
            "costDollars": {"total": total, "search": {"neural": total}},
        }
    )


async def contents(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    request_id = sim.request_id(VENDOR)
    urls = body.get("urls") or body.get("ids") if isinstance(body, dict) else None
    if not isinstance(urls, list) or not urls:
        return _bad_request(request_id, "urls is required")
    results, statuses = [], []
    for url in urls:
        page = sim.page(url) if isinstance(url, str) else None
        if page is None:
            statuses.append({"id": url, "status": "error", "error": {"tag": "CRAWL_NOT_FOUND", "httpStatusCode": 404}})
            continue
        results.append(_result(sim, page, _text(sim, page, body.get("text", True)), None, None))
        statuses.append({"id": url, "status": "success"})
    # $1 per 1k pages per content type; the simulator serves one type here, text (on by default).
    per_type = {"text": round(CONTENT_USD * len(results), 6)} if body.get("text", True) else {}
    total = round(sum(per_type.values()), 6)
    sim.bill(VENDOR, "extract", request_id, usd=total)
    return JSONResponse(
        {
            "requestId": request_id,
            "results": results,
            "statuses": statuses,
            "costDollars": {"total": total, "contents": per_type},
        }
    )


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "POST", "/search", search, auth_header="x-api-key", alt_auth=BEARER),
        VendorRoute(VENDOR, HOST, "POST", "/contents", contents, auth_header="x-api-key", alt_auth=BEARER),
    ]
