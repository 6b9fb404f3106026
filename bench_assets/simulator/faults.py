"""Faults the simulator injects, per vendor: what real vendors and real networks do to a run.

A `FaultPlan` gives, per vendor (or `"*"` for every vendor without its own entry), the rate of
each fault kind, and optionally the vendor's own rate limit to enforce. Which fault a request
gets is deterministic: a hash of the plan's seed, the request (method, host, path, parameters
without the key, body) and how many times the simulator has seen that request while a plan
covered its vendor. So two runs against a freshly reset simulator meet the same faults, and a
retried request is a new draw, so it can succeed. A vendor no plan covers is served as it is:
its requests are neither hashed nor counted (a snapshot at scale sends hundreds of thousands of
distinct requests, whose counts would be kept for nothing).

What each kind does, and whether the vendor bills it (what the billing log records):

| kind | what the client sees | billed |
| --- | --- | --- |
| `rate_limited` | 429 with `Retry-After: <seconds>` | no |
| `rate_limited_http_date` | 429 with `Retry-After: <HTTP-date>` | no |
| `rate_limited_no_retry_after` | 429 without `Retry-After` | no |
| `server_error` | 500, 502 or 503 (503 with `Retry-After`) | no |
| `timeout` | nothing until `hang_seconds` have passed (the vendor never answers in time) | no |
| `connection_reset` | the connection is reset before any response | no |
| `challenge` | 200 `text/html`, a Cloudflare "Just a moment..." page (the CDN, not the vendor) | no |
| `truncated` | 200, the vendor's body cut short (a complete HTTP message) | yes |
| `malformed` | 200, the vendor's body followed by garbage: not JSON | yes |
| `slow_body` | 200, the vendor's body dripped over `slow_body_seconds` | yes |

A vendor's enforced limit (`rate_limit_per_second`) is a token bucket holding one second's
worth of requests: a request that finds it empty gets a 429 with `Retry-After` (not billed).

The 429s and the 500 carry the vendor's own error body (each vendor module's
`error_response(status, message)`, e.g. Tavily's `{"detail": {"error": ...}}`, Brave's
`ErrorResponse`, Linkup's `{statusCode, error{code}}`), so an adapter meets what the vendor would
send. The 502 (an nginx HTML page) and the 503 stay generic: they stand for a gateway or load
balancer in front of the vendor, which does not speak the vendor's API.

Configure at start with `$BENCH_SIM_FAULTS` (the plan as JSON), or at run time with
`POST /_sim/faults`; `GET /_sim/faults` returns the plan and every fault injected so far.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.types import Scope

from bench_assets.errors import BenchInputError
from bench_assets.registries import available_registries
from bench_assets.simulator.index import unit_hash
from bench_assets.simulator.profiles import PROFILES
from bench_assets.simulator.request import SimRequest

FAULTS_ENV = "BENCH_SIM_FAULTS"
# Before the vendor's handler runs (never billed), then after it (the vendor has billed).
UNBILLED_FAULTS = (
    "rate_limited",
    "rate_limited_http_date",
    "rate_limited_no_retry_after",
    "server_error",
    "timeout",
    "connection_reset",
    "challenge",
)
BILLED_FAULTS = ("truncated", "malformed", "slow_body")
FAULT_KINDS = UNBILLED_FAULTS + BILLED_FAULTS
ENFORCED_LIMIT = "rate_limit_enforced"
_ABORT_KEY = "bench.sim.abort"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VendorFaults(_Strict):
    """Per request, the probability of each fault kind (at most one fault per request)."""

    rate_limited: float = Field(default=0.0, ge=0, le=1)
    rate_limited_http_date: float = Field(default=0.0, ge=0, le=1)
    rate_limited_no_retry_after: float = Field(default=0.0, ge=0, le=1)
    server_error: float = Field(default=0.0, ge=0, le=1)
    timeout: float = Field(default=0.0, ge=0, le=1)
    connection_reset: float = Field(default=0.0, ge=0, le=1)
    challenge: float = Field(default=0.0, ge=0, le=1)
    truncated: float = Field(default=0.0, ge=0, le=1)
    malformed: float = Field(default=0.0, ge=0, le=1)
    slow_body: float = Field(default=0.0, ge=0, le=1)
    rate_limit_per_second: float | None = Field(default=None, gt=0, description="the vendor's own limit, enforced")

    @model_validator(mode="after")
    def _at_most_one(self) -> VendorFaults:
        total = sum(getattr(self, kind) for kind in FAULT_KINDS)
        if total > 1.0 + 1e-9:
            raise ValueError(f"the fault rates add up to {total:g}; a request gets at most one fault, so at most 1")
        return self


class FaultPlan(_Strict):
    """Which faults each vendor's requests meet, and how the timing faults behave."""

    seed: str = "bench-faults"
    retry_after_seconds: int = Field(default=1, ge=0, le=86_400, description="sent in Retry-After (429, 503)")
    hang_seconds: float = Field(default=30.0, gt=0, le=600, description="how long a timeout fault holds the request")
    slow_body_seconds: float = Field(default=1.0, gt=0, le=600, description="how long a slow body takes to arrive")
    max_faults_per_request: int | None = Field(
        default=None, ge=0, description="after this many faulted attempts of one request, it is served cleanly"
    )
    vendors: dict[str, VendorFaults] = {}

    @field_validator("vendors")
    @classmethod
    def _known_vendors(cls, vendors: dict[str, VendorFaults]) -> dict[str, VendorFaults]:
        # registries of golden truth are faulted like vendors, under their own names
        unknown = sorted(set(vendors) - set(PROFILES) - set(available_registries()) - {"*"})
        if unknown:
            raise ValueError(
                f"unknown vendors {unknown}; known: {sorted(PROFILES)}, registries {sorted(available_registries())} or '*' for all"
            )
        return vendors

    def for_vendor(self, vendor: str) -> VendorFaults | None:
        return self.vendors.get(vendor, self.vendors.get("*"))

    def choose(self, vendor: str, request_key: str, attempt: int) -> str | None:
        """The fault (or None) for the `attempt`-th time the simulator sees this request."""
        faults = self.for_vendor(vendor)
        if faults is None:
            return None
        u = unit_hash(self.seed, vendor, request_key, str(attempt))
        edge = 0.0
        for kind in FAULT_KINDS:
            edge += getattr(faults, kind)
            if u < edge:
                return kind
        return None


