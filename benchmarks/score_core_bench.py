"""The per-row scoring core on a kept home: `score_partition` per vendor, CPU seconds in-process.

    python -m benchmarks.score_core_bench --home DIR [--vendors exa,brave] [--repeat 3]
        [--dump OUT | --compare OUT] [--failures] [--profile DIR]

A home kept by the scale benchmark (`run_all scale --keep DIR`, then DIR/<size>) holds a whole
snapshot: golden rows, the split and every vendor's archived raw responses. Each vendor is scored
in a process of its own (as `vendor_scores` is: no cache warmed by another vendor's pages), its raw
frame, golden rows and split read once, untimed; `score_partition` is then timed with
`time.process_time` (CPU, not wall: the machine is shared), best of `--repeat` runs, the first of
which is also reported; every run starts with scoring's caches cleared. Per response means per
archived attempt of the partition (decoys and retries included: everything `score_partition` reads).

`--failures` scores a copy of each archive with failures planted (error statuses, transport errors,
challenge pages, a malformed body, attempts retried after a 503), so the comparison covers them too.
`--dump OUT` writes each vendor's (row_scores, response_results) frames as pickles; `--compare OUT`
checks the frames computed now against them, exactly (dtypes, values, the bytes of every float),
and exits 1 on any difference. `--profile DIR` writes `<vendor>.prof` (cProfile of one more run).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

SNAPSHOT = "web_search-2026-q3"


def _frames_differ(name: str, before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """Every way `after` differs from `before`: columns, dtypes, index, or any cell (floats by their bytes)."""
    if list(before.columns) != list(after.columns):
        return [f"{name}: columns {list(before.columns)} != {list(after.columns)}"]
    problems = [
        f"{name}.{c}: dtype {before[c].dtype} != {after[c].dtype}"
        for c in before.columns
        if str(before[c].dtype) != str(after[c].dtype)
    ]
    if len(before) != len(after) or not before.index.equals(after.index):
        return [*problems, f"{name}: index differs ({len(before)} vs {len(after)} rows)"]
    for column in before.columns:
        for i, (x, y) in enumerate(zip(before[column].tolist(), after[column].tolist())):
            if not _same(x, y):
                problems.append(f"{name}.{column}[{i}] (row {before.iloc[i].get('row_id')}): {x!r} != {y!r}")
                break
    return problems


def _same(x: Any, y: Any) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, float):
        return x.hex() == y.hex() or (x != x and y != y)  # NaN == NaN here; -0.0 != 0.0
    try:
        return bool(x == y)
    except (TypeError, ValueError):  # pd.NA and friends
        return x is y


# The packages whose memoized functions scoring uses: cleared before every timed run.
CACHED_PACKAGES = ("bench_assets.metrics", "bench_assets.score", "bench_assets.golden", "bench_assets.fetch")


def _clear_caches() -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith(CACHED_PACKAGES):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", "") == name:
                    value.cache_clear()


# What `--failures` plants in a copy of each archive, by row position (every 12th row from an offset):
# the fixture's own archive holds only answered 200s, so these are what exercise classification,
# spend and retries on real bodies. Each is (offset, http_status or None, headers, body, transport error).
CHALLENGE = "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>cf-chl captcha</body></html>"
PLANTED_FAILURES: tuple[tuple[int, int | None, dict[str, str], str | None, str | None], ...] = (
    (0, 429, {"retry-after": "1"}, '{"error": {"code": "RATE_LIMITED", "message": "slow down"}}', None),
    (1, 500, {}, "Internal Server Error", None),
    (2, None, {}, None, "timeout: read timed out after 20 s"),
    (3, None, {}, None, "spend_ceiling_reached"),
    (4, None, {}, None, "ConnectError: connection refused"),
    (5, 403, {"content-type": "text/html"}, CHALLENGE, None),
    (6, 200, {"cf-mitigated": "challenge"}, CHALLENGE, None),
    (7, 402, {}, '{"error": "payment required", "tag": "NO_MORE_CREDITS", "name": "InsufficientBalanceError"}', None),
    (8, 200, {}, "truncated", None),  # the body cut in half: malformed
    (9, 401, {}, '{"message": "invalid key"}', None),
    (10, 404, {}, '{"message": "not found", "code": 1}', None),
)
RETRIED = 11  # rows at this offset were answered on a second attempt, after a 503


def with_failures(raw: pd.DataFrame) -> pd.DataFrame:
    """A copy of `raw` with `PLANTED_FAILURES` and retried attempts planted (deterministic)."""
    out = raw.copy()
    out["http_status"] = out["http_status"].astype("float64")  # a transport error has no status
    retried = []
    for position, index in enumerate(out.index):
        offset = position % 12
        if offset == RETRIED:
            first = out.loc[index].copy()
            first["http_status"], first["body"], first["latency_ms"] = 503.0, "Service Unavailable", float("nan")
            retried.append(first)
            out.loc[index, "attempt"] = int(out.loc[index, "attempt"]) + 1
            continue
        _, status, headers, body, error = PLANTED_FAILURES[offset]
        if (position // 12) % 3 == 0:
            continue  # leave some of every kind answered
        if body == "truncated":
            body = str(out.loc[index, "body"])[: len(str(out.loc[index, "body"])) // 2]
        out.loc[index, "http_status"] = float("nan") if status is None else float(status)
        out.loc[index, "response_headers_json"] = json.dumps(headers) if headers else None
        out.loc[index, "body"] = body
        out.loc[index, "transport_error"] = error
    return pd.concat([out, pd.DataFrame(retried)], ignore_index=True) if retried else out


def one_vendor(
    home: Path,
    vendor: str,
    repeat: int,
    dump: Path | None,
    compare: Path | None,
    profile: Path | None,
    failures: bool = False,
):
    from bench_assets.adapters import get_adapter
    from bench_assets.golden.store import load_golden_rows
    from bench_assets.manifest import load_manifest
    from bench_assets.score.partition import score_partition
    from bench_assets.storage.warehouse import Warehouse

    warehouse = Warehouse(home / "data" / "warehouse" / "bench.duckdb")
    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    rows = load_golden_rows(warehouse, SNAPSHOT)
    split = warehouse.split(SNAPSHOT)
    raw = warehouse.rows("raw_responses", SNAPSHOT, vendor=vendor)
    if failures:
        raw = with_failures(raw)
    adapter = get_adapter(manifest.vendors[vendor].adapter)

    def run() -> tuple[pd.DataFrame, pd.DataFrame]:
        _clear_caches()  # every run starts cold, as the partition's own process does
        return score_partition(SNAPSHOT, vendor, adapter, manifest, rows, split, raw)

    seconds = []
    frames = None
    for _ in range(max(1, repeat)):
        start = time.process_time()
        frames = run()
        seconds.append(time.process_time() - start)
    assert frames is not None
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
        profiler = cProfile.Profile()
        profiler.runcall(run)
        profiler.dump_stats(str(profile / f"{vendor}.prof"))
    problems: list[str] = []
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        (dump / f"{vendor}.pickle").write_bytes(pickle.dumps(frames))
    if compare is not None:
        before = pickle.loads((compare / f"{vendor}.pickle").read_bytes())
        for name, old, new in zip(("row_scores", "response_results"), before, frames):
            problems += _frames_differ(name, old, new)
    return {
        "vendor": vendor,
        "responses": len(raw),
        "rows": len(rows),
        "first_cpu_seconds": round(seconds[0], 4),
        "best_cpu_seconds": round(min(seconds), 4),
        "best_ms_per_response": round(1000 * min(seconds) / max(1, len(raw)), 4),
        "differences": problems[:20],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", required=True)
    parser.add_argument("--vendors", default="")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dump", default="")
    parser.add_argument("--compare", default="")
    parser.add_argument("--profile", default="")
    parser.add_argument("--failures", action="store_true", help="score a copy of each archive with failures planted")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the per-vendor child
    args = parser.parse_args(argv)
    home = Path(args.home).resolve()
    if args.one:
        result = one_vendor(
            home,
            args.vendors,
            args.repeat,
            Path(args.dump) if args.dump else None,
            Path(args.compare) if args.compare else None,
            Path(args.profile) if args.profile else None,
            args.failures,
        )
        print(json.dumps(result))
        return 0
    if args.vendors:
        vendors = [v for v in args.vendors.split(",") if v]
    else:
        import yaml

        manifest = yaml.safe_load((home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
        vendors = sorted(manifest["vendors"])
    results = []
    for vendor in vendors:
        cmd = [sys.executable, "-m", "benchmarks.score_core_bench", "--one", "--home", str(home), "--vendors", vendor]
        cmd += ["--repeat", str(args.repeat)] + (["--failures"] if args.failures else [])
        for flag in ("dump", "compare", "profile"):
            if getattr(args, flag):
                cmd += [f"--{flag}", str(Path(getattr(args, flag)).resolve())]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        results.append(result)
        print(
            f"{vendor:11} {result['responses']:6} responses  first {result['first_cpu_seconds']:7.3f} s  "
            f"best {result['best_cpu_seconds']:7.3f} s  {result['best_ms_per_response']:.4f} ms/response"
            + (f"  DIFFERENCES: {result['differences']}" if result["differences"] else ""),
            flush=True,
        )
    total_seconds = sum(r["best_cpu_seconds"] for r in results)
    total_responses = sum(r["responses"] for r in results)
    print(
        f"{'all':11} {total_responses:6} responses  best {total_seconds:.3f} s  "
        f"{1000 * total_seconds / max(1, total_responses):.4f} ms/response (mean over responses)"
    )
    return 1 if any(r["differences"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
