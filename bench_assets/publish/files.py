"""The machine-readable published files: leaderboard CSV and JSON Schema, a JSON per vendor,
every public row's verdicts, llms.txt; and writing a file atomically."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench_assets import metrics
from bench_assets.aggregate.leaderboard import leaderboard_rows
from bench_assets.manifest import Manifest
from bench_assets.publish.format import figure_verdict, format_rank_range
from bench_assets.score.partition import VERDICT_COLUMNS

TEMPLATES = Path(__file__).parent / "templates"
SCHEMA_FILE = TEMPLATES / "leaderboard.schema.json"
STATIC_FILES = ("style.css", "sort.js")


def write_file(path: Path, text: str | bytes) -> None:
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


PAIRWISE_COLUMNS = [
    "vendor_a",
    "vendor_b",
    "n",
    "both_correct",
    "a_only",
    "b_only",
    "neither",
    "rate_a",
    "rate_b",
    "difference",
    "difference_low",
    "difference_high",
    "p_value",
    "p_adjusted",
    "better",
]


def pairwise_csv(board: Mapping[str, Any]) -> str:
    """Every pair of vendors compared on the ranking rows both answered, one line each: the 2×2
    counts (`a_only` = rows only vendor_a got right, McNemar's b; `b_only` = c), both rates, the
    difference a − b with its 95 % interval, raw and Holm-adjusted exact McNemar p-values, and the
    vendor found better (empty: cannot be told apart)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=PAIRWISE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for p in (board.get("comparisons") or {}).get("pairs") or []:
        d = p.get("difference") or {}
        row = {
            **{k: p.get(k) for k in PAIRWISE_COLUMNS if k in p},
            "difference": d.get("value"),
            "difference_low": d.get("low"),
            "difference_high": d.get("high"),
        }
        writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in PAIRWISE_COLUMNS})
    return buf.getvalue()


def leaderboard_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of leaderboard.json, published beside it."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def vendor_json(board: Mapping[str, Any], entry: Mapping[str, Any], verdicts: list[dict[str, Any]]) -> str:
    """One vendor's file: its leaderboard entry as published, and its verdict on every public row."""
    doc = {
        "snapshot_id": board["snapshot_id"],
        "mode": board["mode"],
        "rank_metric": board["rank_metric"],
        "ranking": board.get("ranking"),
        "entry": entry,
        "public_rows": verdicts,
    }
    if not verdicts or not all(v and _flat(v) for v in verdicts):
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    # `json.dumps(indent=2)` is Python's encoder (C's has no indent), slow over a vendor's thousands
    # of verdicts. They are written by C's encoder instead, in one call, with the
    # separator between items that puts each key on a line of its own six spaces in, as the
    # indented encoder does; then each verdict's braces on lines of their own (no string holds a
    # newline: JSON escapes it). A test holds the two equal byte for byte.
    head = json.dumps({**doc, "public_rows": []}, indent=2, sort_keys=True)
    placeholder = '\n  "public_rows": []'
    assert head.count(placeholder) == 1
    inner = json.dumps(verdicts, sort_keys=True, separators=(",\n      ", ": "))[2:-2]  # without `[{` and `}]`
    rows = inner.replace("},\n      {", "\n    },\n    {\n      ")
    return head.replace(placeholder, f'\n  "public_rows": [\n    {{\n      {rows}\n    }}\n  ]') + "\n"


def _flat(d: Mapping[str, Any]) -> bool:
    return all(not isinstance(v, (dict, list, tuple)) for v in d.values())


PUBLIC_ROW_SCORE_COLUMNS = ["row_id", "stratum", "task_type", "vendor", *VERDICT_COLUMNS]


class PublicRowScores:
    """`public_row_scores.csv` written a vendor's figures on a row at a time (`add`)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        # a plain writer fed lists: what `csv.DictWriter` writes, without its check of every row's keys
        self._writer = csv.writer(self._buffer, lineterminator="\n")
        self._writer.writerow(PUBLIC_ROW_SCORE_COLUMNS)

    def add(self, figures: Mapping[str, Any]) -> None:
        """One line: a vendor's figures on one public row (`PUBLIC_ROW_SCORE_COLUMNS`; a missing one is empty)."""
        self._writer.writerow(["" if (v := figures.get(c)) is None else v for c in PUBLIC_ROW_SCORE_COLUMNS])

    def text(self) -> str:
        return self._buffer.getvalue()


def public_row_scores_csv(queries: Iterable[Mapping[str, Any]]) -> str:
    """Every vendor's verdict on every public row, one line each (a researcher's re-scoring check),
    from the public rows' drill-down records."""
    rows = PublicRowScores()
    for q in queries:
        row = {c: q[c] for c in ("row_id", "stratum", "task_type")}
        for e in q["vendors"]:
            rows.add({**e, **row})
    return rows.text()


