"""A vendor out of credit, through Dagster: its partition scores every row quota and bills nothing."""

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


def test_a_vendor_partition_out_of_credit_scores_every_row_quota_through_dagster(tmp_path, sim_control):
    # SerpApi says "out of searches" with a 429, the status it also uses for its hourly limit.
    assert sim_control.credits({"serpapi": 0}).status_code == 200
    home = make_home(tmp_path, ["serpapi"], rows_per_stratum=5)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, sim_control.url, GOLDEN_STAGES, SNAPSHOT)
        assert materialize(instance, home, sim_control.url, VENDOR_STAGES, vendor_key("serpapi")).success
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        attempts = con.execute("SELECT max(attempt), count(*), bool_and(final) FROM raw_responses").fetchone()
        classes = dict(con.execute("SELECT response_class, count(*) FROM row_scores GROUP BY 1").fetchall())
        searchable = con.execute("SELECT count(*) FROM golden_rows WHERE task_type <> 'extract'").fetchone()[0]
        spend = con.execute("SELECT sum(billed_usd) FROM row_scores").fetchone()[0]
    finally:
        con.close()
    assert attempts[0] == 1 and attempts[2]  # every query answered once, and that answer is final
    # every row SerpApi can serve is a quota failure, kept in the denominator; it has no extract
    assert classes == {"quota": searchable, "unsupported": classes.get("unsupported", 0)} and searchable > 0
    assert not spend and sim_control.billing() == []
