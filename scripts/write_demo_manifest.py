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
ARCHIVED_ON = "2026-11-22"
SECTION_OF = {"exa": "Exa", "tavily": "Tavily", "brave": "Brave", "serper": "Serper", "serpapi": "SerpApi",
              "jina": "Jina", "firecrawl": "Firecrawl", "perplexity": "Perplexity", "linkup": "Linkup",
              "parallel": "Parallel", "youcom": "You.com", "kagi": "Kagi"}


def archive_pricing(vendor: str) -> dict | None:
    """Keep the pricing text the price table was read from (the team's transcription of the
    vendor's pricing page, with its source URL), and pin its SHA-256 in the manifest."""
    if not VENDORS_REFERENCE.exists():
        return None
    text = VENDORS_REFERENCE.read_text(encoding="utf-8")
    section = re.search(rf"^## \d+\. {re.escape(SECTION_OF[vendor])}.*?(?=^## )", text, re.S | re.M)
    pricing = re.search(r"^- \*\*Pricing\*\*.*?(?=^- \*\*|\Z)", section.group(0), re.S | re.M) if section else None
    if pricing is None:
        return None
    path = PRICING_DIR / f"{vendor}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {SECTION_OF[vendor]} pricing, archived {ARCHIVED_ON}\n\n"
                    f"Transcribed from the vendor's pricing documentation (source in brackets).\n\n"
                    f"{pricing.group(0).strip()}\n", encoding="utf-8")
    return {"file": str(path.relative_to(ROOT)), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "archived_on": ARCHIVED_ON}

# Simulated snapshots pace against the simulator, not the vendor's plan. Where a vendor's
# cheapest plan is so slow that the demo could not finish in minutes, the demo pins a faster
# pace and says so; a live manifest keeps the adapter's MANIFEST_DEFAULTS.
DEMO_OVERRIDES = {
    "serpapi": {"rate_limit_per_second": 5,
                "plan": "Developer ($75 per month, 5,000 searches); demo paced at 5/s, not the plan's hourly cap"},
}

HEADER = """\
# Snapshot manifest: everything this snapshot pins before any vendor is called.
# Simulated mode: every vendor is the local simulator, so nothing here is headline-eligible.
# Regenerate the vendor entries with scripts/write_demo_manifest.py.
"""


def main() -> None:
    vendors = {}
    for name, cls in sorted(available_adapters().items()):
        defaults = getattr(importlib.import_module(cls.__module__), "MANIFEST_DEFAULTS")
        vendors[name] = {"adapter": name, "adapter_version": cls.version, **defaults,
                         "spend_ceiling_usd": 25.0, "timeout_seconds": 30, "max_attempts": 4,
                         **DEMO_OVERRIDES.get(name, {})}
        source = archive_pricing(name)
        if source:
            vendors[name]["pricing_source"] = source
    manifest = {
        "snapshot_id": SNAPSHOT,
        "mode": "simulated",
        "title": "Web search 2026 Q3 (simulated demo)",
        "golden": {"source": "planted_demo", "rows_per_stratum": 42},
        "split": {"public_share": 0.7, "key_env": "BENCH_SPLIT_KEY"},
        "k_values": [1, 3, 5, 10],
        "answer_k": 5,
        "results_per_query": 10,
        "fidelity_weights": {"title": 0.15, "anchor_phrases": 0.35, "table_cells": 0.25, "numeric_facts": 0.15,
                             "noise": 0.10},
        "vendors": vendors,
        "excluded": [{
            "vendor": "google_ai_mode", "reason_code": "no_programmatic_endpoint",
            "reason": "No public API for AI Mode results; only the consumer web UI.",
            "evidence": "No endpoint in Google's developer documentation as of 2026-06-01.",
            "decided_by": "bench maintainers"}],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(HEADER + yaml.safe_dump(manifest, sort_keys=False, width=110))
    print(f"wrote {OUT} with {len(vendors)} vendors")


if __name__ == "__main__":
    main()
