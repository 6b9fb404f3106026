"""Answers over one published snapshot folder (`data/publish/<snapshot>/`), read from its files
alone: leaderboard.json, public_row_scores.csv, public_split.jsonl and the pages beside them.

Nothing here opens the warehouse or the private store: what an agent is told is what a reader of
the published site can check. Each answer names the snapshot, the rule it applied and the files
it rests on.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

LEADERBOARD = "leaderboard.json"
ROW_SCORES = "public_row_scores.csv"
PUBLIC_SPLIT = "public_split.jsonl"
SNAPSHOT_FILES = ("leaderboard.json", "leaderboard.csv", "pairwise.csv", ROW_SCORES, "methodology.html", "index.html")
COST_METRIC = "cost_per_correct_usd"
# the published $ per 1,000 correct (metrics.usd_per_thousand_correct): what a budget is compared with
PER_1K_METRIC = "usd_per_1000_correct"
BASE_METRIC = "correct_rate"
# public_row_scores.csv columns that are names, kept as text; the others are typed (numbers, booleans)
TEXT_COLUMNS = frozenset(
    {"row_id", "stratum", "task_type", "vendor", "response_class", "fidelity_label", "answer_rule", "miss_reason"}
)
_SNAPSHOT_ORDER = re.compile(r"^(?P<family>.+)-(?P<year>20\d\d)-q(?P<quarter>[1-4])(?:-e(?P<erratum>\d+))?$")

PAIRED_RULE = (
    "paired: the best is the configuration ranked first on the figure (leaderboard.json `rank_metric`); "
    "a configuration cannot be told apart from it when their paired comparison in leaderboard.json "
    "`comparisons.pairs` has `better` = null (an exact two-sided McNemar test on the rows both answered, "
    "Holm-adjusted over every pair, family-wise alpha in `comparisons.alpha`; `comparisons.method`)"
)
OVERLAP_RULE = (
    "interval overlap: no paired comparison is published for this figure, so the best is the configuration "
    "with the highest published value, and a configuration is listed when its published 95 % interval "
    "overlaps the best's. Overlap is not a test: it lists every configuration the intervals do not rule "
    "out; two listed configurations may still differ"
)


class QueryError(ValueError):
    """A question the published files cannot answer as asked (unknown task type, vendor, row,
    stratum; a bad budget): the message says what is known instead."""


def newest_published(publish_root: Path) -> Path:
    """The newest published snapshot under `publish_root`: the latest quarter, its latest erratum
    version; among families of the same quarter, the most recently written leaderboard.json."""
    folders = [p.parent for p in publish_root.glob(f"*/{LEADERBOARD}")]
    if not folders:
        raise QueryError(f"no published snapshot under {publish_root} (no */{LEADERBOARD}); run `bench demo` first")

    def order(folder: Path) -> tuple[int, int, int, float]:
        m = _SNAPSHOT_ORDER.match(folder.name)
        mtime = (folder / LEADERBOARD).stat().st_mtime
        if not m:
            return (0, 0, 0, mtime)
        return (int(m["year"]), int(m["quarter"]), int(m["erratum"] or 0), mtime)

    return max(folders, key=order)


def _typed(text: str) -> Any:
    """A CSV cell as JSON: empty is null, True/False booleans, numbers as numbers, else the text."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if re.fullmatch(r"-?\d+", text) else number


