"""A whole sentinel cycle in simulated time, driven through Dagster as its daemon would drive it:
publish a batch of sentinel pages, then evaluate the real probe schedule at every 6-hourly tick
and execute the runs it requests with the real probe job (`bench demo`, and the tests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import dagster as dg

from bench_assets.defs.sentinels import probe_schedule, sentinel_pages, sentinel_probe_job, sentinel_probes
from bench_assets.sentinels.pages import WINDOW_HOURS, parse_utc, probe_ticks


@dataclass
class ScheduleTick:
    """One evaluation of the probe schedule at a tick and the runs it launched."""

    tick: datetime
    skip_message: str | None
    run_keys: list[str | None]
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
        self.schedule = probe_schedule(resources["paths"], resources["duckdb"])
        defs = dg.Definitions(
            assets=[sentinel_pages, sentinel_probes],
            jobs=[sentinel_probe_job],
            schedules=[self.schedule],
            resources=resources,
        )
        self.repository = defs.get_repository_def()
        self.job = defs.resolve_job_def(sentinel_probe_job.name)
        self.instance = instance
        self.quiet = run_config or {}

    def evaluate(self, tick: datetime) -> tuple[list[dg.RunRequest], str | None]:
        """The schedule's run requests at `tick` (or its skip message), as the daemon gets them."""
        with dg.build_schedule_context(
            instance=self.instance, scheduled_execution_time=tick, repository_def=self.repository
        ) as context:
            data = self.schedule.evaluate_tick(context)
        return list(data.run_requests or []), data.skip_message

    def _execute(
        self, partition_key: str | None, run_config: Mapping[str, Any], tags: dict[str, str]
    ) -> dg.ExecuteInProcessResult:
        # A run request's config carries empty sections (loggers: {}); they must not undo the caller's.
        run_config = {**self.quiet, **{k: v for k, v in run_config.items() if v}}
        return self.job.execute_in_process(
            run_config=run_config, partition_key=partition_key, instance=self.instance, raise_on_error=False, tags=tags
        )

    def launched(self, run_key: str, tick: datetime) -> bool:
        """Whether a run with this key was already launched for this scheduled time (the daemon's check)."""
        return bool(
            self.instance.get_run_ids(
                dg.RunsFilter(
                    tags={
                        "dagster/schedule_name": self.schedule.name,
                        "dagster/run_key": run_key,
                        "dagster/scheduled_execution_time": parse_utc(tick).isoformat(),
                    }
                ),
                limit=1,
            )
        )

    def tick(self, tick: datetime) -> ScheduleTick:
        requests, skip_message = self.evaluate(tick)
        runs = []
        for request in requests:
            if request.run_key and self.launched(request.run_key, tick):
                continue
            tags = {
                **request.tags,
                "dagster/scheduled_execution_time": parse_utc(tick).isoformat(),
                **({"dagster/run_key": request.run_key} if request.run_key else {}),
            }
            runs.append(self._execute(request.partition_key, request.run_config, tags))
        return ScheduleTick(tick, skip_message, [r.run_key for r in requests], runs)

    def catch_up(self, ticks: list[datetime], snapshot_id: str | None = None) -> list[dg.ExecuteInProcessResult]:
        """The runs the schedule requests at `ticks`, one per snapshot (only `snapshot_id`'s when
        given: a demo probes its own snapshot, not another one a second demo is probing)."""
        batched: dict[str, list[dg.RunRequest]] = {}
        for tick in ticks:
            # The schedule function itself, with no instance: `evaluate_tick` would build a Dagster
            # instance from its ref at every tick only to resolve the same partition.
            with dg.build_schedule_context(scheduled_execution_time=tick) as context:
                requests = self.schedule(context)
            for request in requests if isinstance(requests, list) else []:
                if snapshot_id is None or request.partition_key == snapshot_id:
                    batched.setdefault(request.partition_key, []).append(request)
        results = []
        for partition_key, requests in batched.items():
            probe_at = [t for r in requests for t in r.run_config["ops"]["sentinel_probes"]["config"]["probe_at"]]
            results.append(
                self._execute(
                    partition_key,
                    {"ops": {"sentinel_probes": {"config": {"probe_at": probe_at}}}},
                    {
                        "bench/probe_at": f"{requests[0].tags['bench/probe_at']}..{requests[-1].tags['bench/probe_at']}",
                        "bench/sentinel_probe": partition_key,
                        "bench/ticks": str(len(probe_at)),
                        "dagster/schedule_name": self.schedule.name,
                    },
                )
            )
        return results


@dataclass
class ProbeCycle:
    """What a simulated cycle did: its ticks, the probe runs' results, each tick's evaluation
    (per-tick cycles only), and a summary."""

    ticks: list[datetime]
    runs: list[dg.ExecuteInProcessResult]
    summary: dict
    evaluations: list[ScheduleTick]


def simulate_probe_cycle(
    snapshot_id: str,
    resources: dict,
    instance: dg.DagsterInstance,
    published_at: datetime,
    days: float = WINDOW_HOURS / 24,
    count: int = 12,
    run_config: dict | None = None,
    per_tick: bool = False,
) -> ProbeCycle:
    """A whole sentinel cycle in simulated time: publish a batch at `published_at`, then run the
    probe schedule at every 6-hourly tick of the next `days`, recorded on `instance`: tick by tick
    with a probe run per request (`per_tick`, the daemon's path), or as one catch-up run of the
    probe job (`ProbeDaemon.catch_up`, which gives the same probes in a fraction of the time)."""
    quiet = run_config or {}
    result = dg.materialize(
        [sentinel_pages],
        instance=instance,
        partition_key=snapshot_id,
        resources=resources,
        raise_on_error=False,
        tags={"bench/launched_by": "simulated sentinel cycle"},
        run_config={
            **quiet,
            "ops": {"sentinel_pages": {"config": {"published_at": published_at.isoformat(), "count": count}}},
        },
    )
    if not result.success:
        raise RuntimeError(f"publishing the sentinel batch of {snapshot_id} failed; see the run in the Dagster UI")
    ticks = probe_ticks(published_at, published_at + timedelta(hours=days * 24))
    daemon = ProbeDaemon(resources, instance, run_config=quiet)
    evaluations = [daemon.tick(t) for t in ticks] if per_tick else []
    runs = [r for e in evaluations for r in e.runs] if per_tick else daemon.catch_up(ticks, snapshot_id)
    warehouse = resources["duckdb"].warehouse()
    probes = warehouse.query_df(
        "SELECT count(*) AS n, coalesce(sum(billed_usd), 0) AS usd FROM sentinel_probes WHERE snapshot_id = ?",
        [snapshot_id],
    )
    summary = {
        "ticks": len(ticks),
        "runs": len(runs),
        "failed_runs": sum(not r.success for r in runs),
        "probes": int(probes["n"][0]),
        "spend_usd": round(float(probes["usd"][0]), 6),
    }
    return ProbeCycle(ticks, runs, summary, evaluations)
