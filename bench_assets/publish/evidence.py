"""The evidence bundle: what each vendor returned for every public row, published beside the verdicts.

For every public golden row and every vendor that serves it, the bundle holds every HTTP attempt
(`evidence/attempts/<vendor>.parquet`: the redacted request, status, headers, latency, the class
scoring gave the final one, the units it billed and their price, the SHA-256 of the body and, where
allowed, the body itself) and every result the final response returned
(`evidence/results/<vendor>.parquet`: rank, URL, title, snippet, the text scoring read, and
digests of the normalized URL and of the text). `evidence/bundle.json` holds what scoring needs
besides (answer_k, the fidelity weights, each vendor's adapter and prices), each vendor's evidence
level and why, and the SHA-256 of every Parquet file. `evidence.schema.json` documents every column;
the Data page shows the same.

How much of a vendor's responses is published is the vendor's call (`Manifest.evidence_level`):
`raw` publishes the bodies, `results` the parsed results without the bodies, `digests` only the
digests (a reader holding a body or a result can check it against them, and hit@k can still be
re-derived from the golden URLs' digests). Whatever the level, nothing private is published: a
body that names a holdout row, decoy or dead holdout row (its id, query or golden URL, in any
spelling `split.leaks` reads) is withheld with its digest kept, and so is every result that names
one (its URL's digest kept only when the URL itself is not private). The publication's leak scan
reads the Parquet files too.

Every number in it is the scoring code's own: the class and results come from
`score.partition.read_archive`, each attempt's billed units and price from `fetch.spend`, over
the same attempts scoring priced (a billed body that could not be read is priced from the
partition's other responses, holdout ones included, so that price is published as scored).
`bench reproduce` re-derives every public verdict and figure from this bundle alone.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bench_assets.adapters import get_adapter
from bench_assets.errors import NotReadyError
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.verdicts import result_text
from bench_assets.manifest import EVIDENCE_LEVELS, Manifest
from bench_assets.metrics import normalize_url
from bench_assets.score.partition import ArchiveReading, RowEvidence, read_archive
from bench_assets.split.leaks import LeakGuard, readings
from bench_assets.storage.values import plain

BUNDLE_DIR = "evidence"
INDEX_FILE = f"{BUNDLE_DIR}/bundle.json"
SCHEMA_NAME = "evidence.schema.json"
FORMAT_VERSION = 1
ALL_LEVELS = ("raw", "results", "digests")
TEXT_LEVELS = ("raw", "results")
WITHHELD_PRIVATE = "names a holdout row, decoy or dead holdout row (its id, query or golden URL)"


@dataclass(frozen=True)
class Column:
    """One column of a bundle table: its Arrow type, what it holds, and the levels that fill it."""

    name: str
    type: pa.DataType
    description: str
    levels: tuple[str, ...] = ALL_LEVELS


ATTEMPT_COLUMNS = (
    Column("vendor", pa.string(), "the vendor"),
    Column("row_id", pa.string(), "the public golden row (see public_split.jsonl)"),
    Column("capability", pa.string(), "the endpoint called: search or extract"),
    Column("attempt", pa.int32(), "1 for the first attempt, then each retry"),
    Column("final", pa.bool_(), "the attempt scoring read (the last one)"),
    Column(
        "response_class",
        pa.string(),
        "the final attempt's class as scored (ok, empty, blocked, auth, quota, rate_limited, server, timeout, "
        "malformed, rejected); null on earlier attempts",
    ),
    Column("http_status", pa.int32(), "the HTTP status; null when no response came"),
    Column("transport_error", pa.string(), "why no response came (timeout, connection error), else null"),
    Column("latency_ms", pa.float64(), "milliseconds from sending to the whole response"),
    Column("request_json", pa.string(), "the request as sent, every secret replaced by <redacted>"),
    Column("response_headers_json", pa.string(), "the response headers, secrets redacted"),
    Column("body_sha256", pa.string(), "SHA-256 of the body as archived (UTF-8): checks a body shown later"),
    Column("body_chars", pa.int64(), "the body's length in characters"),
    Column("body", pa.string(), "the body as archived; null where `body_withheld` says why", ("raw",)),
    Column("body_withheld", pa.string(), "why the body is not here (the vendor's level, or a private row named)"),
    Column(
        "billed_units_json",
        pa.string(),
        "what the vendor billed for this attempt, in its units, as its adapter reads the response ({} or "
        "null: nothing billed or not readable)",
    ),
    Column(
        "billed_usd",
        pa.float64(),
        "what scoring charged this attempt: the units at the pinned prices (bundle.json); a billed body "
        "that could not be read is priced from the vendor's other responses",
    ),
    Column("billed_usd_estimated", pa.bool_(), "true where billed_usd was priced from other responses"),
    Column("adapter_version", pa.string(), "the adapter version that sent the request"),
)

RESULT_COLUMNS = (
    Column("vendor", pa.string(), "the vendor"),
    Column("row_id", pa.string(), "the public golden row"),
    Column("rank", pa.int32(), "1-based, in the vendor's own order, as the adapter parsed the final response"),
    Column("withheld", pa.bool_(), f"true when the result {WITHHELD_PRIVATE}: only its rank is kept"),
    Column("url", pa.string(), "the result's URL", TEXT_LEVELS),
    Column(
        "url_sha256",
        pa.string(),
        "SHA-256 of the URL's normalized form (metrics.normalize_url): hit@k can be re-derived from the golden "
        "URLs' digests; null when the URL itself is private",
    ),
    Column("golden", pa.bool_(), "the normalized URL is one of the row's golden URLs (what hit@k counts)"),
    Column("title", pa.string(), "the result's title", TEXT_LEVELS),
    Column("snippet", pa.string(), "the result's snippet or highlights", TEXT_LEVELS),
    Column(
        "content",
        pa.string(),
        "the page text returned with the result, where scoring reads it (an extract row's first result; an "
        "answer row's first answer_k results); else null",
        TEXT_LEVELS,
    ),
    Column("content_chars", pa.int64(), "the length of the page text returned with the result"),
    Column("published", pa.string(), "the publication date the vendor gave, as given", TEXT_LEVELS),
    Column(
        "text_sha256",
        pa.string(),
        "SHA-256 of the text answer scoring reads (title, snippet and content joined by newlines)",
    ),
)

TABLES: dict[str, tuple[str, tuple[Column, ...]]] = {
    "attempts": ("one row per HTTP attempt to a vendor for a public golden row (retries included)", ATTEMPT_COLUMNS),
    "results": ("one row per result a vendor's final response returned for a public golden row", RESULT_COLUMNS),
}


def table_path(table: str, vendor: str) -> str:
    return f"{BUNDLE_DIR}/{table}/{vendor}.parquet"


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type) for c in columns])


def evidence_schema() -> dict[str, Any]:
    """The bundle's schema as published (`evidence.schema.json`): its files, every table's columns
    with type, meaning and the levels that fill them, and what each level publishes."""
    return {
        "title": "bench evidence bundle",
        "format_version": FORMAT_VERSION,
        "description": "What each vendor returned for every public golden row: every HTTP attempt and every "
        "result of the final response, at the level the vendor's terms allow (raw bodies, parsed results, or "
        "digests only); whatever names a holdout row, decoy or dead holdout row is withheld with its digest kept.",
        "index": {
            "path": INDEX_FILE,
            "holds": "snapshot_id, mode, answer_k, k_values, fidelity_weights, results_per_query; per vendor its "
            "adapter, adapter version, plan, prices_usd, evidence level and why; the SHA-256 and rows of every "
            "Parquet file",
        },
        "levels": EVIDENCE_LEVELS,
        "tables": {
            name: {
                "path": table_path(name, "<vendor>"),
                "grain": grain,
                "columns": [
                    {"name": c.name, "type": str(c.type), "description": c.description, "levels": list(c.levels)}
                    for c in columns
                ],
            }
            for name, (grain, columns) in TABLES.items()
        },
        "read_with": "duckdb -c \"SELECT * FROM 'evidence/results/*.parquet'\"; pyarrow.parquet.read_table",
    }


def parquet_bytes(table: pa.Table) -> bytes:
    """The Parquet file of a table: zstd-compressed, no pandas metadata, so the same rows give the same bytes."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


