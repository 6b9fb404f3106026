"""Per-query drill-down of the public split: what each vendor returned and how it was scored.

The verdicts come from `row_scores` and the result lists from `response_results`, exactly as
scored. What those tables do not keep — which extraction fields a page matched, which result
carried a precise answer, and which sentence the cell reader read a range or not-available
answer from — is re-read from the archived final response with the functions scoring uses
(`golden.verdicts.extract_fidelity`, `golden.verdicts.score_answer`); a test checks that the re-read fidelity
and answer score equal the scored ones.

Extract rows show, field by field, which golden items the first result's text holds: each item
is scored alone by `metrics.extraction_fidelity`, the function the row was scored with.

Only public rows are drilled down. A vendor may return, for a public query, a page that is a
holdout row's golden page; such a result is withheld (its rank kept, its URL, title and
snippet not), so the holdout never reaches a published file. Where the vendor's terms allow only
digests to be published (`Manifest.evidence_level`), a result shows its rank and whether it is a
golden URL or holds the answer, not its URL or text; the body's SHA-256 is shown for every vendor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.fetch.classify import classify_response
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.verdicts import extract_fidelity, score_answer
from bench_assets.manifest import Manifest
from bench_assets.metrics import extraction_fidelity, normalize_url

# the extract fields whose golden value is a list of items, each matched on its own
_ITEM_FIELDS = ("anchor_phrases", "table_cells", "numeric_facts", "noise")


def _none(x: Any) -> Any:
    """pandas' missing values (NA, NaN, NaT) as None, numpy scalars as Python scalars."""
    if x is None or x is pd.NA:
        return None
    try:
        if pd.isna(x):
            return None
    except (TypeError, ValueError):
        pass
    return x.item() if hasattr(x, "item") else x


class HoldoutGuard:
    """Decides whether a returned result would reveal a holdout row: its URL is a holdout golden
    URL (compared normalized, so `www.` or a trailing slash does not slip through), or any of its
    text contains a holdout id, query text or golden URL."""

    def __init__(self, holdout: Iterable[dict[str, Any]]):
        needles: set[str] = set()
        self.urls: set[str] = set()
        for row in holdout:
            needles.add(row["row_id"])
            if row.get("request_text"):
                needles.add(row["request_text"])
            for url in row.get("golden_urls", []):
                needles.add(url)
                self.urls.add(normalize_url(url))
        ordered = sorted((n for n in needles if n), key=len, reverse=True)
        self.pattern = re.compile("|".join(re.escape(n) for n in ordered)) if ordered else None

    def reveals(self, *texts: str | None, url: str | None = None) -> bool:
        if url and normalize_url(url) in self.urls:
            return True
        return self.pattern is not None and any(t and self.pattern.search(t) for t in texts)


def _task_summary(row: GoldenRow) -> dict[str, Any]:
    task = row.task.model_dump()
    task.pop("type", None)
    return task


def _golden_urls(row: GoldenRow) -> list[str]:
    return row.urls


def _final_raw(raw: pd.DataFrame) -> dict[tuple[str, str, str], Any]:
    """(vendor, row id, capability) → the last archived attempt."""
    if raw.empty:
        return {}
    last = raw.sort_values("attempt").groupby(["vendor", "query_id", "capability"], as_index=False).tail(1)
    return {(r.vendor, r.query_id, r.capability): r for r in last.itertuples(index=False)}


def _reparse(manifest: Manifest, vendor: str, rec: Any) -> list[Any]:
    """The results of an archived final attempt, parsed and classified as scoring does."""
    adapter = get_adapter(manifest.vendors[vendor].adapter)
    headers = json.loads(rec.response_headers_json) if isinstance(rec.response_headers_json, str) else {}
    status = None if pd.isna(rec.http_status) else int(rec.http_status)
    classified = classify_response(
        adapter,
        rec.capability,
        status,
        headers,
        rec.body if isinstance(rec.body, str) else None,
        rec.transport_error if isinstance(rec.transport_error, str) else None,
    )
    if classified.parsed is None or classified.response_class != "ok":
        return []
    return list(classified.parsed.results)


