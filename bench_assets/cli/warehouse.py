"""`bench warehouse restore` and `bench warehouse check`: the central warehouse rebuilt from its
durable copies after a loss, or compared with them."""

from __future__ import annotations

import argparse

from bench_assets.cli.help import fit
from bench_assets.cli.runs import bench_resources
from bench_assets.storage.restore import check_warehouse, restore_warehouse


def cmd_warehouse_restore(args: argparse.Namespace) -> int:
    report = restore_warehouse(bench_resources()["duckdb"].warehouse())
    print(fit(report.summary()))
    return 0


def cmd_warehouse_check(args: argparse.Namespace) -> int:
    report = check_warehouse(bench_resources()["duckdb"].warehouse())
    print(fit(report.summary()))
    return 1 if report.differences else 0
