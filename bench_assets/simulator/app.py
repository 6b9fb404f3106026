"""The local vendor simulator: one real HTTP server that stands in for every vendor and site.

Every real host is mounted under `/h/<host>`: `https://api.exa.ai/search` is served at
`http://127.0.0.1:PORT/h/api.exa.ai/search`, and a planted page
`https://docs.acme.test/guides/x` at `http://127.0.0.1:PORT/h/docs.acme.test/guides/x`.
So the same rewrite points an adapter, an official SDK or the golden verifier at the simulator.
`bench simulator` also serves each vendor API host at the root of a port of its own
(`HostPorts`): `http://127.0.0.1:8766/search` is `https://api.exa.ai/search`, so an official SDK
whose base-URL option drops a path prefix (firecrawl-py joins with urljoin) or that has only a
class attribute (kagiapi's `KagiClient.BASE_URL`) reaches it unmodified. `/_sim/hosts` lists both
forms of every host.
Each vendor is one small module in `bench_assets.simulator.vendors` exposing `routes(sim)`,
`unauthorized(req)` (its answer to a bad key), `out_of_credit(sim, req)` (its documented answer
when the account has no credit left) and `error_response(status, message)` (its error body, used
by the fault injector for 429 and 500).

The simulator keeps a request log and a billing log (what a vendor would have charged) that
tests read at `/_sim/requests` and `/_sim/billing` (each keeps the last `$BENCH_SIM_LOG_LIMIT`
records, default 100,000; one that dropped some answers 507 unless asked `?partial=true`: see
`bench_assets.simulator.logs`), and one simulated account balance per vendor
(`CreditAccounts`): unlimited unless set with `POST /_sim/credits {"exa": 0.05}`; every billed
call draws on it, and a vendor whose balance is used up answers with its out-of-credit response.
`POST /_sim/reset` clears the logs, the fault counters and the balances.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import itertools
import json
import os
import pkgutil
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import Corpus, Page, build_corpus, forget_streams
from bench_assets.metrics import normalize_url
from bench_assets.simulator import vendors as vendor_package
from bench_assets.simulator.faults import (
    FaultableStarlette,
    FaultState,
    fault_plan_from_env,
    parse_fault_plan,
    request_key,
)
from bench_assets.simulator.fresh_pages import SentinelRegistry, SimClock
from bench_assets.simulator.fresh_pages import routes as sentinel_routes
from bench_assets.simulator.index import Hit, SearchIndex, extract_page, styled_url, unit_hash
from bench_assets.simulator.logs import DEFAULT_LOG_LIMIT, LOG_LIMIT_ENV, BoundedLog
from bench_assets.simulator.profiles import (
    MODE_PROFILES,
    VendorProfile,
    drifted_mode_profiles,
    drifted_profiles,
    mode_profile,
)
from bench_assets.simulator.registry_site import RegistrySite, registry_file
from bench_assets.simulator.request import SimRequest
from bench_assets.simulator.signup import SignupService

SIM_PREFIX = "/h"
# The registries' API hosts (their faults are planned under the registry's name, like a vendor's).
REGISTRY_HOSTS = {
    "www.rfc-editor.org": "rfc_editor",
    "peps.python.org": "peps",
    "export.arxiv.org": "arxiv",
    "www.federalregister.gov": "federal_register",
    "www.sec.gov": "sec_edgar",
    "data.sec.gov": "sec_edgar",
}


def sim_key(vendor: str) -> str:
    """The API key the simulator accepts for a vendor (not a secret: it only works here)."""
    return f"sim-{vendor}-key"


def simulated_url(real_url: str, sim_base: str) -> str:
    """Rewrite a real https URL to the simulator: https://host/path -> {sim_base}/h/host/path."""
    rest = real_url.split("://", 1)[1]
    return f"{sim_base.rstrip('/')}{SIM_PREFIX}/{rest}"


Handler = Callable[["Simulator", SimRequest], Awaitable[Response]]