def field_items(task: Any, top: Any) -> dict[str, list[dict[str, Any]]]:
    """Each golden item of an extract row's fields and whether the first result's text holds it
    (for noise: whether it is absent), each scored alone by `metrics.extraction_fidelity`, so the
    page says exactly what the field's share counts."""
    text = (top.content or top.snippet or "") if top else ""
    golden = task.model_dump()
    out: dict[str, list[dict[str, Any]]] = {}
    if golden.get("title"):
        one = extraction_fidelity({"title": golden["title"]}, top.title if top else None, text)
        out["title"] = [{"item": golden["title"], "found": one.fields.get("title") == 1.0}]
    for name in _ITEM_FIELDS:
        items = [x for x in golden.get(name) or [] if str(x).strip()]
        listed = []
        for item in items:
            alone = {name: [item], "numeric_tolerance": golden.get("numeric_tolerance") or 0.0}
            one = extraction_fidelity(alone, top.title if top else None, text)
            listed.append({"item": item, "found": one.fields.get(name) == 1.0})
        if listed:
            out[name] = listed
    return out


def query_drilldowns(
    manifest: Manifest,
    rows: list[GoldenRow],
    split: dict[str, str],
    scores: pd.DataFrame,
    results: pd.DataFrame,
    raw: pd.DataFrame,
    guard: HoldoutGuard,
) -> list[dict[str, Any]]:
    """One record per public golden row: the row, and per vendor its class, verdict, scores, how
    it was scored, and the results it returned (holdout-revealing results withheld)."""
    public = [r for r in rows if split.get(r.id) == "public"]
    public_ids = {r.id for r in public}
    scores = scores[scores["row_id"].isin(public_ids)]
    results = results[results["row_id"].isin(public_ids)].sort_values(["vendor", "row_id", "rank"])
    by_row_vendor: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results.itertuples(index=False):
        by_row_vendor.setdefault((r.row_id, r.vendor), []).append(r._asdict())
    finals = _final_raw(raw[raw["query_id"].isin(public_ids)] if len(raw) else raw)
    score_map = {(s["row_id"], s["vendor"]): s for s in scores.to_dict("records")}
    vendors = sorted(manifest.vendors)
    levels = {v: manifest.evidence_level(v)[0] for v in vendors}
    out = []
    for row in public:
        golden_norm = {normalize_url(u) for u in _golden_urls(row)}
        entries = []
        for vendor in vendors:
            s = score_map.get((row.id, vendor))
            if s is None:
                continue
            entry = {
                k: _none(s.get(k))
                for k in (
                    "response_class",
                    "correct",
                    "n_results",
                    "first_hit_rank",
                    "hit_at_1",
                    "hit_at_3",
                    "hit_at_5",
                    "hit_at_10",
                    "fidelity",
                    "fidelity_label",
                    "answer_score",
                    "answer_rule",
                    "billed_usd",
                    "latency_ms",
                    "attempts",
                    "request_id",
                    "error_detail",
                )
            }
            entry["vendor"] = vendor
            entry["results"] = []
            entry["evidence_level"] = levels[vendor]
            cap = "extract" if row.task_type == "extract" else "search"
            rec = finals.get((vendor, row.id, cap))
            entry["body_sha256"] = _none(getattr(rec, "body_sha256", None)) if rec is not None else None
            parsed = _reparse(manifest, vendor, rec) if rec is not None and entry["response_class"] == "ok" else []
            if row.task.type == "extract":
                top = parsed[0] if parsed else None
                fid = extract_fidelity(row.task, parsed, manifest.fidelity_weights)
                items = field_items(row.task, top) if top else {}
                entry["fidelity_fields"] = (
                    [
                        {
                            "field": f,
                            "score": fid.fields[f],
                            "weight": fid.weights.get(f),
                            # what was matched is the vendor's text: shown only where its terms allow
                            "items": items.get(f, []) if levels[vendor] != "digests" else [],
                        }
                        for f in fid.fields
                    ]
                    if top
                    else []
                )
                entry["fidelity_rederived"] = fid.score if top else None
            answer_ranks: set[int] = set()
            read_rank = None
            entry["answer_reading"] = None
            if row.task.type == "answer" and entry["response_class"] == "ok":
                verdict = score_answer(row.task, parsed, manifest.answer_k)
                entry["answer_score_rederived"] = verdict.score
                answer_ranks = set(verdict.answer_ranks)
                if verdict.reading is not None:
                    read_rank = parsed[verdict.reading.text_index].rank
                    entry["answer_reading"] = _reading(verdict.reading, read_rank)
            entry["answer_ranks"] = sorted(answer_ranks)
            for res in by_row_vendor.get((row.id, vendor), []):
                if guard.reveals(res["url"], res["title"], res["snippet"], url=res["url"]):
                    entry["results"].append({"rank": int(res["rank"]), "withheld": True})
                    if read_rank == int(res["rank"]):  # the sentence came from a holdout page: not shown
                        entry["answer_reading"] = {**entry["answer_reading"], "sentence": None, "withheld": True}
                    continue
                entry["results"].append(
                    {
                        "rank": int(res["rank"]),
                        "url": res["url"],
                        "title": _none(res["title"]),
                        "snippet": _none(res["snippet"]),
                        "published": _none(res["published"]),
                        "content_chars": _none(res["content_chars"]),
                        "withheld": False,
                        "golden": res["url_normalized"] in golden_norm,
                        "contains_answer": int(res["rank"]) in answer_ranks,
                        "answer_read": int(res["rank"]) == read_rank,
                    }
                )
            reading = entry["answer_reading"]
            if reading and reading.get("sentence") and guard.reveals(reading["sentence"]):
                entry["answer_reading"] = {**reading, "sentence": None, "withheld": True}
            if levels[vendor] == "digests":  # the vendor's terms allow no more than digests
                entry["results"] = [_digest_only(r) for r in entry["results"]]
                if entry["answer_reading"]:
                    entry["answer_reading"] = {**entry["answer_reading"], "sentence": None}
            entries.append(entry)
        scored = [e for e in entries if e["response_class"] != "unsupported"]
        out.append(
            {
                "row_id": row.id,
                "stratum": row.stratum,
                "cohort": row.cohort,
                "task_type": row.task_type,
                "provenance": row.provenance,
                "request_text": row.request_text,
                "task": _task_summary(row),
                "golden_urls": _golden_urls(row),
                "verification": json.loads(row.verification.model_dump_json()),
                "vendors": entries,
                "n_scored": len(scored),
                "n_correct": sum(1 for e in scored if e["correct"]),
            }
        )
    return out


