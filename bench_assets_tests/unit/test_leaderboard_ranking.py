"""The leaderboard's ranking basis, paired comparisons and flat rows, built from hand-made row scores.

A vendor without an extraction endpoint is scored on fewer rows than one with it; ranking by the
overall correct rate would compare different row sets. These tests build the record the way the
pipeline does (`vendor_metrics` → `build_leaderboard`) and check what a reader relies on.
"""

from __future__ import annotations

import csv
import io
import json

import jsonschema
import pandas as pd
import pytest
import yaml

from bench_assets.aggregate.comparisons import vendor_comparisons
from bench_assets.aggregate.figures import METRIC_COLUMNS, vendor_metrics
from bench_assets.aggregate.leaderboard import BASE_METRIC, HEADLINE_METRICS, RANK_METRIC, build_leaderboard
from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.manifest import parse_manifest
from bench_assets.metrics import (
    PairedCounts,
    compare_pairs,
    ranking_from_comparisons,
)
from bench_assets.publish.files import SCHEMA_FILE, leaderboard_csv, pairwise_csv
from bench_assets.publish.format import leaderboard_markdown
from bench_assets.publish.format import metric_label as publish_label
from bench_assets.publish.site import SiteInputs
from bench_assets.score.partition import SCORE_COLUMNS, SCORE_DTYPES
from bench_assets_tests.helpers import DEMO_MANIFEST

SNAP = "web_search-2026-q3"


def manifest(vendors: list[str], mode: str = "simulated"):
    data = yaml.safe_load(DEMO_MANIFEST.read_text())
    data["vendors"] = {v: data["vendors"][v] for v in vendors}
    data["mode"] = mode
    return parse_manifest(yaml.safe_dump(data), "manifest.yaml")


def rows(
    vendor: str,
    task_type: str,
    n: int,
    correct: int,
    *,
    supported: bool = True,
    failures: str = "ok",
    stratum: str = "finance",
    correct_rows: range | None = None,
) -> list[dict]:
    """n rows of one task type, the first `correct` of them correct (or those in `correct_rows`);
    the others answered `failures`."""
    out = []
    for i in range(n):
        right = i in correct_rows if correct_rows is not None else i < correct
        cls = "unsupported" if not supported else ("ok" if right else failures)
        row_id = f"{task_type}-{i}" if stratum == "finance" else f"{task_type}-{stratum}-{i}"
        out.append(
            {
                "snapshot_id": SNAP,
                "vendor": vendor,
                "row_id": row_id,
                "split": "public",
                "stratum": stratum,
                "cohort": "2026-q3",
                "task_type": task_type,
                "response_class": cls,
                "n_results": 5 if cls == "ok" else 0,
                "first_hit_rank": 1 if task_type == "search" and supported and right else None,
                "fidelity_label": None,
                "attempts": int(supported),
                "request_id": None,
                "error_detail": None,
                "correct": None if not supported else right,
                **{f"hit_at_{k}": right if task_type == "search" and supported else None for k in (1, 3, 5, 10)},
                "fidelity": (0.95 if right else 0.3) if task_type == "extract" and supported else None,
                "billed_usd": 0.002 if supported else 0.0,
                "latency_ms": 100.0 + i if supported else None,
            }
        )
    return out