@dataclass(frozen=True)
class VendorRoute:
    vendor: str
    host: str
    method: str
    path: str  # exact path, or a prefix ending in "*"
    handler: Handler
    auth_header: str | None = None  # the header (lower case) the vendor reads its key from
    auth_scheme: str | None = None  # "Bearer" / "Bot" when the header carries a scheme
    auth_param: str | None = None  # SerpApi puts the key in a query parameter
    # Other (header, scheme) pairs the vendor also reads its key from (Exa: Authorization: Bearer).
    alt_auth: tuple[tuple[str, str | None], ...] = ()
    # The key is optional (Jina Reader): a request without it is served anonymously and bills no
    # account; a request that sends one must send a valid one.
    auth_optional: bool = False

    def matches(self, method: str, host: str, path: str) -> bool:
        if method != self.method or host != self.host:
            return False
        if self.path.endswith("*"):
            return path.startswith(self.path[:-1]) or unquote(path).startswith(self.path[:-1])
        return path == self.path


@dataclass
class CreditAccounts:
    """Each vendor's simulated account balance in USD. A vendor without a set balance is unlimited;
    a set one goes down by every billed call (`draw`), and once it is used up (or below what the
    call needs) the vendor answers with its documented out-of-credit response, unbilled."""

    balances: dict[str, float] = field(default_factory=dict)  # set balances, left to spend
    spent: dict[str, float] = field(default_factory=dict)  # billed since the last reset (or set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self, balances: dict[str, float | None]) -> None:
        """Set balances (None makes a vendor unlimited again); what it spent restarts at zero."""
        with self._lock:
            for vendor, usd in balances.items():
                self.spent[vendor] = 0.0
                if usd is None:
                    self.balances.pop(vendor, None)
                else:
                    self.balances[vendor] = float(usd)

    def reset(self) -> None:
        with self._lock:
            self.balances.clear()
            self.spent.clear()

    def draw(self, vendor: str, usd: float) -> None:
        with self._lock:
            self.spent[vendor] = self.spent.get(vendor, 0.0) + usd
            if vendor in self.balances:
                self.balances[vendor] -= usd

    def remaining(self, vendor: str) -> float | None:
        """USD left on the vendor's account; None when it is unlimited."""
        with self._lock:
            return self.balances.get(vendor)

    def reported(self, vendor: str, nominal: float) -> float:
        """The balance a vendor that reports one shows (Kagi's meta.api_balance): what is left of a
        set balance, else `nominal` less what was billed since the last reset."""
        with self._lock:
            if vendor in self.balances:
                return self.balances[vendor]
            return nominal - self.spent.get(vendor, 0.0)

    def can_pay(self, vendor: str, needed_usd: float = 0.0) -> bool:
        """Whether the account may be charged for a call that needs `needed_usd` up front: an
        unlimited account always; a set one while something is left and it covers `needed_usd`."""
        left = self.remaining(vendor)
        return left is None or (left > 1e-12 and left + 1e-12 >= needed_usd)

    def snapshot(self) -> dict[str, dict[str, float | None]]:
        with self._lock:
            vendors = sorted(set(self.balances) | set(self.spent))
            return {v: {"balance": self.balances.get(v), "spent": round(self.spent.get(v, 0.0), 9)} for v in vendors}


def parse_credits(text: bytes, vendors: set[str], source: str) -> dict[str, float | None]:
    """Validate a `POST /_sim/credits` body: {"vendor": USD >= 0 or null}; a bad one raises
    BenchInputError naming the field."""

    try:
        data = json.loads(text or b"null")
    except json.JSONDecodeError as exc:
        raise BenchInputError(source, [(None, "<json>", f"not valid JSON: {exc.msg}")]) from None
    if not isinstance(data, dict):
        raise BenchInputError(source, [(None, "<body>", 'a JSON object {"vendor": USD or null}')])
    problems: list[tuple[int | None, str, str]] = []
    for vendor, usd in data.items():
        if vendor not in vendors:
            problems.append((None, vendor, f"unknown vendor; known: {sorted(vendors)}"))
        elif usd is not None and (isinstance(usd, bool) or not isinstance(usd, (int, float)) or usd < 0):
            problems.append((None, vendor, f"{usd!r} is not a balance in USD >= 0 (or null for unlimited)"))
    if problems:
        raise BenchInputError(source, problems)
    return data


