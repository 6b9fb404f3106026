"""Sentinel pages: planted pages we control, for measuring time-to-retrievability.

A sentinel is a planted page we control, with an authoritative publish time and a unique phrase
(three invented words) that finds it and nothing else. Every 6 hours each vendor is asked for
the phrase of every sentinel it has not yet returned and that is at most 30 days old; the first
probe whose results contain the sentinel's URL (`metrics.first_hit_rank`) ends that vendor's
wait for that page. The pages, their batches, the probe ticks and putting a batch online are here;
the probes themselves are in `sentinels.probes`.
"""

from __future__ import annotations

import hashlib
import html
import random
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bench_assets.errors import BenchInputError
from bench_assets.metrics import DEFAULT_CENSOR_AT_HOURS
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse

WINDOW_HOURS = DEFAULT_CENSOR_AT_HOURS  # a sentinel is probed for 30 days after its publish time
PROBE_INTERVAL_HOURS = 6
SIMULATED_SITE = "https://sentinels.bench.test"
# A probe that got an answer (results, or a valid empty list) says whether the page is retrievable;
# an error, a timeout or a block says nothing about the page, so it neither finds nor censors.
INFORMATIVE_CLASSES = ("ok", "empty")

# Syllables of invented words; none of them builds a word of the planted corpus (other syllables).
_SYLLABLES = (
    "qua",
    "zel",
    "vor",
    "thi",
    "mex",
    "ubo",
    "pry",
    "dax",
    "yul",
    "kre",
    "orf",
    "sny",
    "gwa",
    "fep",
    "ilk",
    "zor",
    "pha",
    "wum",
    "ect",
    "bly",
)


def parse_utc(value: str | datetime) -> datetime:
    """An ISO-8601 time (or datetime) as an aware UTC datetime; a naive time is taken as UTC."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    return (when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)).replace(microsecond=0)


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


def make_batch(
    snapshot_id: str, batch_id: str, count: int, base_url: str, published_at: datetime | None
) -> list[SentinelPage]:
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
        pages.append(
            SentinelPage(
                id=f"{batch_id}-{i:02d}",
                url=f"{base_url.rstrip('/')}/{snapshot_id}/{batch_id}/{'-'.join(words)}",
                phrase=phrase,
                title=f"{words[0].capitalize()} {words[1]} {words[2]}",
                paragraphs=[
                    f"The sentinel phrase of this page is {phrase}.",
                    "This page is a retrieval sentinel of the bench benchmark: it was published at a recorded "
                    "time to measure how long search APIs take to return a new page.",
                    "It asserts nothing; please do not cite it.",
                ],
                published_at=published_at,
            )
        )
    return pages


def render_html(page: SentinelPage) -> str:
    """The page as deployed in live mode: plain, indexable HTML."""
    e = html.escape
    paras = "".join(f"<p>{e(p)}</p>" for p in page.paragraphs)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<title>{e(page.title)}</title><meta name="robots" content="index,follow">'
        f'<link rel="canonical" href="{e(page.url)}"></head>'
        f"<body><main><article><h1>{e(page.title)}</h1>{paras}</article></main></body></html>\n"
    )


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


# ##### THE SIMULATED WEB AND THE WAREHOUSE


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one (it loads the CA bundle) for every client is costly."""
    return httpx.create_ssl_context()


def simulator_clock(sim_base: str) -> datetime:
    """The simulated world's clock (the simulator's `/_sim/clock`)."""
    with httpx.Client(verify=tls_context(), timeout=10) as client:
        return parse_utc(client.get(f"{sim_base}/_sim/clock").json()["now"])


def sync_simulator(sim_base: str, pages: list[SentinelPage], now: datetime | None) -> None:
    """Publish the pages to the simulated web (idempotent) and, when given, set its clock."""
    base = sim_base
    with httpx.Client(verify=tls_context(), timeout=30) as client:
        if pages:
            client.post(f"{base}/_sim/sentinels", json=page_records(pages)).raise_for_status()
        if now is not None:
            client.post(f"{base}/_sim/clock", json={"now": now.isoformat()}).raise_for_status()


def stored_pages(warehouse: Warehouse, snapshot_id: str) -> pd.DataFrame:
    return warehouse.rows("sentinel_pages", snapshot_id, order_by="sentinel_id")


