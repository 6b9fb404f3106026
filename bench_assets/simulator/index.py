"""A BM25 index over the planted corpus, ranked per vendor profile, and per-vendor extraction.

The simulator's answers are what the demo's figures are computed from, so the ranking is defined
by `rank_bm25.BM25Okapi` (k1 1.5, b 0.75, epsilon 0.25) and must not drift: `Bm25Postings` gives
its scores bit for bit, from a sparse matrix of each posting's contribution, so that a query costs
the postings of its terms rather than a Python loop over the corpus per term (which made a search
grow with the corpus). The tests compare the two on a whole corpus.
"""

from __future__ import annotations

import hashlib
import math
import re
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.sparse import csc_array
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from bench_assets.golden.planted import Corpus, Page
from bench_assets.simulator.profiles import VendorProfile

_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=\.)\s+")
# Extracted texts kept (small: a page's text for each of the few extraction settings the
# profiles use). Exa's and Jina's searches extract every hit, most of them pages that recent
# searches found too, whose kept texts are then used again.
EXTRACT_CACHE_SIZE = 16_384
# Pages whose noise a search hashes first, beyond the n it returns: those with the highest BM25
# scores. The n-th best of their scores bounds which other pages can still make the top n (many
# pages of a query's stratum tie within the noise's reach of it, so the rest are hashed after).
FIRST_NOISED = 256
# Terms held by at least this share of the documents are kept as dense rows (few terms, so the
# dense rows stay small).
DENSE_SHARE = 0.125
_UPDATE, _DIGEST = type(hashlib.sha256()).update, type(hashlib.sha256()).digest


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def unit_hash(*parts: str) -> float:
    """A deterministic number in [0, 1) from strings: the simulator's only source of chance."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class Bm25Postings:
    """`rank_bm25.BM25Okapi(documents).get_scores(terms)`, bit for bit, without its per-term loop
    over every document.

    BM25Okapi adds, for each query term in order, idf × tf (k1 + 1) / (tf + k1 (1 − b + b dl / avgdl))
    to every document's score, 0 where the term is absent (and adding 0.0 leaves a float as it
    is). So each posting's contribution is computed once here, with the same float operations in
    the same order (idf with `math.log`, its floor from the same running sum, the length factor
    from the same numpy expression), and a query adds its terms' contributions to the documents
    that hold them, in query order."""

    def __init__(self, documents: Iterable[list[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        # Terms are numbered in first-seen order, which is BM25Okapi's order for its idf sum.
        self.vocabulary: dict[str, int] = {}
        doc_freq: list[int] = []
        doc_len: list[int] = []
        # one entry per (term, document) pair: a million at 700 pages per stratum, kept as C longs
        term_ids, doc_ids, tfs = array("q"), array("q"), array("q")
        for doc, tokens in enumerate(documents):
            doc_len.append(len(tokens))
            for word, count in Counter(tokens).items():
                term = self.vocabulary.setdefault(word, len(self.vocabulary))
                if term == len(doc_freq):
                    doc_freq.append(0)
                doc_freq[term] += 1
                term_ids.append(term)
                doc_ids.append(doc)
                tfs.append(count)
        self.size = len(doc_len)
        idf = self._idf(doc_freq, self.size, epsilon)
        avgdl = sum(doc_len) / self.size
        length = np.array(doc_len)
        length_factor = k1 * (1 - b + b * length / avgdl)
        docs, terms, tf = (np.frombuffer(a, dtype=np.int64) for a in (doc_ids, term_ids, tfs))
        contribution = idf[terms] * (tf * (k1 + 1) / (tf + length_factor[docs]))
        matrix = csc_array((contribution, (docs, terms)), shape=(self.size, len(idf)))
        self._starts = matrix.indptr
        self._docs = matrix.indices
        self._contributions = matrix.data
        # A term most documents hold ("the", "2026") is added as a dense row, its absent documents
        # adding 0.0 as in BM25Okapi: one pass instead of a gather and a scatter over them all.
        self._dense: dict[int, np.ndarray] = {}
        for term in np.flatnonzero(np.diff(self._starts) >= DENSE_SHARE * self.size).tolist():
            start, end = self._starts[term], self._starts[term + 1]
            self._dense[term] = np.zeros(self.size)
            self._dense[term][self._docs[start:end]] = self._contributions[start:end]

    @staticmethod
    def _idf(doc_freq: list[int], size: int, epsilon: float) -> np.ndarray:
        """BM25Okapi's idf: log(N − n + 0.5) − log(n + 0.5), negative ones floored at epsilon × the mean."""
        idf = [math.log(size - n + 0.5) - math.log(n + 0.5) for n in doc_freq]
        total = 0.0
        for value in idf:  # summed one by one in term order, as BM25Okapi does
            total += value
        floor = epsilon * (total / len(idf))
        return np.array([floor if value < 0 else value for value in idf])

    def scores(self, terms: list[str]) -> np.ndarray:
        """Every document's score for the query terms (repeated terms count again, unknown ones add nothing)."""
        score = np.zeros(self.size)
        for word in terms:
            term = self.vocabulary.get(word)
            if term is None:
                continue
            if term in self._dense:
                score += self._dense[term]
                continue
            start, end = self._starts[term], self._starts[term + 1]
            docs = self._docs[start:end]
            score[docs] += self._contributions[start:end]
        return score


