"""The number finder and canonical text agree with their reference definitions on random texts.

`bench_assets.metrics.text` finds numbers by trying its pattern only where a number can begin, leaves
numbers already in canonical spelling in place, and keeps what it read of a text for the next
question about it. The references below are the definitions as first written (the pattern tried at
every position by `finditer`, every number respelled, nothing kept); the faster code must give the
same answer on every text, so the scores built on it cannot move.
"""

from __future__ import annotations

import math
import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench_assets.metrics import answer_in_text, canonical_text, contains_number, contains_phrase, find_numbers
from bench_assets.metrics import text as T
from bench_assets.metrics.text import contains_normalized

MANY = settings(deadline=None, max_examples=600)

# Everything the number syntax reads, and what stands around numbers in vendors' pages.
NUMBERY = [*"0123456789.,-+%eE \u2212$€£¥₹abcxyzUS_()/:\n\t\u00a0", "US$", "１２", "Ｅ", "½", "²", "İ", "K"]
numbery_text = st.lists(st.sampled_from(NUMBERY), max_size=40).map("".join)
any_text = st.one_of(numbery_text, st.text(max_size=40))


# ##### THE REFERENCES


def reference_matches(text: str) -> list[re.Match[str]]:
    return list(T._NUMBER.finditer(text))


def reference_find_numbers(text: str | None) -> list[float]:
    if not text:
        return []
    normalized = unicodedata.normalize("NFKC", text)
    values = [T._number_of(m).as_float() for m in T._NUMBER.finditer(normalized)]
    return [v for v in values if math.isfinite(v)]


def reference_token(match: re.Match[str], number: T._Number) -> str:
    spelled = number.magnitude()
    text = match.string
    start, end = match.span()
    ambiguous = (
        T._AMBIGUOUS_BEFORE.search(text, 0, start) is not None or T._AMBIGUOUS_AFTER.match(text, end) is not None
    )
    if spelled is None or ambiguous:
        return match.group(0)
    currency = match.group("signed_currency") or match.group("currency") or match.group("prefixed_currency") or ""
    percent = "%" if match.group("percent") else ""
    return currency + number.sign + spelled + percent


def reference_canonical_text(text: str | None) -> str:
    normalized = T.normalize_text(text)
    pieces, last = [], 0
    for match in T._NUMBER.finditer(normalized):
        pieces += [normalized[last : match.start()], reference_token(match, T._number_of(match))]
        last = match.end()
    return "".join([*pieces, normalized[last:]])


def reference_contains_number(text: str | None, expected: float, rel_tol: float = 0.0) -> bool:
    return any(T.numbers_match(expected, found, rel_tol) for found in reference_find_numbers(text))


def reference_canonical_numbers(text: str) -> tuple[str, dict[int, tuple[int, bool]]]:
    canonical = reference_canonical_text(text)
    spans = {}
    for match in T._NUMBER.finditer(canonical):
        start, end = match.span("body")
        spans[start] = (end, T._number_of(match).negative)
    return canonical, spans


def same_floats(a: list[float], b: list[float]) -> bool:
    return [x.hex() for x in a] == [x.hex() for x in b]


# ##### AGREEMENT


@MANY
@given(any_text)
@example("US$-5 and 1,234.50 or .5e3% of 0.0, 007, 1e999, 10-20, COVID-19, v2012, 1,2,3, 0e-.0")
@example("1" + "0" * 45 + " and 0." + "0" * 45 + "1 and 12.50 and 12.5")
def test_the_matches_are_those_of_finditer(text):
    assert [m.span() for m in T._number_matches(text)] == [m.span() for m in reference_matches(text)]
    assert [m.groupdict() for m in T._number_matches(text)] == [m.groupdict() for m in reference_matches(text)]


@MANY
@given(any_text)
@example("$ +5, −$5, 1,234.5%, 0.10, 100, 1.5e6x, 1e5x, 12,345,678.900")
def test_find_numbers_agrees_with_the_reference(text):
    assert same_floats(find_numbers(text), reference_find_numbers(text))
    assert same_floats(find_numbers(text), reference_find_numbers(text))  # and again, from what was kept


@MANY
@given(any_text)
@example("Revenue 1,234.50, margin 12.5 %, 0.0, 00.5, .5, 5., 1,2,3 and 0,10e1")
def test_canonical_text_agrees_with_the_reference(text):
    assert canonical_text(text) == reference_canonical_text(text)
    assert T._canonical_numbers(text) == reference_canonical_numbers(text)