def parse_fault_plan(text: str | bytes, source: str) -> FaultPlan:
    """Validate a fault plan given as JSON; raises BenchInputError naming the input and field."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchInputError(source, [(None, "<json>", f"not valid JSON: {exc.msg} at character {exc.pos}")]) from None
    if not isinstance(data, dict):
        raise BenchInputError(source, [(None, "<plan>", "the fault plan must be a JSON object")])
    try:
        return FaultPlan.model_validate(data)
    except ValidationError as exc:
        raise BenchInputError(
            source, [(None, ".".join(str(p) for p in e["loc"]) or "<plan>", e["msg"]) for e in exc.errors()]
        ) from None


def fault_plan_from_env(environ: dict[str, str] | None = None) -> FaultPlan:
    """The plan in `$BENCH_SIM_FAULTS`, or an empty plan (no faults) when it is unset or empty."""
    text = (environ if environ is not None else os.environ).get(FAULTS_ENV, "").strip()
    return parse_fault_plan(text, f"${FAULTS_ENV}") if text else FaultPlan()


def request_key(req: SimRequest, auth_param: str | None) -> str:
    """What identifies a request for fault draws: method, host, path, parameters (not the key), body."""
    params = sorted((k, v) for k, v in req.params.items() if k != auth_param)
    text = json.dumps([req.method, req.host, req.path, params]) + "\n" + req.body.decode("utf-8", "replace")
    return hashlib.sha256(text.encode()).hexdigest()


CHALLENGE_HTML = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"><meta name="robots" content="noindex,nofollow">
</head><body><div class="main-wrapper" role="main"><div class="main-content">
<h1 class="zone-name-title h1">{host}</h1><h2 class="h2" id="challenge-running">Checking if the site connection is secure</h2>
<noscript><div class="h2">Enable JavaScript and cookies to continue</div></noscript></div></div>
<script>(function(){{window._cf_chl_opt={{cvId: '3',cZone: '{host}',cType: 'managed',cRay: '{ray}'}};
var a=document.createElement('script');a.src='/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray={ray}';
document.getElementsByTagName('head')[0].appendChild(a);}}());</script></body></html>"""


