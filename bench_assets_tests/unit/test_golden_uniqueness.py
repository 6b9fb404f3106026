"""No two golden rows ask the same question about different pages: the planted generator draws
every page's entity once per stratum at any size, and the split keeps rows asking the same
question (after the leak scan's normalization) on one side, so even a hand-made golden set with a
repeated question cannot put one copy in the public split and the other in the holdout."""

from __future__ import annotations

from collections import Counter

import pytest

from bench_assets.golden.planted import (
    STRATA,
    build_corpus,
    demo_golden_rows,
    reserve_pages,
    reserve_rows,
    reserve_size,
)
from bench_assets.golden.rows import GoldenRow, split_groups
from bench_assets.split.assign import assign_split


def _rows_and_reserves(rows_per_stratum: int) -> list[GoldenRow]:
    pages = rows_per_stratum // 3
    return [
        *demo_golden_rows(rows_per_stratum=rows_per_stratum),
        *reserve_rows("decoy", reserve_size(pages)),
        *reserve_rows("candidate", reserve_size(pages)),
    ]


# 2,100 rows per stratum (12,600 golden rows) needs 1,400 docs products, more than the 784
# two-syllable names: the names must grow rather than repeat.
@pytest.mark.parametrize("rows_per_stratum", [42, 420, 2100])
def test_no_entity_and_no_request_text_repeats_at_any_size(rows_per_stratum):
    rows = _rows_and_reserves(rows_per_stratum)
    texts = Counter(r.request_text.casefold() for r in rows)
    assert [t for t, n in texts.items() if n > 1] == []
    pages = rows_per_stratum // 3
    about = [
        *build_corpus(pages_per_stratum=pages).golden_pages,
        *(p for s in STRATA for k in ("decoy", "candidate") for p in reserve_pages(k, s, reserve_size(pages))),
    ]
    assert len(about) == len(rows) // 3 and all(p.entity for p in about)
    entities = Counter((p.stratum, p.entity.casefold()) for p in about)
    assert [e for e, n in entities.items() if n > 1] == []


def _asking_again(row: GoldenRow, original: GoldenRow, new_id: str) -> GoldenRow:
    """`row` (about its own page) rewritten to ask `original`'s question, spelled differently."""
    spelled = "  " + original.request_text.upper().replace(" ", "\n ") + " "
    field = "query" if row.task_type == "search" else "question"
    return row.model_copy(update={"id": new_id, "task": row.task.model_copy(update={field: spelled})})


@pytest.mark.parametrize("task_type", ["search", "answer"])
def test_rows_asking_the_same_question_about_different_pages_form_one_group(task_type):
    rows = demo_golden_rows(rows_per_stratum=12)
    first, second = [r for r in rows if r.stratum == "news" and r.task_type == task_type][:2]
    assert first.urls != second.urls
    again = _asking_again(second, first, second.id)
    groups = split_groups([r if r.id != second.id else again for r in rows])
    assert groups[again.id] == groups[first.id]
    # the rest of each page's rows come along (they share its URL)
    assert {groups[r.id] for r in rows if set(r.urls) & set(second.urls)} == {groups[first.id]}


def test_the_split_never_separates_a_repeated_question():
    rows = demo_golden_rows(rows_per_stratum=42)
    before = assign_split(rows, b"k1")
    public = next(r for r in rows if r.task_type == "answer" and before[r.id] == "public")
    holdout = next(
        r for r in rows if r.task_type == "answer" and r.stratum == public.stratum and before[r.id] == "holdout"
    )
    now = [r if r.id != holdout.id else _asking_again(holdout, public, holdout.id) for r in rows]
    split = assign_split(now, b"k1")
    assert split[public.id] == split[holdout.id]
    # recorded sides: a newcomer asking a recorded holdout row's question joins the holdout
    newcomer = _asking_again(next(r for r in reserve_rows("candidate", 4) if r.task_type == "answer"), holdout, "new-a")
    split = assign_split([*rows, newcomer], b"k1", recorded=before)
    assert split[newcomer.id] == "holdout"
