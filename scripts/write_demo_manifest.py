"""Regenerate the demo snapshot manifest: each provider's default configuration from its adapter's
MANIFEST_DEFAULTS, each further mode from `DEMO_MODES`.

Run: .venv/bin/python scripts/write_demo_manifest.py
The manifest is committed; this script is how it was written, so the pins stay traceable. It reads
the archived pricing and terms files (data/pricing, data/terms) and pins them; it never writes them.
Adding a configuration to the demo is one entry in `DEMO_MODES` (a mode the adapter documents, its
plan and its prices, cited in data/pricing/<provider>.md), then running this script.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import re
from pathlib import Path
from typing import Any

import yaml

from bench_assets.adapters import available_adapters

SNAPSHOT = "web_search-2026-q3"
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
PRICING_DIR = ROOT / "data" / "pricing"
TERMS_DIR = ROOT / "data" / "terms"
TERMS_ARCHIVED_ON = "2026-11-25"

# Prices the vendors' documentation does not state: the manifest pins them all the same, and says
# so beside the price; why, in the archived pricing file's "is the project's assumption" section.
ASSUMED_PRICES = {
    "firecrawl": "$0.0008 per credit",
    "jina": "$0.05 per million tokens",
}

# The demo's configurations beyond each provider's default mode: `<provider>.<mode>` and what
# differs from the provider's entry (its plan and prices; the rest, account limits, key and spend
# ceiling, are the provider's, as the manifest requires). Each price is cited in
# data/pricing/<provider>.md. A mode is a search parameter: a further mode pins the search endpoint
# alone, so the provider's extract calls (the same request in every mode) are measured once, by its
# default configuration, not repeated per mode (`VendorSpec.capabilities`).
EXA_SEARCH = {"search": "https://api.exa.ai/search"}
LINKUP_SEARCH = {"search": "https://api.linkup.so/v1/search"}
TAVILY_SEARCH = {"search": "https://api.tavily.com/search"}
DEMO_MODES: dict[str, dict[str, Any]] = {
    "exa.lite": {
        "plan": "Pay-as-you-go, search type lite ($4 per 1,000 requests)",
        "endpoints": EXA_SEARCH,
        "prices_usd": {"usd": 1.0, "request.search": 0.004, "result.extra": 0.001},
    },
    "exa.deep": {
        "plan": "Pay-as-you-go, search type deep ($12 per 1,000 requests)",
        "endpoints": EXA_SEARCH,
        "prices_usd": {"usd": 1.0, "request.search": 0.012, "result.extra": 0.001},
    },
    "linkup.fast": {
        "plan": "Pay-as-you-go, depth fast ($0.005 per search)",
        "endpoints": LINKUP_SEARCH,
        "prices_usd": {"request.search": 0.005},
    },
    "linkup.flash": {
        "plan": "Pay-as-you-go, depth flash ($0.005 per search)",
        "endpoints": LINKUP_SEARCH,
        "prices_usd": {"request.search": 0.005},
    },
    "linkup.deep": {
        "plan": "Pay-as-you-go, depth deep ($0.05 per search)",
        "endpoints": LINKUP_SEARCH,
        "prices_usd": {"request.search": 0.05},
    },
    "tavily.advanced": {
        "plan": "Pay-as-you-go ($0.008 per credit), search_depth advanced (2 credits)",
        "endpoints": TAVILY_SEARCH,
        "prices_usd": {"credit": 0.008},
    },
    "tavily.fast": {
        "plan": "Pay-as-you-go ($0.008 per credit), search_depth fast (1 credit)",
        "endpoints": TAVILY_SEARCH,
        "prices_usd": {"credit": 0.008},
    },
    "parallel.basic": {
        "plan": "Pay-as-you-go, search mode basic (Search $5 per 1,000 requests)",
        "endpoints": {"search": "https://api.parallel.ai/v1/search"},
        "prices_usd": {"request.search": 0.005, "result.search_extra": 0.001},
    },
    "brave.llm_context": {
        "plan": "Search plan, LLM Context ($5 per 1,000 requests)",
        "endpoints": {"search": "https://api.search.brave.com/res/v1/llm/context"},
        "prices_usd": {"request.search": 0.005},
    },
    "perplexity.fast": {
        "plan": "Search API, prepaid credits, search_type fast ($1 per 1,000 requests)",
        "endpoints": {"search": "https://api.perplexity.ai/search"},
        "prices_usd": {"request.search": 0.001},
    },
    "youcom.full_page": {
        "plan": "Pay-as-you-go, search with full pages fetched live ($5 per 1,000 calls + $1 per 1,000 pages)",
        "endpoints": {"search": "https://ydc-index.io/v1/search"},
        "prices_usd": {"request.search": 0.005, "page.extract": 0.001},
    },
}


def pinned_pricing(vendor: str, committed: dict) -> dict | None:
    """Pin the archived pricing text `data/pricing/<provider>.md` (written and corrected by hand from
    the vendor's pricing page, sources in brackets): its SHA-256 and the date it was archived. The
    file is never rewritten here: it holds cited corrections no other file has. A pin the committed
    manifest already holds for the same file content is kept as it is (its date with it); a new or
    changed file is pinned with the last date its title line names ("archived 2026-11-22, ...
    corrected 2026-11-25")."""
    path = PRICING_DIR / f"{vendor}.md"
    if not path.exists():
        return None
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    pin = committed.get("pricing_source") or {}
    if pin.get("sha256") == sha256:
        return dict(pin)
    dates = re.findall(r"\d{4}-\d{2}-\d{2}", path.read_text(encoding="utf-8").splitlines()[0])
    if not dates:
        raise SystemExit(f"{path}: its title line names no date it was archived (like 'archived 2026-11-22')")
    return {"file": str(path.relative_to(ROOT)), "sha256": sha256, "archived_on": max(dates)}


def archived_terms(vendor: str) -> dict:
    """What the vendor's terms allow the evidence bundle to publish of its responses, and the
    archived transcription that decides it (`data/terms/<vendor>.md`, written by hand from the
    vendor's terms with their source). Its decision line names the level; a vendor whose terms
    could not be found (no file) is `digests`, the safe default, with nothing to pin."""
    path = TERMS_DIR / f"{vendor}.md"
    if not path.exists():
        return {"publish_evidence": "digests"}
    text = path.read_text(encoding="utf-8")
    level = re.search(r"^- \*\*Decision\*\*: `(raw|results|digests)`", text, re.M)
    if level is None:
        raise SystemExit(f"{path}: no '- **Decision**: `raw|results|digests`' line")
    dates = re.findall(r"\d{4}-\d{2}-\d{2}", text.splitlines()[0])  # its title: "... archived 2026-11-25"
    return {
        "publish_evidence": level.group(1),
        "evidence_terms": {
            "file": str(path.relative_to(ROOT)),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "archived_on": max(dates) if dates else TERMS_ARCHIVED_ON,
        },
    }


# Simulated snapshots pace against the simulator, not the vendor's plan. The demo paces every
# account at no less than DEMO_PACE requests a second (each endpoint too), and says so in the plan
# of each configuration it speeds up: at the plans' own limits the demo's configurations would
# spend most of its minutes waiting on the pacer (benchmarks/README.md, "20 endpoint
# configurations"), which measures nothing a simulated run can show. A live manifest keeps
# the adapter's MANIFEST_DEFAULTS. SerpApi's plan is an hourly cap, not a rate, hence its own text.
DEMO_PACE = 25.0
DEMO_OVERRIDES = {
    "serpapi": {
        "rate_limit_per_second": DEMO_PACE,
        "plan": f"Developer ($75 per month, 5,000 searches); demo paced at {DEMO_PACE:g}/s, not the plan's hourly cap",
    },
}


def demo_paced(entry: dict[str, Any]) -> dict[str, Any]:
    """`entry` with its account and endpoint limits raised to DEMO_PACE where lower, its plan saying so."""
    account = entry["rate_limit_per_second"]
    endpoints = entry.get("capability_rate_limits") or {}
    if account >= DEMO_PACE and all(limit >= DEMO_PACE for limit in endpoints.values()):
        return entry
    paced = dict(entry, rate_limit_per_second=max(account, DEMO_PACE))
    if endpoints:
        paced["capability_rate_limits"] = {cap: max(limit, DEMO_PACE) for cap, limit in endpoints.items()}
    plan_limits = ", ".join([f"{account:g}/s", *(f"{cap} {limit:g}/s" for cap, limit in endpoints.items())])
    paced["plan"] = f"{entry['plan']}; demo pace at least {DEMO_PACE:g}/s (plan: {plan_limits})"
    return paced


# Services agents use that cannot be scored: listed in every snapshot with the reason and a cited
# source (the exclusions page and exclusions.json/csv), never silently absent.
EXCLUDED = [
    {
        "vendor": "google_ai_mode",
        "reason_code": "no_programmatic_endpoint",
        "reason": "No public API for AI Mode results; only the consumer web UI.",
        "evidence": "No endpoint in Google's developer documentation as of 2026-06-01.",
        "decided_by": "bench maintainers",
    },
    {
        "vendor": "google_programmable_search",
        "reason_code": "closed_to_new_customers",
        "reason": "Google's Custom Search JSON API (Programmable Search Engine results) is closed to new "
        "customers and ends for existing ones on 2027-01-01: no new account can run it, so a snapshot "
        "could not be reproduced.",
        "evidence": "developers.google.com/custom-search/v1/overview: 'The Custom Search JSON API is closed to "
        "new customers' and 'Existing Custom Search JSON API customers have until January 1, 2027 to "
        "transition to an alternative solution' (as quoted by apiserpent.com/blog/google-custom-search-api-"
        "shutdown-migration and blog.expertrec.com/google-custom-search-json-api-simplified, read "
        "2026-11-29); the Site Restricted JSON API was discontinued on 2025-01-08 "
        "(developers.google.com/custom-search/v1/site_restricted_api).",
        "decided_by": "bench maintainers",
    },
    {
        "vendor": "bing_grounding",
        "reason_code": "no_ranked_results",
        "reason": "Grounding with Bing Search (Azure AI Foundry Agent Service) returns an agent's answer with "
        "citations, never the search results: there is no ranked list to score.",
        "evidence": "learn.microsoft.com/en-us/azure/ai-foundry/agents/how-to/tools/bing-grounding: "
        "'Developers and end users don't have access to raw content returned from Grounding with Bing "
        "Search. The model response, however, includes citations with links to the websites used to "
        "generate the response, and a link to the Bing query used for the search', to be displayed 'in the "
        "exact form provided by Microsoft' (read 2026-11-29).",
        "decided_by": "bench maintainers",
    },
    {
        "vendor": "bing_web_search_api",
        "reason_code": "no_programmatic_endpoint",
        "reason": "The Bing Search APIs, which returned ranked results, were retired on 2025-08-11; Microsoft "
        "points to Grounding with Bing Search instead (listed above).",
        "evidence": "Retirement on 11 August 2025 announced on Azure Updates, as reported by "
        "tudonoticias.com.br/noticias/2025/05/19/microsoft-encerra-api-do-bing-e-recomenda-ia-como-substituta "
        "and tutitech.jp/microsoft-desativa-apis-do-bing-e-muda-foco-para-ia (citing WIRED), read 2026-11-29 "
        "(3p: Microsoft's own notice is not in the pages we hold).",
        "decided_by": "bench maintainers",
    },
    {
        "vendor": "gemini_grounding",
        "reason_code": "no_ranked_results",
        "reason": "Grounding with Google Search in the Gemini API returns a generated answer with grounding "
        "metadata (the queries it ran, the sources it cites), not a ranked result list; its terms require "
        "the Search Suggestions shown as provided, with no other search results alongside.",
        "evidence": "ai.google.dev/gemini-api/docs/grounding/search-suggestions: the response includes "
        "'content: LLM generated response' and 'webSearchQueries'; 'Don't: ... Display any other search "
        "results or suggestions alongside the Search Suggestion or associated grounded LLM response' (read "
        "2026-11-29).",
        "decided_by": "bench maintainers",
    },
]

HEADER = """\
# Snapshot manifest: everything this snapshot pins before any vendor is called.
# Simulated mode: every vendor is the local simulator, so nothing here is headline-eligible.
# Regenerate the vendor entries with scripts/write_demo_manifest.py.
"""


def configuration(provider: str, committed: dict[str, Any], mode: dict[str, Any] | None = None) -> dict[str, Any]:
    """A configuration's manifest entry: the provider's adapter defaults and the demo's settings, the
    mode's plan and prices on top (`mode`: a `DEMO_MODES` entry with its `mode` name), then the pinned
    pricing and terms files."""
    cls = available_adapters()[provider]
    defaults = importlib.import_module(cls.__module__).MANIFEST_DEFAULTS
    entry: dict[str, Any] = {"adapter": provider}
    if mode is not None:
        entry["mode"] = mode["mode"]
    entry |= {
        "adapter_version": cls.version,
        **defaults,
        "spend_ceiling_usd": 25.0,
        "timeout_seconds": 30,
        "max_attempts": 4,
        **{k: v for k, v in (mode or {}).items() if k != "mode"},
    }
    entry = demo_paced(entry) if provider not in DEMO_OVERRIDES else entry | DEMO_OVERRIDES[provider]
    source = pinned_pricing(provider, committed)
    if source:
        entry["pricing_source"] = source
    # a copy: entries sharing one dict would be written as YAML anchors and aliases
    return copy.deepcopy(entry | archived_terms(provider))


def configurations(committed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every provider's default configuration, each followed by its `DEMO_MODES` configurations."""
    adapters = available_adapters()
    unknown = sorted(c for c in DEMO_MODES if c.partition(".")[0] not in adapters)
    if unknown:
        raise SystemExit(f"DEMO_MODES names configurations of no adapter: {', '.join(unknown)}")
    vendors = {}
    for provider in sorted(adapters):
        vendors[provider] = configuration(provider, committed.get(provider, {}))
        for name in sorted(c for c in DEMO_MODES if c.partition(".")[0] == provider):
            mode = {"mode": name.partition(".")[2], **DEMO_MODES[name]}
            vendors[name] = configuration(provider, committed.get(provider, {}), mode)
    return vendors


def main() -> None:
    committed = (yaml.safe_load(OUT.read_text()) or {}).get("vendors", {}) if OUT.exists() else {}
    vendors = configurations(committed)
    manifest = {
        "snapshot_id": SNAPSHOT,
        "mode": "simulated",
        "title": "Web search 2026 Q3 (simulated demo)",
        "golden": {"source": "planted_demo", "rows_per_stratum": 42},
        "split": {"public_share": 0.7, "key_env": "BENCH_SPLIT_KEY"},
        "k_values": [1, 3, 5, 10],
        "answer_k": 5,
        "results_per_query": 10,
        "fidelity_weights": {
            "title": 0.15,
            "anchor_phrases": 0.35,
            "table_cells": 0.25,
            "numeric_facts": 0.15,
            "noise": 0.10,
        },
        "vendors": vendors,
        "excluded": EXCLUDED,
    }
    text = yaml.safe_dump(manifest, sort_keys=False, width=110)
    for vendor, price in ASSUMED_PRICES.items():  # say so beside the price itself
        block = text.index(f"\n  {vendor}:\n")
        at = text.index("\n    prices_usd:\n", block) + 1
        text = (
            text[:at] + f"    # {price}: the project's assumption, not a documented price; why in "
            f"data/pricing/{vendor}.md\n" + text[at:]
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(HEADER + text)
    providers = {v.partition(".")[0] for v in vendors}
    print(f"wrote {OUT} with {len(vendors)} configurations of {len(providers)} providers")


if __name__ == "__main__":
    main()
