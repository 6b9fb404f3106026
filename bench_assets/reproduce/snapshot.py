"""`bench reproduce DIR`: every public verdict and figure of a published snapshot, re-derived from the folder alone.

No warehouse, no `data/`, no split key, no network: the public rows (`public_split.jsonl`) and the
evidence bundle (`evidence/`) are scored again with the benchmark's own adapters and scoring code
(`reproduce.verdicts`), aggregated with the code that aggregated them (`aggregate.figures.
vendor_metrics`, `aggregate.comparisons.vendor_comparisons`), and compared with what the folder
publishes, through the comparisons `bench rescore` uses (`rescore.compare`):

- every public row's verdict in `public_row_scores.csv` and in `vendors/<vendor>.json`
  (`public_rows`);
- every public-split figure (`breakdown.split.public` of each vendor in `leaderboard.json` and
  `vendors/<vendor>.json`, the `public_<metric>` columns of `leaderboard.csv`) with its n and
  interval, and the pairs compared on public rows (`comparisons_public`);
- from the published counts of the pairs compared on all rows (`comparisons`, `pairwise.csv`):
  every p-value, Holm-adjusted p-value, difference and interval, the vendor found better, each
  vendor's rank range and letters, and the power statement; the counts themselves include the
  holdout's rows.

Every other figure of `leaderboard.json` is checked against the published parts it is made of or
named unverifiable from the public folder (`reproduce.board`): each vendor's all-rows figures are
its re-derived public figure plus its published holdout figure; what needs the holdout's rows
alone, or evidence the bundle does not carry (sentinel probes, agent-ready trials), is named, and
still checked for what it must be by itself. `leaderboard.csv` is checked cell by cell against
`leaderboard.json`, each `vendors/<vendor>.json` entry against its leaderboard entry. Every verdict
whose text is not published is listed as not reproducible from public data.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from bench_assets.aggregate.comparisons import COMPARISON_COLUMNS
from bench_assets.aggregate.figures import vendor_metrics
from bench_assets.aggregate.leaderboard import (
    HEADLINE_METRICS,
    PUBLIC_METRICS,
    figure_of,
    pair_record,
    power_section,
    public_comparisons_frame,
    public_comparisons_section,
)
from bench_assets.aggregate.provenance import folder_content_hash
from bench_assets.metrics import PairedCounts, compare_pairs, ranking_from_comparisons
from bench_assets.publish.drilldown import vendor_row_verdicts
from bench_assets.publish.files import leaderboard_csv, pairwise_csv, public_row_scores_csv
from bench_assets.reproduce.board import CATEGORIES, FigureLedger, check_board
from bench_assets.reproduce.folder import PublishedFolder, read_folder
from bench_assets.reproduce.verdicts import VendorVerdicts, rederive_vendor
from bench_assets.rescore.compare import Difference, compare_csv, compare_json, same_value, vendor_in
from bench_assets.score.partition import SCORE_COLUMNS
from bench_assets.storage.values import plain

# What the published files hold beside leaderboard.json's figures that the folder cannot check, and why.
UNVERIFIABLE = (
    ("metric_eligibility, breakdown_eligibility, headline_eligible", "rest on the all-rows figures' n and the mode"),
    ("the Kaplan–Meier chart", "sentinel probes are not in the evidence bundle"),
)


# Why a public verdict is not reproducible (`reproduce.verdicts`), by kind.
NOT_REPRODUCIBLE_VERDICTS = {
    "withheld": "the text they read is withheld because it names a holdout row, and read as empty it gives "
    "another verdict",
    "digests": "the vendor's terms allow digests only, so the text they read is not published",
}


@dataclass
class ReproduceReport:
    """What `bench reproduce` found: what it re-derived, what it could not and why, and every difference."""

    folder: Path
    snapshot_id: str = ""
    vendors: list[str] = field(default_factory=list)
    rows: int = 0
    verdicts: int = 0
    bodies_reparsed: int = 0
    compared: list[str] = field(default_factory=list)
    not_reproducible: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    figures: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"reproduced {self.snapshot_id} from {self.folder} alone: {self.verdicts} verdicts of {len(self.vendors)} "
            f"vendors on {self.rows} public rows re-derived from the evidence bundle ({self.bodies_reparsed} bodies "
            f"re-parsed by their vendor's adapter); compared {', '.join(self.compared)}"
        ]
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"not reproducible from public data: {n}" for n in self.not_reproducible]
        lines += [f"unverifiable from the public folder: {n}" for n in self.unverifiable]
        if self.figures:
            lines.append(
                f"figures of leaderboard.json: {sum(self.figures.values())}, of which "
                + ", ".join(f"{self.figures[c]} {c}" for c in CATEGORIES)
            )
        lines += [f"difference: {d}" for d in self.differences]
        lines.append(f"{len(self.differences)} difference{'s' if len(self.differences) != 1 else ''}")
        return "\n".join(lines)


# ##### VERDICTS


def _published_rows(folder: PublishedFolder) -> dict[str, dict[str, dict[str, Any]]]:
    """public_row_scores.csv as vendor → row id → its cells."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in csv.DictReader(io.StringIO(folder.text("public_row_scores.csv"))):
        out.setdefault(r["vendor"], {})[r["row_id"]] = r
    return out


