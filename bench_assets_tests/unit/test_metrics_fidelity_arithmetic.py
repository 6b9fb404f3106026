"""Fidelity's weighted score in integers is the fraction arithmetic it replaced, bit for bit.

`metrics.fidelity._weighted_fidelity` computes ``Σ w_f · s_f / Σ w_f`` over common denominators;
the reference below is the `Fraction` arithmetic as first written. Scores, labels, field scores and
applied weights must be identical for any shares and any weights a manifest may pin.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench_assets.metrics.fidelity import (
    FIDELITY_FIELDS,
    FidelityScore,
    _effective_weights,
    _weighted_fidelity,
    fidelity_label,
)


def reference(shares: dict[str, tuple[int, int]], effective: dict[str, Fraction]) -> FidelityScore:
    ordered = {name: Fraction(found, defined) for name, (found, defined) in shares.items()}
    fields = {name: float(value) for name, value in ordered.items()}
    total_weight = sum((effective[name] for name in ordered), Fraction(0))
    if total_weight <= 0:
        return FidelityScore(score=0.0, label="incorrect", fields=fields, weights={})
    applied = {name: float(effective[name] / total_weight) for name in ordered}
    score = sum((effective[name] * ordered[name] for name in ordered), Fraction(0)) / total_weight
    return FidelityScore(score=float(score), label=fidelity_label(score), fields=fields, weights=applied)


def bits(score: FidelityScore) -> tuple:
    return (
        score.score.hex(),
        score.label,
        {k: v.hex() for k, v in score.fields.items()},
        {k: v.hex() for k, v in score.weights.items()},
        list(score.fields),
        list(score.weights),
    )


shares = st.lists(
    st.tuples(
        st.sampled_from(FIDELITY_FIELDS), st.integers(1, 40).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))
    ),
    max_size=5,
).map(lambda pairs: dict(sorted(dict(pairs).items(), key=lambda kv: FIDELITY_FIELDS.index(kv[0]))))
weight_values = st.one_of(
    st.sampled_from([0.15, 0.35, 0.25, 0.1, 0.0, 1.0, 0.3333333333333333, 1e-300, 7]),
    st.floats(0, 10, allow_nan=False),
    st.integers(0, 50),
    st.fractions(min_value=0, max_value=10),
    st.decimals(min_value=0, max_value=10, allow_nan=False, places=6),
)
weights = st.one_of(st.none(), st.dictionaries(st.sampled_from(FIDELITY_FIELDS), weight_values, max_size=5))


@settings(deadline=None, max_examples=1500)
@given(shares, weights)
@example({"title": (1, 1), "anchor_phrases": (6, 7)}, None)  # exactly 0.90
@example({"anchor_phrases": (1, 2)}, {"anchor_phrases": Decimal("0.5")})
@example({"noise": (0, 3)}, {"noise": 0.0})
@example({}, None)
def test_the_integer_arithmetic_is_the_fraction_arithmetic(row_shares, pinned):
    effective = _effective_weights(pinned)
    assert bits(_weighted_fidelity(row_shares, effective)) == bits(reference(row_shares, effective))
