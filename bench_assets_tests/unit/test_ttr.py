"""Time-to-retrievability from probe records: which probes are due, how durations are censored,
and how the figures reach the leaderboard record, without Dagster or a network.

The Kaplan–Meier functions themselves are checked against R in test_metrics_survival.py; here
the question is whether the probe table becomes the right subjects for them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from bench_assets.aggregate.leaderboard import build_leaderboard, leaderboard_rows
from bench_assets.golden.planted import build_corpus
from bench_assets.manifest import load_manifest
from bench_assets.metrics import km_median_interval
from bench_assets.publish.format import format_figure
from bench_assets.sentinels.pages import SIMULATED_SITE, latest_tick, make_batch, parse_utc, probe_ticks, tick_key
from bench_assets.sentinels.probes import due_probes
from bench_assets.sentinels.ttr import AS_OF_METRIC, sentinel_durations, snapshot_ttr_metrics, ttr_figures
from bench_assets.simulator.index import tokenize
from bench_assets_tests.helpers import DEMO_MANIFEST

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def pages(*ids: str, published: datetime | None = T0) -> pd.DataFrame:
    return pd.DataFrame({"sentinel_id": list(ids), "published_at": [published] * len(ids)})


def probe(vendor: str, sentinel: str, hours: float, found: bool = False, cls: str = "ok") -> dict:
    return {
        "vendor": vendor,
        "sentinel_id": sentinel,
        "tick_at": at(hours),
        "probed_at": at(hours),
        "response_class": cls,
        "found": found,
    }


def probes(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(
        list(rows), columns=["vendor", "sentinel_id", "tick_at", "probed_at", "response_class", "found"]
    )


# ##### SUBJECTS AND CENSORING


def test_found_page_lasts_until_the_first_probe_that_returned_it():
    subjects = sentinel_durations(pages("a"), probes(probe("v", "a", 0), probe("v", "a", 6), probe("v", "a", 12, True)))
    assert subjects.to_dict("records") == [
        {"vendor": "v", "sentinel_id": "a", "duration_hours": 12.0, "observed": True}
    ]


def test_page_never_returned_is_censored_at_its_last_informative_probe():
    # a young page (18 h old at the last probe) counts as "not found for 18 h", not as never found
    subjects = sentinel_durations(
        pages("a"), probes(probe("v", "a", 6), probe("v", "a", 12, cls="empty"), probe("v", "a", 18))
    )
    assert subjects[["duration_hours", "observed"]].values.tolist() == [[18.0, False]]


def test_failed_probes_neither_find_nor_extend_the_censoring():
    subjects = sentinel_durations(
        pages("a", "b"),
        probes(
            probe("v", "a", 6),
            probe("v", "a", 12, cls="server"),
            probe("v", "a", 18, cls="timeout"),
            probe("v", "b", 6, cls="auth"),
        ),
    )
    assert subjects[["sentinel_id", "duration_hours", "observed"]].values.tolist() == [["a", 6.0, False]]
    figures = ttr_figures(pages("a", "b"), probes(probe("v", "b", 6, cls="auth")))
    assert figures["v"].sentinels == 0 and figures["v"].probes == 1 and figures["v"].median_hours is None


def test_durations_are_hours_from_publish_to_probe_time_not_tick_time():
    # live mode: a catch-up probe is recorded at the time the vendor answered
    rows = probes(probe("v", "a", 12, True))
    rows.loc[0, "probed_at"] = at(13.5)
    assert sentinel_durations(pages("a"), rows)["duration_hours"].tolist() == [13.5]


def test_figures_are_the_kaplan_meier_median_and_interval_of_the_subjects():
    found_at = {"a": 6, "b": 12, "c": 12, "d": 18, "e": 30, "f": 48}
    rows = [probe("fast", s, h, True) for s, h in found_at.items()]
    rows += [probe("fast", "g", h) for h in range(0, 721, 6)]  # never found: censored at 720 h
    rows += [probe("never", s, h) for s in "abcdefg" for h in range(0, 721, 6)]
    figures = ttr_figures(pages(*"abcdefg"), probes(*rows))
    expected = km_median_interval([6, 12, 12, 18, 30, 48, 720], [1, 1, 1, 1, 1, 1, 0])
    fast = figures["fast"]
    assert (
        (fast.median_hours, fast.low, fast.high) == (expected.value, expected.low, expected.high) == (18.0, 12.0, None)
    )
    assert fast.sentinels == 7 and fast.found == 6 and fast.probes == 6 + 121
    never = figures["never"]
    assert never.median_hours is None and never.low is None and never.sentinels == 7 and never.found == 0


# ##### WHICH PROBES ARE DUE


def test_due_probes_follow_the_window_and_what_earlier_ticks_found():
    batch = pd.DataFrame(
        {
            "sentinel_id": ["a", "b", "late", "unconfirmed"],
            "url": ["u"] * 4,
            "phrase": ["p"] * 4,
            "published_at": [T0, T0, at(24), None],
        }
    )
    history = probes(probe("v1", "a", 6, True), probe("v1", "b", 12, True), probe("v2", "a", 12, False))
    due = due_probes(batch, history, ["v1", "v2"], at(12))
    # b was found at tick 12 itself: a re-run of tick 12 asks for it again (and re-uses the archive)
    assert sorted(zip(due["vendor"], due["sentinel_id"])) == [("v1", "b"), ("v2", "a"), ("v2", "b")]
    assert due_probes(batch, history, ["v2"], T0)["sentinel_id"].tolist() == ["a", "b"]  # published at the tick: due
    assert due_probes(batch, history, ["v2"], at(720))["sentinel_id"].tolist() == ["a", "b", "late"]
    assert due_probes(batch, history, ["v2"], at(726))["sentinel_id"].tolist() == ["late"]
    assert due_probes(batch, history, ["v2"], at(750)).empty


def test_probe_ticks_are_the_six_hourly_utc_grid():
    ticks = probe_ticks(T0 + timedelta(hours=1), T0 + timedelta(hours=720))
    assert ticks[0] == at(6) and ticks[-1] == at(720) and len(ticks) == 120
    assert latest_tick(at(17.9)) == at(12) and tick_key(at(6)) == "2026-07-01T06:00:00Z"
    assert parse_utc("2026-07-01T02:00:00+02:00") == T0 and parse_utc("2026-07-01T00:00:00") == T0


# ##### SENTINEL PAGES


def test_a_batch_is_reproducible_and_each_phrase_finds_only_its_page():
    batch = make_batch("web_search-2026-q3", "b1", 12, SIMULATED_SITE, T0)
    assert batch == make_batch("web_search-2026-q3", "b1", 12, SIMULATED_SITE, T0)
    assert make_batch("web_search-2026-q3", "b2", 12, SIMULATED_SITE, T0)[0].phrase != batch[0].phrase
    words = [set(tokenize(p.phrase)) for p in batch]
    assert all(len(w) == 3 for w in words)
    assert all(not (a & b) for i, a in enumerate(words) for b in words[i + 1 :])  # no word shared in the batch
    corpus_words = {t for page in build_corpus().pages.values() for t in tokenize(page.text())}
    assert not set().union(*words) & corpus_words  # nor with any planted page
    assert len({p.url for p in batch}) == 12 and all(p.url.startswith(SIMULATED_SITE) for p in batch)


# ##### INTO THE LEADERBOARD


def test_not_reached_is_null_with_its_n_and_says_so_on_every_surface():
    rows = [probe("exa", "a", 12, True), probe("exa", "b", 18, True)]
    rows += [probe("brave", s, h) for s in "ab" for h in range(0, 721, 6)]
    metrics = snapshot_ttr_metrics("web_search-2026-q3", pages("a", "b"), probes(*rows))
    assert metrics.loc[metrics["metric"] == AS_OF_METRIC, "value"].tolist() == [at(720).timestamp()] * 2
    manifest = load_manifest(DEMO_MANIFEST)
    board = build_leaderboard(manifest, metrics, set())
    entries = {e["vendor"]: e for e in board["vendors"]}
    # S = 1/2 exactly on the plateau from 12 h: the median is its midpoint to the next event (R's rule)
    assert entries["exa"]["metrics"]["ttr_median_hours"] == {"value": 15.0, "n": 2, "low": 12.0, "high": None}
    assert entries["brave"]["metrics"]["ttr_median_hours"] == {"value": None, "n": 2, "low": None, "high": None}
    assert entries["brave"]["metrics"]["ttr_probes"]["value"] == 242
    assert "ttr_as_of" not in entries["brave"]["metrics"]
    csv_rows = {r["vendor"]: r for r in leaderboard_rows(board)}
    assert csv_rows["brave"]["ttr_median_hours_not_reached"] is True
    assert csv_rows["exa"]["ttr_median_hours_not_reached"] is False
    assert csv_rows["tavily"]["ttr_median_hours_not_reached"] is None  # no sentinel subject: no figure
    assert "not reached" in format_figure("ttr_median_hours", entries["brave"]["metrics"]["ttr_median_hours"])


def test_aggregate_as_of_a_tick_ignores_later_probes():
    rows = [probe("exa", "a", 12, True), probe("exa", "b", 12), probe("exa", "b", 18, True)]
    early = snapshot_ttr_metrics("s", pages("a", "b"), probes(*rows), as_of=at(12))
    median = early.loc[early["metric"] == "ttr_median_hours"].iloc[0]
    assert (median["value"], median["n"]) == (12.0, 2)
    assert early.loc[early["metric"] == "ttr_probes", "value"].tolist() == [2.0]


@pytest.mark.parametrize("value", [float("nan"), None])
def test_a_null_median_from_the_warehouse_never_becomes_nan_or_infinity(value):
    metrics = pd.DataFrame(
        [["s", "exa", "overall", "all", "ttr_median_hours", value, 5, 30.0, None]],
        columns=["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"],
    )
    board = build_leaderboard(load_manifest(DEMO_MANIFEST), metrics, set())
    fig = next(e for e in board["vendors"] if e["vendor"] == "exa")["metrics"]["ttr_median_hours"]
    assert fig == {"value": None, "n": 5, "low": 30.0, "high": None}
