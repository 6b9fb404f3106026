"""Every module of benchmarks/ imports: a benchmark is run by hand, rarely, so a module it imports
that moved (a test helper, a renamed function) would otherwise be found only by the next person who
runs it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import benchmarks

MODULES = sorted(f"benchmarks.{m.name}" for m in pkgutil.iter_modules(benchmarks.__path__))


def test_the_benchmarks_are_found():
    assert {"benchmarks.run_all", "benchmarks.distributed_bench", "benchmarks.scale_bench"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_a_benchmark_module_imports(module):
    importlib.import_module(module)


def test_the_machines_speed_is_taken_by_the_same_fixed_work_in_a_child():
    """The yardstick every result records (`common.machine()`: a fixed piece of work's CPU seconds,
    taken in a child interpreter); its answers show the work is the same on every machine and run."""
    from benchmarks.yardstick import measure_in_child

    taken = measure_in_child(repeats=1)
    assert taken is not None and taken["repeats"] == 1
    assert taken["answers"] == {"json_and_urls": 60000, "sha256": 192, "duckdb": 9973, "pandas": 5000}
    assert taken["seconds"] == pytest.approx(sum(taken["parts_seconds"].values()), abs=0.01)
    assert all(seconds > 0 for seconds in taken["parts_seconds"].values())
