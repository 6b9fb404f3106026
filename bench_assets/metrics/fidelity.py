"""Extraction fidelity: how faithfully a vendor's extracted page matches the golden page."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from .text import contains_normalized, contains_number, normalize_text, parse_number

__all__ = [
    "CORRECT_THRESHOLD",
    "FIDELITY_FIELDS",
    "FIDELITY_WEIGHTS",
    "PARTIAL_THRESHOLD",
    "FidelityScore",
    "extraction_fidelity",
    "fidelity_label",
]

FIDELITY_WEIGHTS: dict[str, float] = {
    "title": 0.15,
    "anchor_phrases": 0.35,
    "table_cells": 0.25,
    "numeric_facts": 0.15,
    "noise": 0.10,
}
FIDELITY_FIELDS: tuple[str, ...] = tuple(FIDELITY_WEIGHTS)
CORRECT_THRESHOLD = 0.90
PARTIAL_THRESHOLD = 0.50

_LIST_FIELDS = ("anchor_phrases", "table_cells", "noise", "numeric_facts")


@dataclass(frozen=True)
class FidelityScore:
    """Result of :func:`extraction_fidelity`.

    ``score`` is in [0, 1]; ``label`` is ``"correct"``, ``"partial"`` or ``"incorrect"``;
    ``fields`` maps each field the golden row defines to its score in [0, 1] (fields the row
    does not define are absent); ``weights`` maps the same fields to the renormalized
    weights that were applied (they sum to 1, or the mapping is empty).
    """

    score: float
    label: str
    fields: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)


def _exact(value: Any) -> Fraction:
    """A number as the exact fraction it is written as: a float by its shortest decimal
    spelling (``0.15`` is 3/20, not the binary double nearest to it), strings, ints,
    decimals and fractions exactly."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, str):
        return Fraction(value.strip())
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return _decimal_fraction(number)


@lru_cache(maxsize=256)  # the same weights and thresholds, page after page
def _decimal_fraction(number: float) -> Fraction:
    """A finite float as the fraction its shortest decimal spelling writes (0.0 and -0.0 are both 0)."""
    return Fraction(repr(number))


def fidelity_label(score: float | Fraction) -> str:
    """Label of a fidelity score: ``"correct"`` if ``score ≥ 0.90``, ``"partial"`` if
    ``score ≥ 0.50``, otherwise ``"incorrect"``, compared exactly: a float is taken as the
    decimal it is written as (``0.9`` is correct, ``0.8999999999999999`` is partial), and
    :func:`extraction_fidelity` passes its exact fractional score, so rounding in binary
    floating point never moves a page across a threshold."""
    exact: float | Fraction
    if isinstance(score, float) and not math.isfinite(score):
        exact = score  # inf is correct, -inf and NaN are incorrect, as any comparison says
    else:
        exact = _exact(score)
    if exact >= _exact(CORRECT_THRESHOLD):
        return "correct"
    if exact >= _exact(PARTIAL_THRESHOLD):
        return "partial"
    return "incorrect"


def _golden_value(golden: Any, key: str) -> Any:
    if isinstance(golden, Mapping):
        return golden.get(key)
    return getattr(golden, key, None)


def _string_list(key: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"golden field {key!r} must be a list, got {type(value).__name__}")
    items: list[Any] = []
    for item in value:
        if item is None or (isinstance(item, str) and not normalize_text(item)):
            continue  # blank entries carry no information and are ignored
        items.append(item)
    return items


def _numbers(key: str, values: list[Any]) -> list[float]:
    numbers = []
    for item in values:
        number = parse_number(item)
        if number is None:
            raise ValueError(f"golden field {key!r} holds a non-number: {item!r}")
        numbers.append(number)
    return numbers


def _tolerance(golden: Any) -> float:
    raw = _golden_value(golden, "numeric_tolerance")
    if raw is None:
        return 0.0
    tolerance = float(raw)
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"golden field 'numeric_tolerance' must be >= 0, got {raw!r}")
    return tolerance


