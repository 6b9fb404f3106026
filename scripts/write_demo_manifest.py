"""Regenerate the demo snapshot manifest from each adapter's MANIFEST_DEFAULTS.

Run: .venv/bin/python scripts/write_demo_manifest.py
The manifest is committed; this script is how it was written, so the pins stay traceable.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from pathlib import Path

import yaml

from bench_assets.adapters import available_adapters

SNAPSHOT = "web_search-2026-q3"
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
VENDORS_REFERENCE = ROOT.parent / "shared" / "vendors.md"
PRICING_DIR = ROOT / "data" / "pricing"
TERMS_DIR = ROOT / "data" / "terms"
ARCHIVED_ON = "2026-11-22"
TERMS_ARCHIVED_ON = "2026-11-25"
SECTION_OF = {
    "exa": "Exa",
    "tavily": "Tavily",
    "brave": "Brave",
    "serper": "Serper",
    "serpapi": "SerpApi",
    "jina": "Jina",
    "firecrawl": "Firecrawl",
    "perplexity": "Perplexity",
    "linkup": "Linkup",
    "parallel": "Parallel",
    "youcom": "You.com",
    "kagi": "Kagi",
}


# Prices the vendors' documentation (as transcribed in vendors.md) does not state: the manifest
# pins them all the same, so they are written down, in the archived pricing file and beside the
# price in the manifest, as what they are: the project's assumption, with why.
ASSUMED_PRICES = {
    "firecrawl": (
        "$0.0008 per credit",
        "The documentation above gives what each call costs in credits, but no price per credit: plans are "
        "monthly subscriptions whose prices were not verified. The manifest's $0.0008 per credit is the "
        "project's assumption: the Standard plan read as about $80 a month for 100,000 credits, not checked "
        "against an archived plan page. It keeps simulated spend comparable across vendors; a live snapshot "
        "must pin the price per credit of the plan it is billed on, from that plan's archived page.",
    ),
    "jina": (
        "$0.05 per million tokens",
        "The documentation above gives the billing unit (tokens: Reader bills the tokens it returns, Search at "
        "least 10,000 per 10 results) and the free tokens, but no price per token. The manifest's $0.05 per "
        'million tokens is the project\'s assumption (the "1B tokens for $50" prepaid package its plan names), '
        "not checked against an archived price page. A live snapshot must pin the price of the token package "
        "it buys, from that package's archived page.",
    ),
}


def archive_pricing(vendor: str) -> dict | None:
    """Keep the pricing text the price table was read from (the team's transcription of the
    vendor's pricing page, with its source URL), and pin its SHA-256 in the manifest. Where the
    pinned price is not in that text, the file says so and why (ASSUMED_PRICES)."""
    if not VENDORS_REFERENCE.exists():
        return None
    text = VENDORS_REFERENCE.read_text(encoding="utf-8")
    section = re.search(rf"^## \d+\. {re.escape(SECTION_OF[vendor])}.*?(?=^## )", text, re.S | re.M)
    pricing = re.search(r"^- \*\*Pricing\*\*.*?(?=^- \*\*|\Z)", section.group(0), re.S | re.M) if section else None
    if pricing is None:
        return None
    path = PRICING_DIR / f"{vendor}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    assumed = ""
    if vendor in ASSUMED_PRICES:
        price, why = ASSUMED_PRICES[vendor]
        assumed = f"\n## The pinned price, {price}, is the project's assumption\n\n{why}\n"
    path.write_text(
        f"# {SECTION_OF[vendor]} pricing, archived {ARCHIVED_ON}\n\n"
        f"Transcribed from the vendor's pricing documentation (source in brackets).\n\n"
        f"{pricing.group(0).strip()}\n{assumed}",
        encoding="utf-8",
    )
    return {
        "file": str(path.relative_to(ROOT)),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "archived_on": ARCHIVED_ON,
    }


def archived_terms(vendor: str) -> dict:
    """What the vendor's terms allow the evidence bundle to publish of its responses, and the
    archived transcription that decides it (`data/terms/<vendor>.md`, written by hand from the
    vendor's terms with their source). Its decision line names the level; a vendor whose terms
    could not be found is `digests`, the safe default."""
    path = TERMS_DIR / f"{vendor}.md"
    text = path.read_text(encoding="utf-8")
    level = re.search(r"^- \*\*Decision\*\*: `(raw|results|digests)`", text, re.M)
    if level is None:
        raise SystemExit(f"{path}: no '- **Decision**: `raw|results|digests`' line")
    return {
        "publish_evidence": level.group(1),
        "evidence_terms": {
            "file": str(path.relative_to(ROOT)),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "archived_on": TERMS_ARCHIVED_ON,
        },
    }


# Simulated snapshots pace against the simulator, not the vendor's plan. Where a vendor's
# cheapest plan is so slow that the demo could not finish in minutes, the demo pins a faster
# pace and says so; a live manifest keeps the adapter's MANIFEST_DEFAULTS.
DEMO_OVERRIDES = {
    "serpapi": {
        "rate_limit_per_second": 5,
        "plan": "Developer ($75 per month, 5,000 searches); demo paced at 5/s, not the plan's hourly cap",
    },
}

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

# Adapters with their own contract tests that the demo does not run (issue 34): the demo's run
# time and its saved pages stay as they were. A live manifest may pin them.
NOT_IN_DEMO = {"keenable", "valyu"}

HEADER = """\
# Snapshot manifest: everything this snapshot pins before any vendor is called.
# Simulated mode: every vendor is the local simulator, so nothing here is headline-eligible.
# Regenerate the vendor entries with scripts/write_demo_manifest.py.
"""


def main() -> None:
    vendors = {}
    for name, cls in sorted(available_adapters().items()):
        if name in NOT_IN_DEMO:
            continue
        defaults = importlib.import_module(cls.__module__).MANIFEST_DEFAULTS
        vendors[name] = {
            "adapter": name,
            "adapter_version": cls.version,
            **defaults,
            "spend_ceiling_usd": 25.0,
            "timeout_seconds": 30,
            "max_attempts": 4,
            **DEMO_OVERRIDES.get(name, {}),
        }
        source = archive_pricing(name)
        if source:
            vendors[name]["pricing_source"] = source
        vendors[name].update(archived_terms(name))
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
    for vendor, (price, _) in ASSUMED_PRICES.items():  # say so beside the price itself
        block = text.index(f"\n  {vendor}:\n")
        at = text.index("\n    prices_usd:\n", block) + 1
        text = (
            text[:at] + f"    # {price}: the project's assumption, not a documented price; why in "
            f"data/pricing/{vendor}.md\n" + text[at:]
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(HEADER + text)
    print(f"wrote {OUT} with {len(vendors)} vendors")


if __name__ == "__main__":
    main()
