"""Firecrawl's v2 API as documented: POST /v2/search and /v2/scrape on api.firecrawl.dev, Bearer key."""

from __future__ import annotations

import math
import uuid

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "firecrawl"
HOST = "api.firecrawl.dev"
CREDIT_USD = 0.0008  # the manifest's assumed price per credit (data/pricing/firecrawl.md)


def _error(status: int, message: str, details: list | None = None) -> Response:
    body: dict = {"success": False, "error": message}
    if details is not None:
        body["details"] = details
    return JSONResponse(body, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    return _error(401, "Unauthorized: Invalid token")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # 402 "Payment Required: Insufficient credits" (docs.firecrawl.dev/api-reference/errors).
    return _error(
        402,
        "Payment Required: Insufficient credits to perform this request. For more credits, you can "
        "upgrade your plan at https://firecrawl.dev/pricing",
    )


def error_response(status: int, message: str) -> Response:
    return _error(status, message)  # {success: false, error}


def _missing(field: str) -> Response:
    # Firecrawl validates bodies with zod: 400 "Bad Request" plus the zod issues.
    return _error(
        400,
        "Bad Request",
        [
            {
                "code": "invalid_type",
                "expected": "string",
                "received": "undefined",
                "path": [field],
                "message": "Required",
            }
        ],
    )


def _markdown(sim: Simulator, page) -> str:
    text = sim.extract(VENDOR, page)
    return f"# {page.title}\n\n" + text.split("\n", 1)[-1] if text.startswith(page.title) else text


def _document(sim: Simulator, page, url: str, scrape_id: str) -> dict:
    return {
        "markdown": _markdown(sim, page),
        "metadata": {
            "title": page.title,
            "description": page.paragraphs[0],
            "language": "en",
            "sourceURL": url,
            "url": page.url,
            "statusCode": 200,
            "scrapeId": scrape_id,
            "creditsUsed": 1,
            "cacheState": "miss",
            "publishedTime": f"{page.published}T09:00:00Z",
            "contentType": "text/html; charset=utf-8",
            "proxyUsed": "basic",
        },
    }


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict) or not isinstance(body.get("query"), str) or not body["query"].strip():
        return _missing("query")
    limit = body.get("limit", 5)  # the API's default limit is 5 (vendors.md marks it (?); the SDK agrees)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1 or limit > 100:
        return _error(
            400,
            "Bad Request",
            [
                {
                    "code": "too_big" if isinstance(limit, int) and limit > 100 else "invalid_type",
                    "path": ["limit"],
                    "message": "limit must be between 1 and 100",
                }
            ],
        )
    sources = body.get("sources") or ["web"]
    source_types = {s if isinstance(s, str) else (s or {}).get("type") for s in sources}
    formats = ((body.get("scrapeOptions") or {}).get("formats")) or []
    scrape = any((f if isinstance(f, str) else (f or {}).get("type")) == "markdown" for f in formats)
    request_id = sim.request_id(VENDOR).split("-", 1)[1]
    web = []
    if "web" in source_types:
        for position, hit in enumerate(sim.search(VENDOR, body["query"], limit), start=1):
            url = sim.result_url(VENDOR, hit.page)
            if scrape:
                doc = _document(sim, hit.page, url, str(uuid.uuid5(uuid.NAMESPACE_URL, request_id + url)))
                doc.update({"url": url, "title": hit.page.title, "description": hit.snippet, "position": position})
                web.append(doc)
            else:
                web.append({"url": url, "title": hit.page.title, "description": hit.snippet, "position": position})
    # Search costs 2 credits per 10 results (rounded up), plus 1 credit per scraped result.
    credits = 2 * math.ceil(max(len(web), 1) / 10) + (len(web) if scrape else 0)
    sim.bill(VENDOR, "search", request_id, units={"credit": credits}, usd=round(credits * CREDIT_USD, 6))
    return JSONResponse(
        {"success": True, "data": {"web": web}, "warning": None, "id": request_id, "creditsUsed": credits}
    )


async def scrape(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict) or not isinstance(body.get("url"), str) or not body["url"].strip():
        return _missing("url")
    url = body["url"]
    if "://" not in url:
        return _error(400, "Bad Request", [{"code": "invalid_string", "path": ["url"], "message": "Invalid URL"}])
    scrape_id = sim.request_id(VENDOR).split("-", 1)[1]
    page = sim.page(url)
    if page is None:
        # An unreachable or missing page still comes back as success with the target's status code.
        doc = {
            "markdown": "",
            "metadata": {
                "sourceURL": url,
                "url": url,
                "statusCode": 404,
                "scrapeId": scrape_id,
                "creditsUsed": 1,
                "error": "Not Found",
                "proxyUsed": "basic",
            },
        }
    else:
        doc = _document(sim, page, url, scrape_id)
    sim.bill(VENDOR, "extract", scrape_id, units={"credit": 1}, usd=round(1 * CREDIT_USD, 6))
    return JSONResponse({"success": True, "data": doc})


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "POST", "/v2/search", search, auth_header="authorization", auth_scheme="Bearer"),
        VendorRoute(VENDOR, HOST, "POST", "/v2/scrape", scrape, auth_header="authorization", auth_scheme="Bearer"),
    ]
