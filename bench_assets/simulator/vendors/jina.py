"""Jina Search (s.jina.ai) and Reader (r.jina.ai) as documented, answering `Accept: application/json`
with the {code, status, data, meta} envelope. Key as Bearer token: required for Search, optional
for Reader (anonymous Reader calls are served, rate-limited and unbilled at Jina; a key that is
sent must be valid). Both go through the simulator's common key check."""

from __future__ import annotations

import math
from datetime import date
from typing import Any
from urllib.parse import unquote, urlencode

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "jina"
SEARCH_HOST = "s.jina.ai"
READER_HOST = "r.jina.ai"
TOKEN_USD = 0.05 / 1_000_000  # the manifest's assumed $0.05 per million tokens (data/pricing/jina.md)
# Search's charge (jina-ai/reader src/api/searcher.ts `assignChargeAmount`, commit f289e5d,
# 2026-05-01): the larger of the pages' tokens and 10,000 per started 10 results, at most
# 2,000,000; when the floor is charged, it is spread over the results' `usage.tokens`.
SEARCH_MIN_TOKENS_PER_10 = 10_000
SEARCH_MAX_TOKENS = 2_000_000
DEFAULT_COUNT = 10  # `count: number = 10` in the same file (range 0-20)


def _error(status: int, name: str, code: int, message: str) -> Response:
    # The civkit envelope the service sends: `name` is the error class and `status` its five-digit
    # code (jina-ai/reader src/services/errors.ts); no published body shows the rest (?).
    return JSONResponse(
        {
            "data": None,
            "code": status,
            "name": name,
            "status": code,
            "message": message,
            "readableMessage": f"{name}: {message}",
        },
        status_code=status,
    )


def unauthorized(req: SimRequest) -> Response:
    if not req.headers.get("authorization"):
        return _error(
            401,
            "AuthenticationRequiredError",
            40103,
            "Authentication is required to use this endpoint. Please provide a valid API key via Authorization header.",
        )
    return _error(401, "AuthenticationFailedError", 40103, "Invalid API key, please get a new one from https://jina.ai")


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # InsufficientBalanceError, code 40203 (HTTP 402), jina-ai/reader src/services/errors.ts. The
    # JSON body is the civkit envelope the service uses for every error, named as its source does.
    return _error(
        402, "InsufficientBalanceError", 40203, "Account balance not enough to run this query, please recharge."
    )


def error_response(status: int, message: str) -> Response:
    if status == 429:  # (3p) "Whoa there, turbo!", with the envelope's rate-limit name
        return _error(
            429, "RateLimitTriggeredError", 42903, f"Whoa there, turbo! You've hit the rate limit ({message})."
        )
    return _error(status, "InternalServerError", status * 100, message)


def _over_budget(req: SimRequest, tokens: int) -> Response | None:
    """409 BudgetExceededError (code 40904) when the request's X-Token-Budget is below the charge,
    as jina-ai/reader src/api/crawler.ts `saasApplyTierPolicy` answers; nothing is billed."""
    try:
        budget = int(req.headers.get("x-token-budget") or 0)
    except ValueError:
        budget = 0
    if budget and budget < tokens:
        return _error(
            409, "BudgetExceededError", 40904, f"Token budget ({budget}) exceeded, intended charge amount {tokens}"
        )
    return None


