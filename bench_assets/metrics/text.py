"""Text normalization and number matching shared by every deterministic scorer.

Three kinds of comparison are defined here, used by :mod:`.fidelity`, :mod:`.answers` and
:mod:`.reader`. Both sides of a text comparison are first brought to a canonical text
(:func:`canonical_text`: NFKC, case-fold, whitespace collapse, numbers rewritten in one canonical
spelling, so ``1,234.5`` and ``1234.50`` read the same).

* **Containment** (:func:`contains_normalized`, extraction fidelity): the phrase is a substring
  of the text, with the numbers in it compared as numbers: a number of the phrase must be a
  whole number of the text with the same sign. ``"Foo"`` is in ``"Foobar"``; ``"12 units"`` is
  not in ``"2012 units"``.
* **Phrase presence** (:func:`contains_phrase`, answer texts and the cell reader's cues): as
  containment, but the phrase must also occur on word boundaries (``"cat"`` is not in
  ``"concatenate"``): an answer or a cue is a word or a name, not a fragment of one.
* **Number presence** (:func:`contains_number`): every whole number written in the text is
  extracted (:func:`find_numbers`) and compared numerically with a relative tolerance
  (:func:`numbers_match`).

Number syntax recognised (after NFKC, so full-width digits count): an optional sign
(``-``, ``+`` or the Unicode minus ``−``), an optional currency symbol (any character of
Unicode category *Sc*: ``$ € £ ¥ ₹`` ...), digits with optional comma thousands separators
(``1,234,567``), an optional decimal part (``.5``), an optional exponent (``1.2e6``) and an
optional percent sign. The percent sign and the currency symbol are unit marks: the value is
the number as written (``"12.5%"`` is 12.5, ``"$1,234"`` is 1234). Not recognised, by design:
decimal commas (``1.234,5``), space-separated thousands (``1 234``), words such as "million",
and parenthesised accounting negatives.

A number is only ever matched whole: ``12`` is not found in ``123``, ``1.25``, ``A12`` or
``12.5``. A number may be directly followed by letters (``10kg``, ``5x``) but not preceded by
an ASCII letter, digit, underscore or dot (a currency symbol may follow letters: ``US$5``).
A sign belongs to the number only when it is not preceded by a letter, digit, underscore,
dot, comma or another sign, so ``"10-20"`` is 10 and 20 and ``"COVID-19"`` holds 19, while
``"a -5"`` holds −5; directly after a currency symbol a sign is allowed (``"$-5"``). An
exponent counts only when no letter follows it (``"1e5x"`` holds 1).
"""

from __future__ import annotations

import math
import numbers
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "canonical_text",
    "contains_normalized",
    "contains_number",
    "contains_phrase",
    "find_numbers",
    "normalize_text",
    "numbers_match",
    "parse_number",
]


# Every currency symbol (Unicode category Sc) in the Basic Multilingual Plane.
_CURRENCY_CHARS = "".join(chr(code) for code in range(0x10000) if unicodedata.category(chr(code)) == "Sc")
_CURRENCY_CLASS = "[" + re.escape(_CURRENCY_CHARS) + "]"
_SIGN_CLASS = "[-+\u2212]"

_NUMBER_PATTERN = rf"""
    (?:
        # A sign only after a character that cannot be part of another number or word: so
        # "10-20" is a range, "1,-5" is not negative, and "--5" is 5 with a stray dash.
        (?<![0-9A-Za-z_.,+\-\u2212])(?P<sign>{_SIGN_CLASS})
        (?:(?P<signed_currency>{_CURRENCY_CLASS})\s?)?
      | (?<![0-9A-Za-z_.])(?:(?P<currency>{_CURRENCY_CLASS})\s?)?
      | (?<=[A-Za-z])(?P<prefixed_currency>{_CURRENCY_CLASS})\s?     # US$, HK$, R$
    )
    (?:(?<={_CURRENCY_CLASS})(?P<sign2>{_SIGN_CLASS}))?              # $-5
    (?<![0-9A-Za-z_.])                       # not glued to a preceding word, digit or dot
    (?P<body>
        [0-9]{{1,3}}(?:,[0-9]{{3}})+(?:\.[0-9]+)?   # 1,234,567.89
      | [0-9]+(?:\.[0-9]+)?                         # 1234567.89
      | \.[0-9]+                                    # .5
    )
    (?P<exponent>[eE][-+]?[0-9]+(?![A-Za-z_]))?     # 1.5e6, but not the "e5" of "1e5x"
    (?![0-9])                                # whole numbers only: not 12 inside 123 ...
    (?!\.[0-9])                              # ... nor 1 inside 1.25 ...
    (?!,[0-9]{{3}}(?![0-9]))                 # ... nor a malformed thousands group
    (?P<percent>\s?%)?
"""
_NUMBER = re.compile(_NUMBER_PATTERN, re.VERBOSE)


