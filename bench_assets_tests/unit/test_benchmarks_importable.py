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
