"""How fast this machine is now: a fixed piece of work timed, so figures from different hours compare.

    python -m benchmarks.yardstick            # prints the yardstick's seconds and its parts
    python -m benchmarks.yardstick --json     # the same as JSON (what `common.machine()` records)

The development VM's speed moves by a factor of two from one day to another and by a third within
hours, with the same code and versions (benchmarks/README.md, "The machine's speed"). A wall time or
a CPU figure alone then says nothing about the code; next to the yardstick taken in the same hour it
does, to the yardstick's own spread. Every result file records it (`common.machine()`:
`machine.yardstick`), and `suite_cpu` takes it again when the run ends.

The work is what the pipeline spends its CPU on, in miniature and always the same: vendor-like JSON
bodies parsed and their URLs split and lowered in Python, bytes hashed, a DuckDB aggregate on one
thread, a pandas group-by. None of it is bench's own code, so a change to bench never moves it.
Each part is timed by the process's CPU, the best of `repeats`, and the parts are summed. It runs in
a process of its own (`measure_in_child`) so the benchmark that records it imports nothing for it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from benchmarks.common import best_of

REPEATS = 3


def _bodies(count: int = 6_000) -> list[str]:
    """Search-API-like JSON bodies, ten results each, always the same (a seeded generator)."""
    rng = random.Random(20261129)
    words = [f"w{n}" for n in range(500)]
    bodies = []
    for n in range(count):
        results = [
            {
                "url": f"https://Example{rng.randrange(300)}.org/{'/'.join(rng.choices(words, k=3))}?q={n}#top",
                "title": " ".join(rng.choices(words, k=8)),
                "snippet": " ".join(rng.choices(words, k=40)),
                "score": rng.random(),
            }
            for _ in range(10)
        ]
        bodies.append(json.dumps({"query": f"query {n}", "results": results}))
    return bodies


def parse_bodies(bodies: list[str]) -> int:
    """Parse every body, split and lower every result URL, count the distinct hosts and paths."""
    seen = set()
    for body in bodies:
        for result in json.loads(body)["results"]:
            parts = urlsplit(result["url"])
            seen.add((parts.netloc.lower(), parts.path.rstrip("/")))
    return len(seen)


def hash_bytes(blocks: int = 512) -> int:
    """SHA-256 over `blocks` MiB."""
    digest = hashlib.sha256()
    block = bytes(range(256)) * 4096
    for _ in range(blocks):
        digest.update(block)
    return digest.digest()[0]


def duckdb_aggregate(rows: int = 20_000_000) -> int:
    """A group-by over generated rows in DuckDB, on one thread."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    try:
        (groups,) = con.execute(
            f"SELECT count(*) FROM (SELECT i % 9973 AS k, sum(i * 7 % 101) AS s, count(DISTINCT i % 777) AS d "
            f"FROM range({rows}) t(i) GROUP BY k)"
        ).fetchall()[0]
        return int(groups)
    finally:
        con.close()


def pandas_groupby(rows: int = 1_000_000) -> int:
    """A frame built, grouped and sorted by a string key in pandas."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(20261129)
    frame = pd.DataFrame({"key": rng.integers(0, 5_000, rows).astype(str), "value": rng.random(rows)})
    grouped = frame.groupby("key")["value"].agg(["mean", "count"]).sort_values("mean")
    return len(grouped)


def measure(repeats: int = REPEATS) -> dict[str, Any]:
    """The yardstick: each part's best CPU seconds over `repeats` runs, their sum, and each part's
    answer (which proves the work was the same work)."""
    import duckdb  # imported before timing: the parts time work, not imports
    import pandas  # noqa: F401

    bodies = _bodies()
    parts: dict[str, Callable[[], Any]] = {
        "json_and_urls": lambda: parse_bodies(bodies),
        "sha256": hash_bytes,
        "duckdb": duckdb_aggregate,
        "pandas": pandas_groupby,
    }
    seconds, answers = {}, {}
    for name, work in parts.items():
        seconds[name], answers[name] = best_of(work, repeats, time.process_time)
    return {
        "seconds": round(sum(seconds.values()), 3),
        "parts_seconds": {k: round(v, 3) for k, v in seconds.items()},
        "answers": answers,
        "repeats": repeats,
        "duckdb": duckdb.__version__,
    }


def measure_in_child(repeats: int = REPEATS) -> dict[str, Any] | None:
    """`measure` in a fresh interpreter (nothing imported into the caller); None if it fails."""
    try:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.yardstick", "--json", "--repeats", str(repeats)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return json.loads(out.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:  # the result records none, and says why here
        detail = getattr(exc, "stderr", None) or exc
        print(f"yardstick: not taken ({str(detail).strip()[-300:]})", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = measure(args.repeats)
    if args.json:
        print(json.dumps(result))
    else:
        parts = ", ".join(f"{k} {v} s" for k, v in result["parts_seconds"].items())
        print(f"yardstick {result['seconds']} s of CPU (best of {args.repeats}: {parts})")


if __name__ == "__main__":
    main()
