"""The `bench` command line: its parser, and the dispatch to each command's module.

A command's module is imported only when that command runs (`COMMANDS`): `bench --help` and a
mistyped argument answer at once instead of first loading Dagster and the pipeline.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from contextlib import nullcontext
from pathlib import Path

from dotenv import load_dotenv

from bench_assets.cli.help import BenchParser, fit, package_version
from bench_assets.cli.home import bench_home, warehouse_file
from bench_assets.cli.mcp import add_mcp_command
from bench_assets.cli.progress import shown_path, step
from bench_assets.cli.quarter import add_quarter_commands
from bench_assets.cli.run_lock import snapshot_run
from bench_assets.errors import BenchError, BenchInputError
from bench_assets.manifest import SNAPSHOT_ID_PATTERN

DEMO_SNAPSHOT = "web_search-2026-q3"
LONG_RUNNING = ("demo:cmd_demo", "snapshot:cmd_rescore")  # their steps are shown (`cli.progress`)


def snapshot_id_arg(text: str) -> str:
    """A well-formed snapshot id (its manifest may be gone: `bench snapshot remove` cleans up after that too)."""
    if not re.match(SNAPSHOT_ID_PATTERN, text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a snapshot id (like web_search-2026-q3: {SNAPSHOT_ID_PATTERN})"
        )
    return text


def snapshot_arg(text: str) -> str:
    """A snapshot id argument: well-formed, and with a manifest under data/snapshots/ (checked before anything runs)."""
    snapshot_id_arg(text)
    snapshots = bench_home() / "data" / "snapshots"
    if not (snapshots / text / "manifest.yaml").exists():
        known = sorted(p.parent.name for p in snapshots.glob("*/manifest.yaml"))
        raise argparse.ArgumentTypeError(
            f"unknown snapshot {text!r}: no {shown_path(snapshots / text / 'manifest.yaml')} (known: {', '.join(known) or 'none'})"
        )
    return text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def port_arg(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535)")
    return value


def env_positive_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as exc:
        raise BenchInputError(f"${name}", [(None, name, str(exc))]) from None


def build_parser() -> argparse.ArgumentParser:
    parser = BenchParser(prog="bench")  # every command's description and examples: cli.help
    parser.add_argument("--version", action="version", version=f"bench {package_version()}")
    sub = parser.add_subparsers(dest="command_name", required=True)
    demo = sub.add_parser("demo", help="run a whole snapshot on the embedded simulator and print the leaderboard")
    demo.add_argument("--snapshot", type=snapshot_arg, default=DEMO_SNAPSHOT)
    demo.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="vendor partitions fetched in parallel processes (default: $BENCH_WORKERS, else one per core that memory allows)",
    )
    demo.add_argument(
        "--quarters",
        type=positive_int,
        default=1,
        help="run N consecutive quarters, each drawn from the one before (`bench quarter next`), its "
        "simulated vendors drifted a little, all published with the index of quarters (default 1)",
    )
    demo.set_defaults(command="demo:cmd_demo", holds="snapshot")
    rescore = sub.add_parser("rescore", help="re-derive every score from archived responses; report differences")
    rescore.add_argument("snapshot", type=snapshot_arg)
    rescore.set_defaults(command="snapshot:cmd_rescore")
    reproduce = sub.add_parser(
        "reproduce",
        help="re-derive every public verdict and figure of a published folder from its files alone; report differences",
    )
    reproduce.add_argument("dir", help="a published snapshot folder, e.g. data/publish/web_search-2026-q3")
    reproduce.add_argument("--no-progress", action="store_true", help="no progress bar")
    reproduce.set_defaults(command="reproduce:cmd_reproduce")
    estimate = sub.add_parser("estimate", help="print the expected billed spend per vendor before anything is called")
    estimate.add_argument("snapshot", type=snapshot_arg)
    estimate.add_argument("--json", action="store_true", help="print the estimate as JSON (one object per vendor)")
    estimate.set_defaults(command="snapshot:cmd_estimate")
    preflight = sub.add_parser(
        "preflight",
        help="before a live run: one cheapest documented call per vendor (archived, inside the spend ceiling); "
        "reports key, credits left, reachability and response shape; exit 1 with a line per problem",
    )
    preflight.add_argument("snapshot", type=snapshot_arg)
    preflight.add_argument("--vendor", action="append", help="only this vendor (repeatable)")
    preflight.add_argument(
        "--recheck", action="store_true", help="call vendors whose archived preflight passed again (billed again)"
    )
    preflight.add_argument(
        "--query", help="the search query sent (default: a generic one; simulated: a planted page's)"
    )
    preflight.add_argument("--url", help="the page an extract call fetches (default https://example.com/)")
    preflight.add_argument("--json", action="store_true", help="print the report as JSON")
    preflight.set_defaults(command="preflight:cmd_preflight")
    simulator = sub.add_parser("simulator", help="run the local vendor simulator")
    simulator.add_argument("--port", type=port_arg, default=8765)
    simulator.add_argument("--host", default="127.0.0.1")
    simulator.add_argument(
        "--vendor-ports",
        type=int,
        default=None,
        help="each vendor API host is also served at the root of its own port, from this one on "
        "(default: --port + 1; 0: any free ports); the URLs are printed at start",
    )
    simulator.set_defaults(command="snapshot:cmd_simulator")
    snapshot = sub.add_parser("snapshot", help="manage snapshot partitions")
    snap_sub = snapshot.add_subparsers(dest="snapshot_command", required=True)
    add = snap_sub.add_parser("add", help="register a snapshot (its manifest must validate) as a Dagster partition")
    add.add_argument("snapshot_id", type=snapshot_arg)
    add.set_defaults(command="snapshot:cmd_snapshot_add")
    remove = snap_sub.add_parser(
        "remove",
        help="remove a snapshot that is not published: its partition, its warehouse rows, and its files "
        "(moved into the private store's removed/ folder, not deleted)",
    )
    remove.add_argument("snapshot_id", type=snapshot_id_arg)
    remove.set_defaults(command="snapshot:cmd_snapshot_remove", holds="snapshot_id")
    add_integrity_commands(sub)  # errata, review, rotation
    add_mcp_command(sub)
    add_quarter_commands(sub, snapshot_arg)  # quarter next (bench_assets/cli/quarter.py)
    warehouse = sub.add_parser("warehouse", help="the central warehouse: restore it after a loss, or check it")
    warehouse_sub = warehouse.add_subparsers(dest="warehouse_command", required=True)
    restore = warehouse_sub.add_parser(
        "restore",
        help="rebuild a lost, unreadable or rolled-back warehouse from the custody journal and the partition "
        "archives or the lake (nothing is fetched; a healthy warehouse is never replaced)",
    )
    restore.set_defaults(command="warehouse:cmd_warehouse_restore")
    check = warehouse_sub.add_parser(
        "check", help="compare every table with what a restore would rebuild (exit 1 on differences)"
    )
    check.set_defaults(command="warehouse:cmd_warehouse_check")
    worker = sub.add_parser(
        "worker", help="a Celery worker executing pipeline steps (needs $BENCH_CELERY_BROKER; deploy/README.md)"
    )
    worker.add_argument("--name", default="bench", help="the worker's name (its Celery node name is NAME@host)")
    worker.add_argument("--concurrency", type=positive_int, default=2, help="steps executed at once (default 2)")
    worker.add_argument("--loglevel", default="INFO")
    worker.set_defaults(command="worker:cmd_worker")
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Import the command's module (`command` is "module:function" under bench_assets.cli) and run it.
    A command that runs a snapshot (`holds`: the argument naming it) holds it first, before anything
    is imported or started, so a second run of the same snapshot is refused at once (`cli.run_lock`)."""
    module, function = args.command.split(":")
    holds = getattr(args, "holds", None)
    with snapshot_run(warehouse_file(), getattr(args, holds), command_name(args)) if holds else nullcontext():
        # the import takes seconds (Dagster, the pipeline): a long command says so at once
        with step(f"{command_name(args)}: loading the pipeline") if args.command in LONG_RUNNING else nullcontext():
            run = getattr(importlib.import_module(f"bench_assets.cli.{module}"), function)
        return int(run(args))


