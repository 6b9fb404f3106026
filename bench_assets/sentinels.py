"""Sentinel pages and probes: the pure parts of measuring time-to-retrievability.

A sentinel is a planted page we control, with an authoritative publish time and a unique phrase
(three invented words) that finds it and nothing else. Every 6 hours each vendor is asked for
the phrase of every sentinel it has not yet returned and that is at most 30 days old; the first
probe whose results contain the sentinel's URL (`metrics.first_hit_rank`) ends that vendor's
wait for that page. Which probes are due, what a probe's archived response says, and the pages
themselves are plain functions here; the Dagster assets in `bench_assets.defs.sentinels` are the
shell around them.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bench_assets.adapters.base import Adapter
from bench_assets.metrics import DEFAULT_CENSOR_AT_HOURS, first_hit_rank

WINDOW_HOURS = DEFAULT_CENSOR_AT_HOURS  # a sentinel is probed for 30 days after its publish time
PROBE_INTERVAL_HOURS = 6
PROBE_CRON = "0 */6 * * *"  # UTC: 00:00, 06:00, 12:00, 18:00
SIMULATED_SITE = "https://sentinels.bench.test"
# A probe that got an answer (results, or a valid empty list) says whether the page is retrievable;
# an error, a timeout or a block says nothing about the page, so it neither finds nor censors.
INFORMATIVE_CLASSES = ("ok", "empty")

# Syllables of invented words; none of them builds a word of the planted corpus (other syllables).
_SYLLABLES = ("qua", "zel", "vor", "thi", "mex", "ubo", "pry", "dax", "yul", "kre", "orf", "sny", "gwa", "fep",
              "ilk", "zor", "pha", "wum", "ect", "bly")


def parse_utc(value: str | datetime) -> datetime:
    """An ISO-8601 time (or datetime) as an aware UTC datetime; a naive time is taken as UTC."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    return (when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)).replace(
        microsecond=0)


def tick_key(when: datetime) -> str:
    """The key of a probe tick: its UTC time to the second, e.g. 2026-07-01T06:00:00Z."""
    return parse_utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def latest_tick(now: datetime) -> datetime:
    """The most recent scheduled probe time at or before `now` (the PROBE_CRON grid)."""
    now = parse_utc(now)
    return now.replace(hour=now.hour - now.hour % PROBE_INTERVAL_HOURS, minute=0, second=0)


class SentinelPage(BaseModel):
    """One sentinel page as published (and as sent to the simulator's `/_sim/sentinels`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    url: str = Field(pattern=r"^https?://")
    phrase: str = Field(min_length=1, description="the unique phrase: the probe's query")
    title: str
    paragraphs: list[str]
    published_at: datetime | None = Field(default=None, description="None until the operator confirms it (live)")

    @field_validator("published_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else parse_utc(value)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(4))


def make_batch(snapshot_id: str, batch_id: str, count: int, base_url: str,
               published_at: datetime | None) -> list[SentinelPage]:
    """A batch of `count` sentinel pages, the same for the same snapshot and batch id.

    Each phrase is three invented words of four syllables, no word shared with another page of
    the batch, so a search for the phrase can only return its own page.
    """
    rng = random.Random(hashlib.sha256(f"{snapshot_id}|{batch_id}".encode()).hexdigest())
    used: set[str] = set()
    pages = []
    for i in range(1, count + 1):
        words: list[str] = []
        while len(words) < 3:
            word = _word(rng)
            if word not in used:
                used.add(word)
                words.append(word)
        phrase = " ".join(words)
        pages.append(SentinelPage(
            id=f"{batch_id}-{i:02d}",
            url=f"{base_url.rstrip('/')}/{snapshot_id}/{batch_id}/{'-'.join(words)}",
            phrase=phrase,
            title=f"{words[0].capitalize()} {words[1]} {words[2]}",
            paragraphs=[f"The sentinel phrase of this page is {phrase}.",
                        "This page is a retrieval sentinel of the bench benchmark: it was published at a recorded "
                        "time to measure how long search APIs take to return a new page.",
                        "It asserts nothing; please do not cite it."],
            published_at=published_at))
    return pages


def render_html(page: SentinelPage) -> str:
    """The page as deployed in live mode: plain, indexable HTML."""
    e = html.escape
    paras = "".join(f"<p>{e(p)}</p>" for p in page.paragraphs)
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(page.title)}</title><meta name=\"robots\" content=\"index,follow\">"
            f"<link rel=\"canonical\" href=\"{e(page.url)}\"></head>"
            f"<body><main><article><h1>{e(page.title)}</h1>{paras}</article></main></body></html>\n")


def deploy_path(page: SentinelPage, deploy_dir: Path) -> Path:
    """Where the page's file goes: <deploy_dir>/<host>/<path>/index.html."""
    rest = page.url.split("://", 1)[1]
    return deploy_dir / rest.strip("/") / "index.html"


