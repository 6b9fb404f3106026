"""Fixtures of the end-to-end tests only: the session's published site."""

from __future__ import annotations

import functools
import json
import threading
from datetime import UTC, datetime
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import dagster as dg
import pytest

from bench_assets.cli.sentinel_cycle import simulate_probe_cycle
from bench_assets.golden.planted import STRATA
from bench_assets_tests.helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    GOLDEN_STAGES,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    require,
    resources,
    vendor_key,
)

SITE_VENDORS = ["brave", "exa", "tavily"]
# Four planted pages a stratum, each a search, an extract and an answer row: the second page's
# answer row is a range and the fourth's a not-available one (`planted.ANSWER_KINDS`), so every
# kind of answer row is scored; the keyed split holds one page of each stratum out (with its
# decoys and commitments) and publishes three, near the manifest's 70/30. At three pages a stratum
# there is no not-available row; at one, no holdout.
SITE_ROWS_PER_STRATUM = 12
# A short sentinel cycle for the site: a few pages, probed every 6 hours for a few simulated days.
SITE_SENTINEL_PAGES = 4
SITE_SENTINEL_DAYS = 3


@pytest.fixture(scope="session")
def published_site(tmp_path_factory, simulator):
    """A small snapshot (3 vendors, 72 rows: `SITE_ROWS_PER_STRATUM` in each of the planted demo's
    strata) materialized through Dagster and published once per session, with a vendor's reply and
    an erratum filed: the site, its data files, and the Dagster instance that holds the
    materializations (for the site, rescore and browser tests).

    Everything the site shows comes from the pipeline: the golden stages, each vendor partition,
    a short simulated sentinel cycle (the probe schedule evaluated at every tick, its runs on the
    instance), the agent-ready trials, then the leaderboard and the publication."""
    home = make_home(tmp_path_factory.mktemp("site"), SITE_VENDORS, rows_per_stratum=SITE_ROWS_PER_STRATUM)
    snapshot_dir = home / "data" / "snapshots" / SNAPSHOT
    (snapshot_dir / "replies").mkdir()
    (snapshot_dir / "replies" / "tavily.md").write_text(
        "We believe the extraction rubric penalises our markdown.\n  <b>kept verbatim</b>\n"
    )
    (snapshot_dir / "errata.json").write_text(
        json.dumps(
            [
                {  # a valid entry (errata.json is validated)
                    "id": "E1",
                    "date": "2026-07-02",
                    "vendor": "exa",
                    "action": "rescore",
                    "what": "price table corrected",
                    "why": "the vendor's invoice",
                    "who": "bench maintainers",
                    "snapshot": SNAPSHOT,
                    "corrects": SNAPSHOT,
                    "version": f"{SNAPSHOT}-e1",
                    "summary": "exa rescore: price table corrected",
                }
            ]
        )
    )
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        for vendor in SITE_VENDORS:
            materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(vendor))
        cycle = simulate_probe_cycle(
            SNAPSHOT,
            resources(home, simulator.base_url),
            instance,
            published_at=datetime(2026, 7, 1, tzinfo=UTC),
            days=SITE_SENTINEL_DAYS,
            count=SITE_SENTINEL_PAGES,
        )
        assert cycle.summary["failed_runs"] == 0 and cycle.summary["probes"] > 0, cycle.summary
        materialize(instance, home, simulator.base_url, ("agent_trials", *RESULT_STAGES), SNAPSHOT)
        yield SimpleNamespace(
            home=home,
            instance=instance,
            out=home / "data" / "publish" / SNAPSHOT,
            vendors=SITE_VENDORS,
            golden_rows=SITE_ROWS_PER_STRATUM * len(STRATA),  # what the manifest asks the planted demo for
            snapshot=SNAPSHOT,
            sentinel_pages=SITE_SENTINEL_PAGES,
            sentinel_ticks=len(cycle.ticks),
            # the fixture's own runs: tests that re-run a stage to watch it fail add theirs
            run_ids=frozenset(run.run_id for run in instance.get_runs()),
        )


# ##### THE SITE IN A BROWSER (Debian's chromium, driven by Playwright, over HTTP)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site_url(published_site):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(published_site.out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    require(CHROMIUM.exists(), "Debian's chromium (/usr/bin/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
