"""Sentinel probes: planted pages, a 6-hourly probe of every vendor, and its evidence.

`sentinel_pages` publishes a batch of pages we control (to the simulator's site, or to a deploy
directory the operator puts online) and records each page's authoritative publish time.
`sentinel_probe_schedule` (running by default) launches `sentinel_probe_job` every 6 hours: for
every snapshot with a sentinel still in its 30-day window, one run that asks each configured
vendor for every page it has not yet returned. The tick's scheduled time travels to the run in
its run config (`probe_at`) and tags, and is the key of everything the run writes, so a re-run
of a tick replaces its rows and pays for nothing twice; a missed tick loses only resolution,
because the next tick probes everything still pending.
"""

import asyncio
import json
import ssl
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path

import dagster as dg
import duckdb
import httpx
import pandas as pd
from pydantic import Field

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Adapter
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import (BenchPaths, VendorGateway, VendorKeys, bench_paths_from_env,
                                         input_errors_as_failures)
from bench_assets.fetch import FetchItem, FetchSettings, PartitionArchive, archived_spend, fetch_partition
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.sentinels import (PROBE_CRON, SIMULATED_SITE, WINDOW_HOURS, SentinelPage, due_probes,
                                    latest_tick, make_batch, page_records, parse_utc, probe_outcome, probe_ticks,
                                    tick_key, write_deploy_dir)
from bench_assets.ttr import ttr_figures
from bench_assets.warehouse import TABLES, Warehouse

PROBE_COLUMNS = [c.strip().split()[0] for c in TABLES["sentinel_probes"][1].split("PRIMARY KEY")[0].split(",")
                 if c.strip()]
PAGE_COLUMNS = [c.strip().split()[0] for c in TABLES["sentinel_pages"][1].split("PRIMARY KEY")[0].split(",")
                if c.strip()]


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """One TLS context per process: building one per client costs ~0.1 s of CPU."""
    return httpx.create_ssl_context()


@lru_cache(maxsize=32)
def _manifest_at(path: str, mtime_ns: int) -> Manifest:
    with input_errors_as_failures():
        return load_manifest(path)


def snapshot_manifest_of(paths: BenchPaths, snapshot_id: str) -> Manifest:
    """The snapshot's manifest, parsed once per version of the file (every tick reads it)."""
    path = paths.manifest_path(snapshot_id)
    if not path.exists():
        return paths.manifest(snapshot_id)  # fails with the manifest's own message
    return _manifest_at(str(path), path.stat().st_mtime_ns)


def probed_vendors(manifest: Manifest) -> list[str]:
    """The snapshot's vendors that have a search endpoint: each is probed for every sentinel."""
    return sorted(v for v, spec in manifest.vendors.items()
                  if "search" in spec.endpoints and "search" in get_adapter(spec.adapter).capabilities)


def simulator_clock(gateway: VendorGateway) -> datetime:
    with httpx.Client(verify=_tls(), timeout=10) as client:
        return parse_utc(client.get(f"{gateway.sim_base()}/_sim/clock").json()["now"])


def sync_simulator(gateway: VendorGateway, pages: list[SentinelPage], now: datetime | None) -> None:
    """Publish the pages to the simulated web (idempotent) and, when given, set its clock."""
    base = gateway.sim_base()
    with httpx.Client(verify=_tls(), timeout=30) as client:
        if pages:
            client.post(f"{base}/_sim/sentinels", json=page_records(pages)).raise_for_status()
        if now is not None:
            client.post(f"{base}/_sim/clock", json={"now": now.isoformat()}).raise_for_status()


def stored_pages(warehouse: Warehouse, snapshot_id: str) -> pd.DataFrame:
    return warehouse.query_df("SELECT * FROM sentinel_pages WHERE snapshot_id = ? ORDER BY sentinel_id", [snapshot_id])


def pages_from_rows(df: pd.DataFrame) -> list[SentinelPage]:
    return [SentinelPage.model_validate_json(j) for j in df["page_json"]]


