"""The pure parts of `bench preflight`: which call is cheapest, and what a vendor says is left."""

from __future__ import annotations

import json

import yaml

from bench_assets.adapters import get_adapter
from bench_assets.fetch.preflight import cheapest_call, reported_balance
from bench_assets.manifest import VendorSpec
from bench_assets_tests.helpers import DEMO_MANIFEST

SPECS = yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]


def spec(vendor: str, **changes) -> VendorSpec:
    return VendorSpec.model_validate({**SPECS[vendor], **changes})


def test_the_cheapest_documented_call_at_the_pinned_prices():
    brave = cheapest_call(spec("brave"), get_adapter("brave"), "q", "https://example.com/")
    assert (brave.capability, brave.text, brave.expected_usd) == ("search", "q", 0.005)  # search only
    tavily = cheapest_call(spec("tavily"), get_adapter("tavily"), "q", "https://example.com/")
    assert tavily.capability == "extract" and tavily.text == "https://example.com/"  # 0.2 credit < 1 credit
    assert (
        tavily.expected_usd
        < cheapest_call(
            spec("tavily", endpoints={"search": SPECS["tavily"]["endpoints"]["search"]}),
            get_adapter("tavily"),
            "q",
            "u",
        ).expected_usd
    )


def test_a_tie_goes_to_search():
    prices = {"request.search": 0.001, "request.extract": 0.001}
    call = cheapest_call(spec("linkup", prices_usd=prices), get_adapter("linkup"), "q", "https://example.com/")
    assert call.capability == "search"


def test_brave_and_kagi_report_what_is_left_and_the_others_do_not():
    headers = {"X-RateLimit-Limit": "50, 15000", "X-RateLimit-Remaining": "49, 14000"}
    assert reported_balance("brave", headers, "{}") == "14000 of 15000 requests left this month"
    assert reported_balance("brave", {}, "{}") is None
    body = json.dumps({"meta": {"id": "x", "api_balance": 12.345}, "data": []})
    assert reported_balance("kagi", {}, body) == "$12.35 API balance"
    assert reported_balance("kagi", {}, "not json") is None
    assert reported_balance("exa", headers, body) is None
