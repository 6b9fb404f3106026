"""Retrieval metrics over a vendor's ranked result list: hit@k and first-hit rank."""

from __future__ import annotations

import operator
from collections.abc import Iterable

from .identity import match_key
from .urls import normalize_url

__all__ = ["first_hit_rank", "hit_at_k"]


def _golden_forms(golden_urls: str | Iterable[str | None]) -> frozenset[str]:
    if isinstance(golden_urls, str):
        golden_urls = [golden_urls]
    forms = {normalize_url(url) for url in golden_urls if isinstance(url, str)}
    forms.discard("")  # an empty or garbage golden URL can never be matched
    return frozenset(match_key(form) for form in forms)


def first_hit_rank(golden_urls: str | Iterable[str | None], result_urls: Iterable[str | None]) -> int | None:
    """1-based rank of the first result that names a golden URL's document.

    Definition: results are taken in the order the vendor returned them; rank ``r`` is the
    position in that list (the first result is rank 1). A result matches when
    ``normalize_url(result)`` equals ``normalize_url(g)`` for some golden URL ``g`` (see
    :func:`bench_assets.metrics.normalize_url`), or when both name the same registry document
    under the published identity rules (:func:`bench_assets.metrics.identity.document_key`: the
    RFC number, arXiv identifier without version, PEP number, Federal Register document number or
    EDGAR accession number read from the URL; version :data:`bench_assets.metrics.identity.IDENTITY_RULES_VERSION`).
    Another document of the same registry never matches. A row's listed equivalent URLs are
    passed as golden URLs. Positions are not re-numbered after
    duplicates: a URL returned twice occupies both slots, and a golden URL that appears
    more than once counts at its first position. Results that are ``None``, not strings, or
    normalize to the empty string occupy their slot but never match; so do empty golden
    URLs. ``golden_urls`` may be one string or an iterable of strings. Returns ``None`` when
    no result matches.
    """
    golden = _golden_forms(golden_urls)
    if not golden:
        return None
    for rank, url in enumerate(result_urls, start=1):
        if isinstance(url, str) and match_key(normalize_url(url)) in golden:
            return rank
    return None


def hit_at_k(golden_urls: str | Iterable[str | None], result_urls: Iterable[str | None], k: int) -> bool:
    """Whether a golden URL's document is among the vendor's top ``k`` results.

    Definition: ``first_hit_rank(golden_urls, result_urls)`` is not ``None`` and is ``≤ k``
    (see :func:`first_hit_rank` for matching, duplicates and empty entries). A vendor that
    returned fewer than ``k`` results is judged on what it returned; an empty result list
    is a miss. ``k`` must be a positive integer. hit@k for a vendor is the share of golden
    queries for which this is true.
    """
    try:
        depth = operator.index(k)  # accepts numpy integers too
    except TypeError:
        raise ValueError(f"k must be a positive integer, got {k!r}") from None
    if isinstance(k, bool) or depth < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    results = list(result_urls)[:depth]
    return first_hit_rank(golden_urls, results) is not None