@dataclass
class Simulator:
    corpus: Corpus
    profiles: dict[str, VendorProfile]
    latency_scale: float = 1.0
    index: SearchIndex = field(init=False)
    routes: list[VendorRoute] = field(default_factory=list)
    request_log: BoundedLog = field(default_factory=BoundedLog)
    billing_log: BoundedLog = field(default_factory=BoundedLog)
    faults: FaultState = field(default_factory=FaultState)
    credits: CreditAccounts = field(default_factory=CreditAccounts)  # per-vendor account balances
    _ids: itertools.count = field(default_factory=itertools.count)
    _pages_by_url: dict[str, Page] | None = None
    sentinels: SentinelRegistry = field(default_factory=SentinelRegistry)
    clock: SimClock = field(default_factory=SimClock)
    signup: SignupService = field(default_factory=SignupService.from_env)  # sign-up flows and issued keys
    registries: RegistrySite = field(default_factory=RegistrySite)  # registries of golden truth and their pages
    # each vendor's documented modes (drifted with the vendors in a later quarter of the demo)
    mode_profiles: dict[str, dict[str, VendorProfile]] = field(default_factory=lambda: dict(MODE_PROFILES))
    host_urls: dict[str, str] = field(default_factory=dict)  # vendor host -> its own port's root URL (HostPorts)

    def __post_init__(self) -> None:
        self.index = SearchIndex(self.corpus)

    # ------------------------------------------------------------------ helpers for vendor modules

    def profile(self, vendor: str) -> VendorProfile:
        return self.profiles[vendor]

    def mode_profile(self, vendor: str, mode: str | None) -> VendorProfile:
        """The vendor's behaviour in one of its documented modes (deeper: slower, better, dearer)."""
        return mode_profile(vendor, mode, self.profiles, self.mode_profiles)

    def search(self, vendor: str, query: str, n: int, mode: str | None = None) -> list[Hit]:
        # Sentinel pages this vendor has indexed by the simulator's clock compete with the corpus.
        profile = self.mode_profile(vendor, mode)
        extra = self.sentinels.searchable(vendor, profile, query, self.clock.now())
        extra += self.registries.searchable(vendor, profile, query)
        return self.index.search(query, vendor, profile, max(0, min(n, 100)), extra_pages=extra)

    async def mode_delay(self, vendor: str, mode: str | None, key: str) -> None:
        """What a slower mode adds to the vendor's latency (already waited by `delay`)."""
        extra = (self.mode_profile(vendor, mode).latency_ms - self.profiles[vendor].latency_ms) * self.latency_scale
        if extra > 0:
            await asyncio.sleep(extra * (0.5 + unit_hash(vendor, "latency", mode or "", key)) / 1000.0)

    def result_url(self, vendor: str, page: Page) -> str:
        # A registry page comes back under whichever of the registry's URL forms this vendor indexed.
        url = self.registries.vendor_url(vendor, page) if page.stratum == "registry" else page.url
        return styled_url(url, vendor, self.profiles[vendor].url_style)

    def page(self, url: str) -> Page | None:
        """Find a planted page from any URL variant a caller might send."""

        if self._pages_by_url is None:
            self._pages_by_url = {normalize_url(p.url): p for p in self.corpus.pages.values()}
        found = self._pages_by_url.get(normalize_url(url)) or self.registries.page(url)
        return found or self.sentinels.page(url, self.clock.now())

    def extract(self, vendor: str, page: Page) -> str:
        return extract_page(page, self.profiles[vendor])

    def request_id(self, vendor: str) -> str:
        return f"{vendor}-{uuid.UUID(int=next(self._ids) + 1)}"

    def bill(
        self,
        vendor: str,
        endpoint: str,
        request_id: str,
        units: dict[str, float] | None = None,
        usd: float | None = None,
    ) -> float:
        """Record what the vendor charges for this call and draw it from the vendor's account;
        returns the USD amount."""
        if usd is None:
            usd = self.profiles[vendor].usd_per_request.get(endpoint, 0.0)
        self.credits.draw(vendor, usd)
        self.billing_log.append(
            {
                "vendor": vendor,
                "endpoint": endpoint,
                "request_id": request_id,
                "units": units or {f"request.{endpoint}": 1.0},
                "usd": usd,
                "at": time.time(),
            }
        )
        return usd

    async def delay(self, vendor: str, key: str) -> None:
        base = self.profiles[vendor].latency_ms * self.latency_scale
        if base > 0:  # deterministic jitter between 0.5x and 1.5x of the mean
            await asyncio.sleep(base * (0.5 + unit_hash(vendor, "latency", key)) / 1000.0)