def command_name(args: argparse.Namespace) -> str:
    """The command as typed, without its arguments: "bench demo", "bench errata apply"."""
    words = [args.command_name, *(getattr(args, f"{args.command_name}_command", None) or "").split()]
    return " ".join(["bench", *words])


def add_integrity_commands(sub: argparse._SubParsersAction) -> None:
    errata = sub.add_parser("errata", help="corrections to a published snapshot, as new versions")
    errata_sub = errata.add_subparsers(dest="errata_command", required=True)
    apply = errata_sub.add_parser(
        "apply", help="re-run an erratum's vendor partition into a new version and publish it"
    )
    apply.add_argument("snapshot")
    apply.add_argument("erratum_id")
    apply.set_defaults(command="review:cmd_errata_apply", holds="snapshot")

    review = sub.add_parser("review", help="vendor review: packets, the publication gate, replies")
    review_sub = review.add_subparsers(dest="review_command", required=True)
    send = review_sub.add_parser("send", help="write every vendor's review packet (freezes the snapshot)")
    send.add_argument("snapshot")
    send.set_defaults(command="review:cmd_review_send", on=None, holds="snapshot")
    status = review_sub.add_parser("status", help="lifecycle state and the review gate (exit 1 while it is closed)")
    status.add_argument("snapshot")
    status.add_argument("--on", help="evaluate the gate on this date (YYYY-MM-DD); default today")
    status.set_defaults(command="review:cmd_review_status")
    reply = review_sub.add_parser(
        "reply",
        help="store a vendor's reply verbatim (published, linked from its row; after publication, as a new version)",
    )
    reply.add_argument("snapshot")
    reply.add_argument("vendor")
    reply.add_argument("file")
    reply.add_argument("--received-on", help="date received (YYYY-MM-DD); default today")
    reply.set_defaults(command="review:cmd_review_reply", holds="snapshot")

    rotation = sub.add_parser("rotation", help="plan the next quarter's rotation")
    rotation_sub = rotation.add_subparsers(dest="rotation_command", required=True)
    plan = rotation_sub.add_parser("plan", help="write the reviewable rotation plan (retirements and replacements)")
    plan.add_argument("snapshot")
    plan.set_defaults(command="review:cmd_rotation_plan", holds="snapshot")


def load_env_file() -> list[Path]:
    """Read `.env` from the current directory, then from the bench home ($BENCH_HOME, which the
    first may set), into the environment, never over a variable already set (the environment
    wins), each value as written (no `${...}` expansion, which would rewrite a key holding it).
    Nothing is printed: a key's value never reaches the terminal or a log. Returns the files read."""
    read: list[Path] = []
    for where in (Path.cwd, bench_home):  # called in turn: the home may come from the first file
        path = where() / ".env"
        if path not in read and path.is_file():
            load_dotenv(path, override=False, interpolate=False)
            read.append(path)
    return read


def main(argv: list[str] | None = None) -> int:
    load_env_file()
    args = build_parser().parse_args(argv)
    try:
        return run_command(args)
    except BenchInputError as exc:
        print(fit(f"bench: bad input:\n{exc}"), file=sys.stderr)
        return 2
    except BenchError as exc:
        print(fit(f"bench: {exc}"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
