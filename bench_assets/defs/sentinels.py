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
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import httpx
import pandas as pd
from pydantic import Field

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Adapter
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, VendorKeys
from bench_assets.fetch import FetchItem, FetchSettings, PartitionArchive, fetch_partition
from bench_assets.manifest import Manifest
from bench_assets.scoring import final_attempts
from bench_assets.sentinels import (PROBE_CRON, SIMULATED_SITE, WINDOW_HOURS, SentinelPage, due_probes,
                                    latest_tick, make_batch, page_records, parse_utc, probe_outcome, tick_key,
                                    write_deploy_dir)
from bench_assets.ttr import ttr_figures
from bench_assets.warehouse import TABLES, Warehouse

PROBE_COLUMNS = [c.strip().split()[0] for c in TABLES["sentinel_probes"][1].split("PRIMARY KEY")[0].split(",")
                 if c.strip()]
PAGE_COLUMNS = [c.strip().split()[0] for c in TABLES["sentinel_pages"][1].split("PRIMARY KEY")[0].split(",")
                if c.strip()]


def probed_vendors(manifest: Manifest) -> list[str]:
    """The snapshot's vendors that have a search endpoint: each is probed for every sentinel."""
    return sorted(v for v, spec in manifest.vendors.items()
                  if "search" in spec.endpoints and "search" in get_adapter(spec.adapter).capabilities)


def simulator_clock(gateway: VendorGateway) -> datetime:
    return parse_utc(httpx.get(f"{gateway.sim_base()}/_sim/clock", timeout=10).json()["now"])


def sync_simulator(gateway: VendorGateway, pages: list[SentinelPage], now: datetime | None) -> None:
    """Publish the pages to the simulated web (idempotent) and, when given, set its clock."""
    base = gateway.sim_base()
    if pages:
        httpx.post(f"{base}/_sim/sentinels", json=page_records(pages), timeout=30).raise_for_status()
    if now is not None:
        httpx.post(f"{base}/_sim/clock", json={"now": now.isoformat()}, timeout=10).raise_for_status()


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


class TickArchive(PartitionArchive):
    """A vendor's probe archive (its own DuckDB file, every attempt kept) seen through one tick:
    the fetch engine's "already answered" and "attempts so far" look at this tick's probes only,
    and its spend ceiling counts the probes of other ticks too (`spent_before`)."""

    def __init__(self, path, snapshot_id: str, vendor: str, tick: str, spent_before: float):
        super().__init__(path, snapshot_id, vendor)
        self.prefix = f"{tick}/"
        self.spent_before = spent_before

    def _where(self) -> tuple[str, list]:
        return "snapshot_id = ? AND vendor = ? AND starts_with(query_id, ?)", [self.snapshot_id, self.vendor, self.prefix]

    def settled(self) -> set[tuple[str, str]]:
        where, params = self._where()
        return set(self.con.execute(f"SELECT query_id, capability FROM raw_responses WHERE {where} AND final",
                                    params).fetchall())

    def attempts_so_far(self) -> dict[tuple[str, str], int]:
        where, params = self._where()
        rows = self.con.execute(f"SELECT query_id, capability, max(attempt) FROM raw_responses WHERE {where} "
                                "GROUP BY 1, 2", params).fetchall()
        return {(q, c): n for q, c, n in rows}

    def spend_so_far(self, price) -> float:
        where, params = self._where()
        rows = self.con.execute(f"SELECT query_id, capability, http_status, response_headers_json, body FROM raw_responses "
                                f"WHERE {where} AND http_status BETWEEN 200 AND 299", params).fetchall()
        return self.spent_before + sum(price({"query_id": r[0], "capability": r[1], "http_status": r[2],
                                              "headers": r[3], "body": r[4]}) for r in rows)

    def tick_attempts(self) -> pd.DataFrame:
        where, params = self._where()
        return self.con.execute(f"SELECT * FROM raw_responses WHERE {where} ORDER BY query_id, attempt", params).df()