@dataclass(frozen=True)
class EvidenceFile:
    """A bundle table already written as Parquet (`parquet_bytes`): its bytes and its rows. A
    vendor's tables are written as soon as they are built, so the bundle keeps compressed bytes,
    not every row of every vendor."""

    data: bytes
    rows: int

    @classmethod
    def of(cls, table: pa.Table) -> EvidenceFile:
        return cls(parquet_bytes(table), table.num_rows)


@dataclass
class EvidenceBundle:
    """The bundle: its index (`bundle.json` before the file digests), each Parquet file's table
    (`tables`, or `written` as `EvidenceFile`s), and the archived terms that decide each vendor's
    level (`terms/<vendor>.md`, as archived)."""

    index: dict[str, Any]
    tables: dict[str, pa.Table] = field(default_factory=dict)
    terms: dict[str, bytes] = field(default_factory=dict)
    written: dict[str, EvidenceFile] = field(default_factory=dict)

    @cached_property
    def _files(self) -> dict[str, EvidenceFile]:
        out = dict(self.written)
        out.update({rel: EvidenceFile.of(table) for rel, table in self.tables.items()})
        return dict(sorted(out.items()))

    @property
    def parquet(self) -> dict[str, bytes]:
        return {rel: f.data for rel, f in self._files.items()}

    @property
    def published_index(self) -> dict[str, Any]:
        """`bundle.json` as published: the index with every Parquet file's SHA-256 and row count."""
        files = {rel: {"sha256": hashlib.sha256(f.data).hexdigest(), "rows": f.rows} for rel, f in self._files.items()}
        return {**self.index, "files": files}

    def files(self) -> dict[str, str | bytes]:
        """Every file of the bundle, relative path → content."""
        out: dict[str, str | bytes] = dict(self.parquet)
        out.update(self.terms)
        out[INDEX_FILE] = json.dumps(self.published_index, indent=2, sort_keys=True) + "\n"
        out[SCHEMA_NAME] = json.dumps(evidence_schema(), indent=2) + "\n"
        return out


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@lru_cache(maxsize=1 << 16)
def url_forms(url: str) -> tuple[str | None, str | None]:
    """A URL's normalized form and the SHA-256 of that form; (None, None) when it cannot be
    normalized. Remembered: the same pages come back for many rows and from every vendor."""
    try:
        form = normalize_url(url)
        return form, hashlib.sha256(form.encode()).hexdigest()
    except (ValueError, UnicodeError):
        return None, None


