"""The cell reader: what a vendor's returned text says about one quantity, as a rubric answer.

A range or not-available golden row is scored with the per-cell rubric
(:func:`bench_assets.metrics.explain_cell`), which needs a candidate answer: a precise value, a
range with its method, or an explicit not-available statement with its justification.
:func:`read_cell_answer` reads that candidate from the texts a vendor returned, by fixed rules
(no model, no judgement), so a score can be re-derived and argued with.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from .answers import CellAnswer
from .text import _number_matches, _number_of, contains_phrase, normalize_text

__all__ = ["CellReading", "locate_cell_answer", "read_cell_answer"]

# Sentence ends: ., ! or ? followed by whitespace, and line breaks (titles, table rows, list items).
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")

_NOT_AVAILABLE = re.compile(
    r"(?:\bnot|n['\u2019]t|\bnever|\bno\s+longer)\s+(?:been\s+|be\s+|yet\s+)?(?:publicly\s+|separately\s+|officially\s+)?"
    r"(?:disclosed?|disclosing|available|published|publish(?:es)?|reported|report(?:s)?|documented|document(?:s)?|"
    r"released|release(?:s)?|revealed|reveal(?:s)?|made\s+public|broken\s+out|break(?:s)?\s+out)\b"
    r"|\bundisclosed\b"
    r"|\bno\s+(?:public|official|published|authoritative)\s+(?:data|figures?|information|disclosure|estimates?)\b",
    re.IGNORECASE,
)

_METHOD = re.compile(
    r"\b(?:estimated|estimates?|estimating|based\s+on|derived|calculated|computed|measured|modell?ed|"
    r"extrapolated|inferred|triangulated)\b",
    re.IGNORECASE,
)

# Between two numbers of a range: at most two unit words ("million", "percent", "months"),
# then the connector. "and" is a connector only after "between" (see _range_at).
_RANGE_GAP = re.compile(
    r"^\s*(?:(?!(?:to|and|through)\b)[^\W\d]+\.?\s+|%\s*){0,2}(?P<conn>to|and|through|[-\u2013\u2014])\s*$",
    re.IGNORECASE,
)
_BETWEEN = re.compile(r"\bbetween\s*$", re.IGNORECASE)
_MINUS_SIGNS = ("-", "\u2212")


@dataclass(frozen=True)
class _Num:
    start: int
    end: int
    value: float
    signed: bool  # a minus sign was written before it
    year_like: bool


@dataclass(frozen=True)
class CellReading:
    """Where a cell answer was read: the answer, the index of the text it came from (0 = the
    first text given, i.e. the top-ranked result) and the sentence it was read from."""

    answer: CellAnswer
    text_index: int
    sentence: str


def _numbers(sentence: str) -> list[_Num]:
    out = []
    for match in _number_matches(sentence):
        number = _number_of(match)
        value = number.as_float()
        body = match.group("body")
        plain = match.group(0).strip() == body  # no sign, currency or percent
        year_like = plain and len(body) == 4 and body.isdigit() and 1900 <= int(body) <= 2099
        out.append(_Num(match.start(), match.end(), value, number.negative, year_like))
    return out


def _range_at(sentence: str, nums: list[_Num]) -> tuple[float, float] | None:
    """The first range written in the sentence, as (first bound, second bound)."""
    for first, second in itertools.pairwise(nums):
        if first.year_like and second.year_like:
            continue  # "2019 to 2021" is a period, not a quantity
        gap = sentence[first.end : second.start]
        if second.signed and not gap.strip() and not first.signed:
            # "14 -22": the dash was read as the sign of 22
            return first.value, abs(second.value)
        match = _RANGE_GAP.match(gap)
        if match is None:
            continue
        if match.group("conn").lower() == "and" and not _BETWEEN.search(sentence, 0, first.start):
            continue
        return first.value, second.value
    return None


def _cue_span(sentence: str, cue: str) -> tuple[int, int]:
    """Where the cue is in the normalized sentence ((0, 0) when it is spelled differently there)."""
    wanted = normalize_text(cue)
    found = sentence.find(wanted)
    return (found, found + len(wanted)) if found >= 0 else (0, 0)


def _precise_at(nums: list[_Num], cue: tuple[int, int]) -> float | None:
    if not nums:
        return None
    quantities = [n for n in nums if not n.year_like]
    if not quantities:
        return nums[0].value
    after = [n for n in quantities if n.start >= cue[1]]
    return after[0].value if after else quantities[-1].value


def _method(sentence: str) -> str | None:
    match = _METHOD.search(sentence)
    if match is None:
        return None
    return sentence[match.start() :].strip().rstrip(".").strip() or None


def _read_sentence(sentence: str, cue: str) -> CellAnswer | None:
    text = normalize_text(unicodedata.normalize("NFKC", sentence))
    if _NOT_AVAILABLE.search(text):
        return CellAnswer("not_available", method=sentence.strip())
    span = _cue_span(text, cue)
    # A number inside the cue names the thing ("the KA-200 units sold"); it measures nothing.
    nums = [n for n in _numbers(text) if n.end <= span[0] or n.start >= span[1]]
    bounds = _range_at(text, nums)
    if bounds is not None:
        return CellAnswer("range", low=bounds[0], high=bounds[1], method=_method(sentence))
    value = _precise_at(nums, span)
    if value is not None:
        return CellAnswer("precise", value=value, method=_method(sentence))
    return None


def locate_cell_answer(texts: Iterable[str | None], cue: str) -> CellReading | None:
    """Read the answer about ``cue`` from ``texts`` (see :func:`read_cell_answer`), with where
    it was read: the index of the text and the sentence."""
    if not isinstance(cue, str) or not normalize_text(cue):
        raise ValueError("cue must be a non-blank phrase")
    for index, text in enumerate(texts):
        if not text or not contains_phrase(text, cue):
            continue  # the cheap test on the whole text first; most texts never mention the cue
        for sentence in _SENTENCE_BREAK.split(text):
            if not contains_phrase(sentence, cue):
                continue
            answer = _read_sentence(sentence, cue)
            if answer is not None:
                return CellReading(answer, index, sentence.strip())
    return None


def read_cell_answer(texts: Iterable[str | None], cue: str) -> CellAnswer | None:
    """Read, from a vendor's returned texts, what they say about the quantity named by ``cue``.

    ``texts`` are the texts of the vendor's top results in rank order (for a result: its title,
    snippet and content); ``cue`` is the golden row's phrase for the quantity, best naming its
    entity too ("customer churn rate of Acme"), so that what a page says about another entity is
    not read. The rules, in order:

    1. **Sentences.** Each text is split into sentences at ``.``, ``!`` or ``?`` followed by
       whitespace, and at line breaks. Texts are read in rank order and each text's sentences
       in order; the answer is read from the *first* sentence that mentions the cue (whole
       words after canonicalization, :func:`bench_assets.metrics.contains_phrase`) and from
       which one of rules 2–4 reads something. A sentence that mentions the cue but states
       nothing (no number, no not-available statement) is passed over. Nothing read: ``None``.
    2. **Not available.** A sentence with an explicit not-available statement ("not disclosed",
       "does not disclose", "has not published", "not publicly available", "not reported",
       "not documented", "not broken out", "undisclosed", "no public data" ...) is read as
       ``CellAnswer("not_available")`` with the sentence as its justification (``method``).
       The statement wins over any number in the same sentence.
    3. **Range.** Otherwise the first range written in the sentence (numbers inside the cue
       itself, as in "the KA-200 units sold", name the thing and are never read): two numbers joined by
       "to", "through", a hyphen, en dash or em dash ("14 to 22 months", "14–22"), or by "and"
       after "between" ("between 4,100 and 4,600"), with at most two unit words between the
       first number and the connector ("5 million to 8 million", "10 percent to 15 percent").
       Two four-digit years ("2019 to 2021") are a period, not a range. Read as
       ``CellAnswer("range", low, high)`` in the order written.
    4. **Precise.** Otherwise one number: the first number written after the cue, else the
       last one before it; numbers inside the cue itself ("the KA-200 units sold") are not
       read, and four-digit years (1900–2099 written bare) are skipped unless the sentence
       holds nothing else (then the first year). ``CellAnswer("precise", value)``.

    Numbers follow :mod:`bench_assets.metrics.text` (signs, currency symbols, thousands
    separators, decimals, percent signs; values as written: "million" is not applied; "Q2"
    and "p95" are words, not numbers). For a range or a value, ``method`` is the rest of the
    sentence from a stated method on — "estimated", "estimate(s)", "based on", "derived",
    "calculated", "computed", "measured", "modelled", "extrapolated", "inferred",
    "triangulated" — and ``None`` when the sentence states none ("according to" names a
    source, not a method). The reader is pure and deterministic.
    """
    reading = locate_cell_answer(texts, cue)
    return None if reading is None else reading.answer
