"""Pure metric functions of the benchmark, importable without Dagster.

Every definition the published methodology cites lives in a docstring here:
URL matching (:func:`normalize_url`), retrieval (:func:`hit_at_k`, :func:`first_hit_rank`),
extraction fidelity (:func:`extraction_fidelity`), answer scoring (:func:`score_exact`,
:func:`score_numeric`, :func:`answer_in_text`, :func:`score_cell`, the cell reader
:func:`read_cell_answer` and :func:`rubric_mean_interval`), intervals and summary
statistics (:func:`wilson_interval`, :func:`overfit_gap`, :func:`cost_per_correct`,
:func:`cost_per_correct_interval`, :func:`tie_groups`, :func:`rank_ranges`, :func:`percentile`,
:func:`percentile_interval`) and time-to-retrievability (:func:`km_median`,
:func:`km_median_interval`, :func:`km_estimate`).
"""

from __future__ import annotations

from .answers import (
    CELL_KINDS,
    DEFAULT_CELL_RUBRIC,
    CellAnswer,
    CellRubric,
    CellScore,
    answer_in_text,
    explain_cell,
    rubric_mean_interval,
    score_cell,
    score_exact,
    score_numeric,
)
from .fidelity import (
    CORRECT_THRESHOLD,
    FIDELITY_FIELDS,
    FIDELITY_WEIGHTS,
    PARTIAL_THRESHOLD,
    FidelityScore,
    extraction_fidelity,
    fidelity_label,
)
from .reader import CellReading, locate_cell_answer, read_cell_answer
from .retrieval import first_hit_rank, hit_at_k
from .stats import (
    Interval,
    cost_per_correct,
    cost_per_correct_interval,
    intervals_overlap,
    newcombe_interval,
    overfit_gap,
    percentile,
    percentile_interval,
    rank_ranges,
    tie_groups,
    wilson_interval,
)
from .survival import (
    DEFAULT_CENSOR_AT_HOURS,
    KMCurve,
    km_estimate,
    km_median,
    km_median_interval,
)
from .text import (
    canonical_text,
    contains_normalized,
    contains_number,
    contains_phrase,
    find_numbers,
    normalize_text,
    numbers_match,
    parse_number,
)
from .urls import normalize_url

__all__ = [
    "CELL_KINDS",
    "CORRECT_THRESHOLD",
    "DEFAULT_CELL_RUBRIC",
    "DEFAULT_CENSOR_AT_HOURS",
    "FIDELITY_FIELDS",
    "FIDELITY_WEIGHTS",
    "PARTIAL_THRESHOLD",
    "CellAnswer",
    "CellReading",
    "CellRubric",
    "CellScore",
    "FidelityScore",
    "Interval",
    "KMCurve",
    "answer_in_text",
    "canonical_text",
    "contains_normalized",
    "contains_number",
    "contains_phrase",
    "cost_per_correct",
    "cost_per_correct_interval",
    "explain_cell",
    "extraction_fidelity",
    "fidelity_label",
    "find_numbers",
    "first_hit_rank",
    "hit_at_k",
    "intervals_overlap",
    "km_estimate",
    "km_median",
    "km_median_interval",
    "locate_cell_answer",
    "newcombe_interval",
    "normalize_text",
    "normalize_url",
    "numbers_match",
    "overfit_gap",
    "parse_number",
    "percentile",
    "percentile_interval",
    "rank_ranges",
    "read_cell_answer",
    "rubric_mean_interval",
    "score_cell",
    "score_exact",
    "score_numeric",
    "tie_groups",
    "wilson_interval",
]
