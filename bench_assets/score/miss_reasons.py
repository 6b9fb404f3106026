"""Why a vendor did not get a row right: one reason per missed row, from the row's own evidence.

A reason is a short code, with what it is about after a colon where the code needs it; the codes
and what each means are :data:`MISS_REASONS` (published with the figures). Reasons are read in
this order, the first that applies:

* ``call_failed:<class>``: the final attempt was not answered (its response class, see
  `fetch.classify`: blocked, auth, quota, rate_limited, server, timeout, malformed, rejected);
* ``no_results``: the vendor answered with nothing (class ``empty``, or no result read);
* search rows: ``golden_below_k`` (the golden document is in the list, below the rank that
  counts), ``golden_site_other_document`` (a result is on a golden document's site but none is the
  document; a registry's hosts are one site, `metrics.identity.site_of`), ``not_returned``;
* extract rows: ``extract_no_text`` (the result carries no text), ``extract_fields:<fields>`` (the
  fields the row defines that the extraction fell short on, the one that cost most first);
* answer rows: ``answer_not_found`` (nothing the rubric could read: the answer is in none of the
  top results and nothing about the cue was read), ``answer_rubric:<rule>`` (an answer was read
  and the per-cell rubric gave it 0 or 0.5 by the rule named, `metrics.CELL_RULE_CODES`).

Rows the vendor got right, and rows it cannot serve (``unsupported``), have no reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from bench_assets.golden.verdicts import AnswerVerdict
from bench_assets.metrics import FidelityScore
from bench_assets.metrics.identity import site_of

__all__ = [
    "MISS_REASONS",
    "answer_miss",
    "count_miss_reasons",
    "extract_miss",
    "miss_code",
    "search_miss",
    "unanswered_miss",
]

MISS_REASONS: dict[str, str] = {
    "call_failed": "the call failed: the response class after the colon (the vendor answered nothing usable)",
    "no_results": "the vendor answered with no results",
    "golden_below_k": "the golden document was returned, below the rank that counts",
    "golden_site_other_document": "a result was on the golden document's site, but no result was the document",
    "not_returned": "the golden document was not returned, nor anything on its site",
    "extract_no_text": "the extraction returned no text",
    "extract_fields": "the extraction fell short on the fields after the colon (most weight lost first)",
    "answer_not_found": "the answer was in none of the top results, and nothing about the question's cue was read",
    "answer_rubric": "an answer was read and the per-cell rubric gave it 0 or 0.5 by the rule after the colon",
}


def miss_code(reason: str) -> str:
    """A reason's code: the part before the colon."""
    return reason.split(":", 1)[0]


def unanswered_miss(response_class: str) -> str | None:
    """The reason of a row whose final attempt was not answered (``ok``): ``no_results`` for an
    empty answer, ``call_failed:<class>`` for any other class; None for ``ok`` and ``unsupported``."""
    if response_class in ("ok", "unsupported"):
        return None
    return "no_results" if response_class == "empty" else f"call_failed:{response_class}"


def search_miss(result_forms: Sequence[str], first_hit_rank: int | None, k: int, golden_forms: Iterable[str]) -> str:
    """Why an answered search row is not correct: `result_forms` are the returned URLs' normalized
    forms in rank order, `first_hit_rank` the first hit's rank (any depth), `k` the rank a hit must
    reach, `golden_forms` the normalized forms of the row's golden and equivalent URLs."""
    if not result_forms:
        return "no_results"
    if first_hit_rank is not None and first_hit_rank > k:
        return "golden_below_k"
    sites = {site_of(form) for form in golden_forms if form}
    if any(form and site_of(form) in sites for form in result_forms):
        return "golden_site_other_document"
    return "not_returned"


def extract_miss(n_results: int, fidelity: FidelityScore) -> str:
    """Why an answered extract row is not correct: no result, a result without text, or the
    fields scored below 1, ordered by the weight they lost (then by name)."""
    if n_results == 0:
        return "no_results"
    if not fidelity.fields:
        return "extract_no_text"
    lost = {name: fidelity.weights.get(name, 0.0) * (1.0 - score) for name, score in fidelity.fields.items()}
    short = sorted((name for name, score in fidelity.fields.items() if score < 1.0), key=lambda n: (-lost[n], n))
    # A score below the bar with every field whole cannot happen (the weights sum to 1); say so if it does.
    return f"extract_fields:{','.join(short)}" if short else "extract_fields:none"


def answer_miss(n_results: int, verdict: AnswerVerdict) -> str:
    """Why an answered answer row did not earn full credit: no result, nothing read, or the rubric
    rule that scored what was read."""
    if n_results == 0:
        return "no_results"
    if verdict.cell is None or not verdict.cell.code:
        return "answer_not_found"
    return f"answer_rubric:{verdict.cell.code}"


def count_miss_reasons(reasons: Iterable[str | None]) -> dict[str, int]:
    """Rows per reason (rows without one left out), most frequent first, then by reason."""
    counts = Counter(r for r in reasons if isinstance(r, str) and r)  # a missing cell may read as NaN
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