def _digest_only(result: dict[str, Any]) -> dict[str, Any]:
    """A result as a digests-level vendor's page shows it: rank, whether withheld, golden or holding the answer."""
    kept = ("rank", "withheld", "golden", "contains_answer", "answer_read")
    return {**{k: result.get(k) for k in kept}, "digest_only": not result.get("withheld")}


def _reading(reading: Any, rank: int) -> dict[str, Any]:
    """What the cell reader read, for the drill-down: kind, numbers, method, sentence and rank."""
    answer = reading.answer
    return {
        "rank": rank,
        "kind": answer.kind,
        "value": answer.value,
        "low": answer.low,
        "high": answer.high,
        "method": answer.method if answer.kind != "not_available" else None,
        "sentence": reading.sentence,
        "withheld": False,
    }


def vendor_row_verdicts(drilldowns: list[dict[str, Any]], vendor: str) -> list[dict[str, Any]]:
    """One vendor's verdict on every public row (for its page and its JSON file)."""
    out = []
    for q in drilldowns:
        for e in q["vendors"]:
            if e["vendor"] == vendor:
                out.append(
                    {
                        "row_id": q["row_id"],
                        "stratum": q["stratum"],
                        "task_type": q["task_type"],
                        "response_class": e["response_class"],
                        "correct": e["correct"],
                        "first_hit_rank": e["first_hit_rank"],
                        "fidelity": e["fidelity"],
                        "answer_score": e["answer_score"],
                        "billed_usd": e["billed_usd"],
                        "latency_ms": e["latency_ms"],
                    }
                )
    return out