def _fetch_settings(vendor: str, manifest: Manifest, gateway: VendorGateway, keys: VendorKeys) -> FetchSettings:
    spec = manifest.vendors[vendor]
    return FetchSettings(
        endpoints={"search": gateway.url(spec.endpoints["search"], manifest.mode)},
        api_key=gateway.api_key(vendor, manifest.mode, keys), options=dict(spec.options),
        rate_limits_per_second={"search": spec.rate_limit("search")}, concurrency=spec.concurrency,
        timeout_seconds=spec.timeout_seconds, max_attempts=spec.max_attempts, prices_usd=spec.prices_usd,
        spend_ceiling_usd=spec.spend_ceiling_usd)


def _probe_rows(snapshot_id: str, vendor: str, adapter: Adapter, manifest: Manifest, tick: datetime,
                attempts: pd.DataFrame, due: pd.DataFrame, simulated: bool) -> list[dict]:
    urls = dict(zip(due["sentinel_id"], due["url"]))
    phrases = dict(zip(due["sentinel_id"], due["phrase"]))
    rows = []
    for rec in final_attempts(attempts).to_dict("records"):
        sentinel_id = rec["query_id"].split("/", 1)[1]
        if sentinel_id not in urls:
            continue
        status = None if pd.isna(rec["http_status"]) else int(rec["http_status"])
        headers = json.loads(rec["response_headers_json"]) if isinstance(rec["response_headers_json"], str) else {}
        body = rec["body"] if isinstance(rec["body"], str) else None
        error = rec["transport_error"] if isinstance(rec["transport_error"], str) else None
        out = probe_outcome(adapter, manifest.vendors[vendor].prices_usd, urls[sentinel_id], status, headers, body, error)
        rows.append({
            "snapshot_id": snapshot_id, "vendor": vendor, "sentinel_id": sentinel_id, "tick_at": tick,
            # Simulated: the simulator answered as of the tick. Live: the vendor answered when it was asked.
            "probed_at": tick if simulated else rec["started_at"], "query": phrases[sentinel_id],
            "response_class": out.response_class, "found": out.found, "rank": out.rank, "n_results": out.n_results,
            "billed_usd": out.billed_usd, "latency_ms": rec["latency_ms"], "attempts": int(rec["attempts"]),
            "http_status": status, "request_json": rec["request_json"],
            "response_headers_json": rec["response_headers_json"], "body": body, "body_sha256": rec["body_sha256"],
            "transport_error": error, "request_id": out.request_id, "adapter_version": rec["adapter_version"]})
    return rows


def ttr_markdown(figures) -> str:
    if not figures:
        return "no probes yet"
    df = pd.DataFrame([{"vendor": f.vendor, "median_h": "not reached" if f.median_hours is None and f.sentinels else f.median_hours,
                        "low_h": f.low, "high_h": f.high, "found": f.found, "sentinels": f.sentinels, "probes": f.probes}
                       for f in figures.values()])
    return df.to_markdown(index=False)


class ProbeConfig(dg.Config):
    """The tick a probe run stands for."""

    probe_at: str = Field(default="", description=(
        "ISO-8601 scheduled time of the tick (set by sentinel_probe_schedule). Empty: now (the simulator's "
        "clock in simulated mode)."))


@dg.asset(partitions_def=snapshots_partitions_def, group_name="sentinels", deps=[sentinel_pages], kinds={"duckdb"},
          tags={"bench/stage": "probe"})
