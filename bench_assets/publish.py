"""Rendering a snapshot's published files from one leaderboard record.

`data/publish/<snapshot_id>/` holds, for a person: index.html (the leaderboard and its charts),
a page per vendor, a page per public golden row (what each vendor returned, how it was scored),
methodology (generated from the code's own definitions and constants), exclusions, errata,
known limitations and disclosures; for a program: leaderboard.json with its JSON Schema beside
it, leaderboard.csv, one JSON per vendor, the public split, public row scores, errata.json and
llms.txt. Every figure on every surface is read from the same record (`build_leaderboard`), so
they cannot disagree; a figure that is not headline-eligible on its own is marked illustrative
wherever it is shown. Everything works offline: no CDN, every asset is in the directory (a
reader may follow a link out, e.g. to a vendor's documentation cited as evidence, but nothing a
page loads comes from elsewhere). The holdout never reaches these files: `find_holdout_leaks`
scans them before they are kept.

`SiteInputs` is everything the files are rendered from; `site_inputs` gathers it from the
warehouse's tables and the files beside the manifest. The publication asset and `bench rescore`
both go through it, so rescore re-renders exactly what publication rendered.
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import io
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined, pass_context, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from tabulate import tabulate

from bench_assets import aggregate, charts, leaderboard, metrics
from bench_assets.classify import RESPONSE_CLASSES
from bench_assets.drilldown import query_drilldowns, vendor_row_verdicts
from bench_assets.errors import BenchInputError
from bench_assets.golden import GoldenRow
from bench_assets.integrity import eligibility
from bench_assets.leaderboard import HEADLINE_METRICS, leaderboard_rows
from bench_assets.manifest import Manifest

TEMPLATES = Path(__file__).parent / "templates"
SCHEMA_FILE = TEMPLATES / "leaderboard.schema.json"
STATIC_FILES = ("style.css", "sort.js")
# Leaderboard columns in display order; a metric no vendor has (e.g. time-to-retrievability
# before the first sentinel probes) is left out rather than shown as a column of dashes.
LEADERBOARD_COLUMNS = ["correct_rate_shared", "correct_rate", "hit_at_1", "hit_at_10", "fidelity_mean", "coverage",
                       "cost_per_correct_usd", "overfit_gap", "latency_p50_ms", "ttr_median_hours"]
SCOPE_COLUMNS = ["correct_rate", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "fidelity_mean", "answer_score_mean",
                 "coverage"]
KEY_FIGURES = ["correct_rate_shared", "correct_rate", "hit_at_1", "hit_at_10", "fidelity_mean", "answer_score_mean",
               "coverage", "cost_per_correct_usd", "latency_p50_ms", "ttr_median_hours"]
METRIC_LABELS: dict[str, tuple[str, str]] = {
    "correct_rate": ("Correct", "the share of golden rows answered correctly, failures counted as not correct"),
    "correct_rate_shared": ("Correct (shared rows)", "the correct rate over the task types every scored vendor supports: "
                                                "the same rows for every vendor; sets the position and tie group"),
    "hit_at_1": ("hit@1", "share of search rows with a golden URL ranked first"),
    "hit_at_3": ("hit@3", "share of search rows with a golden URL in the top 3"),
    "hit_at_5": ("hit@5", "share of search rows with a golden URL in the top 5"),
    "hit_at_10": ("hit@10", "share of search rows with a golden URL in the top 10"),
    "fidelity_mean": ("Fidelity", "mean extraction fidelity (0–1) over extract rows"),
    "answer_score_mean": ("Answer score", "mean per-cell rubric score (0, 0.5 or 1) over answer rows"),
    "coverage": ("Coverage", "share of rows that got a usable (ok) response"),
    "cost_per_correct_usd": ("$ / correct", "billed spend on the pinned plan ÷ correct answers; interval from the "
                                            "correct rate's Wilson interval (the spend is exact)"),
    "spend_usd": ("Spend", "billed spend on the pinned plan: a total of billed calls, exact (no interval)"),
    "overfit_gap": ("Overfit gap", "public minus holdout accuracy (Newcombe 95 % interval)"),
    "latency_p50_ms": ("Latency p50", "median latency of the final attempt; distribution-free order-statistic "
                                      "interval"),
    "latency_p95_ms": ("Latency p95", "95th-percentile latency of the final attempt; distribution-free "
                                      "order-statistic interval"),
    "ttr_median_hours": ("TTR median", "Kaplan–Meier median hours until a fresh sentinel page is returned"),
    "ttr_probes": ("TTR probes", "sentinel probes made: every 6 h, per page until it is returned or 30 days old"),
}
# The definitions the methodology page cites: each function's own docstring and source line.
DEFINITIONS = ["normalize_url", "hit_at_k", "first_hit_rank", "extraction_fidelity", "fidelity_label",
               "contains_normalized", "answer_in_text", "wilson_interval", "overfit_gap", "newcombe_interval", "cost_per_correct",
               "cost_per_correct_interval", "percentile", "percentile_interval", "tie_groups", "rank_ranges",
               "intervals_overlap",
               "km_median", "km_median_interval",
               "read_cell_answer", "score_cell", "CellRubric", "rubric_mean_interval"]
CLASS_MEANINGS = {
    "ok": "a usable response with results",
    "empty": "a success status with no results",
    "blocked": "a captcha or challenge page, even with a success status",
    "auth": "the key was refused",
    "quota": "quota or rate limit exhausted, or the manifest's spend ceiling reached (not sent)",
    "server": "a 5xx or a transport error",
    "timeout": "no response within the pinned timeout",
    "malformed": "a body that is not the vendor's documented shape",
    "rejected": "the vendor refused the request as invalid (4xx)",
    "unsupported": "the vendor has no such capability: left out of its denominator",
}


class Reply(NamedTuple):
    """A vendor's reply as filed: its file name (kept when published) and its bytes, published as
    they are (so the SHA-256 in review.json is the published file's); its page shows the text."""

    filename: str
    data: bytes

    @property
    def encoding(self) -> str:
        """How the page shows the text: UTF-8 if it is, else Windows-1252, else Latin-1 (which
        decodes any byte); the published file itself is the bytes, unchanged."""
        from bench_assets.integrity.leaks import text_encoding

        return text_encoding(self.data)

    @property
    def text(self) -> str:
        return self.data.decode(self.encoding)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


_MD = MarkdownIt("commonmark", {"html": False}).enable("table")


# ##### FORMATTING (one place, used by every HTML surface)


def format_number(metric: str, x: float | None) -> str:
    """A number in its metric's unit: `$0.0042`, `48 ms`, `12.5 h`, `+0.036`, `0.929`."""
    if x is None:
        return "—"
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


def figure_verdict(board: Mapping[str, Any], entry: Mapping[str, Any], metric: str, scope: str | None = None,
                   value: str | None = None) -> dict[str, Any] | None:
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


def _sort_value(fig: Mapping[str, Any] | None) -> str:
    if not fig or fig.get("value") is None:
        return ""
    return repr(float(fig["value"]))


def _label(metric: str) -> str:
    return METRIC_LABELS.get(metric, (metric.replace("_", " "), ""))[0]


def _describe(metric: str) -> str:
    return METRIC_LABELS.get(metric, ("", metric))[1]


def _docstring_html(doc: str) -> Markup:
    """A docstring as HTML: reST literals and roles read as code, then CommonMark."""
    text = inspect.cleandoc(doc or "")
    text = re.sub(r":(?:func|class|mod|data|attr):`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return Markup(_MD.render(text))


@pass_context
def _verdict_in_context(context: Any, entry: Mapping[str, Any], metric: str, scope: str | None = None,
                        value: str | None = None) -> dict[str, Any] | None:
    return figure_verdict(context["board"], entry, metric, scope, value)


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(fmt=format_figure, num=format_number, interval=format_interval, sortval=_sort_value,
                       label=_label, describe=_describe, class_meanings=CLASS_MEANINGS, verdict=_verdict_in_context,
                       mark=illustrative_marker, ranks=format_rank_range, external=external_href,
                       correct_threshold=metrics.CORRECT_THRESHOLD, aggregate_min_n=eligibility.AGGREGATE_MIN_N,
                       chart_min_n=eligibility.CHART_MIN_N)
    env.filters["markdown"] = lambda text: Markup(_MD.render(text or ""))
    return env


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    if isinstance(text, bytes):
        tmp.write_bytes(text)
    else:
        tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# ##### MACHINE-READABLE FILES


def leaderboard_csv(board: dict[str, Any]) -> str:
    rows = leaderboard_rows(board)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def leaderboard_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of leaderboard.json, published beside it."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def vendor_json(board: Mapping[str, Any], entry: Mapping[str, Any], verdicts: list[dict[str, Any]]) -> str:
    """One vendor's file: its leaderboard entry as published, and its verdict on every public row."""
    doc = {"snapshot_id": board["snapshot_id"], "mode": board["mode"], "rank_metric": board["rank_metric"],
           "ranking": board.get("ranking"), "entry": entry, "public_rows": verdicts}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def public_row_scores_csv(queries: Sequence[Mapping[str, Any]]) -> str:
    """Every vendor's verdict on every public row, one line each (a researcher's re-scoring check)."""
    cols = ["row_id", "stratum", "task_type", "vendor", "response_class", "correct", "first_hit_rank", "hit_at_1",
            "hit_at_3", "hit_at_5", "hit_at_10", "fidelity", "fidelity_label", "answer_score", "answer_rule",
            "billed_usd", "latency_ms", "attempts"]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    for q in queries:
        for e in q["vendors"]:
            row = {"row_id": q["row_id"], "stratum": q["stratum"], "task_type": q["task_type"]}
            row.update({c: e.get(c) for c in cols if c not in row})
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue()


def llms_txt(board: Mapping[str, Any], manifest: Manifest, has_queries: bool,
             extra: Mapping[str, str] | None = None) -> str:
    """llms.txt (llmstxt.org): what the benchmark measures and where the data is, for an agent."""
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    lines = [
        f"# bench · {board.get('title') or board['snapshot_id']}",
        "",
        "> An open, reproducible benchmark of web-search and page-extraction APIs for AI agents. Each vendor "
        "answers the same verified golden rows (search: is a golden URL in the top k; extract: how faithfully "
        "the page's title, phrases, table cells and numbers come back; answer: is the verified answer in the "
        "results, or for range and not-available rows, what the results state, scored 0 / 0.5 / 1 by the "
        "per-cell rubric). Scores are deterministic (no LLM judge); every figure has its n and a 95 % interval.",
        "",
        f"Snapshot `{board['snapshot_id']}`, mode `{board['mode']}`. "
        + ("Some figures are headline-eligible." if board["headline_eligible"] else
           "Nothing in this snapshot is headline-eligible: the figures are illustrative "
           f"({board['mode']} mode) and must not be quoted as a comparison of real vendors."),
        f"Vendors are ranked by `{board['rank_metric']}`; vendors whose 95 % intervals overlap (directly or "
        "through a chain of overlapping intervals) share a `rank_group`, and their order within it is not "
        "significant. Each vendor's `rank_range` (best, worst) is narrower: 1 + the vendors whose interval lies "
        "entirely above its own, to the number whose interval does not lie entirely below it. "
        + ((board.get("ranking") or {}).get("note") or ""),
        "",
        "## Data",
        "",
        "- [leaderboard.json](leaderboard.json): the record every page is rendered from. `vendors[]` has "
        "`vendor`, `status` (`scored` / `excluded` / `not_run`) and `reason`, `position`, `rank_group`, "
        "`rank_range{best, worst}`, `metrics{name: {value, n, low, high}}`, `breakdown{scope: {value: metrics}}`, "
        "`headline_eligible` and `reasons` (the vendor's ranking claim), `metric_eligibility{name: "
        "{headline_eligible, reasons}}` and `breakdown_eligibility` (each figure by its own n).",
        "- [leaderboard.schema.json](leaderboard.schema.json): its JSON Schema (draft 2020-12).",
        "- [leaderboard.csv](leaderboard.csv): one line per vendor; `position`, `rank_group`, `rank_best`, "
        "`rank_worst`; each metric as `name`, `name_n`, `name_low`, `name_high` (billed spend is exact: low = high "
        "= value) and `name_headline_eligible`; `class_<name>` counts the rows of each response class.",
        "- [public_split.jsonl](public_split.jsonl): the public golden rows (the holdout is never published).",
    ]
    if has_queries:
        lines.append("- [public_row_scores.csv](public_row_scores.csv): every vendor's class and verdict on every "
                     "public row.")
    lines.append("- [errata.json](errata.json): corrections to this snapshot.")
    for rel, note in (extra or {}).items():
        lines.append(f"- [{rel}]({rel})" + (f": {note}" if note else ""))
    lines += ["", "## Vendors", ""]
    quoted = list(dict.fromkeys([board["rank_metric"], "correct_rate"]))
    for e in scored:
        figures = []
        for name in quoted:
            cr = (e["metrics"].get(name) or {})
            verdict = figure_verdict(board, e, name)
            figures.append(f"{name} " + ("undefined" if cr.get("value") is None else (
                f"{cr['value']} (n={cr['n']}, 95 % interval {cr.get('low')} to {cr.get('high')})"))
                + (f" [illustrative: {'; '.join(verdict['reasons'])}]" if verdict and not verdict["headline_eligible"]
                   else ""))
        lines.append(f"- [{e['vendor']}](vendors/{e['vendor']}.json): position {e.get('position')} (plausible "
                     f"ranks {format_rank_range(e)}), group {e.get('rank_group')}, {', '.join(figures)}; plan: "
                     f"{e.get('plan')}")
    for e in board["vendors"]:
        if e["status"] == "excluded":
            lines.append(f"- {e['vendor']}: excluded, never called or scored: {e.get('reason')}")
    lines += ["", "## Pages", "",
              "- [Leaderboard](index.html)",
              "- [Methodology](methodology.html): metric definitions generated from the code",
              "- [Limitations](limitations.html), [Disclosures](disclosures.html), [Errata](errata.html), "
              "[Exclusions](exclusions.html)"]
    if has_queries:
        lines.append("- [Public queries](queries/index.html): per-row drill-down of what each vendor returned")
    lines += ["", "## Optional", "",
              "- Metric definitions: hit@k uses normalized URLs (host case-folded, `www.`, default port, "
              "fragment, trailing slash and `utm_*` removed; path case kept). Extraction fidelity weights: "
              + ", ".join(f"{k} {v}" for k, v in manifest.fidelity_weights.items())
              + f"; correct ≥ {metrics.CORRECT_THRESHOLD}. Cost per correct is undefined (null) at zero "
              "correct, never 0. Time-to-retrievability is a Kaplan–Meier median right-censored at "
              f"{metrics.DEFAULT_CENSOR_AT_HOURS:g} h; null means not reached."]
    return "\n".join(lines) + "\n"


# What the files other stages add to the publication hold (shown on the Data page and in llms.txt).
EXTRA_FILE_NOTES = {
    "holdout_commitments.json": "keyed digests (HMAC-SHA-256) of every archived holdout response: the holdout "
                                "can be audited when it is retired without being revealed now",
    "exclusions.json": "the exclusions ledger: excluded vendors, rows a vendor cannot serve, dead golden rows, "
                       "decoys, vendors not run, each with its reason and effect on the denominators",
    "exclusions.csv": "the exclusions ledger as CSV",
    "review.json": "the vendor-review record: when each vendor got its rows, when publication opened, replies",
}
MARKDOWN_COLUMNS = ["correct_rate", "hit_at_1", "hit_at_10", "fidelity_mean", "cost_per_correct_usd", "overfit_gap",
                    "ttr_median_hours"]


MARKDOWN_ILLUSTRATIVE = " †"


def leaderboard_markdown(board: Mapping[str, Any]) -> str:
    """The leaderboard as a markdown table for the Dagster UI, formatted exactly as the site shows
    it: position, tie group and rank range, the ranking metric with its n and interval, then the
    other key figures (`—` when undefined); ` †` marks a figure that is not headline-eligible on
    its own (explained under the table)."""
    rank = board["rank_metric"]
    entries = [e for e in board["vendors"] if e["status"] == "scored"]
    if not entries:
        return "no scored vendors"
    present = [m for m in MARKDOWN_COLUMNS if m != rank and any(m in e["metrics"] for e in entries)]
    headers = ["#", "group", "ranks", "vendor", _label(rank), "n", "95 % interval", *(_label(m) for m in present),
               "status"]
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
        figures = [(format_number(m, (e["metrics"].get(m) or {}).get("value")) if (e["metrics"].get(m) or {}).get(
            "value") is not None else (_missing_value(m) if m in e["metrics"] else "—"))
            + (mark(e, m) if m in e["metrics"] else "") for m in present]
        rows.append([e.get("position", ""), e.get("rank_group", ""), format_rank_range(e), e["vendor"],
                     format_number(rank, fig.get("value")) + (mark(e, rank) if fig else ""),
                     fig.get("n", ""), format_interval(rank, fig), *figures,
                     "headline" if e["headline_eligible"] else "illustrative"])
    align = ["right", "right", "right", "left", *["right"] * (len(headers) - 5), "left"]
    table = tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True, colalign=align)
    if marked:
        table += ("\n\n† illustrative: not headline-eligible on its own (the reasons are in leaderboard.json, "
                  "`metric_eligibility`)")
    return table


# ##### METHODOLOGY, GENERATED FROM THE CODE


def _source_of(obj: Any) -> str:
    path = Path(inspect.getsourcefile(obj) or "")
    try:
        rel = path.relative_to(Path(__file__).resolve().parent.parent)
    except ValueError:
        rel = path
    return f"{rel.as_posix()}:{inspect.getsourcelines(obj)[1]}"


def methodology_context(manifest: Manifest) -> dict[str, Any]:
    """Everything the methodology page states, read from the code and the manifest."""
    defaults = inspect.signature(metrics.wilson_interval).parameters
    constants = [
        ("Fidelity: correct at or above", metrics.CORRECT_THRESHOLD, "bench_assets.metrics.CORRECT_THRESHOLD"),
        ("Fidelity: partial at or above", metrics.PARTIAL_THRESHOLD, "bench_assets.metrics.PARTIAL_THRESHOLD"),
        ("Confidence of every interval", defaults["confidence"].default, "wilson_interval(confidence=…)"),
        ("Kaplan–Meier right-censoring (hours)", metrics.DEFAULT_CENSOR_AT_HOURS,
         "bench_assets.metrics.DEFAULT_CENSOR_AT_HOURS"),
        ("Minimum n behind a headline aggregate", eligibility.AGGREGATE_MIN_N,
         "bench_assets.integrity.eligibility.AGGREGATE_MIN_N"),
        ("Minimum n behind a headline per-stratum figure", eligibility.CHART_MIN_N,
         "bench_assets.integrity.eligibility.CHART_MIN_N"),
        ("Ranking metric", leaderboard.RANK_METRIC, "bench_assets.leaderboard.RANK_METRIC"),
    ]
    weights = [(f, metrics.FIDELITY_WEIGHTS[f], manifest.fidelity_weights.get(f)) for f in metrics.FIDELITY_FIELDS]
    definitions = [(name, _docstring_html(getattr(metrics, name).__doc__), _source_of(getattr(metrics, name)))
                   for name in DEFINITIONS if hasattr(metrics, name)]
    return {
        "constants": constants, "weights": weights, "definitions": definitions,
        "eligibility": Markup(_MD.render(leaderboard.eligibility_rules())),
        "aggregation": _docstring_html(aggregate.__doc__ or ""),
        "fidelity_mean": _docstring_html(getattr(aggregate, "_mean_interval").__doc__ or ""),
        "ranking": _docstring_html(aggregate.shared_task_types.__doc__ or ""),
        "classes": [(c, CLASS_MEANINGS.get(c, "")) for c in RESPONSE_CLASSES],
    }


def known_limitations(board: Mapping[str, Any], manifest: Manifest) -> list[str]:
    """Limitations that follow from this snapshot's data, stated where a reader will look."""
    out = []
    if board["mode"] != "live":
        out.append(f"This snapshot runs in {board['mode']} mode: every vendor is the local simulator, so the "
                   "figures show the pipeline working, not how the real services compare.")
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    no_extract = [e["vendor"] for e in scored if "fidelity_mean" not in e["metrics"]]
    if no_extract:
        out.append("No extraction endpoint, so no fidelity figure and a smaller denominator for the overall "
                   f"correct rate (search and answer rows only): {', '.join(no_extract)}. The ranking uses only "
                   "the task types every scored vendor supports, so it compares all vendors on the same rows.")
    strata_n = sorted({f["n"] for e in scored for figs in (e.get("breakdown") or {}).get("stratum", {}).values()
                       for m, f in figs.items() if m == "correct_rate"})
    if strata_n:
        out.append(f"Per-stratum figures rest on few rows (n = {strata_n[0]}–{strata_n[-1]} per vendor and "
                   "stratum); their intervals are wide, and the charts show them.")
    if not any("ttr_median_hours" in e["metrics"] for e in scored):
        out.append("Time-to-retrievability is not reported in this snapshot: no sentinel probe results yet.")
    return out


# ##### THE SITE


def _leaderboard_columns(board: Mapping[str, Any]) -> list[str]:
    present = {m for e in board["vendors"] for m in (e.get("metrics") or {})}
    return [m for m in LEADERBOARD_COLUMNS if m in present]


def _agent_ready(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The agent-ready record of a vendor in one shape, whatever the record carries."""
    raw = entry.get("agent_ready")
    if raw is None:
        return None
    if isinstance(raw, bool):
        return {"ready": raw, "details": {}}
    if isinstance(raw, Mapping):
        ready = next((raw[k] for k in ("ready", "value", "agent_ready", "passed") if k in raw), None)
        return {"ready": ready, "details": {k: v for k, v in raw.items() if k not in ("ready", "value", "agent_ready",
                                                                                      "passed")}}
    return {"ready": None, "details": {"record": raw}}


def render_site(out_dir: Path, board: dict[str, Any], manifest: Manifest, public_rows: list[dict[str, Any]],
                errata: list[dict[str, Any]], *, queries: Sequence[dict[str, Any]] = (),
                ttr_observations: Mapping[str, tuple[Sequence[float], Sequence[bool]]] | None = None,
                replies: Mapping[str, Reply] | None = None, disclosures: str | None = None,
                split_counts: Mapping[str, int] | None = None,
                extra_files: Mapping[str, str] | None = None) -> list[Path]:
    """Write every published file of the snapshot; returns the paths written.

    `queries` are the public rows' drill-down records (`drilldown.query_drilldowns`),
    `ttr_observations` the sentinel observations per vendor for the Kaplan–Meier chart,
    `replies` each vendor's reply (published verbatim under its own file name, and as a page),
    `disclosures` the operator's conflict-of-interest declaration (markdown), `split_counts` the
    public and holdout row counts, `extra_files` further published files (relative path → text,
    e.g. integrity's holdout commitments), listed on the Data page and in llms.txt.
    """
    env = _environment()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    written: list[Path] = []
    replies = dict(replies or {})
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    extra = {rel: EXTRA_FILE_NOTES.get(rel, "") for rel in sorted(extra_files or {})}

    def put(rel: str, text: str | bytes) -> None:
        _write(out_dir / rel, text)
        written.append(out_dir / rel)

    def page(rel: str, template: str, **context: Any) -> None:
        depth = rel.count("/")
        put(rel, env.get_template(template).render(board=board, manifest=manifest, root="../" * depth,
                                                   active=context.pop("active", ""), **context))

    site_charts = []
    for chart in charts.site_charts(board, ttr_observations):
        figure = chart.build()
        if figure is not None:
            put(f"charts/{chart.name}.svg", charts.render(figure))
            site_charts.append(chart)
    verdicts_by_vendor = {e["vendor"]: vendor_row_verdicts(list(queries), e["vendor"]) for e in scored}
    replied = set()
    for vendor, reply in sorted(replies.items()):
        if vendor in manifest.vendors:
            put(f"replies/{reply.filename}", reply.data)
            page(f"replies/{vendor}.html", "reply.html.j2", vendor=vendor, reply=reply, active="")
            replied.add(vendor)

    page("index.html", "index.html.j2", columns=_leaderboard_columns(board), charts=site_charts, replied=replied,
         split_counts=dict(split_counts or {}), has_queries=bool(queries), agent=_agent_ready, active="leaderboard")
    for e in scored:
        page(f"vendors/{e['vendor']}.html", "vendor.html.j2", e=e, spec=manifest.vendors.get(e["vendor"]),
             key_figures=[m for m in KEY_FIGURES if m in e["metrics"]], scope_columns=SCOPE_COLUMNS,
             verdicts=verdicts_by_vendor[e["vendor"]],
             agent=_agent_ready(e), has_reply=e["vendor"] in replied, active="leaderboard")
        put(f"vendors/{e['vendor']}.json", vendor_json(board, e, verdicts_by_vendor[e["vendor"]]))
    page("queries/index.html", "queries.html.j2", queries=queries, active="queries")
    for q in queries:
        page(f"queries/{q['row_id']}.html", "query.html.j2", q=q, active="queries")
    if queries:
        put("public_row_scores.csv", public_row_scores_csv(queries))
    page("methodology.html", "methodology.html.j2", m=methodology_context(manifest), active="methodology")
    page("exclusions.html", "exclusions.html.j2", extra=extra, active="exclusions")
    errata_keys = list(dict.fromkeys(k for item in errata for k in item))
    page("errata.html", "errata.html.j2", errata=errata, errata_keys=errata_keys, active="errata")
    page("limitations.html", "limitations.html.j2", limitations=known_limitations(board, manifest),
         active="limitations")
    page("disclosures.html", "disclosures.html.j2", disclosures=disclosures, active="disclosures")
    for rel, text in sorted((extra_files or {}).items()):
        put(rel, text)
    page("data.html", "data.html.j2", has_queries=bool(queries), extra=extra, active="data")
    put("leaderboard.json", json.dumps(board, indent=2, sort_keys=True) + "\n")
    put("leaderboard.schema.json", SCHEMA_FILE.read_text(encoding="utf-8"))
    put("leaderboard.csv", leaderboard_csv(board))
    put("public_split.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in public_rows))
    put("errata.json", json.dumps(errata, indent=2) + "\n")
    put("llms.txt", llms_txt(board, manifest, bool(queries), extra))
    for asset in STATIC_FILES:
        put(asset, (TEMPLATES / asset).read_text(encoding="utf-8"))
    return written


# ##### THE INPUTS OF A PUBLICATION (read by the publication asset and by `bench rescore`)


@dataclass
class SiteInputs:
    """Everything a snapshot's published files are rendered from: the leaderboard record and what
    `render_site` takes beside it. Rendering the same inputs gives the same bytes (no clock is read)."""

    board: dict[str, Any]
    manifest: Manifest
    public_rows: list[dict[str, Any]]
    errata: list[dict[str, Any]]
    queries: list[dict[str, Any]] = field(default_factory=list)
    ttr_observations: dict[str, tuple[list[float], list[bool]]] = field(default_factory=dict)
    replies: dict[str, Reply] = field(default_factory=dict)
    disclosures: str | None = None
    split_counts: dict[str, int] = field(default_factory=dict)
    extra_files: dict[str, str] = field(default_factory=dict)

    def render(self, out_dir: Path) -> list[Path]:
        return render_site(out_dir, self.board, self.manifest, self.public_rows, self.errata, queries=self.queries,
                           ttr_observations=self.ttr_observations, replies=self.replies, disclosures=self.disclosures,
                           split_counts=self.split_counts, extra_files=self.extra_files)


def snapshot_replies(snapshot_dir: Path, recorded: pd.DataFrame) -> dict[str, Reply]:
    """Vendors' replies filed beside the manifest (`replies/<vendor>.md` or `.txt`), as their bytes.
    A reply recorded in `vendor_replies` must still be the bytes recorded there (it is published
    as received): a changed file is an input error."""
    from bench_assets.integrity.replies import REPLY_SUFFIXES

    sha_of = {(r.vendor, Path(r.path).name): r.sha256 for r in recorded.itertuples(index=False)} if len(recorded) else {}
    replies = {}
    for path in sorted((snapshot_dir / "replies").glob("*")):
        if path.suffix in REPLY_SUFFIXES and path.is_file():
            reply = Reply(path.name, path.read_bytes())
            expected = sha_of.get((path.stem, path.name))
            if expected is not None and expected != reply.sha256:
                raise BenchInputError(str(path), [(None, "<file>", (
                    f"changed since it was filed (recorded sha256 {expected}, now {reply.sha256}): a reply is "
                    "published as received; file the new one with `bench review reply`"))])
            replies[path.stem] = reply
    return replies


def ttr_as_of(metrics_frame: pd.DataFrame) -> datetime | None:
    """The last probe tick the leaderboard's time-to-retrievability figures include (their
    `ttr_as_of` row in `vendor_metrics`), None before the first probe."""
    from datetime import timezone

    from bench_assets.ttr import AS_OF_METRIC

    if metrics_frame.empty or "metric" not in metrics_frame:
        return None
    values = metrics_frame.loc[metrics_frame["metric"] == AS_OF_METRIC, "value"].dropna()
    return datetime.fromtimestamp(float(values.max()), timezone.utc) if len(values) else None


def ttr_observations(pages: pd.DataFrame, probes: pd.DataFrame,
                     as_of: datetime | None = None) -> dict[str, tuple[list[float], list[bool]]]:
    """Each vendor's sentinel subjects (hours, found) for the Kaplan–Meier chart, derived by
    `ttr.ttr_figures` (the same derivation as the TTR figure) from the probes of ticks up to
    `as_of` (the ticks the leaderboard's figure includes), so the curve and the figure agree."""
    from bench_assets.ttr import ttr_figures

    if pages.empty or probes.empty:
        return {}
    if as_of is not None:
        probes = probes[pd.to_datetime(probes["tick_at"], utc=True) <= as_of]
        if probes.empty:
            return {}
    return {v: (list(f.durations), list(f.observed)) for v, f in ttr_figures(pages, probes).items() if f.sentinels}


def private_terms(private_dir: Path, manifest: Manifest, warehouse: Any, rows: list[GoldenRow],
                  split: Mapping[str, str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """What must never be published, besides the decoys: every holdout row of the snapshot, and
    every holdout row that died and was replaced (no longer in the golden set, still private).
    Returns the terms and their counts."""
    from bench_assets.golden import load_golden_file
    from bench_assets.integrity.dead_rows import load_dead_rows
    from bench_assets.verify import row_urls

    def term(r: GoldenRow) -> dict[str, Any]:
        return {"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}

    terms = [term(r) for r in rows if split.get(r.id) == "holdout"]
    dead_ids = set(warehouse.query_df("SELECT row_id FROM dead_rows WHERE snapshot_id = ? AND split = 'holdout'",
                                      [manifest.snapshot_id])["row_id"]) - {r.id for r in rows}
    kept = load_dead_rows(private_dir, manifest.snapshot_id)
    missing = dead_ids - set(kept)
    if missing:  # recorded before dead rows were kept whole: read them from the golden source file
        source = (private_dir / "golden" / f"{manifest.snapshot_id}.jsonl" if manifest.golden.source == "planted_demo"
                  else private_dir / (manifest.golden.path or ""))
        try:
            kept.update({r.id: r for r in load_golden_file(source) if r.id in missing})
        except (BenchInputError, OSError):
            pass
    for row_id in sorted(dead_ids):
        # a dead row that cannot be read any more is still guarded by its id
        terms.append(term(kept[row_id]) if row_id in kept else {"row_id": row_id, "request_text": None, "golden_urls": []})
    return terms, {"holdout_rows": len(terms) - len(dead_ids), "dead_holdout_rows": len(dead_ids),
                   "dead_holdout_rows_unreadable": len(dead_ids - set(kept))}


def site_inputs(manifest: Manifest, board: dict[str, Any], rows: list[GoldenRow], split: Mapping[str, str], *,
                snapshot_dir: Path, scores: pd.DataFrame, results: pd.DataFrame, raw: pd.DataFrame,
                sentinel_pages: pd.DataFrame, sentinel_probes: pd.DataFrame, recorded_replies: pd.DataFrame,
                leak_guard: Any, extra_files: Mapping[str, str], as_of: datetime | None = None) -> SiteInputs:
    """The inputs of a snapshot's site: `board` the leaderboard record; `scores`, `results` and
    `raw` the row scores, parsed results and archived responses (only the public split's are
    used, for the drill-down, whose results that reveal a private page `leak_guard` withholds);
    the sentinel pages and probes (up to the tick `as_of`) for the Kaplan–Meier chart;
    `recorded_replies` the `vendor_replies` table; `extra_files` integrity's published files. The
    errata, the replies and the operator's declaration are read from `snapshot_dir`."""
    from bench_assets.integrity.declaration import (
        DECLARATION_FILE,
        disclosures_markdown,
    )
    from bench_assets.integrity.errata import load_published_errata

    public_ids = {r.id for r in rows if split.get(r.id) == "public"}
    queries = query_drilldowns(manifest, rows, dict(split),
                               scores[scores["row_id"].isin(public_ids)] if len(scores) else scores,
                               results[results["row_id"].isin(public_ids)] if len(results) else results,
                               raw[raw["role"] == "public"] if len(raw) else raw, leak_guard)
    return SiteInputs(
        board=board, manifest=manifest,
        public_rows=[json.loads(r.model_dump_json()) for r in rows if split.get(r.id) == "public"],
        errata=load_published_errata(snapshot_dir / "errata.json"),
        queries=queries,
        ttr_observations=ttr_observations(sentinel_pages, sentinel_probes, as_of),
        replies=snapshot_replies(snapshot_dir, recorded_replies),
        disclosures=disclosures_markdown(snapshot_dir / DECLARATION_FILE),
        split_counts={"total": len(rows), "public": sum(1 for s in split.values() if s == "public"),
                      "holdout": sum(1 for s in split.values() if s == "holdout")},
        extra_files=dict(extra_files))


def find_holdout_leaks(out_dir: Path, holdout: list[dict[str, Any]]) -> list[str]:
    """Every place a holdout id, query text or golden URL appears in a published file, in any
    spelling a reader would read as the same (see `bench_assets.integrity.leaks`)."""
    from bench_assets.integrity.leaks import LeakGuard

    return LeakGuard(holdout).scan(out_dir)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


__all__ = ["render_site", "find_holdout_leaks", "leaderboard_csv", "leaderboard_schema", "format_figure",
           "format_number", "llms_txt", "HEADLINE_METRICS", "SiteInputs", "site_inputs"]
