"""Serper.dev as documented: POST google.serper.dev/search and POST scrape.serper.dev, key in X-API-KEY.

At most 10 organic results a query whatever `num` asks (Google ignores `num` above 10 since
September 2025); deeper results come from the 1-based `page` field, echoed in
`searchParameters.page`, positions restarting at 1 on each page and one credit a page, as in the
page-5 body recorded in bench_assets_tests/fixtures/vendors/serper/SOURCES.md.
"""

from __future__ import annotations

from datetime import date

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "serper"
HOST = "google.serper.dev"
SCRAPE_HOST = "scrape.serper.dev"
CREDIT_USD = 0.001  # Starter package: $50 for 50,000 credits
SCRAPE_CREDITS = 2  # profile price of a scrape (0.002 USD) at the Starter credit price


def _error(status: int, message: str) -> Response:
    return JSONResponse({"message": message, "statusCode": status}, status_code=status)


def unauthorized(req: SimRequest) -> Response:
    # An invalid key is reported as 401 or 403 "Unauthorized." (?): we answer 403, as most clients observed.
    return _error(403, "Unauthorized.")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # Observed by several independent clients (vendors.md §4): HTTP 400, not 402 or 429.
    return _error(400, "Not enough credits")


def error_response(status: int, message: str) -> Response:
    return _error(status, message)  # every Serper error is {"message", "statusCode"}


PAGE_SIZE = 10
SEARCH_CREDITS = 1  # a query of up to 10 results; each further page is a query of its own


def _google_date(iso: str) -> str:
    return date.fromisoformat(iso).strftime("%b %-d, %Y")


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _error(400, "Invalid JSON body")
    q = body.get("q")
    if not isinstance(q, str) or not q.strip():
        return _error(400, "Missing query parameter: q")
    num = body.get("num", 10)
    if not isinstance(num, int) or isinstance(num, bool) or num < 1 or num > 100:
        return _error(400, "num must be between 1 and 100")
    page = body.get("page", 1)
    if not isinstance(page, int) or isinstance(page, bool) or page < 1:
        return _error(400, "page must be a positive integer")
    per_page = min(num, PAGE_SIZE)  # Google serves 10 at most, whatever `num` says
    offset = (page - 1) * PAGE_SIZE
    organic = []
    for position, hit in enumerate(sim.search(VENDOR, q, offset + per_page)[offset:], start=1):
        item = {
            "title": hit.page.title,
            "link": sim.result_url(VENDOR, hit.page),
            "snippet": hit.snippet,
            "position": position,
        }
        if hit.page.stratum == "news":  # Google shows a date on news-like results only
            item["date"] = _google_date(hit.page.published)
        organic.append(item)
    credits = SEARCH_CREDITS
    sim.bill(VENDOR, "search", sim.request_id(VENDOR), units={"credit": credits}, usd=round(credits * CREDIT_USD, 6))
    return JSONResponse(
        {
            "searchParameters": {
                "q": q,
                "gl": body.get("gl", "us"),
                "hl": body.get("hl", "en"),
                "type": "search",
                "num": num,
                **({"page": page} if "page" in body else {}),
                "engine": "google",
            },
            "organic": organic,
            "relatedSearches": [],
            "credits": credits,
        }
    )


async def scrape(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    url = body.get("url") if isinstance(body, dict) else None
    if not isinstance(url, str) or not url.strip():
        return _error(400, "Missing url parameter")
    page = sim.page(url)
    if page is None:
        # Serper's scraper reports an unreachable page as a 400 with a message (?); nothing is charged.
        return _error(400, f"Failed to scrape URL: {url}")
    text = sim.extract(VENDOR, page)
    out = {"text": text, "metadata": {"title": page.title, "og:url": page.url}, "credits": SCRAPE_CREDITS}
    if body.get("includeMarkdown"):
        out["markdown"] = f"# {page.title}\n\n" + text.split("\n", 1)[-1]
    sim.bill(
        VENDOR,
        "extract",
        sim.request_id(VENDOR),
        units={"credit": SCRAPE_CREDITS},
        usd=round(SCRAPE_CREDITS * CREDIT_USD, 6),
    )
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "POST", "/search", search, auth_header="x-api-key"),
        VendorRoute(VENDOR, SCRAPE_HOST, "POST", "/", scrape, auth_header="x-api-key"),
    ]
