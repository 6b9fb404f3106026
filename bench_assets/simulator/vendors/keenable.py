"""Keenable's API as documented: POST /v1/search and GET /v1/fetch on api.keenable.ai, key as X-API-Key."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "keenable"
HOST = "api.keenable.ai"
MODES = ("pro",)  # the SDK's one documented mode
# (?) the API takes no result count and documents none; the SDK's examples show a handful. Ten here.
RESULTS_PER_SEARCH = 10


def _error(status: int, message: str) -> Response:
    # The SDK reads `message`, else `error`, else `detail` (keenable-sdk python/keenable/client.py).
    return JSONResponse({"message": message}, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    # docs.keenable.ai/authentication: 401 missing or invalid API key.
    return _error(401, "Missing or invalid API key")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # The SDK labels 402 "insufficient credits"; (?) the body text is not documented.
    return _error(402, "Insufficient credits")


def error_response(status: int, message: str) -> Response:
    return _error(status, message)


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _error(422, "Request body must be a JSON object")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return _error(422, "query is required")
    mode = body.get("mode", "pro")
    if mode not in MODES:
        return _error(422, f"mode must be one of: {', '.join(MODES)}")
    hits = sim.search(VENDOR, query, RESULTS_PER_SEARCH)
    sim.bill(VENDOR, "search", sim.request_id(VENDOR))
    results = [
        {
            "title": hit.page.title,
            "url": sim.result_url(VENDOR, hit.page),
            "description": "",  # empty for most pages (the SDK's README): the page text is in `snippet`
            "snippet": hit.snippet,
            "published_at": f"{hit.page.published}T00:00:00Z",
            "acquired_at": f"{hit.page.published}T12:00:00Z",
        }
        for hit in hits
    ]
    return JSONResponse({"query": query, "mode": mode, "results": results})


async def fetch(sim: Simulator, req: SimRequest) -> Response:
    url = req.params.get("url", "")
    if not url.startswith(("http://", "https://")):
        return _error(422, "url must be an http(s) URL")
    page = sim.page(url)
    if page is None:  # only URLs in Keenable's index are served (keenable.ai/docs/api); (?) the status
        return _error(404, "URL not found in the index")
    sim.bill(VENDOR, "extract", sim.request_id(VENDOR))
    text = sim.extract(VENDOR, page)
    content = f"# {text}" if text.startswith(page.title) else f"# {page.title}\n\n{text}"
    return JSONResponse({"url": url, "title": page.title, "content": content, "description": ""})


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(
            VENDOR, HOST, "POST", "/v1/search", search, auth_header="x-api-key", alt_auth=(("authorization", "Bearer"),)
        ),
        VendorRoute(
            VENDOR, HOST, "GET", "/v1/fetch", fetch, auth_header="x-api-key", alt_auth=(("authorization", "Bearer"),)
        ),
    ]