def load_vendor_routes(sim: Simulator) -> list[VendorRoute]:
    routes: list[VendorRoute] = []
    for info in pkgutil.iter_modules(vendor_package.__path__):
        module = importlib.import_module(f"{vendor_package.__name__}.{info.name}")
        if hasattr(module, "routes"):
            routes.extend(module.routes(sim))
    return routes


@functools.lru_cache(maxsize=1)
def _extra_keys() -> dict[str, tuple[str, ...]]:
    """More keys to accept, from $BENCH_SIM_EXTRA_KEYS ({"vendor": "key"}): lets a test play a live
    run with a recognisable key and then scan everything written for it."""
    raw = os.environ.get("BENCH_SIM_EXTRA_KEYS", "")
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"$BENCH_SIM_EXTRA_KEYS is not JSON: {exc.msg}") from None
    return {vendor: (key,) if isinstance(key, str) else tuple(key) for vendor, key in data.items()}


def _credentials(route: VendorRoute, req: SimRequest, signup: SignupService | None = None) -> str | None:
    """How a request is authorized: "key" (a valid key, billed to the vendor's account),
    "anonymous" (a keyless use the vendor documents: Tavily's keyless mode, Jina Reader without a
    key), or None (refused: the vendor's unauthorized answer). Every route goes through here."""
    if signup is not None and signup.keyless_request(route.vendor, route.path, req.headers):
        return "anonymous"  # a keyless call the vendor documents (Tavily's X-Tavily-Access-Mode: keyless)
    # The fixed simulator key, any key the vendor's sign-up flow issued, and $BENCH_SIM_EXTRA_KEYS.
    accepted = {
        sim_key(route.vendor),
        *(signup.issued_keys(route.vendor) if signup is not None else ()),
        *_extra_keys().get(route.vendor, ()),
    }
    if route.auth_param:
        return "key" if req.params.get(route.auth_param) in accepted else None
    if not route.auth_header:
        return "anonymous"
    methods = ((route.auth_header, route.auth_scheme), *route.alt_auth)
    sent = [(header, scheme, req.headers[header]) for header, scheme in methods if header in req.headers]
    if not sent:
        return "anonymous" if route.auth_optional else None
    for _header, scheme, value in sent:
        if any(value == (f"{scheme} {key}" if scheme else key) for key in accepted):
            return "key"
    return None


@dataclass
class VendorHooks:
    """Each vendor module's own answers: to a bad key, to an account out of credit (and what a call
    must find on the account up front)."""

    unauthorized: dict[str, Callable[[SimRequest], Response]] = field(default_factory=dict)
    out_of_credit: dict[str, Callable[[Simulator, SimRequest], Response]] = field(default_factory=dict)
    credit_needed: dict[str, Callable[[Simulator, SimRequest], float]] = field(default_factory=dict)


