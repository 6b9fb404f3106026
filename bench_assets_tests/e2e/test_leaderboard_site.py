"""The leaderboard's ranking basis and intervals as the published site shows them (the session's
published snapshot: brave has no extraction endpoint)."""

from __future__ import annotations

import csv
import io
import json

from bench_assets.aggregate.leaderboard import RANK_METRIC
from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.metrics import (
    PairedComparison,
    PairedCounts,
    ranking_from_comparisons,
    wilson_interval,
)


def scored(board: dict) -> dict[str, dict]:
    return {e["vendor"]: e for e in board["vendors"] if e["status"] == "scored"}


def test_the_site_states_the_ranking_basis_and_orders_by_it(published_site):
    from selectolax.lexbor import LexborHTMLParser

    out = published_site.out
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["ranking"]["metric"] == board["rank_metric"] == RANK_METRIC
    assert board["ranking"]["task_types"] == ["answer", "search"]
    e = sorted(scored(board).values(), key=lambda x: x["position"])
    figs = [x["metrics"][RANK_METRIC] for x in e]
    assert [f["value"] for f in figs] == sorted((f["value"] for f in figs), reverse=True)
    # ranks and letters follow from the published pairs (every vendor answered every row: positions fit)
    compared = [
        PairedComparison(
            PairedCounts(p["vendor_a"], p["vendor_b"], p["both_correct"], p["a_only"], p["b_only"], p["neither"]),
            p["p_value"],
            p["p_adjusted"],
            wilson_interval(0, 0),
            p["better"],
        )
        for p in board["comparisons"]["pairs"]
    ]
    again = ranking_from_comparisons([x["vendor"] for x in e], compared)
    for position, x in enumerate(e, start=1):
        assert (x["rank_range"]["best"], x["rank_range"]["worst"]) == again.rank_ranges[x["vendor"]]
        assert x["rank_range"]["best"] <= position <= x["rank_range"]["worst"]
        assert x["rank_letters"] == again.letters[x["vendor"]]
    index = LexborHTMLParser((out / "index.html").read_text())
    assert board["ranking"]["note"] in index.css_first("#ranking-basis").text()
    method = LexborHTMLParser((out / "methodology.html").read_text())
    assert "answer, search" in method.css_first("#ranking-this-snapshot").text()
    for name in (
        "mcnemar_exact_p",
        "holm_adjust",
        "paired_difference_interval",
        "compact_letter_display",
        "paired_rank_ranges",
        "power_statement",
        "bounded_mean_interval",
        "cost_per_correct_interval",
        "percentile_interval",
    ):
        assert method.css_first(f"#{name}") is not None, name
    assert "Holm" in method.css_first("#holm_adjust").text()
    assert method.css_first("#tie_groups") is None and method.css_first("#rank_ranges") is None
    assert board["power"]["note"] in method.css_first("#power-this-snapshot").text()


def test_every_figure_on_the_vendor_page_has_n_and_an_interval(published_site):
    from selectolax.lexbor import LexborHTMLParser

    out = published_site.out
    board = json.loads((out / "leaderboard.json").read_text())
    rows_ = {r["vendor"]: r for r in csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text()))}
    for vendor, e in scored(board).items():
        page = LexborHTMLParser((out / "vendors" / f"{vendor}.html").read_text())
        facts = {dt.text(strip=True): dd for dt, dd in zip(page.css("#plan ~ dl dt"), page.css("#plan ~ dl dd"))}
        assert [s.text() for s in facts["Billed spend"].css(".ci")][1] == "exact"
        for label in ("Cost per correct", "Latency p50 (final attempt)", "Latency p95 (final attempt)"):
            spans = [s.text() for s in facts[label].css(".ci")]
            assert spans[0].startswith("n=") and spans[1].startswith("["), (vendor, label, spans)
        for name in ("cost_per_correct_usd", "latency_p50_ms", "spend_usd"):
            fig = e["metrics"][name]
            assert fig["low"] is not None and fig["high"] is not None, (vendor, name)
            assert rows_[vendor][f"{name}_low"] != "" and rows_[vendor][f"{name}_high"] != ""
        assert {c: int(rows_[vendor][f"class_{c}"]) for c in RESPONSE_CLASSES} == {
            c: e["response_classes"].get(c, 0) for c in RESPONSE_CLASSES
        }