@dataclass
class _Bucket:
    rate: float
    tokens: float
    at: float

    def take(self, now: float) -> float | None:
        """Take a token; None when taken, else the seconds until one is available."""
        self.tokens = min(max(1.0, self.rate), self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return (1.0 - self.tokens) / self.rate


@dataclass
class FaultState:
    """The simulator's fault plan and what it has injected: per-request attempt counts, buckets, a log."""

    plan: FaultPlan = field(default_factory=FaultPlan)
    attempts: dict[str, int] = field(default_factory=dict)
    faulted: dict[str, int] = field(default_factory=dict)
    buckets: dict[str, _Bucket] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)
    # vendor -> its error_response(status, message): the vendor's own body for injected 429s and 500s
    error_bodies: dict[str, Callable[[int, str], Response]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set_plan(self, plan: FaultPlan) -> None:
        with self._lock:
            self.plan = plan
            self.buckets.clear()

    def reset(self) -> None:
        with self._lock:
            self.attempts.clear()
            self.faulted.clear()
            self.buckets.clear()
            self.log.clear()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"plan": self.plan.model_dump(), "injected": list(self.log)}

    def covers(self, vendor: str) -> bool:
        """Whether the plan has faults (or an enforced limit) for this vendor's requests."""
        return self.plan.for_vendor(vendor) is not None

    def _draw(self, vendor: str, key: str) -> tuple[str | None, int, float | None]:
        with self._lock:
            faults = self.plan.for_vendor(vendor)
            if faults is None:
                return None, 0, None
            attempt = self.attempts.get(key, 0) + 1
            self.attempts[key] = attempt
            if faults.rate_limit_per_second:
                bucket = self.buckets.get(vendor)
                now = time.monotonic()
                if bucket is None or bucket.rate != faults.rate_limit_per_second:
                    bucket = self.buckets[vendor] = _Bucket(
                        faults.rate_limit_per_second, max(1.0, faults.rate_limit_per_second), now
                    )
                wait = bucket.take(now)
                if wait is not None:
                    return ENFORCED_LIMIT, attempt, wait
            kind = self.plan.choose(vendor, key, attempt)
            cap = self.plan.max_faults_per_request
            if kind is not None and cap is not None and self.faulted.get(key, 0) >= cap:
                kind = None
            if kind is not None:
                self.faulted[key] = self.faulted.get(key, 0) + 1
            return kind, attempt, None

    def _record(self, vendor: str, key: str, attempt: int, kind: str) -> None:
        with self._lock:
            self.log.append({"at": time.time(), "vendor": vendor, "key": key, "attempt": attempt, "fault": kind})

    async def respond(
        self, vendor: str, key: str, scope: Scope, handler: Callable[[], Awaitable[Response]]
    ) -> Response:
        """The response to one authorized vendor request: a fault, or the handler's response."""
        kind, attempt, wait = self._draw(vendor, key)
        if kind is None:
            return await handler()
        self._record(vendor, key, attempt, kind)
        plan = self.plan
        error_body = self.error_bodies.get(vendor, _generic_error)
        if kind == ENFORCED_LIMIT:
            return _too_many(error_body, str(max(1, math.ceil(wait or 0.0))), "rate limit exceeded")
        if kind == "rate_limited":
            return _too_many(error_body, str(plan.retry_after_seconds), "rate limited")
        if kind == "rate_limited_http_date":
            return _too_many(
                error_body, formatdate(time.time() + plan.retry_after_seconds, usegmt=True), "rate limited"
            )
        if kind == "rate_limited_no_retry_after":
            return _too_many(error_body, None, "too many requests")
        if kind == "server_error":
            return _server_error(
                error_body, unit_hash(plan.seed, "status", key, str(attempt)), plan.retry_after_seconds
            )
        if kind == "timeout":
            await asyncio.sleep(plan.hang_seconds)
            return JSONResponse({"error": "gateway timeout"}, status_code=504)
        if kind == "connection_reset":
            abort = scope.get(_ABORT_KEY)
            if abort is not None:
                abort()
            return JSONResponse({"error": "connection reset (not abortable under this server)"}, status_code=502)
        if kind == "challenge":
            ray = hashlib.sha256(f"{key}{attempt}".encode()).hexdigest()[:16]
            host = (
                scope.get("path", "/h/vendor/").split("/")[2] if scope.get("path", "").startswith("/h/") else "vendor"
            )
            return HTMLResponse(
                CHALLENGE_HTML.format(host=host, ray=ray),
                status_code=200,
                headers={"cf-mitigated": "challenge", "server": "cloudflare", "cf-ray": ray},
            )
        response = await handler()  # the vendor answers (and bills); the body is then damaged on the way
        body = getattr(response, "body", None)
        if not isinstance(body, (bytes, bytearray)) or not (200 <= response.status_code < 300):
            return response
        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
        if kind == "truncated":
            cut = max(1, int(len(body) * (0.2 + 0.6 * unit_hash(plan.seed, "cut", key, str(attempt)))))
            return Response(
                bytes(body[:cut]), status_code=response.status_code, headers=headers, media_type=response.media_type
            )
        if kind == "malformed":
            return Response(
                bytes(body) + b'\n}{"garbage": tru',
                status_code=response.status_code,
                headers=headers,
                media_type=response.media_type,
            )
        return _slow(bytes(body), plan.slow_body_seconds, response.status_code, headers, response.media_type)


