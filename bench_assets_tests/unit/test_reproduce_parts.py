"""A figure over all rows checked against its public and holdout parts (`reproduce.parts`), against
the aggregation itself: the figures `aggregate.figures.vendor_metrics` computes over all rows must
be what the parts it computes over each side give, and a figure moved by a little is not."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from bench_assets.aggregate.figures import vendor_metrics
from bench_assets.aggregate.leaderboard import figure_of
from bench_assets.metrics import bounded_mean_interval, mean_interval
from bench_assets.reproduce import parts


def scores(seed: int, n: int = 97) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        task = rng.choice(["search", "extract", "answer"])
        ok = rng.random() < 0.9
        correct = ok and rng.random() < 0.7
        rows.append(
            {
                "vendor": "v",
                "row_id": f"r{i}",
                "task_type": task,
                "stratum": rng.choice(["news", "gov"]),
                "cohort": "c",
                "split": "public" if rng.random() < 0.7 else "holdout",
                "response_class": "ok" if ok else "timeout",
                "correct": correct,
                "fidelity": rng.choice([0.0, 0.25, 0.5, 1.0]) if task == "extract" else None,
                "answer_score": rng.choice([0.0, 0.5, 1.0]) if task == "answer" else None,
                "billed_usd": rng.choice([0.001, 0.005, 0.0125]),
                "latency_ms": rng.uniform(100, 900),
                **{f"hit_at_{k}": (correct if task == "search" else None) for k in (1, 3, 5, 10)},
                "miss_reason": None if correct else "not_returned",
            }
        )
    return pd.DataFrame(rows).astype({f"hit_at_{k}": "boolean" for k in (1, 3, 5, 10)})


def published(seed: int) -> dict[tuple[str, str], dict[str, dict]]:
    m = vendor_metrics("s", scores(seed))
    out: dict[tuple[str, str], dict[str, dict]] = {}
    for _, rec in m[m["metric"] != "count"].iterrows():
        out.setdefault((rec["scope"], rec["scope_value"]), {})[rec["metric"]] = figure_of(rec)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_every_overall_figure_is_what_its_public_and_holdout_parts_give(seed):
    figs = published(seed)
    sides = [figs[("split", "public")], figs[("split", "holdout")]]
    for metric, figure in figs[("overall", "all")].items():
        if parts.kind_of(metric) in (parts.PROPORTION, parts.MEAN, parts.TOTAL, parts.COST):
            expected = parts.sum_of_parts(metric, sides)
            assert expected is not None and list(expected.mismatches(figure)) == [], metric
        elif metric == "overfit_gap":
            assert list(parts.gap_of(*[s["correct_rate"] for s in sides]).mismatches(figure)) == []
        for side in sides:  # and every figure is what it must be by itself
            own = parts.own_consistency(metric, side.get(metric) or {}, side)
            assert own is None or list(own.mismatches(side[metric])) == [], metric


@pytest.mark.parametrize("field,by", [("value", 0.013), ("value", 1e-4), ("low", 5e-6), ("high", -5e-6), ("n", 1)])
@pytest.mark.parametrize("metric", ["correct_rate", "coverage", "fidelity_mean", "spend_usd", "cost_per_correct_usd"])
def test_a_figure_moved_by_a_little_is_not_what_its_parts_give(metric, field, by):
    figs = published(3)
    figure = dict(figs[("overall", "all")][metric])
    figure[field] = figure[field] + by if field == "n" else round(figure[field] + by, 6)
    expected = parts.sum_of_parts(metric, [figs[("split", "public")], figs[("split", "holdout")]])
    assert [name for name, _, _ in expected.mismatches(figure)] == [field]


def test_a_rate_that_is_no_count_over_n_has_no_count():
    assert parts.count_of({"value": 0.933333, "n": 90}) == 84
    assert parts.count_of({"value": 0.946333, "n": 90}) is None
    assert parts.count_of({"value": None, "n": 0}) is None


@pytest.mark.parametrize("values", [[0.0], [1.0, 1.0], [0.2, 0.5, 1.0], [0.25] * 40 + [1.0] * 3])
def test_the_mean_interval_of_a_mean_and_n_is_the_one_of_the_values(values):
    assert mean_interval(sum(values) / len(values), len(values)) == pytest.approx(bounded_mean_interval(values))


def test_kinds_are_read_from_the_metric_name_so_a_new_one_is_known():
    assert parts.kind_of("hit_at_20") == parts.PROPORTION
    assert parts.kind_of("freshness_score_mean") == parts.MEAN
    assert parts.kind_of("latency_p99_ms") == parts.PERCENTILE
    assert parts.kind_of("ttr_median_hours") is None
