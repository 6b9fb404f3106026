"""Every page type of the session's published site, in Debian's chromium at 1,280 and 390 px.

axe-core (the copy bundled in the `axe-playwright-python` wheel, run inside the page) finds no
serious or critical violation; no page is wider than a phone's screen; and the leaderboard's
first screen says who is placed first, by how much it leads the next vendor (with the paired
interval), how sure that is and at what cost, with every other column one click away.

Like test_site_browser.py, the test skips on a developer's machine without /usr/bin/chromium and
fails in CI, which installs it.
"""

from __future__ import annotations

import json
import os

import pytest

from bench_assets.publish.format import format_number, format_points, metric_label
from bench_assets.publish.summary import summary_cost
from bench_assets_tests.helpers import CHROMIUM, FRONT_PAGES, page_types

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="Debian chromium is not installed at /usr/bin/chromium (apt-get install "
    "chromium); in CI ($CI set) this fails instead",
)

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
BLOCKING = ("serious", "critical")


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


def test_every_page_type_has_no_serious_axe_violation_and_fits_a_phone(
    published_site, site_url, browser, axe, capsys, record_property
):
    types = page_types(published_site.out)
    # the fixture publishes each of these; a type that went missing would go unchecked
    assert {*FRONT_PAGES, "queries listing", "vendor", "reply"} <= set(types), types
    assert {"query (search)", "query (answer)", "query (extract)"} <= set(types), types
    # a vendor's rows as a figure's link opens them: filtered, with the filter's form
    types["vendor (filtered rows)"] = types["vendor"] + "?task=search&verdict=correct#public-rows"
    report, problems = [], []
    for name, viewport in VIEWPORTS.items():
        page = browser.new_page(viewport=viewport)
        for kind, rel in types.items():
            page.goto(site_url + rel, wait_until="networkidle")
            # what is one click away is checked too: every column, the rows, the raw responses
            page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > viewport["width"]:
                problems.append(f"{name} {rel}: the page is {width} px wide in a {viewport['width']} px window")
            results = axe.run(page).response
            blocking = [v for v in results["violations"] if v["impact"] in BLOCKING]
            for v in blocking:
                targets = "; ".join(str(n["target"]) for n in v["nodes"][:3])
                problems.append(f"{name} {rel}: {v['id']} ({v['impact']}) on {len(v['nodes'])} nodes: {targets}")
            report.append(
                f"{name:7} {kind:22} {rel:28} width {width:4} axe serious/critical nodes: "
                f"{sum(len(v['nodes']) for v in blocking)}"
            )
        page.close()
    record_property("axe_report", "\n".join(report))
    with capsys.disabled():
        print("\n" + "\n".join(report))
    assert problems == []


def in_first_screen(page, selector: str) -> bool:
    """Whether the element is laid out inside the first viewport, neither below it nor off its sides."""
    return page.eval_on_selector(
        selector,
        "el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.top >= 0 && "
        "r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth; }",
    )


@pytest.mark.parametrize("viewport", VIEWPORTS.values(), ids=VIEWPORTS.keys())
def test_leaderboard_first_screen_says_who_by_how_much_how_sure_at_what_cost(
    published_site, site_url, browser, viewport
):
    board = json.loads((published_site.out / "leaderboard.json").read_text())
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    best, runner_up = scored[0], scored[1]
    pair = next(
        p
        for p in board["comparisons"]["pairs"]
        if {p["vendor_a"], p["vendor_b"]} == {best["vendor"], runner_up["vendor"]}
    )
    sign = 1 if pair["vendor_a"] == best["vendor"] else -1
    lead = sign * pair["difference"]["value"]
    low, high = sorted(sign * pair["difference"][k] for k in ("low", "high"))

    page = browser.new_page(viewport=viewport)
    page.goto(site_url + "index.html", wait_until="networkidle")
    # the verdict, the summary's headings and the leader's row lie inside the first screen, nothing sideways
    for part in ("#verdict", "#summary thead", "#summary tbody tr:first-child"):
        assert in_first_screen(page, part), part
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    verdict = page.locator("#verdict").inner_text()
    rank_figure = best["metrics"][board["rank_metric"]]
    cost_metric = summary_cost(board)  # the ranking figure's rows' cost
    cost = best["metrics"][cost_metric]
    for text in (
        best["vendor"],
        format_number(board["rank_metric"], rank_figure["value"]),  # who, and by what figure
        format_points(lead),  # by how much over the next (a tie reads 0.0 pt)
        f"[{format_points(low)}, {format_points(high)}]",  # its paired interval
        format_number(cost_metric, cost["value"]),  # at what cost
    ):
        assert text in verdict, (text, verdict)
    assert ("Not told apart from" in verdict) == (pair["better"] is None)

    # the summary's columns, in order, every row in the board's order with its rank range
    headers = page.eval_on_selector_all("#summary thead th", "ths => ths.map(t => t.dataset.metric)")
    assert headers == ["position", "vendor", board["rank_metric"], "gap_to_next", cost_metric]
    assert page.eval_on_selector_all("#summary tbody tr", "rows => rows.map(r => r.dataset.vendor)") == [
        e["vendor"] for e in scored
    ]
    assert metric_label(board["rank_metric"]) in page.locator("#summary thead").inner_text()
    gap = page.locator(f'#summary tr[data-vendor="{best["vendor"]}"] td[data-metric="gap_to_next"]').inner_text()
    assert format_points(lead) in gap and runner_up["vendor"] in gap
    assert (
        page.locator(f'#summary tr[data-vendor="{scored[-1]["vendor"]}"] td[data-metric="gap_to_next"]').inner_text()
        == "—"
    )

    # every other column is one click away: hidden until the reader opens it, then laid out
    assert not page.locator("#leaderboard").is_visible()
    page.locator("#all-columns > summary").click()
    assert page.locator('#leaderboard th[data-metric="latency_p50_ms"]').is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]

    # lower is better: the first click on $/correct or latency puts the cheapest or fastest first
    for table, metric in (("#summary", cost_metric), ("#leaderboard", "latency_p50_ms")):
        page.locator(f'{table} th[data-metric="{metric}"]').click()
        values = page.eval_on_selector_all(
            f'{table} tbody td[data-metric="{metric}"]', "cells => cells.map(c => parseFloat(c.dataset.value))"
        )
        assert values == sorted(e["metrics"][metric]["value"] for e in scored), (metric, values)
    page.close()