def count_tokens(text: str) -> int:
    """Output tokens as the simulator counts them (about four characters a token)."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _index(host: str) -> Response:
    # Without a query or target URL Jina answers with its index (usage notes), as the source does.
    return JSONResponse(
        {
            "code": 200,
            "status": 20000,
            "data": {
                "description": f"Usage: https://{host}/<target>",
                "note": "Provide a query or URL after the slash.",
            },
            "meta": {"usage": {"tokens": 0}},
        }
    )


def _json(data, tokens: int) -> Response:
    return JSONResponse(
        {"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": tokens}}},
        headers={"X-Usage-Tokens": str(tokens)},
    )


async def search(sim: Simulator, req: SimRequest) -> Response:
    body = req.json() if req.method == "POST" else None
    q = req.params.get("q") or (body.get("q") if isinstance(body, dict) else None) or unquote(req.path.lstrip("/"))
    if not q.strip():
        return _index(SEARCH_HOST)
    raw = req.params.get("num") or req.params.get("count") or str(DEFAULT_COUNT)
    try:
        count = int(raw)
    except ValueError:
        count = -1
    if count < 0 or count > 20:
        return _error(400, "ParamValidationError", 40001, f"Invalid value for count/num: {raw} (0-20)")
    hits = sim.search(VENDOR, q, count or DEFAULT_COUNT)
    if not hits:
        return _error(422, "AssertionFailureError", 42206, f"No search results available for query {q}")
    no_content = "no-content" in req.headers.get("x-respond-with", "")
    data, used = [], 0
    for hit in hits:
        item: dict[str, Any] = {
            "title": hit.page.title,
            "url": sim.result_url(VENDOR, hit.page),
            "description": hit.snippet,
        }
        if hit.page.stratum == "news":
            item["date"] = date.fromisoformat(hit.page.published).strftime("%b %-d, %Y")
        if not no_content:
            item["content"] = sim.extract(VENDOR, hit.page)
            item["usage"] = {"tokens": count_tokens(item["content"])}
            used += item["usage"]["tokens"]
        data.append(item)
    floor = SEARCH_MIN_TOKENS_PER_10 * math.ceil(len(data) / 10)
    tokens = min(SEARCH_MAX_TOKENS, floor if no_content else max(floor, used))
    if tokens == floor:  # the floor is charged: each result carries an equal share of it
        for item in data:
            item["usage"] = {"tokens": math.ceil(floor / len(data))}
    if refused := _over_budget(req, tokens):
        return refused
    sim.bill(VENDOR, "search", sim.request_id(VENDOR), units={"token": tokens}, usd=tokens * TOKEN_USD)
    return _json(data, tokens)


async def read(sim: Simulator, req: SimRequest) -> Response:
    auth = req.headers.get("authorization")  # checked by the simulator: valid, or absent (anonymous)
    if req.method == "POST":
        body = req.json()
        target = body.get("url") if isinstance(body, dict) else None
    else:
        target = unquote(req.path.lstrip("/"))
        if req.params:  # the target's own query string arrives as ours
            target += "?" + urlencode(req.params)
    if not isinstance(target, str) or not target.strip():
        return _index(READER_HOST)
    if "://" not in target:
        target = "https://" + target
    page = sim.page(target)
    if page is None:
        return _error(
            422, "AssertionFailureError", 42206, f"Failed to goto {target}: Error: net::ERR_NAME_NOT_RESOLVED"
        )
    content = sim.extract(VENDOR, page)
    tokens = count_tokens(content)
    if refused := _over_budget(req, tokens):
        return refused
    data = {
        "title": page.title,
        "description": page.paragraphs[0],
        "url": target,
        "content": content,
        "publishedTime": f"{page.published}T09:00:00Z",
        "metadata": {"lang": "en"},
        "usage": {"tokens": tokens},
    }
    billed = tokens if auth is not None else 0  # anonymous Reader use is free (and rate-limited)
    sim.bill(VENDOR, "extract", sim.request_id(VENDOR), units={"token": billed}, usd=billed * TOKEN_USD)
    return _json(data, tokens)


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        VendorRoute(VENDOR, SEARCH_HOST, "GET", "/*", search, auth_header="authorization", auth_scheme="Bearer"),
        VendorRoute(VENDOR, SEARCH_HOST, "POST", "/*", search, auth_header="authorization", auth_scheme="Bearer"),
        # The key is optional at Reader: none is anonymous use, a wrong one is refused.
        VendorRoute(
            VENDOR,
            READER_HOST,
            "GET",
            "/*",
            read,
            auth_header="authorization",
            auth_scheme="Bearer",
            auth_optional=True,
        ),
        VendorRoute(
            VENDOR,
            READER_HOST,
            "POST",
            "/*",
            read,
            auth_header="authorization",
            auth_scheme="Bearer",
            auth_optional=True,
        ),
    ]
