"""You.com's API as documented: GET or POST /v1/search and POST /v1/contents on ydc-index.io, key in X-API-Key."""

from __future__ import annotations

import uuid

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute
from bench_assets.simulator.index import Hit

VENDOR = "youcom"
HOST = "ydc-index.io"
FRESHNESS = ("day", "week", "month", "year")
EXTRACTION_KEYS = {"extraction_mode", "extraction_source", "highlights", "full_page"}
EXTRACTION_SOURCES = ("blend", "cache", "fetch")


def unauthorized(req: SimRequest) -> Response:
    # The SDK's 401 model is {"detail": "..."}; (?) the exact wording is not documented.
    return JSONResponse({"detail": "Invalid or expired API key"}, status_code=401)


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # The SDK's 402 model (PaymentRequiredResponseErrorData): "free-tier limit exceeded, insufficient
    # credits", {error: "payment_required", message, upgrade_url, ...}.
    return JSONResponse(
        {
            "error": "payment_required",
            "message": "Your API credits are exhausted.",
            "upgrade_url": "https://you.com/platform/billing",
        },
        status_code=402,
    )


def error_response(status: int, message: str) -> Response:
    # 500 is the SDK's {"detail": ...} model; (?) the 429 body is not documented, the same shape is assumed.
    return JSONResponse({"detail": message}, status_code=status)


def _missing(location: str, field: str) -> Response:
    # FastAPI request-validation 422, one of the three 422 shapes the SDK accepts.
    return JSONResponse(
        {"detail": [{"type": "missing", "loc": [location, field], "msg": "Field required", "input": None}]},
        status_code=422,
    )


def _invalid(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=422)  # the search spec's own 422 shape


def _extraction_problem(extraction: dict | None) -> str | None:
    """Why an `extraction` object is refused (the SDK's strict `models.Extraction`, youdotcom 3.6.0:
    an unknown key or value is the server's 422), or None."""
    if extraction is None:
        return None
    unknown = set(extraction) - EXTRACTION_KEYS
    if unknown:
        return f"extraction: unknown field(s) {', '.join(sorted(unknown))}"
    if extraction.get("extraction_mode") not in ("highlights", "full_page"):
        return "extraction.extraction_mode must be highlights or full_page"
    if extraction.get("extraction_source", "blend") not in EXTRACTION_SOURCES:
        return f"extraction.extraction_source must be one of {', '.join(EXTRACTION_SOURCES)}"
    return None


def _markdown(page, text: str) -> str:
    return text if not text.startswith(page.title) else f"# {text}"


def _web_result(sim: Simulator, hit: Hit, mode: str | None, formats: list[str]) -> dict:
    """One results.web[] item: snippets, or highlights in contents, or the full page with snippets."""
    item: dict = {
        "url": sim.result_url(VENDOR, hit.page),
        "title": hit.page.title,
        "description": hit.snippet.split(". ")[0],
        "page_age": f"{hit.page.published}T00:00:00",
        "favicon_url": f"https://{hit.page.host}/favicon.ico",
        "authors": [],
    }
    if mode == "highlights":
        # highlights mode puts query-relevant excerpts in contents.highlights and omits snippets
        item["contents"] = {"highlights": [hit.snippet]}
    else:
        item["snippets"] = [hit.snippet]
    if mode == "full_page":
        item["contents"] = {}
        if "markdown" in formats:
            item["contents"]["markdown"] = _markdown(hit.page, sim.extract(VENDOR, hit.page))
        if "html" in formats:
            item["contents"]["html"] = hit.page.render_html()
    return item


