"""What each published metric is, written once: its key, a label, a one-line definition, which
way is better, its unit, the statistic it is, how its 95 % interval is computed and what a null
value means.

`leaderboard.json` carries them as its top-level `metrics` list (`metric_descriptors()`), so a
program can use a figure without reading the methodology; llms.txt lists them, and the site's
column headers and figure labels take their tooltips from them (`publish.format.metric_label`,
`metric_description`). A vendor entry's `metrics` and `breakdown` hold no key that is not
described here (a test holds it).

A figure the vendor has no rows for is absent from its entry: not measured. A figure that is
present may still have `value: null`; `null_means` says why, in one of four words:

- `never`: the value is never null (the figure exists only when it has rows);
- `undefined`: the quantity has no value on these rows (cost per correct at zero correct);
- `not_measured`: nothing was measured for it (latency when no response was timed);
- `not_reached`: the Kaplan–Meier median when the survival estimate never falls to 1/2.

Every surface shows a null as `—` (time-to-retrievability: "not reached"), never as 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Direction = Literal["higher_better", "lower_better", "closer_to_zero_better", "neither"]
NullMeans = Literal["never", "undefined", "not_measured", "not_reached"]

DIRECTION_WORDS = {
    "higher_better": "higher is better",
    "lower_better": "lower is better",
    "closer_to_zero_better": "closer to 0 is better",
    "neither": "neither higher nor lower is better",
}
NULL_WORDS = {
    "never": "never null",
    "undefined": "null means undefined",
    "not_measured": "null means not measured",
    "not_reached": "null means not reached",
}

WILSON = "Wilson score interval, 95 % (metrics.wilson_interval)"
BOUNDED_MEAN = "Wilson interval with the Bernoulli variance bound, 95 % (metrics.bounded_mean_interval)"
ORDER_STATISTIC = "distribution-free order-statistic interval, 95 % (metrics.percentile_interval)"


@dataclass(frozen=True)
class MetricDescriptor:
    """One metric as `leaderboard.json` describes it (see the module)."""

    key: str
    label: str
    definition: str
    direction: Direction
    unit: str
    statistic: str
    interval: str
    null_means: NullMeans
    null_note: str

    def as_record(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def tooltip(self) -> str:
        """The definition with which way is better and the unit, as a column header's title shows it."""
        return f"{self.definition} ({DIRECTION_WORDS[self.direction]}; {self.unit})"


def _proportion(key: str, label: str, definition: str) -> MetricDescriptor:
    return MetricDescriptor(
        key,
        label,
        definition,
        "higher_better",
        "share (0–1)",
        "proportion",
        WILSON,
        "never",
        "the figure is present only when it has rows, so its value is never null",
    )


def _hit(k: int) -> MetricDescriptor:
    where = "ranked first" if k == 1 else f"in the top {k}"
    return _proportion(f"hit_at_{k}", f"hit@{k}", f"share of search rows with a golden URL {where}")


