"""Endpoint configurations: two modes of one provider (Exa's auto and deep) in one snapshot,
materialized through Dagster against the simulator, as an operator runs them; Perplexity's web and
fast and You.com's default and full_page in the same snapshot, each fetched and scored as its own.

Each mode is its own partition, request, price and leaderboard entry, and the paired tests
compare the two like any other pair; the provider's account is one: its rate limit is paced under
one name and its spend ceiling caps what both configurations spend together. This runs its own
small snapshot (the shared `published_site` has one configuration per provider, and a shared
ceiling can only be seen stopping a second configuration's fetch).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import dagster as dg
import duckdb
import pytest
import yaml

from bench_assets.adapters import get_adapter
from bench_assets.cli import main as cli
from bench_assets.fetch.classify import SPEND_CEILING_REACHED
from bench_assets.fetch.spend import archived_spend
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    unwrapped,
    vendor_key,
    warehouse_rows,
)

CONFIGURATIONS = ["exa", "exa.deep"]
DEEP_PRICE = 0.012  # Exa Deep, $12 per 1,000 requests (data/pricing/exa.md)
# Two more providers' mode ladders in the same snapshot (their ceilings are their own): Parallel's
# search modes and Brave's two endpoints, each $5 per 1,000 searches (data/pricing/parallel.md, brave.md).
LADDERS = {"parallel": "parallel.basic", "brave": "brave.llm_context"}
LLM_CONTEXT = "https://api.search.brave.com/res/v1/llm/context"
# The other mode ladders in the same snapshot (their partitions only; the ceiling test is Exa's):
# configuration: (its mode, the search request's mode fields, USD per search call, USD per full page)
# from data/pricing/perplexity.md and data/pricing/youcom.md.
PRICED_LADDERS = {
    "perplexity": ("web", {"search_type": "web"}, 0.005, None),
    "perplexity.fast": ("fast", {"search_type": "fast"}, 0.001, None),
    "youcom": ("default", {}, 0.005, None),
    "youcom.full_page": ("full_page", {"extraction_mode": "full_page", "extraction_source": "fetch"}, 0.005, 0.001),
}


def add_modes(data: dict) -> None:
    """exa.deep as the demo pins a further mode: its search endpoint alone (the extract call is the
    same request in every mode, measured once, under exa); the other ladders keep both endpoints."""
    exa = data["vendors"]["exa"]
    data["vendors"]["exa.deep"] = {
        **exa,
        "mode": "deep",
        "endpoints": {"search": exa["endpoints"]["search"]},
        "prices_usd": {
            **{k: v for k, v in exa["prices_usd"].items() if k != "page.text"},
            "request.search": DEEP_PRICE,
        },
    }
    data["vendors"]["parallel.basic"] = {**data["vendors"]["parallel"], "mode": "basic"}
    data["vendors"]["brave.llm_context"] = {
        **data["vendors"]["brave"],
        "mode": "llm_context",
        "endpoints": {"search": LLM_CONTEXT},
    }
    perplexity = data["vendors"]["perplexity"]
    data["vendors"]["perplexity.fast"] = {**perplexity, "mode": "fast", "prices_usd": {"request.search": 0.001}}
    data["vendors"]["youcom.full_page"] = {**data["vendors"]["youcom"], "mode": "full_page"}


def manifest_path(home):
    return home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"


def set_ceiling(home, usd: float) -> None:
    data = yaml.safe_load(manifest_path(home).read_text())
    for name in CONFIGURATIONS:
        data["vendors"][name]["spend_ceiling_usd"] = usd
    manifest_path(home).write_text(yaml.safe_dump(data, sort_keys=False))


def bench_estimate(home) -> dict:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(out):
        env.setenv("BENCH_HOME", str(home))
        env.delenv("BENCH_PRIVATE_DIR", raising=False)
        cli.main(["estimate", SNAPSHOT, "--json"])
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def mode_ladder(tmp_path_factory, simulator):
    home = make_home(
        tmp_path_factory.mktemp("modes"), ["exa", *LADDERS, "perplexity", "youcom"], rows_per_stratum=5, edit=add_modes
    )
    estimate = {e["vendor"]: e for e in bench_estimate(home)["vendors"]}
    # A ceiling each configuration would keep to alone, but not both together: exa's whole fetch and
    # half of exa.deep's.
    ceiling = round(estimate["exa"]["usd"] + estimate["exa.deep"]["usd"] / 2, 4)
    set_ceiling(home, ceiling)
    with dg.instance_for_test() as instance:
        everything = [*CONFIGURATIONS, *LADDERS, *LADDERS.values(), *PRICED_LADDERS]
        register_partitions(instance, [SNAPSHOT], everything)
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        for name in everything:
            materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(name))
        materialize(instance, home, simulator.base_url, RESULT_STAGES, SNAPSHOT)
    return home, ceiling, bench_estimate(home)


@pytest.fixture(scope="module")
def reproduced(mode_ladder, tmp_path_factory):
    """`bench reproduce` on the published folder, copied alone, from an empty directory."""
    home, _, _ = mode_ladder
    folder = tmp_path_factory.mktemp("download") / SNAPSHOT
    shutil.copytree(home / "data" / "publish" / SNAPSHOT, folder)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(out):
        env.chdir(elsewhere)
        env.setenv("BENCH_HOME", str(elsewhere))
        for name in ("BENCH_SPLIT_KEY", "BENCH_WAREHOUSE", "BENCH_PRIVATE_DIR", "BENCH_SIMULATOR_URL"):
            env.delenv(name, raising=False)
        code = cli.main(["reproduce", str(folder), "--no-progress"])
    return code, unwrapped(out.getvalue())


def raw_of(home, vendor: str):
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ? ORDER BY query_id, capability, attempt",
            [SNAPSHOT, vendor],
        ).df()
    finally:
        con.close()


def test_each_configuration_sends_its_modes_request_and_is_billed_its_price(mode_ladder):
    home, _, _ = mode_ladder
    for name, search_type, price in (("exa", "auto", 0.007), ("exa.deep", "deep", DEEP_PRICE)):
        raw = raw_of(home, name)
        searches = raw[(raw["capability"] == "search") & raw["http_status"].eq(200)]
        assert len(searches), name
        bodies = [json.loads(r)["json"] for r in searches["request_json"]]
        assert {b["type"] for b in bodies} == {search_type}, name
        # the simulator's Exa states its charge (costDollars.total): the mode's own price
        costs = {round(json.loads(b)["costDollars"]["total"], 6) for b in searches["body"]}
        assert costs == {price}, name


def test_configurations_of_one_provider_share_its_spend_ceiling(mode_ladder):
    home, ceiling, estimate = mode_ladder
    manifest = load_manifest(manifest_path(home))
    spent = {}
    for name in CONFIGURATIONS:
        spec = manifest.vendors[name]
        spent[name] = float(archived_spend(get_adapter(spec.adapter), spec.prices_usd, raw_of(home, name)).sum())
    # exa ran first and whole; exa.deep had only what exa left, and stopped there (recorded, not sent)
    deep = raw_of(home, "exa.deep")
    assert (deep["transport_error"] == SPEND_CEILING_REACHED).sum() > 0
    assert (raw_of(home, "exa")["transport_error"] == SPEND_CEILING_REACHED).sum() == 0
    in_flight = manifest.vendors["exa.deep"].concurrency * DEEP_PRICE  # calls already sent when it was reached
    assert spent["exa"] + spent["exa.deep"] <= ceiling + in_flight + 1e-9
    # Alone, each would have kept to it: the estimate flags the provider, not a configuration
    by_vendor = {e["vendor"]: e for e in estimate["vendors"]}
    assert all(by_vendor[n]["usd"] <= ceiling for n in CONFIGURATIONS)
    assert all(not by_vendor[n]["within_ceiling"] and by_vendor[n]["provider"] == "exa" for n in CONFIGURATIONS)


def test_configurations_of_one_provider_are_paced_as_one_account(mode_ladder):
    home, _, _ = mode_ladder
    logs = sorted(p.name for p in (home / "data" / "warehouse").rglob("*.sqlite"))
    assert "exa.sqlite" in logs and "exa.deep.sqlite" not in logs, logs
    assert {"perplexity.sqlite", "youcom.sqlite"} <= set(logs), logs
    assert not {"perplexity.fast.sqlite", "youcom.full_page.sqlite"} & set(logs), logs


def test_the_leaderboard_has_an_entry_per_configuration_naming_provider_and_mode(mode_ladder):
    home, _, _ = mode_ladder
    out = home / "data" / "publish" / SNAPSHOT
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["schema_version"] == 5
    entries = {e["vendor"]: e for e in board["vendors"] if e["status"] != "excluded"}
    assert {v: (e["provider"], e["mode"]) for v, e in entries.items()} == {
        "exa": ("exa", "auto"),
        "exa.deep": ("exa", "deep"),
        "parallel": ("parallel", "advanced"),
        "parallel.basic": ("parallel", "basic"),
        "brave": ("brave", "web"),
        "brave.llm_context": ("brave", "llm_context"),
        **{name: (name.split(".")[0], mode) for name, (mode, *_) in PRICED_LADDERS.items()},
    }
    # each mode ladder is compared like any pair: a paired test between the two configurations
    pairs = [{c["vendor_a"], c["vendor_b"]} for c in board["comparisons"]["pairs"]]
    for pair in (CONFIGURATIONS, ["perplexity", "perplexity.fast"], ["youcom", "youcom.full_page"]):
        assert set(pair) in pairs, board["comparisons"]
    csv_head = (out / "leaderboard.csv").read_text().splitlines()[0].split(",")
    assert csv_head[:3] == ["vendor", "provider", "mode"]


def scores_of(home, vendor: str):
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute("SELECT * FROM row_scores WHERE snapshot_id = ? AND vendor = ?", [SNAPSHOT, vendor]).df()
    finally:
        con.close()


@pytest.mark.parametrize("provider", sorted(LADDERS))
def test_parallel_and_brave_modes_fetch_their_own_request_and_are_scored(mode_ladder, provider):
    """Each mode of Parallel (its `mode`) and of Brave (its endpoint) sends its own request through
    the simulator, is billed its price and is scored row by row like any configuration."""
    home, _, _ = mode_ladder
    configuration = LADDERS[provider]
    sent = {}
    for name in (provider, configuration):
        raw = raw_of(home, name)
        searches = raw[(raw["capability"] == "search") & raw["http_status"].eq(200)]
        assert len(searches) and searches["transport_error"].isna().all(), name
        requests = [json.loads(r) for r in searches["request_json"]]
        if provider == "brave":
            sent[name] = {r["url"].split("/h/", 1)[-1].split("api.search.brave.com", 1)[-1] for r in requests}
        else:
            sent[name] = {r["json"]["mode"] for r in requests}
        spec = load_manifest(manifest_path(home)).vendors[name]
        spent = archived_spend(get_adapter(provider), spec.prices_usd, searches).sum()
        assert spent == pytest.approx(0.005 * len(searches)), name  # $5 per 1,000 in either mode
        scores = scores_of(home, name)
        scores = scores[scores["response_class"] != "unsupported"]  # Brave has no extract endpoint
        assert len(scores) and scores["response_class"].eq("ok").mean() > 0.9, name
        assert scores["hit_at_10"].sum() > 0, name  # read and scored: the golden pages are found
    expected = (
        {"parallel": {"advanced"}, "parallel.basic": {"basic"}}
        if provider == "parallel"
        else {"brave": {"/res/v1/web/search"}, "brave.llm_context": {"/res/v1/llm/context"}}
    )
    assert sent == expected


def test_each_mode_of_perplexity_and_youcom_is_fetched_scored_and_billed_its_price(mode_ladder):
    home, _, _ = mode_ladder
    for name, (_, fields, search_usd, page_usd) in PRICED_LADDERS.items():
        raw = raw_of(home, name)
        searches = raw[(raw["capability"] == "search") & raw["http_status"].eq(200)]
        assert len(searches), name
        requests = [json.loads(r) for r in searches["request_json"]]
        # the mode's documented parameters went out, and nothing of the other mode
        if name.startswith("youcom") and not fields:
            assert {r["method"] for r in requests} == {"GET"}, name
            assert all("extraction" not in (r.get("params") or {}) for r in requests), name
        elif name.startswith("youcom"):
            assert {r["method"] for r in requests} == {"POST"}, name
            assert {json.dumps(r["json"]["extraction"], sort_keys=True) for r in requests} == {
                json.dumps({**fields, "full_page": {"extraction_formats": ["markdown"]}}, sort_keys=True)
            }, name
        else:
            assert {r["json"]["search_type"] for r in requests} == {fields["search_type"]}, name
        # what scoring billed each search row: the call, and for full_page each page that came back
        pages = [
            sum(1 for item in json.loads(b)["results"]["web"] if (item.get("contents") or {}).get("markdown"))
            if name.startswith("youcom")
            else 0
            for b in searches["body"]
        ]
        assert (sum(pages) > 0) == (page_usd is not None), name
        scores = warehouse_rows(
            home,
            "SELECT task_type, response_class, billed_usd, correct, hit_at_10 FROM row_scores "
            "WHERE snapshot_id = ? AND vendor = ? AND task_type <> 'extract' ORDER BY row_id",
            [SNAPSHOT, name],
        )
        assert scores and all(cls == "ok" and correct is not None for _, cls, _, correct, _ in scores), name
        assert all(hit is not None for task, *_, hit in scores if task == "search"), name
        billed = sum(usd for _, _, usd, _, _ in scores)
        assert billed == pytest.approx(len(scores) * search_usd + sum(pages) * (page_usd or 0.0)), name


def test_a_further_mode_measures_search_alone_and_the_providers_extract_once(mode_ladder, reproduced):
    home, _, _ = mode_ladder
    # exa.deep pins no extract endpoint: it sends no extract call; exa sends them all
    assert set(raw_of(home, "exa.deep")["capability"]) == {"search"}
    assert "extract" in set(raw_of(home, "exa")["capability"])
    # its extract rows are scored as not measured for it (no fidelity), never as failures
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        classes = dict(
            con.execute(
                "SELECT task_type = 'extract', list(DISTINCT response_class) FROM row_scores "
                "WHERE snapshot_id = ? AND vendor = 'exa.deep' GROUP BY 1",
                [SNAPSHOT],
            ).fetchall()
        )
    finally:
        con.close()
    assert classes[True] == ["unsupported"] and "unsupported" not in classes[False], classes
    out = home / "data" / "publish" / SNAPSHOT
    board = {e["vendor"]: e for e in json.loads((out / "leaderboard.json").read_text())["vendors"]}
    assert board["exa.deep"]["metrics"].get("fidelity_mean", {}).get("value") is None
    assert board["exa"]["metrics"]["fidelity_mean"]["value"] is not None
    # the exclusions say why, and where the provider's extract figure is
    exclusions = json.loads((out / "exclusions.json").read_text())
    rows = exclusions["exclusions"] if isinstance(exclusions, dict) else exclusions
    deep = [e for e in rows if e["vendor"] == "exa.deep" and e["reason_code"] == "unsupported_capability"]
    assert len(deep) == 1 and "measured once, under exa" in deep[0]["reason"], deep
    # the evidence bundle says what each configuration was measured on, and `bench reproduce`
    # re-derives exa.deep's verdicts from it without asking for extract attempts it never made
    code, printed = reproduced
    assert code == 0, printed
