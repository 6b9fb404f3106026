"""Where a figure's public rows are listed: the filter that a figure cell's link puts in the URL
of its vendor's row listing (`vendors/<vendor>.html?task=search&stratum=news#public-rows`), read
there by `filter.js`.

A figure counts public and holdout rows; only the public ones are listed, so the listing is the
public part of what is behind the figure. A figure no public row lies behind (the holdout's, time
to retrievability, the overfit gap) gets no link; neither does a group the listing cannot filter
by (a row's cohort is not among its listed fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

# the URL parameter per listed field, as filter.js reads them (`data-<name>` on each listed row)
FILTERS = {
    "task_type": "task",
    "stratum": "stratum",
    "response_class": "class",
    "verdict": "verdict",
    "miss_reason": "miss",
}

# metrics over one task type's rows; the others not named here count every row of the vendor
_METRIC_TASK = {"fidelity_mean": "extract", "answer_score_mean": "answer"}
# figures no listed row is behind
_NOT_ROWS = ("overfit_gap", "ttr_")


def _metric_tasks(board: Mapping[str, Any], metric: str) -> list[str] | None:
    """The task types whose rows a metric counts ([] for every row), None when no row is behind it."""
    if metric.startswith(_NOT_ROWS):
        return None
    if metric.startswith("hit_at_"):
        return ["search"]
    if metric in _METRIC_TASK:
        return [_METRIC_TASK[metric]]
    if metric == "correct_rate_shared" or metric.endswith(("_shared", "_shared_usd")):  # the ranking basis's rows
        return sorted((board.get("ranking") or {}).get("task_types") or [])
    return []


def rows_query(
    board: Mapping[str, Any], metric: str | None, scope: str | None = None, value: str | None = None, **fields: str
) -> str | None:
    """The query string (with its `?`, or "" for every row) selecting the public rows behind a
    vendor's `metric` (None: no metric) in group `value` of `scope`, narrowed by `fields` (a
    listed field → a value: `response_class="timeout"`); None when no public row is behind it."""
    tasks = [] if metric is None else _metric_tasks(board, metric)
    if tasks is None:
        return None
    params: dict[str, str] = {}
    if scope == "split":
        if value != "public":
            return None
    elif scope == "task_type":
        if tasks and value not in tasks:
            return None
        tasks = [str(value)]
    elif scope is not None:
        if scope not in FILTERS:
            return None
        params[FILTERS[scope]] = str(value)
    if tasks:
        params["task"] = ",".join(tasks)
    for field, wanted in fields.items():
        params[FILTERS[field]] = wanted
    ordered = sorted(params.items(), key=lambda kv: list(FILTERS.values()).index(kv[0]))
    return "?" + urlencode(ordered) if ordered else ""


def rows_href(
    board: Mapping[str, Any],
    vendor: str,
    metric: str | None,
    scope: str | None = None,
    value: str | None = None,
    prefix: str = "",
    **fields: str,
) -> str | None:
    """The link from a figure cell to the public rows behind it (`rows_query`), from a page at
    `prefix` ("vendors/" from the leaderboard, "" from a vendor's page); None when there are none."""
    query = rows_query(board, metric, scope, value, **fields)
    return None if query is None else f"{prefix}{vendor}.html{query}#public-rows"


def linked(href: str | None, html: Any) -> Any:
    """A figure cell's content as a link to its rows, or as it is when it has none."""
    return html if not href else Markup('<a class="rows" href="{}">{}</a>').format(href, html)