def load_vendor_hooks(sim: Simulator, unauthorized: dict[str, Callable[[SimRequest], Response]] | None) -> VendorHooks:
    hooks = VendorHooks(unauthorized=dict(unauthorized or {}))
    for info in pkgutil.iter_modules(vendor_package.__path__):
        module = importlib.import_module(f"{vendor_package.__name__}.{info.name}")
        if hasattr(module, "unauthorized"):
            hooks.unauthorized[module.VENDOR] = module.unauthorized
        if hasattr(module, "out_of_credit"):
            hooks.out_of_credit[module.VENDOR] = module.out_of_credit
        if hasattr(module, "credit_needed"):  # what a call must find on the account up front
            hooks.credit_needed[module.VENDOR] = module.credit_needed
        if hasattr(module, "error_response"):  # the vendor's own 429/500 bodies for injected faults
            sim.faults.error_bodies[module.VENDOR] = module.error_response
    return hooks


async def _serve_route(
    sim: Simulator, hooks: VendorHooks, route: VendorRoute, request: Request, host: str, path: str, body: bytes
) -> Response:
    """One vendor call: its key checked as the vendor checks it, its credit, latency and faults, then its handler."""
    req = SimRequest(
        route.vendor,
        request.method,
        host,
        path,
        dict(request.query_params),
        {k.lower(): v for k, v in request.headers.items()},
        body,
    )
    how = _credentials(route, req, sim.signup)
    _log_request(sim, req, route, how is not None)
    if how is None:
        make = hooks.unauthorized.get(route.vendor)
        return make(req) if make else JSONResponse({"error": "unauthorized"}, status_code=401)
    if how == "key" and route.vendor in hooks.out_of_credit:
        needed = hooks.credit_needed[route.vendor](sim, req) if route.vendor in hooks.credit_needed else 0.0
        if not sim.credits.can_pay(route.vendor, needed):
            return hooks.out_of_credit[route.vendor](sim, req)  # checked before anything is served
    if sim.latency_scale > 0:
        await sim.delay(route.vendor, path + request.url.query + body.decode("utf-8", "replace"))
    handler = functools.partial(route.handler, sim, req)
    if not sim.faults.covers(route.vendor):  # nothing to draw, nothing to count
        return await handler()
    return await sim.faults.respond(route.vendor, request_key(req, route.auth_param), request.scope, handler)


def control_routes(sim: Simulator) -> list[Route]:
    """The simulator's own API (`/_sim/...`): health, logs, the vendor list, reset, faults, credits."""

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "vendors": sorted({r.vendor for r in sim.routes}), "pid": os.getpid()})

    async def billing(request: Request) -> Response:
        return _log_response(sim.billing_log, "billing", request)

    async def requests_log(request: Request) -> Response:
        return _log_response(sim.request_log, "request", request)

    async def vendors(request: Request) -> Response:
        base = str(request.base_url).rstrip("/")
        hosts: dict[str, list[str]] = {}
        for r in sim.routes:
            hosts.setdefault(r.vendor, [])
            url = f"{base}{SIM_PREFIX}/{r.host}"
            if url not in hosts[r.vendor]:
                hosts[r.vendor].append(url)
        return JSONResponse(hosts)

    async def hosts(request: Request) -> Response:
        """Every vendor API host: its vendor, its URL under /h/ and, when served on a port of its
        own, that port's root URL (what an SDK's base-URL option takes)."""
        base = str(request.base_url).rstrip("/")
        return JSONResponse(
            {
                host: {"vendor": vendor, "prefixed": f"{base}{SIM_PREFIX}/{host}", "root": sim.host_urls.get(host)}
                for host, vendor in vendor_hosts(sim).items()
            }
        )

    async def reset(request: Request) -> Response:
        sim.request_log.clear()
        sim.billing_log.clear()
        sim.faults.reset()
        sim.credits.reset()
        return JSONResponse({"ok": True})

    async def credits(request: Request) -> Response:
        """GET: each vendor's balance (null: unlimited) and spend; POST {"vendor": USD or null}: set them."""
        if request.method == "POST":
            try:
                sim.credits.set(parse_credits(await request.body(), set(sim.profiles), "POST /_sim/credits"))
            except BenchInputError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(sim.credits.snapshot())

    async def faults(request: Request) -> Response:
        if request.method == "POST":
            try:
                sim.faults.set_plan(parse_fault_plan(await request.body(), "POST /_sim/faults"))
            except BenchInputError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(sim.faults.snapshot())

    return [
        Route("/_sim/health", health),
        Route("/_sim/billing", billing),
        Route("/_sim/requests", requests_log),
        Route("/_sim/vendors", vendors),
        Route("/_sim/hosts", hosts),
        Route("/_sim/reset", reset, methods=["POST"]),
        *sentinel_routes(sim),
        Route("/_sim/faults", faults, methods=["GET", "POST"]),
        Route("/_sim/credits", credits, methods=["GET", "POST"]),
    ]


