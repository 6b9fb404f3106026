"""Run the benchmarks; each writes benchmarks/results/<name>.json and prints its figures.

    python -m benchmarks.run_all fetch      # throughput against a 20 req/s limit, 50 ms latency, concurrency 8
    python -m benchmarks.run_all stack      # a fetch's client CPU per request: the engine, its HTTP stack, aiohttp alone
    python -m benchmarks.run_all parallel   # all 12 vendor partitions at once vs the slowest n / rate
    python -m benchmarks.run_all scoring    # hit@k over 1,000,000 result rows vs ranx
    python -m benchmarks.run_all km         # Kaplan–Meier at 100,000 probes vs lifelines
    python -m benchmarks.run_all demo       # `bench demo`: wall time and peak memory
    python -m benchmarks.run_all distributed  # a snapshot: local path vs Celery on 1 and 2 workers
    python -m benchmarks.run_all reproduce [--folder DIR]   # `bench reproduce` on a published folder: bundle size, time
    python -m benchmarks.run_all scale [--sizes 252,2520,12600] [--vendors brave,exa] [--end-to-end]   # the demo at 1x/10x/50x rows, stage by stage (and whole)
    python -m benchmarks.run_all simulator [--pages-per-stratum 700] [--sample 1]   # the simulator under a 12,600-row snapshot's requests
    python -m benchmarks.run_all all        # all of the above but reproduce and scale, one after another
    python -m benchmarks.run_all summary    # the summary table of benchmarks/README.md, from the results files

Figures depend on the machine and on what else runs on it: each result records the load average
when it started. Run them on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.common import RESULTS, machine, write_result


def run_fetch(args) -> dict:
    from benchmarks.fetch_bench import throughput

    return throughput(n=args.requests)


def run_stack(args) -> dict:
    from benchmarks.fetch_bench import http_stack

    return http_stack()


def run_parallel(args) -> dict:
    from benchmarks.fetch_bench import parallel_vendors

    return parallel_vendors()


def run_scoring(args) -> dict:
    from benchmarks.scoring_bench import scoring

    with tempfile.TemporaryDirectory() as tmp:
        return scoring(Path(tmp), n_queries=args.queries, repeats=args.repeats)


def run_km(args) -> dict:
    from benchmarks.km_bench import kaplan_meier

    return kaplan_meier()


def run_demo(args) -> dict:
    from benchmarks.demo_bench import demo

    return demo()


def run_distributed(args) -> dict:
    from benchmarks.distributed_bench import distributed

    return distributed()


def run_reproduce(args) -> dict:
    from benchmarks.reproduce_bench import reproduce

    return reproduce(Path(args.folder) if args.folder else None)


def run_scale(args) -> dict:
    from benchmarks.scale_bench import scale

    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    vendors = [v for v in args.vendors.split(",") if v.strip()] if args.vendors else None
    stages = tuple(x for x in args.profile_stages.split(",") if x)
    keep = Path(args.keep) if args.keep else None
    profile = Path(args.profile) if args.profile else None
    return scale(sizes, vendors, profile, stages, keep, args.end_to_end, args.workers)


def run_simulator(args) -> dict:
    from benchmarks.simulator_bench import simulator

    return simulator(args.pages_per_stratum, args.sample, args.connections)


def reproduce_name(args) -> str:
    """One results file per published folder measured (the demo's, the scale snapshot's, ...)."""
    from benchmarks.reproduce_bench import DEFAULT_FOLDER

    return f"reproduce_{Path(args.folder or DEFAULT_FOLDER).resolve().name}"


BENCHMARKS = {
    "fetch": ("fetch_throughput", run_fetch),
    "stack": ("fetch_http_stack", run_stack),
    "parallel": ("parallel_vendors", run_parallel),
    "scoring": ("scoring_1m", run_scoring),
    "km": ("kaplan_meier_100k", run_km),
    "demo": ("demo_snapshot", run_demo),
    "distributed": ("distributed_snapshot", run_distributed),
    "reproduce": ("reproduce", run_reproduce),  # named per folder (reproduce_name); not in `all`: it needs one
    "scale": ("scale", run_scale),  # also writes scale_<size>.json per size; not in `all`: it takes long
    "simulator": ("simulator", run_simulator),  # about 175,000 requests at the defaults; not in `all`
}
SLOW = ("reproduce", "scale", "simulator")


class _Figures(dict):
    """A result's figures; one an older result file lacks reads as —."""

    def __missing__(self, key: str) -> str:
        return "—"


