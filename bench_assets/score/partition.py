"""Scoring one vendor partition from its archived raw responses. Deterministic, no LLM judge.

Each golden row gets one class (see `fetch.classify`) and its scores: hit@k and the first hit's rank
for search rows, extraction fidelity for extract rows, a rubric score for answer rows, `correct`,
and for a row not correct the reason it was missed (`score.miss_reasons`). Everything is
re-derivable from `raw_responses` alone, which is what `bench rescore` does.

Per-row Python work is limited to what needs a row's own text: parsing its archived body with
the vendor's adapter, extraction fidelity, and reading answers. hit@k, the first hit's rank and
every URL's normalized form are computed for a whole batch of rows at once in DuckDB
(`score.vector.score_result_lists`), the same code `benchmarks/scoring_bench.py` measures.

A vendor's archive is read and scored in batches of golden rows (`score_archive`), all the
attempts of a row in the same batch, so scoring holds one batch's bodies and parsed results at a
time, never the whole archive's; what every attempt billed is summed once all are read, as the
partition's spend is priced over all of them (`fetch.SpendLedger`).

A row whose response is not `ok` (empty, blocked, auth, quota, rate_limited, server, timeout, malformed,
rejected) answered nothing: it stays in the denominator with no hit, fidelity 0 (`incorrect`)
or answer score 0, and is not correct. Only `unsupported` rows (the vendor has no such
capability) have no scores at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Adapter, Capability, loads_json
from bench_assets.errors import NotReadyError
from bench_assets.fetch.classify import classify_response
from bench_assets.fetch.spend import AttemptReading, SpendLedger, attempt_readings, ledger_of
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
    `read_archive`; `bench reproduce` builds the same from a published evidence bundle."""

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


def _served(
    adapter: Adapter, rows: list[GoldenRow], capabilities: Collection[str] | None
) -> list[tuple[GoldenRow, Capability]]:
    """Each golden row the configuration is measured on, with its capability (`capabilities`, the
    manifest entry's; default: the adapter's)."""
    measured = adapter.capabilities if capabilities is None else capabilities
    return [(row, cap) for row, cap in ((row, capability_of(row)) for row in rows) if cap in measured]


def _refuse_if_missing(
    served: list[tuple[GoldenRow, Capability]], archived: Collection[tuple[Any, Any]], where: str
) -> None:
    """NotReadyError naming `where` when a row the vendor can serve has no archived response."""
    missing = [row.id for row, cap in served if (row.id, cap) not in archived]
    if missing:
        raise NotReadyError(
            f"{len(missing)} golden rows of {where} have no archived response "
            f"(first: {missing[:3]}); materialize vendor_responses for this partition first"
        )


def _billed_by_row(keys: list[tuple[Any, Any]], billed: list[float]) -> dict[tuple[Any, Any], float]:
    """Spend of each (query, capability): every attempt the vendor billed, retries included (see
    `fetch.archived_spend`), summed in archive order."""
    if not keys:
        return {}
    query_ids, capabilities = zip(*keys)
    return (
        pd.Series(billed, dtype="float64")
        .groupby([pd.Series(query_ids, dtype=object), pd.Series(capabilities, dtype=object)])
        .sum()
        .to_dict()
    )


def _row_evidence(
    adapter: Adapter,
    served: list[tuple[GoldenRow, Capability]],
    sent: pd.DataFrame,
    readings: list[AttemptReading],
    billed_by_key: Mapping[tuple[Any, Any], float],
) -> dict[str, RowEvidence]:
    """Each served row's evidence from its attempts in `sent` (every served row has one): its final
    attempt classified from the reading's parsed body, so no body is parsed twice."""
    read = {name: sent[name].tolist() if len(sent) else [] for name in READ_COLUMNS}
    keys = list(zip(read["query_id"], read["capability"]))
    final_of = _final_positions(keys, read["attempt"])  # (query, capability) -> position in `sent`
    attempts_of = Counter(keys)
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
    return evidence


