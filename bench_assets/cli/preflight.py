"""`bench preflight SNAPSHOT`: one cheapest documented call per vendor before a live run."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from urllib.parse import urlsplit

from bench_assets.cli.home import bench_home
from bench_assets.cli.runs import bench_resources
from bench_assets.defs.resources import VendorGateway
from bench_assets.fetch.preflight import DEFAULT_QUERY, DEFAULT_URL, preflight_snapshot
from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import capability_of
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.simulator.server import start_simulator

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def simulated_probe() -> tuple[str, str]:
    """A query and a page of the simulator's planted corpus: a simulated preflight's call."""
    rows = demo_golden_rows(rows_per_stratum=3)
    query = next(r.request_text for r in rows if capability_of(r) == "search")
    url = next(r.request_text for r in rows if capability_of(r) == "extract")
    return query, url


def rehearsal(manifest: Manifest) -> bool:
    """A live manifest whose every endpoint is on this machine: a rehearsal against `bench simulator`
    (its per-vendor URLs), which serves the planted pages, not example.com."""
    hosts = {urlsplit(url).hostname for spec in manifest.vendors.values() for url in spec.endpoints.values()}
    return manifest.mode == "live" and hosts <= LOOPBACK


def cmd_preflight(args: argparse.Namespace) -> int:
    manifest = load_manifest(bench_home() / "data" / "snapshots" / args.snapshot / "manifest.yaml")
    resources = bench_resources()
    gateway, keys = resources["gateway"], resources["vendor_keys"]
    planted = manifest.mode != "live" or rehearsal(manifest)
    query, url = simulated_probe() if planted else (DEFAULT_QUERY, DEFAULT_URL)
    if manifest.mode == "live" and planted and not (args.query and args.url) and not args.json:
        print("every endpoint is on this machine (a rehearsal against bench simulator): asking for a planted page")
    with ExitStack() as stack:
        if manifest.mode != "live" and not gateway.simulator_url:  # a simulator for this command, stopped after it
            gateway = VendorGateway(simulator_url=stack.enter_context(start_simulator()).base_url)
        report = preflight_snapshot(
            resources["duckdb"].warehouse(),
            manifest,
            lambda endpoint: gateway.url(endpoint, manifest.mode),
            lambda vendor: gateway.api_key(vendor, manifest.mode, keys, key_env=manifest.vendors[vendor].key_env),
            vendors=args.vendor or None,
            recheck=args.recheck,
            query=args.query or query,
            extract_url=args.url or url,
        )
    if args.json:
        vendors = [v.as_json() for v in report.vendors]
        print(json.dumps({"snapshot_id": report.snapshot_id, "mode": report.mode, "vendors": vendors}, indent=2))
    else:
        print(f"preflight of {report.snapshot_id} ({report.mode} mode): one cheapest call per vendor, archived")
        print(report.table())
    for line in report.problems:
        print(f"bench preflight: {line}", file=sys.stderr)
    if not report.problems and not args.json:
        print(f"all {len(report.vendors)} vendors ready")
    return 1 if report.problems else 0