def llms_txt(
    board: Mapping[str, Any],
    manifest: Manifest,
    has_queries: bool,
    extra: Mapping[str, str] | None = None,
    has_evidence: bool = False,
) -> str:
    """llms.txt (llmstxt.org): what the benchmark measures and where the data is, for an agent."""
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    lines = [
        f"# bench · {board.get('title') or board['snapshot_id']}",
        "",
        "> An open, reproducible benchmark of web-search and page-extraction APIs for AI agents. Each vendor "
        "is sent the same verified golden rows and scored on the tasks it supports (search: is a golden URL in "
        "the top k; extract: how faithfully the page's title, phrases, table cells and numbers come back; answer: "
        "is the verified answer in the results, or for range and not-available rows, what the results state, "
        "scored 0 / 0.5 / 1 by the per-cell rubric). Scores are deterministic (no LLM judge); every estimate has "
        "its n and a 95 % interval (billed spend is an exact total).",
        "",
        f"Snapshot `{board['snapshot_id']}`, mode `{board['mode']}`. "
        + (
            "Some figures are headline-eligible."
            if board["headline_eligible"]
            else "Nothing in this snapshot is headline-eligible: the figures are illustrative "
            f"({board['mode']} mode) and must not be quoted as a comparison of real vendors."
        ),
        f"Vendors are placed by `{board['rank_metric']}`. "
        + ((board.get("ranking") or {}).get("note") or "")
        + " "
        + _comparisons_in_words(board),
        "",
        *_provenance_lines(board),
        "",
        "## Data",
        "",
        "- [leaderboard.json](leaderboard.json): the record every page is rendered from. `metrics[]` describes "
        "every metric key of the vendor entries (below); `status`, `disclaimer`, `license`, `generated_at`, "
        "`content_hash` and `cohort` say what the file is (above). `vendors[]` has "
        "`vendor`, `status` (`scored` / `excluded` / `not_run`) and `reason`, `position`, `rank_letters`, "
        "`rank_range{best, worst}`, `metrics{name: {value, n, low, high}}`, `breakdown{scope: {value: metrics}}`, "
        "`pareto_optimal` (on the cost–quality frontier: ranking figure against `usd_per_1000_correct_shared`, the cost of the same rows; "
        "`frontier.note` states the rule), `headline_eligible` and `reasons` (the vendor's ranking claim), "
        "`metric_eligibility{name: "
        "{headline_eligible, reasons}}` and `breakdown_eligibility` (each figure by its own n). `comparisons.pairs[]` "
        "is every pair's paired test, `power` the smallest difference the snapshot could detect, `versions` the "
        "code, Python, packages, adapters and input files' SHA-256 it was fetched and published with.",
        "- [leaderboard.schema.json](leaderboard.schema.json): its JSON Schema (draft 2020-12).",
        "- [pairwise.csv](pairwise.csv): one line per pair of vendors: the rows both answered for the ranking "
        "figure (`n`), `both_correct`, `a_only` (McNemar's b), `b_only` (c), `neither`, both rates, the difference "
        "a − b with its 95 % interval (Newcombe, paired), exact McNemar `p_value` and Holm-adjusted `p_adjusted`, "
        "and the vendor found `better` (empty: cannot be told apart).",
        "- [leaderboard.csv](leaderboard.csv): one line per vendor; `position`, `rank_letters`, `rank_best`, "
        "`rank_worst`; each metric as `name`, `name_n`, `name_low`, `name_high` (billed spend is exact: low = high "
        "= value) and `name_headline_eligible`; `class_<name>` counts the rows of each response class.",
        "- [public_split.jsonl](public_split.jsonl): the public golden rows (the holdout is never published).",
    ]
    if has_queries:
        lines.append(
            "- [public_row_scores.csv](public_row_scores.csv): every vendor's class and verdict on every public row."
        )
    if has_evidence:
        lines.append(
            "- [evidence/bundle.json](evidence/bundle.json) and `evidence/attempts/<vendor>.parquet`, "
            "`evidence/results/<vendor>.parquet`: the evidence bundle, what each vendor returned for every public "
            "row (every attempt; every result with its URL, title and the text scored, or digests only where the "
            "vendor's terms allow no more); columns in [evidence.schema.json](evidence.schema.json). "
            "`bench reproduce DIR` re-derives every public verdict and figure from this folder alone."
        )
    lines.append("- [errata.json](errata.json): corrections to this snapshot.")
    for rel, note in (extra or {}).items():
        lines.append(f"- [{rel}]({rel})" + (f": {note}" if note else ""))
    lines += ["", "## Vendors", ""]
    quoted = list(dict.fromkeys([board["rank_metric"], "correct_rate"]))
    for e in scored:
        figures = []
        for name in quoted:
            cr = e["metrics"].get(name) or {}
            verdict = figure_verdict(board, e, name)
            figures.append(
                f"{name} "
                + (
                    "undefined"
                    if cr.get("value") is None
                    else (f"{cr['value']} (n={cr['n']}, 95 % interval {cr.get('low')} to {cr.get('high')})")
                )
                + (
                    f" [illustrative: {'; '.join(verdict['reasons'])}]"
                    if verdict and not verdict["headline_eligible"]
                    else ""
                )
            )
        lines.append(
            f"- [{e['vendor']}](vendors/{e['vendor']}.json): position {e.get('position')} (ranks it can hold: "
            f"{format_rank_range(e)}; letters {e.get('rank_letters') or '—'}), {', '.join(figures)}; plan: "
            f"{e.get('plan')}"
        )
    for e in board["vendors"]:
        if e["status"] == "excluded":
            lines.append(f"- {e['vendor']}: excluded, never called or scored: {e.get('reason')}")
    lines += ["", "## Metrics", ""]
    lines += [_metric_line(d) for d in board.get("metrics") or []]
    lines += [
        "",
        "## Pages",
        "",
        "- [Leaderboard](index.html)",
        "- [Methodology](methodology.html): metric definitions generated from the code",
        "- [Limitations](limitations.html), [Disclosures](disclosures.html), [Errata](errata.html), "
        "[Exclusions](exclusions.html)",
    ]
    if has_queries:
        lines.append("- [Public queries](queries/index.html): per-row drill-down of what each vendor returned")
    lines += [
        "",
        "## Optional",
        "",
        "- Metric definitions: hit@k uses normalized URLs (host case-folded, `www.`, default port, "
        "fragment, trailing slash and `utm_*` removed; path case kept). Extraction fidelity weights: "
        + ", ".join(f"{k} {v}" for k, v in manifest.fidelity_weights.items())
        + f"; correct ≥ {metrics.CORRECT_THRESHOLD}. Cost per correct is undefined (null) at zero "
        "correct, never 0. Time-to-retrievability is a Kaplan–Meier median right-censored at "
        f"{metrics.DEFAULT_CENSOR_AT_HOURS:g} h; null means not reached.",
    ]
    return "\n".join(lines) + "\n"


