"""Sending the queries of one vendor partition and archiving every attempt as evidence.

The fetcher records evidence, never a verdict: status, headers, body, latency, time. Every
attempt is written to the partition's own DuckDB file the moment it completes, so a crash loses
at most the call in flight, and a re-run skips every query that already has a final response
(it never pays twice for a response it has). Pacing keeps within the vendor's rate limit and
concurrency; retries are bounded, with exponential backoff and jitter, honouring Retry-After.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import duckdb
import httpx
from aiolimiter import AsyncLimiter
from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt, wait_exponential_jitter

from bench_assets.adapters.base import Adapter, MalformedResponse, VendorTask
from bench_assets.warehouse import TABLES, _connect_with_retry

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
SPEND_CEILING_REACHED = "spend_ceiling_reached"


@dataclass(frozen=True)
class FetchItem:
    """One call to make: a golden row (or decoy) sent to one vendor capability."""

    query_id: str
    role: str  # public | holdout | decoy
    capability: str
    text: str
    num_results: int = 10


@dataclass(frozen=True)
class FetchSettings:
    endpoints: dict[str, str]
    api_key: str
    options: dict[str, Any]
    rate_limits_per_second: dict[str, float]  # per capability
    concurrency: int
    timeout_seconds: float
    max_attempts: int
    prices_usd: dict[str, float]
    spend_ceiling_usd: float | None = None
    backoff_initial: float = 0.5
    backoff_max: float = 30.0


@dataclass
class FetchStats:
    sent: int = 0
    skipped_archived: int = 0
    attempts: int = 0
    retries: int = 0
    final_by_status: dict[str, int] = field(default_factory=dict)
    spend_usd: float = 0.0
    ceiling_stops: int = 0
    wall_seconds: float = 0.0


class PartitionArchive:
    """The raw-response archive of one snapshot x vendor partition: a DuckDB file owned by one process."""

    def __init__(self, path: Path, snapshot_id: str, vendor: str):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.snapshot_id = snapshot_id
        self.vendor = vendor
        self.con = _connect_with_retry(str(path), read_only=False)
        self.con.execute(f"CREATE TABLE IF NOT EXISTS raw_responses ({TABLES['raw_responses'][1]})")

    def close(self) -> None:
        self.con.close()

    def settled(self) -> set[tuple[str, str]]:
        rows = self.con.execute(
            "SELECT query_id, capability FROM raw_responses WHERE snapshot_id = ? AND vendor = ? AND final",
            [self.snapshot_id, self.vendor]).fetchall()
        return {(q, c) for q, c in rows}

    def attempts_so_far(self) -> dict[tuple[str, str], int]:
        rows = self.con.execute(
            "SELECT query_id, capability, max(attempt) FROM raw_responses WHERE snapshot_id = ? AND vendor = ? "
            "GROUP BY 1, 2", [self.snapshot_id, self.vendor]).fetchall()
        return {(q, c): n for q, c, n in rows}

    def append(self, row: dict[str, Any]) -> None:
        cols = list(row)
        self.con.execute(f"INSERT INTO raw_responses ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                         [row[c] for c in cols])

    def spend_so_far(self, price: Callable[[dict[str, Any]], float]) -> float:
        rows = self.con.execute(
            "SELECT query_id, capability, http_status, response_headers_json, body FROM raw_responses "
            "WHERE snapshot_id = ? AND vendor = ? AND http_status BETWEEN 200 AND 299",
            [self.snapshot_id, self.vendor]).fetchall()
        return sum(price({"query_id": r[0], "capability": r[1], "http_status": r[2], "headers": r[3], "body": r[4]})
                   for r in rows)


def spend_of_response(adapter: Adapter, prices: dict[str, float], capability: str, status: int,
                      headers: dict[str, str], body: str) -> float:
    """USD billed for one archived response: the units the adapter reads × the pinned prices."""
    if not (200 <= status < 300):
        return 0.0
    try:
        parsed = adapter.parse(VendorTask(capability, ""), status, headers, body)
    except MalformedResponse:
        return 0.0
    units = parsed.billed_units or {}
    return sum(prices.get(unit, 0.0) * count for unit, count in units.items())


def _retry_after_seconds(headers: httpx.Headers | dict[str, str]) -> float | None:
    value = headers.get("retry-after") if headers else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:  # an HTTP date
            from email.utils import parsedate_to_datetime

            return max(0.0, (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds())
        except (TypeError, ValueError):
            return None


def rate_limiter(per_second: float) -> AsyncLimiter:
    """A leaky bucket that allows `per_second` requests a second on average (bursts of at most one second's worth)."""
    return AsyncLimiter(per_second, 1.0) if per_second >= 1 else AsyncLimiter(1, 1.0 / per_second)


@dataclass
class _Outcome:
    retryable: bool
    retry_after: float | None
    status: int | None


async def fetch_partition(adapter: Adapter, items: list[FetchItem], settings: FetchSettings,
                          archive: PartitionArchive, log: Callable[[str], None] = lambda m: None,
                          transport: httpx.AsyncBaseTransport | None = None) -> FetchStats:
    """Send every item not yet archived with a final response, archiving each attempt."""
    stats = FetchStats()
    started = time.monotonic()
    settled = archive.settled()
    previous_attempts = archive.attempts_so_far()
    todo = [i for i in items if (i.query_id, i.capability) not in settled]
    stats.skipped_archived = len(items) - len(todo)
    spent = archive.spend_so_far(lambda r: spend_of_response(
        adapter, settings.prices_usd, r["capability"], r["http_status"], json.loads(r["headers"] or "{}"), r["body"] or ""))
    limiters = {cap: rate_limiter(rate) for cap, rate in settings.rate_limits_per_second.items()}
    semaphore = asyncio.Semaphore(settings.concurrency)
    spend_lock = asyncio.Lock()
    backoff = wait_exponential_jitter(initial=settings.backoff_initial, max=settings.backoff_max)

    def wait_strategy(retry_state: Any) -> float:
        outcome: _Outcome = retry_state.outcome.result()
        computed = backoff(retry_state)
        return min(max(outcome.retry_after or 0.0, computed) if outcome.retry_after is not None else computed,
                   settings.backoff_max * 2)

    async with httpx.AsyncClient(timeout=settings.timeout_seconds, transport=transport,
                                 limits=httpx.Limits(max_connections=settings.concurrency * 2)) as client:

        async def one_attempt(item: FetchItem, attempt_no: list[int]) -> _Outcome:
            nonlocal spent
            attempt_no[0] += 1
            attempt = attempt_no[0]
            is_last = attempt - attempt_no[1] >= settings.max_attempts
            base_row = {"snapshot_id": archive.snapshot_id, "vendor": archive.vendor, "query_id": item.query_id,
                        "role": item.role, "capability": item.capability, "attempt": attempt,
                        "adapter_version": adapter.version}
            async with spend_lock:
                over = settings.spend_ceiling_usd is not None and spent >= settings.spend_ceiling_usd
            if over:
                stats.ceiling_stops += 1
                archive.append({**base_row, "started_at": datetime.now(timezone.utc), "latency_ms": 0.0,
                                "request_json": None, "http_status": None, "response_headers_json": None,
                                "body": None, "body_sha256": None, "transport_error": SPEND_CEILING_REACHED,
                                "final": True})
                return _Outcome(False, None, None)
            endpoint = settings.endpoints[item.capability]
            request = adapter.build(VendorTask(item.capability, item.text, item.num_results), endpoint,
                                    settings.api_key, settings.options)
            async with semaphore:
                async with limiters[item.capability]:
                    at = datetime.now(timezone.utc)
                    t0 = time.perf_counter()
                    status = None
                    headers: dict[str, str] = {}
                    body = None
                    error = None
                    try:
                        response = await client.request(request.method, request.url, headers=request.headers,
                                                        params=request.params or None,
                                                        json=request.json_body if request.json_body is not None else None)
                        status = response.status_code
                        headers = dict(response.headers)
                        body = response.content.decode("utf-8", "replace")
                    except httpx.TimeoutException as exc:
                        error = f"timeout: {type(exc).__name__}"
                    except httpx.TransportError as exc:
                        error = f"connection_error: {type(exc).__name__}: {str(exc)[:200]}"
                    latency = (time.perf_counter() - t0) * 1000.0
            stats.attempts += 1
            retryable = (status in RETRYABLE_STATUSES) or (status is None)
            final = (not retryable) or is_last
            archive.append({**base_row, "started_at": at, "latency_ms": latency,
                            "request_json": json.dumps(request.redacted(), sort_keys=True),
                            "http_status": status, "response_headers_json": json.dumps(headers, sort_keys=True),
                            "body": body, "body_sha256": hashlib.sha256(body.encode()).hexdigest() if body is not None else None,
                            "transport_error": error, "final": final})
            if status is not None:
                cost = spend_of_response(adapter, settings.prices_usd, item.capability, status, headers, body or "")
                async with spend_lock:
                    spent += cost
            if final:
                key = str(status) if status is not None else (error or "error").split(":")[0]
                stats.final_by_status[key] = stats.final_by_status.get(key, 0) + 1
            else:
                stats.retries += 1
            return _Outcome(retryable and not final, _retry_after_seconds(headers), status)

        async def run(item: FetchItem) -> None:
            before = previous_attempts.get((item.query_id, item.capability), 0)
            attempt_no = [before, before]  # [last attempt number, attempts before this run]
            retrying = AsyncRetrying(stop=stop_after_attempt(settings.max_attempts), wait=wait_strategy,
                                     retry=retry_if_result(lambda o: o.retryable), reraise=True,
                                     retry_error_callback=lambda state: state.outcome.result())
            await retrying(one_attempt, item, attempt_no)
            stats.sent += 1

        await asyncio.gather(*(run(i) for i in todo))
    stats.spend_usd = spent
    stats.wall_seconds = time.monotonic() - started
    log(f"fetched {stats.sent} queries ({stats.attempts} attempts, {stats.retries} retries), "
        f"{stats.skipped_archived} already archived, spend ${spent:.4f}")
    return stats