def probe_window(pages: pd.DataFrame) -> tuple[datetime | None, datetime | None]:
    published = pd.to_datetime(pages["published_at"], utc=True).dropna() if len(pages) else pd.Series(dtype=object)
    if published.empty:
        return None, None
    return published.min().to_pydatetime(), (published.max() + timedelta(hours=WINDOW_HOURS)).to_pydatetime()


# ----------------------------------------------------------------------------- sentinel pages


class SentinelBatchConfig(dg.Config):
    """One batch of sentinel pages to publish."""

    batch_id: str = Field(default="", description="Batch name; default b<publish time> (required in live mode).")
    count: int = Field(default=12, description="Pages in the batch.")
    base_url: str = Field(default="", description="Site the pages live on (required in live mode: a site you control).")
    published_at: str = Field(default="", description=(
        "ISO-8601 publish time. Simulated: default is the simulator clock's now. Live: leave empty to write the "
        "pages to the deploy directory, then re-materialize with the time they went online to confirm it."))
    deploy_dir: str = Field(default="", description="Live mode: where the pages are written (default data/sentinels/<snapshot>).")


@dg.asset(partitions_def=snapshots_partitions_def, group_name="sentinels", kinds={"duckdb", "html"},
          tags={"bench/stage": "sentinels"})
