"""Sending the queries of one vendor partition and archiving every attempt as evidence.

The fetcher records evidence, never a verdict: status, headers, body, latency, time. Every
attempt is committed to the partition's own DuckDB file as soon as it completes (attempts that
complete together share one commit), before the query moves on, so a crash loses at most the
calls in flight, and a re-run skips every query that already has a final response (it never pays
twice for a response it has).

Pacing and retries, so that a run survives every fault and never wedges:
- requests are paced by `fetch.pacing.VendorPacer`: evenly at each endpoint's limit, and within the
  vendor's account-wide limit across every process that shares the pacing directory; at most
  `concurrency` are in flight;
- each attempt has one deadline (`timeout_seconds`) for connecting, headers and the whole body,
  so a body that drips forever ends as a timeout;
- a 408/429/5xx (but not a vendor's out-of-credit answer), a transport error, a 2xx challenge
  page and a 2xx body that cannot be read (truncated, malformed) are retried, at most
  `max_attempts` times, after exponential backoff with jitter; a `Retry-After` (seconds or
  HTTP-date) is honoured as a minimum wait and pauses every request of that capability; one
  longer than `retry_after_max` ends the query at once rather than holding the run, and pauses
  nothing (the other queries, and probes sharing the vendor, go on at the pace they had);
- the transport never sends a request again by itself: aiohttp re-sends an idempotent request
  (GET) once when its connection is reset or closed before the answer, which would put a call on
  the wire that is never archived and attempts past `max_attempts`. That loss reaches the engine
  as a connection error instead (`vendor_transport`), to be archived and retried like any other;
- whatever happens, each (query, capability) ends with one attempt marked `final`.

A response billed in a unit the manifest does not price stops the partition: its spend, and so the
ceiling, could no longer be known. It is archived as it came; every call not yet sent is archived as
not sent (`classify.unpriced_stop`, classified `quota`), and a re-run once the price is added sends
those calls (and nothing else again).

Spend counts every attempt the vendor bills, retries included (`SpendLedger`, `archived_spend`).
The ceiling counts the archive's earlier attempts too; what a run reports as its spend
(`FetchStats.spend_usd`, its progress lines: `fetch.progress`) is only what its own attempts billed.

Requests go through an `httpx.AsyncClient` whose transport is aiohttp's (`httpx_aiohttp`, the
transport the OpenAI SDK offers for the same reason): the same client, request and response
models and exceptions, at less CPU per request than httpcore's; the client's CPU is most of a
fetch's once rate limits are raised (figures in benchmarks/README.md).

A vendor that serves at most `Adapter.page_size` results a request (SerpApi, Serper) is asked
page by page when a query wants more; the pages of one attempt are archived together in one body
(`adapters.base.PAGES_KEY`), each page paced, checked against the ceiling, retried on its own
(its failed tries kept in the body) and billed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pandas as pd
from httpx_aiohttp import AiohttpTransport
from tenacity import AsyncRetrying, RetryCallState, retry_if_result, stop_after_attempt, wait_exponential_jitter

from bench_assets.adapters.base import Adapter, Capability, VendorTask, pages_envelope, scrub_secrets
from bench_assets.fetch.classify import (
    RETRYABLE_STATUSES,
    SPEND_CEILING_REACHED,
    UNPRICED_UNIT_STOP,
    classify_response,
    unpriced_stop,
)
from bench_assets.fetch.pacing import VendorPacer
from bench_assets.fetch.progress import FetchProgress
from bench_assets.fetch.spend import SpendLedger, ledger_of, read_attempt
from bench_assets.storage.archive import PartitionArchive


@dataclass(frozen=True)
class FetchItem:
    """One call to make: a golden row (or decoy) sent to one vendor capability."""

    query_id: str
    role: str  # public | holdout | decoy
    capability: Capability
    text: str
    num_results: int = 10


@dataclass(frozen=True)
class FetchSettings:
    endpoints: dict[str, str]
    api_key: str
    options: dict[str, Any]
    rate_limits_per_second: dict[str, float]  # per capability (endpoint)
    concurrency: int
    timeout_seconds: float  # one deadline per attempt: connect, headers and the whole body
    max_attempts: int
    prices_usd: dict[str, float]
    spend_ceiling_usd: float | None = None
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0  # a vendor asking for a longer pause ends the query instead
    vendor_rate_per_second: float | None = None  # the account-wide limit, all endpoints together
    pacing_dir: Path | str | None = (
        None  # the vendor's shared log: a directory or a Redis URL (None: this process only)
    )
    # The account the shared log is kept under: the provider, so its configurations share its limit
    # (None: the partition's own name).
    pacing_key: str | None = None


@dataclass
class FetchStats:
    sent: int = 0
    skipped_archived: int = 0
    attempts: int = 0
    retries: int = 0
    final_by_status: dict[str, int] = field(default_factory=dict)
    final_by_class: dict[str, int] = field(default_factory=dict)  # this run's final answers by response class
    spend_usd: float = 0.0  # what this run's attempts were billed (not the archive's earlier attempts)
    archive_spend_usd: float = 0.0  # the partition's archive after this run: every attempt of every run
    ceiling_stops: int = 0
    # Units a response was billed in that the manifest does not price: the first stops the fetch (its
    # spend could no longer be known), and every query not yet sent is archived as not sent.
    unpriced_units: set[str] = field(default_factory=set)
    unpriced_stops: int = 0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    waits: list[float] = field(default_factory=list)  # every wait before a retry (backoff or Retry-After), s
    pauses: list[float] = field(default_factory=list)  # waits for a capability paused by a Retry-After, s


# ------------------------------------------------------------------------------------- pacing


def retry_after_seconds(headers: httpx.Headers | dict[str, str] | None, now: datetime | None = None) -> float | None:
    """The wait a `Retry-After` header asks for (delay-seconds or an HTTP-date), or None."""
    value = None
    if headers:
        value = (
            headers.get("retry-after")
            if isinstance(headers, httpx.Headers)
            else next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
        )
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def stopped_for_unpriced(archived: pd.DataFrame) -> set[tuple[str, str]]:
    """The (query, capability) keys whose last archived attempt is a call not sent because of an
    unpriced unit (`classify.unpriced_stop`)."""
    if archived.empty:
        return set()
    last = archived.sort_values("attempt").groupby(["query_id", "capability"], sort=False).tail(1)
    stopped = last["transport_error"].fillna("").str.startswith(UNPRICED_UNIT_STOP)
    return set(zip(last.loc[stopped, "query_id"], last.loc[stopped, "capability"]))


@dataclass
class _Outcome:
    retry: bool
    retry_after: float | None
    status: int | None


def _last_outcome(state: RetryCallState) -> _Outcome:
    """What `fetch_partition` returns when the attempts run out: the last attempt's outcome."""
    assert state.outcome is not None  # tenacity calls this only after an attempt has run
    outcome: _Outcome = state.outcome.result()
    return outcome


