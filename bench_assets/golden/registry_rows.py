"""Golden rows made from registry records, and the keyed draw that picks a snapshot's rows.

This is where truth is decided for registry-sourced rows: which facts of a record a row asserts.
A record gives up to one row per task (search: its title or filing → its page; extract: the page's
title and a phrase from its abstract, or a filing index page's accession number and dates;
answer: a value the record states and its page shows, with the common renderings of a date the
registry writes in a form of its own as accepted answers). The draw is keyed by the split secret:
records are taken per stratum in the order of HMAC(key, stratum, record id) until the stratum has
its rows; the rest are the reserve that decoys and dead-row replacements come from.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

from bench_assets.golden.registry_fetch import RegistryOutcome
from bench_assets.golden.rows import (
    ISO_DATE,
    AnswerTask,
    ExtractTask,
    GoldenRow,
    SearchTask,
    SourceRecord,
    Verification,
)
from bench_assets.manifest import Manifest, RegistrySpec
from bench_assets.metrics import canonical_text
from bench_assets.registries import get_registry, rfc_editor
from bench_assets.registries import sec_edgar as edgar
from bench_assets.registries.base import RegistryRecord

XBRL_TOLERANCE = 0.005  # a filed value quoted to three or four significant figures is still the value


def cohort_of(snapshot_id: str) -> str:
    match = re.search(r"(20[0-9]{2})-(q[1-4])", snapshot_id)
    return f"{match.group(1)}-{match.group(2)}" if match else snapshot_id


def _slug(text: str) -> str:
    """A row-id part for a record id: readable, and unique (a long id keeps a hash of the whole)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug if len(slug) <= 48 else f"{slug[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def first_sentence(text: str, words: int = 16) -> str:
    """The opening words of a text's first sentence: a phrase a faithful extraction keeps."""
    sentence = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return " ".join(sentence.split()[:words]).rstrip(",;:")


MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _distinct(exact: str, renderings: list[str]) -> list[str]:
    """The renderings that are not the exact answer nor each other once canonicalized."""
    seen = {canonical_text(exact)}
    out = []
    for text in renderings:
        if canonical_text(text) not in seen:
            seen.add(canonical_text(text))
            out.append(text)
    return out


def month_year_renderings(month: str, year: str) -> list[str]:
    """Other renderings of the month an RFC was published, which rfc-index.xml writes as
    "December 2020": ISO 8601's year and month ("2020-12"), and the month abbreviated ("Dec 2020")
    as pages and search snippets often write it. None for a month the index does not spell out."""
    if month not in MONTHS or not year.isdigit():
        return []
    number = MONTHS.index(month) + 1
    return _distinct(f"{month} {year}", [f"{year}-{number:02d}", f"{month[:3]} {year}"])


