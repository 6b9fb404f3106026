"""SerpApi as documented: GET serpapi.com/search (or /search.json) with engine=google, key in `api_key`.

At most 10 organic results a search whatever `num` asks (Google ignores `num` above 10 since
September 2025: github.com/serpapi/public-roadmap/issues/3032); deeper results come from `start`
pages, each billed as a search, with positions continuing from `start` + 1 and the
`serpapi_pagination` block of serpapi.com/pagination (`current`, `next` omitted on the last page,
`other_pages`).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "serpapi"
HOST = "serpapi.com"
PAGE_SIZE = 10


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
        start = int(params.get("start", "0"))
    except ValueError:
        return _error(400, "Invalid `num` or `start` parameter.")
    num = max(1, min(num, 100))
    start = max(0, start)
    per_page = min(num, PAGE_SIZE)  # Google serves 10 at most, whatever `num` says
    request_id = sim.request_id(VENDOR)
    search_id = request_id.split("-", 1)[1].replace("-", "")[:24]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    organic = []
    depth = sim.search(VENDOR, q, start + per_page + 1)  # one more, to know whether a page follows
    for position, hit in enumerate(depth[start : start + per_page], start=start + 1):
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
    google_params: dict[str, Any] = {"q": q, "num": num, "sourceid": "chrome", "ie": "UTF-8"}
    if start:
        google_params["start"] = start
    google_url = "https://www.google.com/search?" + urlencode(google_params)
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
            **({"start": str(start)} if start else {}),
        },
        "search_information": {
            "organic_results_state": "Results for exact spelling",
            "total_results": len(organic) * 1000,
            "time_taken_displayed": 0.31,
        },
    }
    if organic:
        out["organic_results"] = organic
        out["serpapi_pagination"] = _pagination(q, num, start, per_page, has_next=len(depth) > start + per_page)
    else:  # documented: no results is HTTP 200, status Success, plus an `error` message
        out["search_information"]["organic_results_state"] = "Fully empty"
        out["error"] = "Google hasn't returned any results for this query."
    return JSONResponse(out)


def _page_link(q: str, num: int, start: int) -> str:
    params: dict[str, Any] = {"engine": "google", "google_domain": "google.com", "num": num, "q": q}
    if start:
        params["start"] = start
    return "https://serpapi.com/search.json?" + urlencode(params)


def _pagination(q: str, num: int, start: int, per_page: int, has_next: bool) -> dict[str, Any]:
    """`serpapi_pagination` as serpapi.com/pagination shows it; `next` only when a page follows."""
    current = start // PAGE_SIZE + 1
    out: dict[str, Any] = {"current": current}
    if start:
        out["previous"] = _page_link(q, num, max(0, start - per_page))
    if has_next:
        out["next"] = _page_link(q, num, start + per_page)
    others = {str(n): _page_link(q, num, (n - 1) * PAGE_SIZE) for n in range(1, current + (2 if has_next else 0))}
    others.pop(str(current), None)
    if others:
        out["other_pages"] = others
    return out


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "GET", "/search", search, auth_param="api_key"),
        VendorRoute(VENDOR, HOST, "GET", "/search.json", search, auth_param="api_key"),
    ]
