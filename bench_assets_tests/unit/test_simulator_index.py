"""The simulator's search index gives the answers it always gave, faster: BM25 scores bit for bit
equal to `rank_bm25.BM25Okapi` (the ranking the demo's figures were computed from), and the same
hits as the per-page ranking loop it replaced."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from bench_assets.golden.planted import Page, build_corpus, demo_golden_rows
from bench_assets.simulator import index as index_module
from bench_assets.simulator.index import (
    Bm25Postings,
    Hit,
    SearchIndex,
    best_snippet,
    digest_units,
    tokenize,
    unit_hash,
    unit_hashes,
)
from bench_assets.simulator.profiles import PROFILES, VendorProfile
from bench_assets.simulator.registry_site import SEARCH_SHARE, RegistrySite, registry_pages


@pytest.fixture(scope="module")
def corpus():
    return build_corpus(pages_per_stratum=14)


@pytest.fixture(scope="module")
def index(corpus) -> SearchIndex:
    return SearchIndex(corpus)


@pytest.fixture(scope="module")
def reference_bm25(corpus) -> BM25Okapi:
    return BM25Okapi([tokenize(p.text()) for p in corpus.pages.values()])


def queries(pages_per_stratum: int = 14) -> list[str]:
    """Every search and answer row's text, and queries that repeat words, hold unknown ones or only
    words nearly every page holds (their idf is negative, floored at epsilon × the mean)."""
    texts = [
        r.request_text for r in demo_golden_rows(rows_per_stratum=3 * pages_per_stratum) if r.task_type != "extract"
    ]
    return [*texts, "the the a and 2026", "zzqx unknown words", "revenue revenue revenue", "a", "digest readers topic"]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_scores_are_bm25okapi_bit_for_bit_on_the_demo_corpus(corpus, reference_bm25):
    postings = Bm25Postings(tokenize(p.text()) for p in corpus.pages.values())
    for query in queries():
        terms = tokenize(query)
        assert same_bits(postings.scores(terms), reference_bm25.get_scores(terms)), query


@pytest.mark.parametrize("seed", range(5))
def test_scores_are_bm25okapi_bit_for_bit_on_random_corpora(seed):
    """Skewed word frequencies (some words in most documents), empty and one-word documents, other
    k1, b and epsilon."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(len(words))]
    documents = [rng.choices(words, weights, k=rng.choice([0, 1, 3, 40, 200])) for _ in range(400)]
    params = {"k1": rng.uniform(0.5, 2.5), "b": rng.uniform(0, 1), "epsilon": rng.uniform(0, 0.5)}
    reference, postings = BM25Okapi(documents, **params), Bm25Postings(documents, **params)
    for _ in range(200):
        terms = rng.choices([*words, "absent"], k=rng.randint(1, 12))
        assert same_bits(postings.scores(terms), reference.get_scores(terms)), terms


def reference_search(
    bm25: BM25Okapi, pages: list[Page], query: str, vendor: str, profile: VendorProfile, n: int, extra: list[Page]
) -> list[Hit]:
    """The ranking as the simulator defined it before its index was rewritten: every covered page
    with a positive BM25 score, relative to the best, plus its noise; sorted by score, then URL."""
    terms = tokenize(query)
    if not terms:
        return []
    scores = bm25.get_scores(terms)
    top = max(scores.max(), 1e-9)
    ranked = []
    for page, score in zip(pages, scores):
        if score > 0 and unit_hash(vendor, "coverage", page.url) < profile.coverage:
            noise = unit_hash(vendor, "rank", query, page.url) * (1.0 - profile.quality) * 1.6
            ranked.append((score / top + noise, page))
    for page in extra:
        share = len(set(terms) & set(tokenize(page.text()))) / len(set(terms))
        if share > 0:
            ranked.append((share + unit_hash(vendor, "rank", query, page.url) * (1.0 - profile.quality) * 1.6, page))
    ranked.sort(key=lambda x: (-x[0], x[1].url))
    return [Hit(page=p, score=round(s, 4), snippet=reference_snippet(p, terms)) for s, p in ranked[:n]]