def verdict_records(folder: PublishedFolder, scores: pd.DataFrame) -> list[dict[str, Any]]:
    """The re-derived verdicts in the shape the publication renders its row files from (one record
    per public row, its vendors' verdicts inside), so they are rendered by the same functions."""
    by_row: dict[str, list[dict[str, Any]]] = {}
    for rec in scores.sort_values(["vendor"]).to_dict("records"):
        by_row.setdefault(rec["row_id"], []).append({**{k: plain(v) for k, v in rec.items()}})
    return [
        {"row_id": r.id, "stratum": r.stratum, "task_type": r.task_type, "vendors": by_row.get(r.id, [])}
        for r in folder.rows
    ]


def rederive_verdicts(
    folder: PublishedFolder, report: ReproduceReport, progress: bool
) -> tuple[pd.DataFrame, list[VendorVerdicts]]:
    """Every vendor's public verdicts, re-derived (with a progress bar over the rows)."""
    published = _published_rows(folder)
    answer_k = int(folder.index["answer_k"])
    weights = {k: float(v) for k, v in folder.index["fidelity_weights"].items()}
    done: list[VendorVerdicts] = []
    total = len(folder.rows) * len(folder.vendors)
    with tqdm(
        total=total,
        unit="row",
        desc="reproduce",
        disable=not progress,
        leave=False,
        ncols=min(shutil.get_terminal_size().columns, 100),
    ) as bar:
        for vendor, evidence in folder.vendors.items():  # one vendor's bundle in memory at a time
            bar.set_postfix_str(vendor)
            done.append(
                rederive_vendor(
                    evidence.load(),
                    folder.snapshot_id,
                    folder.rows,
                    answer_k,
                    weights,
                    published.get(vendor, {}),
                    lambda: bar.update(1),
                )
            )
    frames = [v.scores for v in done if len(v.scores)]
    scores = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SCORE_COLUMNS)
    report.verdicts = int((scores["response_class"] != "unsupported").sum()) if len(scores) else 0
    report.bodies_reparsed = sum(v.bodies_reparsed for v in done)
    for v in done:
        report.differences += v.differences
        for kind, why in NOT_REPRODUCIBLE_VERDICTS.items():
            listed = [
                f"{r} (result {', '.join(map(str, ranks))})"
                for r, (k, ranks) in sorted(v.not_reproducible.items())
                if k == kind
            ]
            if listed:
                report.not_reproducible.append(
                    f"public_row_scores.csv · vendor {v.vendor} · {len(listed)} "
                    f"verdict{'s' if len(listed) != 1 else ''}, taken as published: {why}: " + ", ".join(listed)
                )
        if v.estimated_spend:
            report.notes.append(
                f"{v.vendor}: {len(v.estimated_spend)} billed responses could not be read and are priced as "
                "published, from the vendor's other responses (holdout ones included)"
            )
    return scores, done


