"""The published site and data files, read the way a reader, an agent and an operator read them.

One small snapshot is materialized through Dagster and published once (`published_site` in
conftest.py). The tests parse the HTML, the JSON, the CSV, llms.txt and the Dagster
materialization metadata, and check that they carry the same figures; that the site works
offline with no broken link; that only public rows are drilled down and nothing of the holdout
is published; that the methodology is generated from the code; and that the charts are
reproducible.
"""

from __future__ import annotations

import base64
import copy
import csv
import inspect
import io
import json
import re
from pathlib import Path

import dagster as dg
import jsonschema
import pytest
import yaml
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from bench_assets import metrics
from bench_assets.aggregate.figures import FRESH_METRIC, FRESH_SCOPE
from bench_assets.aggregate.leaderboard import HEADLINE_METRICS, NOT_REACHED_METRICS
from bench_assets.manifest import load_manifest
from bench_assets.publish import charts
from bench_assets.publish import format as publish_format
from bench_assets.publish import methodology as publish_methodology
from bench_assets.publish import site as publish_site
from bench_assets.publish.format import format_interval, format_number
from bench_assets.publish.quarters import write_quarters_index
from bench_assets.publish.site import SiteInputs
from bench_assets.rescore.compare import SiteComparison
from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets.runtime import processes as workers
from bench_assets.split.leaks import LeakGuard
from bench_assets_tests.helpers import (
    DEMO_MANIFEST,
    REPO,
    RESULT_STAGES,
    check_evaluations,
    materialize,
    warehouse_rows,
)

# ##### HELPERS


def board_of(site) -> dict:
    return json.loads((site.out / "leaderboard.json").read_text())


def scored(board: dict) -> list[dict]:
    return [e for e in board["vendors"] if e["status"] == "scored"]


def html(path: Path) -> HTMLParser:
    return HTMLParser(path.read_text(encoding="utf-8"))


