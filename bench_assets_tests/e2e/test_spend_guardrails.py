"""Money is spent only on purpose, as an operator meets it: through the commands and through a
materialization.

- A manifest whose price table a vendor's adapter cannot bill from (a misspelt unit, a unit without
  a price), whose vendor key names no adapter, or whose live vendor has no spend ceiling is refused
  by `bench estimate`, `bench preflight`, `bench snapshot add` and the assets alike, naming file,
  line and field, and nothing changes (the warehouse and every partition archive compared).
- A vendor that bills a response in a unit the manifest does not price stops its partition: what
  it answered is archived, every call not yet sent is archived as not sent, the warehouse is left
  as it was, and the run after the price is added sends exactly those calls (nothing paid twice).
- What preflight spent is taken off the run's spend ceiling.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from bench_assets.adapters.exa import ExaAdapter
from bench_assets.cli import main as cli
from bench_assets.fetch.classify import UNPRICED_UNIT_STOP
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    failure_text,
    fingerprint,
    make_home,
    manifest_edited,
    materialize,
    register_partitions,
    vendor_key,
    warehouse_rows,
)

ROWS_PER_STRATUM = 6


@pytest.fixture(scope="module")
def populated(tmp_path_factory, simulator):
    home = make_home(tmp_path_factory.mktemp("home"), ["brave", "tavily"], rows_per_stratum=ROWS_PER_STRATUM)
    with dg.instance_for_test(temp_dir=str(tmp_path_factory.mktemp("dagster"))) as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("brave"))
        yield home, instance, fingerprint(home)


def _live_without_ceiling(d: dict) -> None:
    d["mode"] = "live"
    del d["vendors"]["brave"]["spend_ceiling_usd"]


def _rename_vendor(d: dict) -> None:
    d["vendors"]["bravve"] = d["vendors"].pop("brave")


REFUSED = [
    pytest.param(
        lambda d: d["vendors"]["brave"].update(prices_usd={"request.serch": 0.005}),
        "vendors.brave.prices_usd.request.serch",
        "did you mean 'request.search'",
        id="misspelt-unit",
    ),
    pytest.param(
        lambda d: d["vendors"]["tavily"].update(prices_usd={"credits": 0.008}),
        "vendors.tavily.prices_usd.credits",
        "did you mean 'credit'",
        id="credits-for-credit",
    ),
    pytest.param(
        lambda d: d["vendors"]["tavily"].update(prices_usd={}),
        "vendors.tavily.prices_usd",
        "",  # an empty table is refused as a table (at least one price)
        id="no-price",
    ),
    pytest.param(_rename_vendor, "vendors.bravve", "did you mean 'brave'", id="misspelt-vendor"),
    pytest.param(_live_without_ceiling, "vendors.brave.spend_ceiling_usd", "required in live mode", id="no-ceiling"),
]


@pytest.mark.parametrize("edit, field, hint", REFUSED)
@pytest.mark.parametrize(
    "argv",
    [["estimate", SNAPSHOT], ["preflight", SNAPSHOT], ["snapshot", "add", SNAPSHOT]],
    ids=["estimate", "preflight", "snapshot-add"],
)
def test_every_command_refuses_a_manifest_that_could_spend_by_accident(
    populated, simulator, monkeypatch, capsys, tmp_path, edit, field, hint, argv
):
    home, _, before = populated
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("BENCH_SIMULATOR_URL", simulator.base_url)
    with manifest_edited(home, edit) as path:
        code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"field '{field}'" in err and hint in err, err
    assert f"{path}:" in err  # the file and its line
    assert "Traceback" not in err
    assert fingerprint(home) == before


@pytest.mark.parametrize("edit, field, hint", REFUSED)
def test_the_assets_refuse_it_too_and_nothing_changes(populated, simulator, edit, field, hint):
    home, instance, before = populated
    with manifest_edited(home, edit) as path:
        result = materialize(
            instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("brave"), raise_on_error=False
        )
    assert not result.success
    message = failure_text(result)
    assert str(path) in message and f"field '{field}'" in message and hint in message, message
    assert fingerprint(home) == before


def test_an_unpriced_unit_at_run_time_stops_the_partition_and_the_next_run_resumes_it(
    tmp_path, simulator, sim_logs, monkeypatch
):
    """Exa states its own charge (costDollars.total, the unit `usd`). An adapter that did not
    declare that unit lets a manifest without its price load; the first answer then bills in it."""
    monkeypatch.setattr(
        ExaAdapter,
        "billing_units",
        {"search": frozenset({"request.search", "result.extra"}), "extract": frozenset({"page.text"})},
    )

    def without_usd(d: dict) -> None:
        del d["vendors"]["exa"]["prices_usd"]["usd"]
        d["vendors"]["exa"]["concurrency"] = 2

    home = make_home(tmp_path, ["exa"], rows_per_stratum=ROWS_PER_STRATUM, edit=without_usd)
    manifest_path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    archive = home / "data" / "warehouse" / "partitions" / SNAPSHOT / "exa.duckdb"
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"), raise_on_error=False)
        assert not result.success
        message = failure_text(result)
        assert f"{manifest_path}:" in message and "field 'vendors.exa.prices_usd'" in message, message
        assert "'usd'" in message and "calls not sent" in message
        # every response received is archived, every call left is archived as not sent
        con = duckdb.connect(str(archive), read_only=True)
        try:
            sent, stopped, items = con.execute(
                "SELECT count(*) FILTER (WHERE http_status IS NOT NULL), "
                f"count(*) FILTER (WHERE final AND transport_error LIKE '{UNPRICED_UNIT_STOP}%'), "
                "count(DISTINCT (query_id, capability)) FROM raw_responses"
            ).fetchone()
        finally:
            con.close()
        billed_first = len(sim_logs.billing())
        assert sent == billed_first  # what was paid for is what was archived
        assert 1 <= sent <= 2 + 1  # the answer that showed the unit, and at most what was in flight beside it
        assert stopped == items - sent > 0
        assert warehouse_rows(home, "SELECT count(*) FROM raw_responses WHERE vendor = 'exa'") == [(0,)]

        # the price added (and the adapter declaring the unit again): the calls not sent are sent, once
        monkeypatch.undo()
        data = yaml.safe_load(manifest_path.read_text())
        data["vendors"]["exa"]["prices_usd"]["usd"] = 1.0
        manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"))
        assert result.success
    assert len(sim_logs.billing()) == items  # every call paid exactly once
    classes = dict(warehouse_rows(home, "SELECT response_class, count(*) FROM row_scores GROUP BY 1"))
    assert "quota" not in classes and classes.get("ok", 0) > 0


def test_preflight_spend_counts_against_the_runs_ceiling(tmp_path, simulator, sim_logs, monkeypatch, capsys):
    price = 0.005  # Brave: one request
    ceiling = 4 * price + 0.001  # four calls fit, a fifth is sent only while spend is below it

    def tight(d: dict) -> None:
        d["vendors"]["brave"].update(spend_ceiling_usd=ceiling, concurrency=1)

    home = make_home(tmp_path, ["brave"], rows_per_stratum=ROWS_PER_STRATUM, edit=tight)
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("BENCH_SIMULATOR_URL", simulator.base_url)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        assert cli.main(["preflight", SNAPSHOT]) == 0, capsys.readouterr().err
        assert sum(b["usd"] for b in sim_logs.billing()) == pytest.approx(price)
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("brave"))
        assert result.success
    bills = sim_logs.billing()
    # without the preflight's $0.005 the run would have sent a fifth call (4 x 0.005 < ceiling)
    assert len(bills) - 1 == 4
    assert sum(b["usd"] for b in bills) <= ceiling + price  # the whole snapshot: at most the call that crossed it
    stopped = warehouse_rows(
        home, "SELECT count(*) FROM raw_responses WHERE vendor = 'brave' AND transport_error = 'spend_ceiling_reached'"
    )
    assert stopped[0][0] > 0


def test_the_landed_live_manifest_loads_in_every_command(monkeypatch, capsys, tmp_path):
    """The live manifest as landed passes the guardrails (a new operator starts from it)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("BENCH_HOME", str(root))
    assert cli.main(["estimate", "registry_search-2026-q4", "--json"]) == 0, capsys.readouterr().err