async def search(sim: Simulator, req: SimRequest) -> Response:
    if req.method == "GET":
        args: dict = dict(req.params)
        location = "query"
    else:
        args = req.json()
        location = "body"
        if not isinstance(args, dict):
            return _invalid("The request body must be a JSON object")
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        return _missing(location, "query")
    try:
        count = int(args.get("count", 10))
    except (TypeError, ValueError):
        return _invalid("count must be an integer")
    if count < 1 or count > 100:
        return _invalid("count must be between 1 and 100")
    freshness = args.get("freshness")
    if freshness is not None and freshness not in FRESHNESS and "to" not in str(freshness):
        return _invalid("freshness must be day, week, month, year or YYYY-MM-DDtoYYYY-MM-DD")
    extraction = args.get("extraction") if isinstance(args.get("extraction"), dict) else None
    livecrawl = args.get("livecrawl")
    if extraction is not None and livecrawl is not None:
        return _invalid("livecrawl and extraction cannot be combined")
    problem = _extraction_problem(extraction)
    if problem:
        return _invalid(problem)
    mode = (extraction or {}).get("extraction_mode")
    source = (extraction or {}).get("extraction_source", "blend")
    if livecrawl in ("web", "all"):
        mode, source = "full_page", "fetch"  # (?) the deprecated livecrawl is taken to crawl live
    formats = args.get("livecrawl_formats") or ((extraction or {}).get("full_page") or {}).get("extraction_formats")
    if isinstance(formats, str):
        formats = [f.strip() for f in formats.split(",")]
    formats = formats or ["markdown"]

    if mode == "full_page":
        await sim.mode_delay(VENDOR, "full_page", query)  # the pages are crawled with the search
    hits = sim.search(VENDOR, query, count, mode=mode)
    web = [_web_result(sim, hit, mode, formats) for hit in hits]
    live_pages = len(web) if mode == "full_page" and source != "cache" else 0
    request_id = sim.request_id(VENDOR)
    # $5 per 1,000 calls, up to 100 results per call; a full page crawled live $1 per 1,000 pages on
    # top, one from the cache nothing. The simulator keeps no cache: blend and fetch crawl every page,
    # cache serves every page as cached.
    price = sim.mode_profile(VENDOR, mode).usd_per_request
    units = {"request.search": 1.0, **({"page.extract": float(live_pages)} if live_pages else {})}
    sim.bill(VENDOR, "search", request_id, units=units, usd=round(price["search"] + price["extract"] * live_pages, 6))
    # news[] appears only for news-classified queries; the simulator classifies none as news.
    return JSONResponse(
        {
            "results": {"web": web},
            "metadata": {
                "search_uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, request_id)),
                "query": query,
                "latency": 0.12,
            },
        }
    )


async def contents(sim: Simulator, req: SimRequest) -> Response:
    body = req.json()
    if not isinstance(body, dict):
        return _invalid("The request body must be a JSON object")
    urls = body.get("urls")
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        return _missing("body", "urls")
    # (?) `formats` (list) in the 3.x SDK and newer docs, `format` (string) in older docs: both accepted.
    formats = body.get("formats") or body.get("format") or ["html"]
    if isinstance(formats, str):
        formats = [formats]
    if any(f not in ("html", "markdown", "metadata") for f in formats):
        return _invalid("formats must be html, markdown or metadata")
    out, pages = [], 0
    for url in urls:
        page = sim.page(url)
        if page is None:  # (?) an unreachable page comes back as an entry with no content
            out.append({"url": url, "title": None, "html": None, "markdown": None})
            continue
        pages += 1
        item: dict = {"url": url, "title": page.title}
        if "html" in formats:
            item["html"] = page.render_html()
        if "markdown" in formats:
            item["markdown"] = _markdown(page, sim.extract(VENDOR, page))
        if "metadata" in formats:
            item["metadata"] = {"site_name": page.host, "favicon_url": f"https://{page.host}/favicon.ico"}
        out.append(item)
    # Contents is $1 per 1,000 pages returned.
    sim.bill(
        VENDOR,
        "extract",
        sim.request_id(VENDOR),
        units={"page.extract": float(pages)},
        usd=round(sim.profile(VENDOR).usd_per_request["extract"] * pages, 6),
    )
    return JSONResponse(out)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "GET", "/v1/search", search, auth_header="x-api-key"),
        VendorRoute(VENDOR, HOST, "POST", "/v1/search", search, auth_header="x-api-key"),
        VendorRoute(VENDOR, HOST, "POST", "/v1/contents", contents, auth_header="x-api-key"),
    ]