def url_digest(url: str) -> str | None:
    """SHA-256 of a URL's normalized form (None when it cannot be normalized)."""
    return url_forms(url)[1]


class HoldsAny(Protocol):
    """What reads a body for a private row (the publication's `split.leaks.LeakGuard`)."""

    def __bool__(self) -> bool: ...

    def holds_any(self, texts: Iterable[str]) -> bool: ...


def body_reveals(guard: HoldsAny, body: str | None) -> bool:
    """Whether a body names a private row, read as a reader reads it (JSON strings decoded)."""
    if not body or not guard:
        return False
    return guard.holds_any(readings("body.json", body))


def _content_read(row: GoldenRow, rank: int, answer_k: int) -> bool:
    """Whether scoring reads a result's page text: an extract row's first result, an answer row's first answer_k."""
    return (row.task_type == "extract" and rank == 1) or (row.task_type == "answer" and rank <= answer_k)


class _Digests:
    """The SHA-256 of each result URL's normalized form, from the forms scoring derived
    (`score_rows`' results: `url` → `url_normalized`), each distinct form hashed once; a URL
    scoring did not list is normalized here (`url_forms`)."""

    def __init__(self, forms: Mapping[str, str]):
        self.forms = forms
        self._digests: dict[str, str] = {}

    def of(self, url: str) -> tuple[str | None, str | None]:
        form = self.forms.get(url)
        if form is None:
            return url_forms(url)
        digest = self._digests.get(form)
        if digest is None:
            digest = self._digests[form] = _sha256(form)
        return form, digest