def build_app(sim: Simulator, unauthorized: dict[str, Callable[[SimRequest], Response]] | None = None) -> Starlette:
    sim.routes = load_vendor_routes(sim)
    hooks = load_vendor_hooks(sim, unauthorized)
    routes_at: dict[tuple[str, str], list[VendorRoute]] = {}  # by method and host, in their order
    for vendor_route in sim.routes:
        routes_at.setdefault((vendor_route.method, vendor_route.host), []).append(vendor_route)

    async def dispatch(request: Request) -> Response:
        host = request.path_params["host"]
        path = "/" + request.path_params.get("path", "")
        body = await request.body()
        candidates = routes_at.get((request.method, host), ())
        route = next((r for r in candidates if r.matches(request.method, host, path)), None)
        if route is not None:
            return await _serve_route(sim, hooks, route, request, host, path, body)
        if request.method == "GET" and host in REGISTRY_HOSTS:  # a registry's API, with the fault injector
            registry = REGISTRY_HOSTS[host]
            key = request_key(SimRequest(registry, "GET", host, path, dict(request.query_params), {}, b""), None)

            async def registry_api() -> Response:
                found = registry_file(host, path)
                return found if found is not None else JSONResponse({"error": "not found"}, status_code=404)

            if registry_file(host, path) is not None or sim.page(f"https://{host}{path}") is None:
                return await sim.faults.respond(registry, key, request.scope, registry_api)
        page = sim.page(f"https://{host}{path}")
        if page is not None and request.method == "GET":
            return HTMLResponse(page.render_html())
        return JSONResponse({"error": f"simulator has no route for {request.method} {host}{path}"}, status_code=404)

    specific = [*control_routes(sim), *sim.signup.routes(SIM_PREFIX)]  # sign-up APIs are on auth hosts
    taken = {r.path.split("/")[2] for r in specific if r.path.startswith(SIM_PREFIX + "/")}
    return FaultableStarlette(
        routes=[
            VendorApiRoute(frozenset(r.host for r in sim.routes) - taken, dispatch),
            *specific,  # before the generic dispatch
            Route(SIM_PREFIX + "/{host}/{path:path}", dispatch, methods=["GET", "POST"]),
            Route(SIM_PREFIX + "/{host}", dispatch, methods=["GET", "POST"]),
        ]
    )


class VendorApiRoute(Route):
    """The generic dispatch for the vendor API hosts (no other route serves), tried first: a run's
    calls then skip the control and sign-up routes, some 85 regular expressions a call."""

    def __init__(self, hosts: frozenset[str], endpoint: Callable[[Request], Awaitable[Response]]):
        super().__init__(SIM_PREFIX + "/{host}/{path:path}", endpoint, methods=["GET", "POST"])
        self.hosts = hosts

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is Match.FULL and child["path_params"]["host"] in self.hosts:
            return match, child
        return Match.NONE, {}  # anything else (another host, a method not served) as before


def vendor_hosts(sim: Simulator) -> dict[str, str]:
    """Every vendor API host the simulator serves, with its vendor, in a stable order."""
    return {r.host: r.vendor for r in sorted(sim.routes, key=lambda r: (r.vendor, r.host))}