def sentinel_probes(context: dg.AssetExecutionContext, config: ProbeConfig, paths: BenchPaths,
                    gateway: VendorGateway, vendor_keys: VendorKeys) -> dg.MaterializeResult:
    """Probe evidence for the snapshot's sentinel pages: at each 6-hourly tick, every vendor is
    asked for the unique phrase of every page it has not yet returned and that is at most 30 days
    old, through its normal adapter and the fetch engine. Each probe is kept with its time,
    vendor, sentinel, found or not, rank, billed cost and the raw response; all attempts stay
    in the vendor's probe archive. A tick's rows are replaced when it is re-run (nothing is paid
    twice); a missed tick is caught up by the next, which probes everything still pending."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    simulated = manifest.mode != "live"
    wall_now = datetime.now(timezone.utc)
    if config.probe_at:
        tick = parse_utc(config.probe_at)
    else:
        tick = simulator_clock(gateway) if simulated else parse_utc(wall_now)
    key = tick_key(tick)
    if not simulated and config.probe_at and tick < latest_tick(wall_now):
        # A live catch-up run of an old tick would probe now anyway: the latest tick does that once.
        return dg.MaterializeResult(metadata={"tick": key, "dagster/row_count": 0,
                                              "status": f"superseded by the tick of {tick_key(latest_tick(wall_now))}"})
    pages = stored_pages(warehouse, snapshot_id)
    pages = pages[pages["published_at"].notna()]
    history = warehouse.query_df("SELECT vendor, sentinel_id, tick_at, found, billed_usd FROM sentinel_probes "
                                 "WHERE snapshot_id = ?", [snapshot_id])
    due = due_probes(pages, history, probed_vendors(manifest), tick)
    if simulated and len(due):
        sync_simulator(gateway, pages_from_rows(pages), tick)
    other_ticks = history[pd.to_datetime(history["tick_at"], utc=True) != tick] if len(history) else history
    jobs, skipped = [], {}
    for vendor, wanted in due.groupby("vendor", sort=True):
        try:
            settings = _fetch_settings(vendor, manifest, gateway, vendor_keys)
        except dg.Failure as exc:  # a vendor without a key must not stop the others' probes
            skipped[vendor] = exc.description
            context.log.warning(f"{vendor}: not probed: {exc.description}")
            continue
        adapter = get_adapter(manifest.vendors[vendor].adapter)
        items = [FetchItem(f"{key}/{r.sentinel_id}", "sentinel", "search", r.phrase, manifest.results_per_query)
                 for r in wanted.itertuples(index=False)]
        spent = float(other_ticks.loc[other_ticks["vendor"] == vendor, "billed_usd"].sum()) if len(other_ticks) else 0.0
        archive = TickArchive(warehouse.partitions_dir / snapshot_id / "sentinels" / f"{vendor}.duckdb",
                              snapshot_id, vendor, key, spent)
        jobs.append((vendor, adapter, items, settings, archive, wanted))

    async def probe_all():
        return await asyncio.gather(*(fetch_partition(adapter, items, settings, archive)
                                      for _, adapter, items, settings, archive, _ in jobs))

    rows: list[dict] = []
    try:
        stats = asyncio.run(probe_all()) if jobs else []
        for vendor, adapter, _, _, archive, wanted in jobs:
            rows += _probe_rows(snapshot_id, vendor, adapter, manifest, tick, archive.tick_attempts(), wanted, simulated)
    finally:
        for job in jobs:
            job[4].close()
    df = pd.DataFrame(rows, columns=PROBE_COLUMNS)
    for column in ("tick_at", "probed_at"):
        df[column] = pd.to_datetime(df[column], utc=True)
    warehouse.replace_rows("sentinel_probes", df, {"snapshot_id": snapshot_id, "tick_at": tick})
    all_probes = warehouse.query_df("SELECT vendor, sentinel_id, probed_at, response_class, found FROM sentinel_probes "
                                    "WHERE snapshot_id = ?", [snapshot_id])
    found_now = df[df["found"].astype(bool)].groupby("vendor").size().to_dict() if len(df) else {}
    return dg.MaterializeResult(metadata={
        "tick": key, "dagster/row_count": len(df), "due": len(due),
        "sent_this_run": sum(s.sent for s in stats), "reused_from_archive": sum(s.skipped_archived for s in stats),
        "found_this_tick": dg.MetadataValue.json({v: int(n) for v, n in found_now.items()}),
        "spend_usd": round(float(df["billed_usd"].sum()) if len(df) else 0.0, 6),
        "not_probed": dg.MetadataValue.json(skipped),
        "time_to_retrievability": dg.MetadataValue.md(ttr_markdown(ttr_figures(pages, all_probes))),
    })


# ----------------------------------------------------------------------------- schedule

sentinel_probe_job = dg.define_asset_job(
    "sentinel_probe_job", selection=[sentinel_probes], partitions_def=snapshots_partitions_def,
    description="One probe tick of one snapshot's sentinel pages (launched by sentinel_probe_schedule).")


def probe_run_requests(paths: BenchPaths, tick: datetime) -> list[dg.RunRequest]:
    """One run request per snapshot with a probe due at `tick`, keyed by snapshot and tick."""
    warehouse = paths.warehouse()
    if not warehouse.path.exists():
        return []
    pages = warehouse.query_df("SELECT snapshot_id, sentinel_id, published_at FROM sentinel_pages "
                               "WHERE published_at IS NOT NULL")
    found = warehouse.query_df("SELECT snapshot_id, vendor, sentinel_id, tick_at, found FROM sentinel_probes WHERE found")
    requests = []
    for snapshot_id, snapshot_pages in pages.groupby("snapshot_id", sort=True):
        manifest = paths.manifest(snapshot_id)
        if due_probes(snapshot_pages, found[found["snapshot_id"] == snapshot_id], probed_vendors(manifest), tick).empty:
            continue
        key = tick_key(tick)
        requests.append(dg.RunRequest(
            run_key=f"{snapshot_id}@{key}", partition_key=snapshot_id,
            run_config=dg.RunConfig(ops={"sentinel_probes": ProbeConfig(probe_at=tick.isoformat())}),
            tags={"bench/probe_at": key, "bench/sentinel_probe": snapshot_id}))
    return requests


@dg.schedule(cron_schedule=PROBE_CRON, job=sentinel_probe_job, execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING,
             description="Every 6 hours: probe each snapshot's sentinel pages that some vendor has not yet returned.")
def sentinel_probe_schedule(context: dg.ScheduleEvaluationContext, paths: BenchPaths):
    tick = parse_utc(context.scheduled_execution_time or datetime.now(timezone.utc))
    requests = probe_run_requests(paths, tick)
    return requests or dg.SkipReason(f"no sentinel page due for a probe at {tick_key(tick)}")


def drive_probe_schedule(ticks: list[datetime], resources: dict, instance: dg.DagsterInstance,
                         schedule_instance: dg.DagsterInstance | None = None, run_config: dict | None = None) -> list:
    """Evaluate the real schedule at each tick and execute its run requests with the real probe
    job, in-process (what the daemon does, minus waiting 6 hours). Returns the runs' results.

    `instance` records the runs; the schedule's context gets `schedule_instance` (default
    `instance`), which must be persistent (e.g. `dg.instance_for_test()`) and know the snapshot
    partitions, since partitioned run requests are resolved against it."""
    defs = dg.Definitions(assets=[sentinel_pages, sentinel_probes], jobs=[sentinel_probe_job],
                          schedules=[sentinel_probe_schedule], resources=resources)
    job = defs.resolve_job_def(sentinel_probe_job.name)
    schedule = defs.resolve_schedule_def(sentinel_probe_schedule.name)
    repository = defs.get_repository_def()
    results = []
    for tick in ticks:
        with dg.build_schedule_context(instance=schedule_instance or instance, scheduled_execution_time=tick,
                                       resources=resources, repository_def=repository) as context:
            data = schedule.evaluate_tick(context)
        for request in data.run_requests or []:
            config = request.run_config if not run_config else {**request.run_config, **run_config}
            results.append(job.execute_in_process(run_config=config, partition_key=request.partition_key,
                                                  tags=request.tags, instance=instance, raise_on_error=False))
    return results
