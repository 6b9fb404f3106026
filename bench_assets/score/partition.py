"""Scoring one vendor partition from its archived raw responses. Deterministic, no LLM judge.

Each golden row gets one class (see `fetch.classify`) and its scores: hit@k and the first hit's rank
for search rows, extraction fidelity for extract rows, a rubric score for answer rows, `correct`,
and for a row not correct the reason it was missed (`score.miss_reasons`). Everything is
re-derivable from `raw_responses` alone, which is what `bench rescore` does.

Per-row Python work is limited to what needs a row's own text: parsing its archived body with
the vendor's adapter, extraction fidelity, and reading answers. hit@k, the first hit's rank and
every URL's normalized form are computed for the whole partition at once in DuckDB
(`score.vector.score_result_lists`), the same code `benchmarks/scoring_bench.py` measures.

A row whose response is not `ok` (empty, blocked, auth, quota, rate_limited, server, timeout, malformed,
rejected) answered nothing: it stays in the denominator with no hit, fidelity 0 (`incorrect`)
or answer score 0, and is not correct. Only `unsupported` rows (the vendor has no such
capability) have no scores at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Adapter, loads_json
from bench_assets.errors import NotReadyError
from bench_assets.fetch.classify import classify_response
from bench_assets.fetch.spend import AttemptReading, attempt_readings, ledger_of
from bench_assets.golden.rows import GoldenRow, capability_of
from bench_assets.golden.store import load_golden_rows
from bench_assets.golden.verdicts import NO_EXTRACTION, AnswerVerdict, extract_fidelity, score_answer
from bench_assets.manifest import SUPPORTED_K_VALUES, Manifest
from bench_assets.metrics import normalize_url
from bench_assets.runtime import collector_paused
from bench_assets.score.miss_reasons import answer_miss, extract_miss, search_miss, unanswered_miss
from bench_assets.score.vector import score_result_lists
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse

SCORE_COLUMNS = TABLES["row_scores"].column_names
RESULT_COLUMNS = TABLES["response_results"].column_names
# A vendor's verdict on one row as it is published (public_row_scores.csv, the drill-down, the
# review packets): the row_scores columns past the row's identity and place.
VERDICT_COLUMNS = (
    "response_class",
    "correct",
    "first_hit_rank",
    "hit_at_1",
    "hit_at_3",
    "hit_at_5",
    "hit_at_10",
    "fidelity",
    "fidelity_label",
    "answer_score",
    "answer_rule",
    "miss_reason",
    "billed_usd",
    "latency_ms",
    "attempts",
)
HIT_KS = SUPPORTED_K_VALUES  # every supported k is scored; a manifest publishes its own `k_values` of them
# Nullable dtypes: a row the vendor cannot serve has no hit, fidelity or verdict (NULL, not False).
SCORE_DTYPES = {
    "n_results": "int64",
    "first_hit_rank": "Int64",
    "hit_at_1": "boolean",
    "hit_at_3": "boolean",
    "hit_at_5": "boolean",
    "hit_at_10": "boolean",
    "fidelity": "Float64",
    "answer_score": "Float64",
    "correct": "boolean",
    "billed_usd": "float64",
    "latency_ms": "Float64",
    "attempts": "int64",
}


def _final_positions(keys: list[tuple[Any, Any]], numbers: list[int]) -> dict[tuple[Any, Any], int]:
    """The position of the last attempt of each (query, capability) key: the one with the highest
    attempt number (there is one attempt per number: it is part of the archive's key)."""
    final: dict[tuple[Any, Any], int] = {}
    for position, key in enumerate(keys):
        best = final.get(key)
        if best is None or numbers[position] > numbers[best]:
            final[key] = position
    return final


@dataclass(frozen=True)
class RowEvidence:
    """What a vendor's responses to one golden row give scoring: the final attempt's class, the
    results it returned (objects with `rank`, `url`, `title`, `snippet`, `content`, `published`;
    empty unless the class is `ok`), what every attempt billed, the final latency, the number of
    attempts, the vendor's request id and the class's detail. Read from the archive by
    `read_evidence`; `bench reproduce` builds the same from a published evidence bundle."""

    response_class: str
    results: tuple[Any, ...] = ()
    billed_usd: float = 0.0
    latency_ms: float | None = None
    attempts: int = 0
    request_id: str | None = None
    error_detail: str | None = None


# What scoring reads of an attempt (the request, its time and the body's digest are not read).
READ_COLUMNS = (
    "query_id",
    "capability",
    "attempt",
    "http_status",
    "response_headers_json",
    "body",
    "transport_error",
    "latency_ms",
)


@dataclass(frozen=True)
class ArchiveReading:
    """A vendor's archive read once, for scoring and for everything published from it: every
    attempt sent for a golden row (`attempts`: decoys left out, in archive order, index reset),
    what each means for spend (`readings`: `fetch.read_attempt`, its parsed body kept), what each
    was charged (`billed_usd`, priced as `fetch.SpendLedger` prices them), and each golden row's
    evidence (`evidence`: the final attempt's class and results, and the row's spend)."""

    attempts: pd.DataFrame
    readings: list[AttemptReading]
    billed_usd: list[float]
    evidence: dict[str, RowEvidence]


def read_archive(
    adapter: Adapter,
    prices: dict[str, float],
    rows: list[GoldenRow],
    raw: pd.DataFrame,
    where: str,
    capabilities: Collection[str] | None = None,
) -> ArchiveReading:
    """Read a vendor's archived attempts once (decoys left out): every attempt read and priced
    (`fetch.read_attempt`, `fetch.SpendLedger`), and each golden row's final attempt classified
    (`fetch.classify`) from the same parsed body, so no body is parsed twice. Rows of a capability
    the configuration is not measured on (`capabilities`, the manifest entry's; default: the
    adapter's) get no evidence. NotReadyError names `where` when a row the vendor can serve has no
    archived response."""
    sent = (raw[raw["role"] != "decoy"] if len(raw) else raw).reset_index(drop=True)
    readings = attempt_readings(adapter, prices, sent) if len(sent) else []
    billed = ledger_of(adapter, prices, sent, readings).per_attempt() if len(sent) else []
    read = {name: sent[name].tolist() if len(sent) else [] for name in READ_COLUMNS}
    keys = list(zip(read["query_id"], read["capability"]))
    final_of = _final_positions(keys, read["attempt"])  # (query, capability) -> position in `sent`
    attempts_of = Counter(keys)
    # Spend of a row: every attempt the vendor billed, retries included (see fetch.archived_spend).
    billed_by_key = (
        pd.Series(billed, index=sent.index, dtype="float64")
        .groupby([sent["query_id"], sent["capability"]])
        .sum()
        .to_dict()
        if len(sent)
        else {}
    )
    served = [(row, capability_of(row)) for row in rows]
    served = [
        (row, cap) for row, cap in served if cap in (adapter.capabilities if capabilities is None else capabilities)
    ]
    missing = [row.id for row, cap in served if (row.id, cap) not in final_of]
    if missing:
        raise NotReadyError(
            f"{len(missing)} golden rows of {where} have no archived response "
            f"(first: {missing[:3]}); materialize vendor_responses for this partition first"
        )
    evidence: dict[str, RowEvidence] = {}
    for row, cap in served:
        final = final_of[(row.id, cap)]
        headers_json, status, body = (
            read["response_headers_json"][final],
            read["http_status"][final],
            read["body"][final],
        )
        transport_error, latency = read["transport_error"][final], read["latency_ms"][final]
        classified = classify_response(
            adapter,
            cap,
            None if pd.isna(status) else int(status),
            loads_json(headers_json) if isinstance(headers_json, str) else {},
            body if isinstance(body, str) else None,
            transport_error if isinstance(transport_error, str) else None,
            parsed=readings[final].parsed,
        )
        answered = classified.response_class == "ok"
        evidence[row.id] = RowEvidence(
            response_class=classified.response_class,
            results=tuple(classified.parsed.results) if classified.parsed and answered else (),
            billed_usd=float(billed_by_key.get((row.id, cap), 0.0)),
            latency_ms=float(latency) if not pd.isna(latency) else None,
            attempts=attempts_of[(row.id, cap)],
            request_id=classified.parsed.request_id if classified.parsed else None,
            error_detail=classified.detail,
        )
    return ArchiveReading(sent, readings, billed, evidence)


def read_evidence(
    adapter: Adapter,
    prices: dict[str, float],
    rows: list[GoldenRow],
    raw: pd.DataFrame,
    where: str,
    capabilities: Collection[str] | None = None,
) -> dict[str, RowEvidence]:
    """Each golden row's evidence from its archived attempts (`read_archive`)."""
    return read_archive(adapter, prices, rows, raw, where, capabilities).evidence


def score_partition(
    snapshot_id: str,
    vendor: str,
    adapter: Adapter,
    manifest: Manifest,
    rows: list[GoldenRow],
    split: dict[str, str],
    raw: pd.DataFrame,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every golden row for one vendor. Returns (row_scores, response_results) frames."""
    # scoring's objects form no cycles worth the collector's walks (`runtime.collector_paused`)
    with collector_paused():
        spec = manifest.vendors[vendor]
        evidence = read_evidence(adapter, spec.prices_usd, rows, raw, f"{snapshot_id}|{vendor}", spec.capabilities)
        scored = score_rows(snapshot_id, vendor, manifest.fidelity_weights, manifest.answer_k, rows, split, evidence)
        return scored.scores, scored.results


class ScoredRows(NamedTuple):
    """A vendor's rows scored (`score_rows`): its `row_scores` and `response_results` frames, and
    each answered extract or answer row's verdict by row id (its `FidelityScore` or
    `AnswerVerdict`), which the drill-down shows."""

    scores: pd.DataFrame
    results: pd.DataFrame
    verdicts: dict[str, Any]


def score_rows(
    snapshot_id: str,
    vendor: str,
    fidelity_weights: dict[str, float] | None,
    answer_k: int,
    rows: list[GoldenRow],
    split: dict[str, str],
    evidence: Mapping[str, RowEvidence],
) -> ScoredRows:
    """Every golden row's verdict from its evidence (`read_evidence`); a row without evidence is
    one the vendor cannot serve (`unsupported`)."""
    verdicts: dict[str, Any] = {}
    scores: list[dict[str, Any]] = []
    parsed: dict[str, list[Any]] = {}
    no_hits = {f"hit_at_{k}": None for k in HIT_KS}
    for row in rows:
        got = evidence.get(row.id)
        entry = {
            "snapshot_id": snapshot_id,
            "vendor": vendor,
            "row_id": row.id,
            "split": split.get(row.id),
            "stratum": row.stratum,
            "cohort": row.cohort,
            "task_type": row.task_type,
            "response_class": "unsupported" if got is None else got.response_class,
            "n_results": 0,
            "first_hit_rank": None,
            "fidelity": None,
            "fidelity_label": None,
            "answer_score": None,
            "answer_rule": None,
            "correct": None,
            "billed_usd": 0.0,
            "latency_ms": None,
            "attempts": 0,
            "request_id": None,
            "error_detail": None,
            "miss_reason": None,
            **no_hits,
        }
        scores.append(entry)
        if got is None:
            continue
        answered = got.response_class == "ok"
        results = list(got.results) if answered else []
        parsed[row.id] = results
        entry.update(
            n_results=len(results),
            billed_usd=got.billed_usd,
            latency_ms=got.latency_ms,
            attempts=got.attempts,
            request_id=got.request_id,
            error_detail=got.error_detail,
        )
        task = row.task
        if task.type == "extract":
            fid = extract_fidelity(task, results, fidelity_weights) if answered else NO_EXTRACTION
            if answered:
                verdicts[row.id] = fid
            entry["fidelity"], entry["fidelity_label"] = fid.score, fid.label
            entry["correct"] = fid.label == "correct"
            if not entry["correct"]:
                entry["miss_reason"] = (
                    extract_miss(len(results), fid) if answered else unanswered_miss(got.response_class)
                )
        elif task.type == "answer":
            verdict = (
                score_answer(task, results, answer_k)
                if answered
                else AnswerVerdict(0.0, f"no answer: the response was {got.response_class}")
            )
            if answered:
                verdicts[row.id] = verdict
            entry["answer_score"], entry["answer_rule"] = verdict.score, verdict.rule
            entry["correct"] = verdict.score == 1.0
            if not entry["correct"]:
                entry["miss_reason"] = (
                    answer_miss(len(results), verdict) if answered else unanswered_miss(got.response_class)
                )

    # Every result list of the partition at once: normalized URLs, and hit@k of the search rows.
    # Every result in order, with its row and its position in the row's list:
    query_ids: list[str] = []
    positions: list[int] = []
    listed: list[Any] = []
    for row_id, results in parsed.items():
        query_ids += [row_id] * len(results)
        positions += range(1, len(results) + 1)
        listed += results
    result_lists = pd.DataFrame(
        {
            "query_id": _text_column(query_ids),
            "rank": np.array(positions, dtype="int64"),
            "url": _text_column([r.url for r in listed]),
        }
    )
    searched = [(row.id, row.task) for row in rows if row.task.type == "search" and row.id in parsed]
    golden = pd.DataFrame(
        {
            "query_id": [row_id for row_id, task in searched for _ in task.accepted_urls],
            "url": [u for _, task in searched for u in task.accepted_urls],
        }
    )
    hits, forms = score_result_lists(result_lists, golden, HIT_KS)
    by_query = hits.set_index("query_id").to_dict("index")
    tasks = {row.id: row.task for row in rows}
    forms_of: dict[str, list[str]] = {}  # a row's results' normalized forms, in rank order
    for row_id, form in zip(forms["query_id"].tolist(), forms["url_normalized"].tolist()):
        forms_of.setdefault(row_id, []).append(form)
    for entry in scores:
        if entry["task_type"] != "search" or entry["response_class"] == "unsupported":
            continue
        hit = by_query[entry["row_id"]]
        rank = None if pd.isna(hit["first_hit_rank"]) else int(hit["first_hit_rank"])
        entry["first_hit_rank"] = rank
        for k in HIT_KS:
            entry[f"hit_at_{k}"] = bool(hit[f"hit_at_{k}"])
        entry["correct"] = rank is not None and rank <= answer_k
        if not entry["correct"]:
            row_id, response_class = str(entry["row_id"]), str(entry["response_class"])
            task = tasks[row_id]
            assert task.type == "search"
            entry["miss_reason"] = (
                search_miss(forms_of.get(row_id, []), rank, answer_k, [normalize_url(u) for u in task.accepted_urls])
                if response_class == "ok"
                else unanswered_miss(response_class)
            )

    results_out = pd.DataFrame(
        {
            "snapshot_id": snapshot_id,
            "vendor": vendor,
            "row_id": result_lists["query_id"],
            "rank": np.array([r.rank for r in listed], dtype="int64"),
            "url": result_lists["url"],
            "url_normalized": forms["url_normalized"].to_numpy(),
            "title": _text_column([r.title for r in listed]),
            "snippet": _text_column([(r.snippet or "")[:500] for r in listed]),
            "published": _text_column([r.published for r in listed]),
            "content_chars": np.array([len(r.content or "") for r in listed], dtype="int64"),
        },
        columns=RESULT_COLUMNS,
    )
    frame = pd.DataFrame(scores, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
    return ScoredRows(frame, results_out, verdicts)


def _text_column(values: list[Any]) -> np.ndarray | list[Any]:
    """`values` as the column pandas makes of them: texts and Nones as an object array (what pandas
    infers for them, without scanning them to find out), anything else (a vendor's number for a
    title) left to pandas' inference as before."""
    if not set(map(type, values)) <= {str, type(None)}:
        return values
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def score_vendor_partition(warehouse: Warehouse, manifest: Manifest, vendor: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The partition's (row_scores, response_results), re-derived from its archived raw responses."""
    snapshot_id = manifest.snapshot_id
    raw = warehouse.rows("raw_responses", snapshot_id, vendor=vendor)
    return score_partition(
        snapshot_id,
        vendor,
        get_adapter(manifest.vendors[vendor].adapter),
        manifest,
        load_golden_rows(warehouse, snapshot_id),
        warehouse.split(snapshot_id),
        raw,
    )