def _number_start_pattern() -> str:
    """Where a number's match can begin: a digit; a point before a digit (".5"); a sign that is
    not glued to a word, a number or another sign, with a digit at most five characters on
    ("-$ -.5"); a currency symbol with a digit at most four characters on ("$ -.5"). A necessary
    condition only (the number pattern decides), cheap to test: every alternative opens with its
    own character, so the regex engine skips straight to the next character that opens one."""

    def digit_within(n: int) -> str:
        return rf"(?=[\s\S]{{0,{n - 1}}}[0-9])"

    alternatives = [*"0123456789", r"\.(?=[0-9])"]
    alternatives += [
        re.escape(sign) + rf"(?<![0-9A-Za-z_.,+\-\u2212]{re.escape(sign)})" + digit_within(5) for sign in "-+\u2212"
    ]
    alternatives += [re.escape(symbol) + digit_within(4) for symbol in _CURRENCY_CHARS]
    return "|".join(alternatives)


# The pattern opens with lookbehinds, which give Python's regex engine no first character to skip
# ahead to, so `finditer` tries the whole pattern at every position of a text; `_number_matches`
# tries it only where `_NUMBER_START` finds that a number can begin.
_NUMBER_START = re.compile(_number_start_pattern())

# Numbers are respelled in plain decimals up to this power of ten and left as written beyond.
_MAX_PLAIN_EXPONENT = 40

# Relative slack added to every relative tolerance so that a golden value computed in binary
# floating point (0.1 + 0.2) still equals the decimal text "0.3" and boundaries are inclusive.
# Far below any real tolerance.
_FLOAT_SLACK = 1e-12


def normalize_text(text: str | None) -> str:
    """Return the comparison form of ``text``.

    Definition: Unicode NFKC, then full case-folding (``str.casefold``), then NFKC again
    (case-folding can produce characters that are not NFKC-normal), then every run of
    whitespace collapsed to a single space and leading/trailing whitespace removed.
    ``None`` is treated as the empty string. The function is idempotent.
    """
    if not text:
        return ""
    if text.isascii():  # NFKC leaves ASCII as it is, and case-folds it as lower() does
        folded = text.lower()
    else:
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    # split() cuts at every run of whitespace (str.isspace, the characters \s matches) and drops
    # the ends: joined by single spaces, it is the collapse-and-strip, without a regex pass.
    return " ".join(folded.split())


@dataclass(frozen=True)
class _Number:
    """A written number, exactly: value = (−1)^negative · int(digits) · 10^exponent, with
    ``digits`` free of leading and trailing zeros ("" for zero). ``sign`` is the sign as
    written: "" (none), "-" (an odd number of minus signs) or "+"."""

    sign: str
    digits: str
    exponent: int

    @property
    def negative(self) -> bool:
        return self.sign == "-" and bool(self.digits)

    def as_float(self) -> float:
        if not self.digits:
            return 0.0
        return float(f"{'-' if self.negative else ''}{self.digits}e{self.exponent}")

    def magnitude(self) -> str | None:
        """Plain decimal spelling of the absolute value (``1234.5``, ``0.002``); ``None``
        beyond 10^±40, which is left as written (a hostile "1e999999" must not expand)."""
        if not self.digits:
            return "0"
        adjusted = self.exponent + len(self.digits) - 1
        if abs(adjusted) > _MAX_PLAIN_EXPONENT:
            return None
        if self.exponent >= 0:
            return self.digits + "0" * self.exponent
        point = len(self.digits) + self.exponent
        if point > 0:
            return f"{self.digits[:point]}.{self.digits[point:]}"
        return f"0.{'0' * -point}{self.digits}"


def _number_matches(text: str) -> Iterator[re.Match[str]]:
    """The matches of the number pattern in ``text``, exactly those of ``_NUMBER.finditer(text)``:
    the pattern is tried at each position where a number can begin (``_NUMBER_START``), from
    left to right, resuming after each match, as ``finditer`` does (matches are never empty, and
    a match tried at a position sees the text before it, so lookbehinds read the same)."""
    search, match = _NUMBER_START.search, _NUMBER.match
    position = 0
    while (candidate := search(text, position)) is not None:
        found = match(text, candidate.start())
        if found is None:
            position = candidate.start() + 1
        else:
            yield found
            position = found.end()


