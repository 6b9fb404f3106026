"""The planted demo set's range and not-available rows: stated on their pages, with a fabricated
figure planted elsewhere, and added without moving any other planted fact."""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from types import SimpleNamespace

import pytest

from bench_assets.golden import planted as corpus_module
from bench_assets.golden.planted import ANSWER_KINDS, STRATA, build_corpus, demo_golden_rows, page_rows, reserve_rows
from bench_assets.golden.verdicts import score_answer
from bench_assets.golden.verify import PageFetch, check_row, page_text
from bench_assets.simulator.index import SearchIndex
from bench_assets.simulator.profiles import PROFILES

ANSWER_FIELDS = {
    "paragraphs",
    "question",
    "exact_answer",
    "number_answer",
    "answer_type",
    "cue",
    "range_low",
    "range_high",
    "plausible_low",
    "plausible_high",
    "percentage",
    "fabrications",
}


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


def fetched(corpus) -> dict[str, PageFetch]:
    return {url: PageFetch(url, url, 200, page_text(page.render_html()), "sha") for url, page in corpus.pages.items()}


def as_result(text: str, rank: int = 1) -> SimpleNamespace:
    return SimpleNamespace(rank=rank, title=None, snippet=None, content=text)


def test_the_demo_set_keeps_its_size_and_has_range_and_not_available_rows_in_every_stratum():
    rows = demo_golden_rows()
    assert len(rows) == 252
    assert Counter(r.stratum for r in rows) == dict.fromkeys(STRATA, 42)
    kinds = Counter((r.stratum, r.task.answer_type) for r in rows if r.task_type == "answer")
    for stratum in STRATA:
        assert kinds[(stratum, "range")] == 2 and kinds[(stratum, "not_available")] == 2
        assert kinds[(stratum, "precise")] == 10
    # the small sets used in tests have them too: 2 pages already a range row, 4 both
    small = Counter(r.task.answer_type for r in demo_golden_rows(rows_per_stratum=6) if r.task_type == "answer")
    assert small == {"precise": 6, "range": 6}
    assert {r.task.answer_type for r in demo_golden_rows(rows_per_stratum=12) if r.task_type == "answer"} == {
        "precise",
        "range",
        "not_available",
    }


def test_varying_the_answer_rows_draws_nothing_from_the_seeded_streams(monkeypatch):
    """With the variants switched off the corpus is the one made before they existed: every page,
    distractor and reserve page is the same except the answer fields of the varied pages."""
    varied = {
        kind: corpus_module._stratum_pages.__wrapped__(stratum, kind, 14)
        for stratum in STRATA
        for kind in ("golden", "decoy", "candidate")
    }
    monkeypatch.setattr(corpus_module, "ANSWER_KINDS", {})
    plain = {
        kind: corpus_module._stratum_pages.__wrapped__(stratum, kind, 14)
        for stratum in STRATA
        for kind in ("golden", "decoy", "candidate")
    }
    compared = 0
    for key in varied:
        for (page, distractors), (before, before_distractors) in zip(varied[key], plain[key], strict=True):
            for f in fields(page):
                if f.name not in ANSWER_FIELDS:
                    assert getattr(page, f.name) == getattr(before, f.name), (page.url, f.name)
            assert page.paragraphs[-len(before.paragraphs) :] == before.paragraphs
            assert list(distractors[: len(before_distractors)]) == list(before_distractors)
            assert list(distractors[len(before_distractors) :]) == list(page.fabrications)
            compared += 1
    assert compared > 0


def test_every_planted_row_is_stated_on_its_page(corpus):
    pages = fetched(corpus)
    rows = demo_golden_rows() + reserve_rows("candidate", 7) + reserve_rows("decoy", 7)
    failures = {r.id: check_row(r, pages).failures for r in rows}
    assert {k: v for k, v in failures.items() if v} == {}


