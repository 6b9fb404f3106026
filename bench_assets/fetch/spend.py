"""What a vendor billed, attempt by attempt, read from the archived responses.

A vendor bills a 2xx it sent, readable or not; it bills no error status, no request that never
got a response, and no challenge page (that comes from a CDN in front of it). Spend counts every
attempt the vendor bills, retries included (`SpendLedger`, `archived_spend`); the same reading
decides whether an attempt is worth retrying (`read_attempt`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import pandas as pd

from bench_assets.adapters.base import Adapter, Capability, MalformedResponse, ParsedResponse, VendorTask, loads_json
from bench_assets.fetch.classify import RETRYABLE_STATUSES, looks_like_challenge


def priced_usd(units: dict[str, float] | None, prices: dict[str, float]) -> float:
    """USD of the billed units at the pinned prices (a unit without a price costs nothing here:
    `unpriced_units` finds those, and the fetch stops at the first rather than bill it as nothing)."""
    return sum(prices.get(unit, 0.0) * count for unit, count in (units or {}).items())


def unpriced_units(units: dict[str, float] | None, prices: dict[str, float]) -> tuple[str, ...]:
    """The units a response was billed in (a non-zero count) that the price table does not price."""
    return tuple(sorted(unit for unit, count in (units or {}).items() if count and unit not in prices))


def _nominal_usd(adapter: Adapter, prices: dict[str, float], capability: Capability) -> float:
    """What the plan charges for a call whose body could not be read, when nothing better is known:
    the adapter's documented expectation for a full result page."""
    try:
        return priced_usd(adapter.expected_units(VendorTask(capability, ""), {}), prices)
    except (KeyError, TypeError, AttributeError, ValueError):
        return 0.0


def _out_of_credit(
    adapter: Adapter, capability: Capability, status: int, headers: dict[str, str], body: str | None
) -> bool:
    """The vendor's own code says the account has no credit left (the adapter's class `quota`)."""
    try:
        return adapter.parse(VendorTask(capability, ""), status, headers, body or "").error_class == "quota"
    except MalformedResponse:
        return False


@dataclass(frozen=True)
class AttemptReading:
    """What one archived attempt means for retrying and for spend (read once, parsed once)."""

    retry: bool  # worth another attempt: a transient failure
    billed_usd: float | None  # None: billed, at a USD not known (a body we could not read, an unpriced unit)
    readable: bool  # a 2xx vendor response that parsed
    units: dict[str, float] | None = None  # the units a readable response billed, as the adapter read them
    # Units it was billed in that the manifest does not price: its USD is then not known (`billed_usd`
    # None, charged like an unreadable body), and the fetch sends nothing more (`fetch.engine`).
    unpriced: tuple[str, ...] = ()
    # The adapter's reading of a readable response, kept so that classifying the same attempt
    # (`fetch.classify.classify_response(parsed=...)`) does not parse its body again.
    parsed: ParsedResponse | None = field(default=None, compare=False, repr=False)


def read_attempt(
    adapter: Adapter,
    prices: dict[str, float],
    capability: Capability,
    status: int | None,
    headers: dict[str, str],
    body: str | None,
    transport_error: str | None,
) -> AttemptReading:
    """Read one attempt. A vendor bills a 2xx it sent, readable or not (truncated, malformed, cut
    off by the network); it bills no error status, no request that never got a response, and no
    challenge page (that comes from a CDN in front of it). Retried: 408/429/5xx, no response, a
    challenge page, a 2xx body we could not read."""
    if status is None:
        return AttemptReading(True, 0.0, False)
    if not (200 <= status < 300):
        # An account out of credit is final even where its status is retryable (SerpApi's and
        # Linkup's 429): no retry helps until someone pays.
        return AttemptReading(
            status in RETRYABLE_STATUSES and not _out_of_credit(adapter, capability, status, headers, body), 0.0, False
        )
    if looks_like_challenge(body):
        return AttemptReading(True, 0.0, False)
    if transport_error:
        return AttemptReading(True, None, False)
    try:
        parsed = adapter.parse(VendorTask(capability, ""), status, headers, body or "")
    except MalformedResponse:
        return AttemptReading(True, None, False)
    unpriced = unpriced_units(parsed.billed_units, prices)
    billed = None if unpriced else priced_usd(parsed.billed_units, prices)
    return AttemptReading(False, billed, True, parsed.billed_units, unpriced=unpriced, parsed=parsed)