def _number_of(match: re.Match[str]) -> _Number:
    whole, _, fraction = match.group("body").replace(",", "").partition(".")
    written_exponent = match.group("exponent")
    exponent = int(written_exponent[1:]) if written_exponent else 0
    digits = (whole + fraction).lstrip("0")
    exponent -= len(fraction)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    signs = (match.group("sign") or "") + (match.group("sign2") or "")
    if not signs:
        sign = ""
    else:
        sign = "-" if (signs.count("-") + signs.count("\u2212")) % 2 == 1 else "+"
    return _Number(sign=sign, digits=stripped, exponent=exponent if stripped else 0)


# A number written in its own canonical spelling: digits without a leading zero, and a decimal part
# without a trailing one; no sign, currency, percent, thousands separator or exponent. Its canonical
# token (`_canonical_number_token`) is its text, whatever surrounds it (a number left as written is
# too), and its value is `float` of its text (both spellings are the same decimal, which `float`
# rounds correctly), so most numbers of a text need no `_number_of`.
_PLAIN_NUMBER = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?")

_AMBIGUOUS_BEFORE = re.compile(r"[0-9](?:,|[eE][-+\u2212]?)\Z")
_AMBIGUOUS_AFTER = re.compile(r",[0-9]")


def _canonical_number_token(match: re.Match[str], number: _Number) -> str:
    spelled = number.magnitude()
    text = match.string
    start, end = match.span()
    # The pattern before a number spans at most three characters: only they are searched.
    ambiguous_context = _AMBIGUOUS_BEFORE.search(text, max(0, start - 3), start) is not None or (
        _AMBIGUOUS_AFTER.match(text, end) is not None
    )
    if spelled is None or ambiguous_context:
        # Left as written: respelling a number next to ",<digit>" ("1,2,3", "0,10e1") or
        # after "<digit>e" ("0e-.0") could make it read back as part of a thousands group
        # or an exponent, changing its value.
        return match.group(0)
    currency = match.group("signed_currency") or match.group("currency") or match.group("prefixed_currency") or ""
    percent = "%" if match.group("percent") else ""
    # A written sign is kept (moved after the currency symbol): dropping it could glue the
    # number to what precedes it ("$ +5" would become "$ 5", then "$5").
    return currency + number.sign + spelled + percent


def canonical_text(text: str | None) -> str:
    """Return :func:`normalize_text` of ``text`` with every number in one canonical spelling.

    Each number recognised by the module's number syntax is rewritten as: its currency
    symbol if any, then its sign if one was written (``-``, including the Unicode minus, or
    ``+``), then its absolute value in plain decimal notation without thousands separators,
    leading or trailing zeros or exponent, then ``%`` if it had one. So ``"US$ 1,234.50"``,
    ``"us$1234.5"`` and ``"US$1.2345e3"`` all become ``"us$1234.5"``; ``"−$5"`` and
    ``"$-5"`` become ``"$-5"``; ``"0.0"`` becomes ``"0"``. Left as written: numbers beyond
    10^±40, numbers next to ``,<digit>`` (a list such as ``"1,2,3"``) and numbers right after
    ``<digit>e`` — respelling those could change how the text reads back. The function is
    idempotent.
    """
    normalized = normalize_text(text)
    pieces: list[str] = []
    last = 0
    for match in _number_matches(normalized):
        if _PLAIN_NUMBER.fullmatch(match.group()):
            continue  # already in its canonical spelling: left in place
        pieces.append(normalized[last : match.start()])
        pieces.append(_canonical_number_token(match, _number_of(match)))
        last = match.end()
    pieces.append(normalized[last:])
    return "".join(pieces)


def parse_number(text: str | float | int | None) -> float | None:
    """Parse a string that is exactly one number (surrounding whitespace allowed).

    Accepts the module's number syntax: sign, currency symbol, thousands separators,
    decimals, exponent and percent sign (``"−$1,234.5"`` → -1234.5, ``"12%"`` → 12.0).
    Real numbers (``int``, ``float``, numpy scalars; not ``bool``) are returned as ``float``.
    Returns ``None`` for ``None``, booleans, other types, strings that are not exactly one
    number, and non-finite values.
    """
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, numbers.Real):  # int, float, Fraction, numpy scalars
        value = float(text)
        return value if math.isfinite(value) else None
    if not isinstance(text, str):
        return None
    normalized = unicodedata.normalize("NFKC", text).strip()
    match = _NUMBER.fullmatch(normalized)
    if match is None:
        return None
    value = _number_of(match).as_float()
    return value if math.isfinite(value) else None