@MANY
@given(st.text(st.sampled_from(list("0123456789.,")), min_size=1, max_size=25))
def test_a_plain_number_is_its_own_canonical_spelling_and_float(written):
    """The invariant the fast path rests on, on every text the plain pattern accepts."""
    if T._PLAIN_NUMBER.fullmatch(written) is None:
        return
    for context in (written, f"a {written} b", f"1,{written}", f"{written},1", f"9e{written}"):
        for match in T._NUMBER.finditer(context):
            if match.group() == written:
                assert reference_token(match, T._number_of(match)) == written
                assert float(written).hex() == T._number_of(match).as_float().hex()


def outcome(function, *args):
    try:
        return function(*args)
    except Exception as exc:  # the error itself is compared
        return type(exc), str(exc)


expected_numbers = st.one_of(
    st.sampled_from([0.0, -0.0, 5.0, -5.0, 1234.5, 12.5, 0.5, 1e6, 2012.0, 19.0, math.inf, -math.inf, math.nan]),
    st.floats(),
    st.integers(min_value=-100, max_value=100),
)


@MANY
@given(any_text, expected_numbers, st.sampled_from([0.0, 0.001, 0.1, 1.0, -1.0, math.nan, 1e-13]))
@example("5 and 5.000000000001 and 4.999999999999", 5.0, 0.0)
@example("-0 0 1e-400", 0.0, 0.0)
@example("1e308 -1e308", math.inf, 0.0)
def test_contains_number_agrees_with_the_reference(text, expected, tolerance):
    assert outcome(contains_number, text, expected, tolerance) == outcome(
        reference_contains_number, text, expected, tolerance
    )


@MANY
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=12), st.floats(), st.floats(0, 1))
def test_contains_number_agrees_on_any_numbers(values, expected, tolerance):
    """Numbers written by repr, so the text holds exactly these values, densely around `expected`."""
    written = [repr(v) for v in values] + [
        repr(expected * (1 + d)) for d in (-1e-12, 1e-12, 2e-12) if math.isfinite(expected)
    ]
    text = " ; ".join(written)
    assert outcome(contains_number, text, expected, tolerance) == outcome(
        reference_contains_number, text, expected, tolerance
    )


def reference_normalize_text(text: str | None) -> str:
    if not text:
        return ""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return re.sub(r"\s+", " ", folded).strip()


@MANY
@given(st.one_of(any_text, st.text(st.characters(max_codepoint=127))))
@example("  Mixed CASE\x1c\x1f\x0b text\t\n")
def test_normalize_text_agrees_with_the_reference(text):
    assert T.normalize_text(text) == reference_normalize_text(text)


def reference_contains_phrase(text: str | None, phrase: str | None) -> bool:
    needle = reference_canonical_text(phrase)
    if not needle:
        return False
    haystack = reference_canonical_text(text)
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if T._left_boundary_ok(haystack, start, needle) and T._right_boundary_ok(haystack, end, needle):
            return True
        start = haystack.find(needle, start + 1)
    return False


def reference_contains_normalized(text: str | None, phrase: str | None) -> bool:
    needle, needle_numbers = reference_canonical_numbers(phrase or "")
    if not needle:
        return False
    haystack, haystack_numbers = reference_canonical_numbers(text or "")
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if not T._splits_digit_run(haystack, start, end, needle) and all(
            haystack_numbers.get(start + offset) == (start + number_end, negative)
            for offset, (number_end, negative) in needle_numbers.items()
        ):
            return True
        start = haystack.find(needle, start + 1)
    return False


phrases = st.one_of(
    st.sampled_from(["12", "1,234.5", "-5", "$5", "us$ 5", "5 points", "a1", "12.5%", ""]), numbery_text
)


@MANY
@given(any_text, phrases)
@example("Revenue 1,234.50 and -5 points", "1234.5")
@example("COVID-19 cases", "19 cases")
def test_containment_and_phrase_presence_agree_with_the_references(text, phrase):
    assert contains_normalized(text, phrase) == reference_contains_normalized(text, phrase)
    assert contains_phrase(text, phrase) == reference_contains_phrase(text, phrase)
    expected = phrase if phrase.strip() else None
    assert answer_in_text(expected, 12.5, 0.0, text) == (
        bool(text)
        and (
            (
                expected is not None
                and bool(reference_canonical_text(expected))
                and reference_contains_phrase(text, expected)
            )
            or reference_contains_number(text, 12.5, 0.0)
        )
    )