DESCRIPTORS: tuple[MetricDescriptor, ...] = (
    _proportion(
        "correct_rate",
        "Correct",
        "the share of golden rows answered correctly, failures counted as not correct",
    ),
    _proportion(
        "correct_rate_shared",
        "Correct (shared rows)",
        "the correct rate over the task types every scored vendor supports: the same rows for every vendor; sets "
        "the position, and the paired tests on those rows set rank ranges and letters",
    ),
    _hit(1),
    _hit(3),
    _hit(5),
    _hit(10),
    MetricDescriptor(
        "fidelity_mean",
        "Fidelity",
        "mean extraction fidelity (0–1) over extract rows",
        "higher_better",
        "score (0–1)",
        "mean",
        BOUNDED_MEAN,
        "never",
        "present only when the vendor has extract rows; a failed row scores 0 and stays in n",
    ),
    MetricDescriptor(
        "answer_score_mean",
        "Answer score",
        "mean per-cell rubric score (0, 0.5 or 1) over answer rows",
        "higher_better",
        "score (0–1)",
        "mean",
        BOUNDED_MEAN,
        "never",
        "present only when the vendor has answer rows; a failed row scores 0 and stays in n",
    ),
    _proportion("coverage", "Coverage", "share of rows that got a usable (ok) response"),
    MetricDescriptor(
        "cost_per_correct_usd",
        "$ / correct",
        "billed spend on the pinned plan ÷ correct answers",
        "lower_better",
        "USD",
        "ratio",
        "the correct rate's Wilson 95 % interval carried through, the spend held exact "
        "(metrics.cost_per_correct_interval)",
        "undefined",
        "null when no row is correct: undefined, never 0",
    ),
    MetricDescriptor(
        "usd_per_1000_correct",
        "$ / 1,000 correct",
        "billed spend on the pinned plan per 1,000 correct answers: 1,000 × cost per correct",
        "lower_better",
        "USD",
        "ratio",
        "the cost per correct interval times 1,000: the correct rate's Wilson 95 % interval carried through, the "
        "spend held exact (metrics.usd_per_thousand_correct)",
        "undefined",
        "null when no row is correct: undefined, never 0",
    ),
    MetricDescriptor(
        "cost_per_correct_shared_usd",
        "$ / correct (shared rows)",
        "billed spend ÷ correct answers on the ranking figure's rows alone (the task types every scored "
        "configuration supports)",
        "lower_better",
        "USD",
        "ratio",
        "the ranking figure's Wilson 95 % interval carried through, the spend held exact "
        "(metrics.cost_per_correct_interval)",
        "undefined",
        "null when no such row is correct: undefined, never 0; absent when no task type is shared",
    ),
    MetricDescriptor(
        "usd_per_1000_correct_shared",
        "$ / 1,000 correct (shared rows)",
        "billed spend per 1,000 correct answers on the ranking figure's rows alone: the cost axis of the frontier "
        "(pareto_optimal), priced on the same rows for every configuration",
        "lower_better",
        "USD",
        "ratio",
        "the shared rows' cost per correct interval times 1,000 (metrics.usd_per_thousand_correct)",
        "undefined",
        "null when no such row is correct: undefined, never 0; absent when no task type is shared",
    ),
    MetricDescriptor(
        "spend_usd",
        "Spend",
        "billed spend on the pinned plan: a total of billed calls",
        "lower_better",
        "USD",
        "total",
        "none: an exact total (low = high = value)",
        "never",
        "a total of archived billed calls, 0 when nothing was billed",
    ),
    MetricDescriptor(
        "overfit_gap",
        "Overfit gap",
        "public minus holdout accuracy (correct rate)",
        "closer_to_zero_better",
        "difference of shares (−1 to 1)",
        "difference_of_proportions",
        "Newcombe's hybrid score interval for two independent proportions, 95 % (metrics.overfit_gap)",
        "never",
        "present only when the vendor has public and holdout rows",
    ),
    MetricDescriptor(
        "latency_p50_ms",
        "Latency p50",
        "median latency of the final attempt",
        "lower_better",
        "ms",
        "percentile",
        ORDER_STATISTIC,
        "not_measured",
        "null when no response was timed; a bound is null when too few responses were timed for that tail",
    ),
    MetricDescriptor(
        "latency_p95_ms",
        "Latency p95",
        "95th-percentile latency of the final attempt",
        "lower_better",
        "ms",
        "percentile",
        ORDER_STATISTIC,
        "not_measured",
        "null when no response was timed; a bound is null when too few responses were timed for that tail",
    ),
    MetricDescriptor(
        "ttr_median_hours",
        "TTR median",
        "Kaplan–Meier median hours until a fresh sentinel page is returned, right-censored at 720 h",
        "lower_better",
        "hours",
        "km_median",
        "survfit's default log-transformed 95 % interval (metrics.km_median)",
        "not_reached",
        "null when the survival estimate never falls to 1/2 (not reached, never 0 or infinity); n > 0 then",
    ),
    MetricDescriptor(
        "ttr_probes",
        "TTR probes",
        "sentinel probes made: every 6 h, per page until it is returned or 30 days old",
        "neither",
        "count",
        "total",
        "none: a count",
        "never",
        "a count of probes made",
    ),
)
METRIC_DESCRIPTORS: dict[str, MetricDescriptor] = {d.key: d for d in DESCRIPTORS}


def metric_descriptors() -> list[dict[str, Any]]:
    """Every descriptor as `leaderboard.json`'s top-level `metrics` list publishes it, in display order."""
    return [d.as_record() for d in DESCRIPTORS]


def descriptor(key: str) -> MetricDescriptor | None:
    return METRIC_DESCRIPTORS.get(key)
