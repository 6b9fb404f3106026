"""Asset checks scoped to the partition their asset materialized, and their results.

The checks run inside their asset's step (`check_specs`), so every materialization is checked as
it is written, in the same run, with no second pass over the warehouse. Each check carries its
asset's partitions definition, so a result belongs to one snapshot x vendor (or snapshot)
partition and the UI shows each partition's own status: a failed check of one vendor is not hidden
by another vendor's passing one. What the checks assert is in `aggregate.checks`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import dagster as dg

if TYPE_CHECKING:
    from bench_assets.aggregate.checks import Finding


def partition_check(
    name: str, asset: str, partitions_def: dg.PartitionsDefinition, description: str, blocking: bool = True
) -> dg.AssetCheckSpec:
    """A check of `asset` per partition of `partitions_def` (the asset's own), blocking: a failure
    stops what depends on the asset in the same run (no scores of incomplete evidence, no
    publication of a wrong figure). Dagster 1.13 calls partitioned checks a preview and warns
    each time the definitions load (in every process of `make dev`); the warning is for this one
    call, and not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(
            name, asset=asset, description=description, blocking=blocking, partitions_def=partitions_def
        )


def check_result(name: str, finding: Finding) -> dg.AssetCheckResult:
    """A finding of `aggregate.checks` as the result of the asset's check `name` (a failure is an
    error: the figures or the evidence behind them are wrong)."""
    return dg.AssetCheckResult(
        check_name=name,
        passed=finding.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=finding.description,
        metadata=finding.metadata,
    )
