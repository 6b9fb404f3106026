"""Entry point of the Dagster code location: everything under `bench_assets/defs`."""

from pathlib import Path

import dagster as dg

from bench_assets.defs import agent_ready, aggregate, fetch, golden, publish, review, score, sentinels, snapshots, split
from bench_assets.defs.executors import run_executor

ASSET_MODULES = (snapshots, golden, split, fetch, score, agent_ready, sentinels, aggregate, publish, review)


@dg.definitions
def defs() -> dg.Definitions:
    # Steps run in their run's process, or on Celery workers with $BENCH_CELERY_BROKER (defs/executors.py).
    return dg.Definitions.merge(
        dg.load_from_defs_folder(path_within_project=Path(__file__).parent / "defs"),
        dg.Definitions(executor=run_executor()),
    )


def unbound_assets(*names: str) -> list[dg.AssetsDefinition]:
    """The asset definitions themselves, without the location's resources bound, for
    `dg.materialize(..., resources=...)` in the CLI and the tests."""
    by_name = {
        a.key.to_user_string(): a for m in ASSET_MODULES for a in vars(m).values() if isinstance(a, dg.AssetsDefinition)
    }
    return [by_name[n] for n in names]
