"""Expected billed spend of a snapshot, per vendor, before anything is called.

For each vendor: the calls the snapshot will make (one per golden row the vendor can serve,
plus decoys), the units each call is expected to bill (the adapter's documented rule, see
`Adapter.expected_units`), and those units priced with the manifest's pinned price table. It
assumes every call succeeds once; retries of failures the vendor does not bill cost nothing.
For a vendor billed per request, credit or result the figure is the bill of a full result page;
a vendor that bills usage unknown before the call (Jina's tokens) carries a caveat saying what
its figure assumes (`Adapter.estimate_caveat`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Capability, VendorTask
from bench_assets.golden.rows import GoldenRow, capability_of
from bench_assets.manifest import Manifest


@dataclass
class VendorEstimate:
    vendor: str
    plan: str
    calls: dict[Capability, int] = field(default_factory=dict)
    units: dict[str, float] = field(default_factory=dict)
    usd: float = 0.0
    ceiling_usd: float | None = None
    unpriced_units: list[str] = field(default_factory=list)
    caveat: str | None = None  # what the figure assumes, when the vendor bills usage unknown in advance
    provider: str = ""
    # The expected spend of every configuration of the provider together: the spend ceiling is the provider's.
    provider_usd: float | None = None

    @property
    def within_ceiling(self) -> bool:
        spend = self.usd if self.provider_usd is None else self.provider_usd
        return self.ceiling_usd is None or spend <= self.ceiling_usd

    def as_json(self) -> dict[str, Any]:
        """The estimate as `bench estimate --json` prints it."""
        return {**asdict(self), "within_ceiling": self.within_ceiling}


def estimate_spend(
    manifest: Manifest, rows: list[GoldenRow], extra_calls: dict[Capability, int] | None = None
) -> list[VendorEstimate]:
    """Expected spend per configured vendor. `extra_calls` adds calls per capability (decoys)."""
    out = []
    for vendor, spec in sorted(manifest.vendors.items()):
        adapter = get_adapter(spec.adapter)
        est = VendorEstimate(
            vendor,
            spec.plan,
            ceiling_usd=spec.spend_ceiling_usd,
            caveat=adapter.estimate_caveat(dict(spec.request_options), spec.capabilities),
            provider=spec.provider,
        )
        calls: dict[Capability, int] = {}
        for row in rows:
            cap = capability_of(row)
            if cap in spec.capabilities:
                calls[cap] = calls.get(cap, 0) + 1
        for cap, n in (extra_calls or {}).items():
            if cap in spec.capabilities:
                calls[cap] = calls.get(cap, 0) + n
        for cap, n in calls.items():
            per_call = adapter.expected_units(
                VendorTask(cap, "", manifest.results_per_query), dict(spec.request_options)
            )
            for unit, count in per_call.items():
                est.units[unit] = est.units.get(unit, 0.0) + count * n
        est.calls = calls
        est.unpriced_units = sorted(u for u in est.units if u not in spec.prices_usd)
        est.usd = sum(spec.prices_usd.get(u, 0.0) * c for u, c in est.units.items())
        out.append(est)
    by_provider: dict[str, float] = {}
    for est in out:
        by_provider[est.provider] = by_provider.get(est.provider, 0.0) + est.usd
    for est in out:
        est.provider_usd = by_provider[est.provider]
    return out


def format_estimates(estimates: list[VendorEstimate]) -> str:
    width = max([11, *(len(e.vendor) for e in estimates)])  # configuration ids (`tavily.advanced`) run long
    lines = [f"{'vendor':<{width}} {'calls':>22} {'expected USD':>13} {'ceiling':>9}  plan"]
    for e in estimates:
        calls = " + ".join(f"{n} {cap}" for cap, n in sorted(e.calls.items()))
        ceiling = "—" if e.ceiling_usd is None else f"${e.ceiling_usd:.2f}"
        shared = (
            f" (with the other configurations of {e.provider}: ${e.provider_usd:.4f})"
            if e.provider_usd != e.usd
            else ""
        )
        flag = "" if e.within_ceiling else f"  EXCEEDS CEILING{shared}: the fetch will stop there"
        unpriced = f"  (no price for {', '.join(e.unpriced_units)})" if e.unpriced_units else ""
        lines.append(
            f"{e.vendor:<{width}} {calls:>22} {'$' + format(e.usd, '.4f'):>13} {ceiling:>9}  {e.plan}{flag}{unpriced}"
        )
    lines.append(f"{'total':<{width}} {'':>22} {'$' + format(sum(e.usd for e in estimates), '.4f'):>13}")
    lines += [f"{e.vendor}: {e.caveat}" for e in estimates if e.caveat]
    return "\n".join(lines)
