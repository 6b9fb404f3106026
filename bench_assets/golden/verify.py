"""Verifying golden rows against their pages before any vendor is called.

Each row's page is fetched and the facts the row asserts are checked in it: the golden URLs of a
search row answer 200, an extract row's title, phrases, cells and numbers are on its page, an
answer row's answer is on its source page (for a range or not-available row: the page, read by
the same cell reader as vendors' results, states the range with its method or the explicit
not-available statement, and earns full rubric credit). A row that fails is marked dead (with the failures as
evidence) and must be replaced from its stratum before the snapshot can be fetched.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pandas as pd
from selectolax.lexbor import LexborHTMLParser

from bench_assets.errors import NotReadyError
from bench_assets.golden.rows import ExtractTask, GoldenRow
from bench_assets.golden.verdicts import precise_answer_in_text, score_answer
from bench_assets.metrics.text import contains_normalized as contains_text
from bench_assets.metrics.text import contains_number
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse


@dataclass(frozen=True)
class PageFetch:
    url: str
    fetched_url: str
    status: int | None
    text: str
    sha256: str | None
    error: str | None = None


@dataclass
class RowVerification:
    row_id: str
    checked_url: str | None
    http_status: int | None
    content_sha256: str | None
    failures: list[str] = field(default_factory=list)
    checked_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    kinds: list[str] = field(default_factory=list)  # one of FAILURE_KINDS per failure, without its text

    @property
    def passed(self) -> bool:
        return not self.failures

    def fail(self, kind: str, text: str) -> None:
        self.kinds.append(kind)
        self.failures.append(text)


# What a failure is about, without the row's URL or facts: all that Dagster may show of a holdout
# row's failure (the text stays in DuckDB's golden_verifications).
FAILURE_KINDS = (
    "page_unreachable",
    "title_missing",
    "anchor_phrase_missing",
    "table_cell_missing",
    "numeric_fact_missing",
    "answer_missing",
)


def page_text(html: str) -> str:
    tree = LexborHTMLParser(html)
    title = tree.css_first("title")
    body = tree.body.text(separator="\n", strip=True) if tree.body else ""
    return ((title.text(strip=True) + "\n") if title else "") + body


async def fetch_pages(
    urls: list[str],
    rewrite: Callable[[str], str],
    concurrency: int = 8,
    timeout: float = 20.0,
    user_agent: str = "bench-golden-verifier/1",
) -> dict[str, PageFetch]:
    semaphore = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=True, headers={"User-Agent": user_agent}) as client:

        async def one(url: str) -> PageFetch:
            target = rewrite(url)
            async with semaphore:
                try:
                    r = await client.get(target)
                except httpx.HTTPError as exc:
                    return PageFetch(url, target, None, "", None, f"{type(exc).__name__}: {exc}"[:300])
            text = page_text(r.text) if "html" in r.headers.get("content-type", "html") else r.text
            return PageFetch(url, target, r.status_code, text, hashlib.sha256(r.content).hexdigest())

        fetched = await asyncio.gather(*(one(u) for u in sorted(set(urls))))
    return {f.url: f for f in fetched}


def row_urls(row: GoldenRow) -> list[str]:
    return row.urls


def _check_extract(t: ExtractTask, text: str, result: RowVerification) -> None:
    """Every field an extract row defines must be on its page (the rule fidelity scores by)."""
    if t.title and not contains_text(text, t.title):
        result.fail("title_missing", f"title not on page: {t.title!r}")
    for phrase in t.anchor_phrases:
        if not contains_text(text, phrase):
            result.fail("anchor_phrase_missing", f"anchor phrase not on page: {phrase!r}")
    for cell in t.table_cells:
        if not contains_text(text, cell):
            result.fail("table_cell_missing", f"table cell not on page: {cell!r}")
    for number in t.numeric_facts:
        if not contains_number(text, number, t.numeric_tolerance):
            result.fail("numeric_fact_missing", f"numeric fact not on page: {number!r}")


def check_row(row: GoldenRow, pages: dict[str, PageFetch]) -> RowVerification:
    """Check the facts one row asserts against its fetched pages."""
    urls = row_urls(row)
    first = pages.get(urls[0]) if urls else None
    result = RowVerification(
        row.id, urls[0] if urls else None, first.status if first else None, first.sha256 if first else None
    )
    for url in urls:
        page = pages.get(url)
        if page is None or page.status != 200:
            result.fail(
                "page_unreachable", f"{url}: " + (page.error or f"HTTP {page.status}" if page else "not fetched")
            )
    if result.failures:
        return result
    t = row.task
    if t.type == "extract":
        _check_extract(t, pages[t.url].text, result)
    elif t.type == "answer" and t.answer_type == "precise":
        if not any(precise_answer_in_text(t, pages[u].text) for u in t.source_urls):
            result.fail("answer_missing", "answer not found on any source page")
    elif t.type == "answer" and t.source_urls:
        # A range or not-available row: a source page must state it, read as scoring reads vendors.
        if not any(score_answer(t, [_PageResult(pages[u].text)], 1).score == 1.0 for u in t.source_urls):
            result.fail(
                "answer_missing", f"no source page states the {t.answer_type.replace('_', ' ')} answer about {t.cue!r}"
            )
    return result


@dataclass(frozen=True)
class _PageResult:
    """A fetched source page in the shape of a vendor result, for `score_answer`."""

    content: str
    rank: int = 1
    title: str | None = None
    snippet: str | None = None


def verify_rows(
    rows: list[GoldenRow], rewrite: Callable[[str], str], contact: str | None = None
) -> list[RowVerification]:
    """Fetch every row's pages and check them. `contact` (the manifest's `golden.contact`) is
    declared in the User-Agent, as EDGAR's fair-access rules require of every request to sec.gov."""
    urls = [u for r in rows for u in row_urls(r)]
    agent = f"bench-golden-verifier/1 ({contact})" if contact else "bench-golden-verifier/1"
    pages = asyncio.run(fetch_pages(urls, rewrite, user_agent=agent))
    return [check_row(r, pages) for r in rows]