def _sent(raw: pd.DataFrame) -> pd.DataFrame:
    """The attempts sent for golden rows: decoys left out, index reset."""
    return (raw[raw["role"] != "decoy"] if len(raw) else raw).reset_index(drop=True)


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
    sent = _sent(raw)
    readings = attempt_readings(adapter, prices, sent) if len(sent) else []
    billed = ledger_of(adapter, prices, sent, readings).per_attempt() if len(sent) else []
    keys = list(zip(sent["query_id"].tolist(), sent["capability"].tolist())) if len(sent) else []
    served = _served(adapter, rows, capabilities)
    _refuse_if_missing(served, set(keys), where)
    evidence = _row_evidence(adapter, served, sent, readings, _billed_by_row(keys, billed))
    return ArchiveReading(sent, readings, billed, evidence)


# Body characters of the archived attempts read and scored at once: scoring holds one batch's
# bodies and parsed results, never a whole archive's, whatever the number of rows (a batch holds
# at least one golden row's attempts).
BATCH_BODY_CHARS = 8_000_000


@dataclass(frozen=True)
class AttemptBatch:
    """Golden rows scored together (`rows`, consecutive in golden order) and every query whose
    archived attempts are read for them (`query_ids`: the rows' own, and on the last batch any
    archived query that is no golden row, whose attempts count for spend as in `read_archive`)."""

    rows: list[GoldenRow]
    query_ids: list[str]


def plan_batches(
    rows: list[GoldenRow], archived: pd.DataFrame, body_chars: int = BATCH_BODY_CHARS
) -> list[AttemptBatch]:
    """Golden rows cut into consecutive batches of about `body_chars` characters of archived bodies
    (`archived`: one line per attempt sent, decoys left out, with `query_id` and `chars`). All the
    attempts of a row fall in one batch, so its retries and final attempt are decided together;
    there is always at least one batch."""
    chars = archived.groupby("query_id")["chars"].sum().to_dict() if len(archived) else {}
    batches: list[AttemptBatch] = []
    current: list[GoldenRow] = []
    held = 0
    for row in rows:
        current.append(row)
        held += int(chars.get(row.id, 0))
        if held >= body_chars:
            batches.append(AttemptBatch(current, [r.id for r in current]))
            current, held = [], 0
    if current or not batches:
        batches.append(AttemptBatch(current, [r.id for r in current]))
    golden = {row.id for row in rows}
    others = sorted(q for q in chars if q not in golden)
    batches[-1].query_ids.extend(others)
    return batches


