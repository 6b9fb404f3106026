"""How a returned text answers a golden task: the verdict rules that scoring applies to a
vendor's results and that verification applies to the golden row's own page, so the two can
never disagree about what counts as the answer.

Extract rows are judged by extraction fidelity (`metrics.extraction_fidelity`); answer rows by
presence of the precise answer or by the per-cell rubric (`metrics.score_cell`). Results are any
objects with `rank`, `title`, `snippet` and `content`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench_assets.golden.rows import AnswerTask, ExtractTask
from bench_assets.metrics import (
    DEFAULT_CELL_RUBRIC,
    CellAnswer,
    CellReading,
    CellRubric,
    CellScore,
    FidelityScore,
    answer_in_text,
    explain_cell,
    extraction_fidelity,
    locate_cell_answer,
)

# What an extraction that returned no text earns: nothing, not even the credit for leaving noise out.
NO_EXTRACTION = FidelityScore(score=0.0, label="incorrect", fields={}, weights={})


def result_text(result: Any) -> str:
    """The text of one returned result that answer scoring reads: title, snippet and content."""
    return "\n".join(filter(None, [result.title, result.snippet, result.content]))


def extract_fidelity(task: ExtractTask, results: Sequence[Any], weights: dict[str, float] | None) -> FidelityScore:
    """Fidelity of an extract row from the first returned result's title and content (its snippet
    when it has no content). No result, or a result with no text, scores 0 and is `incorrect`."""
    top = results[0] if results else None
    text = (top.content or top.snippet or "") if top else ""
    if top is None or not text.strip():
        return NO_EXTRACTION
    return extraction_fidelity(task.model_dump(), top.title, text, weights=weights)


@dataclass(frozen=True)
class AnswerVerdict:
    """An answer row's rubric score (0, 0.5 or 1), the rule that produced it, and the evidence:
    the ranks whose text holds a precise answer, or where the cell reader read its answer, and the
    rubric's verdict on what it read (`cell`, with the rule's short name in `cell.code`)."""

    score: float
    rule: str
    answer_ranks: tuple[int, ...] = ()
    reading: CellReading | None = None
    cell: CellScore | None = None


def _number(x: float | str | None) -> str:
    if not isinstance(x, (int, float)):
        return str(x)
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:,.6f}".rstrip("0").rstrip(".")


def _describe(answer: CellAnswer) -> str:
    if answer.kind == "not_available":
        return "an explicit not-available statement"
    method = "with a method" if answer.method and answer.method.strip() else "without a method"
    if answer.kind == "range":
        return f"the range {_number(answer.low)} to {_number(answer.high)} {method}"
    return f"the value {_number(answer.value)} {method}"


def precise_answer_in_text(task: AnswerTask, text: str | None) -> bool:
    """Whether a precise row's answer appears in `text`: its exact answer or any of its accepted
    renderings (:func:`bench_assets.metrics.answer_in_text`, as whole words), or its number within
    the row's tolerance. Scoring reads vendors' results by this and verification the row's source
    pages, so the two never disagree about what counts as the answer."""
    if task.number is not None and answer_in_text(None, task.number, task.tolerance, text):
        return True
    return any(answer_in_text(answer, None, task.tolerance, text) for answer in task.answer_texts)


def precise_rubric(task: AnswerTask, rubric: CellRubric = DEFAULT_CELL_RUBRIC) -> CellRubric:
    """The rubric a precise row's read value is scored with: full credit within the row's own
    (relative) tolerance, the tolerance full credit by presence uses, so the two never disagree;
    the relaxed tolerance is the rubric's, or the row's when that is wider."""
    return replace(
        rubric,
        relative_tolerance=task.tolerance,
        relaxed_relative_tolerance=max(rubric.relaxed_relative_tolerance, task.tolerance),
    )


def score_answer(
    task: AnswerTask, results: Sequence[Any], answer_k: int, rubric: CellRubric = DEFAULT_CELL_RUBRIC
) -> AnswerVerdict:
    """Score an answer row on the vendor's top `answer_k` results (in rank order).

    * precise: 1 when the exact answer or one of its accepted renderings, or the number within the
      row's tolerance, appears in the title, snippet or content of one of the top `answer_k` results
      (:func:`precise_answer_in_text`). Otherwise, for a row with a `number` and a
      `cue`, the value about the cue is read from those texts
      (:func:`bench_assets.metrics.read_cell_answer`) and scored by the per-cell rubric's precise
      rule (:func:`bench_assets.metrics.score_cell`, with the row's relative tolerance, see
      :func:`precise_rubric`): 0.5 when it agrees in sign and direction but lies outside the
      tolerance, or lies within the relaxed tolerance without a derivation; 0 otherwise, and 0
      when nothing is read. A row with an exact text answer, or without a cue, scores 1 or 0.
      Why full credit is by presence, not by reading: the reader takes the first sentence that
      names the cue, so a page that also mentions an older or a rival figure first would lose a
      right answer that is plainly in the results; presence is the sturdier test for the top
      tier, and the reader only decides the half credit of an answer that is not there;
    * range and not_available: the answer about the row's `cue` is read from those texts
      (:func:`bench_assets.metrics.read_cell_answer`) and scored 0, 0.5 or 1 by the per-cell
      rubric (:func:`bench_assets.metrics.score_cell`) against the reference range or the
      plausible interval; nothing read scores 0.
    """
    top = list(results[:answer_k])
    texts = [result_text(r) for r in top]
    if task.answer_type == "precise":
        ranks = tuple(r.rank for r, text in zip(top, texts) if precise_answer_in_text(task, text))
        if ranks:
            return AnswerVerdict(
                1.0, f"precise: the answer is in the top {answer_k} results (first at rank {ranks[0]})", ranks
            )
        missed = f"precise: the answer is in none of the top {answer_k} results"
        if task.number is None or task.cue is None:
            return AnswerVerdict(0.0, missed)  # no numeric reference or nothing to read by: no half credit
        reading = locate_cell_answer(texts, task.cue)
        if reading is None:
            return AnswerVerdict(0.0, f"{missed}, nor anything about {task.cue!r}")
        cell = explain_cell("precise", reading.answer, expected_value=task.number, rubric=precise_rubric(task, rubric))
        return AnswerVerdict(
            cell.score,
            f"{missed}; read {_describe(reading.answer)} at rank {top[reading.text_index].rank}: {cell.reason}",
            reading=reading,
            cell=cell,
        )
    assert task.cue is not None  # the golden row validator demands a cue for range and not_available rows
    reading = locate_cell_answer(texts, task.cue)
    if reading is None:
        return AnswerVerdict(0.0, f"{task.answer_type}: nothing about {task.cue!r} in the top {answer_k} results")
    if task.answer_type == "range":
        cell = explain_cell(
            "range",
            reading.answer,
            expected_low=task.range_low,
            expected_high=task.range_high,
            percentage=task.percentage,
            rubric=rubric,
        )
    else:
        cell = explain_cell(
            "not_available",
            reading.answer,
            expected_low=task.plausible_low,
            expected_high=task.plausible_high,
            percentage=task.percentage,
            rubric=rubric,
        )
    rank = top[reading.text_index].rank
    return AnswerVerdict(
        cell.score,
        f"{task.answer_type}: read {_describe(reading.answer)} at rank {rank}: {cell.reason}",
        reading=reading,
        cell=cell,
    )