def reference_snippet(page: Page, terms: list[str], sentences: int = 2) -> str:
    wanted = set(terms)
    candidates = [s for p in page.paragraphs for s in re.split(r"(?<=\.)\s+", p) if s]
    scored = sorted(range(len(candidates)), key=lambda i: (-len(wanted & set(tokenize(candidates[i]))), i))
    return " ".join(candidates[i] for i in sorted(scored[:sentences]))


@pytest.mark.parametrize("first_noised", [index_module.FIRST_NOISED, 0, 5])
@pytest.mark.parametrize("vendor", sorted(PROFILES))
def test_search_gives_the_hits_of_the_reference_ranking(
    corpus, index, reference_bm25, vendor, first_noised, monkeypatch
):
    """Same pages, same order, same scores (as floats and as their types' repr), same snippets, for
    every vendor and depth, with pages from outside the BM25 model competing. With fewer pages
    hashed first than the simulator does, the second round (pages that can still reach the n-th
    best of them) does more of the work: the answers stay the same."""
    monkeypatch.setattr(index_module, "FIRST_NOISED", first_noised)
    pages = list(corpus.pages.values())
    extra = list(registry_pages().values())[::7]
    profile = PROFILES[vendor]
    for i, query in enumerate(queries()):
        for n in (0, 1, 3, 10, 100) if i % 5 == 0 else (10,):
            got = index.search(query, vendor, profile, n, extra_pages=extra if i % 3 == 0 else None)
            want = reference_search(reference_bm25, pages, query, vendor, profile, n, extra if i % 3 == 0 else [])
            assert [(h.page.url, repr(h.score), h.snippet) for h in got] == [
                (h.page.url, repr(h.score), h.snippet) for h in want
            ], (query, n)


def test_snippets_are_the_pages_best_sentences(corpus):
    for page in list(corpus.pages.values())[:200]:
        for terms in (tokenize(page.query or page.title), ["the"], ["nothing"]):
            assert best_snippet(page, terms) == reference_snippet(page, terms)


def test_registry_pages_compete_as_they_did(corpus):
    """The registry pages a vendor's search adds: covered, holding at least SEARCH_SHARE of the
    query's words, in page order (now looked up by word instead of scanned)."""
    site = RegistrySite()
    pages = list(site.pages.values())
    words = [set(tokenize(p.text())) for p in pages]
    texts = [p.title for p in pages] + [" ".join(p.paragraphs[:2]) for p in pages[::5]] + queries()[::4]
    found = 0
    for vendor, profile in sorted(PROFILES.items()):
        covered = [unit_hash(vendor, "coverage", p.url) < profile.coverage for p in pages]
        for text in texts:
            terms = set(tokenize(text))
            want = [
                p
                for p, held, ok in zip(pages, words, covered)
                if terms and ok and len(terms & held) / len(terms) >= SEARCH_SHARE
            ]
            assert site.searchable(vendor, profile, text) == want, (vendor, text)
            found += len(want)
    assert found > len(texts)


def test_hashing_at_once_gives_unit_hash_numbers():
    urls = [p.url for p in build_corpus(pages_per_stratum=14).pages.values()]
    at_once = unit_hashes(("jina", "rank", "ünïcode query"), [u.encode() for u in urls])
    assert at_once.tolist() == [unit_hash("jina", "rank", "ünïcode query", u) for u in urls]
    assert unit_hashes(("exa", "coverage"), []).tolist() == []


def test_digest_units_round_as_python_does():
    """The 64-bit integers whose rounding to a float is closest to a tie, or is one."""
    edges = [0, 1, 2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3, 2**63 - 1, 2**63, 2**63 + 1]
    edges += [2**64 - 1, 2**64 - 2**10, 2**64 - 2**10 - 1, 2**64 - 2**11 + 2**10, 2**64 - 2**11 + 2**10 + 1]
    rng = random.Random(7)
    edges += [rng.getrandbits(64) for _ in range(20_000)]
    edges += [(rng.getrandbits(53) << 11) | (1 << 10) for _ in range(2_000)]  # exact ties at 2**63 and above
    digests = b"".join(e.to_bytes(8, "big") + bytes(24) for e in edges)
    assert digest_units(digests).tolist() == [e / 2**64 for e in edges]
