"""Brave Search API as documented: GET /res/v1/web/search and GET or POST /res/v1/llm/context,
key in X-Subscription-Token."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from urllib.parse import urlsplit

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "brave"
HOST = "api.search.brave.com"
# The simulated plan's rate, as the X-RateLimit-* headers below announce it. A paid plan reports
# quota_limit 0 (no monthly quota) in its 429s; only the Free plan has one (2,000 a month), so
# an account out of quota is simulated as a Free plan's.
PLAN, RATE_LIMIT = "Search", 50
FREE_PLAN, FREE_RATE_LIMIT, FREE_QUOTA = "Free", 1, 2000


def _error(status: int, code: str, detail: str, meta: dict) -> Response:
    # Brave's ErrorResponse envelope, key order as published (fixtures/vendors/brave/SOURCES.md).
    return JSONResponse(
        {
            "type": "ErrorResponse",
            "error": {
                "id": "00000000-0000-0000-0000-000000000000",
                "status": status,
                "detail": detail,
                "meta": meta,
                "code": code,
            },
            "time": int(time.time()),
        },
        status_code=status,
    )


def _rate_limited(plan: str, rate: tuple[int, int], quota: tuple[int, int]) -> Response:
    # One code for both limits: meta says which one was reached (brave/brave-search-mcp-server
    # src/BraveAPI/types.ts RateLimitErrorResponse; body in egoist/chatwise-releases#1296).
    meta = {
        "plan": plan,
        "rate_limit": rate[0],
        "rate_current": rate[1],
        "quota_limit": quota[0],
        "quota_current": quota[1],
        "org_rate_limit": None,
        "org_rate_current": 0,
        "component": "rate_limiter",
    }
    return _error(429, "RATE_LIMITED", "Request rate limit exceeded for plan", meta)


def _validation(loc: list[str], msg: str, kind: str, value=None) -> Response:
    meta = {"errors": [{"input": value, "loc": loc, "msg": msg, "type": kind}]}
    return _error(422, "VALIDATION", "Unable to validate request parameter(s)", meta)


def unauthorized(req: SimRequest) -> Response:
    if not req.headers.get("x-subscription-token"):
        # No key: a parameter validation error on the header (brave/brave-search-mcp-server#56).
        return _validation(["header", "x-subscription-token"], "Field required", "missing")
    # A key Brave does not know: 422 SUBSCRIPTION_TOKEN_INVALID (nearai/ironclaw#2780).
    return _error(
        422,
        "SUBSCRIPTION_TOKEN_INVALID",
        "The provided subscription token is invalid.",
        {"component": "authentication"},
    )


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # Out of quota is the same 429 RATE_LIMITED as a rate limit, with the monthly quota used up.
    return _rate_limited(FREE_PLAN, (FREE_RATE_LIMIT, 1), (FREE_QUOTA, FREE_QUOTA))


def error_response(status: int, message: str) -> Response:
    if status == 429:
        return _rate_limited(PLAN, (RATE_LIMIT, RATE_LIMIT), (0, 1000))
    # (?) No published body for a 5xx: the same envelope with a made-up code.
    return _error(status, "INTERNAL_ERROR", message, {"component": "backend"})


def _decorated(text: str, query: str) -> str:
    """`text` with the query's words in <strong> tags, as Brave marks them when
    text_decorations is true (its default)."""
    words = {w.lower() for w in re.findall(r"\w+", query) if len(w) > 2}
    if not words:
        return text
    return re.sub(r"\w+", lambda m: f"<strong>{m[0]}</strong>" if m[0].lower() in words else m[0], text)


async def web_search(sim: Simulator, req: SimRequest) -> Response:
    q = req.params.get("q", "")
    if not q.strip() or len(q) > 400 or len(q.split()) > 50:
        return _validation(["query", "q"], "q is required: at most 400 characters and 50 words", "value_error", q)
    try:
        count = int(req.params.get("count", "20"))
        offset = int(req.params.get("offset", "0"))
    except ValueError:
        return _validation(["query", "count"], "count and offset must be integers", "int_parsing")
    if not 1 <= count <= 20 or not 0 <= offset <= 9:
        return _validation(["query", "count"], "count must be 1-20 and offset 0-9", "less_than_equal")
    extra = req.params.get("extra_snippets", "false").lower() == "true"
    decorate = req.params.get("text_decorations", "true").lower() not in ("false", "0")
    # offset counts pages of `count` results
    hits = sim.search(VENDOR, q, count * (offset + 1))[count * offset :]
    results = []
    for hit in hits:
        description = hit.snippet.split(". ")[0]
        url = sim.result_url(VENDOR, hit.page)
        parts = urlsplit(url)
        # The fields Brave's own types make required (brave/brave-search-mcp-server
        # src/tools/web/types.ts SearchResult, Result, MetaUrl; fixtures/vendors/brave/SOURCES.md).
        item = {
            "type": "search_result",
            "subtype": "generic",
            "is_live": False,
            "title": hit.page.title,
            "url": url,
            "is_source_local": False,
            "is_source_both": False,
            "description": _decorated(description, q) if decorate else description,
            "page_age": f"{hit.page.published}T00:00:00",
            "age": hit.page.published,
            "language": "en",
            "family_friendly": True,
            "meta_url": {
                "scheme": parts.scheme,
                "netloc": parts.netloc,
                "hostname": parts.hostname or hit.page.host,
                "favicon": f"https://imgs.search.brave.com/favicon/{parts.netloc}",
                "path": " › ".join(p for p in parts.path.split("/") if p),
            },
        }
        if extra:
            item["extra_snippets"] = list(hit.page.paragraphs[:3])
        results.append(item)
    sim.bill(VENDOR, "search", sim.request_id(VENDOR))
    headers = {
        "X-RateLimit-Limit": "50, 15000",
        "X-RateLimit-Policy": "50;w=1, 15000;w=2592000",
        "X-RateLimit-Remaining": "49, 14000",
        "X-RateLimit-Reset": "1, 1000000",
    }
    return JSONResponse(
        {
            "type": "search",
            "query": {"original": q, "more_results_available": False},
            "web": {"type": "search", "results": results, "family_friendly": True},
        },
        headers=headers,
    )


LLM_CONTEXT = "llm_context"  # the mode this endpoint is (bench_assets/adapters/brave.py)
SNIPPETS_PER_URL = 3


def _int_param(params: dict, name: str, default: int, low: int, high: int) -> int | None:
    """The integer parameter `name` within [low, high], its default when absent, None when invalid."""
    value = params.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if low <= number <= high and not isinstance(value, bool) else None


def _age(published: str) -> list[str]:
    """Brave's `sources[url].age`: the page's date written three ways (long, ISO, relative)."""
    day = dt.date.fromisoformat(published)
    ago = (dt.datetime.now(dt.UTC).date() - day).days
    return [f"{day:%A, %B} {day.day}, {day.year}", day.isoformat(), f"{ago} days ago"]


def _snippets(page, query: str) -> list[str]:
    """Text extracted from the page, most relevant first: the paragraphs that share the query's
    words, then its table as JSON (Brave: "Snippets may contain plain text OR JSON-serialized
    structured data (tables, schemas, code blocks)")."""
    words = {w.lower() for w in re.findall(r"\w+", query) if len(w) > 2}
    ranked = sorted(page.paragraphs, key=lambda p: -len(words & {w.lower() for w in re.findall(r"\w+", p)}))
    snippets = list(ranked[:SNIPPETS_PER_URL])
    if page.table_rows:
        snippets.append(json.dumps({"header": list(page.table_header), "rows": [list(r) for r in page.table_rows]}))
    return snippets


async def llm_context(sim: Simulator, req: SimRequest) -> Response:
    """LLM Context: the pages of one search with their relevant content extracted, as documented in
    brave/brave-search-skills skills/llm-context/SKILL.md (GET query parameters or a POST JSON body)."""
    params = req.params if req.method == "GET" else req.json()
    if not isinstance(params, dict):
        return _validation(["body"], "a JSON object is required", "model_attributes_type")
    q = params.get("q", "")
    if not isinstance(q, str) or not q.strip() or len(q) > 400 or len(q.split()) > 50:
        return _validation(["query", "q"], "q is required: at most 400 characters and 50 words", "value_error", q)
    count = _int_param(params, "count", 20, 1, 50)
    urls = _int_param(params, "maximum_number_of_urls", 20, 1, 50)
    if count is None or urls is None:
        return _validation(["query", "count"], "count and maximum_number_of_urls must be 1-50", "less_than_equal")
    await sim.mode_delay(VENDOR, LLM_CONTEXT, q)
    generic, sources = [], {}
    for hit in sim.search(VENDOR, q, min(count, urls), mode=LLM_CONTEXT):
        url = sim.result_url(VENDOR, hit.page)
        generic.append({"url": url, "title": hit.page.title, "snippets": _snippets(hit.page, q)})
        hostname = urlsplit(url).hostname or hit.page.host
        sources[url] = {"title": hit.page.title, "hostname": hostname, "age": _age(hit.page.published)}
    usd = sim.mode_profile(VENDOR, LLM_CONTEXT).usd_per_request["search"]
    sim.bill(VENDOR, "search", sim.request_id(VENDOR), usd=usd)
    return JSONResponse({"grounding": {"generic": generic, "map": []}, "sources": sources})


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, HOST, "GET", "/res/v1/web/search", web_search, auth_header="x-subscription-token"),
        VendorRoute(VENDOR, HOST, "GET", "/res/v1/llm/context", llm_context, auth_header="x-subscription-token"),
        VendorRoute(VENDOR, HOST, "POST", "/res/v1/llm/context", llm_context, auth_header="x-subscription-token"),
    ]
