"""Sentinel pages in the simulated world: a controllable clock and per-vendor index lag.

A sentinel page is planted at a publish time. The simulator's site serves it from that time on,
and each simulated vendor's search returns it for its unique phrase only once the clock has
passed publish time + that vendor's lag (`VendorProfile.ttr_lag_hours`, drawn per page between
0.5x and 1.5x of it, deterministically). A vendor whose lag is None never indexes sentinels.

The clock is real time unless a test or the probe job fixes it (`POST /_sim/clock`), so thirty
days of probes run in seconds. `GET /_sim/sentinels` tells the simulator's truth (when each
vendor indexes each page), which the tests compare with what the probes measured.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bench_assets.golden.planted import Page
from bench_assets.metrics import normalize_url
from bench_assets.simulator.index import tokenize, unit_hash
from bench_assets.simulator.profiles import VendorProfile

if TYPE_CHECKING:
    from bench_assets.sentinels.pages import SentinelPage


@cache
def _pages_schema() -> TypeAdapter[list[SentinelPage]]:
    """The schema of `POST /_sim/sentinels`. `bench_assets.sentinels.pages` is imported here and for
    `parse_utc`, when a sentinel or the clock is first set, not with the simulator: it brings pandas
    and DuckDB, whose memory a simulator never sent a sentinel does without."""
    from bench_assets.sentinels.pages import SentinelPage

    return TypeAdapter(list[SentinelPage])


class SimClock:
    """The simulator's notion of now: real time, or a time fixed by `set`."""

    def __init__(self) -> None:
        self._fixed: datetime | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._fixed or datetime.now(UTC)

    @property
    def fixed(self) -> bool:
        return self._fixed is not None

    def set(self, when: datetime | None) -> None:
        with self._lock:
            self._fixed = when


@dataclass(frozen=True)
class _Planted:
    spec: SentinelPage
    page: Page
    phrase_tokens: frozenset[str]


class SentinelRegistry:
    """The sentinel pages published to the simulated web, by URL (publishing again replaces).

    Keyed by URL, not by page id: ids are unique within a snapshot only (two snapshots publishing
    a batch at the same minute share ids), while a page's URL names its snapshot and batch."""

    def __init__(self) -> None:
        self._by_url: dict[str, _Planted] = {}
        self._lock = threading.Lock()

    def publish(self, pages: list[SentinelPage]) -> int:
        with self._lock:
            for spec in pages:
                assert spec.published_at is not None  # the route refuses a page with none
                page = Page(
                    url=spec.url,
                    stratum="sentinel",
                    title=spec.title,
                    paragraphs=tuple(spec.paragraphs),
                    table_header=(),
                    table_rows=(),
                    published=spec.published_at.date().isoformat(),
                    golden=False,
                )
                self._by_url[normalize_url(spec.url)] = _Planted(spec, page, frozenset(tokenize(spec.phrase)))
            return len(self._by_url)

    def clear(self) -> None:
        with self._lock:
            self._by_url.clear()

    def indexed_at(self, vendor: str, profile: VendorProfile, spec: SentinelPage) -> datetime | None:
        """When this vendor's index starts returning the page; None: never."""
        if profile.ttr_lag_hours is None:
            return None
        lag = profile.ttr_lag_hours * (0.5 + unit_hash(vendor, "ttr", spec.id))
        assert spec.published_at is not None  # only published pages are registered
        return spec.published_at + timedelta(hours=lag)

    def searchable(self, vendor: str, profile: VendorProfile, query: str, now: datetime) -> list[Page]:
        """Pages this vendor has indexed by `now` that share a word of their unique phrase with the query."""
        terms = set(tokenize(query))
        with self._lock:
            planted = list(self._by_url.values())
        out = []
        for p in planted:
            if not terms & p.phrase_tokens:
                continue
            at = self.indexed_at(vendor, profile, p.spec)
            if at is not None and now >= at:
                out.append(p.page)
        return out

    def page(self, url: str, now: datetime) -> Page | None:
        """A published sentinel page by any URL variant (served from its publish time on)."""
        with self._lock:
            planted = self._by_url.get(normalize_url(url))
        if planted is None:
            return None
        assert planted.spec.published_at is not None  # only published pages are registered
        if now < planted.spec.published_at:
            return None
        return planted.page

    def describe(self, profiles: dict[str, VendorProfile]) -> list[dict[str, Any]]:
        with self._lock:
            planted = sorted(self._by_url.values(), key=lambda p: (p.spec.id, p.spec.url))
        out = []
        for p in planted:
            at = {v: self.indexed_at(v, prof, p.spec) for v, prof in sorted(profiles.items())}
            out.append(
                {
                    **p.spec.model_dump(mode="json"),
                    "indexed_at": {v: t.isoformat() if t else None for v, t in at.items()},
                }
            )
        return out


def routes(sim: Any) -> list[Route]:
    """`/_sim/clock` (GET, POST {"now": iso | null}) and `/_sim/sentinels` (GET, POST a list, DELETE)."""

    async def clock(request: Request) -> Response:
        if request.method == "POST":
            from bench_assets.sentinels.pages import parse_utc

            try:
                body = await request.json()
                sim.clock.set(parse_utc(body["now"]) if body.get("now") else None)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                return JSONResponse({"error": f'expected {{"now": ISO-8601 time or null}}: {exc}'}, status_code=400)
        return JSONResponse({"now": sim.clock.now().isoformat(), "fixed": sim.clock.fixed})

    async def sentinels(request: Request) -> Response:
        if request.method == "POST":
            try:
                pages = _pages_schema().validate_json(await request.body())
            except ValidationError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            unpublished = [p.id for p in pages if p.published_at is None]
            if unpublished:
                return JSONResponse({"error": f"no published_at for {unpublished}"}, status_code=400)
            return JSONResponse({"published": len(pages), "registered": sim.sentinels.publish(pages)})
        if request.method == "DELETE":
            sim.sentinels.clear()
            return JSONResponse({"registered": 0})
        return JSONResponse(sim.sentinels.describe(sim.profiles))

    return [
        Route("/_sim/clock", clock, methods=["GET", "POST"]),
        Route("/_sim/sentinels", sentinels, methods=["GET", "POST", "DELETE"]),
    ]
