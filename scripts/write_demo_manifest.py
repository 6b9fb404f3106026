"""Regenerate the demo snapshot manifest from each adapter's MANIFEST_DEFAULTS.

Run: .venv/bin/python scripts/write_demo_manifest.py
The manifest is committed; this script is how it was written, so the pins stay traceable.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import yaml

from bench_assets.adapters import available_adapters

SNAPSHOT = "web_search-2026-q3"
OUT = Path(__file__).resolve().parent.parent / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"

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
