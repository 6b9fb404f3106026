"""How every figure reads on every HTML and text surface: numbers in their unit, intervals,
the illustrative mark, rank ranges, labels, and the leaderboard as a markdown table (the Dagster
UI's preview and the terminal)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from jinja2 import (
    pass_context,
)
from markdown_it import MarkdownIt
from markupsafe import Markup
from tabulate import tabulate

from bench_assets.aggregate.descriptors import descriptor

# Leaderboard columns in display order; a metric no vendor has (e.g. time-to-retrievability
# before the first sentinel probes) is left out rather than shown as a column of dashes.
LEADERBOARD_COLUMNS = [
    "correct_rate_shared",
    "correct_rate",
    "hit_at_1",
    "hit_at_10",
    "fidelity_mean",
    "coverage",
    "cost_per_correct_usd",
    "usd_per_1000_correct_shared",
    "overfit_gap",
    "latency_p50_ms",
    "ttr_median_hours",
]
SCOPE_COLUMNS = [
    "correct_rate",
    "hit_at_1",
    "hit_at_3",
    "hit_at_5",
    "hit_at_10",
    "fidelity_mean",
    "answer_score_mean",
    "coverage",
]
KEY_FIGURES = [
    "correct_rate_shared",
    "correct_rate",
    "hit_at_1",
    "hit_at_10",
    "fidelity_mean",
    "answer_score_mean",
    "coverage",
    "cost_per_correct_usd",
    "usd_per_1000_correct",
    "cost_per_correct_shared_usd",
    "usd_per_1000_correct_shared",
    "latency_p50_ms",
    "ttr_median_hours",
]
CLASS_MEANINGS = {
    "ok": "a usable response with results",
    "empty": "a success status with no results",
    "blocked": "a captcha or challenge page, even with a success status",
    "auth": "the key was refused",
    "quota": "credit or quota used up, or the manifest's spend ceiling reached (not sent)",
    "rate_limited": "rate limited through every retry (429), or asked to wait longer than the manifest allows",
    "server": "a 5xx or a transport error",
    "timeout": "no response within the pinned timeout",
    "malformed": "a body that is not the vendor's documented shape",
    "rejected": "the vendor refused the request as invalid (4xx)",
    "unsupported": "the vendor has no such capability: left out of its denominator",
}

# A short label per miss reason code (`score.miss_reasons.MISS_REASONS` says what each means in
# full; docs/miss_reasons.md lists them): what a row's page and a vendor's page show.
MISS_REASON_LABELS = {
    "call_failed": "the call failed",
    "no_results": "no results",
    "golden_below_k": "the golden document, ranked too low to count",
    "golden_site_other_document": "the golden site, another document",
    "not_returned": "the golden document not returned",
    "extract_no_text": "no text extracted",
    "extract_fields": "fields fell short",
    "answer_not_found": "the answer not found",
    "answer_rubric": "the rubric gave less than full credit",
}


MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


# ##### FORMATTING (one place, used by every HTML surface)


def format_number(metric: str, x: float | None) -> str:
    """A number in its metric's unit: `$0.0042`, `48 ms`, `12.5 h`, `+0.036`, `0.929`."""
    if x is None:
        return "—"
    if metric.startswith("usd_per_1000_correct"):
        return f"${x:,.2f}"
    if metric.endswith("_usd"):
        return f"${x:.4f}"
    if metric.endswith("_ms"):
        return f"{x:.0f} ms"
    if metric.endswith("_hours"):
        return f"{x:.1f} h"
    if metric.endswith("_probes"):
        return f"{x:.0f}"
    if metric == "overfit_gap":
        return "0.000" if round(x, 3) == 0 else f"{x:+.3f}"
    return f"{x:.3f}"


def _missing_value(metric: str) -> str:
    # A Kaplan–Meier median that never falls to 50 % is "not reached", never 0 or infinity.
    return "not reached" if metric.startswith("ttr_") else "—"


# Figures that are counts of what happened, not estimates: shown as exact rather than as an interval.
EXACT_METRICS = frozenset({"spend_usd"})