@dataclass
class _Received:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    error: str | None = None


async def _receive(client: httpx.AsyncClient, request: Any, deadline: float) -> _Received:
    """Send one request and read its whole body within `deadline` seconds; keep what arrived."""
    got = _Received()
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(deadline):
            async with client.stream(
                request.method,
                request.url,
                headers=request.headers,
                params=request.params or None,
                json=request.json_body,
            ) as response:
                got.status = response.status_code
                got.headers = dict(response.headers)
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
    except (TimeoutError, httpx.TimeoutException) as exc:
        cause = _aiohttp_cause(exc)
        if cause is None or isinstance(cause, aiohttp.ServerTimeoutError):
            got.error = f"timeout: {type(exc).__name__}" + (" after headers" if got.status is not None else "")
        else:  # httpx_aiohttp maps every aiohttp connection error, a reset included, to ConnectTimeout
            got.error = f"connection_error: {type(cause).__name__}: {str(cause)[:200]}"
    except (httpx.RequestError, aiohttp.ClientError) as exc:  # refused or reset, protocol error, undecodable body
        got.error = f"connection_error: {type(exc).__name__}: {str(exc)[:200]}"
    if got.status is not None:
        got.body = b"".join(chunks).decode("utf-8", "replace")
    return got


def _aiohttp_cause(exc: BaseException) -> aiohttp.ClientError | None:
    """The aiohttp error an httpx exception was raised from by the aiohttp transport, if any (the
    one `ConnectionLost` stands for, where it does)."""
    cause = exc.__cause__
    if isinstance(cause, ConnectionLost) and isinstance(cause.__cause__, aiohttp.ClientError):
        return cause.__cause__
    return cause if isinstance(cause, aiohttp.ClientError) else None