def score_archive(
    snapshot_id: str,
    vendor: str,
    adapter: Adapter,
    manifest: Manifest,
    rows: list[GoldenRow],
    split: dict[str, str],
    archived: pd.DataFrame,
    read_batch: Callable[[list[str]], pd.DataFrame],
    body_chars: int = BATCH_BODY_CHARS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every golden row for one vendor, batch by batch (`plan_batches` over `archived`: the
    archive's attempts sent, decoys left out, with `query_id`, `capability` and body `chars`);
    `read_batch(query_ids)` returns every archived attempt of those queries (`READ_COLUMNS` and
    `role`, in archive order). Each batch's bodies and parsed results are let go once it is scored.
    Returns (row_scores, response_results), the same frames as scoring the whole archive at once."""
    spec = manifest.vendors[vendor]
    served = _served(adapter, rows, spec.capabilities)
    keys = set(zip(archived["query_id"].tolist(), archived["capability"].tolist())) if len(archived) else set()
    _refuse_if_missing(served, keys, f"{snapshot_id}|{vendor}")
    ledger = SpendLedger(adapter, spec.prices_usd)
    scores: list[pd.DataFrame] = []
    results: list[pd.DataFrame] = []
    # scoring's objects form no cycles worth the collector's walks (`runtime.collector_paused`)
    with collector_paused():
        for batch in plan_batches(rows, archived, body_chars):
            sent = _sent(read_batch(batch.query_ids))
            readings = attempt_readings(adapter, spec.prices_usd, sent)
            if len(sent):
                for query_id, capability, reading in zip(sent["query_id"], sent["capability"], readings):
                    ledger.add(query_id, capability, reading)
            # spend is set once every attempt is read: an unreadable body is priced like the
            # partition's readable ones (`fetch.SpendLedger`)
            evidence = _row_evidence(adapter, _served(adapter, batch.rows, spec.capabilities), sent, readings, {})
            del sent, readings
            scored = score_rows(
                snapshot_id, vendor, manifest.fidelity_weights, manifest.answer_k, batch.rows, split, evidence
            )
            del evidence
            scores.append(scored.scores)
            results.append(scored.results)
    billed_by_key = _billed_by_row([(q, c) for q, c, _ in ledger.entries], ledger.per_attempt())
    billed_of_row = {row.id: float(billed_by_key.get((row.id, cap), 0.0)) for row, cap in served}
    frame = pd.concat(scores, ignore_index=True) if len(scores) > 1 else scores[0]
    frame["billed_usd"] = np.array([billed_of_row.get(r, 0.0) for r in frame["row_id"].tolist()], dtype="float64")
    listed = pd.concat(results, ignore_index=True) if len(results) > 1 else results[0]
    return frame, listed


def score_partition(
    snapshot_id: str,
    vendor: str,
    adapter: Adapter,
    manifest: Manifest,
    rows: list[GoldenRow],
    split: dict[str, str],
    raw: pd.DataFrame,
    body_chars: int = BATCH_BODY_CHARS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every golden row for one vendor from `raw`, its archived attempts in memory
    (`score_archive`, in batches of `body_chars`). Returns (row_scores, response_results) frames."""
    sent = _sent(raw)
    archived = pd.DataFrame(
        {
            "query_id": sent["query_id"] if len(sent) else [],
            "capability": sent["capability"] if len(sent) else [],
            "chars": [len(b) if isinstance(b, str) else 0 for b in sent["body"]] if len(sent) else [],
        }
    )

    def read_batch(query_ids: list[str]) -> pd.DataFrame:
        return sent[sent["query_id"].isin(query_ids)] if len(sent) else sent

    return score_archive(snapshot_id, vendor, adapter, manifest, rows, split, archived, read_batch, body_chars)


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
    """Every golden row's verdict from its evidence (`read_archive`); a row without evidence is
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

    # Every result list of the rows at once: normalized URLs, and hit@k of the search rows.
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


def score_vendor_partition(
    warehouse: Warehouse, manifest: Manifest, vendor: str, body_chars: int = BATCH_BODY_CHARS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The partition's (row_scores, response_results), re-derived from its archived raw responses,
    read batch by batch (`score_archive`), each batch on a connection of its own so that DuckDB
    keeps no more than a batch's buffers."""
    snapshot_id = manifest.snapshot_id
    sent = "FROM raw_responses WHERE snapshot_id = ? AND vendor = ? AND role IS DISTINCT FROM 'decoy'"
    with warehouse.session():  # the partition's inputs at one opening of the file
        archived = warehouse.query_df(
            f"SELECT query_id, capability, coalesce(strlen(body), 0) AS chars {sent}", [snapshot_id, vendor]
        )
        rows = load_golden_rows(warehouse, snapshot_id)
        split = warehouse.split(snapshot_id)

    def read_batch(query_ids: list[str]) -> pd.DataFrame:
        return warehouse.query_df(
            f"SELECT role, {', '.join(READ_COLUMNS)} {sent} AND list_contains(?, query_id)",
            [snapshot_id, vendor, query_ids],
        )

    return score_archive(
        snapshot_id,
        vendor,
        get_adapter(manifest.vendors[vendor].adapter),
        manifest,
        rows,
        split,
        archived,
        read_batch,
        body_chars,
    )