def pages_from_rows(df: pd.DataFrame) -> list[SentinelPage]:
    return [SentinelPage.model_validate_json(j) for j in df["page_json"]]


def probe_window(pages: pd.DataFrame) -> tuple[datetime | None, datetime | None]:
    published = pd.to_datetime(pages["published_at"], utc=True).dropna() if len(pages) else pd.Series(dtype=object)
    if published.empty:
        return None, None
    return published.min().to_pydatetime(), (published.max() + timedelta(hours=WINDOW_HOURS)).to_pydatetime()


@dataclass(frozen=True)
class PlantedBatch:
    """A batch of sentinel pages as recorded: its rows, publish time (None until a live batch is
    confirmed online), where a live batch was written, and the snapshot's probe window."""

    rows: pd.DataFrame
    batch_id: str
    published_at: datetime | None
    deploy_dir: Path | None
    window: tuple[datetime | None, datetime | None]


def plant_batch(
    warehouse: Warehouse,
    mode: str,
    snapshot_id: str,
    *,
    batch_id: str,
    count: int,
    base_url: str,
    published_at: datetime | None,
    deploy_dir: Path,
    sim_base: Callable[[], str],
) -> PlantedBatch:
    """Make a batch and put it online: in simulated mode published to the simulator's site at
    `published_at` (default: the simulated clock's now); in live mode written to `deploy_dir` for
    the operator to put online, its publish time recorded once they confirm it. A batch already
    published keeps its pages and its confirmed time (a different time is refused)."""
    live = mode == "live"
    if live:
        if not batch_id or not base_url:
            raise BenchInputError(
                "sentinel_pages config",
                [
                    (
                        None,
                        "batch_id/base_url",
                        ("live sentinels need a batch_id and the base_url of a site you control"),
                    )
                ],
            )
        if published_at and published_at > datetime.now(UTC) + timedelta(minutes=5):
            raise BenchInputError(
                "sentinel_pages config",
                [
                    (
                        None,
                        "published_at",
                        (f"{published_at.isoformat()} is in the future: confirm the time the pages went online"),
                    )
                ],
            )
    elif published_at is None:
        published_at = simulator_clock(sim_base())
    batch_id = batch_id or f"b{published_at:%Y%m%dT%H%M}"
    existing = warehouse.query_df(
        "SELECT published_at FROM sentinel_pages WHERE snapshot_id = ? AND batch_id = ? "
        "AND published_at IS NOT NULL LIMIT 1",
        [snapshot_id, batch_id],
    )
    if len(existing):
        confirmed = parse_utc(existing["published_at"][0].to_pydatetime())
        if published_at is not None and published_at != confirmed:
            raise BenchInputError(
                "sentinel_pages config",
                [
                    (
                        None,
                        "published_at",
                        (
                            f"batch {batch_id} of {snapshot_id} was published at {confirmed.isoformat()}; its probes are "
                            "measured from that time. Publish a new batch id instead."
                        ),
                    )
                ],
            )
        published_at = confirmed
    pages = make_batch(snapshot_id, batch_id, count, base_url or SIMULATED_SITE, published_at)
    if live:
        write_deploy_dir(pages, deploy_dir)
    else:
        sync_simulator(sim_base(), pages, None)
    now = datetime.now(UTC)
    df = pd.DataFrame(
        [
            {
                "snapshot_id": snapshot_id,
                "batch_id": batch_id,
                "sentinel_id": p.id,
                "url": p.url,
                "phrase": p.phrase,
                "title": p.title,
                "page_json": p.model_dump_json(),
                "published_at": p.published_at,
                "recorded_at": now,
                "mode": mode,
                "deploy_path": str(deploy_dir) if live else None,
            }
            for p in pages
        ],
        columns=TABLES["sentinel_pages"].column_names,
    )
    df["published_at"] = pd.to_datetime(df["published_at"], utc=True)
    warehouse.replace_rows("sentinel_pages", df, {"snapshot_id": snapshot_id, "batch_id": batch_id})
    return PlantedBatch(
        df, batch_id, published_at, deploy_dir if live else None, probe_window(stored_pages(warehouse, snapshot_id))
    )
