"""What `bench --help` and `bench COMMAND --help` print: each command's description and examples,
at most `WIDTH` columns wide.

`BenchParser` is the parser class of `bench` and, through argparse's `add_subparsers`, of every
command under it: a command whose `add_parser` call gives no `description`/`epilog` takes them
from `HELP` by its name ("bench snapshot add"), so the texts live here, beside one another, and
the parser in `cli.main` stays the list of commands and options.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

WIDTH = 100  # the widest line any `bench` command prints


def package_version() -> str:
    """The installed package's version (its metadata, as pip recorded it)."""
    try:
        return version("bench")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def fit(text: str, width: int = WIDTH, indent: str = "  ") -> str:
    """Each line of `text` longer than `width` wrapped at spaces, its continuation lines indented
    by `indent` beyond the line's own indentation (a word longer than the width stays whole)."""
    out = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(
            line.strip(),
            width,
            initial_indent=lead,
            subsequent_indent=lead + indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(out)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written (they are written to fit), everything else wrapped to
    the terminal, never wider than `WIDTH`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        width = width or min(shutil.get_terminal_size().columns, WIDTH) - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class BenchParser(argparse.ArgumentParser):
    """An argument parser whose help comes from `HELP` (unless given) and fits `WIDTH` columns;
    its sub-commands are listed as COMMAND (a brace list of every name would not fit)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        description, examples = HELP.get(self.prog, (None, None))
        self.description = self.description or description
        self.epilog = self.epilog or (examples and "examples:\n" + examples)

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("metavar", "COMMAND")
        return super().add_subparsers(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, fit(f"{self.prog}: error: {message}") + "\n")


def _examples(*lines: str) -> str:
    return "\n".join(f"  {line}" for line in lines)


# command name -> (description, examples); each line at most WIDTH - 2 columns
HELP: dict[str, tuple[str, str]] = {
    "bench": (
        """\
Reproducible benchmark of web-search and page-extraction APIs: run a snapshot through Dagster,
check and publish it, review it with the vendors. Works on the bench home ($BENCH_HOME, else the
current directory); reads .env there. Reference: docs/cli.md.""",
        _examples(
            "bench demo                                 # the whole demo snapshot, simulated",
            "bench rescore web_search-2026-q3           # re-derive every published figure",
            "bench reproduce data/publish/web_search-2026-q3",
            "bench demo --help                          # a command's options and examples",
        ),
    ),
    "bench demo": (
        """\
Run a whole snapshot through Dagster on the embedded simulator and print the leaderboard, the
pairs the paired tests tell apart, and where the site is. Steps: start the simulator, the golden
stages, every vendor partition (N at a time, each line as it finishes) beside a simulated 30-day
sentinel cycle, agent trials, then the leaderboard and the site. Step lines go to stderr with a
progress bar on a terminal ($BENCH_PROGRESS=1 forces it, 0 turns it off); the board to stdout.""",
        _examples(
            "bench demo",
            "bench demo --workers 2",
            "bench demo --quarters 3                    # three quarters, each drawn from the last",
            "BENCH_HOME=/tmp/try bench demo --snapshot web_search-2026-q3",
        ),
    ),
    "bench rescore": (
        """\
Re-derive every score, aggregate and published file of SNAPSHOT from the archived raw responses
(no vendor is called, nothing is written) and compare them with what was stored and published.
One line per difference; exit 1 on any. Progress as in `bench demo`.""",
        _examples("bench rescore web_search-2026-q3", "bench rescore web_search-2026-q3 > rescore.txt"),
    ),
    "bench reproduce": (
        """\
Re-derive every public verdict and figure of a published snapshot folder from its own files
alone (no warehouse, no split key, no network). Prints what is not reproducible and why, one
line per difference and `N differences`; exit 1 on any.""",
        _examples(
            "bench reproduce data/publish/web_search-2026-q3",
            "bench reproduce ~/Downloads/web_search-2026-q3 --no-progress",
        ),
    ),
    "bench estimate": (
        """\
Print the expected billed spend per vendor of SNAPSHOT before anything is called: calls (golden
rows and the holdout's decoys) x each adapter's billing rule x the manifest's pinned prices,
beside each vendor's spend ceiling.""",
        _examples("bench estimate web_search-2026-q3", "bench estimate registry_search-2026-q4 --json"),
    ),
    "bench preflight": (
        """\
Before a live run: one cheapest documented call per vendor of SNAPSHOT (archived, inside its
spend ceiling). Reports whether the key was accepted, the endpoint reachable and the answer in
the documented shape, and the credits left; exit 1 with one line per problem.""",
        _examples(
            "bench preflight registry_search-2026-q4",
            "bench preflight registry_search-2026-q4 --vendor exa --vendor brave --recheck",
            "bench preflight web_search-2026-q3 --json",
        ),
    ),
    "bench simulator": (
        """\
Run the local vendor simulator in the foreground: each vendor's real API shape on 127.0.0.1,
backed by a planted corpus. Prints one line per vendor with its base URLs.""",
        _examples("bench simulator", "bench simulator --port 9000 --vendor-ports 0"),
    ),
    "bench snapshot": (
        "Manage snapshot partitions: register a snapshot, or remove one that was never published.",
        _examples("bench snapshot add web_search-2026-q3", "bench snapshot remove web_search-2026-q4"),
    ),
    "bench snapshot add": (
        """\
Validate data/snapshots/SNAPSHOT_ID/manifest.yaml and register SNAPSHOT_ID as a partition of
the Dagster `snapshots` dimension. Runs nothing.""",
        _examples("bench snapshot add web_search-2026-q3"),
    ),
    "bench snapshot remove": (
        """\
Take a snapshot that was never published out of the home: its partition, its warehouse rows
and its files (moved into the private store's removed/ folder, not deleted).""",
        _examples("bench snapshot remove web_search-2026-q4"),
    ),
    "bench errata": (
        "Corrections to a published snapshot, each published as a new version.",
        _examples("bench errata apply web_search-2026-q3 E1"),
    ),
    "bench errata apply": (
        """\
Apply erratum ERRATUM_ID of data/snapshots/SNAPSHOT/errata.yaml: re-run its vendor partition
into a new version SNAPSHOT-eN, recompute the aggregates and publish it. The corrected version
is never touched.""",
        _examples("bench errata apply web_search-2026-q3 E1"),
    ),
    "bench review": (
        "Vendor review: write the packets, check the publication gate, file the vendors' replies.",
        _examples("bench review send web_search-2026-q3", "bench review status web_search-2026-q3"),
    ),
    "bench review send": (
        """\
Write every vendor's review packet to data/private/review/SNAPSHOT/, dated today. This freezes
the snapshot. Then prints the review status.""",
        _examples("bench review send web_search-2026-q3"),
    ),
    "bench review status": (
        """\
The snapshot's lifecycle state and, once frozen, the review gate per vendor (when its packet
was sent, the business days elapsed, the day it opens). Writes nothing; exit 1 while closed.""",
        _examples("bench review status web_search-2026-q3", "bench review status web_search-2026-q3 --on 2026-08-01"),
    ),
    "bench review reply": (
        """\
File a vendor's reply byte for byte. Before publication it is published with the snapshot;
after, at once as a new version SNAPSHOT-eN (nothing re-run).""",
        _examples("bench review reply web_search-2026-q3 exa reply.md --received-on 2026-07-20"),
    ),
    "bench rotation": (
        "Plan the next quarter's rotation of golden rows.",
        _examples("bench rotation plan web_search-2026-q3"),
    ),
    "bench rotation plan": (
        """\
Write next quarter's rotation plan (retirements and replacements) to
data/private/rotation/SNAPSHOT.yaml for review. Nothing is rewritten.""",
        _examples("bench rotation plan web_search-2026-q3"),
    ),
    "bench quarter": (
        "The quarterly cycle: draw the next quarter's snapshot from the last one.",
        _examples("bench quarter next web_search-2026-q3"),
    ),
    "bench quarter next": (
        """\
Draw the next quarter from SNAPSHOT in one step: retire about 25 % of each cohort (more where
the vendors' scores saturated), draw the replacements with their content from the candidate
pool, write the next golden set (private) and manifest (for review), and register the next
snapshot. Refuses, naming each stratum and its shortfall, when a pool falls short. Reference:
docs/quarters.md.""",
        _examples("bench quarter next web_search-2026-q3    # writes web_search-2026-q4"),
    ),
    "bench mcp": (
        """\
An MCP server over one published snapshot's files (data/publish/<snapshot>/), never the
warehouse or the holdout: the tools recommend, vendor_figures and row_verdicts, on stdio (what
a desktop client launches) or on streamable HTTP at http://HOST:PORT/mcp. Reference:
docs/mcp.md.""",
        _examples(
            "bench mcp                                  # stdio, the newest published snapshot",
            "bench mcp --snapshot web_search-2026-q3 --http --port 8780",
            "bench mcp --dir ./downloaded/web_search-2026-q3",
        ),
    ),
    "bench warehouse": (
        "The central warehouse: restore it after a loss, or check it against what a restore rebuilds.",
        _examples("bench warehouse check", "bench warehouse restore"),
    ),
    "bench warehouse restore": (
        """\
Rebuild a lost, unreadable or rolled-back warehouse from the custody journal and the partition
archives or the lake. Nothing is fetched; an unreadable file is moved aside, never deleted; a
healthy warehouse is never replaced.""",
        _examples("bench warehouse restore", "BENCH_WAREHOUSE=/srv/bench/bench.duckdb bench warehouse restore"),
    ),
    "bench warehouse check": (
        "Compare every table of the warehouse with what a restore would rebuild; exit 1 on differences.",
        _examples("bench warehouse check"),
    ),
    "bench worker": (
        """\
A Celery worker executing pipeline steps of runs launched anywhere; needs $BENCH_CELERY_BROKER
(deploy/README.md).""",
        _examples(
            "BENCH_CELERY_BROKER=redis://127.0.0.1:6379/0 bench worker",
            "bench worker --name fetch-1 --concurrency 4 --loglevel WARNING",
        ),
    ),
}
