"""Perplexity's Search API as documented: POST /search on api.perplexity.ai, key as Authorization: Bearer."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "perplexity"
HOST = "api.perplexity.ai"
# search_type: the SDK's "web" and "people" (perplexity-py search_create_params) and "fast", which the
# SDK does not list yet (docs.perplexity.ai/docs/search/fast-search: send it with extra_body).
SEARCH_TYPES = ("web", "fast", "people")


def _error(status: int, message: str, type_: str) -> Response:
    # OpenAI-style error body (vendors.md §8, 3p).
    return JSONResponse({"error": {"message": message, "type": type_, "code": status}}, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    # (?) The body of Perplexity's 401 is only known from third parties; OpenAI-style is the documented shape.
    return _error(
        401, "Invalid API key provided. Check your key at https://www.perplexity.ai/settings/api.", "invalid_api_key"
    )


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # (?) An exhausted prepaid balance reportedly comes back as 401, not 402 (vendors.md §8, 3p);
    # the body says why, in the documented OpenAI-style shape.
    return _error(
        401,
        "Your API credit balance is exhausted. Add credits at https://www.perplexity.ai/settings/api.",
        "insufficient_quota",
    )


def error_response(status: int, message: str) -> Response:
    return _error(status, message, "rate_limit_exceeded" if status == 429 else "internal_server_error")


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _error(400, "Request body must be a JSON object", "invalid_request_error")
    query = body.get("query")
    queries = [query] if isinstance(query, str) else query
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) and q.strip() for q in queries):
        return _error(
            400, "query is required: a non-empty string or a list of non-empty strings", "invalid_request_error"
        )
    search_type = body.get("search_type") or "web"  # omitted: standard web search
    if search_type not in SEARCH_TYPES:
        return _error(400, f"search_type must be one of {', '.join(SEARCH_TYPES)}", "invalid_request_error")
    n = body.get("max_results", 10)
    limit = 100 if search_type == "people" else 20  # above 20 only for people search
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > limit:
        return _error(400, f"max_results must be an integer between 1 and {limit}", "invalid_request_error")
    mode = search_type if search_type in ("web", "fast") else None  # people search: the default profile
    await sim.mode_delay(VENDOR, mode, queries[0])
    results, seen = [], set()
    for q in queries:  # (?) a multi-query request is answered here with one merged, de-duplicated list
        for hit in sim.search(VENDOR, q, n, mode=mode):
            url = sim.result_url(VENDOR, hit.page)
            if url in seen:
                continue
            seen.add(url)
            # The Search API returns a ranked page excerpt in `snippet`; `date` and `last_updated` are dates.
            results.append(
                {
                    "title": hit.page.title,
                    "url": url,
                    "snippet": hit.snippet,
                    "date": hit.page.published,
                    "last_updated": hit.page.published,
                }
            )
    request_id = sim.request_id(VENDOR)
    # $5 per 1,000 requests (fast: $1); the response has no cost field and does not name the type.
    sim.bill(VENDOR, "search", request_id, usd=sim.mode_profile(VENDOR, mode).usd_per_request["search"])
    out = {"id": request_id, "results": results}
    if body.get("display_server_time"):
        out["server_time"] = "0.12"
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [VendorRoute(VENDOR, HOST, "POST", "/search", search, auth_header="authorization", auth_scheme="Bearer")]
