"""What one vendor partition sends, and how: its items in a keyed order (the holdout hidden among
decoys), and the fetch settings its manifest entry pins."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from pathlib import Path

from bench_assets.fetch.engine import FetchItem, FetchSettings
from bench_assets.golden.rows import GoldenRow, capability_of
from bench_assets.manifest import VendorSpec


def _keyed(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()


def interleaved_items(
    rows: list[GoldenRow],
    split: dict[str, str],
    decoys: list[GoldenRow],
    capabilities: Iterable[str],
    num_results: int,
    key: bytes,
    snapshot_id: str,
    vendor: str,
) -> list[FetchItem]:
    """What one vendor is sent: golden rows (role public or holdout) and decoys (role decoy), the
    same FetchItem for each, in one order shuffled by HMAC(secret, snapshot, vendor, query). The
    order is unpredictable without the secret even to someone who knows every query id."""
    capabilities = set(capabilities)
    items = [
        FetchItem(r.id, split.get(r.id, "public"), capability_of(r), r.request_text, num_results)
        for r in rows
        if capability_of(r) in capabilities
    ]
    items += [
        FetchItem(d.id, "decoy", capability_of(d), d.request_text, num_results)
        for d in decoys
        if capability_of(d) in capabilities
    ]
    return sorted(items, key=lambda i: _keyed(key, "order", snapshot_id, vendor, i.query_id, i.capability))


def fetch_settings(
    spec: VendorSpec,
    url: Callable[[str], str],
    api_key: str,
    pacing_dir: Path | str | None,
    capabilities: Iterable[str] | None = None,
    spent_before: float = 0.0,
) -> FetchSettings:
    """The fetch engine's settings for a configuration's manifest entry: its endpoints (through `url`,
    the real host or the simulator), key, its mode's request options, limits, retries and prices. The
    account-wide limit is paced under the provider's name, so every configuration of one provider
    (`exa`, `exa.deep`) shares it. `capabilities` narrows
    the endpoints (a sentinel probe only searches); `spent_before` is what earlier runs of the same
    ledger spent, taken off the spend ceiling."""
    caps = [c for c in spec.endpoints if capabilities is None or c in set(capabilities)]
    ceiling = None if spec.spend_ceiling_usd is None else max(0.0, spec.spend_ceiling_usd - spent_before)
    return FetchSettings(
        endpoints={cap: url(spec.endpoints[cap]) for cap in caps},
        api_key=api_key,
        options=dict(spec.request_options),
        rate_limits_per_second={cap: spec.rate_limit(cap) for cap in caps},
        concurrency=spec.concurrency,
        timeout_seconds=spec.timeout_seconds,
        max_attempts=spec.max_attempts,
        prices_usd=spec.prices_usd,
        spend_ceiling_usd=ceiling,
        backoff_initial=spec.backoff_initial_seconds,
        backoff_max=spec.backoff_max_seconds,
        retry_after_max=spec.retry_after_max_seconds,
        vendor_rate_per_second=spec.rate_limit_per_second,
        pacing_dir=pacing_dir,
        pacing_key=spec.provider,
    )
