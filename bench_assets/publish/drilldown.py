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
A failed row's error detail read from the vendor's body is a body too: shown at `raw` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.fetch.classify import classify_response
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.verdicts import extract_fidelity, score_answer
from bench_assets.manifest import Manifest
from bench_assets.metrics import FidelityScore, extraction_fidelity, normalize_text, normalize_url
from bench_assets.publish.packed import CHUNK_ROWS, PackedEntries

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


class ShownResult(NamedTuple):
    """One result a vendor returned, as its row's page shows it: a withheld one (it names a
    private row) keeps only its rank; a digests-level vendor's keeps its rank and whether it is a
    golden URL or holds the answer (`digest_only`). A tuple, not a dict: a snapshot of 12,600 rows
    shows a million of them."""

    rank: int
    withheld: bool
    url: str | None = None
    title: str | None = None
    snippet: str | None = None
    published: str | None = None
    content_chars: int | None = None
    golden: bool | None = None
    contains_answer: bool | None = None
    answer_read: bool | None = None
    digest_only: bool | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return _as_tuple_of(self)


class FieldItem(NamedTuple):
    """One golden item of an extract row's field, and whether the first result's text holds it
    (for noise: whether it is absent)."""

    item: Any
    found: bool

    def __reduce__(self) -> tuple[Any, ...]:
        return _as_tuple_of(self)


