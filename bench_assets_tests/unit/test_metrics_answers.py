"""Answer scoring: exact, numeric, answer-in-text, the per-cell rubric, and the text and
number helpers they rest on."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.metrics import (
    DEFAULT_CELL_RUBRIC,
    CellAnswer,
    CellRubric,
    Interval,
    answer_in_text,
    canonical_text,
    contains_phrase,
    explain_cell,
    find_numbers,
    normalize_text,
    numbers_match,
    parse_number,
    rubric_mean_interval,
    score_cell,
    score_exact,
    score_numeric,
    wilson_interval,
)
from bench_assets.metrics.text import contains_normalized

FAST = settings(deadline=None, max_examples=100)

# --- text and numbers ----------------------------------------------------------------------


def test_normalize_text() -> None:
    assert normalize_text("  Ｆｕｌｌ\u00a0WIDTH\n\tStraße ") == "full width strasse"
    assert normalize_text(None) == ""


@FAST
@given(st.text())
def test_normalize_and_canonical_text_are_idempotent(text: str) -> None:
    assert normalize_text(normalize_text(text)) == normalize_text(text)
    assert canonical_text(canonical_text(text)) == canonical_text(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234.5", 1234.5),
        ("1234.50", 1234.5),
        ("-1,234", -1234.0),
        ("\u22125", -5.0),
        ("+7", 7.0),
        ("$1,234.5", 1234.5),
        ("-$5", -5.0),
        ("$-5", -5.0),
        ("€ 12", 12.0),
        ("12.5%", 12.5),
        ("12.5 %", 12.5),
        (".5", 0.5),
        ("1.5e3", 1500.0),
        ("１２３", 123.0),
        (" 42 ", 42.0),
        (7, 7.0),
        (np.float64(2.5), 2.5),
        ("12 kg", None),
        ("1.2.3", None),
        ("twelve", None),
        ("", None),
        (None, None),
        (True, None),
        (float("nan"), None),
        ("1e999", None),
    ],
)
def test_parse_number(text, expected) -> None:
    assert parse_number(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("revenue was 1,234.5 in 2025", [1234.5, 2025.0]),
        ("123 and 1.25", [123.0, 1.25]),  # never 12 inside them
        ("range 10-20 hours", [10.0, 20.0]),
        ("a loss of -3.2%", [-3.2]),
        ("US$1,000 or HK$-5", [1000.0, -5.0]),
        ("model A380 and v2", []),
        ("10kg, 5x faster", [10.0, 5.0]),
        ("version 1.2.3", []),
        ("It ended at 12.", [12.0]),
        ("1,2,3", [1.0, 2.0, 3.0]),
    ],
)
def test_find_numbers_finds_whole_numbers(text: str, expected: list[float]) -> None:
    assert find_numbers(text) == expected


@FAST
@given(st.integers(min_value=-(10**9), max_value=10**9), st.integers(min_value=0, max_value=99))
def test_thousands_separators_and_decimals_round_trip(whole: int, cents: int) -> None:
    written = f"{whole:,}.{cents:02d}"
    assert find_numbers(f"total {written} units") == [float(f"{whole}.{cents:02d}")]
    assert parse_number(written) == float(f"{whole}.{cents:02d}")


@FAST
@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=0, max_value=9))
def test_a_number_is_never_found_inside_a_longer_one(number: int, digit: int) -> None:
    assert find_numbers(f"x {number} y") == [number]
    assert number not in find_numbers(f"x {number}{digit} y")
    assert number not in find_numbers(f"x {digit or 1}{number} y")
    assert number not in find_numbers(f"x {number}.{digit}5 y")
    assert number not in find_numbers(f"x A{number} y")


def test_numbers_match() -> None:
    assert numbers_match(100.0, 101.0, 0.01)
    assert not numbers_match(100.0, 101.5, 0.01)
    assert numbers_match(-100.0, -99.0, 0.01)
    assert not numbers_match(-100.0, 100.0, 0.5)
    assert numbers_match(0.0, 0.004, 0.005)  # absolute when expected is 0
    assert not numbers_match(0.0, 0.006, 0.005)
    assert numbers_match(0.1 + 0.2, 0.3, 0.0)  # float slack for binary rounding only
    assert not numbers_match(1.0, 1.000001, 0.0)
    assert not numbers_match(float("nan"), 1.0, 1.0)
    with pytest.raises(ValueError):
        numbers_match(1.0, 1.0, -0.1)


def test_contains_normalized_is_containment_with_numbers_compared_as_numbers() -> None:
    # The fidelity contract: containment after normalization, unlike contains_phrase below.
    assert contains_normalized("Foobar", "foo")
    assert contains_normalized("concatenate", "CAT")
    assert contains_normalized("Ｑuarterly   RESULTS 2026", "quarterly results")
    assert contains_normalized("Revenue: 1,234.50 USD", "revenue: 1234.5 usd")
    assert not contains_normalized("in 2012 units", "12 units")
    assert not contains_normalized("price 1.25", "25")
    assert not contains_normalized("price 1.25", "1.2")
    assert not contains_normalized("score -5 points", "5 points")
    assert contains_normalized("score -5 points", "-5 points")
    assert not contains_normalized("10-5", "-5")  # a range, not minus five
    assert contains_normalized("COVID-19 cases", "19 cases")
    assert contains_normalized("costs $5 or 12%", "5 or 12")  # the number as written, without its unit marks
    assert not contains_normalized("model v23", "v2")  # a match never cuts a run of digits
    assert contains_normalized("東京都の人口", "東京")
    assert not contains_normalized("anything", "")
    assert not contains_normalized(None, "x")


@FAST
@given(st.text(st.sampled_from(list("ab1209.,-+$% \u2212eE€Ａ１")), max_size=12))
def test_a_text_contains_itself_wherever_it_stands(text: str) -> None:
    if normalize_text(text):
        assert contains_normalized(text, text)
        assert contains_normalized(f"before {text} after", text)


def test_contains_phrase_word_boundaries_and_numbers() -> None:
    assert contains_phrase("Paris, France", "paris")
    assert not contains_phrase("concatenate", "cat")
    assert contains_phrase("the cat.", "CAT")
    assert contains_phrase("Revenue: 1,234.50 USD", "revenue: 1234.5 usd")
    assert not contains_phrase("price 1.25", "25")
    assert not contains_phrase("price 1.25", "1.2")
    assert not contains_phrase("score -5 points", "5 points")
    assert contains_phrase("COVID-19 cases", "19 cases")
    assert contains_phrase("東京都の人口", "東京")  # no word boundaries in CJK text
    assert not contains_phrase("anything", "")
    assert not contains_phrase(None, "x")


# --- exact and numeric answers -------------------------------------------------------------


def test_score_exact() -> None:
    assert score_exact("Paris", "  PARIS ")
    assert score_exact("São Paulo", "são   paulo")
    assert score_exact("ＡＢＣ", "abc")  # NFKC
    assert score_exact("1,000 km", "1000 km")
    assert not score_exact("Paris", "Paris, France")
    assert not score_exact("Paris", None)
    with pytest.raises(ValueError):
        score_exact("  ", "anything")


@pytest.mark.parametrize(
    ("expected", "returned", "tolerance", "correct"),
    [
        (1234.5, "1,234.5", 0.0, True),
        (1234.5, "$1,234.50", 0.0, True),
        (1234.5, 1234.5, 0.0, True),
        (12.5, "12.5%", 0.0, True),
        (-3.2, "\u22123.2", 0.0, True),
        (-3.2, "3.2", 0.5, False),
        (100.0, "104.9", 0.05, True),
        (100.0, "105.1", 0.05, False),
        (100.0, 95.0, 0.05, True),
        (0.0, "0.009", 0.01, True),  # absolute when expected is 0
        (0.0, "0.011", 0.01, False),
        (0.0, 0, 0.0, True),
        (5.0, None, 1.0, False),
        (5.0, "five", 1.0, False),
        (5.0, "5 apples", 1.0, False),
        (5.0, float("nan"), 1.0, False),
        (5.0, True, 1.0, False),
    ],
)
def test_score_numeric(expected, returned, tolerance, correct) -> None:
    assert score_numeric(expected, returned, tolerance) is correct


def test_score_numeric_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        score_numeric(1.0, "1", -0.1)
    with pytest.raises(ValueError):
        score_numeric(float("inf"), "1", 0.1)


def test_answer_in_text() -> None:
    text = "The tower is 330 m tall and was finished in 1889 in Paris."
    assert answer_in_text("Paris", None, 0.0, text)
    assert answer_in_text(None, 330, 0.0, text)
    assert answer_in_text(None, 325, 0.02, text)
    assert not answer_in_text(None, 33, 0.0, text)  # not inside 330
    assert not answer_in_text(None, 18, 0.0, text)  # not inside 1889
    assert not answer_in_text("Pari", None, 0.0, text)  # word boundary
    assert answer_in_text("London", 1889, 0.0, text)  # either form suffices
    assert not answer_in_text(None, None, 0.0, text)
    assert not answer_in_text("Paris", 330, 0.0, None)
    assert not answer_in_text(None, 12, 0.0, "prices: 1.25 and 123")
    assert answer_in_text(None, 1234.5, 0.0, "prices: $1,234.50")


# --- per-cell rubric (DeepWeb-Bench A.3) ---------------------------------------------------


def precise(value, method: str | None = "segment revenue × margin") -> CellAnswer:
    return CellAnswer("precise", value=value, method=method)


def ranged(low, high, method: str | None = "triangulated from shipments") -> CellAnswer:
    return CellAnswer("range", low=low, high=high, method=method)


NOT_AVAILABLE = CellAnswer("not_available", method="Not broken out in the 10-K or by any research firm.")


@pytest.mark.parametrize(
    ("response", "score"),
    [
        (precise(38200), 1.0),
        (precise("38,200"), 1.0),
        (precise(39000), 1.0),  # 2.1 % off, within 5 %
        (precise(39000, method=None), 1.0),  # A.3: full credit needs no derivation by default
        (precise(25200), 0.5),  # the paper's E.1 case: 34 % low, right sign → 0.5
        (precise(-38200), 0.0),  # wrong sign
        (ranged(38200, 38200), 1.0),  # a zero-width range is a scalar
        (ranged(30000, 40000), 0.0),  # a range is not a scalar
        (NOT_AVAILABLE, 0.0),
        (precise(None), 0.0),
        (None, 0.0),
    ],
)
def test_precise_cells(response, score) -> None:
    assert score_cell("precise", response, expected_value=38200) == score


def test_precise_cell_relaxed_tolerance_near_zero() -> None:
    # Reference 0.5 pp, candidate −0.5 pp: within 1 pp but of the wrong sign → 0 with a
    # derivation ...
    assert score_cell("precise", precise(-0.5), expected_value=0.5, percentage=True) == 0.0
    # Without a derivation, within the relaxed 2 pp tolerance → 0.5 (A.3's second 0.5 clause).
    assert score_cell("precise", precise(-0.5, method=None), expected_value=0.5, percentage=True) == 0.5
    assert score_cell("precise", precise(-2.0, method=None), expected_value=0.5, percentage=True) == 0.0


def test_precise_cell_percentage_points_are_absolute() -> None:
    assert score_cell("precise", precise(21.0), expected_value=20.2, percentage=True) == 1.0
    assert score_cell("precise", precise(21.5), expected_value=20.2, percentage=True) == 0.5
    # The same 6 % relative error is within 1 pp on a small percentage but not on a ratio.
    assert score_cell("precise", precise(2.12), expected_value=2.0, percentage=True) == 1.0
    assert score_cell("precise", precise(2.12), expected_value=2.0) == 0.5


def test_precise_cell_can_require_derivation() -> None:
    strict = dataclasses.replace(DEFAULT_CELL_RUBRIC, precise_requires_derivation=True)
    assert score_cell("precise", precise(38200, method=" "), expected_value=38200, rubric=strict) == 0.5
    assert score_cell("precise", precise(38200), expected_value=38200, rubric=strict) == 1.0


@pytest.mark.parametrize(
    ("response", "score"),
    [
        (ranged(0.10, 0.20), 1.0),  # covers all
        (ranged(0.05, 0.19), 1.0),  # covers 90 %
        (ranged(0.10, 0.20, method=None), 0.5),  # method missing
        (ranged(0.10, 0.20, method="   "), 0.5),
        (ranged(0.14, 0.30), 0.5),  # covers 60 %
        (ranged(0.17, 0.30), 0.0),  # covers 30 %
        (ranged(0.20, 0.10), 1.0),  # bounds given reversed
        (ranged(0.30, 0.40), 0.0),
        (precise(0.15), 0.0),  # a scalar is a range of width zero: covers 0 %
        (NOT_AVAILABLE, 0.0),
        (ranged(None, 0.2), 0.0),
    ],
)
def test_range_cells(response, score) -> None:
    assert score_cell("range", response, expected_low=0.10, expected_high=0.20) == score


def test_range_cell_coverage_thresholds_are_inclusive() -> None:
    assert score_cell("range", ranged(0.0, 8.0), expected_low=0.0, expected_high=10.0) == 1.0  # 80 %
    assert score_cell("range", ranged(0.0, 5.0), expected_low=0.0, expected_high=10.0) == 0.5  # 50 %
    assert score_cell("range", ranged(0.0, 4.9), expected_low=0.0, expected_high=10.0) == 0.0


def test_tolerance_boundaries_are_inclusive_despite_float_rounding() -> None:
    # 0.735 − 0.7 computes as 0.03500000000000003 > 0.05 · 0.7; it is exactly 5 %.
    assert score_cell("precise", precise(0.735), expected_value=0.7) == 1.0
    assert score_cell("precise", precise(0.7351), expected_value=0.7) == 0.5
    # (0.18 − 0.1) / (0.2 − 0.1) computes as 0.7999999999999998; it is exactly 80 %.
    assert score_cell("range", ranged(0.1, 0.18), expected_low=0.1, expected_high=0.2) == 1.0
    assert score_numeric(0.7, "0.735", 0.05) is True


def test_degenerate_reference_range() -> None:
    assert score_cell("range", ranged(4.0, 6.0), expected_low=5.0, expected_high=5.0) == 1.0
    assert score_cell("range", precise(5.0), expected_low=5.0, expected_high=5.0) == 1.0
    assert score_cell("range", ranged(6.0, 7.0), expected_low=5.0, expected_high=5.0) == 0.0


@pytest.mark.parametrize(
    ("response", "score"),
    [
        (NOT_AVAILABLE, 1.0),
        (CellAnswer("not_available"), 0.0),  # no justification
        (CellAnswer("not_available", method="  "), 0.0),
        (precise(52.3), 0.0),  # the paper's E.2 case
        (precise(52.3, method=None), 0.0),
        (ranged(30, 70), 0.5),  # wide range with its method
        (ranged(30, 70, method=None), 0.0),
        (ranged(50, 50), 0.0),  # zero width is not a wide range
        (None, 0.0),
    ],
)
def test_not_available_cells(response, score) -> None:
    assert score_cell("not_available", response) == score


def test_not_available_range_must_bracket_the_plausible_interval() -> None:
    assert score_cell("not_available", ranged(30, 70), expected_low=40, expected_high=60) == 0.5
    assert score_cell("not_available", ranged(45, 70), expected_low=40, expected_high=60) == 0.0


def test_explain_cell_gives_the_rule() -> None:
    explained = explain_cell("precise", precise(25200), expected_value=38200)
    assert explained.score == 0.5
    assert "outside tolerance" in explained.reason


def test_rubric_validation_and_bad_rows() -> None:
    with pytest.raises(ValueError):
        CellAnswer("maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CellRubric(range_full_coverage=0.4, range_partial_coverage=0.5)
    with pytest.raises(ValueError):
        CellRubric(relative_tolerance=math.nan)
    with pytest.raises(ValueError):
        score_cell("exact", NOT_AVAILABLE)
    with pytest.raises(ValueError):
        score_cell("precise", precise(1.0))  # no expected value
    with pytest.raises(ValueError):
        score_cell("range", ranged(1, 2), expected_low=3, expected_high=1)


# --- the mean rubric score's interval -------------------------------------------------------


@FAST
@given(st.lists(st.sampled_from([0.0, 1.0]), max_size=60))
def test_rubric_interval_of_binary_scores_is_the_wilson_interval(scores) -> None:
    got = rubric_mean_interval(scores)
    want = wilson_interval(int(sum(scores)), len(scores))
    if not scores:
        assert got == want == Interval(None, None, None)
        return
    assert got.value == pytest.approx(want.value)
    assert got.low == pytest.approx(want.low, abs=1e-12) and got.high == pytest.approx(want.high, abs=1e-12)


@FAST
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=60))
def test_rubric_interval_matches_statsmodels_on_the_score_sum(scores) -> None:
    from statsmodels.stats.proportion import proportion_confint

    got = rubric_mean_interval(scores)
    low, high = proportion_confint(sum(scores), len(scores), alpha=0.05, method="wilson")
    assert got.value == pytest.approx(sum(scores) / len(scores))
    assert got.low == pytest.approx(max(0.0, low), abs=1e-12) and got.high == pytest.approx(min(1.0, high), abs=1e-12)
    assert 0.0 <= got.low <= got.value <= got.high <= 1.0
    assert got.high > got.low  # never collapses to a point, even when every score is equal


def test_rubric_interval_covers_at_least_nominally_with_half_credits() -> None:
    # Scores of 0 / 0.5 / 1 drawn with fixed probabilities: the interval must cover the true mean
    # in at least 95 % of samples (it is conservative: the Bernoulli variance bound).
    rng = np.random.default_rng(20260611)
    for probs in ([0.2, 0.5, 0.3], [0.05, 0.9, 0.05], [0.6, 0.1, 0.3]):
        truth = 0.5 * probs[1] + probs[2]
        covered = 0
        trials = 2000
        for sample in rng.choice([0.0, 0.5, 1.0], p=probs, size=(trials, 40)):
            iv = rubric_mean_interval(sample.tolist())
            covered += iv.low <= truth <= iv.high
        assert covered / trials >= 0.94, (probs, covered / trials)


def test_rubric_interval_rejects_scores_outside_0_1() -> None:
    for bad in ([1.5], [-0.5], [math.nan]):
        with pytest.raises(ValueError):
            rubric_mean_interval(bad)
    with pytest.raises(ValueError):
        rubric_mean_interval([1.0], confidence=1.0)
    assert rubric_mean_interval([1.0, 1.0]).high == 1.0 and rubric_mean_interval([0.0]).low == 0.0
