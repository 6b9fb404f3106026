"""How each simulated vendor behaves: ranking quality, index coverage, latency, extraction, price.

These are the knobs that make simulated vendors score differently. They describe the stand-in
world, not the benchmark: the benchmark's own pins (plans, prices, limits) are in the manifest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class VendorProfile:
    quality: float  # 1.0 ranks by BM25 alone; lower adds more deterministic per-query noise
    coverage: float  # share of planted pages in this vendor's index
    latency_ms: float  # mean added latency per request
    strips_boilerplate: bool = True  # extraction drops nav, cookie banner, ads and footer
    keeps_tables: bool = True  # extraction keeps table cells
    plain_numbers: bool = False  # extraction writes 1,234.5 as 1234.5 (still equal as numbers)
    max_chars: int = 6000
    url_style: str = "canonical"  # canonical | utm | www | slash | http: variants normalization must undo
    usd_per_request: dict[str, float] = field(default_factory=lambda: {"search": 0.005, "extract": 0.001})
    # Typical hours from a sentinel page's publish time until this vendor's index returns it (each
    # page draws 0.5x-1.5x of it); None: never within the 30-day window. See simulator/sentinels.py.
    ttr_lag_hours: float | None = None


PROFILES: dict[str, VendorProfile] = {
    "exa": VendorProfile(
        0.86, 0.95, 30, url_style="utm", usd_per_request={"search": 0.007, "extract": 0.001}, ttr_lag_hours=24
    ),
    "brave": VendorProfile(0.74, 0.90, 15, url_style="www", usd_per_request={"search": 0.005}, ttr_lag_hours=18),
    "tavily": VendorProfile(
        0.80, 0.92, 25, keeps_tables=False, usd_per_request={"search": 0.008, "extract": 0.0016}, ttr_lag_hours=60
    ),
    "serper": VendorProfile(
        0.90, 0.97, 12, url_style="slash", usd_per_request={"search": 0.001, "extract": 0.002}, ttr_lag_hours=6
    ),
    "serpapi": VendorProfile(0.90, 0.97, 40, usd_per_request={"search": 0.015}, ttr_lag_hours=8),
    "jina": VendorProfile(
        0.66,
        0.85,
        35,
        strips_boilerplate=False,
        usd_per_request={"search": 0.0005, "extract": 0.0001},
        ttr_lag_hours=None,
    ),
    "firecrawl": VendorProfile(
        0.70, 0.88, 45, plain_numbers=True, usd_per_request={"search": 0.0016, "extract": 0.0008}, ttr_lag_hours=14
    ),
    "perplexity": VendorProfile(0.83, 0.93, 20, usd_per_request={"search": 0.005}, ttr_lag_hours=36),
    "linkup": VendorProfile(
        0.78, 0.90, 30, url_style="http", usd_per_request={"search": 0.005, "extract": 0.001}, ttr_lag_hours=160
    ),
    "parallel": VendorProfile(0.81, 0.91, 30, usd_per_request={"search": 0.005, "extract": 0.001}, ttr_lag_hours=240),
    "youcom": VendorProfile(
        0.76, 0.90, 20, keeps_tables=False, usd_per_request={"search": 0.005, "extract": 0.001}, ttr_lag_hours=100
    ),
    "kagi": VendorProfile(0.87, 0.89, 25, url_style="www", usd_per_request={"search": 0.012}, ttr_lag_hours=12),
    # Keenable: its own index (no count parameter, ten results); price as independent boards report it.
    "keenable": VendorProfile(0.84, 0.86, 20, usd_per_request={"search": 0.001, "extract": 0.001}, ttr_lag_hours=48),
    # Valyu: full page text with every result; billed per result (web $0.0015), see vendors/valyu.py.
    "valyu": VendorProfile(0.82, 0.90, 60, usd_per_request={"search": 0.015}, ttr_lag_hours=72),
}


# Each documented mode of a vendor behaves as its own service: a deeper mode searches longer, finds
# more and ranks better, and costs what the vendor's pricing says (data/pricing/<vendor>.md). The
# mode named by the request's own parameter (Exa's `type`, Tavily's `search_depth`, Linkup's
# `depth`, Parallel's `mode`, Perplexity's `search_type`, You.com's `extraction.extraction_mode`) or,
# for Brave, by the endpoint called; a mode not listed here behaves as the vendor's profile. Coverage and ranking noise are
# drawn per vendor, so a deeper mode's index holds every page the shallower one does.
MODE_PROFILES: dict[str, dict[str, VendorProfile]] = {
    "exa": {
        # lite: Exa's cache only, never a live fetch ($4 per 1k, exa.ai/changelog)
        "lite": replace(PROFILES["exa"], quality=0.80, coverage=0.90, latency_ms=15, usd_per_request={"search": 0.004}),
        # deep: multi-step research ($12 per 1k, exa.ai/docs/changelog/pricing-update)
        "deep": replace(
            PROFILES["exa"], quality=0.95, coverage=0.98, latency_ms=120, usd_per_request={"search": 0.012}
        ),
    },
    "tavily": {
        # advanced: 2 credits ($0.016 at pay-as-you-go), "more relevant content snippets"
        "advanced": replace(
            PROFILES["tavily"], quality=0.90, coverage=0.95, latency_ms=60, usd_per_request={"search": 0.016}
        ),
        # fast (beta): "optimized for low latency while maintaining high relevance", 1 credit like
        # basic (docs.tavily.com/changelog, documentation/api-credits): quicker, a little less precise
        "fast": replace(PROFILES["tavily"], quality=0.76, latency_ms=12),
    },
    "parallel": {
        # The profile is advanced, Parallel's default ("more advanced retrieval and compression");
        # basic "offers lower latency" at the same $5 per 1k (docs.parallel.ai/search/modes)
        "basic": replace(PROFILES["parallel"], quality=0.72, coverage=0.91, latency_ms=15),
    },
    "brave": {
        # llm_context: the same index and price ($5 per 1k, Search plan) as Web Search; one search
        # per request whose pages' content is extracted and kept by relevance ("Relevance
        # Filtering", brave-search-skills llm-context): a little slower, better ranked
        "llm_context": replace(PROFILES["brave"], quality=0.84, latency_ms=25),
    },
    "linkup": {
        # deep: "continues to search iteratively", $0.05 a searchResults call
        "deep": replace(
            PROFILES["linkup"], quality=0.93, coverage=0.97, latency_ms=150, usd_per_request={"search": 0.05}
        ),
        # fast: "one-shot retrieval in about a second", no agentic planning; flash: "lowest latency",
        # no query reinterpretation; both $0.005 a searchResults call (docs.linkup.so changelog/flash-depth)
        "fast": replace(PROFILES["linkup"], quality=0.74, latency_ms=20),
        "flash": replace(PROFILES["linkup"], quality=0.68, coverage=0.86, latency_ms=10),
    },
    "perplexity": {
        # fast: "lower-latency, lower-cost web results", $1 per 1k; web, the default, is the one the
        # docs name for "rare, difficult, or ambiguous questions" (docs.perplexity.ai/docs/search/fast-search)
        "fast": replace(
            PROFILES["perplexity"], quality=0.76, coverage=0.89, latency_ms=10, usd_per_request={"search": 0.001}
        ),
    },
    "youcom": {
        # full_page with extraction_source fetch: each result's page crawled live, "the freshest content
        # at higher latency", $1 per 1k pages on top of the $5 per 1k calls. You.com says nothing of a
        # better ranking, so the ranking and the index are the default's: the page text is what it adds.
        "full_page": replace(PROFILES["youcom"], latency_ms=90),
    },
}


def mode_profile(
    vendor: str,
    mode: str | None,
    profiles: dict[str, VendorProfile] | None = None,
    modes: dict[str, dict[str, VendorProfile]] | None = None,
) -> VendorProfile:
    """How `vendor` behaves in `mode` (its own profile for a mode without one)."""
    base = (profiles or PROFILES)[vendor]
    return (MODE_PROFILES if modes is None else modes).get(vendor, {}).get(mode or "", base)


# Vendors change a little between quarters, so that the demo's trend across quarters shows
# something. Each vendor moves in a direction of its own, fixed by its name (a hash, not chance):
# per quarter after the shipped one its ranking quality moves by DRIFT_QUALITY and its index
# coverage by DRIFT_COVERAGE, both up or both down, kept within DRIFT_BOUNDS.
DRIFT_QUALITY = 0.04
DRIFT_COVERAGE = 0.02
DRIFT_BOUNDS = (0.5, 0.99)


def drift_direction(vendor: str) -> int:
    """+1 (the vendor improves every quarter) or -1 (it worsens), from its name alone."""
    return 1 if hashlib.sha256(f"drift:{vendor}".encode()).digest()[0] % 2 else -1


def _drifted(vendor: str, profile: VendorProfile, quarters: int) -> VendorProfile:
    low, high = DRIFT_BOUNDS
    step = drift_direction(vendor) * quarters
    return replace(
        profile,
        quality=round(min(high, max(low, profile.quality + step * DRIFT_QUALITY)), 4),
        coverage=round(min(high, max(low, profile.coverage + step * DRIFT_COVERAGE)), 4),
    )


def drifted_profiles(quarters: int, profiles: dict[str, VendorProfile] | None = None) -> dict[str, VendorProfile]:
    """The profiles `quarters` quarters after the shipped one (0: as they are)."""
    return {vendor: _drifted(vendor, p, quarters) for vendor, p in (PROFILES if profiles is None else profiles).items()}


def drifted_mode_profiles(quarters: int) -> dict[str, dict[str, VendorProfile]]:
    """Each vendor's mode profiles `quarters` quarters after the shipped one: a mode drifts with its
    vendor (same direction and step), as one provider's index and ranker serve all its modes, so a
    deeper mode stays above a shallower one while both move (0: as they are)."""
    return {
        vendor: {mode: _drifted(vendor, p, quarters) for mode, p in modes.items()}
        for vendor, modes in MODE_PROFILES.items()
    }