def markdown_table(md: str) -> list[dict[str, str]]:
    """Rows of a pipe table (tabulate's format) as dicts."""
    lines = [line.strip() for line in md.splitlines() if line.strip().startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    header, body = cells[0], [c for c in cells[1:] if not set("".join(c)) <= set("-: ")]
    return [dict(zip(header, row)) for row in body]


def latest_metadata(instance, asset: str) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None, f"{asset} was never materialized"
    return event.asset_materialization.metadata


def same_number(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= 1e-9


def figure_cell_problems(td, metric: str, fig: dict | None, where: str) -> list[str]:
    """What a rendered figure (a table cell or a card) gets wrong against its figure in
    leaderboard.json: the sort key, the value shown, n and the interval (a missing figure: a dash)."""
    if fig is None:
        return [] if td.css_first(".na") is not None else [f"{where}: a figure where the record has none"]
    problems = []
    key = td.attributes.get("data-value")  # a table cell's sort key (a card has none)
    if "data-value" in td.attributes and not same_number(fig["value"], None if key == "" else key):
        problems.append(f"{where}: sort key {key!r}, record {fig['value']!r}")
    shown = [s.text(strip=True) for s in td.css("span.v, span.ci")]
    missing = "not reached" if metric in NOT_REACHED_METRICS else "—"
    expected = [format_number(metric, fig["value"]) if fig["value"] is not None else missing, f"n={fig['n']}"]
    if fig["low"] is not None or fig["high"] is not None:
        expected.append(format_interval(metric, fig))
    if shown != expected:
        problems.append(f"{where}: shows {shown}, record {expected}")
    return problems


def breakdown_problems(page: HTMLParser, entry: dict) -> tuple[int, list[str]]:
    """Every cell of a vendor page's breakdown tables (by task type, stratum, cohort, split) against
    the entry's `breakdown` in leaderboard.json: (cells compared, problems)."""
    compared, problems = 0, []
    fresh = page.css_first(f"#freshness-figure dd[data-scope={FRESH_SCOPE}]")
    figure = ((entry["breakdown"].get(FRESH_SCOPE) or {}).get("search") or {}).get(FRESH_METRIC)
    if fresh is None:
        problems.append("no freshness figure")
    else:  # a dash where the vendor has no fresh search row
        problems += figure_cell_problems(fresh, FRESH_METRIC, figure, f"{entry['vendor']} {FRESH_SCOPE}")
        compared += 1
    for scope, groups in entry["breakdown"].items():
        if not groups or scope == FRESH_SCOPE:
            continue
        table = page.css_first(f"table#breakdown-{scope}")
        if table is None:
            problems.append(f"no table for {scope}")
            continue
        rows = {tr.attributes["data-scope-value"]: tr for tr in table.css("tbody tr")}
        if set(rows) != set(groups):
            problems.append(f"{scope}: rows {sorted(rows)}, record {sorted(groups)}")
        for value, figs in groups.items():
            for td in rows[value].css("td[data-metric]") if value in rows else []:
                metric = td.attributes["data-metric"]
                problems += figure_cell_problems(
                    td, metric, figs.get(metric), f"{entry['vendor']} {scope}={value} {metric}"
                )
                compared += 1
    return compared, problems


# ##### WHAT IS PUBLISHED


def test_every_page_and_data_file_is_published(published_site):
    out, board = published_site.out, board_of(published_site)
    for name in (
        "index.html",
        "methodology.html",
        "exclusions.html",
        "errata.html",
        "limitations.html",
        "disclosures.html",
        "data.html",
        "queries/index.html",
        "leaderboard.json",
        "leaderboard.schema.json",
        "leaderboard.csv",
        "pairwise.csv",
        "public_split.jsonl",
        "public_row_scores.csv",
        "errata.json",
        "llms.txt",
        "style.css",
        "sort.js",
        "replies/tavily.html",
        "replies/tavily.md",
    ):
        assert (out / name).stat().st_size > 0, name
    for e in scored(board):
        assert (out / "vendors" / f"{e['vendor']}.html").exists()
        assert (out / "vendors" / f"{e['vendor']}.json").exists()
    for chart in ("pairwise", "cost_vs_accuracy", "overfit_gap", "hit_at_k_by_stratum"):
        assert (out / "charts" / f"{chart}.svg").read_text().lstrip().startswith("<?xml"), chart
    # the sentinel cycle ran through Dagster: the Kaplan–Meier chart is published, and no limitation
    # says time-to-retrievability is missing
    assert (out / "charts" / "ttr_km.svg").read_text().lstrip().startswith("<?xml")
    assert "no sentinel probe results yet" not in (out / "limitations.html").read_text()


def test_leaderboard_json_validates_against_its_published_schema(published_site):
    schema = json.loads((published_site.out / "leaderboard.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    board = board_of(published_site)
    validator.validate(board)
    # the schema holds the contract: a figure without n, or an exclusion without a reason, is rejected
    broken = copy.deepcopy(board)
    del scored(broken)[0]["metrics"]["correct_rate"]["n"]
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(board)
    next(e for e in broken["vendors"] if e["status"] == "excluded")["reason"] = ""
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(board)
    broken["mode"] = "prod"
    assert not validator.is_valid(broken)


def test_services_that_cannot_be_scored_are_published_with_their_reason_and_source(published_site):
    """The demo manifest's exclusions (issue 34: Google Programmable Search closed to new customers,
    Bing and Gemini grounding returning no ranked results, …) reach the page, exclusions.json and
    exclusions.csv, each with its reason code and the cited source its evidence names."""
    out = published_site.out
    demo = {e["vendor"]: e for e in yaml.safe_load(DEMO_MANIFEST.read_text())["excluded"]}
    assert {"google_programmable_search", "bing_grounding", "gemini_grounding"} <= set(demo)
    assert demo["google_programmable_search"]["reason_code"] == "closed_to_new_customers"
    assert {demo[v]["reason_code"] for v in ("bing_grounding", "gemini_grounding")} == {"no_ranked_results"}
    page = html(out / "exclusions.html")
    ledger = {
        e["vendor"]: e
        for e in json.loads((out / "exclusions.json").read_text())["exclusions"]
        if e["scope"] == "vendor"
    }
    rows = {
        r["vendor"]: r
        for r in csv.DictReader(io.StringIO((out / "exclusions.csv").read_text()))
        if r["scope"] == "vendor"
    }
    for vendor, e in demo.items():
        assert re.search(r"\b[a-z0-9.-]+\.(com|dev|ai|br|jp)/", e["evidence"]) or vendor == "google_ai_mode", vendor
        row = page.css_first(f"tr#{vendor}")
        assert row is not None and e["reason"] in row.text() and e["evidence"] in row.text(), vendor
        for published in (ledger[vendor], rows[vendor]):
            assert (published["reason_code"], published["reason"], published["evidence"]) == (
                e["reason_code"],
                e["reason"],
                e["evidence"],
            )


def test_excluded_vendors_errata_and_reply_are_shown(published_site):
    out, board = published_site.out, board_of(published_site)
    excluded = [e for e in board["vendors"] if e["status"] == "excluded"]
    page = html(out / "exclusions.html")
    for e in excluded:
        row = page.css_first(f"tr#{e['vendor']}")
        assert row is not None and e["reason"] in row.text()
    assert "price table corrected" in html(out / "errata.html").text()
    reply = html(out / "replies" / "tavily.html").css_first("pre#reply").text()
    assert "<b>kept verbatim</b>" in reply  # verbatim: shown as text, not interpreted as markup
    tavily = html(out / "vendors" / "tavily.html")
    assert tavily.css_first('a[href="../replies/tavily.html"]') is not None
    # the reply is linked from the vendor's leaderboard row, and published as the bytes filed
    index = html(out / "index.html")
    assert index.css_first('tr[data-vendor="tavily"] a[href="replies/tavily.html"]') is not None
    assert index.css_first('tr[data-vendor="exa"] a[href="replies/exa.html"]') is None
    filed = published_site.home / "data" / "snapshots" / published_site.snapshot / "replies" / "tavily.md"
    assert (out / "replies" / "tavily.md").read_bytes() == filed.read_bytes()
    assert html(out / "vendors" / "exa.html").css_first('a[href="../replies/exa.html"]') is None
    assert "simulated snapshot" in html(out / "disclosures.html").css_first("#coi").text()


# ##### SAME NUMBERS EVERYWHERE


def test_html_json_csv_and_dagster_metadata_carry_the_same_figures(published_site):
    out, board = published_site.out, board_of(published_site)
    entries = {e["vendor"]: e for e in scored(board)}
    assert set(entries) == set(published_site.vendors)

    # CSV: every headline metric, value, n and interval
    rows = {r["vendor"]: r for r in csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text()))}
    compared = 0
    for vendor, e in entries.items():
        assert int(rows[vendor]["position"]) == e["position"] and rows[vendor]["rank_letters"] == e["rank_letters"]
        assert (int(rows[vendor]["rank_best"]), int(rows[vendor]["rank_worst"])) == (
            e["rank_range"]["best"],
            e["rank_range"]["worst"],
        )
        for name in HEADLINE_METRICS:
            fig = e["metrics"].get(name) or {}
            for part, column in (("value", name), ("n", f"{name}_n"), ("low", f"{name}_low"), ("high", f"{name}_high")):
                cell = rows[vendor][column]
                assert same_number(fig.get(part), None if cell == "" else cell), (vendor, column)
                compared += 1
    assert compared >= len(entries) * 4 * 8

    # index.html: the sort key and the shown value, n and interval of every cell
    page = html(out / "index.html")
    for tr in page.css("#leaderboard tbody tr"):
        e = entries[tr.attributes["data-vendor"]]
        assert tr.css("td")[0].text(strip=True) == str(e["position"])
        assert tr.css("td")[1].text(strip=True) == e["rank_letters"]
        for td in tr.css("td[data-metric]"):
            metric = td.attributes["data-metric"]
            if metric not in e["metrics"]:
                continue
            fig = e["metrics"][metric]
            value = td.attributes["data-value"]
            assert same_number(fig["value"], None if value == "" else value), (e["vendor"], metric)
            shown = [s.text(strip=True) for s in td.css("span")]
            missing = "not reached" if metric in NOT_REACHED_METRICS else "—"
            assert shown[0] == (format_number(metric, fig["value"]) if fig["value"] is not None else missing)
            assert shown[1] == f"n={fig['n']}"
            if fig["low"] is not None:
                assert shown[2] == format_interval(metric, fig)
    assert len(page.css("#leaderboard tbody tr")) == len(entries)

    # the rank range: JSON, the leaderboard's Ranks column and the CSV
    for tr in page.css("#leaderboard tbody tr"):
        e = entries[tr.attributes["data-vendor"]]
        ranks = e["rank_range"]
        assert ranks["best"] <= e["position"] <= ranks["worst"]
        shown = str(ranks["best"]) if ranks["best"] == ranks["worst"] else f"{ranks['best']}–{ranks['worst']}"
        assert tr.css_first('td[data-metric="rank_range"]').text(strip=True) == shown
        assert (rows[e["vendor"]]["rank_best"], rows[e["vendor"]]["rank_worst"]) == (
            str(ranks["best"]),
            str(ranks["worst"]),
        )

    # CSV: each figure's own eligibility, and the response-class counts
    from bench_assets.fetch.classify import RESPONSE_CLASSES

    for vendor, e in entries.items():
        for name in HEADLINE_METRICS:
            verdict = e["metric_eligibility"].get(name) if name in e["metrics"] else None
            assert rows[vendor][f"{name}_headline_eligible"] == (
                "" if verdict is None else str(verdict["headline_eligible"])
            ), (vendor, name)
        counts = {c: int(rows[vendor][f"class_{c}"]) for c in RESPONSE_CLASSES}
        assert counts == {c: e["response_classes"].get(c, 0) for c in RESPONSE_CLASSES}, vendor
        assert sum(counts.values()) > 0

    # each vendor's page and JSON: every figure, every breakdown cell, every response class
    compared_cells = 0
    for vendor, e in entries.items():
        vendor_page = html(out / "vendors" / f"{vendor}.html")
        figure_rows = vendor_page.css("#all-figures tr[data-metric]")
        assert len(figure_rows) == len(e["metrics"])
        for tr in figure_rows:
            fig = e["metrics"][tr.attributes["data-metric"]]
            assert same_number(fig["value"], tr.css("td")[1].attributes["data-value"] or None)
            assert tr.css("td")[2].text(strip=True) == str(fig["n"])
            assert tr.css("td")[3].text(strip=True) == format_interval(tr.attributes["data-metric"], fig)
        for card in vendor_page.css("#key-figures .figure-card"):
            metric = card.attributes["data-metric"]
            assert figure_cell_problems(card, metric, e["metrics"][metric], f"{vendor} card {metric}") == []
        assert {"stratum", "task_type"} <= {s for s, g in e["breakdown"].items() if g}
        cells, problems = breakdown_problems(vendor_page, e)
        assert problems == [], problems
        compared_cells += cells
        shown_classes = {
            tr.attributes["data-class"]: int(tr.css("td")[1].text(strip=True))
            for tr in vendor_page.css("#response-classes tbody tr")
        }
        assert shown_classes == {c: n for c, n in e["response_classes"].items() if n}, vendor
        doc = json.loads((out / "vendors" / f"{vendor}.json").read_text())
        assert doc["entry"] == e and doc["snapshot_id"] == board["snapshot_id"]
    assert compared_cells >= len(entries) * 5 * len(publish_format.SCOPE_COLUMNS)

    # Dagster: the vendor_leaderboard materialization and the publication's preview
    meta = latest_metadata(published_site.instance, "vendor_leaderboard")
    for vendor, e in entries.items():
        assert same_number(meta[f"correct_rate/{vendor}"].value, e["metrics"]["correct_rate"]["value"])
    published_meta = latest_metadata(published_site.instance, "published_snapshot")
    for md in (meta["leaderboard"].value, published_meta["leaderboard"].value):
        table = {r["vendor"]: r for r in markdown_table(md)}
        assert set(table) == set(entries)
        for vendor, e in entries.items():
            cr, rank = e["metrics"]["correct_rate"], board["rank_metric"]
            assert (table[vendor]["#"], table[vendor]["letters"]) == (str(e["position"]), e["rank_letters"])
            assert table[vendor]["Correct"] == format_number("correct_rate", cr["value"])
            # the ranking figure with its n and interval
            assert table[vendor][publish_format.metric_label(rank)] == format_number(rank, e["metrics"][rank]["value"])
            assert table[vendor]["n"] == str(e["metrics"][rank]["n"])
            assert table[vendor]["95 % interval"] == format_interval(rank, e["metrics"][rank])
            for metric, column in (
                ("hit_at_1", "hit@1"),
                ("hit_at_10", "hit@10"),
                ("fidelity_mean", "Fidelity"),
                ("cost_per_correct_usd", "$ / correct"),
                ("overfit_gap", "Overfit gap"),
            ):
                value = (e["metrics"].get(metric) or {}).get("value")
                shown = "—" if value is None else format_number(metric, value)
                assert table[vendor][column] == shown, (vendor, metric)

    # agent-ready, from the agent_trials asset: the record's label verbatim in the leaderboard cell
    # and on the vendor page (one spelling), the reason beside a "no", the same in the CSV and in Dagster
    ready = {}
    for tr in page.css("#leaderboard tbody tr"):
        vendor = tr.attributes["data-vendor"]
        agent = entries[vendor]["agent_ready"]
        cell = tr.css_first('td[data-metric="agent_ready"]')
        assert cell.css_first(".agent-label").text() == agent["label"], vendor
        reason = cell.css_first(".agent-reason")
        assert (reason.text() if reason else None) == (agent["reason"] if agent["ready"] is False else None), vendor
        assert agent["method"] not in cell.text()  # the method's label, never its code
        evidence = html(out / "vendors" / f"{vendor}.html").css_first("#agent-evidence")
        assert evidence.css_first(".agent-label").text() == agent["label"]
        assert agent["method"] not in evidence.text()
        assert (rows[vendor]["agent_ready"], rows[vendor]["agent_ready_method"], rows[vendor]["agent_ready_date"]) == (
            str(agent["ready"]),
            agent["method"],
            agent["trial_date"],
        )
        ready[vendor] = agent["ready"]
    assert set(ready.values()) == {True, False}, ready  # the simulated world has vendors of both kinds
    trials_meta = latest_metadata(published_site.instance, "agent_trials")
    assert trials_meta["agent_ready"].value == sorted(v for v, r in ready.items() if r)
    trials_table = markdown_table(trials_meta["trials"].value)
    for vendor in entries:
        assert any(
            r["vendor"] == vendor and r["outcome"] == entries[vendor]["agent_ready"]["outcome"] for r in trials_table
        ), vendor

    # time-to-retrievability, from the sentinel probes: the Kaplan–Meier median in the JSON, the CSV
    # (above), the leaderboard cell (above) and the probe asset's materialization in Dagster
    probe_meta = latest_metadata(published_site.instance, "sentinel_probes")
    ttr_table = {r["vendor"]: r for r in markdown_table(probe_meta["time_to_retrievability"].value)}
    assert set(ttr_table) == set(entries)
    for vendor, e in entries.items():
        fig = e["metrics"]["ttr_median_hours"]
        assert fig["n"] == int(ttr_table[vendor]["sentinels"]) == published_site.sentinel_pages
        if fig["value"] is None:
            assert ttr_table[vendor]["median_h"] == "not reached"
        else:
            assert same_number(float(ttr_table[vendor]["median_h"]), fig["value"]), vendor
        for part, column in (("low", "low_h"), ("high", "high_h")):
            cell = ttr_table[vendor][column]
            assert same_number(fig[part], None if cell in ("", "nan", "None") else cell), (vendor, part)
        assert e["metrics"]["ttr_probes"]["value"] == int(ttr_table[vendor]["probes"])

    # llms.txt quotes the ranking figure with its n and interval
    llms = (out / "llms.txt").read_text()
    for e in entries.values():
        cr = e["metrics"]["correct_rate"]
        assert f"{cr['value']} (n={cr['n']}, 95 % interval {cr['low']} to {cr['high']})" in llms


def test_the_breakdown_comparison_fails_a_page_that_shows_the_wrong_figure(published_site, tmp_path):
    """The check above must catch a renderer that reads the wrong figure: here every breakdown cell
    is rendered from the group's hit@1, and the pages no longer match leaderboard.json."""
    board = board_of(published_site)
    mutated = copy.deepcopy(board)
    for e in scored(mutated):
        for groups in e["breakdown"].values():
            for figs in groups.values():
                if "hit_at_1" in figs:
                    for metric in list(figs):
                        figs[metric] = dict(figs["hit_at_1"])
    manifest = load_manifest(published_site.home / "data" / "snapshots" / published_site.snapshot / "manifest.yaml")
    SiteInputs(mutated, manifest, [], []).render(tmp_path / "site")
    for e in scored(board):
        cells, problems = breakdown_problems(html(tmp_path / "site" / "vendors" / f"{e['vendor']}.html"), e)
        assert cells > 0 and problems, e["vendor"]
        assert any(" correct_rate: " in p for p in problems) and not any(" hit_at_1: " in p for p in problems)


def test_the_freshness_figure_is_shown_where_a_vendor_has_fresh_rows_and_a_dash_elsewhere(published_site, tmp_path):
    """The demo's planted pages are dated months before any fetch, so no vendor has a fresh row
    there (every vendor page shows a dash, checked above); a vendor with fresh rows shows its hit@5
    with n and interval, and the check catches a page that does not."""
    board = board_of(published_site)
    assert board["freshness"]["scope"] == FRESH_SCOPE and board["freshness"]["metric"] == FRESH_METRIC
    mutated = copy.deepcopy(board)
    first, second = scored(mutated)[:2]
    iv = metrics.wilson_interval(2, 3)
    first["breakdown"][FRESH_SCOPE] = {
        "search": {FRESH_METRIC: {"value": iv.value, "n": 3, "low": iv.low, "high": iv.high}}
    }
    manifest = load_manifest(published_site.home / "data" / "snapshots" / published_site.snapshot / "manifest.yaml")
    SiteInputs(mutated, manifest, [], []).render(tmp_path / "site")
    page = html(tmp_path / "site" / "vendors" / f"{first['vendor']}.html")
    assert breakdown_problems(page, first)[1] == []
    assert "n=3" in page.css_first("#freshness-figure").text()
    assert breakdown_problems(page, scored(board)[0])[1]  # the published record has no such figure: caught
    other = html(tmp_path / "site" / "vendors" / f"{second['vendor']}.html")
    assert other.css_first("#freshness-figure .na").text() == "—"


def test_drilldown_verdicts_add_up_to_the_published_public_split_figures(published_site):
    """The per-row verdicts behind the drill-down pages give back the aggregate of the public split."""
    out, board = published_site.out, board_of(published_site)
    for e in scored(board):
        doc = json.loads((out / "vendors" / f"{e['vendor']}.json").read_text())
        counted = [r for r in doc["public_rows"] if r["response_class"] != "unsupported"]
        fig = e["breakdown"]["split"]["public"]["correct_rate"]
        assert len(counted) == fig["n"]
        assert sum(1 for r in counted if r["correct"]) / len(counted) == pytest.approx(fig["value"], abs=1e-6)
    scores = list(csv.DictReader(io.StringIO((out / "public_row_scores.csv").read_text())))
    assert len(scores) == len(published_site.vendors) * sum(1 for _ in (out / "queries").glob("*-*.html"))


# ##### THE PER-QUERY DRILL-DOWN AND THE HOLDOUT


def test_only_public_rows_are_drilled_down_and_nothing_of_the_holdout_is_published(published_site):
    out = published_site.out
    public = [json.loads(line) for line in (out / "public_split.jsonl").read_text().splitlines()]
    pages = {p.stem for p in (out / "queries").glob("*.html")} - {"index"}
    assert pages == {r["id"] for r in public}
    holdout = [
        json.loads(line)
        for line in (published_site.home / "data" / "private" / "holdout" / f"{published_site.snapshot}.jsonl")
        .read_text()
        .splitlines()
    ]
    assert holdout
    from bench_assets.golden.rows import GoldenRow
    from bench_assets.golden.verify import row_urls

    needles = [
        {
            "row_id": r["id"],
            "request_text": GoldenRow.model_validate(r).request_text,
            "golden_urls": row_urls(GoldenRow.model_validate(r)),
        }
        for r in holdout
    ]
    assert LeakGuard(needles).scan(out) == []
    # results that are holdout pages were withheld, not dropped: their rank is still shown
    withheld = sum(len(html(p).css("li.withheld")) for p in (out / "queries").glob("*-*.html"))
    meta = latest_metadata(published_site.instance, "published_snapshot")
    assert withheld == meta["results_withheld_as_holdout"].value > 0
    index = html(out / "queries" / "index.html")
    assert len(index.css("#queries tbody tr")) == len(public)


def test_a_reply_quoting_a_holdout_query_stops_publication(published_site, simulator):
    """A vendor's reply is published verbatim, so one that quotes a holdout query must not be."""
    home, snapshot = published_site.home, published_site.snapshot
    holdout = json.loads((home / "data" / "private" / "holdout" / f"{snapshot}.jsonl").read_text().splitlines()[0])
    quoted = holdout["task"].get("query") or holdout["task"].get("question") or holdout["task"]["url"]
    reply = home / "data" / "snapshots" / snapshot / "replies" / "exa.md"
    before = (published_site.out / "index.html").read_bytes()
    reply.write_text(f"Our result for '{quoted}' was scored wrongly.\n")
    try:
        result = materialize(
            published_site.instance, home, simulator.base_url, RESULT_STAGES[1:], snapshot, raise_on_error=False
        )
    finally:
        reply.unlink()
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "holdout leak" in failure.event_specific_data.error.message
    # the leak guard's check fails for the snapshot's partition, with the guard's counts (no row named)
    [check] = check_evaluations(result, "published_snapshot")
    assert (check.check_name, check.passed, check.partition) == ("no_holdout_in_published_files", False, snapshot)
    assert "holdout leak" in check.description and "replies/exa.md" in check.metadata["leaks"].value
    assert holdout["id"] not in check.description + check.metadata["leaks"].value
    assert not (published_site.out / "replies" / "exa.md").exists()
    assert (published_site.out / "index.html").read_bytes() == before  # the published snapshot is untouched


def test_the_leak_guard_withholds_a_holdout_page_in_any_spelling():
    """What decides whether a returned result may be shown on a row's page (`split.leaks.LeakGuard`)."""
    guard = LeakGuard(
        [
            {
                "row_id": "news-007-s",
                "request_text": "Quarterly flood report Velmora",
                "golden_urls": ["https://gov.velmora.test/reports/flood-q2"],
            }
        ]
    )
    # the substring scan would miss these spellings; the normalized comparison does not
    assert guard.reveals(url="https://www.gov.velmora.test/reports/flood-q2/?utm_source=x")
    assert guard.reveals(url="HTTP://GOV.velmora.test/reports/flood-q2#top")
    assert guard.reveals("see the Quarterly flood report Velmora", url="https://other.test/a")
    assert not guard.reveals("an unrelated page", url="https://gov.velmora.test/reports/flood-q3")
    assert not LeakGuard([]).reveals("anything", url="https://gov.velmora.test/reports/flood-q2")


def test_drilldown_shows_how_each_row_was_scored(published_site):
    out = published_site.out
    extract = next(p for p in sorted((out / "queries").glob("*-x.html")))
    page = html(extract)
    exa = page.css_first("section#exa")
    assert exa is not None and exa.css_first("table.fields") is not None
    brave = page.css_first("section#brave")
    assert "no extraction endpoint" in brave.text()  # unsupported: left out of the denominator
    search = html(next(p for p in sorted((out / "queries").glob("*-s.html"))))
    golden = search.css("span.tag-golden")
    assert golden, "a search row's golden URL is marked where a vendor returned it"
    answer = html(next(p for p in sorted((out / "queries").glob("*-a.html"))))
    assert answer.css_first("#verdicts") is not None
    # why a vendor missed a row: on the row's page, as public_row_scores.csv has it, and counted on its page
    rows = list(csv.DictReader(io.StringIO((out / "public_row_scores.csv").read_text())))
    missed = [r for r in rows if r["correct"] in ("False", "false") and r["miss_reason"]]
    assert missed, "the demo has public rows a vendor did not get right"
    assert all(r["miss_reason"] for r in rows if r["correct"] in ("False", "false")), "every miss has a reason"
    assert not any(r["miss_reason"] for r in rows if r["correct"] in ("True", "true"))
    for r in missed[:: max(1, len(missed) // 12)]:
        page = html(out / "queries" / f"{r['row_id']}.html")
        shown = page.css_first(f"section#{r['vendor']} p.miss-reason")
        assert shown is not None and shown.attributes["data-miss-reason"] == r["miss_reason"], r
        assert publish_format.miss_reason_label(r["miss_reason"]) in shown.text(), r
        cell = page.css_first(f"#verdicts tr[data-vendor={r['vendor']}] span.miss-reason")
        assert cell is not None and cell.attributes["data-miss-reason"] == r["miss_reason"]
    for entry in scored(board_of(published_site)):
        page = html(out / "vendors" / f"{entry['vendor']}.html")
        counts = {
            tr.attributes["data-miss-reason"]: int(tr.css("td")[2].text(strip=True))
            for tr in page.css("#miss-reasons-table tbody tr")
        }
        assert counts == entry["miss_reasons"], entry["vendor"]
        public = [r for r in missed if r["vendor"] == entry["vendor"]]
        assert all(counts.get(r["miss_reason"], 0) >= 1 for r in public)


def test_a_stored_verdict_that_is_not_what_the_archive_scores_to_stops_publication(published_site, simulator):
    """Every row's page is built from the archive as scoring reads it (`publish.build`), beside the
    figures `vendor_leaderboard` aggregated from the stored verdicts: a stored verdict that the
    archive no longer scores to (a vendor scored by other code, or a verdict edited) stops the
    publication, naming the vendor, and the published site is left as it was."""
    from bench_assets_tests.helpers import warehouse_of

    home, snapshot = published_site.home, published_site.snapshot
    warehouse = warehouse_of(home)
    where = "snapshot_id = ? AND vendor = 'exa' AND row_id = (SELECT min(row_id) FROM row_scores WHERE snapshot_id = ? AND vendor = 'exa')"
    before = (published_site.out / "index.html").read_bytes()
    with warehouse.connect() as con:
        con.execute(f"UPDATE row_scores SET attempts = attempts + 7 WHERE {where}", [snapshot, snapshot])
    try:
        result = materialize(
            published_site.instance, home, simulator.base_url, RESULT_STAGES[1:], snapshot, raise_on_error=False
        )
    finally:
        with warehouse.connect() as con:
            con.execute(f"UPDATE row_scores SET attempts = attempts - 7 WHERE {where}", [snapshot, snapshot])
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "exa (1 rows)" in failure.event_specific_data.error.message
    assert (published_site.out / "index.html").read_bytes() == before


# ##### OFFLINE, LINKS, METHODOLOGY


# What a page loads by itself (as opposed to a link a reader may follow).
ASSET_SELECTORS = {
    "link[href]": "href",
    "script[src]": "src",
    "img[src]": "src",
    "img[srcset]": "srcset",
    "source[src]": "src",
    "source[srcset]": "srcset",
    "iframe[src]": "src",
    "embed[src]": "src",
    "object[data]": "data",
    "video[poster]": "poster",
    "audio[src]": "src",
    "video[src]": "src",
    "image[href]": "href",
    "use[href]": "href",
}


def is_local(ref: str) -> bool:
    """A reference that stays on the machine: relative, or a data: URI."""
    ref = ref.strip()
    return ref.startswith("data:") or not (re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", ref) or ref.startswith("//"))


def site_links(out: Path) -> dict[str, list[str]]:
    """Every page's and picture's references, sorted by kind: `remote_assets` (anything a page loads
    from off the machine: stylesheets, scripts, images, fonts, frames, CSS url()), `broken` internal
    links, `external` links a reader may follow, and `unsafe` links (javascript:, data: ...)."""
    found: dict[str, list[str]] = {"remote_assets": [], "broken": [], "external": [], "unsafe": []}
    for path in sorted(out.rglob("*.html")) + sorted(out.rglob("*.svg")):
        text = path.read_text(encoding="utf-8")
        tree = HTMLParser(text)
        where = path.relative_to(out).as_posix()
        for selector, attr in ASSET_SELECTORS.items():
            for node in tree.css(selector):
                value = node.attributes.get(attr) or ""
                refs = [r.strip().split(" ")[0] for r in value.split(",")] if attr == "srcset" else [value]
                found["remote_assets"] += [f"{where}: {selector} {r}" for r in refs if not is_local(r)]
        for node in tree.css("[style], style"):
            css = node.attributes.get("style") or node.text()
            found["remote_assets"] += [
                f"{where}: url({u})" for u in re.findall(r"url\(['\"]?([^)'\"]+)", css) if not is_local(u)
            ]
        found["remote_assets"] += [
            f"{where}: xlink {u}" for u in re.findall(r'xlink:href="([^"]+)"', text) if not is_local(u)
        ]
        for node in tree.css("a[href]"):
            ref = node.attributes["href"]
            if is_local(ref):
                target = ref.split("#")[0].split("?")[0]  # a row listing's filter is in its query
                if target and not (path.parent / target).resolve().exists():
                    found["broken"].append(f"{where} -> {ref}")
            elif ref.startswith(("https://", "http://")):
                found["external"].append(f"{where} -> {ref}")
                if "noopener" not in (node.attributes.get("rel") or ""):
                    found["unsafe"].append(f"{where} -> {ref} (no rel=noopener)")
            else:
                found["unsafe"].append(f"{where} -> {ref}")
    for ref in re.findall(r"\]\(([^)]+)\)", (out / "llms.txt").read_text()):
        if not (out / ref).exists():
            found["broken"].append(f"llms.txt -> {ref}")
    for css in out.rglob("*.css"):
        found["remote_assets"] += [
            f"{css.name}: url({u})" for u in re.findall(r"url\(['\"]?([^)'\"]+)", css.read_text()) if not is_local(u)
        ]
    return found


def test_site_works_offline_and_every_internal_link_resolves(published_site):
    out = published_site.out
    assert len(list(out.rglob("*.html"))) > 20
    found = site_links(out)
    assert found["remote_assets"] == [] and found["broken"] == [] and found["unsafe"] == [], found


def test_links_out_are_citations_but_nothing_loads_from_off_the_machine(published_site, tmp_path):
    """Evidence may cite a page elsewhere (a vendor's documentation of an agent-ready route): a
    reader may follow such a link, but no page or picture loads anything from off the machine, and
    a link that is not plain http(s) is shown as text, never as a link."""
    board = board_of(published_site)
    exa, other = scored(board)[:2]
    exa["agent_ready"] = {
        "ready": True,
        "method": "device_code",
        "trial_date": "2026-06-02",
        "label": "yes: device code, 2026-06-02",
        "evidence": {
            "trial_id": "t-1",
            "recorded_by": "harness",
            "mode": "live",
            "link": "https://docs.example-vendor.test/agents/device-code",
            "steps": [],
        },
        "other_routes": [
            {
                "method": "x402",
                "outcome": "documented",
                "recorded_by": "hand",
                "mode": "live",
                "trial_date": "2026-06-02",
                "reason": "pay per call",
                "link": "https://exa.ai/docs/x402",
            }
        ],
    }
    other["agent_ready"] = {
        "ready": False,
        "method": "manual",
        "trial_date": "2026-06-02",
        "label": "no: manual, 2026-06-02",
        "other_routes": [
            {
                "method": "keyless",
                "outcome": "login_required",
                "recorded_by": "hand",
                "mode": "live",
                "trial_date": "2026-06-02",
                "reason": "sign in",
                "link": "javascript:alert(1)",
            }
        ],
    }
    manifest = load_manifest(published_site.home / "data" / "snapshots" / published_site.snapshot / "manifest.yaml")
    SiteInputs(board, manifest, [], []).render(tmp_path / "site")
    write_quarters_index(tmp_path)  # a published folder sits beside the index of quarters its pages link
    found = site_links(tmp_path / "site")
    assert sorted(found["external"]) == sorted(
        [
            f"vendors/{exa['vendor']}.html -> https://docs.example-vendor.test/agents/device-code",
            f"vendors/{exa['vendor']}.html -> https://exa.ai/docs/x402",
        ]
        # the methodology cites where each registry documents the URL forms its identity rule reads
        + [
            f"methodology.html -> {c['url']}"
            for r in metrics.identity_rules()["registries"]
            for c in r["citations"]
            if publish_format.external_href(c["url"])
        ]
    )
    assert found["remote_assets"] == [] and found["broken"] == [] and found["unsafe"] == [], found
    page = (tmp_path / "site" / "vendors" / f"{other['vendor']}.html").read_text()
    assert "javascript:alert(1)" in page and 'href="javascript:' not in page  # shown as text only
    # the checker itself: a stylesheet from a CDN, a remote image or font, a javascript: link are all caught
    index = tmp_path / "site" / "index.html"
    index.write_text(
        index.read_text()
        .replace(
            "</head>",
            '<link rel="stylesheet" href="https://cdn.example.test/x.css">'
            "<style>@font-face { src: url(https://fonts.example.test/f.woff2) }</style></head>",
        )
        .replace("</main>", '<img src="//img.example.test/p.png"><a href="javascript:void(0)">x</a></main>')
    )
    found = site_links(tmp_path / "site")
    assert len(found["remote_assets"]) == 3 and found["unsafe"] == ["index.html -> javascript:void(0)"], found


def test_methodology_is_generated_from_the_code(published_site, tmp_path, monkeypatch):
    out = published_site.out
    page = html(out / "methodology.html")
    text = page.text()
    for name in publish_methodology.DEFINITIONS:
        block = page.css_first(f"div#{name}")
        assert block is not None, name
        func = getattr(metrics, name)
        first_line = inspect.cleandoc(func.__doc__).splitlines()[0]
        first_line = re.sub(r":\w+:`~?([^`]+)`", r"\1", re.sub(r"``([^`]+)``", r"\1", first_line))
        assert " ".join(first_line.split()) in " ".join(block.text().split()), name
        source = f"{Path(inspect.getsourcefile(func)).relative_to(REPO).as_posix()}:{inspect.getsourcelines(func)[1]}"
        assert block.css_first(".src").text() == source
    manifest = load_manifest(published_site.home / "data" / "snapshots" / published_site.snapshot / "manifest.yaml")
    weights = {
        tr.attributes["data-field"]: tr.css("td")[1].text(strip=True)
        for tr in page.css("#fidelity-weights-table tr[data-field]")
    }
    assert weights == {k: str(v) for k, v in manifest.fidelity_weights.items()}
    assert str(metrics.DEFAULT_CENSOR_AT_HOURS) in text and str(metrics.CORRECT_THRESHOLD) in text
    from bench_assets.fetch.classify import RESPONSE_CLASSES

    classes = {
        tr.css("td")[0].text(strip=True): tr.css("td")[1].text(strip=True)
        for tr in page.css("#response-classes-table tbody tr")
    }
    assert list(classes) == list(RESPONSE_CLASSES) and all(classes.values())
    # the identity rules hit@k applied, versioned, as leaderboard.json carries them
    rules = metrics.identity_rules()
    assert board_of(published_site)["identity_rules"] == json.loads(json.dumps(rules))
    assert page.css_first("#identity-rules-version").text() == rules["version"]
    shown = {tr.attributes["data-registry"]: tr for tr in page.css("#identity-rules-table tbody tr")}
    assert list(shown) == [r["registry"] for r in rules["registries"]]
    for r in rules["registries"]:
        forms = [c.text() for c in shown[r["registry"]].css("td")[2].css("code")]
        assert forms == r["url_forms"], r["registry"]
    from bench_assets.score.miss_reasons import MISS_REASONS

    assert [tr.attributes["data-miss-reason"] for tr in page.css("#miss-reasons-table tbody tr")] == list(MISS_REASONS)
    # the eligibility thresholds are stated as the rules use them
    from bench_assets.aggregate import eligibility

    rules = " ".join(page.css_first("#eligibility + div").text().split())
    assert f"n ≥ {eligibility.AGGREGATE_MIN_N} behind an aggregate claim" in rules
    assert f"n ≥ {eligibility.CHART_MIN_N} behind a per-stratum figure" in rules
    # change a constant in the code: the page follows, because it is read, not copied
    monkeypatch.setattr(metrics, "CORRECT_THRESHOLD", 0.95)
    monkeypatch.setattr(eligibility, "AGGREGATE_MIN_N", 12)
    monkeypatch.setattr(eligibility, "CHART_MIN_N", 25)
    SiteInputs(board_of(published_site), manifest, [], []).render(tmp_path / "site")
    changed = html(tmp_path / "site" / "methodology.html")
    rows = {tr.css("td")[0].text(): tr.css("td")[1].text() for tr in changed.css("#constants tbody tr")}
    assert rows["Fidelity: correct at or above"] == "0.95"
    assert rows["Minimum n behind a headline aggregate"] == "12"
    assert rows["Minimum n behind a headline per-stratum figure"] == "25"
    rules = " ".join(changed.css_first("#eligibility + div").text().split())
    assert "n ≥ 12 behind an aggregate claim" in rules and "n ≥ 25 behind a per-stratum figure" in rules
    assert "10" not in rules and "20" not in rules  # no threshold is left in the prose


def test_time_to_retrievability_and_agent_ready_edge_cases_render(published_site, tmp_path):
    """Cases the session's snapshot need not produce (the pipeline's own TTR and agent-ready are
    checked in the same-numbers test): a median not reached, an interval open above, a record
    given with only its label."""
    board = board_of(published_site)
    entries = scored(board)
    entries[0]["metrics"]["ttr_median_hours"] = {"value": 30.5, "n": 12, "low": 18.0, "high": None}
    entries[1]["metrics"]["ttr_median_hours"] = {"value": None, "n": 12, "low": 300.0, "high": None}
    entries[0]["agent_ready"] = {
        "ready": True,
        "method": "device_code",
        "trial_date": "2026-06-02",
        "label": "yes: device code, 2026-06-02",
    }
    entries[1]["agent_ready"] = False  # a bare verdict: shown, with nothing made up around it
    manifest = load_manifest(published_site.home / "data" / "snapshots" / published_site.snapshot / "manifest.yaml")
    observations = {
        entries[0]["vendor"]: ([6.0, 12.0, 30.0, 48.0, 60.0], [True, True, True, False, True]),
        entries[1]["vendor"]: ([720.0, 700.0, 24.0], [False, False, True]),
    }
    SiteInputs(board, manifest, [], [], ttr_observations=observations).render(tmp_path / "site")
    index = html(tmp_path / "site" / "index.html")
    cells = {
        tr.attributes["data-vendor"]: tr.css_first('td[data-metric="ttr_median_hours"]')
        for tr in index.css("#leaderboard tbody tr")
    }
    assert cells[entries[0]["vendor"]].css_first("span.v").text() == "30.5 h"
    assert cells[entries[0]["vendor"]].css("span.ci")[1].text() == "[18.0 h, not reached]"
    assert cells[entries[1]["vendor"]].css_first("span.v").text() == "not reached"
    first = entries[0]["vendor"]
    agent_cell = index.css_first(f'tr[data-vendor="{first}"] td[data-metric="agent_ready"]')
    assert agent_cell.css_first(".agent-label").text() == "yes: device code, 2026-06-02"
    assert agent_cell.css_first(".tag-yes").text() == "yes"
    bare = index.css_first(f'tr[data-vendor="{entries[1]["vendor"]}"] td[data-metric="agent_ready"]')
    assert bare.css_first(".agent-label").text() == "no" and bare.css_first(".agent-reason") is None
    assert (tmp_path / "site" / "charts" / "ttr_km.svg").exists()
    assert index.css_first('img[src="charts/ttr_km.svg"]') is not None
    vendor = html(tmp_path / "site" / "vendors" / f"{entries[0]['vendor']}.html")
    assert "agent-ready" in vendor.css_first("#agent-ready ~ p").text()


# ##### CHARTS


def test_charts_are_reproducible_svg_with_their_labels_as_text(published_site):
    board = board_of(published_site)
    charts_dir = published_site.out / "charts"
    # the same record gives the same bytes: no date, fixed ids
    for name, build in (("overfit_gap", charts.overfit_gap_figure), ("cost_vs_accuracy", charts.cost_accuracy_figure)):
        published = (charts_dir / f"{name}.svg").read_bytes()
        assert charts.render(build(board)) == published, f"{name} is not reproducible"
        assert b"<dc:date>" not in published
    # every vendor is named in the pictures, as text (searchable, in the page's font)
    for name in ("overfit_gap", "cost_vs_accuracy", "hit_at_k_by_stratum"):
        texts = {t.text(strip=True) for t in HTMLParser((charts_dir / f"{name}.svg").read_text()).css("text")}
        assert {e["vendor"] for e in scored(board)} <= texts, name


def test_pareto_front():
    points = [
        ("cheap", 0.001, 0.70),
        ("best", 0.010, 0.95),
        ("dominated", 0.012, 0.90),
        ("middle", 0.004, 0.85),
        ("tie_cost", 0.004, 0.80),
    ]
    assert charts.pareto_front(points) == ["cheap", "middle", "best"]
    assert charts.pareto_front([("only", 1.0, 0.5)]) == ["only"]


# ##### THE DAGSTER UI


def test_publication_materialization_carries_previews_for_the_ui(published_site):
    meta = latest_metadata(published_site.instance, "published_snapshot")
    board = board_of(published_site)
    assert meta["dagster/row_count"].value == sum(1 for p in published_site.out.rglob("*") if p.is_file())
    assert meta["query_pages"].value == meta["public_rows"].value > 0
    assert meta["holdout_leaks"].value == 0
    classes = {r[""]: r for r in markdown_table(meta["failure_classes"].value)}
    for e in scored(board):
        for cls, count in e["response_classes"].items():
            if count:
                assert classes[e["vendor"]][cls] == str(count)
    previews = {k: v.value for k, v in meta.items() if k.startswith("chart_")}
    assert {"chart_cost_vs_accuracy", "chart_overfit_gap", "chart_hit_at_k_by_stratum", "chart_ttr_km"} <= set(previews)
    assert set(previews) == {f"chart_{p.stem}" for p in (published_site.out / "charts").glob("*.svg")}
    for md in previews.values():
        encoded = re.search(r"!\[(\w+)\]\(data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\)", md)
        assert encoded, md[:200]
        published = (published_site.out / "charts" / f"{encoded.group(1)}.svg").read_bytes()
        assert base64.b64decode(encoded.group(2)) == published


@pytest.fixture(scope="module")
def site_inputs(published_site) -> SiteInputs:
    """What a rescore of the session's snapshot assembles for the site (`SiteInputs`), taken from
    one rescore and rendered again by the tests below, each its own way."""
    captured: list[SiteInputs] = []
    render = SiteInputs.render
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            SiteInputs, "render", lambda self, out, *track: captured.append(self) or render(self, out, *track)
        )
        rescore_snapshot(published_site.home, published_site.snapshot)
    return captured[0]


def test_long_listings_are_split_into_pages_that_list_every_row_once(
    published_site, site_inputs, tmp_path, monkeypatch
):
    """A snapshot of thousands of public rows lists them over pages of `ROWS_PER_PAGE` (the queries
    and each vendor's rows): rendered again with pages of 7 rows, every page lists at most 7, the
    pages together list every public row exactly once, and every link between them resolves."""
    render = SiteInputs.render
    monkeypatch.setattr(publish_site, "ROWS_PER_PAGE", 7)
    out = tmp_path / "paged"
    render(site_inputs, out)
    write_quarters_index(tmp_path)  # beside the index of quarters its pages link, as published
    public = {q["row_id"] for q in site_inputs.queries}
    assert len(public) > 7

    def listed(pages: list[Path], selector: str) -> list[str]:
        ids = []
        for page in pages:
            rows = html(page).css(selector)
            assert 0 < len(rows) <= 7, page
            ids += [a.text(strip=True) for a in rows]
        return ids

    query_pages = sorted(out.glob("queries/index*.html"), key=lambda p: (len(p.name), p.name))
    assert len(query_pages) == -(-len(public) // 7)
    assert sorted(listed(query_pages, "#queries tbody tr td:first-child a")) == sorted(public)
    for vendor in published_site.vendors:
        pages = [
            out / "vendors" / f"{vendor}.html",
            *sorted(out.glob(f"vendors/{vendor}-*.html"), key=lambda p: (len(p.name), p.name)),
        ]
        assert sorted(listed(pages, "table.sortable tbody tr td:first-child a[href^='../queries/']")) == sorted(public)
        assert "Rows 1–7 of" in html(pages[0]).css_first("nav.pager").text()
    found = site_links(out)
    assert found["broken"] == [], found["broken"]
    # the published site, at the real page size, has no pager: its listings fit on one page
    assert not html(published_site.out / "queries" / "index.html").css("nav.pager")


def test_a_site_rendered_side_by_side_is_the_site_rendered_in_one_process(site_inputs, tmp_path, monkeypatch):
    """The site's parts (the pages without rows, the listings, the rows' pages a chunk at a time,
    each vendor's pages) are rendered side by side in processes of their own (`publish.site`,
    `runtime.in_processes`): the files are those one process renders, byte for byte, and a
    rescore's comparison (`SiteComparison`) sees every file either way."""
    render = SiteInputs.render
    inputs = copy.copy(site_inputs)
    inputs.queries = list(inputs.queries)  # a list is cut anywhere: chunks of 10 rows here
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    one = tmp_path / "one"
    render(inputs, one)
    monkeypatch.setenv(workers.WORKERS_ENV, "2")
    monkeypatch.setattr(publish_site, "CHUNK_ROWS", 10)
    assert len(inputs.queries) > 3 * 10
    two = tmp_path / "two"
    folder = render(inputs, two)

    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    assert files(two) == files(one)
    assert sorted(p.relative_to(two).as_posix() for p in folder.written) == sorted(files(one))
    comparison = SiteComparison(one, lambda rel: False)
    render(inputs, comparison)
    assert sorted(c.rel for c in comparison.checks) == sorted(files(one))
    assert all(c.same for c in comparison.checks)


def test_materialize_all_sends_no_review_packet_and_freezes_nothing(published_site, simulator):
    """Run without config, as "Materialize all" runs it, review_packets sends nothing, freezes
    nothing and says how to; only `freeze: true` (bench review send, the launchpad) sends them."""
    home, snapshot = published_site.home, published_site.snapshot
    result = materialize(published_site.instance, home, simulator.base_url, ("review_packets",), snapshot)
    assert result.success
    assert not result.get_asset_materialization_events()
    said = [e.user_message for e in published_site.instance.all_logs(result.run_id) if e.user_message]
    assert any("nothing sent" in m and "freeze: true" in m for m in said), said
    assert warehouse_rows(home, "SELECT status FROM snapshots WHERE snapshot_id = ?", [snapshot]) == [("draft",)]
    assert warehouse_rows(home, "SELECT count(*) FROM review_packets WHERE snapshot_id = ?", [snapshot]) == [(0,)]
    assert not (home / "data" / "private" / "review" / snapshot).exists()