def _figure(metrics: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    figure = (metrics or {}).get(key)
    return {"metric": key, **figure} if isinstance(figure, Mapping) else None


def _per_thousand(metrics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The entry's published $ per 1,000 correct, as leaderboard.json states it. A record published
    before that figure existed has only the cost per correct: then 1000 x it, and the answer says so."""
    published = _figure(metrics, PER_1K_METRIC)
    if published is not None or not (metrics or {}).get(COST_METRIC):
        return published
    cost = (metrics or {})[COST_METRIC]
    scale = {k: (None if cost.get(k) is None else round(1000 * cost[k], 6)) for k in ("value", "low", "high")}
    return {"metric": PER_1K_METRIC, **scale, "n": cost.get("n"), "derived_from": f"1000 x {COST_METRIC}"}


def _overlaps(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two figures' intervals share a point (a figure without an interval is its value)."""
    ends = [(x.get("low", x.get("value")), x.get("high", x.get("value"))) for x in (a, b)]
    if any(low is None or high is None for low, high in ends):
        return False
    return max(float(low) for low, _ in ends) <= min(float(high) for _, high in ends)


class PublishedSnapshot:
    """One published snapshot folder, read lazily; `base_url` (where the folder is served) turns the
    evidence paths into URLs."""

    def __init__(self, folder: Path, base_url: str | None = None):
        self.folder = folder.resolve()
        board_file = self.folder / LEADERBOARD
        if not board_file.is_file():
            raise QueryError(f"{self.folder} is not a published snapshot: no {LEADERBOARD}")
        try:
            self.board: dict[str, Any] = json.loads(board_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise QueryError(f"{board_file}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        self.base_url = base_url.rstrip("/") + "/" if base_url else None

    # ##### WHAT THE SNAPSHOT HOLDS

    @property
    def snapshot_id(self) -> str:
        return str(self.board.get("snapshot_id") or self.folder.name)

    @property
    def family(self) -> str:
        """The snapshot's kind, its id without the quarter: `web_search` for web_search-2026-q3."""
        m = _SNAPSHOT_ORDER.match(self.snapshot_id)
        return m["family"] if m else self.snapshot_id

    @property
    def entries(self) -> list[dict[str, Any]]:
        return list(self.board.get("vendors") or [])

    def entry(self, vendor: str) -> dict[str, Any]:
        for e in self.entries:
            if e.get("vendor") == vendor:
                return e
        known = ", ".join(sorted(str(e.get("vendor")) for e in self.entries))
        raise QueryError(f"unknown vendor {vendor!r} in snapshot {self.snapshot_id} (known: {known})")

    def _breakdown_values(self, scope: str) -> list[str]:
        values = {v for e in self.entries for v in ((e.get("breakdown") or {}).get(scope) or {})}
        return sorted(values)

    def task_types(self) -> list[str]:
        """What `recommend` takes: the snapshot's kind (its ranking figure) and each task type
        with published per-task-type figures."""
        return [self.family, *[t for t in self._breakdown_values("task_type") if t != self.family]]

    def link(self, relative: str) -> str:
        return self.base_url + relative if self.base_url else relative

    def _links(self, relatives: Iterable[str]) -> list[str]:
        return [self.link(r) for r in relatives if (self.folder / r).is_file()]

    def vendor_links(self, vendor: str) -> list[str]:
        return self._links([f"vendors/{vendor}.html", f"vendors/{vendor}.json"])

    def descriptors(self, keys: Iterable[str]) -> dict[str, Any] | None:
        """The published descriptors (leaderboard.json's top-level `metrics` list) of these figures;
        None when the snapshot publishes no such list."""
        published = self.board.get("metrics")
        if not isinstance(published, list):
            return None
        by_key = {d.get("key"): d for d in published if isinstance(d, Mapping)}
        return {k: by_key[k] for k in dict.fromkeys(keys) if k in by_key}

    def _header(self) -> dict[str, Any]:
        eligible = bool(self.board.get("headline_eligible"))
        header: dict[str, Any] = {
            "snapshot_id": self.snapshot_id,
            "mode": self.board.get("mode"),
            "title": self.board.get("title"),
            "headline_eligible": eligible,
            "folder": str(self.folder),
        }
        if not eligible:
            header["caution"] = (
                "Nothing in this snapshot is headline-eligible: its figures are illustrative "
                f"(mode {self.board.get('mode')}) and must not be quoted as a comparison of real vendors."
            )
        return header

    def _with_descriptors(self, answer: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
        descriptors = self.descriptors(keys)
        answer["metric_descriptors"] = descriptors
        if descriptors is None:
            answer.setdefault("notes", []).append(
                "leaderboard.json publishes no `metrics` descriptor list; the figures are defined in "
                + (self.link("methodology.html") if (self.folder / "methodology.html").is_file() else "the methodology")
            )
        return answer

    # ##### RECOMMEND

    def recommend(
        self, task_type: str, budget_usd_per_1k: float | None = None, stratum: str | None = None
    ) -> dict[str, Any]:
        """The configurations that cannot be told apart from the best on `task_type` (in `stratum`,
        within the budget), with their figures, intervals, cost and evidence links."""
        known = self.task_types()
        if task_type not in known:
            raise QueryError(
                f"unknown task_type {task_type!r} for snapshot {self.snapshot_id} (known: {', '.join(known)}; "
                f"{self.family!r} is the snapshot's ranking figure, the others one task type each)"
            )
        if budget_usd_per_1k is not None and not budget_usd_per_1k > 0:
            raise QueryError(f"budget_usd_per_1k must be a positive number of dollars, not {budget_usd_per_1k!r}")
        strata = self._breakdown_values("stratum")
        if stratum is not None and strata and stratum not in strata:
            raise QueryError(f"unknown stratum {stratum!r} in snapshot {self.snapshot_id} (known: {', '.join(strata)})")
        answer: dict[str, Any] = {
            **self._header(),
            "task_type": task_type,
            "stratum": stratum,
            "budget_usd_per_1k": budget_usd_per_1k,
            "notes": [],
        }
        scope = self._scope(task_type, stratum, strata, answer["notes"])
        if scope is None:
            answer.update(configurations=[], best=None, rule=None, evidence=self._links(SNAPSHOT_FILES))
            return self._with_descriptors(answer, [])
        metric, figure_of, paired = scope
        candidates = [(e, figure_of(e)) for e in self.entries if e.get("status") == "scored"]
        answer["not_in_scope"] = sorted(str(e["vendor"]) for e, f in candidates if not f or f.get("value") is None)
        candidates = [(e, f) for e, f in candidates if f and f.get("value") is not None]
        if budget_usd_per_1k is not None:
            candidates = self._within_budget(candidates, budget_usd_per_1k, answer)
        if paired:
            candidates.sort(key=lambda c: (c[0].get("position") or 10_000, str(c[0]["vendor"])))
        else:
            candidates.sort(key=lambda c: (-c[1]["value"], c[0].get("position") or 10_000, str(c[0]["vendor"])))
        answer["rule"] = {
            "name": "paired" if paired else "interval_overlap",
            "text": PAIRED_RULE if paired else OVERLAP_RULE,
        }
        if paired:
            section = self.board.get("comparisons") or {}
            answer["rule"].update(
                {k: section.get(k) for k in ("alpha", "correction", "test", "interval", "metric", "task_types")}
            )
        if not candidates:
            answer.update(configurations=[], best=None, evidence=self._links(SNAPSHOT_FILES))
            answer["notes"].append("no configuration has this figure within the budget")
            return self._with_descriptors(answer, [metric])
        best_entry, best_figure = candidates[0]
        chosen = []
        for e, f in candidates:
            pair = self._pair(str(e["vendor"]), str(best_entry["vendor"])) if paired else None
            if e is best_entry or (paired and pair is not None and pair["better"] is None):
                chosen.append(self._configuration(e, f, pair, stratum))
            elif not paired and _overlaps(f, best_figure):
                chosen.append(self._configuration(e, f, None, stratum))
        answer.update(best=best_entry["vendor"], configurations=chosen, evidence=self._links(SNAPSHOT_FILES))
        if not answer["notes"]:
            del answer["notes"]
        return self._with_descriptors(answer, [metric, BASE_METRIC, COST_METRIC, PER_1K_METRIC])

    def _scope(
        self, task_type: str, stratum: str | None, strata: list[str], notes: list[str]
    ) -> tuple[str, Any, bool] | None:
        """The figure `recommend` ranks on: its metric key, how to read it from an entry, and whether
        the published paired comparisons apply to it. None (with a note) when it is not published."""
        ranking = self.board.get("ranking") or {}
        rank_metric = str(self.board.get("rank_metric") or ranking.get("metric") or BASE_METRIC)
        compared = bool((self.board.get("comparisons") or {}).get("pairs"))
        ranks_task_type = task_type == self.family or list(ranking.get("task_types") or []) == [task_type]
        if stratum is not None:
            if not strata:
                notes.append(f"snapshot {self.snapshot_id} publishes no per-stratum figures; ask without a stratum")
                return None
            if task_type != self.family:
                notes.append(
                    f"per-stratum figures are published over every task type together, not for {task_type!r} within "
                    f"a stratum; ask with task_type={self.family!r} and stratum={stratum!r}, or without the stratum"
                )
                return None
            notes.append(
                f"ranked on breakdown.stratum.{stratum}.{BASE_METRIC}: each configuration's correct rate over every "
                "task type it supports in the stratum (the rows differ between configurations). No paired comparison "
                "and no cost is published per stratum: the cost shown and the budget are the whole snapshot's."
            )
            return (
                BASE_METRIC,
                lambda e: _figure(((e.get("breakdown") or {}).get("stratum") or {}).get(stratum), BASE_METRIC),
                False,
            )
        if ranks_task_type:
            if not compared:
                notes.append("no paired comparisons are published in this snapshot")
            notes.append(str(ranking.get("note") or f"ranked on {rank_metric}"))
            return rank_metric, lambda e: _figure(e.get("metrics"), rank_metric), compared
        notes.append(
            f"ranked on breakdown.task_type.{task_type}.{BASE_METRIC}. No paired comparison and no cost is published "
            "per task type: the cost shown and the budget are the whole snapshot's."
        )
        return (
            BASE_METRIC,
            lambda e: _figure(((e.get("breakdown") or {}).get("task_type") or {}).get(task_type), BASE_METRIC),
            False,
        )

    def _within_budget(
        self, candidates: list[tuple[dict[str, Any], dict[str, Any]]], budget: float, answer: dict[str, Any]
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        kept, over, no_cost = [], [], []
        for e, f in candidates:
            per_1k = _per_thousand(e.get("metrics"))
            if not per_1k or per_1k["value"] is None:
                no_cost.append(str(e["vendor"]))
            elif per_1k["value"] > budget:
                over.append({"vendor": e["vendor"], "usd_per_1k_correct": per_1k["value"]})
            else:
                kept.append((e, f))
        answer["over_budget"] = over
        answer["no_cost_per_correct"] = no_cost  # no correct answer: cost per correct undefined, never 0
        answer["notes"].append(
            f"budget: kept the configurations whose $ per 1,000 correct (its published value, {PER_1K_METRIC}) "
            f"is at most {budget}; the best is then the best of those"
        )
        return kept

    def _pair(self, vendor: str, best: str) -> dict[str, Any] | None:
        """The published comparison of `vendor` with `best`, its difference oriented vendor − best."""
        if vendor == best:
            return None
        for p in (self.board.get("comparisons") or {}).get("pairs") or []:
            if {p.get("vendor_a"), p.get("vendor_b")} != {vendor, best}:
                continue
            d = p.get("difference") or {}
            flip = p.get("vendor_a") != vendor
            diff = {
                "value": None if d.get("value") is None else (-d["value"] if flip else d["value"]),
                "low": (None if d.get("high") is None else -d["high"]) if flip else d.get("low"),
                "high": (None if d.get("low") is None else -d["low"]) if flip else d.get("high"),
            }
            return {
                "versus": best,
                "n": p.get("n"),
                "difference_vs_best": diff,
                "p_adjusted": p.get("p_adjusted"),
                "better": p.get("better"),
            }
        return None

    def _configuration(
        self, e: dict[str, Any], figure: dict[str, Any], pair: dict[str, Any] | None, stratum: str | None
    ) -> dict[str, Any]:
        vendor = str(e["vendor"])
        cost = _figure(e.get("metrics"), COST_METRIC)
        config: dict[str, Any] = {
            "vendor": vendor,
            **{k: e[k] for k in ("provider", "mode", "plan") if e.get(k) is not None},
            "figure": figure,
            "correct_rate": _figure(e.get("metrics"), BASE_METRIC),
            "cost_per_correct_usd": cost,
            "usd_per_1k_correct": _per_thousand(e.get("metrics")),
            "position": e.get("position"),
            "rank_range": e.get("rank_range"),
            "rank_letters": e.get("rank_letters"),
            "headline_eligible": e.get("headline_eligible"),
            "reasons": e.get("reasons"),
            "comparison_with_best": pair,
            "evidence": self.vendor_links(vendor),
        }
        if stratum is not None:
            config["stratum_eligibility"] = ((e.get("breakdown_eligibility") or {}).get("stratum") or {}).get(stratum)
        return config

    # ##### ONE VENDOR, ONE ROW

    def vendor_figures(self, vendor: str) -> dict[str, Any]:
        """One vendor's leaderboard entry as published, its paired comparisons, and its pages."""
        entry = self.entry(vendor)
        pairs = [
            p
            for p in (self.board.get("comparisons") or {}).get("pairs") or []
            if vendor in (p.get("vendor_a"), p.get("vendor_b"))
        ]
        answer = {
            **self._header(),
            "rank_metric": self.board.get("rank_metric"),
            "ranking": self.board.get("ranking"),
            "entry": entry,
            "comparisons": pairs,
            "evidence": self.vendor_links(vendor) + self._links(["leaderboard.csv", "pairwise.csv", ROW_SCORES]),
        }
        keys = [*(entry.get("metrics") or {})]
        for scope in (entry.get("breakdown") or {}).values():
            for figures in (scope or {}).values():
                keys.extend(figures or {})
        return self._with_descriptors(answer, keys)

    @cached_property
    def _row_scores(self) -> dict[str, list[dict[str, Any]]]:
        rows: dict[str, list[dict[str, Any]]] = {}
        path = self.folder / ROW_SCORES
        if path.is_file():
            with path.open(newline="", encoding="utf-8") as f:
                for r in csv.DictReader(f):
                    typed = {k: (v or None) if k in TEXT_COLUMNS else _typed(v) for k, v in r.items()}
                    rows.setdefault(r["row_id"], []).append(typed)
        return rows

    @cached_property
    def _public_rows(self) -> dict[str, dict[str, Any]]:
        path = self.folder / PUBLIC_SPLIT
        if not path.is_file():
            return {}
        rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
        return {str(r.get("id")): r for r in rows}

    def row_verdicts(self, row_id: str, vendor: str | None = None) -> dict[str, Any]:
        """Every vendor's verdict on one public row as published (public_row_scores.csv), with the
        row's golden task (public_split.jsonl) and its page. Holdout rows are never published."""
        if not (self.folder / ROW_SCORES).is_file():
            raise QueryError(f"snapshot {self.snapshot_id} publishes no {ROW_SCORES}")
        verdicts = self._row_scores.get(row_id)
        if verdicts is None:
            examples = ", ".join(list(self._row_scores)[:3])
            raise QueryError(
                f"{row_id!r} is not a public row of snapshot {self.snapshot_id} ({len(self._row_scores)} public rows, "
                f"e.g. {examples}; holdout rows are never published)"
            )
        if vendor is not None:
            self.entry(vendor)
            verdicts = [v for v in verdicts if v.get("vendor") == vendor]
        answer = {
            **self._header(),
            "row_id": row_id,
            "golden": self._public_rows.get(row_id),
            "verdicts": verdicts,
            "evidence": self._links([f"queries/{row_id}.html", ROW_SCORES, PUBLIC_SPLIT]),
        }
        return self._with_descriptors(answer, [k for v in verdicts for k in v])
