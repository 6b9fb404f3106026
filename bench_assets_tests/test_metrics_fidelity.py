"""Extraction fidelity: field scores, renormalized weights, labels and thresholds."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from bench_assets.metrics import (
    CORRECT_THRESHOLD,
    FIDELITY_WEIGHTS,
    PARTIAL_THRESHOLD,
    FidelityScore,
    extraction_fidelity,
    fidelity_label,
)

CONTENT = """
Quarterly Results — Q3 2026
Revenue grew to $1,234.5 million, up 12.5% year over year.
| Region | Units |
| EMEA   | 4,200 |
| APAC   | 3,150 |
Operating margin was -3.2 percent.
"""


def test_constants_match_the_contract() -> None:
    assert FIDELITY_WEIGHTS == {
        "title": 0.15,
        "anchor_phrases": 0.35,
        "table_cells": 0.25,
        "numeric_facts": 0.15,
        "noise": 0.10,
    }
    assert sum(FIDELITY_WEIGHTS.values()) == pytest.approx(1.0)
    assert (CORRECT_THRESHOLD, PARTIAL_THRESHOLD) == (0.90, 0.50)


def test_perfect_extraction_with_every_field() -> None:
    golden = {
        "title": "Quarterly Results",
        "anchor_phrases": ["revenue grew to", "year over year"],
        "table_cells": ["EMEA", "4200", "3,150"],
        "numeric_facts": [1234.5, 12.5, -3.2],
        "noise": ["Subscribe to our newsletter", "Cookie settings"],
    }
    result = extraction_fidelity(golden, "Quarterly Results | ACME Corp", CONTENT)
    assert result.score == pytest.approx(1.0)
    assert result.label == "correct"
    assert result.fields == {name: 1.0 for name in FIDELITY_WEIGHTS}
    assert sum(result.weights.values()) == pytest.approx(1.0)


def test_weights_renormalize_over_defined_fields() -> None:
    golden = {"title": "Quarterly Results", "anchor_phrases": ["revenue grew to", "not on the page"]}
    result = extraction_fidelity(golden, "Quarterly Results", CONTENT)
    assert result.fields == {"title": 1.0, "anchor_phrases": 0.5}
    # (0.15·1 + 0.35·0.5) / (0.15 + 0.35) = 0.65
    assert result.score == pytest.approx(0.65)
    assert result.weights == pytest.approx({"title": 0.3, "anchor_phrases": 0.7})
    assert result.label == "partial"


def test_absent_and_empty_keys_are_undefined_fields() -> None:
    golden = {"title": "", "anchor_phrases": [], "table_cells": None, "noise": ["  "], "numeric_facts": [1234.5]}
    result = extraction_fidelity(golden, None, CONTENT)
    assert result.fields == {"numeric_facts": 1.0}
    assert result.score == 1.0


def test_golden_defining_nothing_scores_zero_incorrect() -> None:
    for golden in ({}, {"title": "   ", "anchor_phrases": []}, SimpleNamespace()):
        result = extraction_fidelity(golden, "Anything", CONTENT)
        assert result == FidelityScore(score=0.0, label="incorrect", fields={}, weights={})


def test_none_title_and_content_are_empty() -> None:
    golden = {"title": "Quarterly Results", "noise": ["Cookie settings"]}
    result = extraction_fidelity(golden, None, None)
    assert result.fields == {"title": 0.0, "noise": 1.0}  # nothing returned, so no noise either
    assert result.score == pytest.approx(0.10 / 0.25)


def test_title_is_containment_after_normalization() -> None:
    golden = {"title": "Ｑuarterly   RESULTS"}  # full-width Q, odd spacing and case
    assert extraction_fidelity(golden, "ACME — quarterly results", "").fields["title"] == 1.0
    assert extraction_fidelity(golden, "Quarterly Resultsheet", "").fields["title"] == 0.0
    assert extraction_fidelity(golden, "Results", "").fields["title"] == 0.0


def test_numbers_are_compared_as_numbers() -> None:
    golden = {"numeric_facts": ["1,234.5", 4200, 3150.0, 12.5]}
    assert extraction_fidelity(golden, "", "1234.50 and 4,200 and 3150 and 12.5%").fields["numeric_facts"] == 1.0
    # 12 is not inside 123 or 1.25; 4200 is not 42000.
    partial = extraction_fidelity({"numeric_facts": [12, 4200]}, "", "values 123, 1.25 and 42000")
    assert partial.fields["numeric_facts"] == 0.0


def test_numeric_tolerance_is_relative() -> None:
    golden = {"numeric_facts": [1000.0, 50.0], "numeric_tolerance": 0.01}
    result = extraction_fidelity(golden, "", "about 1,009 and 50.6")
    assert result.fields["numeric_facts"] == 0.5  # 1009 within 1 % of 1000; 50.6 is 1.2 % off
    exact = extraction_fidelity({"numeric_facts": [1000.0]}, "", "about 1,009")
    assert exact.fields["numeric_facts"] == 0.0  # default tolerance is 0


def test_table_cells_numeric_and_text() -> None:
    golden = {"table_cells": ["EMEA", "4,200", "APAC", "3150.0", "LATAM", "999"], "numeric_tolerance": 0}
    result = extraction_fidelity(golden, "", CONTENT)
    assert result.fields["table_cells"] == pytest.approx(4 / 6)


def test_noise_is_share_absent() -> None:
    golden = {"noise": ["Cookie settings", "Sign in", "Related articles", "Advertisement"]}
    content = CONTENT + "\nSign in to continue. ADVERTISEMENT"
    result = extraction_fidelity(golden, "", content)
    assert result.fields["noise"] == 0.5
    assert result.score == 0.5


def test_label_thresholds_exactly_at_boundaries() -> None:
    phrases = [f"phrase{i}" for i in range(10)]
    nine_of_ten = " ".join(phrases[:9])
    result = extraction_fidelity({"anchor_phrases": phrases}, "", nine_of_ten)
    assert result.fields["anchor_phrases"] == 0.9
    assert result.label == "correct"  # 0.9 is correct, even if computed as 0.8999999999999999

    half = extraction_fidelity({"anchor_phrases": phrases[:2]}, "", phrases[0])
    assert half.score == 0.5 and half.label == "partial"

    eight_of_nine = extraction_fidelity({"anchor_phrases": phrases[:9]}, "", " ".join(phrases[:8]))
    assert eight_of_nine.label == "partial"
    four_of_nine = extraction_fidelity({"anchor_phrases": phrases[:9]}, "", " ".join(phrases[:4]))
    assert four_of_nine.label == "incorrect"


def test_threshold_reached_through_float_rounding_is_still_correct() -> None:
    # (0.15·1 + 0.35·6/7) / 0.5 is exactly 0.9, but computes as 0.8999999999999999.
    phrases = [f"phrase{i}" for i in range(7)]
    golden = {"title": "Quarterly Results", "anchor_phrases": phrases}
    result = extraction_fidelity(golden, "Quarterly Results", " ".join(phrases[:6]))
    assert result.score == pytest.approx(0.9, abs=1e-12)
    assert result.label == "correct"


def test_label_epsilon_is_tiny() -> None:
    assert fidelity_label(0.9 - 1e-12) == "correct"
    assert fidelity_label(0.9 - 1e-6) == "partial"
    assert fidelity_label(0.5 - 1e-12) == "partial"
    assert fidelity_label(0.5 - 1e-6) == "incorrect"
    assert fidelity_label(1.0) == "correct"
    assert fidelity_label(0.0) == "incorrect"


def test_weights_override() -> None:
    golden = {"title": "Quarterly Results", "anchor_phrases": ["absent phrase"]}
    default = extraction_fidelity(golden, "Quarterly Results", CONTENT)
    assert default.score == pytest.approx(0.15 / 0.5)
    pinned = extraction_fidelity(golden, "Quarterly Results", CONTENT, weights={"title": 0.9, "anchor_phrases": 0.1})
    assert pinned.score == pytest.approx(0.9)
    assert pinned.label == "correct"
    with pytest.raises(ValueError):
        extraction_fidelity(golden, "", "", weights={"tittle": 1.0})
    with pytest.raises(ValueError):
        extraction_fidelity(golden, "", "", weights={"title": -1.0})


def test_golden_as_object_with_attributes() -> None:
    @dataclasses.dataclass
    class GoldenRow:
        title: str | None = None
        anchor_phrases: list[str] = dataclasses.field(default_factory=list)
        numeric_facts: list[float] = dataclasses.field(default_factory=list)
        numeric_tolerance: float | None = None

    row = GoldenRow(title="Quarterly Results", anchor_phrases=["revenue grew to"], numeric_facts=[1234.5])
    as_mapping = {"title": "Quarterly Results", "anchor_phrases": ["revenue grew to"], "numeric_facts": [1234.5]}
    assert extraction_fidelity(row, "Quarterly Results", CONTENT) == extraction_fidelity(
        as_mapping, "Quarterly Results", CONTENT
    )


def test_phrases_match_on_word_boundaries() -> None:
    golden = {"anchor_phrases": ["margin", "grew"]}
    assert extraction_fidelity(golden, "", "marginal gains; it regrew").fields["anchor_phrases"] == 0.0
    assert extraction_fidelity(golden, "", "The MARGIN grew.").fields["anchor_phrases"] == 1.0


def test_invalid_golden_rows_raise() -> None:
    with pytest.raises(ValueError):
        extraction_fidelity({"anchor_phrases": "a single string"}, "", "")
    with pytest.raises(ValueError):
        extraction_fidelity({"numeric_facts": ["twelve"]}, "", "")
    with pytest.raises(ValueError):
        extraction_fidelity({"numeric_facts": [1], "numeric_tolerance": -0.1}, "", "")
