"""`bench reproduce DIR`: a published snapshot folder, re-derived from its own files alone."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_assets.cli.help import fit
from bench_assets.cli.progress import bars_shown
from bench_assets.reproduce.snapshot import reproduce_folder


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Print what was re-derived, what is not reproducible from public data and why, then one line
    per difference and `N differences`; exit 1 on any difference."""
    report = reproduce_folder(Path(args.dir), progress=not args.no_progress and bars_shown())
    print(fit(report.summary()))
    return 1 if report.differences else 0
