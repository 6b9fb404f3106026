"""Linkup's API as documented: POST /v1/search and /v1/fetch on api.linkup.so, key as Authorization: Bearer."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "linkup"
HOST = "api.linkup.so"
DEPTHS = ("flash", "fast", "standard", "deep")
OUTPUT_TYPES = ("searchResults", "sourcedAnswer", "structured")
# USD per call (docs.linkup.so pricing): standard/fast searchResults $0.005, deep $0.05,
# +$0.001 for an answer (sourcedAnswer/structured); fetch $0.001, or $0.005 with JavaScript rendering.
DEEP_SEARCH_USD = 0.05
ANSWER_EXTRA_USD = 0.001
FETCH_JS_USD = 0.005


def _error(status: int, code: str, message: str, details: list[dict] | None = None) -> Response:
    return JSONResponse(
        {"statusCode": status, "error": {"code": code, "message": message, "details": details or []}},
        status_code=status,
    )


def _invalid(field: str, message: str) -> Response:
    return _error(400, "VALIDATION_ERROR", "Validation failed", [{"field": field, "message": message}])


def unauthorized(req: SimRequest) -> Response:
    return _error(401, "UNAUTHORIZED", "Unauthorized action")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # 429 INSUFFICIENT_FUNDS_CREDITS (docs.linkup.so errors; the SDK raises LinkupInsufficientCreditError).
    return _error(429, "INSUFFICIENT_FUNDS_CREDITS", "You do not have enough credits to perform this request.")


def error_response(status: int, message: str) -> Response:
    # 429 TOO_MANY_REQUESTS is documented; (?) the 500 code is not.
    return _error(status, "TOO_MANY_REQUESTS" if status == 429 else "INTERNAL_SERVER_ERROR", message)


def _favicon(host: str) -> str:
    return f"https://{host}/favicon.ico"


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _invalid("body", "must be a JSON object")
    q = body.get("q")
    if not isinstance(q, str) or not q.strip():
        return _invalid("q", "q should not be empty")
    depth = body.get("depth")
    if depth not in DEPTHS:
        return _invalid("depth", f"depth must be one of the following values: {', '.join(DEPTHS)}")
    output_type = body.get("outputType")
    if output_type not in OUTPUT_TYPES:
        return _invalid("outputType", f"outputType must be one of the following values: {', '.join(OUTPUT_TYPES)}")
    if output_type == "structured":
        # The simulator cannot fill an arbitrary JSON schema; it says so with the vendor's error shape.
        return _invalid("outputType", "structured output is not supported by the bench simulator")
    n = body.get("maxResults", 10)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return _invalid("maxResults", "maxResults must be a positive integer")
    await sim.mode_delay(VENDOR, depth, q)
    hits = sim.search(VENDOR, q, n, mode=depth)
    if not hits:  # Linkup answers an empty search with 400 SEARCH_QUERY_NO_RESULT (not billed)
        return _error(400, "SEARCH_QUERY_NO_RESULT", "The query did not yield any result")
    usd = DEEP_SEARCH_USD if depth == "deep" else sim.mode_profile(VENDOR, depth).usd_per_request["search"]
    if output_type == "sourcedAnswer":
        usd += ANSWER_EXTRA_USD
    unit = "request.search_deep" if depth == "deep" else "request.search"
    if output_type == "sourcedAnswer":
        unit += "_answer"
    sim.bill(VENDOR, "search", sim.request_id(VENDOR), units={unit: 1.0}, usd=round(usd, 6))
    if output_type == "sourcedAnswer":
        sources = [
            {
                "name": h.page.title,
                "url": sim.result_url(VENDOR, h.page),
                "snippet": h.snippet,
                "favicon": _favicon(h.page.host),
            }
            for h in hits
        ]
        return JSONResponse({"answer": hits[0].snippet, "sources": sources})
    # searchResults: the title is `name`, the text is `content`; no date, cost or request id.
    results = [
        {
            "type": "text",
            "name": h.page.title,
            "url": sim.result_url(VENDOR, h.page),
            "content": h.snippet,
            "favicon": _favicon(h.page.host),
        }
        for h in hits
    ]
    return JSONResponse({"results": results})


async def fetch(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _invalid("body", "must be a JSON object")
    url = body.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return _invalid("url", "url must be a URL address")
    page = sim.page(url)
    if page is None:
        return _error(400, "FETCH_TARGET_NOT_FOUND", "The target URL was not found")
    render_js = bool(body.get("renderJs", False))
    usd = FETCH_JS_USD if render_js else sim.profile(VENDOR).usd_per_request["extract"]
    unit = "request.extract_js" if render_js else "request.extract"
    sim.bill(VENDOR, "extract", sim.request_id(VENDOR), units={unit: 1.0}, usd=usd)
    text = sim.extract(VENDOR, page)  # its first line is the page's <h1>, written as a markdown heading
    markdown = f"# {text}" if text.startswith(page.title) else f"# {page.title}\n\n{text}"
    out: dict = {"markdown": markdown, "favicon": _favicon(page.host)}
    if body.get("includeRawContent"):
        out["rawContent"] = page.render_html()
        out["contentType"] = "text/html"
    if body.get("includeRawHtml"):
        out["rawHtml"] = page.render_html()
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "POST", "/v1/search", search, auth_header="authorization", auth_scheme="Bearer"),
        VendorRoute(VENDOR, HOST, "POST", "/v1/fetch", fetch, auth_header="authorization", auth_scheme="Bearer"),
    ]