def _provenance_lines(board: Mapping[str, Any]) -> list[str]:
    """What the file is, for an agent: status and disclaimer, license, when, the content hash, the cohort."""
    lines = [
        f"Status `{board.get('status')}`: {board.get('disclaimer')}",
        f"License: {board.get('license')} ({board.get('license_url')}). Generated at "
        f"{board.get('generated_at') or 'an unrecorded time (not a publication)'}; content hash "
        f"`{board.get('content_hash')}` over every file here but leaderboard.json and llms.txt "
        "(leaderboard.json `content_hash_method` says how to recompute it).",
    ]
    cohort = board.get("cohort")
    if cohort:
        dates = cohort["golden_pages_published"]
        when = (
            f"public rows' golden pages published {dates['first']} to {dates['last']} ({dates['dated_rows']} dated, "
            f"{dates['undated_rows']} undated)"
            if dates["first"]
            else "no public row's golden page has a publication date"
        )
        lines.append(
            f"Cohort: {cohort['cohort_size']} golden rows ({cohort['public_rows']} public, {cohort['holdout_rows']} "
            f"holdout; holdout fraction {cohort['holdout_fraction']:g} per stratum), {when}. A row is "
            f"{cohort['row']}."
        )
    return lines


def _metric_line(d: Mapping[str, Any]) -> str:
    """One metric descriptor in a line of llms.txt."""
    return (
        f"- `{d['key']}` ({d['label']}): {d['definition']}. {d['direction']}; unit {d['unit']}; statistic "
        f"{d['statistic']}; interval: {d['interval']}; null: {d['null_means']} ({d['null_note']})."
    )


def _comparisons_in_words(board: Mapping[str, Any]) -> str:
    """How the record says which vendors differ, for an agent reading llms.txt."""
    section = board.get("comparisons")
    if not section:
        return "No paired comparison was computed: no vendor has a rank range."
    told = sum(1 for p in section["pairs"] if p.get("better"))
    text = (
        f"Every pair of vendors is compared on the rows both answered for the ranking figure with an exact McNemar "
        f"test, Holm-adjusted over all {len(section['pairs'])} pairs (family-wise α = {section['alpha']:g}); "
        f"{told} of them are told apart. A vendor's `rank_range` runs from 1 + the vendors found better than it to "
        "the number of vendors compared − the vendors it is found better than; vendors sharing a letter in "
        "`rank_letters` cannot be told apart, so do not quote an order between them."
    )
    power = board.get("power")
    return text + (" " + power["note"] if power else "")


# What the files other stages add to the publication hold (shown on the Data page and in llms.txt).
EXTRA_FILE_NOTES = {
    "holdout_commitments.json": "keyed digests (HMAC-SHA-256) of every archived holdout response: the holdout "
    "can be audited when it is retired without being revealed now",
    "exclusions.json": "the exclusions ledger: excluded vendors, rows a vendor cannot serve, dead golden rows, "
    "decoys, vendors not run, each with its reason and effect on the denominators",
    "exclusions.csv": "the exclusions ledger as CSV",
    "review.json": "the vendor-review record: when each vendor got its rows, when publication opened, replies",
}


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