def _add_results(
    out: dict[str, list[Any]],
    row: GoldenRow,
    evidence: RowEvidence,
    level: str,
    answer_k: int,
    guard: LeakGuard,
    scan: bool,
    digests: _Digests,
) -> int:
    """The result rows of one final response, added to the results table's columns (`out`, all
    but the vendor's); `scan`: its body named a private row, so each result is checked. Returns
    how many were withheld."""
    golden = {normalize_url(u) for u in row.urls}
    withheld_count = 0
    for r in evidence.results:
        private_url = scan and guard.reveals(url=r.url)
        withheld = private_url or (scan and guard.reveals(r.title, r.snippet, r.content, url=r.url))
        withheld_count += withheld
        shown = level in TEXT_LEVELS and not withheld
        form, digest = digests.of(r.url)
        rank = int(r.rank)
        out["row_id"].append(row.id)
        out["rank"].append(rank)
        out["withheld"].append(withheld)
        out["url"].append(r.url if shown else None)
        out["url_sha256"].append(None if private_url else digest)
        out["golden"].append(form is not None and form in golden)
        out["title"].append(r.title if shown else None)
        out["snippet"].append(r.snippet if shown else None)
        out["content"].append(r.content if shown and _content_read(row, rank, answer_k) else None)
        out["content_chars"].append(len(r.content or ""))
        out["published"].append(r.published if shown else None)
        out["text_sha256"].append(None if withheld else _sha256(result_text(r)))
    return withheld_count


def _table(columns: Sequence[Column], values: Mapping[str, list[Any]]) -> pa.Table:
    """A bundle table from each of its columns' values."""
    schema = arrow_schema(columns)
    return pa.Table.from_pydict({name: values[name] for name in schema.names}, schema=schema)


@dataclass(frozen=True)
class VendorEvidence:
    """One vendor's part of the bundle: its attempts and results tables, and what was withheld."""

    attempts: pa.Table
    results: pa.Table
    withheld: dict[str, int]


def _plain_column(frame: pd.DataFrame, name: str) -> list[Any]:
    return [plain(x) for x in frame[name].tolist()]


