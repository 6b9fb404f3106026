"""Process plumbing in one place: forking and process pools (`runtime.processes`), the garbage
collector and memory release (`runtime.memory`). Domain code asks it to run work and never forks,
pools processes or touches the collector itself (ruff's banned-api rule holds that)."""

from bench_assets.runtime.memory import collector_paused, freeze_heap, give_back_memory, stop_collector
from bench_assets.runtime.processes import (
    ForkedJob,
    WorkerFailed,
    in_processes,
    machine_workers,
    reopen_in_children,
    spawned_pool,
    usable_cores,
    worker_count,
)

__all__ = [
    "ForkedJob",
    "WorkerFailed",
    "collector_paused",
    "freeze_heap",
    "give_back_memory",
    "in_processes",
    "machine_workers",
    "reopen_in_children",
    "spawned_pool",
    "stop_collector",
    "usable_cores",
    "worker_count",
]
