"""`bench demo`'s one pool of worker processes: the simulated sentinel cycle holds one of its slots
while it runs, so the demo never has more worker processes than `--workers` (each holds the whole
code location: a process more was some 250 MiB more at the peak; benchmarks/README.md, Scale)."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from bench_assets.adapters.base import Capability
from bench_assets.cli.demo import VendorQueue
from bench_assets.cli.snapshot import golden_rows_for
from bench_assets.golden.rows import capability_of
from bench_assets.manifest import load_manifest

REPO = Path(__file__).parents[2]
SNAPSHOT = "web_search-2026-q3"


class RecordingPool:
    """Takes submissions as a pool would and keeps them pending."""

    def __init__(self) -> None:
        self.submitted: list[tuple[Any, ...]] = []

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        self.submitted.append(args)
        return Future()


def golden_calls() -> Counter[Capability]:
    return Counter(capability_of(r) for r in golden_rows_for(SNAPSHOT))


@pytest.fixture
def manifest(monkeypatch):
    monkeypatch.setenv("BENCH_HOME", str(REPO))  # the shipped demo manifest and its planted rows
    return load_manifest(REPO / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")


def test_the_sentinel_cycle_holds_a_slot_until_it_ends_then_a_vendor_takes_it(manifest):
    pool, cycle = RecordingPool(), Future()
    queue = VendorQueue(pool, SNAPSHOT, manifest, 2, golden_calls(), cycle)
    queue.start()
    assert len(pool.submitted) == 1  # the cycle and one vendor partition: two processes
    queue.finished(next(iter(queue.running)))
    assert len(pool.submitted) == 2 and len(queue.running) == 1  # a vendor's slot passes to the next
    cycle.set_result((True, 1.0, "done"))
    queue.cycle_finished()
    assert len(queue.running) == 2  # the cycle's slot to the vendors
    assert len({vendor for _, vendor in pool.submitted}) == len(pool.submitted)  # none twice


def test_without_a_cycle_or_once_it_has_ended_every_slot_is_a_vendors(manifest):
    for cycle in (None, Future()):
        if cycle is not None:
            cycle.set_result((True, 1.0, "done"))
        pool = RecordingPool()
        VendorQueue(pool, SNAPSHOT, manifest, 2, golden_calls(), cycle).start()
        assert len(pool.submitted) == 2


def test_one_worker_still_runs_the_vendors_after_the_cycle(manifest):
    pool, cycle = RecordingPool(), Future()
    queue = VendorQueue(pool, SNAPSHOT, manifest, 1, golden_calls(), cycle)
    queue.start()
    assert len(pool.submitted) == 1  # queued behind the cycle in the one process
    cycle.set_result((True, 1.0, "done"))
    queue.cycle_finished()
    assert len(queue.running) == 1
