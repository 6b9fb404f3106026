"""Document identity (`metrics.identity`): a golden row names a document, not a spelling.

The vectors (bench_assets_tests/fixtures/identity/registry_url_forms.json) are written by
scripts/identity_vectors.py from the real records of the registry extracts: every URL form the
registry serves the golden document under must be a hit for the golden URL (with normalization
alone none is), and no near miss (another document of the same registry, a page that is no
document) may be. Both `metrics.hit_at_k` and the vectorized scorer are held to them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench_assets.metrics import (
    IDENTITY_RULES_VERSION,
    document_key,
    first_hit_rank,
    hit_at_k,
    identity_rules,
    match_key,
    normalize_url,
)
from bench_assets.metrics.identity import RULES, site_of
from bench_assets.registries import available_registries
from bench_assets.score.vector import score_result_lists

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "bench_assets_tests" / "fixtures" / "identity" / "registry_url_forms.json").read_text())


def _script():
    spec = importlib.util.spec_from_file_location("identity_vectors", ROOT / "scripts" / "identity_vectors.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_vector_file_is_what_the_extracts_give():
    assert _script().render() == (ROOT / "bench_assets_tests/fixtures/identity/registry_url_forms.json").read_text()
    assert VECTORS["identity_rules_version"] == IDENTITY_RULES_VERSION


def test_every_registry_url_form_of_the_golden_document_is_a_hit():
    documents = VECTORS["documents"]
    assert {d["registry"] for d in documents} == set(available_registries())
    same = [(d["golden_url"], url) for d in documents for url in d["same_document"]]
    assert len(same) == VECTORS["same_document_urls"] >= 600
    # Normalization alone equates none of them: this is what the identity rules add.
    assert not any(normalize_url(golden) == normalize_url(url) for golden, url in same)
    missed = [(golden, url) for golden, url in same if not hit_at_k([golden], [url], 1)]
    assert missed == []


def test_no_near_miss_is_a_hit():
    near = [(d["golden_url"], m["url"], m["why"]) for d in VECTORS["documents"] for m in d["not_the_document"]]
    assert len(near) >= 400
    hits = [(golden, url, why) for golden, url, why in near if hit_at_k([golden], [url], 10)]
    assert hits == []


def test_the_vectorized_scorer_agrees_on_every_vector():
    """Each document is one query whose results are its near misses first, then its other forms:
    the first hit is the first other form, exactly as `first_hit_rank` says."""
    golden_rows, result_rows, expected = [], [], {}
    for i, d in enumerate(VECTORS["documents"]):
        query = f"q{i:03d}"
        golden_rows.append({"query_id": query, "url": d["golden_url"]})
        listed = [m["url"] for m in d["not_the_document"]] + d["same_document"]
        result_rows += [{"query_id": query, "rank": r, "url": u} for r, u in enumerate(listed, start=1)]
        expected[query] = first_hit_rank([d["golden_url"]], listed)
        assert expected[query] == len(d["not_the_document"]) + 1
    hits, _ = score_result_lists(pd.DataFrame(result_rows), pd.DataFrame(golden_rows), ks=(1, 10))
    got = {q: (None if pd.isna(r) else int(r)) for q, r in zip(hits["query_id"], hits["first_hit_rank"])}
    assert got == expected


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://www.rfc-editor.org/rfc/rfc9110", "rfc:9110"),
        ("https://www.rfc-editor.org/rfc/rfc9110.txt", "rfc:9110"),
        ("https://datatracker.ietf.org/doc/html/rfc9110.html", "rfc:9110"),
        ("https://DOI.org/10.17487/rfc0791", "rfc:791"),
        ("https://www.rfc-editor.org/rfc/rfc9111", "rfc:9111"),
        ("https://www.rfc-editor.org/rfc/rfc91100", "rfc:91100"),
        ("https://www.rfc-editor.org/rfc/rfc0791", None),  # the RFC Editor does not pad its paths
        ("https://www.rfc-editor.org/rfc/rfc9110.json", None),  # the metadata record
        ("https://www.rfc-editor.org/rfc/RFC9110", None),  # path case matters
        ("https://datatracker.ietf.org/doc/rfc9110/bibtex", None),
        ("https://datatracker.ietf.org/doc/draft-ietf-httpbis-semantics/", None),
        ("https://arxiv.org/abs/2106.09685v3", "arxiv:2106.09685"),
        ("https://arxiv.org/pdf/2106.09685", "arxiv:2106.09685"),
        ("https://browse.arxiv.org/html/2308.05590v2/", "arxiv:2308.05590"),
        ("https://doi.org/10.48550/arXiv.2202.01037", "arxiv:2202.01037"),
        ("http://export.arxiv.org/abs/hep-th/9901001v1", "arxiv:hep-th/9901001"),
        ("https://arxiv.org/abs/math.CA/0611800v2", "arxiv:math/0611800"),
        ("https://arxiv.org/html/2106.09685v1/x1.png", None),
        ("https://arxiv.org/abs/2106.0968", None),
        ("https://peps.python.org/pep-0008/", "pep:8"),
        ("https://peps.python.org/8/", "pep:8"),
        ("https://python.org/dev/peps/pep-0008", "pep:8"),
        ("https://www.python.org/peps/pep-0008.html", "pep:8"),
        ("https://peps.python.org/pep-0080/", "pep:80"),
        ("https://peps.python.org/pep-8/", None),
        ("https://www.federalregister.gov/d/2020-28567/p-12", "fr:2020-28567"),
        ("https://www.federalregister.gov/documents/2020/12/31/2020-28567", "fr:2020-28567"),
        ("https://www.federalregister.gov/documents/2009/06/01/E9-12345/a-slug", "fr:E9-12345"),
        ("https://www.govinfo.gov/content/pkg/FR-2020-12-31/html/2020-28567.htm", "fr:2020-28567"),
        ("https://www.govinfo.gov/content/pkg/FR-2020-12-31/pdf/FR-2020-12-31.pdf", None),
        ("https://www.federalregister.gov/documents/2020/12/31", None),
        (
            "https://www.sec.gov/Archives/edgar/data/1318605/000095017022019867/tsla-20220930.htm",
            "edgar:000095017022019867",
        ),
        ("https://www.sec.gov/Archives/edgar/data/0001318605/000095017022019867", "edgar:000095017022019867"),
        ("https://www.sec.gov/Archives/edgar/data/1318605/0000950170-22-019867.txt", "edgar:000095017022019867"),
        (
            "https://www.sec.gov/ix?doc=/Archives/edgar/data/1318605/000095017022019867/tsla-20220930.htm",
            "edgar:000095017022019867",
        ),
        (
            "https://www.sec.gov/ix?doc=%2FArchives%2Fedgar%2Fdata%2F1318605%2F000095017022019867%2Fx.htm",
            "edgar:000095017022019867",
        ),
        ("https://www.sec.gov/Archives/edgar/data/1318605", None),
        (
            "https://www.sec.gov/ix?doc=/Archives/edgar/data/1318605/000095017022019867/x.htm/",
            "edgar:000095017022019867",
        ),
        ("https://www.sec.gov/Archives/edgar/data/1318605/000095017022019867/sub/x.htm", None),
        ("https://mirror.example/rfc/rfc9110", None),
        ("", None),
    ],
)
def test_document_keys(url, key):
    assert document_key(normalize_url(url)) == key


def test_another_document_of_the_same_registry_is_never_a_hit():
    golden = ["https://www.rfc-editor.org/rfc/rfc9110"]
    assert hit_at_k(golden, ["https://datatracker.ietf.org/doc/html/rfc9110"], 1)
    for other in ("https://www.rfc-editor.org/rfc/rfc9111", "https://www.rfc-editor.org/rfc/rfc91100"):
        assert not hit_at_k(golden, [other], 10)
    filing = ["https://www.sec.gov/Archives/edgar/data/1318605/000095017022019867/tsla-20220930.htm"]
    assert not hit_at_k(
        filing, ["https://www.sec.gov/Archives/edgar/data/1318605/000095017022012936/tsla-20220630.htm"], 10
    )


@given(st.text(max_size=40))
def test_a_key_never_equals_a_normalized_form(text):
    form = normalize_url(text)
    assert not form.startswith("@")
    assert match_key(form) == form or match_key(form) == "@" + str(document_key(form))


def test_the_rules_are_published_as_data_with_their_version_and_citations():
    rules = identity_rules()
    assert rules["version"] == IDENTITY_RULES_VERSION
    assert [r["registry"] for r in rules["registries"]] == [r.registry for r in RULES]
    assert {r["registry"] for r in rules["registries"]} == set(available_registries())
    for rule in rules["registries"]:
        assert rule["url_forms"] and rule["never"] and rule["identity"]
        assert rule["citations"] and all(c["url"].startswith("https://") and c["source"] for c in rule["citations"])
    json.dumps(rules)  # printable as it is (leaderboard.json, the methodology page)


def test_sites_of_registry_forms_are_the_registry():
    assert site_of(normalize_url("https://datatracker.ietf.org/doc/rfc1")) == site_of(
        normalize_url("https://www.rfc-editor.org/rfc/rfc2")
    )
    assert site_of(normalize_url("https://example.com/x")) == "example.com"


def test_the_docs_pages_print_what_the_code_applies():
    spec = importlib.util.spec_from_file_location("scoring_docs", ROOT / "scripts" / "scoring_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run python scripts/scoring_docs.py"


def test_simulated_vendors_return_registry_pages_under_the_registrys_own_forms():
    """The simulator's vendors return a registry page under the canonical URL for a share of pages
    and under another of the registry's URL forms for the rest, fixed per vendor and page; every
    such URL names the page's document and leads back to the page."""
    from bench_assets.simulator.registry_site import CANONICAL_SHARE, RegistrySite

    site = RegistrySite()
    pages = list(site.pages.values())
    returned = [(page, site.vendor_url(vendor, page)) for vendor in ("exa", "brave", "serper") for page in pages]
    other = [(page, url) for page, url in returned if normalize_url(url) != normalize_url(page.url)]
    assert 0.4 < len(other) / len(returned) < 0.8 and CANONICAL_SHARE == 0.4
    assert [site.vendor_url("exa", page) for page in pages] == [url for _, url in returned[: len(pages)]]  # fixed
    for page, url in returned:
        found = site.page(url)  # the page, or the filing's other page (its index) for an EDGAR form
        assert found is not None and match_key(normalize_url(found.url)) == match_key(normalize_url(page.url))
        if page.url.startswith("https://data.sec.gov/"):  # an XBRL concept page: no rule, its own URL
            assert url == page.url
        else:
            assert hit_at_k([page.url], [url], 1), (page.url, url)
