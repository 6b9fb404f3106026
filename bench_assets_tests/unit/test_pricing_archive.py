"""Every price a manifest pins traces to archived pricing text: a live manifest must name it
(`pricing_source`), and each price of the demo manifest is either stated in its archived file or
declared there, plainly, as the project's assumption with the reason."""

from __future__ import annotations

import re

import pytest
import yaml

from bench_assets.errors import BenchInputError
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import DEMO_MANIFEST

ROOT = DEMO_MANIFEST.parents[3]
ASSUMPTION = "is the project's assumption"
# "$5 per 1,000 requests", "$7 per 1k", "$50 for 50k", "$75 a month for 5,000 searches", "$0.05 per million
# tokens", "$0.008 per credit", "$0.005"
_PRICE = re.compile(
    r"\$(?P<usd>\d[\d,]*(?:\.\d+)?)(?:\s+(?:per|for|a month for)\s+(?:(?P<qty>\d[\d,]*(?:\.\d+)?)\s*)?"
    r"(?P<scale>k|M|million)?\b)?"
)
_SCALE = {None: 1, "k": 1_000, "M": 1_000_000, "million": 1_000_000}


def prices_stated(text: str) -> list[float]:
    """USD per unit of every price the text states ("$5 per 1,000 requests" is 0.005)."""
    out = []
    for m in _PRICE.finditer(text):
        usd = float(m["usd"].replace(",", ""))
        qty = (float(m["qty"].replace(",", "")) if m["qty"] else 1.0) * _SCALE[m["scale"]]
        out.append(usd / qty)
    return out


def test_prices_stated_reads_the_ways_pricing_pages_write_a_price():
    assert prices_stated(
        "Search: $7 per 1k requests; $1,250 for 2.5M; $75 a month for 5,000 searches"
    ) == pytest.approx([0.007, 0.0005, 0.015])
    assert prices_stated("| deep | $0.05 |, PAYGO $0.008 per credit, $0.05 per million tokens") == pytest.approx(
        [0.05, 0.008, 5e-8]
    )


def test_a_live_manifest_must_name_the_archived_pricing_of_every_vendor(tmp_path):
    data = yaml.safe_load(DEMO_MANIFEST.read_text())
    data["mode"] = "live"
    for vendor in ("exa", "kagi"):
        del data["vendors"][vendor]["pricing_source"]
    path = tmp_path / data["snapshot_id"] / "manifest.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BenchInputError) as refused:
        load_manifest(path)
    problems = {field: (line, message) for line, field, message in refused.value.problems}
    assert set(problems) == {"vendors.exa.pricing_source", "vendors.kagi.pricing_source"}
    assert all("required in live mode" in message for _, message in problems.values())
    line, _ = problems["vendors.kagi.pricing_source"]
    assert path.read_text().splitlines()[line - 1].strip() == "kagi:"  # where the missing field belongs
    data["mode"] = "simulated"  # a simulated manifest may go without (nothing is billed)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert load_manifest(path).vendors["exa"].pricing_source is None


def test_every_pinned_price_is_in_its_archived_pricing_text_or_declared_an_assumption():
    manifest = load_manifest(DEMO_MANIFEST)
    manifest_text = DEMO_MANIFEST.read_text()
    assumed = set()
    for vendor, spec in sorted(manifest.vendors.items()):
        text = (ROOT / spec.pricing_source.file).read_text()
        documented, _, assumption = text.partition("\n## The pinned price")
        stated = prices_stated(documented)
        for unit, price in spec.prices_usd.items():
            if unit == "usd":  # Exa reports its charge in USD (costDollars): one dollar is one dollar
                continue
            if any(abs(price - p) <= 1e-9 + 1e-6 * price for p in stated):
                continue
            # not in the vendor's text: the file must say it is the project's assumption, and why
            assert ASSUMPTION in assumption and len(assumption) > 200, (vendor, unit, price)
            assert any(abs(price - p) <= 1e-12 + 1e-6 * price for p in prices_stated(assumption)), (vendor, unit)
            assert (
                f"the project's assumption, not a documented price; why in {spec.pricing_source.file}" in manifest_text
            ), vendor  # and the manifest says so beside the price
            assumed.add(vendor)
    assert assumed == {"firecrawl", "jina"}  # the two vendors whose documentation gives no price per unit