def write_deploy_dir(pages: list[SentinelPage], deploy_dir: Path) -> list[Path]:
    written = []
    for page in pages:
        path = deploy_path(page, deploy_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(page), encoding="utf-8")
        written.append(path)
    return written


def due_probes(pages: pd.DataFrame, probes: pd.DataFrame, vendors: list[str], at: datetime) -> pd.DataFrame:
    """The (vendor, sentinel) pairs to probe at tick `at`.

    Definition: a sentinel is due for a vendor when it is published (``published_at`` ≤ at), at
    most 30 days old (at ≤ published_at + 720 h), and no probe of an earlier tick found it at
    that vendor. Probes of the tick `at` itself do not count, so re-running a tick asks for the
    same pairs again (and the fetch archive answers them without calling the vendor).
    `pages` has sentinel_id and published_at; `probes` has vendor, sentinel_id, tick_at, found.
    """
    columns = ["vendor", "sentinel_id", "phrase", "url", "published_at"]
    at = parse_utc(at)
    if pages.empty or not vendors:
        return pd.DataFrame(columns=columns)
    published = pd.to_datetime(pages["published_at"], utc=True)
    window = pages[published.notna() & (published <= at) & (published + timedelta(hours=WINDOW_HOURS) >= at)]
    if window.empty:
        return pd.DataFrame(columns=columns)
    found: set[tuple[str, str]] = set()
    if len(probes):
        earlier = probes[(pd.to_datetime(probes["tick_at"], utc=True) < at) & probes["found"].fillna(False).astype(bool)]
        found = set(zip(earlier["vendor"], earlier["sentinel_id"]))
    records = [{c: p.get(c) for c in columns[1:]} for p in window.to_dict("records")]
    rows = [{"vendor": v, **p} for v in sorted(vendors) for p in records if (v, p["sentinel_id"]) not in found]
    return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class ProbeOutcome:
    """What one archived probe response says: its class, whether it found the page and where."""

    response_class: str
    found: bool
    rank: int | None
    n_results: int
    request_id: str | None
    detail: str | None


def probe_outcome(adapter: Adapter, sentinel_url: str, http_status: int | None, headers: dict[str, str],
                  body: str | None, transport_error: str | None) -> ProbeOutcome:
    """Read one probe's final archived response with the vendor's adapter (deterministic, no network).

    Definition: the response is classified as every response is (`classify.classify_response`);
    ``found`` is true when the class is ``ok`` and the sentinel's URL is among the results
    (`metrics.first_hit_rank`, URLs compared normalized), ``rank`` its 1-based position.
    """
    from bench_assets.classify import classify_response

    classified = classify_response(adapter, "search", http_status, headers, body, transport_error)
    parsed = classified.parsed
    results = list(parsed.results) if parsed and classified.response_class == "ok" else []
    rank = first_hit_rank(sentinel_url, [r.url for r in results])
    return ProbeOutcome(classified.response_class, rank is not None, rank, len(results),
                        parsed.request_id if parsed else None, classified.detail)


def rederive_outcomes(probes: pd.DataFrame, pages: pd.DataFrame, adapters: dict[str, Adapter]) -> pd.DataFrame:
    """The probe table with class, found, rank and n_results re-read from the raw responses it
    archives (what `bench rescore` does); vendors without an adapter are dropped."""
    if probes.empty:
        return probes
    urls = dict(zip(pages["sentinel_id"], pages["url"]))
    rows = []
    for rec in probes.to_dict("records"):
        vendor = rec["vendor"]
        if vendor not in adapters or rec["sentinel_id"] not in urls:
            continue
        status = None if pd.isna(rec["http_status"]) else int(rec["http_status"])
        headers = json.loads(rec["response_headers_json"]) if isinstance(rec["response_headers_json"], str) else {}
        out = probe_outcome(adapters[vendor], urls[rec["sentinel_id"]], status, headers,
                            rec["body"] if isinstance(rec["body"], str) else None,
                            rec["transport_error"] if isinstance(rec["transport_error"], str) else None)
        rows.append({**rec, "response_class": out.response_class, "found": out.found, "rank": out.rank,
                     "n_results": out.n_results})
    return pd.DataFrame(rows, columns=probes.columns)


def page_records(pages: list[SentinelPage]) -> list[dict[str, Any]]:
    """JSON-ready pages for the simulator's `/_sim/sentinels` (confirmed publish times only)."""
    return [p.model_dump(mode="json") for p in pages if p.published_at is not None]


def probe_ticks(start: datetime, end: datetime) -> list[datetime]:
    """The scheduled probe times (PROBE_CRON) from `start` to `end`, both inclusive."""
    first = latest_tick(start)
    if first < parse_utc(start):
        first += timedelta(hours=PROBE_INTERVAL_HOURS)
    ticks = []
    at = first
    while at <= parse_utc(end):
        ticks.append(at)
        at += timedelta(hours=PROBE_INTERVAL_HOURS)
    return ticks