class HostPorts:
    """Serves each vendor host at the root of a port of its own, besides `/h/<host>` on the main port.

    A request arriving on a host's port (the ASGI scope's `server` address) is the same request
    under `/h/<host>`: one app, one request log, one set of faults and balances for both forms."""

    def __init__(self, app: ASGIApp, host_by_port: dict[int, str]):
        self.app = app
        self.host_by_port = host_by_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        host = self.host_by_port.get(server[1]) if scope["type"] == "http" and server else None
        if host is not None:
            prefix = f"{SIM_PREFIX}/{host}"
            raw = scope.get("raw_path") or scope["path"].encode()
            scope = {**scope, "path": prefix + scope["path"], "raw_path": prefix.encode() + raw}
        await self.app(scope, receive, send)


def _log_request(sim: Simulator, req: SimRequest, route: VendorRoute, auth_ok: bool) -> None:
    secret_headers = {route.auth_header, "authorization", *(header for header, _ in route.alt_auth)}
    headers = {k: v for k, v in req.headers.items() if k not in secret_headers}
    params = {k: v for k, v in req.params.items() if k != route.auth_param}
    sim.request_log.append(
        {
            "at": time.time(),
            "vendor": req.vendor,
            "method": req.method,
            "host": req.host,
            "path": req.path,
            "params": params,
            "headers": headers,
            "body": req.body.decode("utf-8", "replace"),
            "auth_ok": auth_ok,
        }
    )


def _log_response(log: BoundedLog, name: str, request: Request) -> Response:
    """A log as a JSON array; 507 when it dropped records since the last reset (it is not the
    whole log), unless the caller asks for what is left with `?partial=true`."""
    if log.dropped and request.query_params.get("partial", "").lower() not in ("true", "1"):
        message = (
            f"the {name} log dropped its {log.dropped} oldest records since the last reset (it keeps the last "
            f"{log.limit}, ${LOG_LIMIT_ENV}): reset before a run whose log you read, raise the limit, "
            "or ask for what is left with ?partial=true"
        )
        return JSONResponse({"error": message, "dropped": log.dropped, "kept": len(log)}, status_code=507)
    return Response(log.json(), media_type="application/json")


CANDIDATE_PAGES_ENV = "BENCH_SIM_CANDIDATE_PAGES"  # candidate reserve pages per stratum (0: half the golden pages)
DRIFT_QUARTERS_ENV = "BENCH_SIM_DRIFT_QUARTERS"  # quarters after the shipped one the vendors have drifted


def create_simulator(pages_per_stratum: int | None = None, latency_scale: float | None = None) -> Simulator:
    pages = pages_per_stratum or _env_number("BENCH_SIM_PAGES_PER_STRATUM", "14", int, minimum=1)
    scale = latency_scale if latency_scale is not None else _env_number("BENCH_SIM_LATENCY_SCALE", "1.0", float, 0.0)
    limit = _env_number(LOG_LIMIT_ENV, str(DEFAULT_LOG_LIMIT), int, minimum=0)
    # a later quarter of the demo: its grown candidate reserve, and its vendors drifted that far
    candidates = _env_number(CANDIDATE_PAGES_ENV, "0", int, minimum=0) or None
    drift = _env_number(DRIFT_QUARTERS_ENV, "0", int, minimum=0)
    corpus = build_corpus(pages_per_stratum=pages, candidates_per_stratum=candidates)
    forget_streams()  # the corpus is all this process keeps of them
    sim = Simulator(
        corpus=corpus,
        profiles=drifted_profiles(drift),
        mode_profiles=drifted_mode_profiles(drift),
        latency_scale=scale,
        request_log=BoundedLog(limit),
        billing_log=BoundedLog(limit),
    )
    sim.faults.set_plan(fault_plan_from_env())
    return sim


def _env_number(name: str, default: str, kind: type, minimum: float, environ: dict[str, str] | None = None) -> Any:
    """A number from the environment; a bad value is an input error naming the variable."""

    text = (os.environ if environ is None else environ).get(name, "").strip() or default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or value < minimum or value != value:
        raise BenchInputError(f"${name}", [(None, name, f"{text!r} is not a {kind.__name__} >= {minimum}")])
    return value
