"""The parts of leaderboard.json that describe it, as pure functions: the metric descriptors cover
every figure the aggregation can produce, the content hash is the documented one, the status
follows the mode and the lifecycle, and the cohort says what it does not know."""

from __future__ import annotations

import hashlib
from datetime import date

import pandas as pd
import pytest

from bench_assets.aggregate.cohort import cohort_of
from bench_assets.aggregate.descriptors import METRIC_DESCRIPTORS, metric_descriptors
from bench_assets.aggregate.figures import vendor_metrics
from bench_assets.aggregate.leaderboard import HEADLINE_METRICS, PUBLIC_METRICS
from bench_assets.aggregate.provenance import DISCLAIMERS, content_hash, folder_content_hash, snapshot_status
from bench_assets.publish.format import metric_description, metric_label
from bench_assets.score.partition import SCORE_COLUMNS, SCORE_DTYPES
from bench_assets_tests.unit.test_leaderboard_ranking import manifest, rows

pytestmark = pytest.mark.unit


def _scores() -> pd.DataFrame:
    """Rows of every task type on both sides of the split, some failed, as scoring writes them."""
    out = []
    for task in ("search", "extract", "answer"):
        for side in ("public", "holdout"):
            out += [
                {
                    **r,
                    "row_id": f"{r['row_id']}-{side}",
                    "split": side,
                    "answer_score": 1.0 if task == "answer" else None,
                }
                for r in rows("exa", task, 6, 3, failures="timeout")
            ]
    return pd.DataFrame(out, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)


def test_every_figure_the_aggregation_produces_is_described():
    produced = set(vendor_metrics("s", _scores())["metric"]) - {"count"}  # counts are response classes
    assert produced <= set(METRIC_DESCRIPTORS), produced - set(METRIC_DESCRIPTORS)
    assert set(HEADLINE_METRICS) | set(PUBLIC_METRICS) <= set(METRIC_DESCRIPTORS)
    assert [d["key"] for d in metric_descriptors()] == list(METRIC_DESCRIPTORS)
    # the site's labels and tooltips are the descriptors'
    d = METRIC_DESCRIPTORS["cost_per_correct_usd"]
    assert metric_label(d.key) == d.label
    assert metric_description(d.key) == f"{d.definition} (lower is better; USD)"
    assert metric_label("not_a_metric") == "not a metric"


def test_the_content_hash_is_sha256sum_of_the_other_files_sorted_by_path(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.csv").write_bytes(b"1\n")
    (tmp_path / "a.html").write_bytes(b"<p>")
    (tmp_path / "leaderboard.json").write_bytes(b"{}")
    (tmp_path / "llms.txt").write_bytes(b"# hash")
    digest = {n: hashlib.sha256(b).hexdigest() for n, b in (("a", b"<p>"), ("x", b"1\n"))}
    listing = f"{digest['a']}  a.html\n{digest['x']}  b/x.csv\n"
    expected = "sha256:" + hashlib.sha256(listing.encode()).hexdigest()
    assert folder_content_hash(tmp_path) == expected
    # the files that state it are left out, whatever they hold; any other change is seen
    (tmp_path / "leaderboard.json").write_bytes(b'{"content_hash": "x"}')
    assert folder_content_hash(tmp_path) == expected
    assert content_hash([("b/x.csv", digest["x"]), ("a.html", digest["a"])]) == expected
    (tmp_path / "b" / "x.csv").write_bytes(b"2\n")
    assert folder_content_hash(tmp_path) != expected


def test_status_follows_the_mode_then_the_lifecycle():
    simulated = manifest(["exa"])
    live = simulated.model_copy(update={"mode": "live"})
    corrected = live.model_copy(update={"supersedes": "web_search-2026-q3"})
    assert snapshot_status(simulated, "published") == "simulated"
    assert snapshot_status(live, None) == snapshot_status(live, "draft") == "draft"
    assert snapshot_status(live, "published") == "published"
    assert snapshot_status(corrected, "published") == "published_with_errata"
    assert set(DISCLAIMERS) == {"simulated", "draft", "published", "published_with_errata"}


def test_the_cohort_dates_only_public_rows_and_says_when_none_is_known():
    split = {"a": "public", "b": "public", "c": "holdout", "d": "public"}
    published = {"a": date(2026, 5, 2), "b": None, "c": date(2020, 1, 1), "d": date(2026, 3, 9)}
    cohort = cohort_of(published, split, 0.7)
    assert (cohort["cohort_size"], cohort["public_rows"], cohort["holdout_rows"]) == (4, 3, 1)
    assert cohort["holdout_fraction"] == 0.3
    pages = cohort["golden_pages_published"]
    # the holdout row's date (2020) is not published, not even as the range's end
    assert (pages["first"], pages["last"], pages["dated_rows"], pages["undated_rows"]) == (
        "2026-03-09",
        "2026-05-02",
        2,
        1,
    )
    unknown = cohort_of(dict.fromkeys(split), split, 0.7)["golden_pages_published"]
    assert (unknown["first"], unknown["last"], unknown["undated_rows"]) == (None, None, 3)
