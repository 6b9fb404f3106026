"""The cell reader: what returned texts say about one quantity, read by fixed rules."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bench_assets.metrics import CellAnswer, explain_cell, locate_cell_answer, read_cell_answer

FAST = settings(deadline=None, max_examples=150)
CUE = "customer churn rate of Velkamir"


def read(*texts: str, cue: str = CUE) -> CellAnswer | None:
    return read_cell_answer(list(texts), cue)


# ##### NOT AVAILABLE


@pytest.mark.parametrize(
    "sentence",
    [
        "The customer churn rate of Velkamir is not disclosed.",
        "Velkamir does not disclose the customer churn rate of Velkamir.",
        "Velkamir doesn't publish the customer churn rate of Velkamir in its filings.",
        "Velkamir doesn\u2019t report the customer churn rate of Velkamir.",
        "The customer churn rate of Velkamir has not been made public.",
        "The customer churn rate of Velkamir is not publicly available.",
        "The customer churn rate of Velkamir is undisclosed.",
        "There is no public data on the customer churn rate of Velkamir.",
        "THE CUSTOMER CHURN RATE OF VELKAMIR IS NOT BROKEN OUT.",
        "The customer churn rate of Velkamir has not been disclosed since 2019, when it was 7.4 percent.",
    ],
)
def test_an_explicit_not_available_statement_is_read_with_the_sentence_as_justification(sentence):
    answer = read("Title of the page\n" + sentence + " Other text follows.")
    assert answer == CellAnswer("not_available", method=sentence)
    assert explain_cell("not_available", answer).score == 1.0


def test_not_available_words_about_something_else_are_not_read_as_a_statement():
    # "not" near the cue but no statement that the quantity is unavailable
    answer = read("The customer churn rate of Velkamir was 7.4 percent, not 9.")
    assert answer is not None and answer.kind == "precise" and answer.value == 7.4


# ##### RANGES


@pytest.mark.parametrize(
    "sentence, low, high",
    [
        ("The customer churn rate of Velkamir is 5 to 8 percent.", 5, 8),
        ("The customer churn rate of Velkamir is between 5 and 8 percent.", 5, 8),
        ("The customer churn rate of Velkamir is between 5 percent and 8 percent.", 5, 8),
        ("The customer churn rate of Velkamir is 5–8 %.", 5, 8),
        ("The customer churn rate of Velkamir is 5\u20148 %.", 5, 8),
        ("The customer churn rate of Velkamir is 5-8%.", 5, 8),
        ("The customer churn rate of Velkamir is 5 - 8%.", 5, 8),
        ("The customer churn rate of Velkamir is 5 -8%.", 5, 8),
        ("The customer churn rate of Velkamir is from 5.5 through 8.25 percent.", 5.5, 8.25),
        ("The customer churn rate of Velkamir cost $1,200 million to $1,900 million.", 1200, 1900),
        ("The customer churn rate of Velkamir is 8 to 5 percent.", 8, 5),  # as written; the rubric swaps
    ],
)
def test_a_range_is_read_in_its_written_forms(sentence, low, high):
    answer = read(sentence)
    assert answer is not None and answer.kind == "range"
    assert (answer.low, answer.high) == (low, high)
    assert answer.method is None


@pytest.mark.parametrize(
    "sentence, method",
    [
        (
            "The customer churn rate of Velkamir is 5 to 8 percent, estimated from cohort data.",
            "estimated from cohort data",
        ),
        (
            "Based on app downloads, the customer churn rate of Velkamir is 5 to 8 percent.",
            "Based on app downloads, the customer churn rate of Velkamir is 5 to 8 percent",
        ),
        (
            "The customer churn rate of Velkamir is 5 to 8 percent (derived from renewal rates).",
            "derived from renewal rates)",
        ),
        (
            "The customer churn rate of Velkamir, calculated as lost over starting customers, is 5 to 8 percent.",
            "calculated as lost over starting customers, is 5 to 8 percent",
        ),
    ],
)
def test_a_stated_method_is_kept(sentence, method):
    answer = read(sentence)
    assert answer is not None and answer.kind == "range" and answer.method == method


def test_according_to_names_a_source_not_a_method():
    answer = read("The customer churn rate of Velkamir is 5 to 8 percent, according to a forum.")
    assert answer is not None and answer.method is None
    assert explain_cell("range", answer, expected_low=5, expected_high=8).score == 0.5


def test_and_joins_a_range_only_after_between():
    answer = read("Velkamir lost 40 customers and the customer churn rate of Velkamir was 12 percent.")
    assert answer == CellAnswer("precise", value=12.0)


def test_two_years_are_a_period_not_a_range():
    answer = read("From 2019 to 2021 the customer churn rate of Velkamir was 6.5 percent.")
    assert answer == CellAnswer("precise", value=6.5)


# ##### PRECISE VALUES


@pytest.mark.parametrize(
    "sentence, value",
    [
        ("The customer churn rate of Velkamir was 7.4 percent.", 7.4),
        ("In Q2 2026 the customer churn rate of Velkamir was 7.4%.", 7.4),  # Q2 is a word, 2026 a year
        ("At 7.4 percent, the customer churn rate of Velkamir rose.", 7.4),  # nothing after: the last before
        ("The customer churn rate of Velkamir, 2026: 3,100.5.", 3100.5),
        ("The customer churn rate of Velkamir was 2019.", 2019.0),  # only a year: read it
        ("The customer churn rate of Velkamir was \u22123.5 points.", -3.5),
    ],
)
def test_a_precise_value_is_the_first_number_after_the_cue(sentence, value):
    assert read(sentence) == CellAnswer("precise", value=value)


def test_a_number_inside_the_cue_names_the_thing_and_is_not_read():
    answer = read(
        "Rumour has it the number of Acme KA-200 units sold is 38,000.", cue="number of Acme KA-200 units sold"
    )
    assert answer == CellAnswer("precise", value=38000.0)
    answer = read("The expected lifespan of the KA-200 shoe is 5 to 8 years.", cue="expected lifespan of the KA-200")
    assert answer is not None and (answer.low, answer.high) == (5, 8)


def test_a_precise_value_keeps_its_method():
    answer = read("An analyst estimates the customer churn rate of Velkamir at 7.4 percent.")
    assert answer is not None and answer.kind == "precise" and answer.value == 7.4
    assert answer.method == "estimates the customer churn rate of Velkamir at 7.4 percent"
    # a precise value on a not-available cell scores 0, method or not
    assert explain_cell("not_available", answer).score == 0.0


# ##### WHICH SENTENCE


def test_texts_are_read_in_rank_order_and_the_first_readable_sentence_wins():
    texts = [
        "Nothing about it here.",
        "Readers asked about the customer churn rate of Velkamir again.",  # mentions the cue, states nothing
        "A forum says the customer churn rate of Velkamir was 7.4 percent.",
        "The customer churn rate of Velkamir is not disclosed.",
    ]
    reading = locate_cell_answer(texts, CUE)
    assert reading is not None and reading.text_index == 2
    assert reading.answer == CellAnswer("precise", value=7.4)
    assert reading.sentence == texts[2]
    reading = locate_cell_answer(texts[:2] + texts[3:], CUE)
    assert reading is not None and reading.text_index == 2 and reading.answer.kind == "not_available"


def test_sentences_split_at_ends_and_line_breaks():
    text = (
        "Velkamir Holdings reports.\nRevenue was 12.5 million! The customer churn rate of Velkamir was 3 percent? "
        "Margin was 40 percent."
    )
    reading = locate_cell_answer([text], CUE)
    assert reading is not None and reading.answer.value == 3.0
    assert reading.sentence == "The customer churn rate of Velkamir was 3 percent?"


def test_the_cue_must_be_there_as_whole_words_and_nothing_read_is_none():
    assert read("The customer churn rates of Velkamir were 3 percent.") is None
    assert read("The customer churn rate of Velkamirs was 3 percent.") is None
    assert read() is None
    assert read(None, "") is None  # type: ignore[arg-type]
    assert read("THE  Customer\u00a0churn RATE of velkamir was 3.") == CellAnswer("precise", value=3.0)
    with pytest.raises(ValueError):
        read_cell_answer(["x"], "  ")


# ##### PROPERTIES

numbers = st.one_of(
    st.integers(0, 10_000_000).map(float),
    st.decimals(min_value=0, max_value=100_000, places=2, allow_nan=False).map(float),
)
units = st.sampled_from(["", " percent", " %", " million dollars", " days", " years", " ms"])
methods = st.sampled_from(
    [
        "estimated from site budgets",
        "based on last year's caseload",
        "derived from accelerated wear tests",
        "measured in load tests",
    ]
)
fillers = st.sampled_from(["", "Nothing here.", "The weather was fine in 2026.", "Prices rose 4 to 9 percent."])


def spell(x: float) -> str:
    return f"{x:,.2f}" if x != int(x) else f"{int(x):,}"


@FAST
@given(numbers, numbers, units, methods, fillers, st.sampled_from(["{a} to {b}", "between {a} and {b}", "{a}–{b}"]))
def test_a_written_range_with_its_method_reads_back_and_scores_full_credit(a, b, unit, method, filler, shape):
    assume(a < b)
    written = shape.format(a=spell(a), b=spell(b))
    sentence = f"The {CUE} is {written}{unit}, {method}."
    answer = read(filler, f"{filler} {sentence}".strip())
    assert answer == CellAnswer("range", low=a, high=b, method=f"{method}")
    assert explain_cell("range", answer, expected_low=a, expected_high=b).score == 1.0


@FAST
@given(numbers, units, fillers, st.booleans())
def test_a_written_value_reads_back(x, unit, filler, currency):
    sentence = f"The {CUE} was {'$' if currency else ''}{spell(x)}{unit} in 2026."
    assert read(filler, sentence) == CellAnswer("precise", value=x)


@FAST
@given(st.lists(st.text(max_size=60), max_size=4), st.lists(st.text(max_size=60), max_size=4))
def test_texts_that_do_not_mention_the_cue_change_nothing(before, after):
    assume(not any("velkamir" in t.casefold() for t in before + after))
    statement = "The customer churn rate of Velkamir is not disclosed."
    reading = locate_cell_answer([*before, statement, *after], CUE)
    assert reading is not None and reading.text_index == len(before)
    assert reading.answer == CellAnswer("not_available", method=statement)


@FAST
@given(st.lists(st.one_of(st.none(), st.text(max_size=200)), max_size=5), st.text(min_size=1, max_size=20))
def test_the_reader_never_fails_on_arbitrary_text_and_is_deterministic(texts, cue):
    assume(cue.strip())
    try:
        first = read_cell_answer(texts, cue)
    except ValueError:
        return  # a cue that normalizes to nothing
    assert read_cell_answer(list(texts), cue) == first
    if first is not None:
        assert first.kind in ("precise", "range", "not_available")