def format_interval(metric: str, fig: Mapping[str, Any] | None) -> str:
    """`[low, high]` in the metric's unit, `exact` for an exact figure (billed spend), `—` when the
    figure has no interval."""
    if not fig or (fig.get("low") is None and fig.get("high") is None):
        return "—"
    if metric in EXACT_METRICS and fig.get("value") is not None:
        return "exact"
    low = format_number(metric, fig.get("low")) if fig.get("low") is not None else _missing_value(metric)
    high = format_number(metric, fig.get("high")) if fig.get("high") is not None else _missing_value(metric)
    return f"[{low}, {high}]"


def illustrative_marker(verdict: Mapping[str, Any] | None) -> Markup:
    """The mark beside a figure that is not headline-eligible on its own (empty otherwise): a
    visible tag whose title gives the reasons, e.g. "illustrative: n = 4 < 10 sentinel pages …"."""
    if not verdict or verdict.get("headline_eligible", True):
        return Markup("")
    reasons = "; ".join(verdict.get("reasons") or []) or "not headline-eligible"
    return Markup(' <span class="illus" title="illustrative: {}">illustrative</span>').format(reasons)


def format_figure(metric: str, fig: Mapping[str, Any] | None, verdict: Mapping[str, Any] | None = None) -> Markup:
    """One figure as shown on every HTML surface: the value, then n and the 95 % interval, and the
    illustrative mark when `verdict` (the figure's eligibility) says it is not headline-eligible."""
    if not fig:
        return Markup('<span class="na">—</span>')
    value = fig.get("value")
    text = format_number(metric, value) if value is not None else _missing_value(metric)
    html = Markup('<span class="v">{}</span><span class="ci">n={}</span>').format(text, fig.get("n"))
    if fig.get("low") is not None or fig.get("high") is not None:
        html += Markup('<span class="ci">{}</span>').format(format_interval(metric, fig))
    return html + illustrative_marker(verdict)


def figure_verdict(
    board: Mapping[str, Any], entry: Mapping[str, Any], metric: str, scope: str | None = None, value: str | None = None
) -> dict[str, Any] | None:
    """A figure's headline eligibility as the record holds it (`metric_eligibility`, or for a
    breakdown group `breakdown_eligibility`), or None when nothing in the snapshot is
    headline-eligible: the banner on every page then says every figure is illustrative, and a
    mark on each would say nothing more."""
    if not board.get("headline_eligible"):
        return None
    if scope is None:
        return (entry.get("metric_eligibility") or {}).get(metric)
    group = ((entry.get("breakdown_eligibility") or {}).get(scope) or {}).get(value) or {}
    return (group.get("metrics") or {}).get(metric)


def format_p(p: float | None) -> str:
    """A p-value as read: `0.032`, `< 0.0001`."""
    if p is None:
        return "—"
    return "< 0.0001" if p < 0.0001 else (f"{p:.4f}" if p < 0.01 else f"{p:.3f}")


def format_points(x: float | None) -> str:
    """A difference of two rates in percentage points: `+12.5 pt`."""
    return "—" if x is None else ("0.0 pt" if round(x * 100, 1) == 0 else f"{x * 100:+.1f} pt")


def format_rank_range(entry: Mapping[str, Any]) -> str:
    """`1–3` (the ranks a vendor could hold), `2` when it is pinned to one, `—` without a range."""
    ranks = entry.get("rank_range")
    if not ranks:
        return "—"
    return str(ranks["best"]) if ranks["best"] == ranks["worst"] else f"{ranks['best']}–{ranks['worst']}"


def external_href(url: Any) -> str | None:
    """A link out (evidence, a vendor's result) only when it is a plain http(s) URL: anything else
    (`javascript:`, `data:`, a relative path) is shown as text, never as a link."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed IPv6 bracket: not a link
        return None
    return url.strip() if parts.scheme in ("http", "https") and parts.netloc else None


def sort_value(fig: Mapping[str, Any] | None) -> str:
    if not fig or fig.get("value") is None:
        return ""
    return repr(float(fig["value"]))


def miss_reason_label(reason: Any) -> str:
    """A miss reason (`score.miss_reasons`, e.g. ``call_failed:timeout``) in plain words: its
    code's label, and what it is about after a colon with underscores read as spaces
    ("the call failed: timeout", "fields fell short: title, anchor phrases"); empty for none."""
    if not isinstance(reason, str) or not reason:  # None, or a missing cell read as NaN
        return ""
    code, _, about = reason.partition(":")
    label = MISS_REASON_LABELS.get(code, code.replace("_", " "))
    if not about:
        return label
    return f"{label}: {', '.join(part.replace('_', ' ') for part in about.split(','))}"


def metric_label(metric: str) -> str:
    """The metric's short label (`aggregate.descriptors`), e.g. "$ / correct"."""
    d = descriptor(metric)
    return d.label if d else metric.replace("_", " ")