def read_vendor_evidence(
    manifest: Manifest,
    vendor: str,
    public_rows: list[GoldenRow],
    archive: ArchiveReading,
    guard: LeakGuard,
    forms: Mapping[str, str],
) -> VendorEvidence:
    """One vendor's attempts and results tables for the public rows it serves, from its archive as
    scoring read it (`score.partition.read_archive`: every attempt's reading and price, each row's
    evidence; spend is priced over every attempt scoring priced, holdout ones included, and only
    the public rows' attempts are published), and counts of what was withheld. `forms`: each
    result URL's normalized form as scoring derived it (`score_rows`' results), which the
    results' digests and golden flags are read from.

    The attempts table is built a column at a time from the archive's frame; each body is read for
    a private row once (`body_reveals`), and that answer decides both whether the body is
    published and whether its results are checked one by one."""
    level, _ = manifest.evidence_level(vendor)
    evidence = archive.evidence
    by_id = {r.id: r for r in public_rows if r.id in evidence}
    sent = archive.attempts
    public = sent[(sent["role"] == "public") & sent["query_id"].isin(set(by_id))].sort_values(
        ["query_id", "capability", "attempt"]
    )
    finals = (public.groupby(["query_id", "capability"])["attempt"].transform("max") == public["attempt"]).tolist()
    positions = public.index.tolist()  # each public attempt's place among those read (`sent`'s index is 0..n-1)
    row_ids = public["query_id"].tolist()
    bodies = [b if isinstance(b, str) else None for b in public["body"].tolist()]
    private = [body_reveals(guard, body) for body in bodies]
    results: dict[str, list[Any]] = {c.name: [] for c in RESULT_COLUMNS if c.name != "vendor"}
    digests = _Digests(forms)
    results_withheld = 0
    for row_id, final, scan in zip(row_ids, finals, private):
        if final:
            row = by_id[row_id]
            results_withheld += _add_results(
                results, row, evidence[row_id], level, manifest.answer_k, guard, scan, digests
            )
    results["vendor"] = [vendor] * len(results["row_id"])
    not_allowed = f"not published: the vendor's terms allow {level}"
    withheld = [
        None if body is None else WITHHELD_PRIVATE if hidden else None if level == "raw" else not_allowed
        for body, hidden in zip(bodies, private)
    ]
    readings = [archive.readings[p] for p in positions]
    billed = [float(archive.billed_usd[p]) for p in positions]
    http_status = _plain_column(public, "http_status")
    attempts = {
        "vendor": [vendor] * len(positions),
        "row_id": row_ids,
        "capability": public["capability"].tolist(),
        "attempt": [int(a) for a in public["attempt"].tolist()],
        "final": [bool(f) for f in finals],
        "response_class": [evidence[r].response_class if f else None for r, f in zip(row_ids, finals)],
        "http_status": [None if s is None else int(s) for s in http_status],
        "transport_error": _plain_column(public, "transport_error"),
        "latency_ms": _plain_column(public, "latency_ms"),
        "request_json": _plain_column(public, "request_json"),
        "response_headers_json": _plain_column(public, "response_headers_json"),
        "body_sha256": _plain_column(public, "body_sha256"),
        "body_chars": [None if body is None else len(body) for body in bodies],
        "body": [body if why is None else None for body, why in zip(bodies, withheld)],
        "body_withheld": withheld,
        "billed_units_json": [
            None if r.units is None else json.dumps(r.units, sort_keys=True, separators=(",", ":")) for r in readings
        ],
        "billed_usd": billed,
        "billed_usd_estimated": [r.billed_usd is None and usd > 0 for r, usd in zip(readings, billed)],
        "adapter_version": _plain_column(public, "adapter_version"),
    }
    counts = {
        "bodies_withheld_private": sum(1 for body, hidden in zip(bodies, private) if hidden and body is not None),
        "results_withheld_private": results_withheld,
    }
    return VendorEvidence(_table(ATTEMPT_COLUMNS, attempts), _table(RESULT_COLUMNS, results), counts)


class FinalAttempt(NamedTuple):
    """A public row's final attempt as the bundle publishes it (`read_vendor_evidence`): what a
    row's page says of the request and the body, so the page and the bundle cannot disagree."""

    body_sha256: str | None
    request_json: str | None
    body_chars: int | None  # None: no body came (a transport error)
    body_withheld: str | None  # why the bundle does not publish the body; None: it does


def final_attempts(attempts: pa.Table) -> dict[tuple[str, str], FinalAttempt]:
    """(row id, capability) → its final attempt, from a vendor's attempts table (`VendorEvidence`)."""
    columns = ("row_id", "capability", "final", *FinalAttempt._fields)
    rows = attempts.select(list(columns)).to_pydict()
    return {
        (row_id, capability): FinalAttempt(*fields)
        for row_id, capability, final, *fields in zip(*(rows[c] for c in columns))
        if final
    }


def terms_path(vendor: str) -> str:
    return f"{BUNDLE_DIR}/terms/{vendor}.md"


def archived_terms(manifest: Manifest, root: Path | None) -> dict[str, bytes]:
    """Each vendor's archived terms (`evidence_terms`, read under `root`), published as they are
    so a reader can check them against the SHA-256 the manifest pins; a file that cannot be read is left out."""
    out = {}
    for vendor, spec in sorted(manifest.vendors.items()):
        if spec.evidence_terms is not None and root is not None and (root / spec.evidence_terms.file).is_file():
            out[terms_path(vendor)] = (root / spec.evidence_terms.file).read_bytes()
    return out


def terms_decision(text: bytes | None) -> str | None:
    """The decision an archived terms file states (its `- **Decision**: ...` line), as plain text."""
    if text is None:
        return None
    for line in text.decode("utf-8", "replace").splitlines():
        if line.startswith("- **Decision**: "):
            return line.removeprefix("- **Decision**: ").replace("`", "")
    return None