class ConnectionLost(aiohttp.ClientConnectionError):
    """The connection was reset or closed before the answer came: aiohttp's ClientOSError or
    ServerDisconnectedError, under a class aiohttp does not re-send a request for."""


async def _never_resend(request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    """aiohttp re-sends an idempotent request once after the two errors below (RFC 9112's retry of
    a request on a persistent connection); raised as `ConnectionLost` they end the request, so the
    engine archives that attempt and decides on a retry itself."""
    try:
        return await handler(request)
    except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError) as exc:
        raise ConnectionLost(str(exc)) from exc


def vendor_transport(connections: int) -> httpx.AsyncBaseTransport:
    """The transport vendor requests go out on: aiohttp's, at most `connections` open at once, never
    sending a request again by itself (`_never_resend`); certificates from the environment as
    httpx's own transport takes them."""
    limits = httpx.Limits(max_connections=connections)

    def session() -> aiohttp.ClientSession:  # made in the running event loop, at the first request
        connector = aiohttp.TCPConnector(
            limit=connections,
            keepalive_timeout=limits.keepalive_expiry,
            ssl=httpx.create_ssl_context(trust_env=True),
        )
        return aiohttp.ClientSession(connector=connector, middlewares=(_never_resend,))

    return AiohttpTransport(limits=limits, trust_env=True, client=session)


def _scrubbed(got: _Received, secrets: tuple[str, ...]) -> _Received:
    return _Received(
        got.status,
        {scrub_secrets(k, secrets): scrub_secrets(v, secrets) for k, v in got.headers.items()},
        scrub_secrets(got.body, secrets),
        scrub_secrets(got.error, secrets),
    )


@dataclass
class _Paging:
    """What sending the further pages of a search shares with the partition's fetch."""

    adapter: Adapter
    settings: FetchSettings
    ledger: SpendLedger
    stats: FetchStats
    semaphore: asyncio.Semaphore
    pacer: VendorPacer
    client: httpx.AsyncClient
    secrets: tuple[str, ...]
    respect_pause: Callable[[str], Awaitable[None]]
    sleep: Callable[[float], Awaitable[None]]


@dataclass
class _Page:
    """One further page as `_send_page` ends it: read (with its redacted request and the USD it
    billed), or not (with why paging stops); and the time spent on it."""

    got: _Received | None = None
    request: dict[str, Any] | None = None
    billed_usd: float = 0.0
    stopped: str | None = None
    elapsed_ms: float = 0.0