@dataclass(frozen=True)
class Hit:
    page: Page
    score: float
    snippet: str


class SearchIndex:
    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.pages = list(corpus.pages.values())
        self.bm25 = Bm25Postings(tokenize(p.text()) for p in self.pages)
        # What noise hashes: the URLs side by side in one array (a gather reads neighbouring memory,
        # not a bytes object per page scattered over the heap; items come back without the padding,
        # and no URL ends in a NUL byte).
        self._urls = np.array([p.url.encode() for p in self.pages], dtype=bytes)
        self._coverage: dict[tuple[str, float], np.ndarray] = {}
        # Each hit page's sentences and their words, by URL (the page is kept to tell a sentinel
        # page published again under its URL).
        self._snippet_parts: dict[str, tuple[Page, SnippetParts]] = {}

    def scores(self, terms: list[str]) -> np.ndarray:
        """Every page's BM25 score for the query terms, in `self.pages` order."""
        return self.bm25.scores(terms)

    def _covered(self, vendor: str, coverage: float) -> np.ndarray:
        """Which pages are in this vendor's index (a mask in page order), drawn once per vendor."""
        key = (vendor, coverage)
        if key not in self._coverage:
            self._coverage[key] = unit_hashes((vendor, "coverage"), self._urls.tolist()) < coverage
        return self._coverage[key]

    def search(
        self, query: str, vendor: str, profile: VendorProfile, n: int, extra_pages: list[Page] | None = None
    ) -> list[Hit]:
        """The top `n` pages for this vendor: BM25 relative to the best page, plus a deterministic
        noise of up to (1 − quality) × 1.6 per (vendor, query, page), ties broken by URL."""
        terms = tokenize(query)
        if not terms or n <= 0:
            return []
        scores = self.scores(terms)
        top = max(scores.max(), 1e-9)
        eligible = np.flatnonzero((scores > 0) & self._covered(vendor, profile.coverage))
        positions, noisy = self._contenders(query, vendor, profile, n, scores[eligible] / top, eligible)
        # Only pages at or above the n-th best score can be among the n best (ties broken by URL).
        nth = np.partition(noisy, len(noisy) - n)[len(noisy) - n] if len(noisy) > n else -np.inf
        ranked: list[tuple[float, Page]] = [
            (noisy[i], self.pages[positions[i]]) for i in np.flatnonzero(noisy >= nth).tolist()
        ]
        wanted = set(terms)
        if extra_pages:  # pages outside the BM25 model: scored by the share of query words they hold
            for page in extra_pages:
                share = len(wanted & set(tokenize(page.text()))) / len(wanted)
                if share > 0:
                    ranked.append(
                        (share + unit_hash(vendor, "rank", query, page.url) * (1.0 - profile.quality) * 1.6, page)
                    )
        ranked.sort(key=lambda x: (-x[0], x[1].url))
        top_n = ranked[:n]
        spaced = [f" {w} " for w in wanted]  # the query's words as snippet_parts writes them
        # round() of a numpy float is numpy's rounding (not Python's): done for all hits at once
        rounded = np.round(np.array([s for s, _ in top_n], dtype=np.float64), 4)
        return [
            Hit(page=p, score=r if isinstance(s, np.float64) else round(s, 4), snippet=self._snippet(p, spaced))
            for (s, p), r in zip(top_n, rounded)
        ]

    def _snippet(self, page: Page, spaced: list[str]) -> str:
        known = self._snippet_parts.get(page.url)
        if known is None or known[0] is not page:
            known = self._snippet_parts[page.url] = (page, snippet_parts(page))
        return _best_sentences(known[1], spaced)

    def _contenders(
        self, query: str, vendor: str, profile: VendorProfile, n: int, base: np.ndarray, eligible: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pages (positions in `self.pages`) that can be among the n best, with their scores:
        base + noise, the noise `unit_hash(vendor, "rank", query, url)` × (1 − quality) × 1.6.

        A page is left out only when even the largest noise (with a safe margin, so ties stay in)
        keeps it below n pages' scores. Base scores are counted in bins of 1/1024 (pages of one
        template tie in large groups, which makes np.partition slower than a sort): the n-th best
        base lies in a known bin, and pages more than the noise's reach below that bin are dropped
        unhashed. Then the `n + FIRST_NOISED` highest are hashed, and every other page that can
        still reach the n-th best of their scores."""
        spread = 1.0 - profile.quality
        reach = spread * 1.6 * (1 + 1e-9) + 1e-12
        bins = (base * 1024).astype(np.int64)  # base in (0, 1]: bins 0 to 1024
        from_top = np.cumsum(np.bincount(bins, minlength=1025)[::-1])  # pages in the top j + 1 bins
        nth_bin = 1024 - int(np.searchsorted(from_top, n))  # n pages have base >= nth_bin / 1024
        near = np.flatnonzero(bins >= math.floor(nth_bin - reach * 1024) - 1)
        base, eligible, bins = base[near], eligible[near], bins[near]
        first = n + FIRST_NOISED
        if len(base) <= first:
            return eligible, base + self._noise(query, vendor, spread, eligible)
        j = int(np.searchsorted(from_top, first))  # the `first` highest: the bins above `edge`, then some of it
        edge, above = 1024 - j, int(from_top[j - 1]) if j else 0
        head = bins > edge
        head[np.flatnonzero(bins == edge)[: first - above]] = True
        ahead = np.flatnonzero(head)
        noisy = base[ahead] + self._noise(query, vendor, spread, eligible[ahead])
        nth = np.partition(noisy, len(noisy) - n)[len(noisy) - n]
        behind = np.flatnonzero((base + reach >= nth) & ~head)
        more = base[behind] + self._noise(query, vendor, spread, eligible[behind])
        return eligible[np.concatenate([ahead, behind])], np.concatenate([noisy, more])

    def _noise(self, query: str, vendor: str, spread: float, positions: np.ndarray) -> np.ndarray:
        """Each page's noise: `unit_hash(vendor, "rank", query, url)` × (1 − quality) × 1.6, in that order."""
        return unit_hashes((vendor, "rank", query), self._urls[positions].tolist()) * spread * 1.6


