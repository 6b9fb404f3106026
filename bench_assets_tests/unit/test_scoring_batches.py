"""Scoring reads a vendor's archive batch by batch (`score.partition.score_archive`): a batch of
golden rows at a time, so that it never holds the whole archive's bodies. The verdicts, the
results and the spend are those of scoring the whole archive at once, however the archive is cut:
a row's retries and its final attempt are read together, and spend priced across the partition
(an unreadable billed body is charged like the partition's readable responses) is priced the same.
"""

from __future__ import annotations

import json
import statistics

import pandas as pd
import pytest

from bench_assets.errors import NotReadyError
from bench_assets.golden.rows import SearchTask
from bench_assets.golden.store import golden_frame
from bench_assets.score.partition import plan_batches, score_archive, score_partition, score_vendor_partition
from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.unit.test_scoring import EXA, MANIFEST, attempt, exa_body, result, row

ROWS = [
    row(f"s{n:02d}", SearchTask(type="search", query=f"acme topic {n}", golden_urls=[f"https://docs.acme.test/{n}"]))
    for n in range(12)
]
SPLIT = {r.id: "public" if n % 3 else "holdout" for n, r in enumerate(ROWS)}
UNREADABLE = "s05"  # billed (a 200) but its body cannot be read: priced like the partition's readable answers
RETRIED = ("s02", "s09")  # a 503 first, answered on a second attempt archived at the end


def answered(n: int, query_id: str, attempt_no: int = 1) -> dict:
    body = exa_body([result(f"https://docs.acme.test/{(n + k) % 12}", f"Page {n}.{k}") for k in range(n % 4)])
    body["costDollars"] = {"total": round(0.001 * (n + 1), 4)}  # every row billed differently
    return attempt(query_id, "search", body=body, attempt_no=attempt_no)


def archive() -> pd.DataFrame:
    """An archive in the order a fetch writes it: first attempts, a decoy among them, retries last."""
    attempts = []
    for n, r in enumerate(ROWS):
        if r.id == UNREADABLE:
            attempts.append(attempt(r.id, "search", body=json.dumps(exa_body([]))[:20]))
        elif r.id in RETRIED:
            attempts.append(attempt(r.id, "search", status=503, body="Service Unavailable"))
        else:
            attempts.append(answered(n, r.id))
        if n == 4:
            attempts.append({**answered(3, "decoy-1"), "role": "decoy"})
    attempts += [answered(int(q[1:]), q, attempt_no=2) for q in RETRIED]
    return pd.DataFrame(attempts).astype({"http_status": "Int64"})


def test_scoring_batch_by_batch_gives_the_whole_archive_s_frames_and_spend():
    raw = archive()
    whole = score_partition("t", "exa", EXA, MANIFEST, ROWS, SPLIT, raw, body_chars=10**12)
    one_row_each = score_partition("t", "exa", EXA, MANIFEST, ROWS, SPLIT, raw, body_chars=1)
    for before, after in zip(whole, one_row_each):
        pd.testing.assert_frame_equal(before, after, check_exact=True)
    scores = whole[0].set_index("row_id")
    readable = [0.001 * (n + 1) for n, r in enumerate(ROWS) if r.id != UNREADABLE]
    assert scores.loc[UNREADABLE, "billed_usd"] == pytest.approx(statistics.median(readable))
    assert scores.loc[UNREADABLE, "response_class"] == "malformed"
    for query_id in RETRIED:
        assert (scores.loc[query_id, "attempts"], scores.loc[query_id, "response_class"]) == (2, "ok")
        assert scores.loc[query_id, "billed_usd"] == pytest.approx(0.001 * (int(query_id[1:]) + 1))


def test_each_batch_reads_every_attempt_of_its_rows_and_no_more_than_its_share_of_bodies():
    raw = archive()
    sent = raw[raw["role"] != "decoy"].reset_index(drop=True)
    archived = pd.DataFrame(
        {"query_id": sent["query_id"], "capability": sent["capability"], "chars": sent["body"].str.len()}
    )
    budget = int(archived["chars"].sum() // 4)
    reads: list[pd.DataFrame] = []

    def read_batch(query_ids: list[str]) -> pd.DataFrame:
        reads.append(sent[sent["query_id"].isin(query_ids)])
        return reads[-1]

    score_archive("t", "exa", EXA, MANIFEST, ROWS, SPLIT, archived, read_batch, budget)
    assert len(reads) >= 3
    largest_row = int(archived.groupby("query_id")["chars"].sum().max())
    assert all(int(batch["body"].str.len().sum()) < budget + largest_row for batch in reads)
    read_ids = [q for batch in reads for q in dict.fromkeys(batch["query_id"])]
    assert sorted(read_ids) == sorted(r.id for r in ROWS)  # each row in exactly one batch, retries with it
    planned = plan_batches(ROWS, archived, budget)
    assert [b.query_ids for b in planned] == [list(dict.fromkeys(batch["query_id"])) for batch in reads]


def test_a_row_without_an_archived_response_is_refused_before_any_batch_is_read():
    raw = archive()
    raw = raw[raw["query_id"] != "s07"]
    archived = pd.DataFrame({"query_id": raw["query_id"], "capability": raw["capability"], "chars": 1})

    def read_batch(query_ids: list[str]) -> pd.DataFrame:
        raise AssertionError("nothing is read before every row is known to be archived")

    with pytest.raises(NotReadyError, match=r"1 golden rows of t\|exa have no archived response \(first: \['s07'\]\)"):
        score_archive("t", "exa", EXA, MANIFEST, ROWS, SPLIT, archived, read_batch)


def test_the_partition_read_from_a_warehouse_in_batches_scores_as_the_whole_archive(tmp_path):
    warehouse = Warehouse(tmp_path / "bench.duckdb")
    manifest = MANIFEST.model_copy(update={"snapshot_id": "t"})
    warehouse.replace_rows("golden_rows", golden_frame("t", enumerate(ROWS), "golden.jsonl"), {"snapshot_id": "t"})
    split = pd.DataFrame({"snapshot_id": "t", "row_id": list(SPLIT), "stratum": "docs", "split": list(SPLIT.values())})
    warehouse.replace_rows("query_split", split, {"snapshot_id": "t"})
    warehouse.replace_rows("raw_responses", archive(), {"snapshot_id": "t", "vendor": "exa"})
    read = warehouse.query_df
    bodies_read: list[int] = []

    def counting(sql, params=None):
        frame = read(sql, params)
        if "body" in frame:
            bodies_read.append(int(frame["body"].str.len().fillna(0).sum()))
        return frame

    warehouse.query_df = counting  # type: ignore[method-assign]
    batched = score_vendor_partition(warehouse, manifest, "exa", body_chars=600)
    warehouse.query_df = read  # type: ignore[method-assign]
    raw = warehouse.rows("raw_responses", "t", vendor="exa")
    whole = score_partition("t", "exa", EXA, manifest, ROWS, SPLIT, raw, body_chars=10**12)
    for before, after in zip(whole, batched):
        pd.testing.assert_frame_equal(before, after, check_exact=True)
    assert len(bodies_read) >= 3 and max(bodies_read) < sum(bodies_read) / 2
