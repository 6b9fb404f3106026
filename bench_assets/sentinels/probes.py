"""Sentinel probes: at each 6-hourly tick, every vendor is asked for the unique phrase of every
sentinel page it has not yet returned (and that is at most 30 days old), through its own adapter
and the fetch engine; each probe is kept with its time, outcome, billed cost and raw response.

A tick's rows are replaced when it is re-run (the probe archive answers what was already asked,
so nothing is paid twice); a missed tick is caught up by the next, which probes everything still
pending. In simulated mode the simulated world's clock is moved to each tick before it is probed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Adapter
from bench_assets.errors import BenchInputError
from bench_assets.fetch.classify import classify_response
from bench_assets.fetch.engine import FetchItem, FetchSettings, FetchStats, fetch_partition
from bench_assets.fetch.spend import archived_spend
from bench_assets.manifest import Manifest
from bench_assets.metrics import first_hit_rank
from bench_assets.sentinels.pages import (
    WINDOW_HOURS,
    latest_tick,
    pages_from_rows,
    parse_utc,
    simulator_clock,
    sync_simulator,
    tick_key,
    tls_context,
)
from bench_assets.storage.archive import PartitionArchive
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse, insert_frame

PROBE_COLUMNS = TABLES["sentinel_probes"].column_names
HISTORY_COLUMNS = ["vendor", "sentinel_id", "tick_at", "probed_at", "response_class", "found", "billed_usd"]
# The fetch settings of a vendor given its probe spend so far (BenchInputError: it cannot be probed).
SettingsFor = Callable[[str, float], FetchSettings]


def probed_vendors(manifest: Manifest) -> list[str]:
    """The snapshot's vendors that have a search endpoint: each is probed for every sentinel."""
    return sorted(
        v
        for v, spec in manifest.vendors.items()
        if "search" in spec.endpoints and "search" in get_adapter(spec.adapter).capabilities
    )


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
        earlier = probes[
            (pd.to_datetime(probes["tick_at"], utc=True) < at) & probes["found"].fillna(False).astype(bool)
        ]
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


def probe_outcome(
    adapter: Adapter,
    sentinel_url: str,
    http_status: int | None,
    headers: dict[str, str],
    body: str | None,
    transport_error: str | None,
) -> ProbeOutcome:
    """Read one probe's final archived response with the vendor's adapter (deterministic, no network).

    Definition: the response is classified as every response is (`fetch.classify.classify_response`);
    ``found`` is true when the class is ``ok`` and the sentinel's URL is among the results
    (`metrics.first_hit_rank`, URLs compared normalized), ``rank`` its 1-based position.
    """
    classified = classify_response(adapter, "search", http_status, headers, body, transport_error)
    parsed = classified.parsed
    results = list(parsed.results) if parsed and classified.response_class == "ok" else []
    rank = first_hit_rank(sentinel_url, [r.url for r in results])
    return ProbeOutcome(
        classified.response_class,
        rank is not None,
        rank,
        len(results),
        parsed.request_id if parsed else None,
        classified.detail,
    )


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
        out = probe_outcome(
            adapters[vendor],
            urls[rec["sentinel_id"]],
            status,
            headers,
            rec["body"] if isinstance(rec["body"], str) else None,
            rec["transport_error"] if isinstance(rec["transport_error"], str) else None,
        )
        rows.append(
            {
                **rec,
                "response_class": out.response_class,
                "found": out.found,
                "rank": out.rank,
                "n_results": out.n_results,
            }
        )
    return pd.DataFrame(rows, columns=probes.columns)


def probe_archive_path(warehouse: Warehouse, snapshot_id: str) -> Path:
    return warehouse.partitions_dir / snapshot_id / "sentinel_probes.duckdb"


def probe_archive(warehouse: Warehouse, snapshot_id: str, tick: str, vendor: str) -> PartitionArchive:
    """A vendor's probes of one tick in the snapshot's probe archive file (every attempt kept).

    Its partition is "<snapshot>@<tick>", so the fetch engine's "already answered" (never pay
    twice), attempt numbering and spend see this tick only; all vendors' archives share the file
    (DuckDB allows many connections in one process)."""
    return PartitionArchive(
        probe_archive_path(warehouse, snapshot_id), f"{snapshot_id}@{tick}", vendor, connector=warehouse.connector
    )


