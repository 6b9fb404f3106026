"""A BM25 index over the planted corpus, ranked per vendor profile, and per-vendor extraction."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from rank_bm25 import BM25Okapi
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from bench_assets.golden.planted import Corpus, Page
from bench_assets.simulator.profiles import VendorProfile

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def unit_hash(*parts: str) -> float:
    """A deterministic number in [0, 1) from strings: the simulator's only source of chance."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class Hit:
    page: Page
    score: float
    snippet: str


class SearchIndex:
    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.pages = list(corpus.pages.values())
        self.bm25 = BM25Okapi([tokenize(p.text()) for p in self.pages])
        # Caches, so the simulator is not the bottleneck of a run: BM25 scores depend on the query
        # alone (every vendor sends it), coverage on the vendor and page alone.
        self._scores = lru_cache(maxsize=8192)(lambda terms: self.bm25.get_scores(list(terms)))
        self._coverage: dict[tuple[str, float], list[bool]] = {}

    def _covered(self, vendor: str, coverage: float) -> list[bool]:
        key = (vendor, coverage)
        if key not in self._coverage:
            self._coverage[key] = [unit_hash(vendor, "coverage", p.url) < coverage for p in self.pages]
        return self._coverage[key]

    def search(
        self, query: str, vendor: str, profile: VendorProfile, n: int, extra_pages: list[Page] | None = None
    ) -> list[Hit]:
        terms = tokenize(query)
        if not terms:
            return []
        scores = self._scores(tuple(terms))
        top = max(scores.max(), 1e-9)
        candidates = [
            (page, score / top)
            for page, score, covered in zip(self.pages, scores, self._covered(vendor, profile.coverage))
            if score > 0 and covered
        ]
        if 0 < n < len(candidates):
            # A page whose score plus the largest possible noise stays below the n-th best score
            # cannot reach the top n: skip hashing its noise (a safe margin keeps ties in).
            nth = sorted((base for _, base in candidates), reverse=True)[n - 1]
            reach = (1.0 - profile.quality) * 1.6 * (1 + 1e-9) + 1e-12
            candidates = [(page, base) for page, base in candidates if base + reach >= nth]
        ranked = []
        for page, base in candidates:
            noise = unit_hash(vendor, "rank", query, page.url) * (1.0 - profile.quality) * 1.6
            ranked.append((base + noise, page))
        for page in extra_pages or ():  # pages outside the BM25 model: scored by the share of query words they hold
            share = len(set(terms) & set(tokenize(page.text()))) / len(set(terms))
            if share > 0:
                ranked.append(
                    (share + unit_hash(vendor, "rank", query, page.url) * (1.0 - profile.quality) * 1.6, page)
                )
        ranked.sort(key=lambda x: (-x[0], x[1].url))
        return [Hit(page=p, score=round(s, 4), snippet=best_snippet(p, terms)) for s, p in ranked[:n]]


def best_snippet(page: Page, terms: list[str], sentences: int = 2) -> str:
    """The sentences of the page that share the most words with the query, in page order."""
    wanted = set(terms)
    candidates = [s for p in page.paragraphs for s in re.split(r"(?<=\.)\s+", p) if s]
    scored = sorted(range(len(candidates)), key=lambda i: (-len(wanted & set(tokenize(candidates[i]))), i))
    keep = sorted(scored[:sentences])
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


@lru_cache(maxsize=4096)
def _extract_cached(url: str, html: str, strips: bool, tables: bool, plain: bool, max_chars: int) -> str:
    tree = HTMLParser(html)
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
        page.url,
        page.render_html(),
        profile.strips_boilerplate,
        profile.keeps_tables,
        profile.plain_numbers,
        profile.max_chars,
    )
