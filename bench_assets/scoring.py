"""Scoring one vendor partition from its archived raw responses. Deterministic, no LLM judge.

Each golden row gets one class (see `classify`) and its scores: hit@k and the first hit's rank
for search rows, extraction fidelity for extract rows, a rubric score for answer rows, and
`correct`. Everything is re-derivable from `raw_responses` alone, which is what `bench rescore`
does.

Per-row Python work is limited to what needs a row's own text: parsing its archived body with
the vendor's adapter, extraction fidelity, and reading answers. hit@k, the first hit's rank and
every URL's normalized form are computed for the whole partition at once in DuckDB
(`vector_scoring.score_result_lists`), the same code `benchmarks/scoring_bench.py` measures.

A row whose response is not `ok` (empty, blocked, auth, quota, server, timeout, malformed,
rejected) answered nothing: it stays in the denominator with no hit, fidelity 0 (`incorrect`)
or answer score 0, and is not correct. Only `unsupported` rows (the vendor has no such
capability) have no scores at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from collections.abc import Sequence
from typing import Any

import pandas as pd

from bench_assets.adapters.base import Adapter
from bench_assets.classify import classify_response
from bench_assets.fetch import archived_spend
from bench_assets.golden import AnswerTask, ExtractTask, GoldenRow
from bench_assets.manifest import SUPPORTED_K_VALUES, Manifest
from bench_assets.metrics import (DEFAULT_CELL_RUBRIC, CellAnswer, CellReading, CellRubric, FidelityScore,
                                  answer_in_text, explain_cell, extraction_fidelity, locate_cell_answer)
from bench_assets.vector_scoring import score_result_lists

SCORE_COLUMNS = ["snapshot_id", "vendor", "row_id", "split", "stratum", "cohort", "task_type", "response_class",
                 "n_results", "first_hit_rank", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "fidelity",
                 "fidelity_label", "answer_score", "answer_rule", "correct", "billed_usd", "latency_ms", "attempts",
                 "request_id", "error_detail"]
RESULT_COLUMNS = ["snapshot_id", "vendor", "row_id", "rank", "url", "url_normalized", "title", "snippet",
                  "published", "content_chars"]
HIT_KS = SUPPORTED_K_VALUES  # every supported k is scored; a manifest publishes its own `k_values` of them
# Nullable dtypes: a row the vendor cannot serve has no hit, fidelity or verdict (NULL, not False).
SCORE_DTYPES = {"n_results": "int64", "first_hit_rank": "Int64", "hit_at_1": "boolean", "hit_at_3": "boolean",
                "hit_at_5": "boolean", "hit_at_10": "boolean", "fidelity": "Float64", "answer_score": "Float64",
                "correct": "boolean", "billed_usd": "float64", "latency_ms": "Float64", "attempts": "int64"}
# What an extraction that returned no text earns: nothing, not even the credit for leaving noise out.
NO_EXTRACTION = FidelityScore(score=0.0, label="incorrect", fields={}, weights={})


def capability_of(row: GoldenRow) -> str:
    return "extract" if row.task_type == "extract" else "search"


def result_text(result: Any) -> str:
    """The text of one returned result that answer scoring reads: title, snippet and content."""
    return "\n".join(filter(None, [result.title, result.snippet, result.content]))


def extract_fidelity(task: ExtractTask, results: Sequence[Any], weights: dict[str, float] | None) -> FidelityScore:
    """Fidelity of an extract row from the first returned result's title and content (its snippet
    when it has no content). No result, or a result with no text, scores 0 and is `incorrect`."""
    top = results[0] if results else None
    text = (top.content or top.snippet or "") if top else ""
    if not text.strip():
        return NO_EXTRACTION
    return extraction_fidelity(task.model_dump(), top.title, text, weights=weights)


@dataclass(frozen=True)
class AnswerVerdict:
    """An answer row's rubric score (0, 0.5 or 1), the rule that produced it, and the evidence:
    the ranks whose text holds a precise answer, or where the cell reader read its answer."""

    score: float
    rule: str
    answer_ranks: tuple[int, ...] = ()
    reading: CellReading | None = None


def _number(x: float | str | None) -> str:
    if not isinstance(x, (int, float)):
        return str(x)
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:,.6f}".rstrip("0").rstrip(".")


def _describe(answer: CellAnswer) -> str:
    if answer.kind == "not_available":
        return "an explicit not-available statement"
    method = "with a method" if answer.method and answer.method.strip() else "without a method"
    if answer.kind == "range":
        return f"the range {_number(answer.low)} to {_number(answer.high)} {method}"
    return f"the value {_number(answer.value)} {method}"


def precise_rubric(task: AnswerTask, rubric: CellRubric = DEFAULT_CELL_RUBRIC) -> CellRubric:
    """The rubric a precise row's read value is scored with: full credit within the row's own
    (relative) tolerance, the tolerance full credit by presence uses, so the two never disagree;
    the relaxed tolerance is the rubric's, or the row's when that is wider."""
    return replace(rubric, relative_tolerance=task.tolerance,
                   relaxed_relative_tolerance=max(rubric.relaxed_relative_tolerance, task.tolerance))


def score_answer(task: AnswerTask, results: Sequence[Any], answer_k: int,
                 rubric: CellRubric = DEFAULT_CELL_RUBRIC) -> AnswerVerdict:
    """Score an answer row on the vendor's top `answer_k` results (in rank order).

    * precise: 1 when the exact answer, or the number within the row's tolerance, appears in the
      title, snippet or content of one of the top `answer_k` results
      (:func:`bench_assets.metrics.answer_in_text`). Otherwise, for a row with a `number` and a
      `cue`, the value about the cue is read from those texts
      (:func:`bench_assets.metrics.read_cell_answer`) and scored by the per-cell rubric's precise
      rule (:func:`bench_assets.metrics.score_cell`, with the row's relative tolerance, see
      :func:`precise_rubric`): 0.5 when it agrees in sign and direction but lies outside the
      tolerance, or lies within the relaxed tolerance without a derivation; 0 otherwise, and 0
      when nothing is read. A row with an exact text answer, or without a cue, scores 1 or 0.
      Why full credit is by presence, not by reading: the reader takes the first sentence that
      names the cue, so a page that also mentions an older or a rival figure first would lose a
      right answer that is plainly in the results; presence is the sturdier test for the top
      tier, and the reader only decides the half credit of an answer that is not there;
    * range and not_available: the answer about the row's `cue` is read from those texts
      (:func:`bench_assets.metrics.read_cell_answer`) and scored 0, 0.5 or 1 by the per-cell
      rubric (:func:`bench_assets.metrics.score_cell`) against the reference range or the
      plausible interval; nothing read scores 0.
    """
    top = list(results[:answer_k])
    texts = [result_text(r) for r in top]
    if task.answer_type == "precise":
        ranks = tuple(r.rank for r, text in zip(top, texts)
                      if answer_in_text(task.exact_answer, task.number, task.tolerance, text))
        if ranks:
            return AnswerVerdict(1.0, f"precise: the answer is in the top {answer_k} results (first at rank "
                                      f"{ranks[0]})", ranks)
        missed = f"precise: the answer is in none of the top {answer_k} results"
        if task.number is None or task.cue is None:
            return AnswerVerdict(0.0, missed)  # no numeric reference or nothing to read by: no half credit
        reading = locate_cell_answer(texts, task.cue)
        if reading is None:
            return AnswerVerdict(0.0, f"{missed}, nor anything about {task.cue!r}")
        cell = explain_cell("precise", reading.answer, expected_value=task.number,
                            rubric=precise_rubric(task, rubric))
        return AnswerVerdict(cell.score, f"{missed}; read {_describe(reading.answer)} at rank "
                                         f"{top[reading.text_index].rank}: {cell.reason}", reading=reading)
    assert task.cue is not None  # the golden row validator demands a cue for range and not_available rows
    reading = locate_cell_answer(texts, task.cue)
    if reading is None:
        return AnswerVerdict(0.0, f"{task.answer_type}: nothing about {task.cue!r} in the top {answer_k} results")
    if task.answer_type == "range":
        cell = explain_cell("range", reading.answer, expected_low=task.range_low, expected_high=task.range_high,
                            percentage=task.percentage, rubric=rubric)
    else:
        cell = explain_cell("not_available", reading.answer, expected_low=task.plausible_low,
                            expected_high=task.plausible_high, percentage=task.percentage, rubric=rubric)
    rank = top[reading.text_index].rank
    return AnswerVerdict(cell.score, f"{task.answer_type}: read {_describe(reading.answer)} at rank {rank}: "
                                     f"{cell.reason}", reading=reading)


def final_attempts(raw: pd.DataFrame) -> pd.DataFrame:
    """The last attempt of each (query, capability), with the number of attempts made."""
    if raw.empty:
        return raw.assign(attempts=pd.Series(dtype="int64"))
    counts = raw.groupby(["query_id", "capability"]).size().rename("attempts").reset_index()
    last = raw.sort_values("attempt").groupby(["query_id", "capability"], as_index=False).tail(1)
    return last.merge(counts, on=["query_id", "capability"])


def score_partition(snapshot_id: str, vendor: str, adapter: Adapter, manifest: Manifest, rows: list[GoldenRow],
                    split: dict[str, str], raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every golden row for one vendor. Returns (row_scores, response_results) frames."""
    spec = manifest.vendors[vendor]
    finals = final_attempts(raw[raw["role"] != "decoy"] if len(raw) else raw)
    by_key = {(r.query_id, r.capability): r for r in finals.itertuples(index=False)}
    # Spend of a row: every attempt the vendor billed, retries included (see fetch.archived_spend).
    sent = raw[raw["role"] != "decoy"] if len(raw) else raw
    billed_by_key = (archived_spend(adapter, spec.prices_usd, sent).groupby([sent["query_id"], sent["capability"]])
                     .sum().to_dict() if len(sent) else {})
    missing = [r.id for r in rows if capability_of(r) in adapter.capabilities and (r.id, capability_of(r)) not in by_key]
    if missing:
        raise ValueError(f"{len(missing)} golden rows of {snapshot_id}|{vendor} have no archived response "
                         f"(first: {missing[:3]}); materialize vendor_responses for this partition first")
    scores: list[dict[str, Any]] = []
    parsed: dict[str, list[Any]] = {}
    for row in rows:
        cap = capability_of(row)
        base = {"snapshot_id": snapshot_id, "vendor": vendor, "row_id": row.id, "split": split.get(row.id),
                "stratum": row.stratum, "cohort": row.cohort, "task_type": row.task_type, "n_results": 0,
                "first_hit_rank": None, "fidelity": None, "fidelity_label": None, "answer_score": None,
                "answer_rule": None, "correct": None, "billed_usd": 0.0, "latency_ms": None, "attempts": 0,
                "request_id": None, "error_detail": None, **{f"hit_at_{k}": None for k in HIT_KS}}
        if cap not in adapter.capabilities:
            scores.append({**base, "response_class": "unsupported"})
            continue
        rec = by_key[(row.id, cap)]
        headers = json.loads(rec.response_headers_json) if isinstance(rec.response_headers_json, str) else {}
        status = None if pd.isna(rec.http_status) else int(rec.http_status)
        classified = classify_response(adapter, cap, status, headers,
                                       rec.body if isinstance(rec.body, str) else None,
                                       rec.transport_error if isinstance(rec.transport_error, str) else None)
        answered = classified.response_class == "ok"
        results = list(classified.parsed.results) if classified.parsed and answered else []
        parsed[row.id] = results
        entry = {**base, "response_class": classified.response_class, "n_results": len(results),
                 "billed_usd": float(billed_by_key.get((row.id, cap), 0.0)),
                 "latency_ms": float(rec.latency_ms) if not pd.isna(rec.latency_ms) else None,
                 "attempts": int(rec.attempts), "request_id": classified.parsed.request_id if classified.parsed else None,
                 "error_detail": classified.detail}
        task = row.task
        if task.type == "extract":
            fid = extract_fidelity(task, results, manifest.fidelity_weights) if answered else NO_EXTRACTION
            entry["fidelity"], entry["fidelity_label"] = fid.score, fid.label
            entry["correct"] = fid.label == "correct"
        elif task.type == "answer":
            verdict = (score_answer(task, results, manifest.answer_k) if answered else
                       AnswerVerdict(0.0, f"no answer: the response was {classified.response_class}"))
            entry["answer_score"], entry["answer_rule"] = verdict.score, verdict.rule
            entry["correct"] = verdict.score == 1.0
        scores.append(entry)

    # Every result list of the partition at once: normalized URLs, and hit@k of the search rows.
    listed = [(row_id, position, r) for row_id, results in parsed.items()
              for position, r in enumerate(results, start=1)]
    result_lists = pd.DataFrame({"query_id": [q for q, _, _ in listed], "rank": [p for _, p, _ in listed],
                                 "url": [r.url for _, _, r in listed]})
    searched = [row for row in rows if row.task.type == "search" and row.id in parsed]
    golden = pd.DataFrame({"query_id": [row.id for row in searched for _ in row.task.golden_urls],
                           "url": [u for row in searched for u in row.task.golden_urls]})
    hits, forms = score_result_lists(result_lists, golden, HIT_KS)
    by_query = hits.set_index("query_id").to_dict("index")
    for entry in scores:
        if entry["task_type"] != "search" or entry["response_class"] == "unsupported":
            continue
        hit = by_query[entry["row_id"]]
        rank = None if pd.isna(hit["first_hit_rank"]) else int(hit["first_hit_rank"])
        entry["first_hit_rank"] = rank
        for k in HIT_KS:
            entry[f"hit_at_{k}"] = bool(hit[f"hit_at_{k}"])
        entry["correct"] = rank is not None and rank <= manifest.answer_k

    results_out = pd.DataFrame({
        "snapshot_id": snapshot_id, "vendor": vendor, "row_id": result_lists["query_id"],
        "rank": [r.rank for _, _, r in listed], "url": result_lists["url"],
        "url_normalized": forms["url_normalized"].to_numpy(), "title": [r.title for _, _, r in listed],
        "snippet": [(r.snippet or "")[:500] for _, _, r in listed], "published": [r.published for _, _, r in listed],
        "content_chars": [len(r.content or "") for _, _, r in listed]}, columns=RESULT_COLUMNS)
    frame = pd.DataFrame(scores, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
    return frame, results_out.astype({"rank": "int64", "content_chars": "int64"})
