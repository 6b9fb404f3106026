"""The evidence bundle's files on their own: the leak scan reads Parquet as a reader does, the
same rows always give the same bytes, and the published schema is the one the files are written with."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from bench_assets.publish.evidence import (
    ATTEMPT_COLUMNS,
    RESULT_COLUMNS,
    TABLES,
    EvidenceBundle,
    arrow_schema,
    evidence_schema,
    parquet_bytes,
    url_digest,
)
from bench_assets.split.leaks import LeakGuard

HOLDOUT = [
    {
        "row_id": "finance-007-s",
        "request_text": "Quarterly flood report of Orbelin",
        "golden_urls": ["https://orbelin.test/reports/flood"],
    }
]


def parquet(tmp_path, name: str, **columns: list) -> object:
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


def test_the_leak_scan_reads_every_string_cell_of_a_parquet_file_and_the_json_inside(tmp_path):
    guard = LeakGuard(HOLDOUT)
    # a holdout URL inside an archived body, JSON-escaped and spelled with www. and a trailing slash
    body = json.dumps({"results": [{"url": "https://www.orbelin.test/reports/flood/"}]}).replace("/", "\\/")
    assert "orbelin.test/reports" not in body  # not there byte for byte
    leaked = parquet(tmp_path, "attempts.parquet", row_id=["news-001-s"], body=[body], latency_ms=[12.0])
    assert [line.split(": ", 1)[1] for line in guard.scan_file(leaked, "attempts.parquet")] == [
        "holdout url 'https://orbelin.test/reports/flood' (written as 'https://www.orbelin.test/reports/flood/')"
    ]
    # the query text, upper-cased, in a title; the id in a column of its own
    titled = parquet(
        tmp_path, "results.parquet", title=["QUARTERLY  FLOOD REPORT OF ORBELIN"], row_id=["finance-007-s"]
    )
    kinds = sorted(line.split("holdout ")[1].split(" ")[0] for line in guard.scan_file(titled, "results.parquet"))
    assert kinds == ["id", "text"]
    clean = parquet(tmp_path, "clean.parquet", url=["https://orbelin.test/reports/drought"], rank=[1])
    assert guard.scan_file(clean, "clean.parquet") == []
    assert len(guard.scan(tmp_path)) == 3  # a directory scan reads the Parquet files too


def test_the_same_rows_give_the_same_bytes_and_the_index_records_them():
    rows = [{c.name: None for c in RESULT_COLUMNS} | {"vendor": "exa", "row_id": "r-1", "rank": 1, "withheld": False}]
    table = pa.Table.from_pylist(rows, schema=arrow_schema(RESULT_COLUMNS))
    assert parquet_bytes(table) == parquet_bytes(pa.Table.from_pylist(rows, schema=arrow_schema(RESULT_COLUMNS)))
    bundle = EvidenceBundle({"format_version": 1, "vendors": {}}, {"evidence/results/exa.parquet": table})
    files = bundle.files()
    index = json.loads(files["evidence/bundle.json"])
    assert index["files"]["evidence/results/exa.parquet"]["rows"] == 1
    assert set(files) == {"evidence/results/exa.parquet", "evidence/bundle.json", "evidence.schema.json"}


def test_the_published_schema_is_the_one_the_files_are_written_with():
    schema = evidence_schema()
    assert set(schema["tables"]) == set(TABLES) == {"attempts", "results"}
    for name, columns in (("attempts", ATTEMPT_COLUMNS), ("results", RESULT_COLUMNS)):
        published = schema["tables"][name]["columns"]
        assert [c["name"] for c in published] == arrow_schema(columns).names
        assert [c["type"] for c in published] == [str(t) for t in arrow_schema(columns).types]
        assert all(c["description"] and set(c["levels"]) <= {"raw", "results", "digests"} for c in published)
    body = next(c for c in schema["tables"]["attempts"]["columns"] if c["name"] == "body")
    assert body["levels"] == ["raw"]  # only raw publishes bodies
    assert set(schema["levels"]) == {"raw", "results", "digests"}


def test_a_url_digest_is_the_digest_of_its_normalized_form():
    assert url_digest("https://WWW.Orbelin.test/reports/flood/?utm_source=x") == url_digest(
        "http://orbelin.test/reports/flood"
    )
    assert url_digest("https://orbelin.test/Reports/flood") != url_digest("https://orbelin.test/reports/flood")
