"""Dagster definitions, one concern per module; loaded by `bench_assets.definitions`."""