def _as_tuple_of(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """How a named tuple of the drill-down is pickled (`publish.packed`): made again as the tuple
    of its class it is (`tuple.__new__`), not through the class's `__new__` with each field as an
    argument, which took three quarters of unpacking a chunk of entries."""
    return (tuple.__new__, (type(value), tuple(value)))


class Reveals(Protocol):
    """What decides whether a result may be shown (`HoldoutGuard`, or the publication's `split.leaks.LeakGuard`)."""

    def reveals(self, *texts: str | None, url: str | None = None) -> bool: ...


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


_SCORE_FIELDS = (
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
_REPEATED_TEXTS = ("response_class", "fidelity_label", "answer_rule", "error_detail")
_RESULT_FIELDS = ("row_id", "rank", "url", "url_normalized", "title", "snippet", "published", "content_chars")


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


def _counted(item: Any) -> bool:
    """Whether `metrics.extraction_fidelity` counts a golden item in its field's share (it drops
    missing and blank ones)."""
    return item is not None and not (isinstance(item, str) and not normalize_text(item))


def field_items(task: Any, top: Any, fidelity: FidelityScore | None = None) -> dict[str, list[FieldItem]]:
    """Each golden item of an extract row's fields and whether the first result's text holds it
    (for noise: whether it is absent), each scored alone by `metrics.extraction_fidelity`, so the
    page says exactly what the field's share counts.

    `fidelity`: the row's fidelity from the same result (`golden.verdicts.extract_fidelity`): only
    the fields it scored are listed, and a field's share is the share of its items found, so where
    it is 1 every item it counts was found and where it is 0 none was (only the items of a field
    matched in part are scored one by one)."""
    text = (top.content or top.snippet or "") if top else ""
    title = top.title if top else None
    golden = task.model_dump()
    shares = fidelity.fields if fidelity is not None else None
    out: dict[str, list[FieldItem]] = {}
    if golden.get("title") and (shares is None or "title" in shares):
        if shares is not None:
            found = shares["title"] == 1.0
        else:
            found = extraction_fidelity({"title": golden["title"]}, title, text).fields.get("title") == 1.0
        out["title"] = [FieldItem(golden["title"], found)]
    for name in _ITEM_FIELDS:
        if shares is not None and name not in shares:
            continue
        share = shares.get(name) if shares is not None else None
        items = [x for x in golden.get(name) or [] if str(x).strip()]
        listed = []
        for item in items:
            if share in (0.0, 1.0) and _counted(item):
                found = share == 1.0
            else:
                alone = {name: [item], "numeric_tolerance": golden.get("numeric_tolerance") or 0.0}
                found = extraction_fidelity(alone, title, text).fields.get(name) == 1.0
            listed.append(FieldItem(item, found))
        if listed:
            out[name] = listed
    return out


def _results_by_row(results: pd.DataFrame) -> dict[str, list[Any]]:
    """A vendor's parsed results per row id, in rank order (records with `rank`, `url`, `url_normalized`,
    `title`, `snippet`, `published`, `content_chars`)."""
    by_row: dict[str, list[Any]] = {}
    if results.empty:
        return by_row
    ordered = results.sort_values(["row_id", "rank"])[list(_RESULT_FIELDS)]
    for r in ordered.itertuples(index=False, name="Result"):
        by_row.setdefault(r.row_id, []).append(r)
    return by_row


def vendor_entries(
    manifest: Manifest,
    vendor: str,
    public_rows: list[GoldenRow],
    scores: pd.DataFrame,
    results: pd.DataFrame,
    raw: pd.DataFrame,
    guard: Reveals,
    evidence: Mapping[str, Any] | None = None,
    shared: dict[Any, Any] | None = None,
    verdicts: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """One vendor's drill-down entry for each public row it was scored on, by row id: its class,
    verdict, scores, how it was scored, and the results it returned (holdout-revealing results
    withheld). `scores` and `results` are the vendor's row scores and parsed results, `raw` its
    archived attempts (any roles: the public rows' final ones are read), `evidence` what scoring
    read from each public row's final response (`score.partition.read_evidence`, as the evidence
    bundle read it), so it is not parsed again; a row without it is read again from `raw`.
    `shared` keeps one copy of each text shown (the same page comes back for many rows and
    from many vendors). `verdicts`: each answered row's fidelity or answer verdict as scoring
    found it from the same `evidence` (`score_rows`), so it is not worked out twice."""
    shared = {} if shared is None else shared
    public_ids = {r.id for r in public_rows}
    level = manifest.evidence_level(vendor)[0]
    scores = scores[scores["row_id"].isin(public_ids)] if len(scores) else scores
    by_row = _results_by_row(results[results["row_id"].isin(public_ids)] if len(results) else results)
    public_raw = raw[(raw["role"] == "public") & raw["query_id"].isin(public_ids)] if len(raw) else raw
    finals = _final_raw(public_raw)
    score_map = {s["row_id"]: s for s in scores.to_dict("records")}
    out: dict[str, dict[str, Any]] = {}
    for row in public_rows:
        s = score_map.get(row.id)
        if s is None:
            continue
        golden_norm = {normalize_url(u) for u in _golden_urls(row)}
        entry = {k: _none(s.get(k)) for k in _SCORE_FIELDS}
        for k in _REPEATED_TEXTS:  # the same few texts on thousands of rows: one copy each
            entry[k] = _kept(shared, entry[k])
        entry["vendor"] = vendor
        entry["results"] = []
        entry["evidence_level"] = level
        cap = "extract" if row.task_type == "extract" else "search"
        rec = finals.get((vendor, row.id, cap))
        entry["body_sha256"] = _none(getattr(rec, "body_sha256", None)) if rec is not None else None
        entry["error_detail"] = _published_detail(shared, entry, rec, level)
        parsed: list[Any] = []
        scored = None  # scoring's verdict from the same results, when it was given
        if rec is not None and entry["response_class"] == "ok":
            got = evidence.get(row.id) if evidence is not None else None
            parsed = list(got.results) if got is not None else _reparse(manifest, vendor, rec)
            if got is not None and got.response_class == "ok" and verdicts is not None:
                scored = verdicts.get(row.id)
        if row.task.type == "extract":
            top = parsed[0] if parsed else None
            fid = scored if scored is not None else extract_fidelity(row.task, parsed, manifest.fidelity_weights)
            # what was matched is the vendor's text: shown only where its terms allow
            items = field_items(row.task, top, fid) if top and fid.fields and level != "digests" else {}
            entry["fidelity_fields"] = (
                [
                    {"field": f, "score": fid.fields[f], "weight": fid.weights.get(f), "items": items.get(f, [])}
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
            verdict = scored if scored is not None else score_answer(row.task, parsed, manifest.answer_k)
            entry["answer_score_rederived"] = verdict.score
            answer_ranks = set(verdict.answer_ranks)
            if verdict.reading is not None:
                read_rank = parsed[verdict.reading.text_index].rank
                entry["answer_reading"] = _reading(verdict.reading, read_rank)
        entry["answer_ranks"] = sorted(answer_ranks)
        for res in by_row.get(row.id, ()):
            rank = int(res.rank)
            if guard.reveals(res.url, res.title, res.snippet, url=res.url):
                entry["results"].append(ShownResult(rank, True))
                if read_rank == rank:  # the sentence came from a holdout page: not shown
                    entry["answer_reading"] = {**entry["answer_reading"], "sentence": None, "withheld": True}
                continue
            entry["results"].append(
                ShownResult(
                    rank,
                    False,
                    url=_kept(shared, res.url),
                    title=_kept(shared, _none(res.title)),
                    snippet=_kept(shared, _none(res.snippet)),
                    published=_kept(shared, _none(res.published)),
                    content_chars=_none(res.content_chars),
                    golden=res.url_normalized in golden_norm,
                    contains_answer=rank in answer_ranks,
                    answer_read=rank == read_rank,
                )
            )
        reading = entry["answer_reading"]
        if reading and reading.get("sentence") and guard.reveals(reading["sentence"]):
            entry["answer_reading"] = {**reading, "sentence": None, "withheld": True}
        if level == "digests":  # the vendor's terms allow no more than digests
            entry["results"] = [_digest_only(r) for r in entry["results"]]
            if entry["answer_reading"]:
                entry["answer_reading"] = {**entry["answer_reading"], "sentence": None}
        out[row.id] = entry
    return out


def _published_detail(shared: dict[Any, Any], entry: dict[str, Any], rec: Any, level: str) -> Any:
    """A row's error detail as published: one read from the vendor's body (its error message, the
    start of a body the adapter could not read) is a body, shown at `raw` only; one bench wrote (a
    transport error, the challenge page it found) is shown at every level."""
    detail = entry["error_detail"]
    from_body = rec is not None and isinstance(getattr(rec, "body", None), str) and entry["response_class"] != "blocked"
    if level == "raw" or not detail or not from_body:
        return detail
    return _kept(shared, f"the vendor's error body is not published: its terms allow {level}")


def _kept(shared: dict[Any, Any], value: Any) -> Any:
    """One copy of an equal value (a text shown on many pages), the first one seen."""
    return value if value is None else shared.setdefault(value, value)


def drilldown_records(
    manifest: Manifest,
    public_rows: list[GoldenRow],
    entries: Mapping[str, Mapping[str, dict[str, Any]] | PackedEntries],
    first: int = 0,
) -> Iterator[dict[str, Any]]:
    """One record per public golden row, in order: the row, and per vendor (in name order) its
    entry (`vendor_entries`, by vendor: a mapping by row id, or packed), unpacking a chunk of
    rows at a time. `first`: where `public_rows` start among all the public rows (a multiple of
    `packed.CHUNK_ROWS`), when they are some of them."""
    vendors = [v for v in sorted(manifest.vendors) if v in entries]
    for start in range(0, len(public_rows), CHUNK_ROWS):
        number = (first + start) // CHUNK_ROWS
        chunk = {v: _entries_chunk(entries[v], number) for v in vendors}
        for row in public_rows[start : start + CHUNK_ROWS]:
            found = [chunk[v][row.id] for v in vendors if row.id in chunk[v]]
            scored = [e for e in found if e["response_class"] != "unsupported"]
            yield {
                "row_id": row.id,
                "stratum": row.stratum,
                "cohort": row.cohort,
                "task_type": row.task_type,
                "provenance": row.provenance,
                "request_text": row.request_text,
                "task": _task_summary(row),
                "golden_urls": _golden_urls(row),
                "verification": json.loads(row.verification.model_dump_json()),
                "vendors": found,
                "n_scored": len(scored),
                "n_correct": sum(1 for e in scored if e["correct"]),
            }


def _entries_chunk(entries: Mapping[str, dict[str, Any]] | PackedEntries, number: int) -> Mapping[str, dict[str, Any]]:
    if isinstance(entries, PackedEntries):
        assert entries.chunk_rows == CHUNK_ROWS  # packed in the chunks they are read in
        return entries.chunk(number)
    return entries


def query_drilldowns(
    manifest: Manifest,
    rows: list[GoldenRow],
    split: dict[str, str],
    scores: pd.DataFrame,
    results: pd.DataFrame,
    raw: pd.DataFrame,
    guard: Reveals,
) -> list[dict[str, Any]]:
    """One record per public golden row: the row, and per vendor its class, verdict, scores, how
    it was scored, and the results it returned (holdout-revealing results withheld). The frames
    hold every vendor's rows (`raw`: archived attempts, the public ones are read); publication
    builds the same records a vendor at a time (`vendor_entries`, `drilldown_records`)."""
    public = [r for r in rows if split.get(r.id) == "public"]
    shared: dict[Any, Any] = {}
    entries = {}
    for vendor in sorted(manifest.vendors):
        entries[vendor] = vendor_entries(
            manifest,
            vendor,
            public,
            scores[scores["vendor"] == vendor] if len(scores) else scores,
            results[results["vendor"] == vendor] if len(results) else results,
            raw[raw["vendor"] == vendor] if len(raw) else raw,
            guard,
            shared=shared,
        )
    return list(drilldown_records(manifest, public, entries))


def _digest_only(result: ShownResult) -> ShownResult:
    """A result as a digests-level vendor's page shows it: rank, whether withheld, golden or holding the answer."""
    return ShownResult(
        result.rank,
        result.withheld,
        golden=result.golden,
        contains_answer=result.contains_answer,
        answer_read=result.answer_read,
        digest_only=not result.withheld,
    )


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


def row_verdict(q: Mapping[str, Any], e: Mapping[str, Any]) -> dict[str, Any]:
    """A vendor's verdict on one public row (`e`, its entry in the row's record `q`), as its page and JSON list it."""
    return {
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


def vendor_row_verdicts(drilldowns: Iterable[dict[str, Any]], vendor: str) -> list[dict[str, Any]]:
    """One vendor's verdict on every public row (for its page and its JSON file)."""
    return row_verdicts(drilldowns, [vendor])[vendor]


def row_verdicts(drilldowns: Iterable[dict[str, Any]], vendors: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Each of `vendors`' verdict on every public row, read in one pass over the records."""
    out: dict[str, list[dict[str, Any]]] = {v: [] for v in vendors}
    for q in drilldowns:
        for e in q["vendors"]:
            if e["vendor"] in out:
                out[e["vendor"]].append(row_verdict(q, e))
    return out
