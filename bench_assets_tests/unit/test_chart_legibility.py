"""Charts read by anyone: twelve vendors' names on the cost chart never overlap, even when their
points crowd together; twelve series never share a colour and line style; the cost chart names the
rate it plots apart from the ranking figure."""

from __future__ import annotations

import itertools

from matplotlib.text import Annotation, Text

from bench_assets.publish import charts

TWELVE = [
    "exa",
    "tavily",
    "brave",
    "serper",
    "serpapi",
    "jina",
    "firecrawl",
    "perplexity",
    "linkup",
    "parallel",
    "youcom",
    "kagi",
]


def crowded_board() -> dict:
    """Twelve vendors on four costs and a 5-point band of correct rates: every label would land
    on another at a fixed offset."""
    return {
        "rank_metric": "correct_rate_shared",
        "headline_eligible": False,
        "mode": "simulated",
        "vendors": [
            {
                "vendor": v,
                "status": "scored",
                "reasons": [],
                "metrics": {
                    "cost_per_correct_usd": {"value": 0.005 + 0.0002 * (i % 4), "low": 0.004, "high": 0.006, "n": 90},
                    "correct_rate": {"value": 0.80 + 0.004 * i, "low": 0.7, "high": 0.9, "n": 90},
                },
            }
            for i, v in enumerate(TWELVE)
        ],
    }


def test_no_two_vendor_labels_on_the_cost_chart_overlap():
    figure = charts.cost_accuracy_figure(crowded_board())
    charts.render(figure)  # laid out as published
    figure.draw_without_rendering()  # every text at its drawn position
    renderer = figure.canvas.get_renderer()
    ax = figure.axes[0]
    labels = [a for a in ax.texts if isinstance(a, Annotation)]
    assert sorted(a.get_text() for a in labels) == sorted(TWELVE)
    boxes = {a.get_text(): Text.get_window_extent(a, renderer) for a in labels}  # the text, not its line
    overlapping = [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes.items(), 2) if ba.overlaps(bb)]
    assert overlapping == []
    assert ax.get_ylabel() == "overall correct rate (every task type)"


def test_twelve_series_each_look_different():
    styles = [charts.series_style(i) for i in range(12)]
    assert len({(s["color"], s["linestyle"], s["marker"]) for s in styles}) == 12
    assert all(s["color"] in charts.PALETTE for s in styles) and len(charts.PALETTE) == 8  # Okabe–Ito only


def test_the_cost_chart_is_named_for_the_rate_it_plots():
    chart = next(c for c in charts.site_charts(crowded_board()) if c.name == "cost_vs_accuracy")
    assert "overall correct rate" in chart.title and "not the ranking figure" in chart.caption


def frontier_board() -> dict:
    """Twelve configurations crowded on costs and rates, with the frontier marked as leaderboard.json does."""
    from bench_assets.aggregate.frontier import mark_pareto_optimal

    vendors = []
    for i, v in enumerate(TWELVE):
        cost = 4.0 + 0.3 * (i % 4) + 2.0 * (i // 6)
        rate = 0.62 + 0.01 * i
        vendors.append(
            {
                "vendor": v,
                "status": "scored",
                "reasons": [],
                "metrics": {
                    "usd_per_1000_correct_shared": {"value": cost, "low": cost * 0.8, "high": cost * 1.3, "n": 90},
                    "correct_rate_shared": {"value": rate, "low": rate - 0.09, "high": rate + 0.08, "n": 90},
                },
            }
        )
    board = {"rank_metric": "correct_rate_shared", "headline_eligible": False, "mode": "simulated", "vendors": vendors}
    mark_pareto_optimal(vendors, "correct_rate_shared")
    return board


def test_the_frontier_chart_names_every_configuration_without_overlap_and_marks_the_optimal():
    board = frontier_board()
    optimal = {e["vendor"] for e in board["vendors"] if e["pareto_optimal"]}
    assert optimal and optimal != set(TWELVE)
    figure = charts.frontier_figure(board)
    charts.render(figure)
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    ax = figure.axes[0]
    labels = [a for a in ax.texts if isinstance(a, Annotation)]
    assert sorted(a.get_text() for a in labels) == sorted(TWELVE)
    boxes = {a.get_text(): Text.get_window_extent(a, renderer) for a in labels}
    assert [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes.items(), 2) if ba.overlaps(bb)] == []
    # the optimal are named in bold, the dominated not; the axis is log and in dollars per 1,000 correct
    assert {a.get_text() for a in labels if a.get_fontweight() == "bold"} == optimal
    assert ax.get_xscale() == "log" and "1,000 correct" in ax.get_xlabel()
    step = ax.lines[0]  # the line joining the optimal, cheapest first, flat to the right edge
    assert len(step.get_xdata()) == len(optimal) + 1
