"""Scoring one vendor partition from its archived raw responses. Deterministic, no LLM judge.

Each golden row gets one class (see `classify`) and its scores: hit@k and the first hit's rank
for search rows, extraction fidelity for extract rows, answer-in-results for answer rows, and
`correct`. Everything is re-derivable from `raw_responses` alone, which is what `bench rescore`
does.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pandas as pd

from bench_assets.adapters.base import Adapter
from bench_assets.classify import classify_response
from bench_assets.fetch import archived_spend
from bench_assets.golden import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.metrics import answer_in_text, extraction_fidelity, first_hit_rank, normalize_url

SCORE_COLUMNS = ["snapshot_id", "vendor", "row_id", "split", "stratum", "cohort", "task_type", "response_class",
                 "n_results", "first_hit_rank", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "fidelity",
                 "fidelity_label", "correct", "billed_usd", "latency_ms", "attempts", "request_id", "error_detail"]
RESULT_COLUMNS = ["snapshot_id", "vendor", "row_id", "rank", "url", "url_normalized", "title", "snippet",
                  "published", "content_chars"]
HIT_KS = (1, 3, 5, 10)
# Nullable dtypes: a row the vendor cannot serve has no hit, fidelity or verdict (NULL, not False).
SCORE_DTYPES = {"n_results": "int64", "first_hit_rank": "Int64", "hit_at_1": "boolean", "hit_at_3": "boolean",
                "hit_at_5": "boolean", "hit_at_10": "boolean", "fidelity": "Float64", "correct": "boolean",
                "billed_usd": "float64", "latency_ms": "Float64", "attempts": "int64"}


def capability_of(row: GoldenRow) -> str:
    return "extract" if row.task_type == "extract" else "search"


@lru_cache(maxsize=200_000)
def _normalized(url: str) -> str:
    return normalize_url(url)


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
    results_out: list[dict[str, Any]] = []
    for row in rows:
        cap = capability_of(row)
        base = {"snapshot_id": snapshot_id, "vendor": vendor, "row_id": row.id, "split": split.get(row.id),
                "stratum": row.stratum, "cohort": row.cohort, "task_type": row.task_type, "n_results": 0,
                "first_hit_rank": None, "fidelity": None, "fidelity_label": None, "correct": None,
                "billed_usd": 0.0, "latency_ms": None, "attempts": 0, "request_id": None, "error_detail": None,
                **{f"hit_at_{k}": None for k in HIT_KS}}
        if cap not in adapter.capabilities:
            scores.append({**base, "response_class": "unsupported"})
            continue
        rec = by_key[(row.id, cap)]
        headers = json.loads(rec.response_headers_json) if isinstance(rec.response_headers_json, str) else {}
        status = None if pd.isna(rec.http_status) else int(rec.http_status)
        classified = classify_response(adapter, cap, status, headers,
                                       rec.body if isinstance(rec.body, str) else None,
                                       rec.transport_error if isinstance(rec.transport_error, str) else None)
        parsed = classified.parsed
        results = list(parsed.results) if parsed and classified.response_class == "ok" else []
        billed = float(billed_by_key.get((row.id, cap), 0.0))
        entry = {**base, "response_class": classified.response_class, "n_results": len(results),
                 "billed_usd": billed, "latency_ms": float(rec.latency_ms) if not pd.isna(rec.latency_ms) else None,
                 "attempts": int(rec.attempts), "request_id": parsed.request_id if parsed else None,
                 "error_detail": classified.detail}
        urls = [r.url for r in results]
        task = row.task
        if task.type == "search":
            rank = first_hit_rank(task.golden_urls, urls)
            entry["first_hit_rank"] = rank
            for k in HIT_KS:
                entry[f"hit_at_{k}"] = rank is not None and rank <= k
            entry["correct"] = rank is not None and rank <= manifest.answer_k
        elif task.type == "extract":
            top = results[0] if results else None
            text = (top.content or top.snippet or "") if top else ""
            fid = extraction_fidelity(task.model_dump(), top.title if top else None, text,
                                      weights=manifest.fidelity_weights)
            entry["fidelity"], entry["fidelity_label"] = fid.score, fid.label
            entry["correct"] = fid.label == "correct"
        else:
            entry["correct"] = any(
                answer_in_text(task.exact_answer, task.number, task.tolerance,
                               "\n".join(filter(None, [r.title, r.snippet, r.content])))
                for r in results[: manifest.answer_k])
        scores.append(entry)
        for r in results:
            results_out.append({"snapshot_id": snapshot_id, "vendor": vendor, "row_id": row.id, "rank": r.rank,
                                "url": r.url, "url_normalized": _normalized(r.url), "title": r.title,
                                "snippet": (r.snippet or "")[:500], "published": r.published,
                                "content_chars": len(r.content or "")})
    frame = pd.DataFrame(scores, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)
    return frame, pd.DataFrame(results_out, columns=RESULT_COLUMNS).astype({"rank": "int64", "content_chars": "int64"})
