"""Fetching the registries of golden truth, with every attempt archived as evidence.

Each registry's requests are sent in order (EDGAR's company lists lead to each company's JSON),
paced at the registry's documented rate, with a declared User-Agent (EDGAR's fair-access rules),
and retried on 408/429/5xx or a transport error (exponential backoff, a `Retry-After` honoured up
to `RETRY_AFTER_MAX`). Whatever happens, each request ends with one attempt marked `final`, whose
`outcome` says what the registry gave: `ok`, `http_<status>`, `rate_limited`, `transport_error`
or `format_changed` (the body is not in the registry's published format). A request whose final
attempt is already archived `ok` is not sent again: the rows are re-derived from the archive, so a
re-materialization draws the same golden set and a fixed registry is asked again only for what
failed. Nothing here raises for a registry's failure: it is evidence, and its rows are not drawn.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import pandas as pd
from tenacity import RetryCallState, Retrying, retry_if_result, stop_after_attempt

from bench_assets.manifest import Manifest, RegistrySpec
from bench_assets.registries import get_registry
from bench_assets.registries import sec_edgar as edgar
from bench_assets.registries.base import ParsedResponse, RegistryFormatError, RegistryRecord, RegistryRequest
from bench_assets.storage.tables import TABLES

MAX_ATTEMPTS = 3
RETRY_AFTER_MAX = 30.0
RETRYABLE = {408, 425, 429, 500, 502, 503, 504}
MAX_REQUESTS_PER_REGISTRY = 200  # a follow-up chain that runs away is cut here


@dataclass
class RegistryOutcome:
    """What one registry gave this snapshot: its records, the records it rejected, and how its requests ended."""

    registry: str
    stratum: str
    records: list[RegistryRecord] = field(default_factory=list)
    rejected: list[tuple[str | None, str]] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)  # final outcome -> requests
    retrieved_at: dict[str, datetime] = field(default_factory=dict)  # record id -> when its response came
    request_url: dict[str, str] = field(default_factory=dict)  # record id -> the request it came in

    @property
    def failed_requests(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome != "ok")


def user_agent(contact: str | None) -> str:
    return f"bench-golden-truth/1 ({contact})" if contact else "bench-golden-truth/1"


def is_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError, IndexError):
        return None


def _parser(name: str, spec: RegistrySpec):
    return edgar.parse_with(dict(spec.options)) if name == edgar.NAME else get_registry(name).parse


class _Pacer:
    """At most `rate` requests per second to one registry (its documented pace): requests are
    spaced evenly, which never exceeds a limit stated per second."""

    def __init__(self, rate: float):
        self.interval, self.last = 1.0 / rate, 0.0

    def wait(self) -> None:
        delay = self.last + self.interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self.last = time.monotonic()


def _last_attempt(state: RetryCallState) -> Any:
    """What `_send` returns when the attempts run out: the last attempt's result."""
    assert state.outcome is not None  # tenacity calls this only after an attempt has run
    return state.outcome.result()


def _send(
    client: httpx.Client, request: RegistryRequest, target: str, pacer: _Pacer, rows: list[dict[str, Any]], base: dict
) -> tuple[int | None, str | None, str | None]:
    """Send with retries; append one row per attempt. Returns (status, body, transport error) of the last."""

    def attempt_once() -> tuple[int | None, str | None, str | None, float | None]:
        pacer.wait()
        started, t0 = datetime.now(UTC), time.perf_counter()
        status = body = error = None
        headers: dict[str, str] = {}
        wait = None
        try:
            response = client.get(target, params=request.params or None, headers={"Accept": request.accept})
            status, body, headers = response.status_code, response.text, dict(response.headers)
            wait = _retry_after(response.headers)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {str(exc)[:200]}"
        rows.append(
            {
                **base,
                "attempt": len([r for r in rows if r["request_key"] == request.key]) + 1,
                "started_at": started,
                "latency_ms": (time.perf_counter() - t0) * 1000.0,
                "http_status": status,
                "response_headers_json": json.dumps(headers, sort_keys=True),
                "body": body,
                "body_sha256": hashlib.sha256(body.encode()).hexdigest() if body is not None else None,
                "transport_error": error,
                "final": False,
            }
        )
        return status, body, error, wait

    def retry_wait(state) -> float:
        _status, _, _, wait = state.outcome.result()
        backoff = min(8.0, 0.5 * 2 ** (state.attempt_number - 1))
        return max(backoff, min(wait or 0.0, RETRY_AFTER_MAX))

    def should_retry(result) -> bool:
        status, _, error, wait = result
        too_long = wait is not None and wait > RETRY_AFTER_MAX
        return not too_long and (error is not None or status in RETRYABLE)

    status, body, error, _ = Retrying(
        stop=stop_after_attempt(MAX_ATTEMPTS),
        wait=retry_wait,
        retry=retry_if_result(should_retry),
        retry_error_callback=_last_attempt,
    )(attempt_once)
    return status, body, error


