"""Kagi's Search API as documented: GET /api/v0/search on kagi.com, key as Authorization: Bot <token>."""

from __future__ import annotations

import time

from starlette.responses import JSONResponse, Response

from bench_assets.simulator.app import SimRequest, Simulator, VendorRoute

VENDOR = "kagi"
HOST = "kagi.com"
# meta.api_balance when no balance was set (POST /_sim/credits): this, less what was billed since reset.
NOMINAL_BALANCE_USD = 1000.0


def _meta(sim: Simulator, request_id: str, started: float) -> dict:
    return {
        "id": request_id,
        "node": "us-central1",
        "ms": max(1, int((time.monotonic() - started) * 1000)),
        "api_balance": round(sim.credits.reported(VENDOR, NOMINAL_BALANCE_USD), 6),
    }


def _error(status: int, code: int, msg: str, request_id: str = "", ref: str | None = None) -> Response:
    return JSONResponse(
        {
            "meta": {"id": request_id, "node": "us-central1", "ms": 1},
            "data": None,
            "error": [{"code": code, "msg": msg, "ref": ref}],
        },
        status_code=status,
    )


def unauthorized(req: SimRequest) -> Response:
    # Body error code 2 "Unauthorized"; (?) the HTTP status is not documented, 401 is assumed.
    return _error(401, 2, "Unauthorized: missing or invalid API token")


def credit_needed(sim: Simulator, req: SimRequest) -> float:
    return sim.profile(VENDOR).usd_per_request["search"]  # a search needs its price on the balance


def out_of_credit(sim: Simulator, req: SimRequest) -> Response:
    # Insufficient credit arrives as HTTP 400 with body code 101 (vendors.md §12).
    return _error(400, 101, "Insufficient credit to perform this request", sim.request_id(VENDOR))


def error_response(status: int, message: str) -> Response:
    # Body codes: 0 internal. (?) Kagi documents no rate limit nor a code for it: a 429 carries code 0
    # too, and the status says what it is.
    return _error(status, 0, message)


async def search(sim: Simulator, req: SimRequest) -> Response:
    started = time.monotonic()
    request_id = sim.request_id(VENDOR)
    q = req.params.get("q", "")
    if not q.strip():
        return _error(400, 1, "Malformed request: missing required parameter", request_id, ref="q")
    try:
        limit = int(req.params.get("limit", "10"))  # (?) default limit is not documented
    except ValueError:
        return _error(400, 1, "Malformed request: limit must be an integer", request_id, ref="limit")
    if limit < 1:
        return _error(400, 1, "Malformed request: limit must be positive", request_id, ref="limit")
    hits = sim.search(VENDOR, q, limit)
    data: list[dict] = []
    for rank, hit in enumerate(hits, start=1):
        data.append(
            {
                "t": 0,
                "rank": rank,
                "url": sim.result_url(VENDOR, hit.page),
                "title": hit.page.title,
                "snippet": hit.snippet,
                "published": f"{hit.page.published}T00:00:00Z",
            }
        )
    if hits:  # t=1: related searches
        data.append({"t": 1, "list": [f"{q} review", f"{q} 2026"]})
    sim.bill(VENDOR, "search", request_id)  # $12 per 1,000 searches, drawn from the account's balance
    return JSONResponse({"meta": _meta(sim, request_id, started), "data": data})


def routes(sim: Simulator) -> list[VendorRoute]:
    return [
        # v0 only: v1 (an early-access preview, see adapters/kagi.py) answers in another shape, so
        # serving v0's body there would let a manifest pinned to v1 pass tests it would fail live.
        VendorRoute(VENDOR, HOST, "GET", "/api/v0/search", search, auth_header="authorization", auth_scheme="Bot"),
    ]