def _probe_rows(
    snapshot_id: str,
    vendor: str,
    adapter: Adapter,
    manifest: Manifest,
    tick: datetime,
    attempts: pd.DataFrame,
    due: pd.DataFrame,
    simulated: bool,
) -> list[dict]:
    urls = dict(zip(due["sentinel_id"], due["url"]))
    phrases = dict(zip(due["sentinel_id"], due["phrase"]))
    if attempts.empty:
        return []
    # Every attempt the vendor billed counts, retries included (as for golden rows).
    billed: dict[str, float] = {}
    for query_id, usd in zip(
        attempts["query_id"], archived_spend(adapter, manifest.vendors[vendor].prices_usd, attempts)
    ):
        billed[query_id] = billed.get(query_id, 0.0) + float(usd)
    finals: dict[str, dict] = {}
    counts: dict[str, int] = {}
    for rec in attempts.to_dict("records"):  # the last attempt of each probe (and how many there were)
        sentinel_id = rec["query_id"]
        counts[sentinel_id] = counts.get(sentinel_id, 0) + 1
        if sentinel_id not in finals or rec["attempt"] > finals[sentinel_id]["attempt"]:
            finals[sentinel_id] = rec
    rows = []
    for sentinel_id, rec in sorted(finals.items()):
        if sentinel_id not in urls:
            continue
        status = None if pd.isna(rec["http_status"]) else int(rec["http_status"])
        headers = json.loads(rec["response_headers_json"]) if isinstance(rec["response_headers_json"], str) else {}
        body = rec["body"] if isinstance(rec["body"], str) else None
        error = rec["transport_error"] if isinstance(rec["transport_error"], str) else None
        out = probe_outcome(adapter, urls[sentinel_id], status, headers, body, error)
        rows.append(
            {
                "snapshot_id": snapshot_id,
                "vendor": vendor,
                "sentinel_id": sentinel_id,
                "tick_at": tick,
                # Simulated: the simulator answered as of the tick. Live: the vendor answered when it was asked.
                "probed_at": tick if simulated else rec["started_at"],
                "query": phrases[sentinel_id],
                "response_class": out.response_class,
                "found": out.found,
                "rank": out.rank,
                "n_results": out.n_results,
                "billed_usd": float(billed.get(sentinel_id, 0.0)),
                "latency_ms": rec["latency_ms"],
                "attempts": counts[sentinel_id],
                "http_status": status,
                "request_json": rec["request_json"],
                "response_headers_json": rec["response_headers_json"],
                "body": body,
                "body_sha256": rec["body_sha256"],
                "transport_error": error,
                "request_id": out.request_id,
                "adapter_version": rec["adapter_version"],
            }
        )
    return rows


class _KeptTransport(httpx.AsyncBaseTransport):
    """A vendor's connection pool kept for all the ticks of a run: the fetch engine's client
    closing it at the end of a tick leaves the connections open for the next."""

    def __init__(self, inner: httpx.AsyncBaseTransport):
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        pass


async def _probe_tick(
    snapshot_id: str,
    manifest: Manifest,
    tick: datetime,
    due: pd.DataFrame,
    spent: dict[str, float],
    warehouse: Warehouse,
    settings_for: SettingsFor,
    simulated: bool,
    transports: dict[str, _KeptTransport],
    log: Callable[[str], None],
) -> tuple[list[dict[str, Any]], list[FetchStats], dict[str, str]]:
    """Probe every due (vendor, sentinel) of one tick through the fetch engine (`spent`: each
    vendor's probe spend so far, for its ceiling); returns the probe rows, the fetch statistics
    and the vendors that could not be probed (and why)."""
    key = tick_key(tick)
    jobs, not_probed = [], {}
    for vendor, wanted in due.groupby("vendor", sort=True):
        try:
            settings = settings_for(str(vendor), spent.get(str(vendor), 0.0))
        except BenchInputError as exc:  # a vendor without a key must not stop the others' probes
            not_probed[str(vendor)] = str(exc)
            log(f"{vendor}: not probed: {exc}")
            continue
        items = [
            FetchItem(r.sentinel_id, "sentinel", "search", r.phrase, manifest.results_per_query)
            for r in wanted.itertuples(index=False)
        ]
        if vendor not in transports:
            transports[vendor] = _KeptTransport(
                httpx.AsyncHTTPTransport(
                    verify=tls_context(), limits=httpx.Limits(max_connections=settings.concurrency * 2)
                )
            )
        jobs.append((vendor, get_adapter(manifest.vendors[vendor].adapter), items, settings, wanted))
    archives = [probe_archive(warehouse, snapshot_id, key, vendor) for vendor, *_ in jobs]
    rows: list[dict] = []
    try:
        stats = await asyncio.gather(
            *(
                fetch_partition(adapter, items, settings, archive, transport=transports[vendor])
                for (vendor, adapter, items, settings, _), archive in zip(jobs, archives)
            )
        )
        for (vendor, adapter, _, _, wanted), archive in zip(jobs, archives):
            rows += _probe_rows(snapshot_id, vendor, adapter, manifest, tick, archive.frame(), wanted, simulated)
    finally:
        for archive in archives:
            archive.close()
    return rows, list(stats), not_probed


