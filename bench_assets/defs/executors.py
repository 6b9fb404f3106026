"""Where a run's steps execute: in the run's own process (the default, one machine or one pod per
run), or, with `$BENCH_CELERY_BROKER` set, as Celery tasks on worker processes anywhere
(`bench worker`), through Dagster's Celery executor.

The executor and every worker read their settings from `celery_settings()`, so they cannot drift:
a task is acknowledged only when it finished (`task_acks_late`), and one whose worker was killed
is handed to another worker: at once when the worker process dies under a living parent
(`task_reject_on_worker_lost`), and after `$BENCH_CELERY_VISIBILITY_TIMEOUT` seconds when the
whole machine is gone (the Redis broker then redelivers what was never acknowledged). That
timeout must exceed the longest step, or the broker hands a still-running step to a second
worker; the fetch's partition lease (`Warehouse.partition_lease`) makes that second delivery wait
and then pay for nothing, but it runs the step twice.
"""

import os
from typing import Any

import dagster as dg
from dagster_celery import celery_executor

CELERY_QUEUE = "dagster"  # the queue dagster-celery routes step tasks to


def celery_settings() -> dict[str, Any]:
    """The Celery executor's configuration (broker, result backend, Celery settings) from the environment."""
    broker = os.environ["BENCH_CELERY_BROKER"]
    visibility = int(os.environ.get("BENCH_CELERY_VISIBILITY_TIMEOUT") or 7200)
    return {
        "broker": broker,
        "backend": os.environ.get("BENCH_CELERY_BACKEND") or broker,
        "config_source": {
            "task_acks_late": True,
            "task_reject_on_worker_lost": True,
            "worker_prefetch_multiplier": 1,
            "broker_connection_retry_on_startup": True,
            "broker_transport_options": {
                "visibility_timeout": visibility,
                # look for abandoned tasks every few seconds, not every 100 (kombu's default 10 x 10)
                "unacked_restore_interval": max(1, min(10, visibility // 10)),
                "unacked_restore_throttle": 1,
                "max_retries": 3,
                "interval_start": 0,
                "interval_step": 0.2,
                "interval_max": 0.5,
            },
            "result_backend_transport_options": {"visibility_timeout": visibility},
        },
    }


def run_executor() -> dg.ExecutorDefinition:
    """Celery when a broker is configured, else every step in the run's own process."""
    if not os.environ.get("BENCH_CELERY_BROKER"):
        # Every run is already its own process and a vendor run has two sequential steps; the
        # in-process executor spares a second process per step (and its start-up time) per run.
        return dg.in_process_executor
    return celery_executor.configured(celery_settings(), name="bench_celery")