def compare_verdicts(folder: PublishedFolder, scores: pd.DataFrame, report: ReproduceReport) -> None:
    """Every public verdict against public_row_scores.csv and each vendor file's `public_rows`."""
    records = verdict_records(folder, scores)
    report.differences += compare_csv(
        "public_row_scores.csv",
        folder.text("public_row_scores.csv"),
        public_row_scores_csv(records),
        ("row_id", "vendor"),
    )
    for vendor in sorted(folder.vendors):
        rel = f"vendors/{vendor}.json"
        if not (folder.root / rel).is_file():
            continue
        published = folder.json(rel).get("public_rows")
        for path, a, b in compare_json("public_rows", published, vendor_row_verdicts(records, vendor)):
            report.differences.append(Difference(rel, vendor, path, a, b))
    report.compared += ["public_row_scores.csv", "vendors/*.json public_rows"]


# ##### FIGURES


def _pairs_by_name(section: Mapping[str, Any]) -> dict[str, Any]:
    """A comparisons section with its pairs keyed `a vs b`, so a difference names its pair."""
    pairs = {f"{p['vendor_a']} vs {p['vendor_b']}": p for p in section.get("pairs") or []}
    return {**section, "pairs": pairs}


def public_figures(metrics: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """Each vendor's public-split figures as published (`figure_of`), from the `vendor_metrics` of
    the public verdicts."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if metrics.empty:
        return out
    side = metrics[(metrics["scope"] == "split") & (metrics["scope_value"] == "public")]
    for _, rec in side.iterrows():
        out.setdefault(str(rec["vendor"]), {})[str(rec["metric"])] = figure_of(rec)
    return out


def _public_breakdown(entry: Mapping[str, Any]) -> Any:
    return ((entry.get("breakdown") or {}).get("split") or {}).get("public")


def compare_figures(
    folder: PublishedFolder, scores: pd.DataFrame, digests: Iterable[str], report: ReproduceReport
) -> FigureLedger:
    """The public-split figures of leaderboard.json, vendors/*.json and leaderboard.csv, and the
    pairs compared on public rows, against their re-derivation; then every other figure of
    leaderboard.json against its parts (`reproduce.board`), leaderboard.csv against
    leaderboard.json and each vendor file's entry against its leaderboard entry."""
    metrics = vendor_metrics(folder.snapshot_id, scores) if len(scores) else pd.DataFrame()
    derived = public_figures(metrics)
    entries = {e["vendor"]: e for e in folder.board["vendors"] if e.get("status") == "scored"}
    for vendor in sorted(set(entries) | set(derived)):
        published = _public_breakdown(entries.get(vendor) or {})
        for path, a, b in compare_json(f"vendors[{vendor}].breakdown.split.public", published, derived.get(vendor)):
            report.differences.append(Difference("leaderboard.json", *vendor_in(path), a, b))
        rel = f"vendors/{vendor}.json"
        if (folder.root / rel).is_file():
            entry = folder.json(rel).get("entry") or {}
            for path, a, b in compare_json(
                "entry.breakdown.split.public", _public_breakdown(entry), derived.get(vendor)
            ):
                report.differences.append(Difference(rel, vendor, path, a, b))
    for row in csv.DictReader(io.StringIO(folder.text("leaderboard.csv"))):
        vendor = row["vendor"]
        if vendor not in entries:
            continue
        for name in PUBLIC_METRICS:
            fig = (derived.get(vendor) or {}).get(name) or {}
            for suffix, key in (("", "value"), ("_n", "n"), ("_low", "low"), ("_high", "high")):
                column = f"public_{name}{suffix}"
                if column in row and not same_value(row[column] or None, fig.get(key), text=True):
                    report.differences.append(Difference("leaderboard.csv", vendor, column, row[column], fig.get(key)))
    rank = folder.board.get("rank_metric")  # the vendors the leaderboard ranks: a defined ranking figure
    ranked = [
        v
        for v, e in sorted(entries.items(), key=lambda item: item[1].get("position") or 10_000)
        if ((e.get("metrics") or {}).get(rank) or {}).get("value") is not None
    ]
    section = folder.board.get("comparisons_public")
    ours = None
    if section is not None:
        frame = (
            public_comparisons_frame(scores, folder.snapshot_id)
            if len(scores)
            else pd.DataFrame(columns=COMPARISON_COLUMNS)
        )
        ours = public_comparisons_section(frame, ranked)
        for path, a, b in compare_json("comparisons_public", _pairs_by_name(section), _pairs_by_name(ours)):
            report.differences.append(Difference("leaderboard.json", None, path, a, b))
    else:
        report.notes.append("leaderboard.json has no comparisons_public: no pairs on public rows to compare")
    report.compared += ["leaderboard.json split.public", "vendors/*.json split.public", "leaderboard.csv public_*"]
    report.compared.append("comparisons_public")
    ledger = check_board(folder.board, metrics, ours)
    report.differences += ledger.differences
    report.compared.append("every other figure of leaderboard.json against its parts")
    report.unverifiable += [
        f"leaderboard.json {group} ({len(figures)} figure{'s' if len(figures) != 1 else ''}): {why}"
        for group, (why, figures) in ledger.groups.items()
    ]
    compare_copies(folder, ledger, report)
    for vendor in sorted(digests):
        report.not_reproducible.append(
            f"vendor {vendor}: its extract and answer verdicts (the vendor's terms allow digests only), so its "
            "public correct_rate, correct_rate_shared, fidelity_mean, answer_score_mean, cost_per_correct_usd and "
            "its pairs in comparisons_public rest on the published verdicts of those rows"
        )
    return ledger


def _without_public(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A leaderboard entry without its public-split figures (compared with their re-derivation)."""
    breakdown = dict(entry.get("breakdown") or {})
    if "split" in breakdown:
        breakdown["split"] = {k: v for k, v in breakdown["split"].items() if k != "public"}
    return {**entry, "breakdown": breakdown}


def _board_path(column: str) -> str:
    """The leaderboard.json figure a leaderboard.csv column copies (`aggregate.leaderboard.leaderboard_rows`)."""
    metric = max((m for m in HEADLINE_METRICS if column == m or column.startswith(f"{m}_")), key=len, default=None)
    if metric:
        return f"metrics.{metric}"
    if column.startswith("class_"):
        return f"response_classes.{column.removeprefix('class_')}"
    return {"rank_best": "rank_range", "rank_worst": "rank_range"}.get(column, column)


def compare_copies(folder: PublishedFolder, ledger: FigureLedger, report: ReproduceReport) -> None:
    """leaderboard.csv against leaderboard.json (but its public_* columns, compared with their
    re-derivation), and each vendors/<vendor>.json entry against its leaderboard entry: the copies
    of a figure agree with the figure checked."""
    board = list(report.differences)  # a copy of a figure found different in leaderboard.json is not reported twice

    def reported(vendor: str | None, path: str) -> bool:
        return ledger.different(vendor, path, board)

    rendered = leaderboard_csv(folder.board)
    for d in compare_csv("leaderboard.csv", folder.text("leaderboard.csv"), rendered, ("vendor",)):
        if d.item.startswith("public_") or reported(d.vendor, _board_path(d.item)):
            continue
        report.differences.append(
            Difference(d.surface, d.vendor, f"{d.item} (against leaderboard.json)", d.published, d.derived)
        )
    for entry in folder.board["vendors"]:
        rel = f"vendors/{entry['vendor']}.json"
        if entry.get("status") != "scored" or not (folder.root / rel).is_file():
            continue
        mine = _without_public(folder.json(rel).get("entry") or {})
        for path, a, b in compare_json("", mine, _without_public(entry)):
            if not reported(entry["vendor"], path.rsplit(".", 1)[0]):
                report.differences.append(
                    Difference(rel, entry["vendor"], f"entry.{path} (against leaderboard.json)", a, b)
                )
    report.compared += ["leaderboard.csv against leaderboard.json", "vendors/*.json entry against leaderboard.json"]


def compare_from_counts(folder: PublishedFolder, report: ReproduceReport) -> None:
    """The all-rows pairs re-derived from their published counts: p-values, Holm, intervals, the
    vendor found better; then rank ranges, letters and the power statement; and pairwise.csv."""
    section = folder.board.get("comparisons")
    if not section:
        return
    pairs = section.get("pairs") or []
    counts = [
        PairedCounts(p["vendor_a"], p["vendor_b"], p["both_correct"], p["a_only"], p["b_only"], p["neither"])
        for p in pairs
    ]
    compared = compare_pairs(counts, section.get("alpha", 0.05), section.get("confidence", 0.95))
    derived_pairs = [pair_record(c) for c in compared]
    for a, b in zip(pairs, derived_pairs):
        for path, x, y in compare_json(f"comparisons.pairs[{a['vendor_a']} vs {a['vendor_b']}]", a, b):
            report.differences.append(Difference("leaderboard.json", None, path, x, y))
    ranking = ranking_from_comparisons(section.get("vendors") or [], compared, section.get("alpha", 0.05))
    for e in folder.board["vendors"]:
        v = e["vendor"]
        if v not in ranking.rank_ranges:
            continue
        best, worst = ranking.rank_ranges[v]
        for item, published, ours in (
            ("rank_range", e.get("rank_range"), {"best": best, "worst": worst}),
            ("rank_letters", e.get("rank_letters"), ranking.letters.get(v)),
        ):
            for path, x, y in compare_json(item, published, ours):
                report.differences.append(Difference("leaderboard.json", v, path, x, y))
    if ranking.power is not None and folder.board.get("power") is not None:
        for path, x, y in compare_json("power", folder.board["power"], power_section(ranking.power)):
            report.differences.append(Difference("leaderboard.json", None, path, x, y))
    board = {**folder.board, "comparisons": {**section, "pairs": derived_pairs}}
    report.differences += compare_csv(
        "pairwise.csv",
        folder.text("pairwise.csv"),
        pairwise_csv(board),
        ("vendor_a", "vendor_b"),
        vendor_column="vendor_a",
    )
    report.compared += ["comparisons (from the published counts)", "pairwise.csv", "rank ranges and letters", "power"]


# ##### THE WHOLE FOLDER


def compare_content_hash(folder: PublishedFolder, report: ReproduceReport) -> None:
    """leaderboard.json's `content_hash` against the folder's other files as they are (`aggregate.provenance`)."""
    stated = folder.board.get("content_hash")
    if stated is None:
        report.notes.append(
            "leaderboard.json states no content_hash (schema before 3): the files are not checked as a whole"
        )
        return
    found = folder_content_hash(folder.root)
    if found != stated:
        report.differences.append(
            Difference("leaderboard.json", None, "content_hash (of every other file but llms.txt)", stated, found)
        )
    report.compared.append("content_hash over the folder's files")


def reproduce_folder(root: Path, progress: bool = False) -> ReproduceReport:
    """Re-derive every public verdict and figure of the published folder `root` from its files
    alone and report every difference (see the module). `progress`: a progress bar on stderr."""
    folder = read_folder(root)
    report = ReproduceReport(Path(root), folder.snapshot_id, sorted(folder.vendors), len(folder.rows))
    report.differences += folder.integrity
    compare_content_hash(folder, report)
    scores, _ = rederive_verdicts(folder, report, progress)
    compare_verdicts(folder, scores, report)
    digests = [v for v, e in folder.vendors.items() if e.level == "digests"]
    ledger = compare_figures(folder, scores, digests, report)
    compare_from_counts(folder, report)
    report.unverifiable += [f"{what}: {why}" for what, why in UNVERIFIABLE]
    report.figures = ledger.tally(report.differences)
    report.compared.append(f"evidence/ ({len(folder.index.get('files') or {})} Parquet files against bundle.json)")
    return report