def find_numbers(text: str | None) -> list[float]:
    """Return every whole number written in ``text``, in order of appearance.

    The text is NFKC-normalized first. Numbers follow the module's number syntax and are
    matched whole (``"123"`` yields 123 only, never 12; ``"1.25"`` yields 1.25 only). In a
    range such as ``"10-20"`` the hyphen is a separator (10 and 20), while ``"-20"`` after a
    space or at the start is negative. Non-finite values are skipped.
    """
    if not text:
        return []
    return list(_numbers_in(text))


# Scoring asks about the same text many times: fidelity looks up every cell and fact of a row in
# one page, answer scoring each result text for the answer and again for the cue, and the same
# pages come back in the results of many rows.
@lru_cache(maxsize=1024)
def _numbers_in(text: str) -> tuple[float, ...]:
    """:func:`find_numbers` of a non-empty text, kept for the next question about it."""
    normalized = unicodedata.normalize("NFKC", text)
    values = []
    for match in _number_matches(normalized):
        written = match.group()
        value = float(written) if _PLAIN_NUMBER.fullmatch(written) else _number_of(match).as_float()
        if math.isfinite(value):
            values.append(value)
    return tuple(values)


def numbers_match(expected: float, found: float, rel_tol: float = 0.0) -> bool:
    """Whether ``found`` equals ``expected`` within a relative tolerance.

    Definition: ``|found − expected| ≤ rel_tol · |expected|``; when ``expected`` is 0 the
    tolerance is absolute, ``|found| ≤ rel_tol``. A floating-point slack of 1e-12 is added
    to a relative tolerance, so that values computed in binary floating point still equal
    their decimal spelling and a value exactly at the tolerance (0.735 for 0.7 ± 5 %)
    counts as within it. NaN never matches. ``rel_tol`` must be ≥ 0.
    """
    if rel_tol < 0 or math.isnan(rel_tol):
        raise ValueError(f"tolerance must be >= 0, got {rel_tol!r}")
    if math.isnan(expected) or math.isnan(found):
        return False
    if expected == 0:
        return abs(found) <= rel_tol
    return abs(found - expected) <= (rel_tol + _FLOAT_SLACK) * abs(expected)


def contains_number(text: str | None, expected: float, rel_tol: float = 0.0) -> bool:
    """Whether any whole number in ``text`` (see :func:`find_numbers`) matches ``expected``
    within ``rel_tol`` (see :func:`numbers_match`)."""
    if not text:
        return False
    if type(expected) is not float:
        return any(numbers_match(expected, found, rel_tol) for found in _numbers_in(text))
    # |found − expected| (rounded, as numbers_match computes it) only grows as found moves away
    # from expected on either side, so some number matches iff one of the two nearest does.
    numbers = _sorted_numbers_in(text)
    nearest = bisect_left(numbers, expected)
    return any(numbers_match(expected, found, rel_tol) for found in numbers[max(0, nearest - 1) : nearest + 1])


@lru_cache(maxsize=1024)
def _sorted_numbers_in(text: str) -> tuple[float, ...]:
    return tuple(sorted(_numbers_in(text)))


def _is_unspaced_script(char: str) -> bool:
    # Scripts written without spaces between words (Thai, Lao, CJK, kana, Hangul): a word
    # boundary cannot be demanded there, so such characters never block a match.
    code = ord(char)
    return (
        0x0E00 <= code <= 0x0EFF
        or 0x2E80 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF66 <= code <= 0xFFDC
        or code >= 0x20000
    )


def _is_word_char(char: str) -> bool:
    return (char.isalnum() or char == "_") and not _is_unspaced_script(char)


def _left_boundary_ok(text: str, start: int, phrase: str) -> bool:
    if start == 0:
        return True
    before = text[start - 1]
    if _is_word_char(before) and _is_word_char(phrase[0]):
        return False
    if phrase[0].isdigit():
        # "25" must not be found in "1.25", nor "5" in "-5" (a sign, not a hyphen).
        if before == "." and start >= 2 and text[start - 2].isdigit():
            return False
        if before in "-+" and (start == 1 or not _is_word_char(text[start - 2])):
            return False
    return True