def failure_report(
    results: list[RowVerification], stratum_of: dict[str, str], split: dict[str, str]
) -> tuple[list[dict], list[dict]]:
    """What may be shown of failed verifications outside DuckDB and the private store (Dagster's
    event log): (public rows with their id and failures, counts of failed rows per stratum, side
    and failure kind). A holdout row, or a row whose side is not recorded yet (verification runs
    before the split), is only counted: its id, URLs and facts would reveal the holdout."""
    public = []
    counts: dict[tuple[str, str], dict[str, Any]] = {}
    for v in results:
        if v.passed:
            continue
        side = split.get(v.row_id) or "unassigned"
        stratum = stratum_of.get(v.row_id, "?")
        if side == "public":
            public.append({"row_id": v.row_id, "stratum": stratum, "failures": "; ".join(v.failures)[:200]})
        count = counts.setdefault((stratum, side), {"stratum": stratum, "side": side, "failed_rows": 0})
        count["failed_rows"] += 1
        for kind in sorted(set(v.kinds)):
            count[kind] = count.get(kind, 0) + 1
    return public, [counts[k] for k in sorted(counts)]


def verification_frame(snapshot_id: str, results: list[RowVerification]) -> pd.DataFrame:
    """`golden_verifications` rows for these results."""
    return pd.DataFrame(
        [
            {
                "snapshot_id": snapshot_id,
                "row_id": v.row_id,
                "checked_at": v.checked_at,
                "checked_url": v.checked_url,
                "http_status": v.http_status,
                "content_sha256": v.content_sha256,
                "passed": v.passed,
                "failures_json": json.dumps(v.failures),
            }
            for v in results
        ],
        columns=TABLES["golden_verifications"].column_names,
    )


def verification_state(warehouse: Warehouse, snapshot_id: str) -> tuple[int, int]:
    """(failed, total) golden rows of the snapshot's latest verification."""
    df = warehouse.query_df(
        "SELECT count(*) FILTER (WHERE NOT passed) AS failed, count(*) AS total "
        "FROM golden_verifications WHERE snapshot_id = ?",
        [snapshot_id],
    )
    return int(df["failed"][0]), int(df["total"][0])


def require_verified(warehouse: Warehouse, snapshot_id: str) -> None:
    """No vendor is called until every golden row is verified (or replaced): NotReadyError otherwise."""
    failed, total = verification_state(warehouse, snapshot_id)
    if total == 0 or failed:
        raise NotReadyError(
            f"golden verification of {snapshot_id} has {failed} failed of {total} rows: "
            "no vendor is called until every row is verified (or replaced)"
        )
