"""Spend: what `bench estimate` promises before a run is what the vendors then bill, and a
per-vendor ceiling stops a fetch (recorded, not crashed) instead of overspending.

A live run costs real money; an operator must know the bill before pressing the button, and a
bug or a runaway retry must never spend past the ceiling pinned in the manifest. So the real
command (`bench estimate SNAPSHOT --json`) runs first, before anything is called, and its figures
are held to the simulated vendors' own billing log after the run: to the cent for every vendor
billed per request, credit or result. Jina bills the tokens of the pages it returns, which no one
knows before the call: its estimate figures every page at the adapter's stated size and says so
(its caveat), so there the bill must lie between Jina's documented minimum and the estimate, and
every call must bill no more than the estimate figured for it.

The estimate-against-bill tests live in test_secrets.py, on its live run of every vendor: that run
already sends every vendor's calls and bills every unit, so the claims are asserted on it rather
than on a second run of all fourteen adapters. Here: the ceiling.
"""

from __future__ import annotations

import dagster as dg
import duckdb

from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    vendor_key,
)

# The fewest a manifest allows (18 rows): about ten calls reach the ceiling and the rest are stopped,
# all the ceiling claim needs (it needs no holdout and no decoys).
ROWS_PER_STRATUM = 5


def test_spend_ceiling_stops_the_fetch_and_records_it(tmp_path, simulator, sim_logs):
    ceiling = 0.05  # Exa: $0.007 a search (text included), so the ceiling is reached after a few calls

    def tighten(data):
        data["vendors"]["exa"].update(spend_ceiling_usd=ceiling, concurrency=1)

    home = make_home(tmp_path, ["exa"], rows_per_stratum=ROWS_PER_STRATUM, edit=tighten)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"))
        assert result.success
    spent = sum(e["usd"] for e in sim_logs.billing())
    assert ceiling <= spent < ceiling + 0.02  # at most the one call that crossed it
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        stopped = con.execute(
            "SELECT count(*) FROM raw_responses WHERE transport_error = 'spend_ceiling_reached' AND role <> 'decoy'"
        ).fetchone()[0]
        classes = dict(con.execute("SELECT response_class, count(*) FROM row_scores GROUP BY 1").fetchall())
        total = con.execute("SELECT count(*) FROM golden_rows").fetchone()[0]
    finally:
        con.close()
    assert stopped > 0
    assert classes["quota"] == stopped  # recorded as evidence and counted as failures, not dropped
    assert sum(classes.values()) == total