@dataclass
class ProbeRun:
    """What one probe run did: the ticks it probed (and live ticks superseded by a later one), the
    probe rows it wrote, how many probes were due, the fetch statistics, vendors not probed and
    why, and the history the time-to-retrievability figures are read from."""

    ticks: list[datetime]
    superseded: list[datetime]
    rows: pd.DataFrame
    due: int = 0
    stats: list[FetchStats] = field(default_factory=list)
    not_probed: dict[str, str] = field(default_factory=dict)
    pages: pd.DataFrame = field(default_factory=pd.DataFrame)
    history: pd.DataFrame = field(default_factory=pd.DataFrame)


def run_ticks(
    warehouse: Warehouse,
    manifest: Manifest,
    probe_at: list[str],
    settings_for: SettingsFor,
    sim_base: Callable[[], str] | None,
    log: Callable[[str], None] = lambda m: None,
) -> ProbeRun:
    """Probe the snapshot's sentinels at each tick of `probe_at` in order (empty: now, the
    simulator's clock in simulated mode). Live mode probes only the latest tick: an older one (a
    catch-up) would probe now anyway, so the latest tick does that, once. `sim_base` gives the
    simulator's address in simulated mode."""
    snapshot_id = manifest.snapshot_id
    simulated = manifest.mode != "live"
    wall_now = datetime.now(UTC)
    ticks = sorted({parse_utc(t) for t in probe_at})
    if not ticks:
        ticks = [simulator_clock(sim_base()) if simulated and sim_base else parse_utc(wall_now)]
    superseded = [] if simulated or not probe_at else [t for t in ticks if t < latest_tick(wall_now)]
    ticks = [t for t in ticks if t not in superseded]
    if not ticks:
        return ProbeRun([], superseded, pd.DataFrame(columns=PROBE_COLUMNS))
    with warehouse.connect() as con:
        pages = con.execute(
            "SELECT * FROM sentinel_pages WHERE snapshot_id = ? AND published_at IS NOT NULL ORDER BY sentinel_id",
            [snapshot_id],
        ).df()
        history = con.execute(
            f"SELECT {', '.join(HISTORY_COLUMNS)} FROM sentinel_probes WHERE snapshot_id = ?", [snapshot_id]
        ).df()
    in_run = (
        pd.to_datetime(history["tick_at"], utc=True).isin(pd.to_datetime(ticks, utc=True))
        if len(history)
        else pd.Series(dtype=bool)
    )
    kept = history[~in_run] if len(history) else history  # the other ticks' probes (this run replaces its own)
    found = kept.loc[kept["found"].fillna(False).astype(bool), ["vendor", "sentinel_id", "tick_at", "found"]]
    run = ProbeRun(ticks, superseded, pd.DataFrame(columns=PROBE_COLUMNS), pages=pages)
    spent = kept.groupby("vendor")["billed_usd"].sum().to_dict() if len(kept) else {}
    rows = asyncio.run(
        _probe_in_order(
            warehouse,
            manifest,
            pages,
            found.to_dict("records") if len(found) else [],
            spent,
            settings_for,
            sim_base if simulated else None,
            run,
            log,
        )
    )
    df = pd.DataFrame(rows, columns=PROBE_COLUMNS)
    for column in ("tick_at", "probed_at"):
        df[column] = pd.to_datetime(df[column], utc=True)
    if len(df) or bool(in_run.any()):  # replace these ticks' rows (a re-run of a tick replaces them)
        replace_ticks(warehouse, snapshot_id, ticks, df)
    run.rows = df
    run.history = pd.concat([f for f in (kept, df[HISTORY_COLUMNS]) if len(f)], ignore_index=True) if len(df) else kept
    return run


