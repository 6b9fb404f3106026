"""SerpApi as documented: GET serpapi.com/search (or /search.json) with engine=google, key in `api_key`."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "serpapi"
HOST = "serpapi.com"


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    return _error(401, "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # 429 means "hourly throughput exceeded or out of searches" (serpapi.com/api-status-and-error-codes):
    # only the message tells them apart.
    return _error(429, "Your account has run out of searches.")


def error_response(status: int, message: str) -> Response:
    return _error(status, message)  # every SerpApi error is {"error": "..."}


async def search(sim: Simulator, req: SimRequest) -> Response:
    params = req.params
    engine = params.get("engine", "google")
    if engine != "google":
        return _error(400, f"Unsupported `{engine}` search engine.")
    q = params.get("q", "")
    if not q.strip():
        return _error(400, "Missing query `q` parameter.")
    try:
        num = int(params.get("num", "10"))
    except ValueError:
        return _error(400, "Invalid `num` parameter.")
    num = max(1, min(num, 100))
    request_id = sim.request_id(VENDOR)
    search_id = request_id.split("-", 1)[1].replace("-", "")[:24]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    organic = []
    for position, hit in enumerate(sim.search(VENDOR, q, num), start=1):
        url = sim.result_url(VENDOR, hit.page)
        item = {
            "position": position,
            "title": hit.page.title,
            "link": url,
            "displayed_link": url.split("://", 1)[1].replace("/", " › ", 1),
            "snippet": hit.snippet,
            "source": hit.page.host,
        }
        if hit.page.stratum == "news":
            item["date"] = date.fromisoformat(hit.page.published).strftime("%b %-d, %Y")
        organic.append(item)
    sim.bill(VENDOR, "search", request_id)  # one search credit; no cost field in the body
    google_url = "https://www.google.com/search?" + urlencode({"q": q, "num": num, "sourceid": "chrome", "ie": "UTF-8"})
    out: dict[str, Any] = {
        "search_metadata": {
            "id": search_id,
            "status": "Success",
            "json_endpoint": f"https://serpapi.com/searches/{search_id}.json",
            "created_at": now,
            "processed_at": now,
            "google_url": google_url,
            "raw_html_file": f"https://serpapi.com/searches/{search_id}.html",
            "total_time_taken": 1.21,
        },
        "search_parameters": {
            "engine": "google",
            "q": q,
            "google_domain": "google.com",
            "num": str(num),
            "device": "desktop",
        },
        "search_information": {
            "organic_results_state": "Results for exact spelling",
            "total_results": len(organic) * 1000,
            "time_taken_displayed": 0.31,
        },
    }
    if organic:
        out["organic_results"] = organic
    else:  # documented: no results is HTTP 200, status Success, plus an `error` message
        out["search_information"]["organic_results_state"] = "Fully empty"
        out["error"] = "Google hasn't returned any results for this query."
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "GET", "/search", search, auth_param="api_key"),
        VendorRoute(VENDOR, HOST, "GET", "/search.json", search, auth_param="api_key"),
    ]
