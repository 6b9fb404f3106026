"""The one place where the project's errors become Dagster failures.

Core code raises `bench_assets.errors.BenchError` (bad input naming file, line and field; a stage
not ready; a published snapshot; a holdout leak); an asset wrapped in `reports_bench_errors` fails
its step with that message as a `dg.Failure`, its details as metadata, and no stack trace.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import dagster as dg

from bench_assets.errors import BenchError

F = TypeVar("F", bound=Callable[..., Any])


def as_failure(exc: BenchError) -> dg.Failure:
    """`exc` as a step failure: its message, and its details (markdown) as metadata."""
    return dg.Failure(description=str(exc), metadata={k: dg.MetadataValue.md(v) for k, v in exc.details.items()})


def reports_bench_errors(fn: F) -> F:
    """Turn a BenchError raised by the asset (or anything it calls) into a dg.Failure; an asset that
    yields its results (a check result before its failure) is wrapped as a generator."""

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from fn(*args, **kwargs)
            except BenchError as exc:
                raise as_failure(exc) from None

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BenchError as exc:
            raise as_failure(exc) from None

    return wrapper  # type: ignore[return-value]
