"""A malformed golden row must fail the load with its file, line and field, and write nothing.

The golden set is the truth every score rests on; a silently dropped or half-read row would
change every figure without anyone noticing.
"""

from __future__ import annotations

import json

import pytest

from bench_assets.errors import BenchInputError
from bench_assets.golden import load_golden_file
from bench_assets.simulator.corpus import demo_golden_rows

GOOD = {
    "id": "docs-001-s", "cohort": "2026-q3", "stratum": "docs", "provenance": "hand_verified",
    "verification": {"verified_by": "a.reviewer", "verified_at": "2026-06-01T00:00:00Z", "evidence": "sha256:ab"},
    "task": {"type": "search", "query": "acme webhooks guide", "golden_urls": ["https://docs.acme.test/webhooks"]},
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


@pytest.mark.parametrize("mutate, line, field", [
    (lambda r: {**r, "stratum": "Bad Stratum"}, 2, "stratum"),
    (lambda r: {**r, "provenance": "scraped"}, 2, "provenance"),
    (lambda r: {k: v for k, v in r.items() if k != "cohort"}, 2, "cohort"),
    (lambda r: {**r, "task": {**r["task"], "golden_urls": ["not a url"]}}, 2, "task.golden_urls.0"),
    (lambda r: {**r, "task": {**r["task"], "query": ""}}, 2, "task.query"),
    (lambda r: {**r, "task": {"type": "extract", "url": "https://a.test/x"}}, 2, "task"),
    (lambda r: {**r, "task": {"type": "answer", "question": "q?", "exact_answer": "a", "number": 3}}, 2, "task"),
    (lambda r: {**r, "verification": {"verified_by": "x", "verified_at": "yesterday", "evidence": "e"}}, 2,
     "verification.verified_at"),
    (lambda r: {**r, "surprise": 1}, 2, "surprise"),
])
def test_malformed_row_names_file_line_and_field(tmp_path, mutate, line, field):
    second = mutate({**GOOD, "id": "docs-002-s"})
    err = error_for(tmp_path, [GOOD, second])
    assert str(tmp_path / "golden.jsonl") in str(err)
    assert any(p_line == line and p_field == field for p_line, p_field, _ in err.problems), err.problems
    assert f"golden.jsonl:{line}: field '{field}'" in str(err)


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