def test_verification_catches_a_range_or_statement_the_page_does_not_make(corpus):
    pages = fetched(corpus)
    rows = {r.task.answer_type: r for r in demo_golden_rows() if r.task_type == "answer"}
    ranged = rows["range"]
    wrong = ranged.model_copy(
        update={
            "task": ranged.task.model_copy(
                update={"range_low": ranged.task.range_high * 3, "range_high": ranged.task.range_high * 4}
            )
        }
    )
    assert check_row(wrong, pages).failures == [f"no source page states the range answer about {ranged.task.cue!r}"]
    # a not-available row whose source is a page that states a figure, not a statement
    na = rows["not_available"]
    fabricated = corpus.pages[na.task.source_urls[0]].fabrications[0].url
    moved = na.model_copy(update={"task": na.task.model_copy(update={"source_urls": [fabricated]})})
    assert check_row(moved, pages).failures


def test_rows_pages_and_facts_come_from_one_source(corpus):
    by_url = corpus.pages
    for r in demo_golden_rows():
        if r.task_type != "answer" or r.task.answer_type == "precise":
            continue
        page = by_url[r.task.source_urls[0]]
        assert (r.task.question, r.task.cue, r.task.answer_type) == (page.question, page.cue, page.answer_type)
        if r.task.answer_type == "range":
            assert (r.task.range_low, r.task.range_high) == (page.range_low, page.range_high)
            assert r.task.range_low < r.task.range_high
        else:
            assert (r.task.plausible_low, r.task.plausible_high) == (page.plausible_low, page.plausible_high)
        assert page_rows(page, "x", r.cohort)[2].task == r.task


def test_each_undisclosed_quantity_has_a_fabricated_figure_that_scores_zero(corpus):
    pages = fetched(corpus)
    for r in demo_golden_rows():
        if r.task_type != "answer" or r.task.answer_type != "not_available":
            continue
        page = corpus.pages[r.task.source_urls[0]]
        assert len(page.fabrications) == 1
        forum = page.fabrications[0]
        assert not forum.golden and forum.url in corpus.pages and "forum" in forum.url
        official = score_answer(r.task, [as_result(pages[page.url].text)], 5)
        rumour = score_answer(r.task, [as_result(pages[forum.url].text), as_result(pages[page.url].text, 2)], 5)
        assert official.score == 1.0, official.rule
        assert rumour.score == 0.0 and "precise value on a not-available cell" in rumour.rule


def test_simulated_vendors_differ_on_the_rubric_rows(corpus):
    """Through each vendor's ranking (BM25 with its noise and coverage), some vendors put the
    fabricated figure first on some undisclosed quantities and others do not."""
    index = SearchIndex(corpus)
    rows = [r for r in demo_golden_rows() if r.task_type == "answer" and r.task.answer_type != "precise"]
    means, hallucinated = {}, {}
    for vendor, profile in PROFILES.items():
        scores = []
        for r in rows:
            hits = index.search(r.task.question, vendor, profile, 10)
            results = [
                SimpleNamespace(rank=i, title=h.page.title, snippet=h.snippet, content=None)
                for i, h in enumerate(hits, start=1)
            ]
            verdict = score_answer(r.task, results, 5)
            scores.append(verdict.score)
            if "precise value on a not-available cell" in verdict.rule:
                hallucinated[vendor] = hallucinated.get(vendor, 0) + 1
        means[vendor] = sum(scores) / len(scores)
    assert len(set(means.values())) >= 3, means
    assert len(hallucinated) >= 3 and len(hallucinated) < len(PROFILES), hallucinated
    assert max(means.values()) >= 0.9, means


def test_answer_kinds_are_documented_positions():
    assert set(ANSWER_KINDS.values()) == {"range", "not_available"}
    assert [corpus_module.answer_kind(n) for n in range(1, 8)] == [
        "precise",
        "range",
        "precise",
        "not_available",
        "precise",
        "precise",
        "precise",
    ]
