"""Each documented mode of a provider, sent by its adapter to the simulator over HTTP, is its own
service: the mode's own request parameter, its own price, and deeper modes slower and better.

The ranking is read over many queries (the share of planted pages found in the top 10), so a
mode's quality is its behaviour, not one lucky query; a deeper mode's added latency is in its
profile (the simulator waits it out on every call, `Simulator.mode_delay`)."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import VendorTask
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.profiles import MODE_PROFILES, PROFILES
from bench_assets_tests.simulator.vendor_contract import demo_corpus

# provider: (its endpoint, the shallow mode, the deep mode, the request field, USD per call each).
# Brave's modes are its endpoints: the field is the path the request went to.
LADDERS = {
    "exa": ("https://api.exa.ai/search", "lite", "deep", "type", (0.004, 0.012)),
    "tavily": ("https://api.tavily.com/search", "basic", "advanced", "search_depth", (0.008, 0.016)),
    "linkup": ("https://api.linkup.so/v1/search", "standard", "deep", "depth", (0.005, 0.05)),
    # Parallel: basic and advanced (the default) are both $5 per 1,000 requests (data/pricing/parallel.md)
    "parallel": ("https://api.parallel.ai/v1/search", "basic", "advanced", "mode", (0.005, 0.005)),
    # Brave: Web Search and LLM Context, both $5 per 1,000 requests on the Search plan (data/pricing/brave.md)
    "brave": ("https://api.search.brave.com", "web", "llm_context", "endpoint_path", (0.005, 0.005)),
    "perplexity": ("https://api.perplexity.ai/search", "fast", "web", "search_type", (0.001, 0.005)),
}
QUERIES = 40


def endpoint_of(provider: str, mode: str) -> str:
    """The mode's endpoint: the provider's, or the mode's own path on the provider's host (Brave)."""
    url = LADDERS[provider][0]
    return url + str(get_adapter(provider).modes[mode].get("endpoint_path", ""))


def sent_value(req, field: str):
    """What the request sent for the mode's field: a JSON body's field, or the path it went to."""
    if field == "endpoint_path":
        return next(p for p in ("/res/v1/web/search", "/res/v1/llm/context") if urlsplit(req.url).path.endswith(p))
    return req.json_body[field]


def found_share(provider: str, mode: str, base_url: str, pages) -> tuple[float, list]:
    """The share of `pages` found in the top 10 in `mode`, the requests sent."""
    adapter = get_adapter(provider)
    endpoint = simulated_url(endpoint_of(provider, mode), base_url)
    found, sent = 0, []
    with httpx.Client(timeout=30) as client:
        for page in pages:
            task = VendorTask("search", page.query, 10)
            req = adapter.build(task, endpoint, sim_key(provider), adapter.modes[mode])
            sent.append(req)
            resp = client.request(req.method, req.url, headers=req.headers, params=req.params, json=req.json_body)
            parsed = adapter.parse(task, resp.status_code, dict(resp.headers), resp.text)
            assert parsed.error_class is None, (provider, mode, resp.status_code, resp.text[:200])
            found += normalize_url(page.url) in {normalize_url(r.url) for r in parsed.results}
    return found / len(pages), sent


@pytest.mark.parametrize("provider", sorted(LADDERS))
def test_a_deeper_mode_sends_its_parameter_ranks_better_and_bills_its_price(provider, simulator, sim_logs):
    _, shallow, deep, field, prices = LADDERS[provider]
    pages = list(demo_corpus().golden_pages)[:QUERIES]
    shares = {}
    for mode, price in zip((shallow, deep), prices, strict=True):
        httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
        shares[mode], sent = found_share(provider, mode, simulator.base_url, pages)
        assert {sent_value(r, field) for r in sent} == {get_adapter(provider).modes[mode][field]}
        bills = [b for b in sim_logs.billing() if b["endpoint"] == "search"]
        assert len(bills) == len(pages) and {round(b["usd"], 6) for b in bills} == {price}, mode
    assert shares[deep] > shares[shallow], shares


@pytest.mark.parametrize("provider", sorted(LADDERS))
def test_a_deeper_mode_is_slower_in_the_simulators_profiles(provider):
    _, shallow, deep, _, _ = LADDERS[provider]
    profile = {m: MODE_PROFILES[provider].get(m, PROFILES[provider]) for m in (shallow, deep)}
    assert profile[deep].latency_ms > profile[shallow].latency_ms
    assert profile[deep].quality > profile[shallow].quality and profile[deep].coverage >= profile[shallow].coverage
