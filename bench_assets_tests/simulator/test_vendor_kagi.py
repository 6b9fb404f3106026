"""Kagi Search API: our adapter and the official SDK against the simulator over a real socket, and
the vendor's documented error bodies read by our adapter."""

from __future__ import annotations

import json
from datetime import datetime

import httpx
import pytest
import yaml

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.kagi import MANIFEST_DEFAULTS, KagiAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.helpers import REPO
from bench_assets_tests.simulator.vendor_contract import VendorContract, sdk_base_url

VENDOR = "kagi"
ADAPTER = KagiAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_like_the_vendor(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.snippet and hit.published.startswith(page.published)
    body = resp.json()
    assert parsed.request_id == body["meta"]["id"]
    # Related searches (t=1) are in data[] but are not results.
    assert any(item["t"] == 1 for item in body["data"])
    assert len(parsed.results) == sum(item["t"] == 0 for item in body["data"])
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("GET", "/api/v0/search", True)
    assert logged["params"] == {"q": page.query, "limit": "10"}
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.012)


def test_api_balance_goes_down_by_the_price_of_each_search(simulator):
    page = contract.golden_page()
    first, _ = contract.call(simulator, VendorTask("search", page.query))
    second, _ = contract.call(simulator, VendorTask("search", page.query))
    drop = first.json()["meta"]["api_balance"] - second.json()["meta"]["api_balance"]
    assert drop == pytest.approx(MANIFEST_DEFAULTS["prices_usd"]["request.search"], abs=1e-6)


def check_typed_dict(value, cls) -> None:
    """`value` has every required key of the TypedDict `cls` and no key it does not declare."""
    assert isinstance(value, dict)
    assert cls.__required_keys__ <= set(value), f"{cls.__name__} misses {cls.__required_keys__ - set(value)}"
    assert set(value) <= cls.__required_keys__ | cls.__optional_keys__, f"{cls.__name__} has unknown keys"


def test_official_sdk_reads_the_simulator_and_agrees_with_our_adapter(simulator, monkeypatch):
    from kagiapi import KagiClient
    from kagiapi.models import Meta, SearchItem, SearchResponse

    page = contract.golden_page()
    # kagiapi's only base-URL setting is the class attribute KagiClient.BASE_URL (kagiapi/api.py),
    # set here to the simulator's port for kagi.com; the rest is the SDK's own code.
    monkeypatch.setattr(KagiClient, "BASE_URL", sdk_base_url(simulator.base_url, "https://kagi.com/api/v0"))
    client = KagiClient(api_key=sim_key(VENDOR))
    captured = []
    client.session.hooks["response"].append(lambda response, *args, **kwargs: captured.append(response))
    sdk = client.search(page.query, limit=10)
    # kagiapi's models are TypedDicts it never checks (and pydantic cannot read typing.TypedDict on
    # Python 3.11), so the simulator's answer is held to their declared keys here.
    check_typed_dict(sdk, SearchResponse)
    check_typed_dict(sdk["meta"], Meta)
    assert isinstance(sdk["meta"]["api_balance"], float)
    for item in sdk["data"]:
        check_typed_dict(item, SearchItem)
        if item["t"] == 0:
            assert isinstance(item["rank"], int) and datetime.fromisoformat(item["published"])
        else:
            assert item["t"] == 1 and all(isinstance(s, str) for s in item["list"])
    raw = captured[-1]
    ours = ADAPTER.parse(VendorTask("search", page.query, 10), raw.status_code, dict(raw.headers), raw.text)
    assert [r.url for r in ours.results] == [item["url"] for item in sdk["data"] if item["t"] == 0]
    assert ours.request_id == sdk["meta"]["id"]


def test_official_sdk_raises_on_a_wrong_key(simulator, monkeypatch):
    import requests
    from kagiapi import KagiClient

    monkeypatch.setattr(KagiClient, "BASE_URL", sdk_base_url(simulator.base_url, "https://kagi.com/api/v0"))
    with pytest.raises(requests.HTTPError) as raised:
        KagiClient(api_key="wrong").search("anything")
    assert raised.value.response.status_code == 401


def test_wrong_key_gets_the_vendor_401_and_is_classed_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401)
    assert resp.json()["error"][0]["code"] == 2 and resp.json()["data"] is None


@pytest.mark.parametrize("params", [{}, {"q": " "}, {"q": "x", "limit": "ten"}])
def test_malformed_request_gets_the_vendor_400_code_1(simulator, params):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.get(url, params=params, headers={"Authorization": f"Bot {sim_key(VENDOR)}"}, timeout=10)
    assert resp.status_code == 400 and resp.json()["error"][0]["code"] == 1
    assert ADAPTER.parse(VendorTask("search", "x"), 400, dict(resp.headers), resp.text).error_class == "bad_request"


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"meta": {"id": "x"}, "data": None}))


def test_search_is_pinned_to_v0_and_v1_is_not_served_in_v0_shape(simulator):
    # v1 is Kagi's early-access preview with another contract (data/pricing/kagi.md): every
    # manifest we ship pins v0, and the simulator refuses v1 rather than answer it as v0.
    assert MANIFEST_DEFAULTS["endpoints"]["search"] == "https://kagi.com/api/v0/search"
    for manifest in sorted((REPO / "data").glob("snapshots/*/manifest.yaml")):
        kagi = (yaml.safe_load(manifest.read_text())["vendors"] or {}).get("kagi")
        if kagi:
            assert kagi["endpoints"]["search"] == "https://kagi.com/api/v0/search", manifest
    resp = httpx.get(
        simulated_url("https://kagi.com/api/v1/search", simulator.base_url),
        params={"q": "anything"},
        headers={"Authorization": f"Bot {sim_key(VENDOR)}"},
        timeout=10,
    )
    assert resp.status_code == 404


test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()