def sentinel_pages(context: dg.AssetExecutionContext, config: SentinelBatchConfig, paths: BenchPaths,
                   gateway: VendorGateway) -> dg.MaterializeResult:
    """Sentinel pages planted for the snapshot: each has a unique phrase (three invented words)
    that finds it and nothing else, and an authoritative publish time. Simulated mode publishes
    the batch to the simulator's site; live mode writes it to a deploy directory and records
    the publish time the operator confirms. Every batch of the snapshot is kept; publishing the
    same batch again keeps its pages and its confirmed time."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    live = manifest.mode == "live"
    published_at = parse_utc(config.published_at) if config.published_at else None
    if live:
        if not config.batch_id or not config.base_url:
            raise dg.Failure("live sentinels need a batch_id and the base_url of a site you control")
        if published_at and published_at > datetime.now(timezone.utc) + timedelta(minutes=5):
            raise dg.Failure(f"published_at {published_at.isoformat()} is in the future: confirm the time the pages went online")
    elif published_at is None:
        published_at = simulator_clock(gateway)
    batch_id = config.batch_id or f"b{published_at:%Y%m%dT%H%M}"
    base_url = config.base_url or SIMULATED_SITE
    existing = warehouse.query_df("SELECT published_at FROM sentinel_pages WHERE snapshot_id = ? AND batch_id = ? "
                                  "AND published_at IS NOT NULL LIMIT 1", [snapshot_id, batch_id])
    if len(existing):
        confirmed = parse_utc(existing["published_at"][0].to_pydatetime())
        if published_at is not None and published_at != confirmed:
            raise dg.Failure(f"batch {batch_id} of {snapshot_id} was published at {confirmed.isoformat()}; "
                             "its probes are measured from that time. Publish a new batch id instead.")
        published_at = confirmed
    pages = make_batch(snapshot_id, batch_id, config.count, base_url, published_at)
    deploy_dir = None
    if live:
        deploy_dir = Path(config.deploy_dir) if config.deploy_dir else paths.snapshots_dir.parent / "sentinels" / snapshot_id
        write_deploy_dir(pages, deploy_dir)
    else:
        sync_simulator(gateway, pages, None)
    now = datetime.now(timezone.utc)
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "batch_id": batch_id, "sentinel_id": p.id, "url": p.url,
                        "phrase": p.phrase, "title": p.title, "page_json": p.model_dump_json(),
                        "published_at": p.published_at, "recorded_at": now, "mode": manifest.mode,
                        "deploy_path": str(deploy_dir) if deploy_dir else None} for p in pages], columns=PAGE_COLUMNS)
    df["published_at"] = pd.to_datetime(df["published_at"], utc=True)
    warehouse.replace_rows("sentinel_pages", df, {"snapshot_id": snapshot_id, "batch_id": batch_id})
    window_from, window_until = probe_window(stored_pages(warehouse, snapshot_id))
    status = (f"published {published_at.isoformat()}" if published_at else
              f"written to {deploy_dir}: deploy it, then materialize again with published_at = the time it went online")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(df), "batch_id": batch_id, "status": status, "mode": manifest.mode,
        "probed_from": dg.MetadataValue.timestamp(window_from) if window_from else "not yet published",
        "probed_until": dg.MetadataValue.timestamp(window_until) if window_until else "not yet published",
        "pages": dg.MetadataValue.md(df[["sentinel_id", "phrase", "url"]].to_markdown(index=False)),
    })


# ----------------------------------------------------------------------------- probes


def probe_archive_path(warehouse: Warehouse, snapshot_id: str) -> Path:
    return warehouse.partitions_dir / snapshot_id / "sentinel_probes.duckdb"


def probe_archive(warehouse: Warehouse, snapshot_id: str, tick: str, vendor: str) -> PartitionArchive:
    """A vendor's probes of one tick in the snapshot's probe archive file (every attempt kept).

    Its partition is "<snapshot>@<tick>", so the fetch engine's "already answered" (never pay
    twice), attempt numbering and spend see this tick only; all vendors' archives share the file
    (DuckDB allows many connections in one process)."""
    return PartitionArchive(probe_archive_path(warehouse, snapshot_id), f"{snapshot_id}@{tick}", vendor)


def probe_archive_connection(warehouse: Warehouse, snapshot_id: str) -> duckdb.DuckDBPyConnection:
    path = probe_archive_path(warehouse, snapshot_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(str(path))


def _fetch_settings(vendor: str, manifest: Manifest, gateway: VendorGateway, keys: VendorKeys,
                    spent_before: float, pacing_dir: Path) -> FetchSettings:
    spec = manifest.vendors[vendor]
    ceiling = None if spec.spend_ceiling_usd is None else max(0.0, spec.spend_ceiling_usd - spent_before)
    return FetchSettings(
        endpoints={"search": gateway.url(spec.endpoints["search"], manifest.mode)},
        api_key=gateway.api_key(vendor, manifest.mode, keys, key_env=spec.key_env), options=dict(spec.options),
        rate_limits_per_second={"search": spec.rate_limit("search")}, concurrency=spec.concurrency,
        timeout_seconds=spec.timeout_seconds, max_attempts=spec.max_attempts, prices_usd=spec.prices_usd,
        spend_ceiling_usd=ceiling, vendor_rate_per_second=spec.rate_limit_per_second, pacing_dir=pacing_dir)


def _probe_rows(snapshot_id: str, vendor: str, adapter: Adapter, manifest: Manifest, tick: datetime,
                attempts: pd.DataFrame, due: pd.DataFrame, simulated: bool) -> list[dict]:
    urls = dict(zip(due["sentinel_id"], due["url"]))
    phrases = dict(zip(due["sentinel_id"], due["phrase"]))
    if attempts.empty:
        return []
    # Every attempt the vendor billed counts, retries included (as for golden rows).
    billed: dict[str, float] = {}
    for query_id, usd in zip(attempts["query_id"], archived_spend(adapter, manifest.vendors[vendor].prices_usd, attempts)):
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
        rows.append({
            "snapshot_id": snapshot_id, "vendor": vendor, "sentinel_id": sentinel_id, "tick_at": tick,
            # Simulated: the simulator answered as of the tick. Live: the vendor answered when it was asked.
            "probed_at": tick if simulated else rec["started_at"], "query": phrases[sentinel_id],
            "response_class": out.response_class, "found": out.found, "rank": out.rank, "n_results": out.n_results,
            "billed_usd": float(billed.get(sentinel_id, 0.0)), "latency_ms": rec["latency_ms"],
            "attempts": counts[sentinel_id], "http_status": status, "request_json": rec["request_json"],
            "response_headers_json": rec["response_headers_json"], "body": body, "body_sha256": rec["body_sha256"],
            "transport_error": error, "request_id": out.request_id, "adapter_version": rec["adapter_version"]})
    return rows


def ttr_markdown(figures) -> str:
    if not figures:
        return "no probes yet"
    df = pd.DataFrame([{"vendor": f.vendor,
                        "median_h": "not reached" if f.median_hours is None and f.sentinels else f.median_hours,
                        "low_h": f.low, "high_h": f.high, "found": f.found, "sentinels": f.sentinels,
                        "probes": f.probes} for f in figures.values()])
    return df.to_markdown(index=False)


class ProbeConfig(dg.Config):
    """The ticks a probe run stands for."""

    probe_at: list[str] = Field(default=[], description=(
        "ISO-8601 scheduled times of the ticks this run probes, in order (sentinel_probe_schedule sets one; a "
        "simulated catch-up may list many). Empty: now (the simulator's clock in simulated mode). Live mode "
        "probes only the latest tick: an older one is superseded by it."))


HISTORY_COLUMNS = ["vendor", "sentinel_id", "tick_at", "probed_at", "response_class", "found", "billed_usd"]


class _KeptTransport(httpx.AsyncBaseTransport):
    """A vendor's connection pool kept for all the ticks of a run: the fetch engine's client
    closing it at the end of a tick leaves the connections open for the next."""

    def __init__(self, inner: httpx.AsyncBaseTransport):
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        pass


async def _probe_tick(snapshot_id: str, manifest: Manifest, tick: datetime, due: pd.DataFrame, spent: dict[str, float],
                      warehouse: Warehouse, gateway: VendorGateway, keys: VendorKeys, simulated: bool,
                      transports: dict[str, _KeptTransport], log) -> tuple[list[dict], list, dict[str, str]]:
    """Probe every due (vendor, sentinel) of one tick through the fetch engine (`spent`: each
    vendor's probe spend so far, for its ceiling); returns the probe rows, the fetch statistics
    and the vendors that could not be probed (and why)."""
    key = tick_key(tick)
    jobs, not_probed = [], {}
    for vendor, wanted in due.groupby("vendor", sort=True):
        try:
            settings = _fetch_settings(vendor, manifest, gateway, keys, spent.get(vendor, 0.0), warehouse.pacing_dir)
        except dg.Failure as exc:  # a vendor without a key must not stop the others' probes
            not_probed[vendor] = exc.description
            log(f"{vendor}: not probed: {exc.description}")
            continue
        items = [FetchItem(r.sentinel_id, "sentinel", "search", r.phrase, manifest.results_per_query)
                 for r in wanted.itertuples(index=False)]
        if vendor not in transports:
            transports[vendor] = _KeptTransport(httpx.AsyncHTTPTransport(
                verify=_tls(), limits=httpx.Limits(max_connections=settings.concurrency * 2)))
        jobs.append((vendor, get_adapter(manifest.vendors[vendor].adapter), items, settings, wanted))
    archives = [probe_archive(warehouse, snapshot_id, key, vendor) for vendor, *_ in jobs]
    rows: list[dict] = []
    try:
        stats = await asyncio.gather(*(fetch_partition(adapter, items, settings, archive, transport=transports[vendor])
                                       for (vendor, adapter, items, settings, _), archive in zip(jobs, archives)))
        for (vendor, adapter, _, _, wanted), archive in zip(jobs, archives):
            rows += _probe_rows(snapshot_id, vendor, adapter, manifest, tick, archive.frame(), wanted, simulated)
    finally:
        for archive in archives:
            archive.close()
    return rows, list(stats), not_probed


@dg.asset(partitions_def=snapshots_partitions_def, group_name="sentinels", deps=[sentinel_pages], kinds={"duckdb"},
          tags={"bench/stage": "probe"})
def sentinel_probes(context: dg.AssetExecutionContext, config: ProbeConfig, paths: BenchPaths,
                    gateway: VendorGateway, vendor_keys: VendorKeys) -> dg.MaterializeResult:
    """Probe evidence for the snapshot's sentinel pages: at each 6-hourly tick, every vendor is
    asked for the unique phrase of every page it has not yet returned and that is at most 30 days
    old, through its normal adapter and the fetch engine. Each probe is kept with its time,
    vendor, sentinel, found or not, rank, billed cost and the raw response; all attempts stay
    in the snapshot's probe archive. A tick's rows are replaced when it is re-run (nothing is paid
    twice); a missed tick is caught up by the next, which probes everything still pending."""
    snapshot_id = context.partition_key
    manifest = snapshot_manifest_of(paths, snapshot_id)
    warehouse = paths.warehouse()
    simulated = manifest.mode != "live"
    wall_now = datetime.now(timezone.utc)
    ticks = sorted({parse_utc(t) for t in config.probe_at})
    if not ticks:
        ticks = [simulator_clock(gateway) if simulated else parse_utc(wall_now)]
    superseded = [] if simulated or not config.probe_at else [t for t in ticks if t < latest_tick(wall_now)]
    if superseded:
        # A live run of an old tick (a catch-up) would probe now anyway: the latest tick does that, once.
        context.log.info(f"superseded ticks: {[tick_key(t) for t in superseded]}")
        ticks = [t for t in ticks if t not in superseded]
    if not ticks:
        return dg.MaterializeResult(metadata={"dagster/row_count": 0, "ticks": 0,
                                              "status": f"superseded by the tick of {tick_key(latest_tick(wall_now))}"})
    with warehouse.connect() as con:
        pages = con.execute("SELECT * FROM sentinel_pages WHERE snapshot_id = ? AND published_at IS NOT NULL "
                            "ORDER BY sentinel_id", [snapshot_id]).df()
        history = con.execute(f"SELECT {', '.join(HISTORY_COLUMNS)} FROM sentinel_probes WHERE snapshot_id = ?",
                              [snapshot_id]).df()
    run_ticks = pd.to_datetime(ticks, utc=True)
    in_run = pd.to_datetime(history["tick_at"], utc=True).isin(run_ticks) if len(history) else pd.Series(dtype=bool)
    kept = history[~in_run] if len(history) else history  # the other ticks' probes (this run replaces its own)
    found = kept.loc[kept["found"].fillna(False).astype(bool), ["vendor", "sentinel_id", "tick_at", "found"]]
    found_rows = found.to_dict("records") if len(found) else []
    spent = kept.groupby("vendor")["billed_usd"].sum().to_dict() if len(kept) else {}
    vendors = probed_vendors(manifest)
    rows: list[dict] = []
    stats: list = []
    not_probed: dict[str, str] = {}
    synced = False

    async def probe_in_order() -> int:
        nonlocal synced
        due_total = 0
        transports: dict[str, _KeptTransport] = {}
        try:
            for tick in ticks:
                due = due_probes(pages, pd.DataFrame(found_rows, columns=["vendor", "sentinel_id", "tick_at", "found"]),
                                 vendors, tick)
                due_total += len(due)
                if due.empty:
                    continue
                if simulated:
                    sync_simulator(gateway, [] if synced else pages_from_rows(pages), tick)
                    synced = True
                tick_rows, tick_stats, skipped = await _probe_tick(
                    snapshot_id, manifest, tick, due, spent, warehouse, gateway, vendor_keys, simulated, transports,
                    context.log.warning)
                rows.extend(tick_rows)
                stats.extend(tick_stats)
                not_probed.update(skipped)
                for r in tick_rows:
                    spent[r["vendor"]] = spent.get(r["vendor"], 0.0) + r["billed_usd"]
                    if r["found"]:
                        found_rows.append({k: r[k] for k in ("vendor", "sentinel_id", "tick_at", "found")})
        finally:
            for transport in transports.values():
                await transport.inner.aclose()
        return due_total

    # One connection held for the whole run keeps the archive open between ticks (opening and
    # checkpointing a DuckDB file costs more than a tick's probes).
    anchor = probe_archive_connection(warehouse, snapshot_id)
    try:
        due_total = asyncio.run(probe_in_order())
    finally:
        anchor.close()
    df = pd.DataFrame(rows, columns=PROBE_COLUMNS)
    for column in ("tick_at", "probed_at"):
        df[column] = pd.to_datetime(df[column], utc=True)
    if len(df) or bool(in_run.any()):  # replace these ticks' rows (a re-run of a tick replaces them)
        replace_ticks(warehouse, snapshot_id, ticks, df)
    history = pd.concat([f for f in (kept, df[HISTORY_COLUMNS]) if len(f)], ignore_index=True) if len(df) else kept
    found_now = df[df["found"].astype(bool)].groupby("vendor").size().to_dict() if len(df) else {}
    return dg.MaterializeResult(metadata={
        "ticks": len(ticks), "first_tick": tick_key(ticks[0]), "last_tick": tick_key(ticks[-1]),
        "dagster/row_count": len(df), "due": due_total,
        "sent_this_run": sum(s.sent for s in stats), "reused_from_archive": sum(s.skipped_archived for s in stats),
        "found": dg.MetadataValue.json({v: int(n) for v, n in found_now.items()}),
        "spend_usd": round(float(df["billed_usd"].sum()) if len(df) else 0.0, 6),
        "not_probed": dg.MetadataValue.json(not_probed),
        "superseded_ticks": dg.MetadataValue.json([tick_key(t) for t in superseded]),
        "time_to_retrievability": dg.MetadataValue.md(ttr_markdown(ttr_figures(pages, history))),
    })


def replace_ticks(warehouse: Warehouse, snapshot_id: str, ticks: list[datetime], df: pd.DataFrame) -> None:
    """Delete the snapshot's probe rows of these ticks and insert `df`, in one transaction."""
    with warehouse.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            con.register("replaced_ticks", pd.DataFrame({"tick_at": pd.to_datetime(ticks, utc=True)}))
            con.execute("DELETE FROM sentinel_probes WHERE snapshot_id = ? AND tick_at IN "
                        "(SELECT tick_at FROM replaced_ticks)", [snapshot_id])
            if len(df):
                con.register("incoming_probes", df)
                columns = ", ".join(df.columns)
                con.execute(f"INSERT INTO sentinel_probes ({columns}) SELECT {columns} FROM incoming_probes")
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise


# ----------------------------------------------------------------------------- schedule

sentinel_probe_job = dg.define_asset_job(
    "sentinel_probe_job", selection=[sentinel_probes], partitions_def=snapshots_partitions_def,
    description="One probe tick of one snapshot's sentinel pages (launched by sentinel_probe_schedule).")


_last_state: dict[tuple, tuple[pd.DataFrame, pd.DataFrame]] = {}


def _schedule_state(warehouse: Warehouse) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Published sentinel pages and found probes, read-only under the warehouse's lock; read
    again only when the warehouse file (or its write-ahead log) changed since the last tick."""
    files = (warehouse.path, warehouse.path.with_name(warehouse.path.name + ".wal"))
    signature = (str(warehouse.path), *((f.stat().st_mtime_ns, f.stat().st_size) if f.exists() else None for f in files))
    if signature in _last_state:
        return _last_state[signature]
    with warehouse.lock:
        con = duckdb.connect(str(warehouse.path), read_only=True)
        try:
            pages = con.execute("SELECT snapshot_id, sentinel_id, published_at FROM sentinel_pages "
                                "WHERE published_at IS NOT NULL").df()
            found = con.execute("SELECT snapshot_id, vendor, sentinel_id, tick_at, found FROM sentinel_probes "
                                "WHERE found").df()
        except duckdb.CatalogException:  # a warehouse from before the sentinel tables: nothing published
            return None
        finally:
            con.close()
    _last_state.clear()
    _last_state[signature] = (pages, found)
    return pages, found


def probe_run_requests(paths: BenchPaths, tick: datetime) -> list[dg.RunRequest]:
    """One run request per snapshot with a probe due at `tick`, keyed by snapshot and tick."""
    warehouse = paths.warehouse()
    if not warehouse.path.exists():
        return []
    state = _schedule_state(warehouse)
    if state is None:
        return []
    pages, found = state
    requests = []
    for snapshot_id, snapshot_pages in pages.groupby("snapshot_id", sort=True):
        manifest = snapshot_manifest_of(paths, snapshot_id)
        if due_probes(snapshot_pages, found[found["snapshot_id"] == snapshot_id], probed_vendors(manifest), tick).empty:
            continue
        key = tick_key(tick)
        requests.append(dg.RunRequest(
            run_key=f"{snapshot_id}@{key}", partition_key=snapshot_id,
            run_config=dg.RunConfig(ops={"sentinel_probes": ProbeConfig(probe_at=[tick.isoformat()])}),
            tags={"bench/probe_at": key, "bench/sentinel_probe": snapshot_id}))
    return requests


def probe_schedule(paths: BenchPaths) -> dg.ScheduleDefinition:
    """The 6-hourly probe schedule, reading the warehouse at `paths`.

    The paths are bound when the schedule is defined rather than as a Dagster resource: building
    resources for an evaluation costs a Dagster instance each tick, and the schedule needs nothing
    but this one read. The code location binds the same paths as its assets' `paths` resource."""

    @dg.schedule(name="sentinel_probe_schedule", cron_schedule=PROBE_CRON, job=sentinel_probe_job,
                 execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.RUNNING,
                 description="Every 6 hours: one run per snapshot whose sentinel pages some vendor has not yet "
                             "returned (within their 30 days). Running by default.")
    def sentinel_probe_schedule(context: dg.ScheduleEvaluationContext):
        tick = parse_utc(context.scheduled_execution_time or datetime.now(timezone.utc))
        requests = probe_run_requests(paths, tick)
        return requests or dg.SkipReason(f"no sentinel page due for a probe at {tick_key(tick)}")

    return sentinel_probe_schedule


sentinel_probe_schedule = probe_schedule(bench_paths_from_env())


@dataclass
class ScheduleTick:
    """One evaluation of the probe schedule at a tick and the runs it launched."""

    tick: datetime
    skip_message: str | None
    run_keys: list[str]
    runs: list[dg.ExecuteInProcessResult]  # executed for this tick (a run key already launched is not re-run)


class ProbeDaemon:
    """What `dagster-daemon` does with the probe schedule, minus the waiting, on `instance`
    (persistent, knowing the snapshot partitions): evaluate the real schedule at a tick through
    `evaluate_tick`, as the daemon does, and execute each run request with the real probe job, in
    process, with the request's run config and tags plus the daemon's own (scheduled time, run
    key); a run key already launched for that scheduled time is not launched again.

    `tick` runs one tick to completion before the next is evaluated (the daemon's path: each
    evaluation sees what the runs before it wrote). `catch_up` evaluates the schedule at every
    tick first and executes each snapshot's requests as one run that probes their ticks in order:
    the job decides what is due at each tick from the ticks before it, so the probes are the same
    (a test checks it), without a Dagster run per tick; `bench demo` uses it."""

    def __init__(self, resources: dict, instance: dg.DagsterInstance, run_config: dict | None = None):
        self.schedule = probe_schedule(resources["paths"])
        defs = dg.Definitions(assets=[sentinel_pages, sentinel_probes], jobs=[sentinel_probe_job],
                              schedules=[self.schedule], resources=resources)
        self.repository = defs.get_repository_def()
        self.job = defs.resolve_job_def(sentinel_probe_job.name)
        self.instance = instance
        self.quiet = run_config or {}

    def evaluate(self, tick: datetime) -> tuple[list[dg.RunRequest], str | None]:
        """The schedule's run requests at `tick` (or its skip message), as the daemon gets them."""
        with dg.build_schedule_context(instance=self.instance, scheduled_execution_time=tick,
                                       repository_def=self.repository) as context:
            data = self.schedule.evaluate_tick(context)
        return list(data.run_requests or []), data.skip_message

    def _execute(self, partition_key: str, run_config: dict, tags: dict[str, str]) -> dg.ExecuteInProcessResult:
        # A run request's config carries empty sections (loggers: {}); they must not undo the caller's.
        run_config = {**self.quiet, **{k: v for k, v in run_config.items() if v}}
        return self.job.execute_in_process(run_config=run_config, partition_key=partition_key,
                                           instance=self.instance, raise_on_error=False, tags=tags)

    def launched(self, run_key: str, tick: datetime) -> bool:
        """Whether a run with this key was already launched for this scheduled time (the daemon's check)."""
        return bool(self.instance.get_run_ids(dg.RunsFilter(tags={
            "dagster/schedule_name": self.schedule.name, "dagster/run_key": run_key,
            "dagster/scheduled_execution_time": parse_utc(tick).isoformat()}), limit=1))

    def tick(self, tick: datetime) -> ScheduleTick:
        requests, skip_message = self.evaluate(tick)
        runs = []
        for request in requests:
            if request.run_key and self.launched(request.run_key, tick):
                continue
            tags = {**request.tags, "dagster/scheduled_execution_time": parse_utc(tick).isoformat(),
                    **({"dagster/run_key": request.run_key} if request.run_key else {})}
            runs.append(self._execute(request.partition_key, request.run_config, tags))
        return ScheduleTick(tick, skip_message, [r.run_key for r in requests], runs)

    def catch_up(self, ticks: list[datetime]) -> list[dg.ExecuteInProcessResult]:
        batched: dict[str, list[dg.RunRequest]] = {}
        for tick in ticks:
            # The schedule function itself, with no instance: `evaluate_tick` would build a Dagster
            # instance from its ref at every tick (~0.1 s each) only to resolve the same partition.
            with dg.build_schedule_context(scheduled_execution_time=tick) as context:
                requests = self.schedule(context)
            for request in requests if isinstance(requests, list) else []:
                batched.setdefault(request.partition_key, []).append(request)
        results = []
        for partition_key, requests in batched.items():
            probe_at = [t for r in requests for t in r.run_config["ops"]["sentinel_probes"]["config"]["probe_at"]]
            results.append(self._execute(partition_key, {"ops": {"sentinel_probes": {"config": {"probe_at": probe_at}}}}, {
                "bench/probe_at": f"{requests[0].tags['bench/probe_at']}..{requests[-1].tags['bench/probe_at']}",
                "bench/sentinel_probe": partition_key, "bench/ticks": str(len(probe_at)),
                "dagster/schedule_name": self.schedule.name}))
        return results


@dataclass
class ProbeCycle:
    """What a simulated cycle did: its ticks, the probe runs' results, each tick's evaluation
    (per-tick cycles only), and a summary."""

    ticks: list[datetime]
    runs: list[dg.ExecuteInProcessResult]
    summary: dict
    evaluations: list[ScheduleTick]


def simulate_probe_cycle(snapshot_id: str, resources: dict, instance: dg.DagsterInstance, published_at: datetime,
                         days: float = WINDOW_HOURS / 24, count: int = 12, run_config: dict | None = None,
                         per_tick: bool = False) -> ProbeCycle:
    """A whole sentinel cycle in simulated time: publish a batch at `published_at`, then run the
    probe schedule at every 6-hourly tick of the next `days`, recorded on `instance`: tick by tick
    with a probe run per request (`per_tick`, the daemon's path), or as one catch-up run of the
    probe job (`ProbeDaemon.catch_up`, which gives the same probes in a fraction of the time)."""
    quiet = run_config or {}
    result = dg.materialize([sentinel_pages], instance=instance, partition_key=snapshot_id, resources=resources,
                            raise_on_error=False, tags={"bench/launched_by": "simulated sentinel cycle"},
                            run_config={**quiet, "ops": {"sentinel_pages": {"config": {
                                "published_at": published_at.isoformat(), "count": count}}}})
    if not result.success:
        raise dg.Failure(f"publishing the sentinel batch of {snapshot_id} failed")
    ticks = probe_ticks(published_at, published_at + timedelta(hours=days * 24))
    daemon = ProbeDaemon(resources, instance, run_config=quiet)
    evaluations = [daemon.tick(t) for t in ticks] if per_tick else []
    runs = [r for e in evaluations for r in e.runs] if per_tick else daemon.catch_up(ticks)
    warehouse = resources["paths"].warehouse()
    probes = warehouse.query_df("SELECT count(*) AS n, coalesce(sum(billed_usd), 0) AS usd FROM sentinel_probes "
                                "WHERE snapshot_id = ?", [snapshot_id])
    summary = {"ticks": len(ticks), "runs": len(runs), "failed_runs": sum(not r.success for r in runs),
               "probes": int(probes["n"][0]), "spend_usd": round(float(probes["usd"][0]), 6)}
    return ProbeCycle(ticks, runs, summary, evaluations)
