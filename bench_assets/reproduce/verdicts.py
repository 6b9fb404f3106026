"""Every public verdict of one vendor, re-derived from its evidence with the benchmark's own code.

Each row's evidence (`score.partition.RowEvidence`) is rebuilt from the bundle and scored by
`score.partition.score_rows`, the function that scored the snapshot:

- where the final body is published (`raw`), it is classified and parsed by the vendor's adapter
  exactly as scoring did (`fetch.classify.classify_response`), and what the bundle lists (class,
  each result's URL, title, snippet, text and digests) is checked against that re-reading;
  every attempt's spend is read again (`fetch.spend.read_attempt`);
- otherwise the class is the one the bundle records and the results are the bundle's: a URL that
  is not published (`digests`, or withheld because it names a holdout row) stands as the row's
  own golden URL where its digest is that URL's digest, else as an address that matches nothing
  (a withheld URL is a holdout row's golden URL, and the split keeps rows sharing a URL on one
  side, so it is never a public row's golden URL); spend is the billed units at the pinned prices.

Search verdicts (hit@k, the first hit's rank) are thus always re-derived. An extract verdict needs
the first result's text and an answer verdict the text of the first `answer_k` results: where that
text is not published (`digests`), or is withheld because it names a holdout row and reading it as
empty does not give the published verdict, the verdict is not reproducible from public data: it is
named, and the published one stands in the figures, so every figure is still re-derived from the
verdicts. Every bundle's own inconsistency (a body whose SHA-256 is not the one recorded, a result
its body does not hold, a digest of another URL) is a difference.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import NormalizedResult
from bench_assets.fetch.classify import classify_response
from bench_assets.fetch.spend import priced_usd, read_attempt
from bench_assets.golden.rows import GoldenRow, capability_of
from bench_assets.golden.verdicts import result_text
from bench_assets.publish.evidence import table_path, url_digest
from bench_assets.reproduce.folder import LoadedEvidence
from bench_assets.rescore.compare import Difference, same_value
from bench_assets.score.partition import RowEvidence, score_rows

# A URL that stands for one the bundle does not publish and that is no golden URL: it matches nothing.
UNPUBLISHED_URL = "https://unpublished.invalid/rank-{rank}"
# What a verdict that cannot be re-derived (its text not published) takes as published; the miss
# reason is read from the same text as the verdict, so it goes with it.
VERDICT_COLUMNS = ("correct", "fidelity", "fidelity_label", "answer_score", "answer_rule", "miss_reason")


@dataclass
class VendorVerdicts:
    """One vendor's re-derived row scores, the rows whose verdict stands as published (row id →
    why: `digests` or `withheld`, and the ranks whose text it needs), what was re-read from bodies,
    and the bundle's own differences."""

    vendor: str
    scores: pd.DataFrame
    not_reproducible: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    bodies_reparsed: int = 0
    estimated_spend: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _units(text: str | None) -> dict[str, float] | None:
    return None if text is None else dict(json.loads(text))