def bundle_index(
    manifest: Manifest, counts: Mapping[str, Mapping[str, int]], terms: Mapping[str, bytes] | None = None
) -> dict[str, Any]:
    """`bundle.json` without its file digests: what scoring needs besides the rows and the bundle,
    and each vendor's evidence level with why (and the decision its archived terms state)."""
    terms = terms or {}
    vendors = {}
    for vendor, spec in sorted(manifest.vendors.items()):
        level, why = manifest.evidence_level(vendor)
        published = terms.get(terms_path(vendor))
        vendors[vendor] = {
            "adapter": spec.adapter,
            "adapter_version": spec.adapter_version,
            "capabilities": sorted(spec.capabilities),
            "plan": spec.plan,
            "prices_usd": dict(spec.prices_usd),
            "evidence_level": level,
            "evidence_why": why,
            "terms_level": spec.publish_evidence,
            "terms": None
            if spec.evidence_terms is None
            else {
                **spec.evidence_terms.model_dump(),
                "published_as": terms_path(vendor) if published is not None else None,
                "decision": terms_decision(published),
            },
            "withheld": dict(counts.get(vendor, {})),
        }
    return {
        "format_version": FORMAT_VERSION,
        "snapshot_id": manifest.snapshot_id,
        "mode": manifest.mode,
        "answer_k": manifest.answer_k,
        "k_values": list(manifest.k_values),
        "results_per_query": manifest.results_per_query,
        "fidelity_weights": dict(manifest.fidelity_weights),
        "vendors": vendors,
    }


@dataclass(frozen=True)
class VendorFiles:
    """A vendor's part of the bundle as published: its Parquet files and what was withheld, or
    (`no_evidence`) why it has none."""

    files: dict[str, EvidenceFile] = field(default_factory=dict)
    withheld: dict[str, int] | None = None
    no_evidence: str | None = None

    @classmethod
    def of(cls, vendor: str, got: VendorEvidence) -> VendorFiles:
        return cls(
            {
                table_path("attempts", vendor): EvidenceFile.of(got.attempts),
                table_path("results", vendor): EvidenceFile.of(got.results),
            },
            got.withheld,
        )


def bundle_of(manifest: Manifest, vendors: Mapping[str, VendorFiles], root: Path | None = None) -> EvidenceBundle:
    """The bundle from each vendor's part (a vendor without archived responses has none), with each
    vendor's archived terms read under `root` (the repository the manifest's paths are relative to)."""
    written = {rel: f for part in vendors.values() for rel, f in part.files.items()}
    counts = {v: part.withheld for v, part in vendors.items() if part.withheld is not None}
    terms = archived_terms(manifest, root)
    index = bundle_index(manifest, counts, terms)
    for vendor, part in vendors.items():
        if part.no_evidence is not None:
            index["vendors"][vendor]["no_evidence"] = part.no_evidence
    return EvidenceBundle(index, terms=terms, written=written)


def evidence_bundle(
    manifest: Manifest,
    public_rows: list[GoldenRow],
    raw_of: Callable[[str], pd.DataFrame],
    guard: LeakGuard,
    root: Path | None = None,
) -> EvidenceBundle:
    """The bundle of a snapshot from every vendor's archived attempts (`raw_of(vendor)`: all its
    attempts) read as scoring reads them: its public rows' attempts and results at its evidence
    level, private rows withheld; a vendor whose fetch is not complete has none, and says why. With
    each vendor's archived terms, read under `root` (the repository the manifest's paths are relative to)."""
    parts = {}
    for vendor in sorted(manifest.vendors):
        raw = raw_of(vendor)
        if raw.empty:
            continue
        spec = manifest.vendors[vendor]
        try:
            archive = read_archive(
                get_adapter(spec.adapter), spec.prices_usd, public_rows, raw, vendor, spec.capabilities
            )
        except NotReadyError as exc:
            parts[vendor] = VendorFiles(no_evidence=str(exc))
            continue
        # not scored here: each result URL is normalized by the bundle itself (no forms given)
        parts[vendor] = VendorFiles.of(vendor, read_vendor_evidence(manifest, vendor, public_rows, archive, guard, {}))
    return bundle_of(manifest, parts, root)
