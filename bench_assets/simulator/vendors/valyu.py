"""Valyu's Search API as documented: POST /v1/search on api.valyu.ai, key as x-api-key."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "valyu"
HOST = "api.valyu.ai"
SEARCH_TYPES = ("all", "web", "proprietary", "news")
# USD per retrieval (docs.valyu.ai/pricing): web $1.50 per 1,000; open databases $0.50; the
# simulated index holds web pages only, so every retrieval is a web one.
USD_PER_WEB_RESULT = 0.0015


def _error(status: int, message: str) -> Response:
    # The SDK reads `error`, else `message` (valyu-py valyu/_errors.py); (?) the shape of these is not documented.
    return JSONResponse({"success": False, "error": message}, status_code=status)


def _invalid(key: str, message: str) -> Response:
    # The validation error body valyu-py's tests/test_error_message.py records: an `errors` array naming each field.
    return JSONResponse(
        {
            "error": "validation_failed",
            "message": "1 validation error",
            "errors": [{"code": "invalid_param", "key": key, "message": message}],
        },
        status_code=400,
    )


def unauthorized(req: SimRequest) -> Response:
    # (?) the status and text of a bad key are not documented; 401 with the SDK's error shape.
    return _error(401, "Invalid API key")


def credit_needed(sim: Simulator, req: SimRequest) -> float:
    return USD_PER_WEB_RESULT  # (?) at least one retrieval on the balance


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # 402 {"message": "Insufficient credits"}: the body valyu-py's tests/test_error_message.py reads.
    return JSONResponse({"message": "Insufficient credits"}, status_code=402)


def error_response(status: int, message: str) -> Response:
    return _error(status, message)


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _invalid("body", "Request body must be a JSON object")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return _invalid("query", 'Required parameter "query" is missing')
    search_type = body.get("search_type", "all")
    if search_type not in SEARCH_TYPES:
        return _invalid("search_type", f"search_type must be one of: {', '.join(SEARCH_TYPES)}")
    n = body.get("max_num_results", 10)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 20:
        return _invalid("max_num_results", "max_num_results must be an integer between 1 and 20")
    threshold = body.get("relevance_threshold", 0.5)
    if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        return _invalid("relevance_threshold", "relevance_threshold must be between 0 and 1")
    tx_id = f"tx_{sim.request_id(VENDOR)}"
    hits = sim.search(VENDOR, query, n)
    results: list[dict] = []
    characters = 0
    for rank, hit in enumerate(hits, start=1):
        score = round(max(0.0, 1.0 - 0.05 * (rank - 1)), 4)
        if score < threshold:  # results scored below the threshold are dropped (and not billed)
            break
        content = sim.extract(VENDOR, hit.page)
        characters += len(content)
        results.append(
            {
                "id": sim.result_url(VENDOR, hit.page),
                "title": hit.page.title,
                "url": sim.result_url(VENDOR, hit.page),
                "content": content,
                "description": hit.snippet,
                "source": "web",
                "price": USD_PER_WEB_RESULT,
                "length": len(content),
                "relevance_score": score,
                "data_type": "unstructured",
                "source_type": "website",
                "publication_date": hit.page.published,
            }
        )
    usd = round(USD_PER_WEB_RESULT * len(results), 6)
    if results:
        sim.bill(VENDOR, "search", tx_id, units={"usd": usd}, usd=usd)
    out = {
        "success": True,
        "error": None if results else "No results found for the query",
        "tx_id": tx_id,
        "query": query,
        "results": results,
        "results_by_source": {"web": len(results), "proprietary": 0},
        "total_deduction_dollars": usd,
        "total_characters": characters,
    }
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [VendorRoute(VENDOR, HOST, "POST", "/v1/search", search, auth_header="x-api-key")]