def read_billed_usd(
    adapter: Adapter,
    prices: dict[str, float],
    capability: Capability,
    status: int | None,
    headers: dict[str, str],
    body: str | None,
    transport_error: str | None,
) -> float | None:
    """USD the vendor billed for one attempt: 0.0 when it bills nothing, None when it billed a
    response whose body we could not read (see `read_attempt`)."""
    return read_attempt(adapter, prices, capability, status, headers, body, transport_error).billed_usd


class SpendLedger:
    """Spend of a partition, attempt by attempt, every attempt the vendor bills (retries included).

    A billed response whose USD is not known (its body could not be read, or it was billed in a unit
    the manifest does not price) is charged like the same query's readable response when one exists (the vendor answers the same request the same way), else like the
    median readable response of the same capability in the partition, else at the adapter's
    documented price for a full result page.
    """

    def __init__(self, adapter: Adapter, prices: dict[str, float]):
        self.adapter = adapter
        self.prices = prices
        self.entries: list[tuple[str, Capability, float | None]] = []
        self.readable_by_query: dict[tuple[str, Capability], float] = {}
        self.readable_by_capability: dict[Capability, list[float]] = {}
        self.running_usd = 0.0  # estimates as known when each attempt was added (for the spend ceiling)

    def add(self, query_id: str, capability: Capability, reading: AttemptReading) -> None:
        self.entries.append((query_id, capability, reading.billed_usd))
        if reading.readable and reading.billed_usd is not None:
            self.readable_by_query.setdefault((query_id, capability), reading.billed_usd)
            self.readable_by_capability.setdefault(capability, []).append(reading.billed_usd)
        self.running_usd += self._priced(query_id, capability, reading.billed_usd)

    def _priced(self, query_id: str, capability: Capability, billed: float | None) -> float:
        if billed is not None:
            return billed
        same_query = self.readable_by_query.get((query_id, capability))
        if same_query is not None:
            return same_query
        same_capability = self.readable_by_capability.get(capability)
        if same_capability:
            return float(statistics.median(same_capability))
        return _nominal_usd(self.adapter, self.prices, capability)

    def per_attempt(self) -> list[float]:
        return [self._priced(q, c, b) for q, c, b in self.entries]

    def total(self) -> float:
        return float(sum(self.per_attempt()))


def attempt_readings(adapter: Adapter, prices: dict[str, float], raw: pd.DataFrame) -> list[AttemptReading]:
    """`read_attempt` of every archived attempt, in the order of `raw`."""
    out: list[AttemptReading] = []
    if raw.empty:  # (a frame without rows may come without columns too)
        return out
    columns = ("capability", "http_status", "response_headers_json", "body", "transport_error")
    for capability, http_status, headers_json, body, transport_error in zip(*(raw[c] for c in columns)):
        out.append(
            read_attempt(
                adapter,
                prices,
                capability,
                None if pd.isna(http_status) else int(http_status),
                loads_json(headers_json) if isinstance(headers_json, str) else {},
                body if isinstance(body, str) else None,
                transport_error if isinstance(transport_error, str) else None,
            )
        )
    return out


def ledger_of(
    adapter: Adapter, prices: dict[str, float], raw: pd.DataFrame, readings: list[AttemptReading] | None = None
) -> SpendLedger:
    ledger = SpendLedger(adapter, prices)
    if raw.empty:
        return ledger
    for query_id, capability, reading in zip(
        raw["query_id"], raw["capability"], readings or attempt_readings(adapter, prices, raw)
    ):
        ledger.add(query_id, capability, reading)
    return ledger


def archived_spend(
    adapter: Adapter, prices: dict[str, float], raw: pd.DataFrame, readings: list[AttemptReading] | None = None
) -> pd.Series:
    """USD billed per archived attempt (aligned with `raw`'s index), priced as `SpendLedger` says;
    `readings`: `attempt_readings` of `raw` when the caller has them."""
    return pd.Series(ledger_of(adapter, prices, raw, readings).per_attempt(), index=raw.index, dtype="float64")
