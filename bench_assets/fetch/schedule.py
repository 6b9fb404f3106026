"""Which configuration's partition to start next when a few workers fetch many configurations.

A configuration's fetch is paced by its provider's rate limits, and configurations of one provider
take turns under the provider's lease (they share its account). A worker given a configuration
whose provider is busy would hold its slot while it waits; so the next one started is always of
an idle provider: of the provider with the most paced seconds still to fetch (a long chain of
modes starts early), its longest configuration first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from bench_assets.adapters.base import Capability
from bench_assets.manifest import VendorSpec


def paced_seconds(spec: VendorSpec, calls: Mapping[Capability, int]) -> float:
    """The least time `calls` (per capability) take at the configuration's pinned pace: each
    endpoint at its own limit, all of them together at the account's."""
    served = {cap: n for cap, n in calls.items() if cap in spec.capabilities}
    by_endpoint = sum(n / spec.rate_limit(cap) for cap, n in served.items())
    return max(by_endpoint, sum(served.values()) / spec.rate_limit_per_second)


def next_configuration(
    pending: Collection[str],
    busy_providers: Collection[str],
    provider_of: Mapping[str, str],
    seconds: Mapping[str, float],
) -> str | None:
    """The pending configuration to start now, or None when every pending one's provider is busy
    (start it once a sibling finishes). Ties go to the configuration id, so the order is stable."""
    left: dict[str, float] = {}
    for name in pending:
        left[provider_of[name]] = left.get(provider_of[name], 0.0) + seconds.get(name, 0.0)
    startable = [name for name in pending if provider_of[name] not in busy_providers]
    if not startable:
        return None
    return min(startable, key=lambda n: (-left[provider_of[n]], -seconds.get(n, 0.0), n))