def _generic_error(status: int, message: str) -> Response:
    """The body for a vendor module without its own `error_response`."""
    return JSONResponse({"error": message, "status": status}, status_code=status)


def _too_many(body: Callable[[int, str], Response], retry_after: str | None, message: str) -> Response:
    response = body(429, message)
    if retry_after is not None:
        response.headers["retry-after"] = retry_after
    return response


def _server_error(body: Callable[[int, str], Response], u: float, retry_after: int) -> Response:
    if u < 1 / 3:
        return body(500, "internal server error")  # the vendor's own application error
    if u < 2 / 3:
        # 502 and 503 come from the gateway in front of the vendor: generic, not the vendor's shape
        return HTMLResponse(
            "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway"
            "</h1></center><hr><center>nginx</center></body></html>",
            status_code=502,
        )
    return JSONResponse({"error": "service unavailable"}, status_code=503, headers={"retry-after": str(retry_after)})


def _slow(body: bytes, seconds: float, status: int, headers: dict[str, str], media_type: str | None) -> Response:
    pieces = 10
    size = max(1, math.ceil(len(body) / pieces))

    async def drip():
        for i in range(0, len(body), size):
            yield body[i : i + size]
            await asyncio.sleep(seconds / pieces)

    return StreamingResponse(
        drip(), status_code=status, media_type=media_type, headers={**headers, "content-length": str(len(body))}
    )


def _aborter(send: Callable[..., Any]) -> Callable[[], None] | None:
    """A function that resets the client's connection (RST), from the server's own send callable.

    ASGI gives an application no handle on its socket; uvicorn's `send` is a bound method of the
    request cycle, which holds the transport. Under another server this returns None.
    """
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None or not hasattr(transport, "abort"):
        return None

    def abort() -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:  # linger 0: close sends RST, so the client reads ECONNRESET rather than EOF
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        transport.abort()

    return abort


class FaultableStarlette(Starlette):
    """Starlette that lets a route reset the client's connection (the `connection_reset` fault)."""

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        abort = _aborter(send)
        aborted = False

        def abort_now() -> None:
            nonlocal aborted
            aborted = True
            assert abort is not None  # installed below only when there is an aborter
            abort()

        async def guarded_send(message) -> None:
            if aborted:
                # The socket is gone: swallow the response, and yield so the server sees the
                # connection lost before the application returns (else it logs a missing response).
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                return
            await send(message)

        if abort is not None:
            scope[_ABORT_KEY] = abort_now
        await super().__call__(scope, receive, guarded_send)