async def _probe_in_order(
    warehouse: Warehouse,
    manifest: Manifest,
    pages: pd.DataFrame,
    found_rows: list[dict],
    spent: dict[str, float],
    settings_for: SettingsFor,
    sim_base: Callable[[], str] | None,
    run: ProbeRun,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Each tick in order: what is due given the ticks before it, the simulated clock moved to it,
    then every due probe (one connection pool per vendor kept for the whole run)."""
    vendors = probed_vendors(manifest)
    rows: list[dict[str, Any]] = []
    transports: dict[str, _KeptTransport] = {}
    synced = False
    # One connection held for the whole run keeps the archive open between ticks (opening and
    # checkpointing a DuckDB file costs more than a tick's probes).
    anchor = ExitStack()
    anchor.enter_context(warehouse.open_file(probe_archive_path(warehouse, manifest.snapshot_id)))
    try:
        for tick in run.ticks:
            due = due_probes(
                pages, pd.DataFrame(found_rows, columns=["vendor", "sentinel_id", "tick_at", "found"]), vendors, tick
            )
            run.due += len(due)
            if due.empty:
                continue
            if sim_base is not None:
                sync_simulator(sim_base(), [] if synced else pages_from_rows(pages), tick)
                synced = True
            tick_rows, tick_stats, skipped = await _probe_tick(
                manifest.snapshot_id,
                manifest,
                tick,
                due,
                spent,
                warehouse,
                settings_for,
                sim_base is not None,
                transports,
                log,
            )
            rows.extend(tick_rows)
            run.stats.extend(tick_stats)
            run.not_probed.update(skipped)
            for r in tick_rows:
                spent[r["vendor"]] = spent.get(r["vendor"], 0.0) + r["billed_usd"]
                if r["found"]:
                    found_rows.append({k: r[k] for k in ("vendor", "sentinel_id", "tick_at", "found")})
    finally:
        anchor.close()
        for transport in transports.values():
            await transport.inner.aclose()
    return rows


def snapshots_due(warehouse: Warehouse, tick: datetime, manifest_of: Callable[[str], Manifest]) -> list[str]:
    """The snapshots with a sentinel probe due at `tick` (read-only; nothing when the warehouse
    or its sentinel tables do not exist yet)."""
    state = schedule_state(warehouse)
    if state is None:
        return []
    pages, found = state
    return [
        str(snapshot_id)
        for snapshot_id, snapshot_pages in pages.groupby("snapshot_id", sort=True)
        if not due_probes(
            snapshot_pages,
            found[found["snapshot_id"] == snapshot_id],
            probed_vendors(manifest_of(str(snapshot_id))),
            tick,
        ).empty
    ]


def replace_ticks(warehouse: Warehouse, snapshot_id: str, ticks: list[datetime], df: pd.DataFrame) -> None:
    """Delete the snapshot's probe rows of these ticks and insert `df`, in one transaction."""
    changes = [("sentinel_probes", {"snapshot_id": snapshot_id, "tick_at": list(ticks)})]
    with warehouse.transaction(changes=changes) as con:
        con.register("replaced_ticks", pd.DataFrame({"tick_at": pd.to_datetime(ticks, utc=True)}))
        con.execute(
            "DELETE FROM sentinel_probes WHERE snapshot_id = ? AND tick_at IN (SELECT tick_at FROM replaced_ticks)",
            [snapshot_id],
        )
        insert_frame(con, "sentinel_probes", df)


_last_state: dict[tuple, tuple[pd.DataFrame, pd.DataFrame]] = {}


def schedule_state(warehouse: Warehouse) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Published sentinel pages and found probes, read-only under the warehouse's lock; read
    again only when the warehouse file (or its write-ahead log) changed since the last tick."""
    files = (warehouse.path, warehouse.path.with_name(warehouse.path.name + ".wal"))
    signature = (
        str(warehouse.path),
        *((f.stat().st_mtime_ns, f.stat().st_size) if f.exists() else None for f in files),
    )
    if signature in _last_state:
        return _last_state[signature]
    with warehouse.reading() as con:
        if con is None:
            return None
        try:
            pages = con.execute(
                "SELECT snapshot_id, sentinel_id, published_at FROM sentinel_pages WHERE published_at IS NOT NULL"
            ).df()
            found = con.execute(
                "SELECT snapshot_id, vendor, sentinel_id, tick_at, found FROM sentinel_probes WHERE found"
            ).df()
        except duckdb.CatalogException:  # a warehouse from before the sentinel tables: nothing published
            return None
    _last_state.clear()
    _last_state[signature] = (pages, found)
    return pages, found