def unit_hashes(parts: tuple[str, ...], lasts: Sequence[bytes]) -> np.ndarray:
    """`unit_hash(*parts, last)` for each UTF-8 encoded `last`, at once, for less than one call
    each: the shared beginning is hashed once and its state copied for each ending."""
    copy = hashlib.sha256(("\x1f".join(parts) + "\x1f").encode()).copy
    states = [copy() for _ in lasts]
    deque(map(_UPDATE, states, lasts), maxlen=0)
    return digest_units(b"".join(map(_DIGEST, states)))


def digest_units(digests: bytes) -> np.ndarray:
    """For each 32-byte SHA-256 digest, its first 8 bytes as a big-endian integer over 2**64, as
    `unit_hash` computes it: both are exact but for one rounding of the integer to a float, to
    nearest with ties to even in both (Python's int division, numpy's uint64 to float64)."""
    return np.frombuffer(digests, dtype=">u8")[::4].astype(np.float64) * 2.0**-64


SnippetParts = tuple[tuple[str, ...], tuple[str, ...]]


def snippet_parts(page: Page) -> SnippetParts:
    """The page's sentences, and each one's words written ' w1 w2 … ': a word is among them iff
    ' word ' is in it (words hold no spaces), a substring test instead of a set of strings."""
    sentences = tuple(s for p in page.paragraphs for s in _SENTENCE_END.split(p) if s)
    return sentences, tuple(f" {' '.join(tokenize(s))} " for s in sentences)


def best_snippet(page: Page, terms: Iterable[str], sentences: int = 2) -> str:
    """The sentences of the page that share the most words with the query, in page order."""
    return _best_sentences(snippet_parts(page), [f" {w} " for w in set(terms)], sentences)


def _best_sentences(parts: SnippetParts, spaced: list[str], sentences: int = 2) -> str:
    """`best_snippet` from the page's parts and the query's distinct words written ' word '."""
    candidates, words = parts
    scored = sorted((-sum(map(held.__contains__, spaced)), i) for i, held in enumerate(words))
    keep = sorted(i for _, i in scored[:sentences])
    return " ".join(candidates[i] for i in keep)


def styled_url(url: str, vendor: str, style: str) -> str:
    """Return the URL the way this vendor writes it; every variant normalizes to the canonical URL."""
    if style == "utm":
        return url + ("&" if "?" in url else "?") + f"utm_source={vendor}&utm_medium=api"
    if style == "www" and "://www." not in url:
        return url.replace("://", "://www.", 1)
    if style == "slash":
        return url + "/"
    if style == "http":
        return url.replace("https://", "http://", 1)
    return url


@lru_cache(maxsize=EXTRACT_CACHE_SIZE)
def _extract_cached(page: Page, strips: bool, tables: bool, plain: bool, max_chars: int) -> str:
    """Keyed by the page itself (hashed by value: an equal page renders the same HTML), not by its
    HTML, which would have to be rendered on every call to look it up."""
    tree = HTMLParser(page.render_html())
    if strips:
        for node in tree.css("nav, .cookie-banner, aside, footer"):
            node.decompose()
    if not tables:
        for node in tree.css("table"):
            node.decompose()
    body = tree.body
    text = body.text(separator="\n", strip=True) if body else ""
    if plain:
        text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    return text[:max_chars]


def extract_page(page: Page, profile: VendorProfile) -> str:
    """The page's text as this vendor's extractor returns it."""
    return _extract_cached(
        page,
        profile.strips_boilerplate,
        profile.keeps_tables,
        profile.plain_numbers,
        profile.max_chars,
    )
