"""The demo snapshot at 1x, 10x and 50x its rows, stage by stage: does every stage grow linearly?

Each size runs in a fresh home: the demo manifest with `rows_per_stratum` = size / 6, every
vendor's rate limits raised to 2,000 req/s and its spend ceiling scaled with the rows; the
simulator serves size / 18 golden pages per stratum (`BENCH_SIM_PAGES_PER_STRATUM`) with zero
simulated latency (`BENCH_SIM_LATENCY_SCALE=0`), so the pipeline itself is measured. Every stage
is materialized in a process of its own (`benchmarks.scale_stage`), one after another: its wall
time, CPU (user + system of the process and every child it waited for), peak memory of its
process tree, and the simulator's CPU meanwhile. The sentinel cycle is left out (ten pages
whatever the size). Each process pays Python's and Dagster's start-up (`startup` stage: the same
process doing nothing), included in every stage's figures. After publication the site is opened
in chromium (`benchmarks.site_open`): the leaderboard, the queries' listing, a vendor's page, a
row's page and the largest page, each timed to its `load` event.

Writes `results/scale_<size>.json` per size; the summary returned (written as `results/scale.json`
by run_all) compares every stage with its linear extrapolation from the smallest size.
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import psutil
import yaml

from bench_assets.simulator.server import start_simulator
from benchmarks.common import REPO, machine, run_measured, write_result
from benchmarks.site_open import open_site

SNAPSHOT = "web_search-2026-q3"
DEMO_ROWS = 252
STARTUP_TRIES = 3  # the start-up stage is measured this many times per size (the least is kept)
RAISED_RATE_PER_SECOND = 2000.0
TARGETS = {
    "within_linear": 1.5,  # every stage within 1.5 x its linear extrapolation from the smallest size
    "peak_tree_mib": 2048.0,
    "end_to_end_seconds_12600": 900.0,
    "rescore_seconds_12600": 60.0,
    "index_page_bytes": 1_000_000,
}
GOLDEN = ("snapshot_manifest", "golden_rows", "golden_verifications")
SPLIT = ("query_split", "dead_golden_rows", "decoy_queries")


def _home(tmp: Path, size: int, vendors: list[str] | None) -> tuple[Path, list[str]]:
    """A fresh bench home with the demo's inputs and a manifest scaled to `size` golden rows."""
    home = tmp / "home"
    shutil.copytree(
        REPO / "data",
        home / "data",
        ignore=lambda d, names: [
            n for n in names if Path(d) == REPO / "data" and n in ("private", "publish", "warehouse")
        ],
    )
    if (REPO / "dagster.yaml").exists():
        shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    data["golden"]["rows_per_stratum"] = size // 6
    chosen = vendors or sorted(data["vendors"])
    data["vendors"] = {v: data["vendors"][v] for v in chosen}
    for spec in data["vendors"].values():
        spec["rate_limit_per_second"] = RAISED_RATE_PER_SECOND
        spec["capability_rate_limits"] = dict.fromkeys(spec.get("capability_rate_limits") or {}, RAISED_RATE_PER_SECOND)
        spec["spend_ceiling_usd"] = float(spec.get("spend_ceiling_usd", 25.0)) * max(1.0, size / DEMO_ROWS)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    trials_path = path.with_name("agent_trials.yaml")
    if vendors and trials_path.exists():  # trials of vendors left out would fail `agent_trials`
        trials = yaml.safe_load(trials_path.read_text())
        trials["trials"] = [t for t in trials.get("trials") or [] if t.get("vendor") in chosen]
        trials_path.write_text(yaml.safe_dump(trials, sort_keys=False))
    return home, chosen


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _stage(
    cmd: list[str], env: dict[str, str], home: Path, simulator: psutil.Process, profile: Path | None = None
) -> dict[str, Any]:
    """One command measured: its wall time, CPU (with its children's), the simulator's CPU meanwhile,
    the peak memory (PSS) of its process tree, the target's figure, and the peak with the
    simulator's added: the simulator stands in for the vendors and the web, which a real run does
    not hold in memory, but at 12,600 rows it holds a corpus of 4,200 pages, so both are given."""
    if profile is not None:
        env = {**env, "SCALE_BENCH_PROFILE": str(profile)}
    cpu_before, sim_before = _children_cpu(), sum(simulator.cpu_times()[:2])
    load = round(os.getloadavg()[0], 2)
    measured = run_measured(cmd, env=env, cwd=home, also=(simulator.pid,))
    figures = {
        "wall_seconds": measured["wall_seconds"],
        "cpu_seconds": round(_children_cpu() - cpu_before, 2),
        "simulator_cpu_seconds": round(sum(simulator.cpu_times()[:2]) - sim_before, 2),
        "peak_tree_pss_mib": measured["peak_tree_pss_mib"],
        "peak_with_simulator_pss_mib": measured["peak_with_also_pss_mib"],
        "peak_tree_rss_mib": measured["peak_tree_rss_mib"],
        "peak_breakdown": measured["peak_breakdown"],
        "load_average_1m_before": load,
        "returncode": measured["returncode"],
    }
    if measured["returncode"] != 0:
        figures["output_tail"] = measured["output_tail"][-2000:]
    return figures


