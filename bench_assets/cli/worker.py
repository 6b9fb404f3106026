"""`bench worker`: a Celery worker that executes pipeline steps for any machine's runs.

The worker is Dagster's own (`dagster_celery.app`), configured from the same settings the Celery
executor uses (`defs.executors.celery_settings`), which are written as the
`dagster_celery_config` module dagster-celery's app reads at start. The process becomes the
worker (exec), so its id is the worker's.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench_assets.cli.home import bench_home
from bench_assets.defs.executors import CELERY_QUEUE, celery_settings
from bench_assets.errors import BenchInputError


def config_module(settings: dict) -> str:
    """The `dagster_celery_config` module text: Celery's lowercase settings, one per line."""
    lines = [f"broker_url = {settings['broker']!r}", f"result_backend = {settings['backend']!r}"]
    lines += [f"{key} = {value!r}" for key, value in sorted(settings["config_source"].items())]
    return "\n".join(lines) + "\n"


def cmd_worker(args: argparse.Namespace) -> int:
    if not os.environ.get("BENCH_CELERY_BROKER"):
        raise BenchInputError(
            "$BENCH_CELERY_BROKER",
            [
                (
                    None,
                    "BENCH_CELERY_BROKER",
                    "set it to the Celery broker every run and worker shares (redis://host:6379/0)",
                )
            ],
        )
    directory = bench_home() / ".celery" / args.name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dagster_celery_config.py").write_text(config_module(celery_settings()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH")) if p)}
    argv = [
        sys.executable,
        "-m",
        "celery",
        "--app",
        "dagster_celery.app",
        "worker",
        "--queues",
        CELERY_QUEUE,
        "--hostname",
        f"{args.name}@%h",
        "--concurrency",
        str(args.concurrency),
        "--loglevel",
        args.loglevel,
        "--without-gossip",
        "--without-mingle",
    ]
    sys.stdout.flush()
    os.execvpe(sys.executable, argv, env)
    return 0  # not reached: the process is the worker now
