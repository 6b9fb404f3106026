"""Per-query drill-down of the public split: what each vendor returned and how it was scored.

Each vendor's entries are built from its archive as scoring reads it and from what scoring
derived from that reading (`score.partition.read_archive`, `score_rows`): the verdict, the result
lists, which extraction fields a page matched, which result carried a precise answer and which
sentence the cell reader read a range or not-available answer from, all from one derivation, the
one `vendor_scores` stored and `bench rescore` repeats.

Extract rows show, field by field, which golden items the first result's text holds: each item
is scored alone by `metrics.extraction_fidelity`, the function the row was scored with.

A row's page lists the results its score reads (`listed_depth`: an answer row's top `answer_k`,
an extract row's first, a search row's all) and, at `raw`, links to the final response's body in
the evidence bundle rather than inline it; the bundle holds every result and body.

Only public rows are drilled down. A vendor may return, for a public query, a page that is a
holdout row's golden page; such a result is withheld (its rank kept, its URL, title and
snippet not), so the holdout never reaches a published file. Where the vendor's terms allow only
digests to be published (`Manifest.evidence_level`), a result shows its rank and whether it is a
golden URL or holds the answer, not its URL or text; the body's SHA-256 is shown for every vendor.
A failed row's error detail read from the vendor's body is a body too: shown at `raw` only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, overload

import pandas as pd

from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.metrics import FidelityScore, extraction_fidelity, normalize_text, normalize_url
from bench_assets.publish.evidence import FinalAttempt
from bench_assets.publish.files import PUBLIC_ROW_SCORE_COLUMNS
from bench_assets.runtime.packed import CHUNK_ROWS, PackedEntries
from bench_assets.score.partition import VERDICT_COLUMNS, ArchiveReading, ScoredRows
from bench_assets.storage.values import plain

# the extract fields whose golden value is a list of items, each matched on its own
_ITEM_FIELDS = ("anchor_phrases", "table_cells", "numeric_facts", "noise")


class ShownResult(NamedTuple):
    """One result a vendor returned, as its row's page shows it: a withheld one (it names a
    private row) keeps only its rank; a digests-level vendor's keeps its rank and whether it is a
    golden URL or holds the answer (`digest_only`). A tuple, not a dict: a publication holds one
    for every result of every vendor on every public row."""

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
    """How a named tuple of the drill-down is pickled (`runtime.packed`): made again as the tuple
    of its class it is (`tuple.__new__`), not through the class's `__new__` with each field as an
    argument, which took three quarters of unpacking a chunk of entries."""
    return (tuple.__new__, (type(value), tuple(value)))


class Reveals(Protocol):
    """What decides whether a result may be shown (the publication's `split.leaks.LeakGuard`)."""

    def reveals(self, *texts: str | None, url: str | None = None) -> bool: ...

    def __bool__(self) -> bool: ...


def _task_summary(row: GoldenRow) -> dict[str, Any]:
    task = row.task.model_dump()
    task.pop("type", None)
    return task


def _golden_urls(row: GoldenRow) -> list[str]:
    return row.urls


# the columns of `public_row_scores.csv` after the row's id, stratum and task type
_FIGURES = tuple(c for c in PUBLIC_ROW_SCORE_COLUMNS if c not in ("row_id", "stratum", "task_type"))
_SCORE_FIELDS = (*VERDICT_COLUMNS, "n_results", "request_id", "error_detail")
_REPEATED_TEXTS = ("response_class", "fidelity_label", "answer_rule", "error_detail")
_RESULT_FIELDS = ("row_id", "rank", "url", "url_normalized", "title", "snippet", "published", "content_chars")


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


def listed_depth(task_type: str, manifest: Manifest) -> int | None:
    """How many of a vendor's results a row's page lists: the ones its score reads. An answer row
    is scored on the top `answer_k`, an extract row on the first; a search row on all (the first
    golden URL's rank). None: all. The evidence bundle lists every result."""
    if task_type == "answer":
        return manifest.answer_k
    if task_type == "extract":
        return 1
    return None


def vendor_entries(
    manifest: Manifest,
    vendor: str,
    public_rows: list[GoldenRow],
    scored: ScoredRows,
    archive: ArchiveReading,
    guard: Reveals,
    finals: Mapping[tuple[str, str], FinalAttempt],
    shared: dict[Any, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """One vendor's drill-down entry for each public row it was scored on, by row id: its class,
    verdict, scores, how it was scored, and the results it returned (holdout-revealing results
    withheld). `scored` is what scoring derived from the vendor's archive (`score_rows`: its row
    scores, results and verdicts), `archive` the archive as scoring read it (`read_archive`: the
    results each row's final response returned), `finals` each row's final attempt as the evidence
    bundle published it (`evidence.final_attempts`: its request, and its body or why not). `shared` keeps one copy of
    each text shown (the same page comes back for many rows and from many vendors)."""
    shared = {} if shared is None else shared
    public_ids = {r.id for r in public_rows}
    level = manifest.evidence_level(vendor)[0]
    scores, results = scored.scores, scored.results
    scores = scores[scores["row_id"].isin(public_ids)] if len(scores) else scores
    by_row = _results_by_row(results[results["row_id"].isin(public_ids)] if len(results) else results)
    # only the columns an entry reads: the records of every column took twice as long
    read = ["row_id", *(c for c in _SCORE_FIELDS if c in scores.columns and c != "row_id")]
    score_map = {s["row_id"]: s for s in scores[read].to_dict("records")}
    out: dict[str, dict[str, Any]] = {}
    for row in public_rows:
        s = score_map.get(row.id)
        if s is None:
            continue
        golden_norm = {normalize_url(u) for u in _golden_urls(row)}
        entry = {k: plain(s.get(k)) for k in _SCORE_FIELDS}
        for k in _REPEATED_TEXTS:  # the same few texts on thousands of rows: one copy each
            entry[k] = _kept(shared, entry[k])
        entry["vendor"] = vendor
        entry["results"] = []
        entry["evidence_level"] = level
        cap = "extract" if row.task_type == "extract" else "search"
        final = finals.get((row.id, cap))
        entry["body_sha256"] = final.body_sha256 if final is not None else None
        entry["request_json"] = final.request_json if final is not None else None
        # a row's page links to the body in the bundle rather than inline it: thousands of row
        # pages, each with a body per vendor, would carry the bundle's bodies a second time
        published = final is not None and final.body_chars is not None and final.body_withheld is None
        entry["body_chars"] = final.body_chars if published and final is not None else None
        entry["body_withheld"] = final.body_withheld if final is not None else None
        has_body = final is not None and final.body_chars is not None
        entry["error_detail"] = _published_detail(shared, entry, has_body, level)
        got = archive.evidence.get(row.id)
        answered = got is not None and entry["response_class"] == "ok"
        parsed = list(got.results) if answered and got is not None else []
        verdict = scored.verdicts.get(row.id) if answered else None  # how scoring found it
        if row.task.type == "extract":
            top = parsed[0] if parsed and verdict is not None else None
            # what was matched is the vendor's text: shown only where its terms allow
            items = (
                field_items(row.task, top, verdict) if top and verdict and verdict.fields and level != "digests" else {}
            )
            entry["fidelity_fields"] = (
                [
                    {
                        "field": f,
                        "score": verdict.fields[f],
                        "weight": verdict.weights.get(f),
                        "items": items.get(f, []),
                    }
                    for f in verdict.fields
                ]
                if top and verdict
                else []
            )
        answer_ranks: set[int] = set()
        read_rank = None
        entry["answer_reading"] = None
        if row.task.type == "answer" and verdict is not None:
            answer_ranks = set(verdict.answer_ranks)
            if verdict.reading is not None:
                read_rank = parsed[verdict.reading.text_index].rank
                entry["answer_reading"] = _reading(verdict.reading, read_rank)
        entry["answer_ranks"] = sorted(answer_ranks)
        depth = listed_depth(row.task_type, manifest)
        for res in by_row.get(row.id, ()):
            rank = int(res.rank)
            if depth is not None and rank > depth:
                break  # in rank order: the rest are not read by the score
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
                    title=_kept(shared, plain(res.title)),
                    snippet=_kept(shared, plain(res.snippet)),
                    published=_kept(shared, plain(res.published)),
                    content_chars=plain(res.content_chars),
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


def _published_detail(shared: dict[Any, Any], entry: dict[str, Any], has_body: bool, level: str) -> Any:
    """A row's error detail as published: one read from the vendor's body (its error message, the
    start of a body the adapter could not read) is a body, shown at `raw` only; one bench wrote (a
    transport error, the challenge page it found) is shown at every level."""
    detail = entry["error_detail"]
    from_body = has_body and entry["response_class"] != "blocked"
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


# A vendor's verdict on a public row as its page and its JSON file list it.
VERDICT_FIELDS = (
    "row_id",
    "stratum",
    "task_type",
    "response_class",
    "correct",
    "first_hit_rank",
    "fidelity",
    "answer_score",
    "miss_reason",
    "billed_usd",
    "latency_ms",
)


def row_figures(row: GoldenRow, e: Mapping[str, Any]) -> dict[str, Any]:
    """A vendor's figures on one public row, from its entry (`vendor_entries`): the columns of
    `public_row_scores.csv` (its verdict, `row_verdict`, is some of them)."""
    return {"row_id": row.id, "stratum": row.stratum, "task_type": row.task_type, **{c: e.get(c) for c in _FIGURES}}


def row_verdict(figures: Mapping[str, Any]) -> dict[str, Any]:
    """A vendor's verdict on one public row (`VERDICT_FIELDS`), from its figures (`row_figures`) or
    from the row's record merged with its entry."""
    return {k: figures[k] for k in VERDICT_FIELDS}


def vendor_row_verdicts(drilldowns: Iterable[dict[str, Any]], vendor: str) -> list[dict[str, Any]]:
    """One vendor's verdict on every public row, from the public rows' drill-down records."""
    return [row_verdict({**e, **q}) for q in drilldowns for e in q["vendors"] if e["vendor"] == vendor]


class DrilldownRecords(Sequence[dict[str, Any]]):
    """One record per public row (`drilldown.drilldown_records`), read like a list."""

    def __init__(self, manifest: Manifest, public_rows: list[GoldenRow], entries: Mapping[str, PackedEntries]):
        self.manifest = manifest
        self.public_rows = public_rows
        self.entries = dict(entries)

    def __len__(self) -> int:
        return len(self.public_rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return drilldown_records(self.manifest, self.public_rows, self.entries)

    def span(self, start: int, stop: int) -> Iterator[dict[str, Any]]:
        """The records of rows `start` to `stop` - 1, assembled a chunk at a time (`start` a
        multiple of `packed.CHUNK_ROWS`, as the chunks are cut)."""
        if start % CHUNK_ROWS:
            raise ValueError(f"a span starts where a chunk does (a multiple of {CHUNK_ROWS}), not at {start}")
        return drilldown_records(self.manifest, self.public_rows[start:stop], self.entries, start)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        start = position - position % CHUNK_ROWS  # the chunk it is packed in, read alone
        records = drilldown_records(self.manifest, self.public_rows[start : start + CHUNK_ROWS], self.entries, start)
        return list(records)[position - start]