def pep_date_renderings(created: str) -> list[str]:
    """Other renderings of the date a PEP was created, which PEP headers and peps.json write as
    "13-Jun-2000" (PEP 12's DD-MMM-YYYY): ISO 8601 ("2000-06-13"), and the day with the month's
    name ("13 June 2000", "June 13, 2000", "13 Jun 2000"). None for a date in another form."""
    match = re.fullmatch(r"([0-9]{1,2})-([A-Z][a-z]{2})-([0-9]{4})", created.strip())
    abbreviations = [m[:3] for m in MONTHS]
    if not match or match.group(2) not in abbreviations:
        return []
    day, month, year = int(match.group(1)), abbreviations.index(match.group(2)) + 1, match.group(3)
    name = MONTHS[month - 1]
    return _distinct(
        created,
        [f"{year}-{month:02d}-{day:02d}", f"{day} {name} {year}", f"{name} {day}, {year}", f"{day} {name[:3]} {year}"],
    )


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def record_tasks(record: RegistryRecord) -> dict[str, SearchTask | ExtractTask | AnswerTask]:
    """The tasks a record supports, by task type (a record may support fewer than three)."""
    f, url, name = record.fields, record.source_url, record.registry
    if name == rfc_editor.NAME:
        abstract = " ".join(p for p in f["abstract"] if p)
        return {
            "search": SearchTask(type="search", query=_clip(f["title"], 400), golden_urls=[url]),
            **(
                {
                    "extract": ExtractTask(
                        type="extract", url=url, title=f["title"], anchor_phrases=[first_sentence(abstract)]
                    )
                }
                if abstract
                else {}
            ),
            "answer": AnswerTask(
                type="answer",
                question=f'In which month and year was RFC {f["number"]}, "{_clip(f["title"])}", published?',
                exact_answer=f"{f['month']} {f['year']}",
                accepted_answers=month_year_renderings(str(f["month"]), str(f["year"])),
                source_urls=[url],
            ),
        }
    if name == "peps":
        return {
            "search": SearchTask(type="search", query=f"PEP {f['number']} {f['title']}", golden_urls=[url]),
            "extract": ExtractTask(
                type="extract", url=url, title=f["title"], anchor_phrases=[(f.get("author_names") or [f["authors"]])[0]]
            ),
            "answer": AnswerTask(
                type="answer",
                question=f"On what date was PEP {f['number']} ({f['title']}) created?",
                exact_answer=f["created"],
                accepted_answers=pep_date_renderings(str(f["created"])),
                source_urls=[url],
            ),
        }
    if name == "arxiv":
        return (
            {
                "search": SearchTask(type="search", query=_clip(f["title"], 400), golden_urls=[url]),
                "extract": ExtractTask(
                    type="extract", url=url, title=f["title"], anchor_phrases=[first_sentence(f["summary"])]
                ),
                "answer": AnswerTask(
                    type="answer",
                    question=f'Who is the first author of the arXiv paper "{_clip(f["title"])}"?',
                    exact_answer=f["authors"][0],
                    source_urls=[url],
                ),
            }
            if f["authors"]
            else {}
        )
    if name == "federal_register":
        abstract = f.get("abstract") or ""
        return {
            "search": SearchTask(type="search", query=_clip(f["title"], 400), golden_urls=[url]),
            "extract": ExtractTask(
                type="extract", url=url, title=f["title"], anchor_phrases=[first_sentence(abstract)] if abstract else []
            ),
            "answer": AnswerTask(
                type="answer",
                question=f'What is the Federal Register document number of "{_clip(f["title"])}"?',
                exact_answer=f["document_number"],
                source_urls=[url],
            ),
        }
    if name == edgar.NAME and "accessionNumber" in f:  # a filing
        index = edgar.index_url(f["cik"], f["accessionNumber"])
        return {
            "search": SearchTask(
                type="search",
                query=f"{f['company']} {f['form']} for the period ended {f['reportDate']}",
                golden_urls=[url, index],
            ),
            "extract": ExtractTask(
                type="extract", url=index, anchor_phrases=[f["accessionNumber"], f["filingDate"], f["reportDate"]]
            ),
        }
    if name == edgar.NAME:  # an XBRL fact
        return {
            "answer": AnswerTask(
                type="answer",
                question=f"What {f['label']} did {f['company']} report in its 10-K for fiscal year {f['fy']} "
                f"(period ending {f['end']}), in {f['unit']}?",
                number=float(f["val"]),
                tolerance=XBRL_TOLERANCE,
                source_urls=[url],
            )
        }
    return {}


def published_on(record: RegistryRecord) -> date | None:
    """The day a record's page was published, where the registry's record states it as an ISO
    date: a Federal Register document's `publication_date` (API v1 documents), or else the date
    its `html_url` is filed under (`/documents/YYYY/MM/DD/<number>/<slug>`, the publication date;
    `federal_register.url_forms` reads it the same way). None for other registries, and for a date
    in another form."""
    if record.registry != "federal_register":
        return None
    day = record.fields.get("publication_date")
    if not day:
        dated = re.search(r"/documents/([0-9]{4})/([0-9]{2})/([0-9]{2})/", str(record.fields.get("html_url") or ""))
        day = "-".join(dated.groups()) if dated else None
    if not (isinstance(day, str) and ISO_DATE.match(day)):
        return None
    try:
        return date.fromisoformat(day)
    except ValueError:  # 2026-02-30: not a day
        return None


@dataclass
class StratumDraw:
    """The draw of one registry's stratum: rows drawn, the reserve, and the counts an operator sees."""

    registry: str
    stratum: str
    wanted: int
    drawn: list[GoldenRow] = field(default_factory=list)
    reserve: list[GoldenRow] = field(default_factory=list)
    candidate_rows: int = 0
    records: int = 0