class _Rederiver:
    """The re-derivation of one vendor (see the module)."""

    def __init__(
        self,
        evidence: LoadedEvidence,
        snapshot_id: str,
        rows: list[GoldenRow],
        answer_k: int,
        fidelity_weights: dict[str, float],
    ):
        self.ev = evidence
        self.vendor = evidence.vendor
        self.snapshot_id = snapshot_id
        self.rows = rows
        self.row_of = {r.id: r for r in rows}
        self.answer_k = answer_k
        self.weights = fidelity_weights
        self.adapter = get_adapter(evidence.settings["adapter"])
        self.prices = {k: float(v) for k, v in evidence.settings["prices_usd"].items()}
        # what the configuration was measured on (its manifest endpoints); a bundle written before
        # it said so: every capability of the adapter
        self.capabilities = frozenset(evidence.settings.get("capabilities") or self.adapter.capabilities)
        self.out = VendorVerdicts(self.vendor, pd.DataFrame())
        self.attempts_file = table_path("attempts", self.vendor)
        self.results_file = table_path("results", self.vendor)

    def differ(self, surface: str, item: str, published: Any, derived: Any) -> None:
        self.out.differences.append(Difference(surface, self.vendor, item, published, derived))

    # ---- spend

    def attempt_spend(self, row_id: str, a: dict[str, Any]) -> float:
        """What one attempt billed: re-read from the response where it can be (its body is
        published, or it is no 2xx), else its billed units at the pinned prices."""
        where = f"row {row_id} attempt {a['attempt']}"
        status = a["http_status"]
        if a["body"] is not None or status is None or not (200 <= int(status) < 300):
            reading = read_attempt(
                self.adapter,
                self.prices,
                a["capability"],
                status,
                json.loads(a["response_headers_json"] or "{}"),
                a["body"],
                a["transport_error"],
            )
            if reading.units is not None and reading.units != _units(a["billed_units_json"]):
                self.differ(self.attempts_file, f"{where}: billed_units_json", a["billed_units_json"], reading.units)
            if reading.billed_usd is not None:
                return reading.billed_usd
        elif a["billed_units_json"] is not None:
            return priced_usd(_units(a["billed_units_json"]), self.prices)
        recorded = float(a["billed_usd"] or 0.0)
        if recorded:  # billed, but its body could not be read: priced from the vendor's other responses
            self.out.estimated_spend.append(where)
        return recorded

    # ---- results

    def check_digests(self, row_id: str, rank: int, got: dict[str, Any], result: Any) -> None:
        """A listed result's digests against its URL and text (the text's only where all of it is listed)."""
        if got["url_sha256"] is not None and got["url_sha256"] != url_digest(result.url):
            self.differ(
                self.results_file, f"row {row_id} rank {rank}: url_sha256", got["url_sha256"], url_digest(result.url)
            )
        whole = result.content is not None or not got["content_chars"]
        if got["text_sha256"] is not None and whole and got["text_sha256"] != _sha256(result_text(result)):
            self.differ(
                self.results_file,
                f"row {row_id} rank {rank}: text_sha256",
                got["text_sha256"],
                _sha256(result_text(result)),
            )

    def check_listed(self, row_id: str, parsed: list[Any], listed: list[dict[str, Any]]) -> None:
        """The bundle's results against the adapter's re-reading of the body."""
        by_rank = {int(r["rank"]): r for r in listed}
        if sorted(by_rank) != [int(r.rank) for r in parsed]:
            self.differ(self.results_file, f"row {row_id}: ranks", sorted(by_rank), [int(r.rank) for r in parsed])
        for r in parsed:
            got = by_rank.get(int(r.rank))
            if got is None or got["withheld"]:
                continue
            for name in ("url", "title", "snippet", "content", "published"):
                if got[name] is not None and got[name] != getattr(r, name):
                    self.differ(self.results_file, f"row {row_id} rank {r.rank}: {name}", got[name], getattr(r, name))
            self.check_digests(row_id, int(r.rank), got, r)

    def listed_results(self, row: GoldenRow, listed: list[dict[str, Any]]) -> tuple[list[Any], set[int]]:
        """The results as the bundle lists them, and the ranks whose text is not published. A URL
        not published stands as the row's golden URL whose digest it carries, else as one that
        matches nothing."""
        golden = {url_digest(u): u for u in row.urls}
        out, hidden = [], set()
        for got in sorted(listed, key=lambda x: int(x["rank"])):
            rank = int(got["rank"])
            url = got["url"] or golden.get(got["url_sha256"]) or UNPUBLISHED_URL.format(rank=rank)
            result = NormalizedResult(rank, url, got["title"], got["snippet"], got["content"], got["published"])
            if got["withheld"] or self.ev.level == "digests":
                hidden.add(rank)
            elif got["url"] is not None:
                self.check_digests(row.id, rank, got, result)
            out.append(result)
        return out, hidden

    # ---- one row

    def evidence_of(
        self, row: GoldenRow, attempts: list[dict[str, Any]], listed: list[dict[str, Any]]
    ) -> tuple[RowEvidence, set[int]]:
        """The row's evidence as scoring reads it, and the ranks whose text is not published."""
        attempts = sorted(attempts, key=lambda a: int(a["attempt"]))
        for a in attempts:
            if a["body"] is not None and _sha256(a["body"]) != a["body_sha256"]:
                self.differ(
                    self.attempts_file,
                    f"row {row.id} attempt {a['attempt']}: body_sha256",
                    a["body_sha256"],
                    _sha256(a["body"]),
                )
        billed = sum(self.attempt_spend(row.id, a) for a in attempts)
        final = attempts[-1]
        hidden: set[int] = set()
        if final["body"] is not None or final["transport_error"] is not None:
            classified = classify_response(
                self.adapter,
                final["capability"],
                final["http_status"],
                json.loads(final["response_headers_json"] or "{}"),
                final["body"],
                final["transport_error"],
            )
            response_class = classified.response_class
            if response_class != final["response_class"]:
                self.differ(
                    self.attempts_file, f"row {row.id}: response_class", final["response_class"], response_class
                )
            results = list(classified.parsed.results) if classified.parsed and response_class == "ok" else []
            self.check_listed(row.id, results, listed)
            self.out.bodies_reparsed += final["body"] is not None
        else:  # no body published: the class as recorded, the results as listed
            response_class = str(final["response_class"])
            results, hidden = self.listed_results(row, listed) if response_class == "ok" else ([], set())
        evidence = RowEvidence(
            response_class=response_class,
            results=tuple(results),
            billed_usd=billed,
            latency_ms=final["latency_ms"],
            attempts=len(attempts),
        )
        return evidence, hidden

    def window(self, row: GoldenRow, hidden: set[int]) -> list[int]:
        """The ranks whose unpublished text the row's verdict reads."""
        if row.task_type == "extract":
            return [1] if 1 in hidden else []
        if row.task_type == "answer":
            return sorted(r for r in hidden if r <= self.answer_k)
        return []

    def run(self, published: dict[str, dict[str, Any]], tick: Callable[[], object] = lambda: None) -> VendorVerdicts:
        """Re-derive every public row's verdict; `published` maps row id → its published verdict
        (public_row_scores.csv), which stands where a verdict is not reproducible."""
        attempts_by_row: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for a in self.ev.attempts:
            attempts_by_row[a["row_id"]].append(a)
        results_by_row: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in self.ev.results:
            results_by_row[r["row_id"]].append(r)
        for row_id in sorted(set(attempts_by_row) - set(self.row_of)):
            self.differ(self.attempts_file, f"row {row_id}", "present", "not a public row")
        evidence, hidden_of = {}, {}
        for row in self.rows:
            tick()
            if capability_of(row) not in self.capabilities:
                continue  # unsupported: scored as such, with no evidence
            if not attempts_by_row.get(row.id):
                self.differ(self.attempts_file, f"row {row.id}", None, "no attempt (the vendor serves this row)")
                continue
            evidence[row.id], hidden_of[row.id] = self.evidence_of(
                row, attempts_by_row[row.id], results_by_row.get(row.id, [])
            )
        split = dict.fromkeys(self.row_of, "public")
        scores = score_rows(
            self.snapshot_id, self.vendor, self.weights, self.answer_k, self.rows, split, evidence
        ).scores
        for i, rec in scores.iterrows():
            needed = self.window(self.row_of[rec["row_id"]], hidden_of.get(rec["row_id"], set()))
            if not needed:
                continue
            mine = published.get(rec["row_id"]) or {}
            if self.ev.level == "digests":
                why = "digests"
            elif all(same_value(mine.get(c) or None, _cell(rec[c]), text=True) for c in VERDICT_COLUMNS):
                continue  # reading the withheld text as empty gives the published verdict
            else:
                why = "withheld"
            self.out.not_reproducible[rec["row_id"]] = (why, needed)
            for c in VERDICT_COLUMNS:
                scores.at[i, c] = _published_value(c, mine.get(c))
        self.out.scores = scores
        return self.out


def _cell(value: Any) -> str | None:
    """A verdict as public_row_scores.csv writes it (None for an empty cell)."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return str(value.item() if hasattr(value, "item") else value)


def _published_value(column: str, text: Any) -> Any:
    """A verdict cell of public_row_scores.csv as the row_scores frame holds it."""
    if text in (None, ""):
        return None
    if column == "correct":
        return str(text) == "True"
    if column in ("fidelity", "answer_score"):
        return float(text)
    return str(text)


def rederive_vendor(
    evidence: LoadedEvidence,
    snapshot_id: str,
    rows: list[GoldenRow],
    answer_k: int,
    fidelity_weights: dict[str, float],
    published: dict[str, dict[str, Any]],
    tick: Callable[[], object] = lambda: None,
) -> VendorVerdicts:
    """One vendor's public verdicts re-derived from its evidence (see the module); `tick` is
    called once per row (a progress bar)."""
    return _Rederiver(evidence, snapshot_id, rows, answer_k, fidelity_weights).run(published, tick)