def fetch_registry(
    name: str,
    spec: RegistrySpec,
    snapshot_id: str,
    rewrite: Callable[[str], str],
    contact: str | None,
    archived: pd.DataFrame,
) -> tuple[RegistryOutcome, list[dict[str, Any]]]:
    """Fetch one registry (or re-read its archived final responses). Returns what it gave and the
    `registry_responses` rows of this fetch (archived rows kept for requests not sent again)."""
    registry = get_registry(name)
    parse = _parser(name, spec)
    options = dict(spec.options)
    outcome = RegistryOutcome(name, spec.stratum)
    pacer = _Pacer(min(spec.rate_limit_per_second or registry.max_rate_per_second, registry.max_rate_per_second))
    rows: list[dict[str, Any]] = []
    queue = list(registry.requests(options))
    sent = 0
    with httpx.Client(timeout=60.0, follow_redirects=True, headers={"User-Agent": user_agent(contact)}) as client:
        while queue and sent < MAX_REQUESTS_PER_REGISTRY:
            request = queue.pop(0)
            sent += 1
            base = {
                "snapshot_id": snapshot_id,
                "registry": name,
                "request_key": request.key,
                "request_json": json.dumps(
                    {"url": request.url, "params": request.params, "user_agent": user_agent(contact)}, sort_keys=True
                ),
            }
            kept = archived[(archived["request_key"] == request.key)] if len(archived) else archived
            final_ok = kept[(kept["final"]) & (kept["outcome"] == "ok")] if len(kept) else kept
            status: int | None
            if len(final_ok):  # answered before: re-derive from the archive, send nothing
                rows.extend(kept.to_dict("records"))
                status, body, error = 200, final_ok.iloc[-1]["body"], None
                at = final_ok.iloc[-1]["started_at"]
            else:
                target = request.url if is_loopback(request.url) else rewrite(request.url)
                status, body, error = _send(client, request, target, pacer, rows, base)
                at = rows[-1]["started_at"]
            parsed, result = ParsedResponse(), "ok"
            if error is not None:
                result = "transport_error"
            elif status == 429:
                result = "rate_limited"
            elif status != 200:
                result = f"http_{status}"
            else:
                try:
                    parsed = parse(request, body or "")
                except RegistryFormatError as exc:
                    result, parsed = "format_changed", ParsedResponse(rejected=[(None, f"format changed: {exc}")])
            last = rows[-1]
            if not len(final_ok):
                last.update(
                    final=True,
                    outcome=result,
                    records=len(parsed.records),
                    rejected_json=json.dumps(parsed.rejected),
                )
            outcome.outcomes[result] = outcome.outcomes.get(result, 0) + 1
            outcome.rejected.extend(parsed.rejected)
            for record in parsed.records:
                outcome.records.append(record)
                outcome.retrieved_at[record.record_id] = pd.Timestamp(at).to_pydatetime()
                outcome.request_url[record.record_id] = request.url
            queue.extend(parsed.follow_up)
    return outcome, rows


def fetch_registries(
    manifest: Manifest, rewrite: Callable[[str], str], archived: pd.DataFrame
) -> tuple[list[RegistryOutcome], pd.DataFrame]:
    """Every registry of the manifest, in manifest order: what each gave, and the archive frame."""
    outcomes, rows = [], []
    for name, spec in manifest.golden.registries.items():
        mine = archived[archived["registry"] == name] if len(archived) else archived
        outcome, fetched = fetch_registry(name, spec, manifest.snapshot_id, rewrite, manifest.golden.contact, mine)
        outcomes.append(outcome)
        rows.extend(fetched)
    frame = pd.DataFrame(rows, columns=TABLES["registry_responses"].column_names)
    return outcomes, frame