def _right_boundary_ok(text: str, end: int, phrase: str) -> bool:
    if end >= len(text):
        return True
    after = text[end]
    if _is_word_char(after) and _is_word_char(phrase[-1]):
        return False
    if phrase[-1].isdigit() and after == "." and end + 1 < len(text) and text[end + 1].isdigit():
        return False  # "1.2" must not be found in "1.25"
    return True


def contains_phrase(text: str | None, phrase: str | None) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words, after canonicalization.

    Definition: both sides are passed through :func:`canonical_text`; the phrase is present
    iff it occurs as a substring whose first and last characters are not glued to a letter,
    digit or underscore of the text (a word boundary, required only where the phrase itself
    starts/ends with such a character; not required next to characters of scripts written
    without spaces, e.g. CJK). A phrase starting/ending with a digit additionally must not
    continue a decimal (``"25"`` is not in ``"1.25"``) or follow a sign (``"5"`` is not in
    ``"-5"``). An empty phrase is never present.
    """
    needle = _canonical(phrase or "")
    if not needle:
        return False
    haystack = _canonical(text or "")
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if _left_boundary_ok(haystack, start, needle) and _right_boundary_ok(haystack, end, needle):
            return True
        start = haystack.find(needle, start + 1)
    return False


@lru_cache(maxsize=1024)  # answer scoring reads each result text for the answer, then for the cue
def _canonical(text: str) -> str:
    """:func:`canonical_text`, kept for the next question about the same text."""
    return canonical_text(text)


@lru_cache(maxsize=1024)  # fidelity looks up every phrase, cell and noise string in the same content
def _number_spans(canonical: str) -> dict[int, tuple[int, bool]]:
    """Each whole number of a canonical text: start of its digits -> (end of its digits, whether
    it is negative)."""
    spans: dict[int, tuple[int, bool]] = {}
    for match in _number_matches(canonical):
        start, end = match.span("body")
        spans[start] = (end, not _PLAIN_NUMBER.fullmatch(match.group()) and _number_of(match).negative)
    return spans


def _canonical_numbers(text: str) -> tuple[str, dict[int, tuple[int, bool]]]:
    """The canonical text, and each whole number in it (`_number_spans`)."""
    canonical = _canonical(text)
    return canonical, _number_spans(canonical)


def _splits_digit_run(text: str, start: int, end: int, needle: str) -> bool:
    # A match may not cut a run of digits, even one glued to letters ("v2" is not in "v23").
    return (needle[0].isdigit() and start > 0 and text[start - 1].isdigit()) or (
        needle[-1].isdigit() and end < len(text) and text[end].isdigit()
    )


def contains_normalized(text: str | None, phrase: str | None) -> bool:
    """Whether ``phrase`` is contained in ``text`` after normalization, numbers compared as numbers.

    Definition: both sides are passed through :func:`canonical_text` (NFKC, case-fold,
    whitespace collapse, every number in one canonical spelling, so ``"Revenue 1,234.50"``
    contains ``"revenue 1234.5"``). The phrase is present iff it occurs as a substring of the
    text where every number of the phrase (the module's number syntax) is a whole number of
    the text with the same sign, and the match does not cut a run of digits. So text is
    plain containment — ``"Foo"`` is in ``"Foobar"``, ``"ACME"`` in ``"ACME-branded"`` — while
    ``"12"`` is not in ``"2012"``, ``"123"`` or ``"1.25"``, ``"1.2"`` is not in ``"1.25"``,
    ``"5 points"`` is not in ``"-5 points"`` (−5 is not 5), and ``"19 cases"`` is in
    ``"COVID-19 cases"`` (a hyphen after a letter is not a sign). An empty phrase is never
    present.
    """
    needle = _canonical(phrase or "")
    if not needle:
        return False
    haystack = _canonical(text or "")
    start = haystack.find(needle)
    if start == -1:
        return False
    # Numbers are located only now, and the text's only when the phrase has some to compare.
    needle_numbers = _number_spans(needle)
    haystack_numbers = _number_spans(haystack) if needle_numbers else {}
    while start != -1:
        end = start + len(needle)
        if not _splits_digit_run(haystack, start, end, needle) and all(
            haystack_numbers.get(start + offset) == (start + number_end, negative)
            for offset, (number_end, negative) in needle_numbers.items()
        ):
            return True
        start = haystack.find(needle, start + 1)
    return False