def metric_description(metric: str) -> str:
    """The metric's definition with which way is better and its unit (`aggregate.descriptors`): the
    title a column header or figure label shows on hover."""
    d = descriptor(metric)
    return d.tooltip if d else metric


def docstring_html(doc: str) -> Markup:
    """A docstring as HTML: reST literals and roles read as code, then CommonMark."""
    text = inspect.cleandoc(doc or "")
    text = re.sub(r":(?:func|class|mod|data|attr):`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return Markup(MARKDOWN.render(text))


@pass_context
def verdict_in_context(
    context: Any, entry: Mapping[str, Any], metric: str, scope: str | None = None, value: str | None = None
) -> dict[str, Any] | None:
    return figure_verdict(context["board"], entry, metric, scope, value)


MARKDOWN_COLUMNS = [
    "correct_rate",
    "hit_at_1",
    "hit_at_10",
    "fidelity_mean",
    "cost_per_correct_usd",
    "usd_per_1000_correct",
    "overfit_gap",
    "ttr_median_hours",
]


MARKDOWN_ILLUSTRATIVE = " †"
LETTERS_NOTE = (
    "Vendors sharing a letter cannot be told apart by the paired test (exact McNemar on the rows both answered, "
    "Holm-adjusted, family-wise 5 %); ranks: the positions each vendor can hold."
)


def leaderboard_markdown(board: Mapping[str, Any]) -> str:
    """The leaderboard as a markdown table for the Dagster UI, formatted exactly as the site shows
    it: position, letters and rank range, the ranking metric with its n and interval, then the
    other key figures (`—` when undefined); ` †` marks a figure that is not headline-eligible on
    its own (explained under the table)."""
    rank = board["rank_metric"]
    entries = [e for e in board["vendors"] if e["status"] == "scored"]
    if not entries:
        return "no scored vendors"
    present = [m for m in MARKDOWN_COLUMNS if m != rank and any(m in e["metrics"] for e in entries)]
    headers = [
        "#",
        "letters",
        "ranks",
        "vendor",
        metric_label(rank),
        "n",
        "95 % interval",
        *(metric_label(m) for m in present),
        "status",
    ]
    rows = []
    marked = False

    def mark(e: Mapping[str, Any], m: str) -> str:
        nonlocal marked
        verdict = figure_verdict(board, e, m)
        if verdict and not verdict["headline_eligible"]:
            marked = True
            return MARKDOWN_ILLUSTRATIVE
        return ""

    for e in entries:
        fig = e["metrics"].get(rank) or {}
        figures = [
            (
                format_number(m, (e["metrics"].get(m) or {}).get("value"))
                if (e["metrics"].get(m) or {}).get("value") is not None
                else (_missing_value(m) if m in e["metrics"] else "—")
            )
            + (mark(e, m) if m in e["metrics"] else "")
            for m in present
        ]
        rows.append(
            [
                e.get("position", ""),
                e.get("rank_letters") or "—",
                format_rank_range(e),
                e["vendor"],
                format_number(rank, fig.get("value")) + (mark(e, rank) if fig else ""),
                fig.get("n", ""),
                format_interval(rank, fig),
                *figures,
                "headline" if e["headline_eligible"] else "illustrative",
            ]
        )
    align = ["right", "right", "right", "left", *["right"] * (len(headers) - 5), "left"]
    table = tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True, colalign=align)
    power = board.get("power")
    if power:
        table += "\n\n" + LETTERS_NOTE + " " + power["note"]
    if marked:
        table += (
            "\n\n† illustrative: not headline-eligible on its own (the reasons are in leaderboard.json, "
            "`metric_eligibility`)"
        )
    return table
