"""Time-to-retrievability per vendor, from the sentinel probe table.

Each (vendor, sentinel page) is one subject of a Kaplan–Meier estimate (`metrics.km_estimate`,
`metrics.km_median_interval`, which follow R's `survfit`):

- **Observed**: the first informative probe (class ``ok`` or ``empty``) whose results contain the
  page. Duration = hours from the page's publish time to that probe's time. Probes run every
  6 hours, so the page became retrievable at some moment since the previous probe; the recorded
  time is an upper bound at the probes' resolution, the same for every vendor.
- **Right-censored**: never found. Duration = hours to the last informative probe, the last time
  we saw the vendor *not* return it. For a page past its 30-day window that is ~720 h (and any
  duration above 720 h is censored at 720 h by the KM functions). For a page younger than 30 days
  at the time of aggregation, it is its age at the last probe: it still counts as "not found
  for that long", which is all we know, rather than being dropped (biasing towards fast vendors)
  or counted as never found (biasing against them).
- Probes that failed (auth, quota, rate_limited, server, timeout, blocked, malformed, rejected) say nothing
  about the page: they neither find it nor extend its censoring time. A page with no informative
  probe at a vendor is not a subject for that vendor. They are still counted in the probe total.

The median is "not reached" (None, never infinity or NaN) when the estimate never falls to 1/2,
e.g. for a vendor that returned fewer than half of the pages within 30 days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from bench_assets.metrics import DEFAULT_CENSOR_AT_HOURS, KMCurve, km_estimate, km_median_interval
from bench_assets.sentinels.pages import INFORMATIVE_CLASSES
from bench_assets.storage.warehouse import Warehouse

SUBJECT_COLUMNS = ["vendor", "sentinel_id", "duration_hours", "observed"]
METRIC_COLUMNS = ["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"]
TTR_METRIC = "ttr_median_hours"
PROBES_METRIC = "ttr_probes"
# The last probe tick an aggregate includes (epoch seconds): probes go on after a snapshot is
# published, so `bench rescore` re-derives the published figures from the probes up to it.
AS_OF_METRIC = "ttr_as_of"


def sentinel_durations(pages: pd.DataFrame, probes: pd.DataFrame) -> pd.DataFrame:
    """One row per (vendor, sentinel) with an informative probe: duration in hours and whether
    the page was found then (True) or is right-censored there (False). See the module docstring.

    `pages` needs sentinel_id and published_at; `probes` vendor, sentinel_id, probed_at,
    response_class and found.
    """
    if pages.empty or probes.empty:
        return pd.DataFrame(columns=SUBJECT_COLUMNS)
    published = dict(zip(pages["sentinel_id"], pd.to_datetime(pages["published_at"], utc=True)))
    informative = probes[
        probes["response_class"].isin(INFORMATIVE_CLASSES)
        & probes["sentinel_id"].map(lambda s: s in published and pd.notna(published[s]))
    ].copy()
    if informative.empty:
        return pd.DataFrame(columns=SUBJECT_COLUMNS)
    informative["age_hours"] = (
        pd.to_datetime(informative["probed_at"], utc=True) - informative["sentinel_id"].map(published)
    ).dt.total_seconds() / 3600.0
    if (informative["age_hours"] < 0).any():
        raise ValueError("a probe is recorded before its sentinel's publish time")
    informative["found"] = informative["found"].fillna(False).astype(bool)
    rows = []
    for (vendor, sentinel), group in informative.groupby(["vendor", "sentinel_id"], sort=True):
        hits = group.loc[group["found"], "age_hours"]
        if len(hits):
            rows.append((vendor, sentinel, float(hits.min()), True))
        else:
            rows.append((vendor, sentinel, float(group["age_hours"].max()), False))
    return pd.DataFrame(rows, columns=SUBJECT_COLUMNS)


@dataclass(frozen=True)
class TTRFigure:
    """A vendor's time-to-retrievability: KM median and 95 % interval in hours (None: not
    reached), subjects, how many were found, probes made, and the curve with its subjects."""

    vendor: str
    median_hours: float | None
    low: float | None
    high: float | None
    sentinels: int
    found: int
    probes: int
    curve: KMCurve | None
    durations: tuple[float, ...] = ()
    observed: tuple[bool, ...] = ()


def ttr_figures(
    pages: pd.DataFrame, probes: pd.DataFrame, censor_at_hours: float = DEFAULT_CENSOR_AT_HOURS
) -> dict[str, TTRFigure]:
    """Per vendor that was probed: the figures above (vendors with probes but no informative
    probe get a figure with no subjects and no median)."""
    subjects = sentinel_durations(pages, probes)
    out: dict[str, TTRFigure] = {}
    for vendor in sorted(set(probes["vendor"]) if len(probes) else ()):
        mine = subjects[subjects["vendor"] == vendor]
        n_probes = int((probes["vendor"] == vendor).sum())
        if mine.empty:
            out[vendor] = TTRFigure(vendor, None, None, None, 0, 0, n_probes, None)
            continue
        durations = mine["duration_hours"].astype(float).tolist()
        observed = mine["observed"].astype(bool).tolist()
        interval = km_median_interval(durations, observed, censor_at_hours=censor_at_hours)
        out[vendor] = TTRFigure(
            vendor,
            interval.value,
            interval.low,
            interval.high,
            len(mine),
            int(sum(observed)),
            n_probes,
            km_estimate(durations, observed, censor_at_hours=censor_at_hours),
            tuple(durations),
            tuple(observed),
        )
    return out


def ttr_metric_rows(snapshot_id: str, figures: dict[str, TTRFigure], as_of: datetime | None = None) -> pd.DataFrame:
    """Rows for the `vendor_metrics` table: `ttr_median_hours` (value = median or NULL when not
    reached, n = sentinels, low/high = 95 % interval), `ttr_probes` (probes made) and, with
    `as_of`, `ttr_as_of` (the last tick included, as epoch seconds; not a leaderboard figure)."""
    rows = []
    for vendor, fig in sorted(figures.items()):
        if fig.sentinels:
            rows.append(
                [snapshot_id, vendor, "overall", "all", TTR_METRIC, fig.median_hours, fig.sentinels, fig.low, fig.high]
            )
        rows.append([snapshot_id, vendor, "overall", "all", PROBES_METRIC, float(fig.probes), fig.probes, None, None])
        if as_of is not None:
            rows.append(
                [snapshot_id, vendor, "overall", "all", AS_OF_METRIC, as_of.timestamp(), fig.probes, None, None]
            )
    out = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    return out.astype({"value": "float64", "low": "float64", "high": "float64", "n": "int64"})


def snapshot_ttr_metrics(
    snapshot_id: str, pages: pd.DataFrame, probes: pd.DataFrame, as_of: datetime | None = None
) -> pd.DataFrame:
    """The snapshot's time-to-retrievability rows from its sentinel pages and probes (those of
    ticks up to `as_of` when given, else all), stamped with the last tick they include."""
    if probes.empty:
        return ttr_metric_rows(snapshot_id, {})
    ticks = pd.to_datetime(probes["tick_at"], utc=True)
    if as_of is not None:
        probes, ticks = probes[ticks <= as_of], ticks[ticks <= as_of]
    if probes.empty:
        return ttr_metric_rows(snapshot_id, {})
    return ttr_metric_rows(snapshot_id, ttr_figures(pages, probes), ticks.max().to_pydatetime())


def sentinel_tables(warehouse: Warehouse, snapshot_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The snapshot's sentinel pages and probes (the probe columns time-to-retrievability reads)."""
    with warehouse.session():
        pages = warehouse.rows("sentinel_pages", snapshot_id)
        probes = warehouse.rows(
            "sentinel_probes",
            snapshot_id,
            columns=["vendor", "sentinel_id", "tick_at", "probed_at", "response_class", "found"],
        )
    return pages, probes


def ttr_markdown(figures: dict[str, TTRFigure]) -> str:
    """The figures as a markdown table (the probe run's preview in the Dagster UI)."""
    if not figures:
        return "no probes yet"
    df = pd.DataFrame(
        [
            {
                "vendor": f.vendor,
                "median_h": "not reached" if f.median_hours is None and f.sentinels else f.median_hours,
                "low_h": f.low,
                "high_h": f.high,
                "found": f.found,
                "sentinels": f.sentinels,
                "probes": f.probes,
            }
            for f in figures.values()
        ]
    )
    return df.to_markdown(index=False)
