"""The site's data files written faster than the plain way must be the plain way's bytes:
a vendor's JSON file (`vendor_json`, each verdict by C's encoder) and `public_row_scores.csv`
(`PublicRowScores`, a plain CSV writer)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.publish.files import PUBLIC_ROW_SCORE_COLUMNS, PublicRowScores, public_row_scores_csv, vendor_json

scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
verdict = st.dictionaries(st.text(max_size=8), scalar, max_size=6)
entry = st.dictionaries(
    st.text(max_size=8),
    st.one_of(scalar, st.lists(scalar, max_size=3), st.dictionaries(st.text(max_size=4), scalar, max_size=3)),
    max_size=5,
)
BOARD = {"snapshot_id": "web_search-2026-q3", "mode": "demo", "rank_metric": "correct_rate", "ranking": ["a", "b"]}


@settings(max_examples=300, deadline=None)
@given(entry=entry, verdicts=st.lists(verdict, max_size=5))
def test_a_vendor_file_is_the_indented_encoders_bytes(entry: dict[str, Any], verdicts: list[dict[str, Any]]) -> None:
    doc = {**BOARD, "entry": entry, "public_rows": verdicts}
    assert vendor_json(BOARD, entry, verdicts) == json.dumps(doc, indent=2, sort_keys=True) + "\n"


def test_a_verdict_that_is_not_flat_is_written_the_plain_way() -> None:
    verdicts = [{"row_id": "r1", "ranks": [1, 2]}, {"row_id": "r2", "more": {"x": None}}]
    doc = {**BOARD, "entry": {"public_rows": []}, "public_rows": verdicts}
    assert vendor_json(BOARD, {"public_rows": []}, verdicts) == json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _dict_writer(records: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=PUBLIC_ROW_SCORE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for q in records:
        for e in q["vendors"]:
            row = {"row_id": q["row_id"], "stratum": q["stratum"], "task_type": q["task_type"]}
            row.update({c: e.get(c) for c in PUBLIC_ROW_SCORE_COLUMNS if c not in row})
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buffer.getvalue()


record = st.fixed_dictionaries(
    {
        "row_id": st.one_of(st.none(), st.text(max_size=6)),
        "stratum": st.text(max_size=6),
        "task_type": st.sampled_from(["search", "extract", "answer"]),
        "vendors": st.lists(
            st.dictionaries(st.sampled_from([*PUBLIC_ROW_SCORE_COLUMNS, "other"]), scalar, max_size=8), max_size=3
        ),
    }
)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(record, max_size=4))
def test_public_row_scores_are_the_dict_writers_bytes(records: list[dict[str, Any]]) -> None:
    assert public_row_scores_csv(records) == _dict_writer(records)
    rows = PublicRowScores()  # a vendor's figures on a row at a time, as the site writes them
    for q in records:
        for e in q["vendors"]:
            rows.add({**e, **{c: q[c] for c in ("row_id", "stratum", "task_type")}})
    assert rows.text() == _dict_writer(records)