def board_of(vendors: list[str], scores: list[dict]) -> dict:
    frame = pd.DataFrame(scores, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
    return build_leaderboard(
        manifest(vendors), vendor_metrics(SNAP, frame), set(vendors), comparisons=vendor_comparisons(SNAP, frame)
    )


def ranges_shown(board: dict) -> dict[str, tuple[int, int]]:
    return {v: (e["rank_range"]["best"], e["rank_range"]["worst"]) for v, e in scored(board).items()}


def scored(board: dict) -> dict[str, dict]:
    return {e["vendor"]: e for e in board["vendors"] if e["status"] == "scored"}


@pytest.fixture(scope="module")
def tavily_and_brave() -> dict:
    # tavily: strong on search and answer, weak on extract (a high fidelity threshold);
    # brave: no extraction endpoint, weaker than tavily on the rows both serve.
    scores = (
        rows("tavily", "search", 40, 30)
        + rows("tavily", "answer", 40, 26)
        + rows("tavily", "extract", 40, 4, failures="ok")
        + rows("brave", "search", 40, 26, failures="empty")
        + rows("brave", "answer", 40, 22, failures="timeout")
        + rows("brave", "extract", 40, 0, supported=False)
    )
    return board_of(["brave", "tavily"], scores)


def test_positions_use_the_rows_every_vendor_supports(tavily_and_brave):
    board = tavily_and_brave
    e = scored(board)
    # overall: tavily 60/120 = 0.50 < brave 48/80 = 0.60, but tavily's rate carries 40 extract rows brave has not
    assert e["tavily"]["metrics"][BASE_METRIC]["value"] == pytest.approx(0.5)
    assert e["brave"]["metrics"][BASE_METRIC]["value"] == pytest.approx(0.6)
    # on the shared rows (search + answer): tavily 56/80 = 0.70 beats brave 48/80 = 0.60
    assert e["tavily"]["metrics"][RANK_METRIC] == {**e["tavily"]["metrics"][RANK_METRIC], "value": 0.7, "n": 80}
    assert e["brave"]["metrics"][RANK_METRIC]["value"] == pytest.approx(0.6)
    assert (e["tavily"]["position"], e["brave"]["position"]) == (1, 2)
    assert board["rank_metric"] == RANK_METRIC
    assert board["ranking"]["metric"] == RANK_METRIC and board["ranking"]["base_metric"] == BASE_METRIC
    assert board["ranking"]["task_types"] == ["answer", "search"]
    assert board["ranking"]["task_types_left_out"] == ["extract"]
    assert "answer, search" in board["ranking"]["note"] and "extract" in board["ranking"]["note"]


def test_the_record_validates_against_the_published_schema(tavily_and_brave):
    schema = json.loads(SCHEMA_FILE.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    board = json.loads(json.dumps(tavily_and_brave))
    validator.validate(board)
    del board["ranking"]["task_types"]
    assert not validator.is_valid(board)


def chain() -> dict:
    """exa 0.80, tavily 0.70, brave 0.60 on the same 150 search rows, each right on its first k rows
    (so the better vendor is right wherever the worse one is), and serper 0.10 on 400 rows."""
    scores = (
        rows("exa", "search", 150, 120)
        + rows("tavily", "search", 150, 105)
        + rows("brave", "search", 150, 90)
        + rows("serper", "search", 400, 40)
    )
    return board_of(["brave", "exa", "serper", "tavily"], scores)


def test_paired_tests_tell_apart_vendors_whose_intervals_overlap():
    board = chain()
    e = scored(board)
    figs = {v: e[v]["metrics"][RANK_METRIC] for v in e}
    # the unpaired 95 % intervals of neighbours overlap (the old rule put them in one group) ...
    assert figs["exa"]["low"] <= figs["tavily"]["high"] and figs["tavily"]["low"] <= figs["brave"]["high"]
    # ... but on the same rows exa is right wherever tavily is, and 15 rows more: the paired test separates them
    pairs = {(p["vendor_a"], p["vendor_b"]): p for p in board["comparisons"]["pairs"]}
    exa_tavily = pairs[("exa", "tavily")]
    assert (exa_tavily["n"], exa_tavily["a_only"], exa_tavily["b_only"]) == (150, 15, 0)
    assert exa_tavily["better"] == "exa" and exa_tavily["p_adjusted"] < 0.05
    # serper is compared with the others on the 150 rows both answered (it has 400)
    assert pairs[("exa", "serper")]["n"] == 150
    assert ranges_shown(board) == {"exa": (1, 1), "tavily": (2, 2), "brave": (3, 3), "serper": (4, 4)}
    assert {v: x["rank_letters"] for v, x in e.items()} == {"exa": "a", "tavily": "b", "brave": "c", "serper": "d"}
    assert [x["vendor"] for x in sorted(e.values(), key=lambda x: x["position"])] == board["comparisons"]["vendors"]
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(json.loads(json.dumps(board)))


def test_vendors_whose_rows_disagree_both_ways_share_a_letter():
    # exa right on rows 0–59, tavily on rows 30–89: 30 rows each way, no evidence either is better
    scores = rows("exa", "search", 100, 0, correct_rows=range(60)) + rows(
        "tavily", "search", 100, 0, correct_rows=range(30, 90)
    )
    board = board_of(["exa", "tavily"], scores)
    (pair,) = board["comparisons"]["pairs"]
    assert (pair["a_only"], pair["b_only"], pair["p_value"], pair["better"]) == (30, 30, 1.0, None)
    assert pair["difference"]["value"] == 0.0 and pair["difference"]["low"] < 0 < pair["difference"]["high"]
    assert ranges_shown(board) == {"exa": (1, 2), "tavily": (1, 2)}
    assert {x["rank_letters"] for x in scored(board).values()} == {"a"}


def test_ranks_and_letters_can_be_rederived_from_the_published_pairs():
    """What a reader can do with pairwise.csv alone: the counts give every p-value, interval, rank
    range and letter the leaderboard shows (Holm over the pairs listed)."""
    board = chain()
    published = list(csv.DictReader(io.StringIO(pairwise_csv(board))))
    counts = [
        PairedCounts(
            r["vendor_a"], r["vendor_b"], int(r["both_correct"]), int(r["a_only"]), int(r["b_only"]), int(r["neither"])
        )
        for r in published
    ]
    compared = compare_pairs(counts)
    for r, c in zip(published, compared):
        assert float(r["p_value"]) == pytest.approx(c.p_value) and float(r["p_adjusted"]) == pytest.approx(c.p_adjusted)
        assert (r["better"] or None) == c.better
        assert float(r["difference_low"]) == pytest.approx(c.difference.low, abs=1e-6)
    order = [e["vendor"] for e in sorted(scored(board).values(), key=lambda x: x["position"])]
    again = ranking_from_comparisons(order, compared)
    assert again.rank_ranges == ranges_shown(board)
    assert again.letters == {v: x["rank_letters"] for v, x in scored(board).items()}
    assert board["power"]["minimum_detectable_difference"] == pytest.approx(
        again.power.minimum_detectable_difference, abs=1e-6
    )
    # the CSV and the markdown preview show the same ranks and letters
    rows_ = {r["vendor"]: r for r in csv.DictReader(io.StringIO(leaderboard_csv(board))) if r["status"] == "scored"}
    assert {v: (int(r["rank_best"]), int(r["rank_worst"])) for v, r in rows_.items()} == ranges_shown(board)
    assert {v: r["rank_letters"] for v, r in rows_.items()} == again.letters
    md = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in leaderboard_markdown(board).splitlines()
        if line.startswith("|")
    ]
    assert {line[md[0].index("vendor")]: line[md[0].index("letters")] for line in md[2:]} == again.letters
    assert "What" not in leaderboard_markdown(board) and board["power"]["note"] in leaderboard_markdown(board)


def test_without_comparisons_no_vendor_has_a_rank_range():
    frame = pd.DataFrame(rows("exa", "search", 40, 30) + rows("brave", "search", 40, 20), columns=SCORE_COLUMNS)
    board = build_leaderboard(manifest(["brave", "exa"]), vendor_metrics(SNAP, frame.astype(SCORE_DTYPES)), set())
    assert board["comparisons"] is None and board["power"] is None
    assert all(e["rank_range"] is None and e["rank_letters"] is None for e in scored(board).values())
    assert sorted(e["position"] for e in scored(board).values()) == [1, 2]
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(json.loads(json.dumps(board)))


def test_with_no_shared_task_type_the_overall_rate_ranks_and_the_note_says_so():
    scores = (
        rows("jina", "extract", 20, 15)
        + rows("jina", "search", 20, 0, supported=False)
        + rows("brave", "search", 20, 10)
        + rows("brave", "extract", 20, 0, supported=False)
    )
    board = board_of(["brave", "jina"], scores)
    e = scored(board)
    assert board["rank_metric"] == BASE_METRIC == board["ranking"]["metric"]
    assert "No task type is supported by every scored vendor" in board["ranking"]["note"]
    assert (e["jina"]["position"], e["brave"]["position"]) == (1, 2)
    assert RANK_METRIC not in e["jina"]["metrics"]


def test_csv_carries_the_ranking_basis_intervals_and_class_counts(tavily_and_brave):
    rows_ = {r["vendor"]: r for r in csv.DictReader(io.StringIO(leaderboard_csv(tavily_and_brave)))}
    brave = rows_["brave"]
    assert brave["rank_metric"] == RANK_METRIC and brave["rank_task_types"] == "answer search"
    assert {c: brave[f"class_{c}"] for c in RESPONSE_CLASSES} == {
        **dict.fromkeys(RESPONSE_CLASSES, "0"),
        "ok": "48",
        "empty": "14",
        "timeout": "18",
        "unsupported": "40",
    }
    # figures that used to have n but no interval: cost per correct, spend (exact), latency
    for name in ("cost_per_correct_usd", "latency_p50_ms", "latency_p95_ms", "spend_usd"):
        assert brave[f"{name}_low"] and brave[f"{name}_high"], name
        assert float(brave[f"{name}_low"]) <= float(brave[name]) <= float(brave[f"{name}_high"]), name
    assert brave["spend_usd_low"] == brave["spend_usd"] == brave["spend_usd_high"]
    assert brave["cost_per_correct_usd_n"] == "80"


# ##### PER-FIGURE ELIGIBILITY ON EVERY SURFACE (a live snapshot: some figures of eligible vendors are not)


def live_board() -> tuple[dict, object]:
    """Two live, complete, pinned vendors with enough rows overall, each with a stratum of 8 rows
    (< the per-stratum minimum) and one with a time-to-retrievability median over 4 sentinel pages."""
    vendors = ["brave", "tavily"]
    scores = (
        rows("tavily", "search", 30, 24)
        + rows("tavily", "search", 8, 5, stratum="news")
        + rows("tavily", "answer", 30, 20)
        + rows("tavily", "extract", 30, 20)
        + rows("brave", "search", 30, 20)
        + rows("brave", "search", 8, 3, stratum="news")
        + rows("brave", "answer", 30, 15)
        + rows("brave", "extract", 30, 0, supported=False)
    )
    frame = pd.DataFrame(scores, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
    ttr = pd.DataFrame(
        [
            [SNAP, "tavily", "overall", "all", "ttr_median_hours", 30.0, 4, 12.0, None],
            [SNAP, "tavily", "overall", "all", "ttr_probes", 40.0, 40, None, None],
            [SNAP, "brave", "overall", "all", "ttr_median_hours", 20.0, 12, 10.0, 40.0],
            [SNAP, "brave", "overall", "all", "ttr_probes", 60.0, 60, None, None],
        ],
        columns=METRIC_COLUMNS,
    )
    live = manifest(vendors, mode="live")
    metrics = pd.concat([vendor_metrics(SNAP, frame), ttr], ignore_index=True)
    return build_leaderboard(live, metrics, set(vendors), snapshot_reasons=[]), live


def marked(node) -> str | None:
    """The title of the illustrative mark in a rendered figure, None when it has none."""
    mark = node.css_first(".illus")
    return None if mark is None else mark.attributes.get("title")


def test_a_live_board_marks_exactly_the_ineligible_figures_in_html_csv_and_markdown(tmp_path):
    from selectolax.lexbor import LexborHTMLParser

    board, live = live_board()
    e = scored(board)
    assert board["headline_eligible"] and all(x["headline_eligible"] for x in e.values()), {
        v: x["reasons"] for v, x in e.items()
    }
    verdicts = {(v, m): x["metric_eligibility"][m] for v, x in e.items() for m in x["metrics"]}
    ineligible = {k for k, verdict in verdicts.items() if not verdict["headline_eligible"]}
    assert ("tavily", "ttr_median_hours") in ineligible and ("brave", "ttr_median_hours") not in ineligible
    assert ineligible < set(verdicts)  # some figures are eligible, some are not
    assert verdicts[("tavily", "ttr_median_hours")]["reasons"] == [
        "n = 4 < 10 sentinel pages behind ttr_median_hours (the aggregate)"
    ]

    SiteInputs(board, live, [], []).render(tmp_path / "site")
    site = tmp_path / "site"

    # the leaderboard: a mark on exactly the ineligible cells, its title the reasons, and a legend
    index = LexborHTMLParser((site / "index.html").read_text())
    assert index.css_first("#illustrative-legend") is not None and index.css_first(".banner") is None
    checked = 0
    for tr in index.css("#leaderboard tbody tr"):
        vendor = tr.attributes["data-vendor"]
        for td in tr.css("td[data-metric]"):
            metric = td.attributes["data-metric"]
            if (vendor, metric) not in verdicts:
                assert marked(td) is None
                continue
            verdict = verdicts[(vendor, metric)]
            assert marked(td) == (
                None if verdict["headline_eligible"] else "illustrative: " + "; ".join(verdict["reasons"])
            ), (vendor, metric)
            checked += 1
    assert checked >= 12
    cell = index.css_first('tr[data-vendor="tavily"] td[data-metric="ttr_median_hours"]')
    assert marked(cell) == "illustrative: n = 4 < 10 sentinel pages behind ttr_median_hours (the aggregate)"
    assert cell.css_first(".illus").text() == "illustrative"

    # each vendor page: key figures, cost and latency, all figures, and every breakdown cell
    for vendor, x in e.items():
        page = LexborHTMLParser((site / "vendors" / f"{vendor}.html").read_text())
        nodes = (
            page.css("#key-figures .figure-card")
            + page.css("dl.facts dd[data-metric]")
            + page.css("#all-figures tr[data-metric]")
        )
        for node in nodes:
            metric = node.attributes["data-metric"]
            if metric not in x["metrics"]:
                continue
            assert (marked(node) is None) == x["metric_eligibility"][metric]["headline_eligible"], (vendor, metric)
        cells = 0
        for scope, groups in x["breakdown"].items():
            for tr in page.css(f"table#breakdown-{scope} tbody tr"):
                value = tr.attributes["data-scope-value"]
                for td in tr.css("td[data-metric]"):
                    metric = td.attributes["data-metric"]
                    if metric not in groups[value]:
                        continue
                    verdict = x["breakdown_eligibility"][scope][value]["metrics"][metric]
                    assert marked(td) == (
                        None if verdict["headline_eligible"] else "illustrative: " + "; ".join(verdict["reasons"])
                    ), (vendor, scope, value)
                    cells += 1
        assert cells > 10
        news = page.css_first('table#breakdown-stratum tr[data-scope-value="news"] td[data-metric="hit_at_1"]')
        assert marked(news) == "illustrative: n = 8 < 20 rows behind hit_at_1 (a per-stratum chart)"
        finance = page.css_first('table#breakdown-stratum tr[data-scope-value="finance"] td[data-metric="hit_at_1"]')
        assert marked(finance) is None

    # the CSV: each figure's own eligibility, empty where the vendor has no such figure
    csv_rows = {r["vendor"]: r for r in csv.DictReader(io.StringIO(leaderboard_csv(board)))}
    for vendor, x in e.items():
        for name in HEADLINE_METRICS:
            expected = "" if name not in x["metrics"] else str(x["metric_eligibility"][name]["headline_eligible"])
            assert csv_rows[vendor][f"{name}_headline_eligible"] == expected, (vendor, name)
    assert csv_rows["tavily"]["ttr_median_hours_headline_eligible"] == "False"
    assert csv_rows["brave"]["ttr_median_hours_headline_eligible"] == "True"

    # the Dagster preview: a dagger on exactly the ineligible figures it shows
    md = leaderboard_markdown(board)
    table = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("|")]
    header = table[0]
    for line in table[2:]:
        vendor = line[header.index("vendor")]
        for column, cell in zip(header, line):
            metric = next((m for m in HEADLINE_METRICS if publish_label(m) == column), None)
            if metric and (vendor, metric) in verdicts:
                assert cell.endswith("†") == ((vendor, metric) in ineligible), (vendor, column, cell)
    assert "† illustrative" in md


def test_a_simulated_board_marks_no_single_figure_the_banner_says_it_all(tavily_and_brave, tmp_path):
    board = tavily_and_brave
    SiteInputs(board, manifest(["brave", "tavily"]), [], []).render(tmp_path / "site")
    text = (tmp_path / "site" / "index.html").read_text()
    assert 'class="banner"' in text and 'class="illus"' not in text and "illustrative-legend" not in text
    assert 'class="illus"' not in (tmp_path / "site" / "vendors" / "brave.html").read_text()
    assert "†" not in leaderboard_markdown(board)