async def _send_page(ctx: _Paging, task: VendorTask, spent: float, failures: list[dict[str, Any]]) -> _Page:
    """One further page, retried like an attempt (408/429/5xx, no response, an unreadable 2xx; at
    most `max_attempts` tries after backoff, a Retry-After honoured up to `retry_after_max`).
    Each failed try is noted in `failures` (kept in the archived body)."""
    page = _Page()
    request = ctx.adapter.build(
        task, ctx.settings.endpoints[task.capability], ctx.settings.api_key, ctx.settings.options
    )
    for tries in range(1, ctx.settings.max_attempts + 1):
        async with ctx.semaphore:
            await ctx.respect_pause(task.capability)
            async with ctx.pacer.slot(task.capability):
                if ctx.stats.unpriced_units:
                    page.stopped = f"page {task.page}: {unpriced_stop(ctx.stats.unpriced_units)}"
                    return page
                ceiling = ctx.settings.spend_ceiling_usd
                if ceiling is not None and ctx.ledger.running_usd + spent >= ceiling:
                    ctx.stats.ceiling_stops += 1
                    page.stopped = f"page {task.page}: {SPEND_CEILING_REACHED}"
                    return page
                t0 = time.perf_counter()
                got = _scrubbed(await _receive(ctx.client, request, ctx.settings.timeout_seconds), ctx.secrets)
                page.elapsed_ms += (time.perf_counter() - t0) * 1000.0
        ctx.stats.attempts += 1
        reading = read_attempt(
            ctx.adapter, ctx.settings.prices_usd, task.capability, got.status, got.headers, got.body, got.error
        )
        ctx.stats.unpriced_units.update(reading.unpriced)
        if reading.readable and not ctx.adapter.parse(task, got.status or 0, got.headers, got.body or "").error_class:
            page.got, page.request, page.billed_usd = got, request.redacted(), reading.billed_usd or 0.0
            return page
        failures.append(
            {"page": task.page, "try": tries, "status": got.status, "error": got.error, "body": (got.body or "")[:300]}
        )
        retry_after = retry_after_seconds(got.headers)
        if not reading.retry or (retry_after or 0.0) > ctx.settings.retry_after_max:
            break
        if tries < ctx.settings.max_attempts:
            wait = min(ctx.settings.backoff_max, ctx.settings.backoff_initial * 2 ** (tries - 1))
            wait = max(wait, retry_after or 0.0)
            ctx.stats.waits.append(wait)
            await ctx.sleep(wait)
    last = failures[-1]
    page.stopped = f"page {task.page}: HTTP {last['status']}: {last['error'] or last['body']}"
    return page


async def _next_pages(
    ctx: _Paging, task: VendorTask, first: _Received, first_request: Any
) -> tuple[_Received, str, float]:
    """Pages 2.. of a search the vendor serves a page at a time, each paced, checked against the
    spend ceiling, retried and billed like a call of its own. Paging ends when the vendor says no
    page follows, or at a page that still fails after its retries (noted as `bench_stopped`; the
    pages before it were billed and are the answer). One page only: archived as sent."""
    first_reading = read_attempt(
        ctx.adapter, ctx.settings.prices_usd, task.capability, first.status, first.headers, first.body, first.error
    )
    ctx.stats.unpriced_units.update(first_reading.unpriced)  # no further page is sent then
    requests = [first_request.redacted()]
    request_json = scrub_secrets(json.dumps(requests[0], sort_keys=True), ctx.secrets)
    if not first_reading.readable or not ctx.adapter.has_next_page(task, json.loads(first.body or "null")):
        return first, request_json, 0.0
    bodies, spent = [first.body or ""], first_reading.billed_usd or 0.0
    failures: list[dict[str, Any]] = []
    stopped: str | None = None
    elapsed_ms = 0.0
    for number in range(2, ctx.adapter.pages_for(task) + 1):
        page_task = VendorTask(task.capability, task.text, task.num_results, number)
        page = await _send_page(ctx, page_task, spent, failures)
        elapsed_ms += page.elapsed_ms
        if page.got is None or page.request is None:
            stopped = page.stopped
            break
        requests.append(page.request)
        bodies.append(page.got.body or "")
        spent += page.billed_usd
        if not ctx.adapter.has_next_page(page_task, json.loads(page.got.body or "null")):
            break
    request_json = scrub_secrets(json.dumps(requests, sort_keys=True), ctx.secrets)
    body = pages_envelope(bodies, task.num_results, stopped, failures)
    return _Received(first.status, first.headers, body), request_json, elapsed_ms