def summary() -> str:
    def load(name: str) -> dict | None:
        path = RESULTS / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    lines = [
        "| benchmark | figure | target | met | load avg | yardstick |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def row(name: str, figure: str, target: str) -> None:
        r = load(name)
        if r is None:
            return
        load_avg = r["machine"]["load_average_at_start"][0]
        yardstick = (r["machine"].get("yardstick") or {}).get("seconds", "—")  # older results have none
        lines.append(
            f"| {name} | {figure.format_map(_Figures(r['figures']))} | {target} | "
            f"{'yes' if r.get('passed') else 'no'} | {load_avg} | {yardstick} |"
        )

    row(
        "fetch_throughput",
        "{achieved_per_second} req/s = {share_of_limit} of the 20 req/s limit; "
        "{client_cpu_ms_per_request} ms CPU per request; {rate_limited_by_simulator} rate-limited",
        "≥ 0.9 of the limit",
    )
    row(
        "fetch_http_stack",
        "client CPU per request: the fetch engine {engine_cpu_ms_per_request} ms, its HTTP stack alone (httpx on "
        "aiohttp) {httpx_on_aiohttp_cpu_ms_per_request} ms, aiohttp alone {aiohttp_cpu_ms_per_request} ms",
        "—",
    )
    row(
        "parallel_vendors",
        "{wall_seconds} s for 12 vendors = {wall_over_slowest_n_over_rate} × the slowest n / rate "
        "({slowest_vendor}, {slowest_n_over_rate_seconds} s)",
        "≤ 1.2 ×",
    )
    row(
        "scoring_1m",
        "ours {ours_seconds} s (peak {ours_peak_rss_mib} MiB) vs ranx {ranx_seconds} s: "
        "{speedup_vs_ranx} × faster ({speedup_vs_ranx_evaluate_only} × ranx's evaluate alone, its Qrels and Run "
        "already built); same hit rates: {hit_rates_agree_with_ranx}",
        "≥ 5 ×, < 2 GiB",
    )
    row(
        "kaplan_meier_100k",
        "median {ours_km_median_seconds} s, curve {ours_km_estimate_seconds} s vs lifelines "
        "{lifelines_fit_and_median_seconds} s; largest survival difference {max_abs_survival_difference:.1e}",
        "agrees with lifelines",
    )
    for path in sorted(RESULTS.glob("reproduce_*.json")):
        row(
            path.stem,
            "{public_rows} public rows × {vendors} vendors: bundle {bundle_mib} MiB = {bundle_mib_per_1000_public_rows} MiB "
            "per 1,000 public rows ({bundle_kib_per_1000_vendor_responses} KiB per 1,000 vendor responses); "
            "reproduced in {reproduce_wall_seconds} s, peak PSS {peak_tree_pss_mib} MiB, {differences} differences",
            "0 differences",
        )
    for path in sorted(RESULTS.glob("scale_[0-9]*.json"), key=lambda p: int(p.stem.split("_")[1])):
        row(
            path.stem,
            "end to end {end_to_end_wall_seconds} s; {stage_by_stage_wall_seconds} s stage by stage, peak PSS "
            "{peak_tree_pss_mib} MiB ({peak_with_simulator_pss_mib} MiB with the simulator); warehouse {warehouse_bytes:,} B, "
            "site {site_bytes:,} B in {site_html_pages} pages, index page {index_page_bytes:,} B; "
            "slowest page {browser[slowest_load_ms]} ms to load in chromium",
            "< 2 GiB, index < 1 MB, pages < 1 s",
        )
    for path in sorted(RESULTS.glob("rescore_repeats_*.json")):
        row(
            path.stem,
            "bench rescore of {rows:,} rows, run after run: fastest {fastest_wall_seconds} s, median "
            "{median_wall_seconds} s, slowest {slowest_wall_seconds} s; median CPU {median_cpu_seconds} s; "
            "peak PSS {peak_tree_pss_mib} MiB",
            "< 60 s at 12,600",
        )
    row(
        "simulator",
        "{cpu_ms_per_request} ms CPU per request over {requests:,} requests (search {cpu_ms_per_request_by_endpoint[search]}, "
        "extract {cpu_ms_per_request_by_endpoint[extract]}; worst {worst_phase} {worst_phase_cpu_ms_per_request}); "
        "peak RSS {peak_rss_mib} MiB, PSS at end {pss_mib_at_end} MiB; start-up {startup_cpu_seconds} s CPU",
        "≤ 1.5 ms, < 512 MiB",
    )
    row(
        "distributed_snapshot",
        "local {local_seconds} s; Celery 1 worker {celery_1_worker_seconds} s, 2 workers "
        "{celery_2_workers_seconds} s ({speedup_2_over_1_worker} × faster); distributed / local "
        "{distributed_overhead_over_local_2_workers} × (2 workers)",
        "—",
    )
    row(
        "demo_snapshot",
        "{wall_seconds} s wall; peak PSS {peak_tree_pss_mib} MiB (summed RSS {peak_tree_rss_mib} MiB) over "
        "{peak_processes} processes (largest {peak_process_rss_mib} MiB)",
        "PSS < 2 GiB",
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run_all", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("which", choices=[*BENCHMARKS, "all", "summary"])
    parser.add_argument("--folder", help="reproduce: the published folder (default data/publish/web_search-2026-q3)")
    parser.add_argument("--requests", type=int, default=400, help="fetch: requests to send")
    parser.add_argument("--queries", type=int, default=100_000, help="scoring: golden queries (x 10 results)")
    parser.add_argument("--repeats", type=int, default=3, help="scoring: repeats (the best is reported)")
    parser.add_argument("--sizes", default="252,2520", help="scale: golden rows per run, comma-separated")
    parser.add_argument("--vendors", default="", help="scale: only these vendors (default: all twelve)")
    parser.add_argument("--profile", default="", help="scale: write each stage's cProfile statistics under this folder")
    parser.add_argument("--profile-stages", default="", help="scale: profile only these stages (e.g. publication)")
    parser.add_argument("--keep", default="", help="scale: keep each size's home (warehouse, site) under DIR/<size>")
    parser.add_argument(
        "--end-to-end", action="store_true", help="scale: first run each size whole with `bench demo` (its own home)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="scale: `bench demo --workers` for --end-to-end (default: the demo's own, one per core the available "
        "memory holds, as a user gets it)",
    )
    parser.add_argument("--pages-per-stratum", type=int, default=700, help="simulator: its corpus (700: 12,600 rows)")
    parser.add_argument("--sample", type=int, default=1, help="simulator: send every n-th request of each vendor")
    parser.add_argument("--connections", type=int, default=4, help="simulator: concurrent connections")
    args = parser.parse_args(argv)
    if args.which == "summary":
        print(summary())
        return 0
    failed = []
    for key in [k for k in BENCHMARKS if k not in SLOW] if args.which == "all" else [args.which]:
        name, run = BENCHMARKS[key]
        name = reproduce_name(args) if key == "reproduce" else name
        info = machine()
        result = run(args)
        path = write_result(name, {"machine": info, **result})
        print(
            f"{name}: {json.dumps(result['figures'])}\n  -> {path} ({'met' if result.get('passed') else 'NOT met'})",
            flush=True,
        )
        if not result.get("passed"):
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