def _keyed(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()


def record_rows(record: RegistryRecord, outcome: RegistryOutcome, spec: RegistrySpec, cohort: str) -> list[GoldenRow]:
    registry = get_registry(record.registry)
    at = outcome.retrieved_at[record.record_id]
    source = SourceRecord(
        registry=record.registry,
        record_id=record.record_id,
        record_sha256=record.sha256,
        retrieved_at=at,
        request_url=outcome.request_url[record.record_id],
        tier=registry.tier,
    )
    verification = Verification(
        verified_by=f"registry:{record.registry}",
        verified_at=at,
        evidence=f"{record.registry} record {record.record_id} (sha256 {record.sha256}) in registry_responses; "
        f"tier {registry.tier}: {registry.tier_reason}. Its page is checked by golden_verifications.",
        source_record=source,
    )
    base = f"{spec.stratum}-{_slug(record.record_id)}"
    letter = {"search": "s", "extract": "x", "answer": "a"}
    return [
        GoldenRow(
            id=f"{base}-{letter[kind]}",
            cohort=cohort,
            stratum=spec.stratum,
            provenance="registry",
            verification=verification,
            task=task,
            published_on=published_on(record),
        )
        for kind, task in record_tasks(record).items()
        if kind in spec.tasks and not (task.type == "extract" and not (task.title or task.anchor_phrases))
    ]


def draw_stratum(
    outcome: RegistryOutcome, spec: RegistrySpec, default_rows: int, key: bytes, cohort: str
) -> StratumDraw:
    """The keyed draw of one registry's stratum (records in HMAC order, whole records first)."""
    wanted = spec.rows or default_rows
    draw = StratumDraw(outcome.registry, spec.stratum, wanted)
    seen: set[str] = set()
    ordered = sorted(outcome.records, key=lambda r: _keyed(key, "registry-draw", spec.stratum, r.record_id))
    for record in ordered:
        if record.record_id in seen:  # a record published twice (a follow-up asked again) counts once
            continue
        seen.add(record.record_id)
        rows = record_rows(record, outcome, spec, cohort)
        if not rows:
            continue
        draw.records += 1
        draw.candidate_rows += len(rows)
        room = wanted - len(draw.drawn)
        draw.drawn.extend(rows[:room] if room > 0 else [])
        draw.reserve.extend(rows[max(room, 0) :])
    return draw


def draw_registry_rows(manifest: Manifest, outcomes: Iterable[RegistryOutcome], key: bytes) -> list[StratumDraw]:
    cohort = cohort_of(manifest.snapshot_id)
    specs = manifest.golden.registries
    return [draw_stratum(o, specs[o.registry], manifest.golden.rows_per_stratum, key, cohort) for o in outcomes]


def split_reserve(draws: list[StratumDraw], key: bytes) -> tuple[list[GoldenRow], list[GoldenRow]]:
    """The undrawn rows as two pools, by keyed order within each stratum: (decoys, candidates)."""
    decoys, candidates = [], []
    for draw in draws:
        ordered = sorted(draw.reserve, key=lambda r: _keyed(key, "registry-reserve", draw.stratum, r.id))
        decoys += ordered[0::2]
        candidates += ordered[1::2]
    return decoys, candidates


def candidate_report(outcomes: list[RegistryOutcome], draws: list[StratumDraw]) -> list[dict]:
    """Per registry: what it gave and what was drawn (asset metadata and the operator's check)."""
    return [
        {
            "registry": o.registry,
            "stratum": d.stratum,
            "requests_ok": o.outcomes.get("ok", 0),
            "requests_failed": o.failed_requests,
            "failures": ", ".join(f"{k} {v}" for k, v in sorted(o.outcomes.items()) if k != "ok") or "—",
            "records": d.records,
            "records_rejected": len(o.rejected),
            "candidate_rows": d.candidate_rows,
            "wanted": d.wanted,
            "drawn": len(d.drawn),
        }
        for o, d in zip(outcomes, draws)
    ]


@dataclass
class RegistryGolden:
    """A snapshot's registry-sourced rows and what each registry gave (for metadata and checks)."""

    rows: list[GoldenRow]
    report: list[dict]

    @property
    def silent_registries(self) -> list[str]:
        """Registries that gave no candidate row (down, rate-limited, changed format, or empty)."""
        return [r["registry"] for r in self.report if r["candidate_rows"] == 0]