def run_size(
    size: int,
    vendors: list[str] | None = None,
    profile_dir: Path | None = None,
    profile_stages: tuple[str, ...] = (),
    keep: Path | None = None,
    end_to_end: bool = False,
    workers: int | None = None,
) -> dict[str, Any]:
    """The demo at `size` golden rows, stage by stage; writes results/scale_<size>.json. With
    `end_to_end`, first the whole snapshot as an operator runs it, `bench demo --workers N`, in a
    home of its own (its wall time is the end-to-end figure). With
    `profile_dir`, every stage run by `scale_stage` also writes `<dir>/<size>/<stage>.prof` (cProfile:
    its figures then include the profiler's overhead); `profile_stages` limits that to those stages.
    With `keep`, the home (warehouse, site, Dagster runs) is copied to `<keep>/<size>` afterwards, so
    one stage can be run again on it (`benchmarks.scale_stage` with BENCH_HOME and DAGSTER_HOME there)."""
    python = sys.executable
    bench = str(Path(python).with_name("bench"))
    started = time.monotonic()
    info = machine()
    sim_env = {
        "BENCH_SIM_LATENCY_SCALE": "0",
        "BENCH_SIM_PAGES_PER_STRATUM": str(max(1, size // 18)),
    }
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{size}-") as tmp:
        whole = _whole_snapshot(Path(tmp) / "whole", size, vendors, sim_env, workers) if end_to_end else None
        if whole is not None:
            print(f"  scale {size}: {'end to end':<22} {whole}", flush=True)
        home, chosen = _home(Path(tmp) / "stages", size, vendors)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_"))}
        env.update(BENCH_HOME=str(home), DAGSTER_HOME=str(home / ".dagster_home"), **sim_env)
        stage = [python, "-m", "benchmarks.scale_stage"]
        stages: dict[str, dict[str, Any]] = {}
        with start_simulator(env=sim_env) as sim:
            env["BENCH_SIMULATOR_URL"] = sim.base_url
            simulator = psutil.Process(sim.pid)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
            plan: list[tuple[str, list[str]]] = [
                ("startup", [*stage, "noop", SNAPSHOT]),
                ("golden_verification", [*stage, "assets", SNAPSHOT, *GOLDEN]),
                ("split", [*stage, "assets", SNAPSHOT, *SPLIT]),
                *((f"fetch:{v}", [*stage, "vendor", SNAPSHOT, v, "vendor_responses"]) for v in chosen),
                *((f"scoring:{v}", [*stage, "vendor", SNAPSHOT, v, "vendor_scores"]) for v in chosen),
                ("aggregation", [*stage, "assets", SNAPSHOT, "agent_trials", "vendor_leaderboard"]),
                ("publication", [*stage, "assets", SNAPSHOT, "published_snapshot"]),
                ("rescore", [bench, "rescore", SNAPSHOT]),
            ]
            for name, cmd in plan:
                if name == "startup":
                    # the fixed cost every stage pays, taken off each before it is compared with
                    # linear growth: the least of three (one measure varies by a second, as much
                    # as a small stage's own work at 252 rows)
                    tries = [_stage(cmd, env, home, simulator, None) for _ in range(STARTUP_TRIES)]
                    stages[name] = {**min(tries, key=lambda t: t["wall_seconds"]), "tries": tries}
                    print(f"  scale {size}: {name:<22} {stages[name]}", flush=True)
                    continue
                prof = (
                    profile_dir / str(size) / f"{name.replace(':', '_')}.prof"
                    if profile_dir and cmd[0] == python and (not profile_stages or name in profile_stages)
                    else None
                )
                stages[name] = _stage(cmd, env, home, simulator, prof)
                print(f"  scale {size}: {name:<22} {stages[name]}", flush=True)
                if stages[name]["returncode"] != 0:
                    break
        site = home / "data" / "publish" / SNAPSHOT
        pages = sorted(site.rglob("*.html")) if site.exists() else []
        sizes = {
            "warehouse_bytes": _tree_bytes(home / "data" / "warehouse"),
            "site_bytes": _tree_bytes(site),
            "site_files": sum(1 for p in site.rglob("*") if p.is_file()) if site.exists() else 0,
            "site_html_pages": len(pages),
            "index_page_bytes": (site / "index.html").stat().st_size if (site / "index.html").exists() else None,
            "largest_html_page": max(((p.stat().st_size, str(p.relative_to(site))) for p in pages), default=None),
            "browser": open_site(site) if site.exists() else None,
        }
        requests = _requests_by_vendor(home)
        if keep is not None:
            kept = keep / str(size)
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(home, kept, symlinks=True)
    for vendor, n in requests.items():
        fetch = stages.get(f"fetch:{vendor}")
        if fetch and n:
            fetch["requests"] = n
            fetch["client_cpu_ms_per_request"] = round(
                1000 * (fetch["cpu_seconds"] - stages["startup"]["cpu_seconds"]) / n, 2
            )
            fetch["simulator_cpu_ms_per_request"] = round(1000 * fetch["simulator_cpu_seconds"] / n, 2)
    fetches = [s for k, s in stages.items() if k.startswith("fetch:")]
    scorings = [s for k, s in stages.items() if k.startswith("scoring:")]
    totals = {
        "fetch_all_vendors": _sum(fetches),
        "scoring_all_vendors": _sum(scorings),
    }
    result = {
        "machine": info,
        "parameters": {
            "golden_rows": size,
            "rows_per_stratum": size // 6,
            "vendors": chosen,
            "rate_limit_per_second": RAISED_RATE_PER_SECOND,
            "simulator": sim_env,
            "stages": "one process each, one after another, the simulator counted in each one's memory",
            "end_to_end": f"bench demo --workers {workers or '(default)'} in a home of its own"
            if end_to_end
            else "not run",
        },
        "figures": {
            "end_to_end": whole,
            "stages": stages,
            "totals": totals,
            "end_to_end_wall_seconds": whole["wall_seconds"] if whole else None,
            "stage_by_stage_wall_seconds": round(sum(s["wall_seconds"] for s in stages.values()), 1),
            "peak_tree_pss_mib": max(
                [s["peak_tree_pss_mib"] for s in stages.values()] + ([whole["peak_tree_pss_mib"]] if whole else []),
                default=0.0,
            ),
            "peak_with_simulator_pss_mib": max(
                [s["peak_with_simulator_pss_mib"] for s in stages.values()]
                + ([whole["peak_with_simulator_pss_mib"]] if whole else []),
                default=0.0,
            ),
            "peak_tree_rss_mib": max((s["peak_tree_rss_mib"] for s in stages.values()), default=0.0),
            **sizes,
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "bench_wall_seconds": round(time.monotonic() - started, 1),
        },
        "passed": all(s["returncode"] == 0 for s in stages.values())
        and len(stages) == len(plan)
        and (whole is None or whole["returncode"] == 0),
    }
    write_result(f"scale_{size}", result)
    return result


def _whole_snapshot(
    tmp: Path, size: int, vendors: list[str] | None, sim_env: dict[str, str], workers: int | None
) -> dict[str, Any]:
    """`bench demo` at `size` rows in a fresh home, as an operator runs it: the demo starts its own
    simulator (with `sim_env`) and stops it once the vendors are done. Wall time, CPU of the
    command and every child (the simulator's included), and the peak memory (PSS) of the whole
    tree, the simulator included. `workers` None: the demo's own default (one per core the
    available memory holds)."""
    home, _ = _home(tmp, size, vendors)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_"))}
    env.update(BENCH_HOME=str(home), DAGSTER_HOME=str(home / ".dagster_home"), **sim_env)
    bench = str(Path(sys.executable).with_name("bench"))
    cpu_before = _children_cpu()
    load = round(os.getloadavg()[0], 2)
    measured = run_measured([bench, "demo", *(["--workers", str(workers)] if workers else [])], env=env, cwd=home)
    figures = {
        "wall_seconds": measured["wall_seconds"],
        "cpu_seconds": round(_children_cpu() - cpu_before, 2),
        "peak_tree_pss_mib": measured["peak_tree_pss_mib"],
        "peak_with_simulator_pss_mib": measured["peak_tree_pss_mib"],  # the demo's own simulator is in its tree
        "peak_tree_rss_mib": measured["peak_tree_rss_mib"],
        "peak_breakdown": measured["peak_breakdown"],
        "load_average_1m_before": load,
        "returncode": measured["returncode"],
        "workers": workers or "default",
    }
    if measured["returncode"] != 0:
        figures["output_tail"] = measured["output_tail"][-2000:]
    return figures


def _sum(stages: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "wall_seconds": round(sum(s["wall_seconds"] for s in stages), 2),
        "cpu_seconds": round(sum(s["cpu_seconds"] for s in stages), 2),
        "peak_tree_pss_mib": max((s["peak_tree_pss_mib"] for s in stages), default=0.0),
        "peak_tree_rss_mib": max((s["peak_tree_rss_mib"] for s in stages), default=0.0),
    }


def _requests_by_vendor(home: Path) -> dict[str, int]:
    """HTTP attempts archived per vendor (every attempt is a row of `raw_responses`)."""
    files = sorted((home / "data" / "warehouse").glob("*.duckdb"))
    for path in files:
        con = duckdb.connect(str(path), read_only=True)
        try:
            if con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'raw_responses'").fetchall():
                return dict(con.execute("SELECT vendor, count(*) FROM raw_responses GROUP BY vendor").fetchall())
        finally:
            con.close()
    return {}


def _linearity(results: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Each stage's wall and CPU at every size over its linear extrapolation from the smallest size
    (the fixed start-up cost of a process taken out first: it does not grow with rows). The fixed
    cost is the least start-up measured at any size (wall and CPU each): noise only adds to a
    measure, and a start-up taken a second too long at the smallest size would leave a small
    stage (scoring a vendor: a fifth of a second of its own at 252 rows) almost nothing to grow
    from."""
    base_size = min(results)
    base = results[base_size]["figures"]
    startups = [
        t
        for r in results.values()
        for t in r["figures"]["stages"].get("startup", {}).get("tries", [r["figures"]["stages"].get("startup")])
        if t
    ]
    startup = {key: min(t[key] for t in startups) for key in ("wall_seconds", "cpu_seconds")}
    out: dict[str, Any] = {}
    for size, result in sorted(results.items()):
        if size == base_size:
            continue
        factor = size / base_size
        figures = result["figures"]
        ratios = {}
        for name, fig in [*figures["stages"].items(), *figures["totals"].items()]:
            ref = base["stages"].get(name) or base["totals"].get(name)
            if not ref or name == "startup":
                continue
            row = {}
            for key in ("wall_seconds", "cpu_seconds"):
                fixed = startup[key] if name in base["stages"] else 0.0
                grown, small = fig[key] - fixed, ref[key] - fixed
                row[key.replace("_seconds", "_over_linear")] = round(grown / (small * factor), 2) if small > 0 else None
            ratios[name] = row
        out[str(size)] = {"rows_factor": factor, "fixed_startup": startup, "stages": ratios}
    return out


def scale(
    sizes: list[int],
    vendors: list[str] | None = None,
    profile_dir: Path | None = None,
    profile_stages: tuple[str, ...] = (),
    keep: Path | None = None,
    end_to_end: bool = False,
    workers: int | None = None,
) -> dict[str, Any]:
    results = {size: run_size(size, vendors, profile_dir, profile_stages, keep, end_to_end, workers) for size in sizes}
    linear = _linearity(results) if len(results) > 1 else {}
    worst = [
        (ratio, size, stage, key)
        for size, block in linear.items()
        for stage, row in block["stages"].items()
        for key, ratio in row.items()
        if ratio is not None
    ]
    largest = results[max(results)]["figures"]
    checks = {
        "all_sizes_ran": all(r["passed"] for r in results.values()),
        "within_linear": all(r <= TARGETS["within_linear"] for r, *_ in worst),
        "peak_tree_pss_under_2_gib": all(
            r["figures"]["peak_tree_pss_mib"] < TARGETS["peak_tree_mib"] for r in results.values()
        ),
        "pages_load_in_browser_under_1_s": all(
            (r["figures"]["browser"] or {}).get("all_under_target", False) for r in results.values()
        ),
        "index_page_under_1_mb": all(
            (r["figures"]["index_page_bytes"] or 0) < TARGETS["index_page_bytes"] for r in results.values()
        ),
    }
    if 12600 in results:
        # bench demo's wall time when it ran, else the stages one after another (an upper bound)
        whole = largest["end_to_end_wall_seconds"] or largest["stage_by_stage_wall_seconds"]
        checks["end_to_end_12600_under_15_min"] = whole < TARGETS["end_to_end_seconds_12600"]
        checks["rescore_12600_under_60_s"] = largest["stages"].get("rescore", {}).get("wall_seconds", 1e9) < 60
    return {
        "parameters": {"sizes": sizes, "vendors": vendors or "all in the demo manifest", "targets": TARGETS},
        "figures": {
            "end_to_end_wall_seconds": {str(s): r["figures"]["end_to_end_wall_seconds"] for s, r in results.items()},
            "stage_by_stage_wall_seconds": {
                str(s): r["figures"]["stage_by_stage_wall_seconds"] for s, r in results.items()
            },
            "peak_tree_pss_mib": {str(s): r["figures"]["peak_tree_pss_mib"] for s, r in results.items()},
            "peak_with_simulator_pss_mib": {
                str(s): r["figures"]["peak_with_simulator_pss_mib"] for s, r in results.items()
            },
            "peak_tree_rss_mib": {str(s): r["figures"]["peak_tree_rss_mib"] for s, r in results.items()},
            "slowest_page_load_ms": {
                str(s): (r["figures"]["browser"] or {}).get("slowest_load_ms") for s, r in results.items()
            },
            "over_linear": linear,
            "worst_over_linear": sorted(worst, reverse=True)[:8],
            "checks": checks,
        },
        "passed": all(checks.values()),
    }
