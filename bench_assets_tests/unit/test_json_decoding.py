"""`adapters.base.loads_json` reads every text exactly as `json.loads` does: the same value (types,
float bits, key order, the last of duplicate keys) or the same error with the same message.

Adapters parse every archived body with it, so a vendor's results, billed units and error classes
(and the message of a malformed body, which scoring keeps) cannot depend on which parser read them.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench_assets.adapters.base import loads_json

MANY = settings(deadline=None, max_examples=500)


def same(a: Any, b: Any) -> bool:
    """Equal as values and as types, floats bit for bit, dict keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def outcome(text: str) -> tuple[str, Any]:
    try:
        return "value", json.loads(text)
    except Exception as exc:  # the error itself is compared
        return "error", (type(exc), str(exc))


def assert_reads_as_json(text: str) -> None:
    expected = outcome(text)
    try:
        got: tuple[str, Any] = ("value", loads_json(text))
    except Exception as exc:
        got = ("error", (type(exc), str(exc)))
    assert got[0] == expected[0], (text[:200], got, expected)
    if got[0] == "value":
        assert same(got[1], expected[1]), text[:200]
    else:
        assert got[1] == expected[1]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5),
    max_leaves=20,
)


@MANY
@given(json_values, st.booleans(), st.sampled_from([None, 2]), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_every_json_text_reads_the_same(value, ensure_ascii, indent, separators):
    assert_reads_as_json(json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators))


# Numbers as vendors and hostile bodies write them: long mantissas, exponents at the double's edges.
number_text = st.builds(
    lambda sign, whole, fraction, exponent: f"{sign}{whole}{fraction}{exponent}",
    st.sampled_from(["", "-"]),
    st.sampled_from(["0", "1", "9", "12345678901234567", "18446744073709551616", "9" * 30, "01"]),
    st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,25}", fullmatch=True)),
    st.one_of(st.just(""), st.from_regex(r"[eE][-+]?[0-9]{1,3}", fullmatch=True)),
)


@MANY
@given(number_text)
@example("2.2250738585072011e-308")
@example("4.9e-324")
@example("1.7976931348623157e309")
@example("9007199254740993")
@example("1.00000000000000011102230246251565404236316680908203125")
@example("-9223372036854775809")
def test_every_number_reads_the_same(text):
    assert_reads_as_json(text)
    assert_reads_as_json(f'{{"n": {text}, "m": [{text}]}}')


JSONISH = [*'{}[]":,0123456789.-+eEtrufalsn \t\n\r\x0c\\/ubé\u2028\ud800', "NaN", "Infinity", "\\u00e9", "\\ud83d"]


@MANY
@given(st.lists(st.sampled_from(JSONISH), max_size=30).map("".join))
@example("[1,]")
@example("\ufeff[1]")
@example('"\\ud800"')
@example('"\ud800"')
@example("[1] x")
@example("-Infinity")
def test_every_other_text_reads_or_fails_the_same(text):
    assert_reads_as_json(text)


@pytest.mark.parametrize("depth", [150, 250, 500])
def test_deep_nesting_reads_the_same(depth):
    """Deeper than pydantic-core reads (json reads it), compared by equality (too deep to walk)."""
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        assert loads_json(text) == json.loads(text)


def test_a_huge_integer_fails_as_json_fails():
    assert_reads_as_json("1" * 5000)
