"""A malformed golden row must fail the load with its file, line and field, and write nothing.

The golden set is the truth every score rests on; a silently dropped or half-read row would
change every figure without anyone noticing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import load_golden_file, load_numbered_golden_file

REPO = Path(__file__).resolve().parents[2]
GOOD = {
    "id": "docs-001-s",
    "cohort": "2026-q3",
    "stratum": "docs",
    "provenance": "hand_verified",
    "verification": {"verified_by": "a.reviewer", "verified_at": "2026-06-01T00:00:00Z", "evidence": "sha256:ab"},
    "task": {"type": "search", "query": "acme webhooks guide", "golden_urls": ["https://docs.acme.test/webhooks"]},
}


RANGE = {
    "type": "answer",
    "question": "What processing time does the permits office quote?",
    "answer_type": "range",
    "cue": "processing time of the permits office",
    "range_low": 10,
    "range_high": 15,
    "percentage": False,
    "source_urls": ["https://www.town.gov.test/services/permits-office/fees"],
}
PRECISE = {
    "type": "answer",
    "question": "On what date was PEP 1 created?",
    "exact_answer": "13-Jun-2000",
    "source_urls": ["https://peps.python.org/pep-0001/"],
}
NOT_AVAILABLE = {
    "type": "answer",
    "question": "What churn rate did Acme report?",
    "answer_type": "not_available",
    "cue": "customer churn rate of Acme",
    "percentage": True,
}


def write_rows(tmp_path, rows):
    path = tmp_path / "golden.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def error_for(tmp_path, rows) -> BenchInputError:
    path = write_rows(tmp_path, rows)
    with pytest.raises(BenchInputError) as info:
        load_golden_file(path)
    return info.value


def test_valid_rows_load(tmp_path):
    rows = load_golden_file(write_rows(tmp_path, [GOOD, {**GOOD, "id": "docs-002-s"}]))
    assert [r.id for r in rows] == ["docs-001-s", "docs-002-s"]
    assert rows[0].request_text == "acme webhooks guide"


def test_each_row_keeps_the_line_it_is_on_blank_lines_counted(tmp_path):
    # golden_rows.source_line points a reviewer at the file's own line
    path = write_rows(tmp_path, ["", GOOD, "   ", "", {**GOOD, "id": "docs-002-s"}])
    assert [(line, row.id) for line, row in load_numbered_golden_file(path)] == [(2, "docs-001-s"), (5, "docs-002-s")]


@pytest.mark.parametrize(
    "mutate, line, field",
    [
        (lambda r: {**r, "stratum": "Bad Stratum"}, 2, "stratum"),
        (lambda r: {**r, "provenance": "scraped"}, 2, "provenance"),
        (lambda r: {k: v for k, v in r.items() if k != "cohort"}, 2, "cohort"),
        (lambda r: {**r, "task": {**r["task"], "golden_urls": ["not a url"]}}, 2, "task.golden_urls.0"),
        (lambda r: {**r, "task": {**r["task"], "query": ""}}, 2, "task.query"),
        (lambda r: {**r, "task": {"type": "extract", "url": "https://a.test/x"}}, 2, "task"),
        (lambda r: {**r, "task": {"type": "answer", "question": "q?", "exact_answer": "a", "number": 3}}, 2, "task"),
        (lambda r: {**r, "task": {**RANGE, "range_high": 5}}, 2, "task.range_high"),
        (lambda r: {**r, "task": {k: v for k, v in RANGE.items() if k != "range_low"}}, 2, "task.range_low"),
        (lambda r: {**r, "task": {k: v for k, v in RANGE.items() if k != "cue"}}, 2, "task.cue"),
        (lambda r: {**r, "task": {**RANGE, "cue": "  "}}, 2, "task.cue"),
        (lambda r: {**r, "task": {**RANGE, "number": 12}}, 2, "task.number"),
        (lambda r: {**r, "task": {**RANGE, "plausible_low": 1, "plausible_high": 2}}, 2, "task.plausible_low"),
        (lambda r: {**r, "task": {**NOT_AVAILABLE, "exact_answer": "12"}}, 2, "task.exact_answer"),
        (lambda r: {**r, "task": {**NOT_AVAILABLE, "plausible_high": 3}}, 2, "task.plausible_high"),
        (lambda r: {**r, "task": {**NOT_AVAILABLE, "plausible_low": 9, "plausible_high": 3}}, 2, "task.plausible_high"),
        (lambda r: {**r, "task": {**NOT_AVAILABLE, "range_low": 1}}, 2, "task.range_low"),
        (
            lambda r: {**r, "task": {"type": "answer", "question": "q?", "number": 3, "range_high": 4}},
            2,
            "task.range_high",
        ),
        (
            lambda r: {**r, "verification": {"verified_by": "x", "verified_at": "yesterday", "evidence": "e"}},
            2,
            "verification.verified_at",
        ),
        (lambda r: {**r, "surprise": 1}, 2, "surprise"),
        (lambda r: {**r, "published_on": "2026-13-01"}, 2, "published_on"),
        (lambda r: {**r, "published_on": "June 2026"}, 2, "published_on"),
        (lambda r: {**r, "published_on": 1767225600}, 2, "published_on"),
        (lambda r: {**r, "published_on": "2026-06-01T09:00:00Z"}, 2, "published_on"),
        (lambda r: {**r, "task": {**r["task"], "equivalent_urls": ["ftp://a.test/x"]}}, 2, "task.equivalent_urls.0"),
        (  # the golden URL again, once normalized
            lambda r: {**r, "task": {**r["task"], "equivalent_urls": ["http://www.docs.acme.test/webhooks/"]}},
            2,
            "task.equivalent_urls",
        ),
        (
            lambda r: {**r, "task": {**r["task"], "equivalent_urls": ["https://a.test/1", "https://a.test/1#x"]}},
            2,
            "task.equivalent_urls",
        ),
        (  # another document of the registry the golden URL names
            lambda r: {
                **r,
                "task": {
                    **r["task"],
                    "golden_urls": ["https://www.rfc-editor.org/rfc/rfc9110"],
                    "equivalent_urls": ["https://datatracker.ietf.org/doc/html/rfc9111"],
                },
            },
            2,
            "task.equivalent_urls",
        ),
        (
            lambda r: {**r, "task": {**PRECISE, "accepted_answers": ["June 13, 2000", "june 13, 2000"]}},
            2,
            "task.accepted_answers",
        ),
        (lambda r: {**r, "task": {**PRECISE, "accepted_answers": ["13-JUN-2000"]}}, 2, "task.accepted_answers"),
        (lambda r: {**r, "task": {**PRECISE, "accepted_answers": ["  "]}}, 2, "task.accepted_answers"),
        (lambda r: {**r, "task": {**PRECISE, "accepted_answers": [3]}}, 2, "task.accepted_answers.0"),
        (
            lambda r: {**r, "task": {"type": "answer", "question": "q?", "number": 3, "accepted_answers": ["three"]}},
            2,
            "task.accepted_answers",
        ),
        (lambda r: {**r, "task": {**RANGE, "accepted_answers": ["10-15"]}}, 2, "task.accepted_answers"),
    ],
)
def test_malformed_row_names_file_line_and_field(tmp_path, mutate, line, field):
    second = mutate({**GOOD, "id": "docs-002-s"})
    err = error_for(tmp_path, [GOOD, second])
    assert str(tmp_path / "golden.jsonl") in str(err)
    assert any(p_line == line and p_field == field for p_line, p_field, _ in err.problems), err.problems
    assert f"golden.jsonl:{line}: field '{field}'" in str(err)


def test_range_and_not_available_rows_load_and_precise_rows_are_unchanged(tmp_path):
    precise = {**GOOD, "id": "docs-003-a", "task": {"type": "answer", "question": "q?", "number": 3, "tolerance": 0.01}}
    rows = load_golden_file(
        write_rows(
            tmp_path,
            [
                GOOD,
                {**GOOD, "id": "docs-001-a", "task": RANGE},
                {**GOOD, "id": "docs-002-a", "task": {**NOT_AVAILABLE, "plausible_low": 0.5, "plausible_high": 30}},
                {**GOOD, "id": "docs-004-a", "task": NOT_AVAILABLE},
                precise,
            ],
        )
    )
    assert [r.task.answer_type for r in rows[1:]] == ["range", "not_available", "not_available", "precise"]
    assert (rows[1].task.range_low, rows[1].task.range_high) == (10, 15)
    assert (rows[2].task.plausible_low, rows[2].task.plausible_high, rows[2].task.percentage) == (0.5, 30, True)
    assert rows[3].task.plausible_low is None
    assert rows[4].task.number == 3 and rows[4].task.cue is None and rows[4].task.range_low is None
    # a written-out file reads back the same
    from bench_assets.golden.rows import dump_golden_rows

    dump_golden_rows(rows, tmp_path / "again.jsonl")
    assert load_golden_file(tmp_path / "again.jsonl") == rows


def test_equivalent_urls_and_accepted_answers_load_and_read_back(tmp_path):
    search = {
        **GOOD,
        "task": {
            **GOOD["task"],
            "equivalent_urls": ["https://docs.acme.test/webhooks?view=print", "https://acme.test/docs/webhooks"],
        },
    }
    answer = {**GOOD, "id": "docs-001-a", "task": {**PRECISE, "accepted_answers": ["2000-06-13", "June 13, 2000"]}}
    rows = load_golden_file(write_rows(tmp_path, [search, answer, {**GOOD, "id": "docs-002-s"}]))
    assert rows[0].task.accepted_urls == [*GOOD["task"]["golden_urls"], *search["task"]["equivalent_urls"]]
    assert rows[0].urls == rows[0].task.accepted_urls  # verified, split and leak-guarded with the golden URL
    assert rows[1].task.answer_texts == ["13-Jun-2000", "2000-06-13", "June 13, 2000"]
    from bench_assets.golden.rows import dump_golden_rows

    dump_golden_rows(rows, tmp_path / "again.jsonl")
    assert load_golden_file(tmp_path / "again.jsonl") == rows
    # a row that lists neither is written as before the fields existed (the committed public split)
    written = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert "equivalent_urls" not in written[2]["task"] and "accepted_answers" not in json.dumps(written[2])
    assert "equivalent_urls" in written[0]["task"] and "accepted_answers" in written[1]["task"]


def test_the_committed_public_split_is_written_as_it_was(tmp_path):
    from bench_assets.golden.rows import dump_golden_rows

    committed = REPO / "data" / "snapshots" / "web_search-2026-q3" / "public_split.jsonl"
    dump_golden_rows(load_golden_file(committed), tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_text() == committed.read_text()


def test_bad_json_and_duplicates_are_reported_with_lines(tmp_path):
    err = error_for(tmp_path, [GOOD, "{not json", GOOD])
    problems = {(line, field) for line, field, _ in err.problems}
    assert (2, "<json>") in problems
    assert (3, "id") in problems  # duplicate of line 1


def test_missing_file_is_named(tmp_path):
    with pytest.raises(BenchInputError, match="golden file not found"):
        load_golden_file(tmp_path / "absent.jsonl")


def test_demo_golden_set_is_big_enough_and_valid():
    rows = demo_golden_rows()
    assert len(rows) >= 200
    assert len({r.stratum for r in rows}) >= 5
    assert {r.task_type for r in rows} == {"search", "extract", "answer"}
    assert all(r.provenance == "planted" for r in rows)
    assert len({r.id for r in rows}) == len(rows)


def test_a_rows_publication_date_is_kept_and_written_only_when_known(tmp_path):
    from datetime import date

    from bench_assets.golden.rows import dump_golden_rows

    rows = load_golden_file(
        write_rows(tmp_path, [{**GOOD, "published_on": "2026-11-02"}, {**GOOD, "id": "docs-002-s"}])
    )
    assert rows[0].published_on == date(2026, 11, 2) and rows[1].published_on is None
    dump_golden_rows(rows, tmp_path / "again.jsonl")
    written = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert written[0]["published_on"] == "2026-11-02" and "published_on" not in written[1]
    assert load_golden_file(tmp_path / "again.jsonl") == rows
    # planted rows carry their page's date (its article:published_time)
    demo = demo_golden_rows()
    assert all(r.published_on is not None for r in demo)