def _effective_weights(weights: Mapping[str, Any] | None) -> dict[str, Fraction]:
    merged: dict[str, Any] = dict(FIDELITY_WEIGHTS)
    if weights:
        unknown = set(weights) - set(FIDELITY_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown fidelity weight(s): {sorted(unknown)}")
        for name, weight in weights.items():
            try:
                as_float = float(weight)
            except (TypeError, ValueError):
                raise ValueError(f"fidelity weight {name!r} must be a number, got {weight!r}") from None
            if not math.isfinite(as_float) or as_float < 0:
                raise ValueError(f"fidelity weight {name!r} must be >= 0, got {weight!r}")
            merged[name] = weight
    return {name: _exact(weight) for name, weight in merged.items()}


def _cell_present(cell: Any, content: str, tolerance: float) -> bool:
    number = parse_number(cell)
    if number is not None:
        return contains_number(content, number, tolerance)
    return contains_normalized(content, str(cell))


def extraction_fidelity(
    golden: Any,
    title: str | None,
    content: str | None,
    *,
    weights: Mapping[str, float] | None = None,
) -> FidelityScore:
    """Score how faithfully an extracted page (``title``, ``content``) matches its golden row.

    ``golden`` is a mapping or any object with attributes, with the optional keys ``title``
    (str), ``anchor_phrases``, ``table_cells``, ``noise`` (lists of str; table cells may be
    numbers), ``numeric_facts`` (list of numbers or numeric strings) and
    ``numeric_tolerance`` (relative, default 0). A key that is absent, ``None`` or empty
    (after dropping blank entries) is a field the row does not define. ``title`` and
    ``content`` may be ``None`` (treated as empty).

    Field scores. Text is compared by containment after normalization
    (:func:`bench_assets.metrics.text.contains_normalized`: NFKC, case-fold, whitespace
    collapse, then substring, so ``"Foo"`` is in ``"Foobar"``), with the numbers inside a
    phrase compared as numbers (``"12 units"`` is not in ``"2012 units"``; ``"1,234.5"`` is
    ``"1234.50"``). Numbers on their own are compared as numbers: they must equal a whole
    number written in the content (``12`` is not found in ``2012``, ``123`` or ``1.25``),
    within the row's tolerance.

    * ``title``: 1 if the golden title is contained in the returned title, else 0.
    * ``anchor_phrases``: share of the golden phrases contained in the content.
    * ``table_cells``: share of the golden cells present in the content; a cell that is a
      number (``"1,234.5"``, ``"12%"``, ``7``) is present when some number in the content
      equals it within ``numeric_tolerance`` (``1,234.5`` = ``1234.5``), any other cell is
      compared as text (containment).
    * ``numeric_facts``: share of the golden numbers for which some number in the content is
      within ``numeric_tolerance`` (relative; absolute when the golden number is 0).
    * ``noise``: share of the golden noise strings not contained in the content.

    Score: ``Σ w_f · s_f / Σ w_f`` over the defined fields ``f``, with the weights
    ``FIDELITY_WEIGHTS`` (title 0.15, anchor phrases 0.35, table cells 0.25, numeric facts
    0.15, noise 0.10) unless ``weights`` overrides some of them (as a snapshot manifest may
    pin them). A row that defines no field (or only fields of weight 0) scores 0.0 and is
    labelled ``"incorrect"``: there is nothing the extraction could be credited for.

    Label: ``"correct"`` if score ≥ 0.90, ``"partial"`` if ≥ 0.50, else ``"incorrect"``. The
    score behind the label is computed exactly, in fractions (each weight taken as the
    decimal it is written as, ``0.15`` = 3/20, each share as found/defined), so 0.90 and
    0.50 are compared exactly: 6 of 7 phrases with the title is exactly 0.90 and correct,
    while a score a hair below 0.90 is partial however binary floating point would round
    it. ``score`` is that exact value rounded to the nearest float.
    """
    effective = _effective_weights(weights)
    returned_title = title or ""
    returned_content = content or ""
    tolerance = _tolerance(golden)

    shares: dict[str, tuple[int, int]] = {}  # field -> (found, defined)

    golden_title = _golden_value(golden, "title")
    if golden_title is not None and not isinstance(golden_title, str):
        raise ValueError(f"golden field 'title' must be a string, got {golden_title!r}")
    if golden_title and normalize_text(golden_title):
        shares["title"] = (int(contains_normalized(returned_title, golden_title)), 1)

    lists = {key: _string_list(key, _golden_value(golden, key)) for key in _LIST_FIELDS}

    if lists["anchor_phrases"]:
        phrases = lists["anchor_phrases"]
        found = sum(contains_normalized(returned_content, str(phrase)) for phrase in phrases)
        shares["anchor_phrases"] = (found, len(phrases))

    if lists["table_cells"]:
        cells = lists["table_cells"]
        found = sum(_cell_present(cell, returned_content, tolerance) for cell in cells)
        shares["table_cells"] = (found, len(cells))

    if lists["numeric_facts"]:
        facts = _numbers("numeric_facts", lists["numeric_facts"])
        found = sum(contains_number(returned_content, fact, tolerance) for fact in facts)
        shares["numeric_facts"] = (found, len(facts))

    if lists["noise"]:
        noise = lists["noise"]
        absent = sum(not contains_normalized(returned_content, str(item)) for item in noise)
        shares["noise"] = (absent, len(noise))

    return _weighted_fidelity({name: shares[name] for name in FIDELITY_FIELDS if name in shares}, effective)


def _weighted_fidelity(shares: dict[str, tuple[int, int]], weights: dict[str, Fraction]) -> FidelityScore:
    """The score ``Σ w_f · s_f / Σ w_f`` of the fields in ``shares`` (field -> (found, defined),
    in field order), each weight ``w_f = p/q`` exact, each share ``s_f = found/defined``.

    Exact, in integers over common denominators: the fraction arithmetic written out, without a
    `Fraction` object per operation. Every float is the exact quotient rounded once (`int / int`
    is correctly rounded, as `float(Fraction)` is), and the label compares the exact score."""
    fields = {name: found / defined for name, (found, defined) in shares.items()}
    exact = {name: (weights[name].numerator, weights[name].denominator) for name in shares}
    weight_denominator = math.lcm(*(q for _, q in exact.values()))
    total_weight = sum(p * (weight_denominator // q) for p, q in exact.values())  # Σ w_f · weight_denominator
    if total_weight <= 0:
        return FidelityScore(score=0.0, label="incorrect", fields=fields, weights={})
    applied = {name: (p * weight_denominator) / (q * total_weight) for name, (p, q) in exact.items()}
    denominators = {name: q * shares[name][1] for name, (_, q) in exact.items()}
    common = math.lcm(*denominators.values())
    weighted = sum(p * shares[name][0] * (common // denominators[name]) for name, (p, _) in exact.items())
    # Σ w_f · s_f / Σ w_f, exactly (in [0, 1]), so the label sees the true score
    score = Fraction(weighted * weight_denominator, common * total_weight)
    return FidelityScore(score=float(score), label=fidelity_label(score), fields=fields, weights=applied)
