"""Money is spent only on purpose: a price table names exactly the units its adapter bills the
pinned endpoints in, every vendor key is a vendor the pipeline can run, a live vendor has a spend
ceiling, and a response billed in a unit the manifest does not price stops the fetch instead of
billing nothing. Each refusal names the file, the line and the field, and says what to do."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from bench_assets.adapters import available_adapters, get_adapter
from bench_assets.adapters.base import VendorTask
from bench_assets.errors import BenchInputError
from bench_assets.fetch.classify import UNPRICED_UNIT_STOP, classify_response, unpriced_stop
from bench_assets.fetch.engine import stopped_for_unpriced
from bench_assets.fetch.spend import read_attempt, unpriced_units
from bench_assets.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml"
LIVE = ROOT / "data" / "snapshots" / "registry_search-2026-q4" / "manifest.yaml"


def refusal(tmp_path: Path, edit, source: Path = DEMO) -> tuple[Path, list[tuple[int | None, str, str]]]:
    """The manifest `source` edited and written under tmp_path, and the problems loading it raised."""
    data = yaml.safe_load(source.read_text())
    edit(data)
    path = tmp_path / data["snapshot_id"] / "manifest.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BenchInputError) as info:
        load_manifest(path)
    assert str(path) in str(info.value)
    return path, info.value.problems


def line_text(path: Path, line: int | None) -> str:
    assert line is not None
    return path.read_text().splitlines()[line - 1].strip()


@pytest.mark.parametrize("manifest", [DEMO, LIVE], ids=["demo", "live"])
def test_the_landed_manifests_price_exactly_what_their_adapters_bill(manifest):
    for vendor, spec in load_manifest(manifest).vendors.items():
        adapter = get_adapter(spec.adapter)
        assert set(spec.prices_usd) == adapter.billable_units(set(spec.endpoints)), vendor


@pytest.mark.parametrize("name", sorted(available_adapters()))
def test_every_unit_an_adapter_estimates_is_a_unit_it_declares(name):
    adapter = get_adapter(name)
    for capability in adapter.capabilities:
        for results in (1, 10, 25):
            units = adapter.expected_units(VendorTask(capability, "q", results), {})
            assert set(units) <= adapter.billing_units[capability], (capability, units)


# ##### REFUSED AT LOAD


def test_a_misspelt_price_unit_is_refused_with_the_nearest_unit_and_the_missing_one(tmp_path):
    def misspell(d):
        d["vendors"]["brave"]["prices_usd"] = {"request.serch": 0.005}

    path, problems = refusal(tmp_path, misspell)
    by_field = {field: (line, message) for line, field, message in problems}
    line, message = by_field["vendors.brave.prices_usd.request.serch"]
    assert line_text(path, line) == "request.serch: 0.005"
    assert "'request.serch' is not a unit brave bills in" in message and "did you mean 'request.search'" in message
    line, message = by_field["vendors.brave.prices_usd"]
    assert line_text(path, line) == "prices_usd:"
    assert "no price for 'request.search'" in message and "bill as nothing" in message


def test_credits_for_credit_is_refused(tmp_path):
    _, problems = refusal(tmp_path, lambda d: d["vendors"]["tavily"].update(prices_usd={"credits": 0.008}))
    fields = {field: message for _, field, message in problems}
    assert "did you mean 'credit'" in fields["vendors.tavily.prices_usd.credits"]
    assert "no price for 'credit'" in fields["vendors.tavily.prices_usd"]


def test_a_unit_the_pinned_endpoints_bill_without_a_price_is_refused(tmp_path):
    def drop(d):
        del d["vendors"]["exa"]["prices_usd"]["result.extra"]

    _, problems = refusal(tmp_path, drop)
    ((_, field, message),) = problems
    assert field == "vendors.exa.prices_usd"
    assert "no price for 'result.extra', a unit exa bills search calls in" in message


def test_a_price_for_an_endpoint_not_pinned_is_kept_but_an_unpriced_pinned_unit_is_not(tmp_path):
    """A search-only Linkup may keep its extract price (it is never billed); an extract-only Exa needs
    no search price, but still needs its extract units priced."""
    from bench_assets.manifest import parse_manifest

    data = yaml.safe_load(DEMO.read_text())
    del data["vendors"]["linkup"]["endpoints"]["extract"]
    del data["vendors"]["exa"]["endpoints"]["search"]
    for unit in ("request.search", "result.extra"):
        del data["vendors"]["exa"]["prices_usd"][unit]
    manifest = parse_manifest(yaml.safe_dump(data), "m.yaml")
    assert "request.extract" in manifest.vendors["linkup"].prices_usd

    def extract_only_without_its_price(d):
        del d["vendors"]["exa"]["endpoints"]["search"]
        del d["vendors"]["exa"]["prices_usd"]["page.text"]

    _, problems = refusal(tmp_path, extract_only_without_its_price)
    ((_, field, message),) = problems
    assert (
        field == "vendors.exa.prices_usd" and "no price for 'page.text', a unit exa bills extract calls in" in message
    )


def test_the_vendors_own_dollar_charge_is_priced_at_one_dollar(tmp_path):
    _, problems = refusal(tmp_path, lambda d: d["vendors"]["exa"]["prices_usd"].update(usd=0.5))
    assert [field for _, field, _ in problems] == ["vendors.exa.prices_usd.usd"]


@pytest.mark.parametrize("misspelt, nearest", [("tavilly", "tavily"), ("bravve", "brave")])
def test_a_vendor_key_that_names_no_adapter_is_refused_with_the_vendors_and_the_nearest(tmp_path, misspelt, nearest):
    def rename(d):
        d["vendors"][misspelt] = d["vendors"].pop(nearest)

    path, problems = refusal(tmp_path, rename)
    ((line, field, message),) = problems
    assert field == f"vendors.{misspelt}" and line_text(path, line) == f"{misspelt}:"
    assert f"did you mean {nearest!r}" in message
    assert ", ".join(sorted(available_adapters())) in message  # which names exist


def test_a_live_vendor_without_a_spend_ceiling_is_refused(tmp_path):
    def uncapped(d):
        del d["vendors"]["serpapi"]["spend_ceiling_usd"]

    path, problems = refusal(tmp_path, uncapped, LIVE)
    ((line, field, message),) = problems
    assert field == "vendors.serpapi.spend_ceiling_usd" and line_text(path, line) == "serpapi:"
    assert "required in live mode" in message


def test_a_simulated_vendor_may_run_without_a_ceiling():
    data = yaml.safe_load(DEMO.read_text())
    del data["vendors"]["serpapi"]["spend_ceiling_usd"]
    from bench_assets.manifest import parse_manifest

    assert parse_manifest(yaml.safe_dump(data), "m.yaml").vendors["serpapi"].spend_ceiling_usd is None


# ##### AN UNPRICED UNIT AT RUN TIME


def test_a_response_billed_in_an_unpriced_unit_has_no_known_spend():
    """Parallel passes a SKU it does not know through under its own name: priced nowhere."""
    adapter = get_adapter("parallel")
    body = '{"search_id": "s1", "results": [], "usage": [{"name": "sku_search", "count": 1}, {"name": "sku_new", "count": 2}]}'
    prices = {"request.search": 0.005, "result.search_extra": 0.001, "request.extract": 0.001}
    reading = read_attempt(adapter, prices, "search", 200, {}, body, None)
    assert reading.unpriced == ("sku_new",) and reading.billed_usd is None  # not 0.005: unknown
    assert unpriced_units({"a": 1.0, "b": 0.0}, {}) == ("a",)  # a unit billed nothing is no problem
    priced = read_attempt(adapter, {**prices, "sku_new": 0.002}, "search", 200, {}, body, None)
    assert priced.unpriced == () and priced.billed_usd == pytest.approx(0.009)


def test_a_call_stopped_for_an_unpriced_unit_is_classified_and_resumable():
    stop = unpriced_stop({"sku_new", "sku_b"})
    assert stop == f"{UNPRICED_UNIT_STOP}: sku_b, sku_new"
    classified = classify_response(get_adapter("parallel"), "search", None, {}, None, stop)
    assert classified.response_class == "quota" and "sku_b, sku_new" in (classified.detail or "")
    archived = pd.DataFrame(
        [
            {"query_id": "q1", "capability": "search", "attempt": 1, "transport_error": None},
            {"query_id": "q2", "capability": "search", "attempt": 1, "transport_error": stop},
            {"query_id": "q3", "capability": "search", "attempt": 1, "transport_error": stop},
            {"query_id": "q3", "capability": "search", "attempt": 2, "transport_error": None},  # sent since
        ]
    )
    assert stopped_for_unpriced(archived) == {("q2", "search")}
    assert stopped_for_unpriced(pd.DataFrame()) == set()


def test_the_live_manifest_paces_serpapi_and_jina_as_their_plans_documented_limits_allow():
    """Each pace is under the limit the vendor's own page gives for the pinned plan, and the archived
    pricing text the manifest pins cites that page."""
    live = load_manifest(LIVE)

    def cited(vendor: str) -> str:
        spec = live.vendors[vendor]
        assert spec.pricing_source is not None
        return " ".join((ROOT / spec.pricing_source.file).read_text().split())

    serpapi = cited("serpapi")
    assert "https://serpapi.com/account-api" in serpapi and "Developer plan: 1,000 searches an hour" in serpapi
    assert live.vendors["serpapi"].plan.startswith("Developer")
    assert live.vendors["serpapi"].rate_limit("search") * 3600 <= 1000
    jina = cited("jina")
    assert "https://jina.ai/en-US/api-dashboard/rate-limit/" in jina
    assert "100 RPM with a paid key" in jina and "500 RPM with a paid key" in jina
    assert "paid key" in live.vendors["jina"].plan
    assert live.vendors["jina"].rate_limit("search") * 60 <= 100
    assert live.vendors["jina"].rate_limit("extract") * 60 <= 500


def test_the_guardrails_doc_lists_each_adapters_billing_units_as_declared():
    doc = (ROOT / "docs" / "live-run-guardrails.md").read_text()
    for name in sorted(available_adapters()):
        adapter = get_adapter(name)
        cells = [
            ", ".join(f"`{u}`" for u in sorted(adapter.billing_units[cap])) if cap in adapter.capabilities else "—"
            for cap in ("search", "extract")
        ]
        assert f"| {name} | {cells[0]} | {cells[1]} |" in doc, name


def test_the_errata_doc_example_is_a_valid_errata_file(tmp_path):
    from bench_assets.publish.errata import load_errata

    doc = (ROOT / "docs" / "errata-yaml.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "errata.yaml"
    path.write_text(example)
    (entry,) = load_errata(path)
    assert entry.id == "E1" and entry.action == "rescore" and entry.changes == {"prices_usd": {"request.search": 0.009}}


def test_an_estimate_caveats_only_what_its_configuration_sends():
    """Tavily's extract credits are whole per fifth URL (a caveat); its searches bill whole credits
    known before the call, so a search-only mode (tavily.advanced) carries no caveat."""
    from bench_assets.fetch.estimate import estimate_spend

    manifest = load_manifest(DEMO)
    caveats = {e.vendor: e.caveat for e in estimate_spend(manifest, [])}
    assert manifest.vendors["tavily"].capabilities == {"search", "extract"}
    assert "fifth" in (caveats["tavily"] or "")
    assert manifest.vendors["tavily.advanced"].capabilities == {"search"}
    assert caveats["tavily.advanced"] is None
