"""Deterministic answer scoring: exact strings, numbers within tolerance, answers found in
returned text, and the DeepWeb-Bench per-cell rubric (precise / range / not_available)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .stats import Interval, bounded_mean_interval
from .text import canonical_text, contains_number, contains_phrase, numbers_match, parse_number

__all__ = [
    "CELL_KINDS",
    "CELL_RULE_CODES",
    "DEFAULT_CELL_RUBRIC",
    "CellAnswer",
    "CellRubric",
    "CellScore",
    "answer_in_text",
    "explain_cell",
    "rubric_mean_interval",
    "score_cell",
    "score_exact",
    "score_numeric",
]

CellKind = Literal["precise", "range", "not_available"]
CELL_KINDS: tuple[str, ...] = ("precise", "range", "not_available")
# The rubric rules by their short names (`CellScore.code`).
CELL_RULE_CODES: tuple[str, ...] = (
    "within_tolerance",
    "no_derivation",
    "outside_tolerance",
    "relaxed_tolerance",
    "wrong_sign",
    "no_value",
    "said_not_available",
    "covers_with_method",
    "no_method",
    "partial_coverage",
    "low_coverage",
    "justified",
    "no_justification",
    "value_on_not_available",
    "zero_width_range",
    "not_bracketing",
    "range_on_not_available",
    "no_answer",
)


def score_exact(expected: str, returned: str | None) -> bool:
    """Whether ``returned`` equals ``expected`` as text.

    Definition: equality after :func:`bench_assets.metrics.text.canonical_text` (NFKC,
    case-fold, whitespace collapse, numbers in one canonical spelling, so ``"1,000 km"``
    equals ``"1000 km"``). ``None`` is never correct. An empty expected answer is an error
    in the golden row and raises ``ValueError``.
    """
    wanted = canonical_text(expected)
    if not wanted:
        raise ValueError("expected answer is empty")
    if returned is None:
        return False
    return canonical_text(returned) == wanted


# Slack for binary floating point at inclusive boundaries (39,900 is within 5 % of 38,000
# although 38000 * 1.05 computes as 39900.000000000004 or 39899.99999999999).
_FLOAT_SLACK = 1e-12


def _within(value: float, reference: float, tolerance: float, *, absolute: bool) -> bool:
    """|value − reference| ≤ tolerance·|reference| (relative), or ≤ tolerance when
    ``absolute`` or the reference is 0."""
    if absolute or reference == 0:
        return abs(value - reference) <= tolerance + _FLOAT_SLACK * max(1.0, abs(reference))
    return abs(value - reference) <= (tolerance + _FLOAT_SLACK) * abs(reference)


def _check_tolerance(tolerance: float) -> None:
    try:
        value = float(tolerance)
    except (TypeError, ValueError):
        raise ValueError(f"tolerance must be a number >= 0, got {tolerance!r}") from None
    if isinstance(tolerance, bool) or math.isnan(value) or value < 0:
        raise ValueError(f"tolerance must be a number >= 0, got {tolerance!r}")


def score_numeric(expected: float, returned: str | float | None, tolerance: float) -> bool:
    """Whether ``returned`` is the number ``expected`` within a relative tolerance.

    Definition: ``|returned − expected| ≤ tolerance · |expected|``; when ``expected`` is 0
    the tolerance is absolute: ``|returned| ≤ tolerance`` (as
    :func:`bench_assets.metrics.text.numbers_match`, with its 1e-12 floating-point slack).
    A string must be exactly one
    number (:func:`bench_assets.metrics.text.parse_number`: sign, currency symbol, thousands
    separators, decimals and a percent sign allowed, ``"$1,234.5"`` is 1234.5, ``"12%"`` is
    12). ``None``, booleans, NaN, infinities and unparseable strings are never correct.
    """
    _check_tolerance(tolerance)
    if not math.isfinite(expected):
        raise ValueError(f"expected must be a finite number, got {expected!r}")
    value = parse_number(returned)
    if value is None:
        return False
    return numbers_match(float(expected), value, float(tolerance))


def answer_in_text(
    expected_exact: str | None,
    expected_number: float | None,
    tolerance: float,
    text: str | None,
) -> bool:
    """Whether the expected answer appears in a piece of returned text.

    Definition: true if ``expected_exact`` is given (non-blank) and occurs in ``text`` as
    whole words after canonicalization (:func:`bench_assets.metrics.text.contains_phrase`:
    ``"Paris"`` is in ``"paris, france"`` but ``"cat"`` is not in ``"concatenate"``; an
    answer is a word or a name, so unlike extraction fidelity's plain containment a
    fragment of a longer word does not count), or if
    ``expected_number`` is given and some whole number written in ``text`` is within
    ``tolerance`` of it (relative; absolute when it is 0; ``12`` is not found in ``123`` or
    ``1.25``). With neither given, or no text, the answer is not present.
    """
    _check_tolerance(tolerance)
    if not text:
        return False
    if expected_exact is not None and canonical_text(expected_exact):
        if contains_phrase(text, expected_exact):
            return True
    if expected_number is not None and math.isfinite(expected_number):
        if contains_number(text, float(expected_number), float(tolerance)):
            return True
    return False


@dataclass(frozen=True)
class CellAnswer:
    """A candidate answer for one rubric cell.

    ``kind`` is ``"precise"`` (``value`` holds the number, or a numeric string),
    ``"range"`` (``low`` and ``high`` hold the bounds) or ``"not_available"``. ``method`` is
    the derivation / estimation method for precise and range answers, and the justification
    for a not-available answer; blank counts as missing.
    """

    kind: CellKind
    value: float | str | None = None
    low: float | None = None
    high: float | None = None
    method: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in CELL_KINDS:
            raise ValueError(f"CellAnswer.kind must be one of {CELL_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class CellRubric:
    """The numeric parameters of the per-cell rubric; scoring uses these defaults.

    The copy of DeepWeb-Bench Appendix A.3 this project works from has lost its numerals
    (the default tolerances and the overlap shares are blank in the text), so these defaults
    are the project's own choices, not the paper's:

    * ``relative_tolerance`` (0.05) — full-credit tolerance for ratios and monetary values,
      relative to the reference;
    * ``relaxed_relative_tolerance`` (0.10) — the "relaxed tolerance" of the 0.5 tier;
    * ``percentage_point_tolerance`` (1.0) / ``relaxed_percentage_point_tolerance`` (2.0) —
      the same, in absolute percentage points, for cells whose unit is a percentage;
    * ``range_full_coverage`` (0.80) — share of the reference range the candidate range
      must cover for full credit; ``range_partial_coverage`` (0.50) — for half credit;
    * ``precise_requires_derivation`` (False) — A.3 grants 1 to a scalar within tolerance
      with the right sign and mentions derivations only in the 0.5 tier; the paper's main
      text summarises full credit as "a value and derivation within tolerance". Set True
      to demand a derivation for full credit (without one the answer gets 0.5);
    * ``require_justification`` (True) — a not-available answer earns 1 only with a
      justification, as A.3 says.
    """

    relative_tolerance: float = 0.05
    relaxed_relative_tolerance: float = 0.10
    percentage_point_tolerance: float = 1.0
    relaxed_percentage_point_tolerance: float = 2.0
    range_full_coverage: float = 0.80
    range_partial_coverage: float = 0.50
    precise_requires_derivation: bool = False
    require_justification: bool = True

    def __post_init__(self) -> None:
        for name in (
            "relative_tolerance",
            "relaxed_relative_tolerance",
            "percentage_point_tolerance",
            "relaxed_percentage_point_tolerance",
            "range_full_coverage",
            "range_partial_coverage",
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"CellRubric.{name} must be a finite number >= 0")
        if not 0 <= self.range_partial_coverage <= self.range_full_coverage <= 1:
            raise ValueError("CellRubric needs 0 <= range_partial_coverage <= range_full_coverage <= 1")


DEFAULT_CELL_RUBRIC = CellRubric()


@dataclass(frozen=True)
class CellScore:
    """A rubric score (0, 0.5 or 1) with the rule that produced it, for publication: ``reason`` in
    words (with the figures it read), ``code`` the rule's short, stable name (what a miss reason
    counts by; one of :data:`CELL_RULE_CODES`)."""

    score: float
    reason: str
    code: str = ""


def _has_text(value: str | None) -> bool:
    return bool(value and value.strip())


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _candidate_scalar(response: CellAnswer) -> float | None:
    if response.kind == "precise":
        return parse_number(response.value)
    if response.kind == "range":
        low, high = parse_number(response.low), parse_number(response.high)
        if low is not None and low == high:
            return low  # a range of width zero is a scalar
    return None


def _candidate_interval(response: CellAnswer) -> tuple[float, float] | None:
    if response.kind == "range":
        low, high = parse_number(response.low), parse_number(response.high)
        if low is None or high is None:
            return None
        return (min(low, high), max(low, high))
    if response.kind == "precise":
        value = parse_number(response.value)
        return None if value is None else (value, value)
    return None


def _score_precise_row(response: CellAnswer, expected: float, percentage: bool, rubric: CellRubric) -> CellScore:
    if response.kind == "not_available":
        return CellScore(0.0, "not-available answer on a precise cell", "said_not_available")
    value = _candidate_scalar(response)
    if value is None:
        return CellScore(0.0, "no scalar value", "no_value")
    strict = rubric.percentage_point_tolerance if percentage else rubric.relative_tolerance
    relaxed = rubric.relaxed_percentage_point_tolerance if percentage else rubric.relaxed_relative_tolerance
    within = _within(value, expected, strict, absolute=percentage)
    within_relaxed = _within(value, expected, relaxed, absolute=percentage)
    sign_agrees = _sign(value) == _sign(expected)
    has_method = _has_text(response.method)
    if within and sign_agrees:
        if has_method or not rubric.precise_requires_derivation:
            return CellScore(1.0, "within tolerance, sign and direction agree", "within_tolerance")
        return CellScore(0.5, "within tolerance but no derivation", "no_derivation")
    if sign_agrees:
        return CellScore(0.5, "sign and direction agree, outside tolerance", "outside_tolerance")
    if within_relaxed and not has_method:
        return CellScore(0.5, "within relaxed tolerance without a derivation", "relaxed_tolerance")
    return CellScore(0.0, "wrong sign or direction", "wrong_sign")


def _score_range_row(response: CellAnswer, low: float, high: float, rubric: CellRubric) -> CellScore:
    if response.kind == "not_available":
        return CellScore(0.0, "not-available answer on a range cell", "said_not_available")
    interval = _candidate_interval(response)
    if interval is None:
        return CellScore(0.0, "no range or value", "no_value")
    cand_low, cand_high = interval
    if high > low:
        overlap = max(0.0, min(cand_high, high) - max(cand_low, low))
        coverage = overlap / (high - low)
    else:  # a degenerate reference range is covered when the candidate contains it
        coverage = 1.0 if cand_low <= low <= cand_high else 0.0
    has_method = _has_text(response.method)
    coverage = min(1.0, coverage + _FLOAT_SLACK)  # inclusive thresholds despite rounding
    if coverage >= rubric.range_full_coverage:
        if has_method:
            return CellScore(1.0, f"covers {coverage:.0%} of the reference range, with method", "covers_with_method")
        return CellScore(0.5, f"covers {coverage:.0%} of the reference range, method missing", "no_method")
    if coverage >= rubric.range_partial_coverage:
        return CellScore(0.5, f"covers {coverage:.0%} of the reference range", "partial_coverage")
    return CellScore(0.0, f"covers {coverage:.0%} of the reference range", "low_coverage")


def _score_not_available_row(
    response: CellAnswer,
    plausible_low: float | None,
    plausible_high: float | None,
    rubric: CellRubric,
) -> CellScore:
    if response.kind == "not_available":
        if _has_text(response.method) or not rubric.require_justification:
            return CellScore(1.0, "explicit not available with justification", "justified")
        return CellScore(0.0, "not available without justification", "no_justification")
    if response.kind == "precise":
        return CellScore(0.0, "precise value on a not-available cell", "value_on_not_available")
    interval = _candidate_interval(response)
    if interval is None:
        return CellScore(0.0, "no range", "no_value")
    cand_low, cand_high = interval
    if not cand_high > cand_low:
        return CellScore(0.0, "range of width zero on a not-available cell", "zero_width_range")
    if not _has_text(response.method):
        return CellScore(0.0, "range without estimation method on a not-available cell", "no_method")
    if plausible_low is not None and plausible_high is not None:
        if not (cand_low <= plausible_low and cand_high >= plausible_high):
            return CellScore(0.0, "range does not bracket the plausible interval", "not_bracketing")
    return CellScore(0.5, "wide range with estimation method on a not-available cell", "range_on_not_available")


def explain_cell(
    row_answer_type: str,
    response: CellAnswer | None,
    *,
    expected_value: float | None = None,
    expected_low: float | None = None,
    expected_high: float | None = None,
    percentage: bool = False,
    rubric: CellRubric = DEFAULT_CELL_RUBRIC,
) -> CellScore:
    """Score one cell and say which rule applied; see :func:`score_cell` for the rules."""
    if row_answer_type not in CELL_KINDS:
        raise ValueError(f"row answer type must be one of {CELL_KINDS}, got {row_answer_type!r}")
    if row_answer_type == "precise":
        reference = parse_number(expected_value)
        if reference is None:
            raise ValueError("a precise cell needs a finite expected_value")
        if response is None:
            return CellScore(0.0, "no answer", "no_answer")
        return _score_precise_row(response, reference, percentage, rubric)
    if row_answer_type == "range":
        low, high = parse_number(expected_low), parse_number(expected_high)
        if low is None or high is None or low > high:
            raise ValueError("a range cell needs finite expected_low <= expected_high")
        if response is None:
            return CellScore(0.0, "no answer", "no_answer")
        return _score_range_row(response, low, high, rubric)
    plausible_low, plausible_high = parse_number(expected_low), parse_number(expected_high)
    if response is None:
        return CellScore(0.0, "no answer", "no_answer")
    return _score_not_available_row(response, plausible_low, plausible_high, rubric)


def score_cell(
    row_answer_type: str,
    response: CellAnswer | None,
    *,
    expected_value: float | None = None,
    expected_low: float | None = None,
    expected_high: float | None = None,
    percentage: bool = False,
    rubric: CellRubric = DEFAULT_CELL_RUBRIC,
) -> float:
    """Per-cell rubric score in {0, 0.5, 1}, following DeepWeb-Bench Appendix A.3.

    ``row_answer_type`` is the reference answer's type. A precise cell needs
    ``expected_value``; a range cell needs ``expected_low ≤ expected_high``; a not-available
    cell may give the plausible interval in ``expected_low``/``expected_high``.
    ``percentage=True`` marks a cell whose unit is a percentage: its tolerances are absolute
    percentage points instead of relative. Parameters (tolerances, coverage shares) come
    from ``rubric`` (see :class:`CellRubric`); "within tolerance t of r" means
    ``|c − r| ≤ t·|r|`` (relative; absolute when r = 0) or ``|c − r| ≤ t`` (points).
    ``method`` blank counts as missing. No answer (``None``) scores 0.

    | reference (row) | candidate | score |
    | --- | --- | --- |
    | precise r | scalar within tolerance of r, same sign/direction as r | 1 |
    | precise r | scalar with the same sign/direction, outside tolerance | 0.5 |
    | precise r | scalar within the relaxed tolerance, without a derivation | 0.5 |
    | precise r | anything else (wrong sign, range, not available, no value) | 0 |
    | range [L, H] | range (a scalar is a range of width zero) covering ≥ the full share of [L, H], with a derivation method | 1 |
    | range [L, H] | covering ≥ the full share but method missing | 0.5 |
    | range [L, H] | covering ≥ the partial share and < the full share | 0.5 |
    | range [L, H] | anything else (incl. not available) | 0 |
    | not available | explicit not available with a justification | 1 |
    | not available | range of non-zero width with an estimation method that brackets the plausible interval (when the row gives one) | 0.5 |
    | not available | any precise value; anything else | 0 |

    Notes on reading A.3 literally: a scalar on a range cell is a range of width zero, so it
    covers 0 % of a non-degenerate reference range and scores 0. In the precise rule the
    relaxed-tolerance clause only adds credit where the sign test fails (a value near a
    reference close to 0), and, as written, only without a derivation. Coverage is
    ``|[l, h] ∩ [L, H]| / (H − L)``; for a degenerate reference (L = H) it is 1 when the
    candidate contains L. A range given with ``low > high`` is read with its bounds
    swapped. The main text's 0.25 tier ("marginally relevant attempt") is not part of
    A.3's default rule and needs judgement, so it is not scored here. Per-cell overrides
    are expressed by passing a tighter ``rubric``.

    Applied to a vendor's results (``bench_assets.golden.verdicts.score_answer``, top ``answer_k``
    results): a range or not-available row is scored on the answer the cell reader
    (:func:`bench_assets.metrics.read_cell_answer`) reads about the row's cue. A precise row
    scores 1 when its answer appears in those results (:func:`answer_in_text`, within the
    row's tolerance); otherwise, if the row has a numeric reference and a cue, the value read
    about the cue is scored by the precise rule above, with the row's relative tolerance as
    the tolerance (so 0.5 or 0); a precise row with a text answer or without a cue scores 0,
    having no numeric tiers or nothing to read by.
    """
    return explain_cell(
        row_answer_type,
        response,
        expected_value=expected_value,
        expected_low=expected_low,
        expected_high=expected_high,
        percentage=percentage,
        rubric=rubric,
    ).score


def rubric_mean_interval(scores: Iterable[float], confidence: float = 0.95) -> Interval:
    """Mean rubric score (0, 0.5 or 1 per answer row) with a 95 % interval: the interval every mean
    bounded in [0, 1] gets, :func:`bounded_mean_interval` (a Wilson score interval with the
    Bernoulli variance bound)."""
    return bounded_mean_interval(scores, confidence)