async def fetch_partition(
    adapter: Adapter,
    items: list[FetchItem],
    settings: FetchSettings,
    archive: PartitionArchive,
    log: Callable[[str], None] = lambda m: None,
    transport: httpx.AsyncBaseTransport | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> FetchStats:
    """Send every item not yet archived with a final response, archiving each attempt."""
    stats = FetchStats()
    started, cpu_started = time.monotonic(), time.process_time()
    settled = archive.settled()
    previous_attempts = archive.attempts_so_far()
    archived = archive.frame()
    # A call an unpriced unit stopped was never sent: it is sent now (a re-run once the price is added).
    settled -= stopped_for_unpriced(archived)
    todo = [i for i in items if (i.query_id, i.capability) not in settled]
    stats.skipped_archived = len(items) - len(todo)
    ledger = ledger_of(adapter, settings.prices_usd, archived)
    # this run's spend is what the ledger adds from here on (the archive's attempts count for the ceiling)
    attempts_before, running_before = len(ledger.entries), ledger.running_usd
    progress = FetchProgress(archive.vendor, len(todo), stats.skipped_archived, log)
    progress.start()

    def row_done(response_class: str) -> None:
        stats.final_by_class[response_class] = stats.final_by_class.get(response_class, 0) + 1
        progress.retries = stats.retries
        progress.row_done(response_class, ledger.running_usd - running_before)

    pacer = VendorPacer(
        settings.pacing_key or archive.vendor,
        settings.rate_limits_per_second,
        settings.vendor_rate_per_second,
        settings.pacing_dir,
    )
    paused_until: dict[str, float] = {}
    semaphore = asyncio.Semaphore(settings.concurrency)
    backoff = wait_exponential_jitter(
        initial=settings.backoff_initial, max=settings.backoff_max, jitter=settings.backoff_initial
    )

    def wait_strategy(retry_state: Any) -> float:
        outcome: _Outcome = retry_state.outcome.result()
        wait = backoff(retry_state)
        if outcome.retry_after is not None:
            wait = max(wait, outcome.retry_after)
        stats.waits.append(wait)
        return wait

    async def respect_pause(capability: str) -> None:
        for _ in range(3):  # re-check: another Retry-After may have extended the pause meanwhile
            remaining = paused_until.get(capability, 0.0) - time.monotonic()
            if remaining <= 0:
                return
            stats.pauses.append(remaining)
            await sleep(remaining)

    async with httpx.AsyncClient(
        timeout=settings.timeout_seconds,
        transport=transport or vendor_transport(settings.concurrency * 2),
        limits=httpx.Limits(max_connections=settings.concurrency * 2),
    ) as client:
        secrets = (settings.api_key,)

        async def one_attempt(item: FetchItem, attempt_no: list[int]) -> _Outcome:
            attempt_no[0] += 1
            attempt = attempt_no[0]
            is_last = attempt - attempt_no[1] >= settings.max_attempts
            base_row = {
                "snapshot_id": archive.snapshot_id,
                "vendor": archive.vendor,
                "query_id": item.query_id,
                "role": item.role,
                "capability": item.capability,
                "attempt": attempt,
                "adapter_version": adapter.version,
            }
            task = VendorTask(item.capability, item.text, item.num_results)
            request = adapter.build(task, settings.endpoints[item.capability], settings.api_key, settings.options)
            async with semaphore:
                await respect_pause(item.capability)
                async with pacer.slot(item.capability):
                    # Checked at the moment of sending (not when the task was queued), so no more
                    # than `concurrency` calls in flight can cross the ceiling, and nothing is sent
                    # once a response was billed in a unit the manifest does not price.
                    not_sent = None
                    if stats.unpriced_units:
                        stats.unpriced_stops += 1
                        not_sent = unpriced_stop(stats.unpriced_units)
                    elif settings.spend_ceiling_usd is not None and ledger.running_usd >= settings.spend_ceiling_usd:
                        stats.ceiling_stops += 1
                        not_sent = SPEND_CEILING_REACHED
                    if not_sent is not None:
                        await archive.save(
                            {
                                **base_row,
                                "started_at": datetime.now(UTC),
                                "latency_ms": 0.0,
                                "request_json": None,
                                "http_status": None,
                                "response_headers_json": None,
                                "body": None,
                                "body_sha256": None,
                                "transport_error": not_sent,
                                "final": True,
                            }
                        )
                        row_done("quota")  # not sent: the ceiling or an unpriced unit (`classify_response`)
                        return _Outcome(False, None, None)
                    at = datetime.now(UTC)
                    t0 = time.perf_counter()
                    got = await _receive(client, request, settings.timeout_seconds)
                    latency = (time.perf_counter() - t0) * 1000.0
            stats.attempts += 1
            # Nothing that echoes the key is kept: an error message quoting the header, a vendor
            # body or header repeating it. Read and archived alike, so a rescore reads what we read.
            got = _scrubbed(got, secrets)
            request_json = scrub_secrets(json.dumps(request.redacted(), sort_keys=True), secrets)
            if adapter.pages_for(task) > 1:
                paging = _Paging(
                    adapter, settings, ledger, stats, semaphore, pacer, client, secrets, respect_pause, sleep
                )
                got, request_json, more_ms = await _next_pages(paging, task, got, request)
                latency += more_ms
            retry_after = retry_after_seconds(got.headers)
            # longer than the manifest allows: this query ends now, and nothing waits for it
            too_long = retry_after is not None and retry_after > settings.retry_after_max
            if retry_after is not None and not too_long and got.status in RETRYABLE_STATUSES:
                paused_until[item.capability] = max(
                    paused_until.get(item.capability, 0.0), time.monotonic() + retry_after
                )
            reading = read_attempt(
                adapter, settings.prices_usd, item.capability, got.status, got.headers, got.body, got.error
            )
            stats.unpriced_units.update(reading.unpriced)
            final = (not reading.retry) or is_last or too_long
            ledger.add(item.query_id, item.capability, reading)  # spent once answered, before the archive write
            await archive.save(
                {
                    **base_row,
                    "started_at": at,
                    "latency_ms": latency,
                    "request_json": request_json,
                    "http_status": got.status,
                    "response_headers_json": json.dumps(got.headers, sort_keys=True),
                    "body": got.body,
                    "body_sha256": hashlib.sha256(got.body.encode()).hexdigest() if got.body is not None else None,
                    "transport_error": got.error,
                    "final": final,
                }
            )
            if final:
                key = str(got.status) if got.error is None else (got.error or "error").split(":")[0]
                stats.final_by_status[key] = stats.final_by_status.get(key, 0) + 1
                row_done(
                    classify_response(
                        adapter, item.capability, got.status, got.headers, got.body, got.error, parsed=reading.parsed
                    ).response_class
                )
            else:
                stats.retries += 1
            return _Outcome(not final, retry_after, got.status)

        async def run(item: FetchItem) -> None:
            before = previous_attempts.get((item.query_id, item.capability), 0)
            attempt_no = [before, before]  # [last attempt number, attempts before this run]
            retrying = AsyncRetrying(
                stop=stop_after_attempt(settings.max_attempts),
                wait=wait_strategy,
                retry=retry_if_result(lambda o: o.retry),
                reraise=True,
                sleep=sleep,
                retry_error_callback=_last_outcome,
            )
            await retrying(one_attempt, item, attempt_no)
            stats.sent += 1

        try:
            await asyncio.gather(*(run(i) for i in todo))
        finally:
            pacer.close()
    priced = ledger.per_attempt()  # priced again at the end: an unreadable body is priced like its peers
    stats.spend_usd = float(sum(priced[attempts_before:]))
    stats.archive_spend_usd = float(sum(priced))
    stats.wall_seconds = time.monotonic() - started
    stats.cpu_seconds = time.process_time() - cpu_started
    progress.retries = stats.retries
    log(
        progress.end_line(stats.sent, stats.attempts, stats.spend_usd, stats.archive_spend_usd)
        + (
            f"; stopped: billed in {', '.join(sorted(stats.unpriced_units))}, which the manifest does not price "
            f"({stats.unpriced_stops} calls not sent)"
            if stats.unpriced_units
            else ""
        )
    )
    return stats
