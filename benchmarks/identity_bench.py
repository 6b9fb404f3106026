"""hit@k of a registry-sourced snapshot with and without the document identity rules.

The registry snapshot (data/snapshots/registry_search-2026-q4, cut to the records of the
registry extracts) runs end to end on the local simulator, every vendor: golden rows drawn from
the registries, verified, split, fetched, scored. The simulated vendors return a registry page
under the registry's canonical URL for 40 % of pages and under another of the registry's own URL
forms for the rest (`simulator.registry_site.CANONICAL_SHARE`), as search engines return whichever
they indexed; that share is the simulator's assumption, not a measurement of any vendor.

"With the rules" is what scoring publishes (`row_scores`: `metrics.hit_at_k`, identity rules
version `metrics.IDENTITY_RULES_VERSION`); "without" recounts the same archived results by
normalized URL alone (`response_results.url_normalized` against the golden and equivalent URLs'
normalized forms), which is what hit@k was before the rules.

    .venv/bin/python -m benchmarks.identity_bench      # writes benchmarks/results/identity_rules.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.metrics import IDENTITY_RULES_VERSION, normalize_url
from bench_assets.simulator.server import start_simulator
from bench_assets_tests.helpers import make_home, run_whole_snapshot, warehouse_rows
from benchmarks.common import RESULTS, machine

SNAPSHOT = "registry_search-2026-q4"
VENDORS = [
    "brave",
    "exa",
    "firecrawl",
    "jina",
    "kagi",
    "linkup",
    "parallel",
    "perplexity",
    "serpapi",
    "serper",
    "tavily",
    "youcom",
]
# The extracts hold 30 Tesla filings (and 31 Snowflake facts), 18 RFCs, 32 PEPs, 10 arXiv articles and
# 1 Federal Register document, up to three rows a record: about half of them are drawn (these counts),
# the rest kept for the decoys (half a decoy per holdout row) and the replacement candidates.
REGISTRIES = {
    "sec_edgar": {"stratum": "sec_filings", "rows": 40, "options": {"tickers": ["TSLA"], "fact_tickers": ["SNOW"]}},
    "rfc_editor": {"stratum": "ietf_rfcs", "rows": 24},
    "peps": {"stratum": "python_peps", "rows": 44},
    "arxiv": {"stratum": "arxiv_papers", "rows": 14, "options": {"search_query": "all:GAN", "max_results": 10}},
    "federal_register": {"stratum": "federal_register", "rows": 1, "options": {"days": 7}},
}
KS = (1, 5, 10)


def registry_manifest(data: dict[str, Any]) -> None:
    data["snapshot_id"] = SNAPSHOT
    data["golden"] = {
        "source": "registry",
        "rows_per_stratum": 9,
        "contact": "bench-ops@example.org",
        "registries": REGISTRIES,
        "mix": [],
    }
    data["decoys"] = {"source": "registry", "ratio": 0.5}
    data["candidates"] = {"source": "registry"}


def _rate(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def measure(home: Path) -> dict[str, Any]:
    golden = {
        row_id: {normalize_url(u) for u in [*task["golden_urls"], *task.get("equivalent_urls", [])]}
        for row_id, task in (
            (r[0], json.loads(r[1]))
            for r in warehouse_rows(home, "SELECT row_id, task_json FROM golden_rows WHERE task_type = 'search'")
        )
    }
    scored = warehouse_rows(
        home,
        "SELECT vendor, row_id, stratum, first_hit_rank FROM row_scores "
        "WHERE task_type = 'search' AND response_class <> 'unsupported'",
    )
    results: dict[tuple[str, str], list[str]] = {}
    for vendor, row_id, _rank, form in warehouse_rows(
        home, "SELECT vendor, row_id, rank, url_normalized FROM response_results ORDER BY vendor, row_id, rank"
    ):
        results.setdefault((vendor, row_id), []).append(form)
    per_vendor: dict[str, dict[str, Any]] = {}
    per_stratum: dict[str, dict[str, list[int]]] = {}
    for vendor, row_id, stratum, rank in scored:
        forms = results.get((vendor, row_id), [])
        plain = next((i for i, form in enumerate(forms, start=1) if form in golden[row_id]), None)
        entry = per_vendor.setdefault(
            vendor, {"n": 0, **{f"with_{k}": 0 for k in KS}, **{f"without_{k}": 0 for k in KS}}
        )
        strat = per_stratum.setdefault(
            stratum, {"n": [0], **{f"with_{k}": [0] for k in KS}, **{f"without_{k}": [0] for k in KS}}
        )
        entry["n"] += 1
        strat["n"][0] += 1
        for k in KS:
            with_rules = rank is not None and rank <= k
            without = plain is not None and plain <= k
            entry[f"with_{k}"] += with_rules
            entry[f"without_{k}"] += without
            strat[f"with_{k}"][0] += with_rules
            strat[f"without_{k}"][0] += without
    table = {
        vendor: {
            "n": e["n"],
            **{f"hit_at_{k}_with_rules": _rate(e[f"with_{k}"], e["n"]) for k in KS},
            **{f"hit_at_{k}_without_rules": _rate(e[f"without_{k}"], e["n"]) for k in KS},
        }
        for vendor, e in sorted(per_vendor.items())
    }
    n = sum(e["n"] for e in per_vendor.values())
    overall = {
        "n": n,
        **{f"hit_at_{k}_with_rules": _rate(sum(e[f"with_{k}"] for e in per_vendor.values()), n) for k in KS},
        **{f"hit_at_{k}_without_rules": _rate(sum(e[f"without_{k}"] for e in per_vendor.values()), n) for k in KS},
    }
    strata = {
        stratum: {
            "n": s["n"][0],
            **{f"hit_at_{k}_with_rules": _rate(s[f"with_{k}"][0], s["n"][0]) for k in KS},
            **{f"hit_at_{k}_without_rules": _rate(s[f"without_{k}"][0], s["n"][0]) for k in KS},
        }
        for stratum, s in sorted(per_stratum.items())
    }
    return {"overall": overall, "by_vendor": table, "by_stratum": strata}


def identity_rules_bench() -> dict[str, Any]:
    simulator = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0"})
    try:
        with tempfile.TemporaryDirectory(prefix="bench-identity-") as tmp:
            home = make_home(Path(tmp), VENDORS, snapshot=SNAPSHOT, edit=registry_manifest)
            with dg.instance_for_test() as instance:
                run_whole_snapshot(instance, home, simulator.base_url, VENDORS, snapshot=SNAPSHOT)
            figures = measure(home)
    finally:
        simulator.stop()
    return {
        "snapshot": SNAPSHOT,
        "identity_rules_version": IDENTITY_RULES_VERSION,
        "vendors": VENDORS,
        "note": "simulated vendors return 60 % of registry pages under another of the registry's own URL forms "
        "(simulator.registry_site.CANONICAL_SHARE = 0.4); 'without' recounts the same results by normalized URL alone",
        "machine": machine(),
        **figures,
    }


def main() -> int:
    result = identity_rules_bench()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "identity_rules.json"
    stamped = {
        "benchmark": "identity_rules",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": ".venv/bin/python -m benchmarks.identity_bench",
        **result,
    }
    path.write_text(json.dumps(stamped, indent=2) + "\n")
    overall = result["overall"]
    print(f"{'':12} {'n':>5} " + " ".join(f"{'hit@' + str(k) + ' w/o':>11} {'with':>6}" for k in KS))
    for name, row in [*result["by_vendor"].items(), ("all vendors", overall)]:
        cells = " ".join(f"{row[f'hit_at_{k}_without_rules']:>11.3f} {row[f'hit_at_{k}_with_rules']:>6.3f}" for k in KS)
        print(f"{name:12} {row['n']:>5} {cells}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
