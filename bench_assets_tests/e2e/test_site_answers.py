"""Answer rows end to end: scored by the rubric in the warehouse, aggregated with n and an interval,
and shown on the published drill-down with the rule that produced each score.

Uses the session's published snapshot (`published_site` in conftest.py: brave, exa and tavily on
the simulator, a third of its golden rows answer rows, some of them range or not-available).
"""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pyarrow.parquet as pq
from selectolax.lexbor import LexborHTMLParser as HTMLParser


def warehouse(site):
    return duckdb.connect(str(site.home / "data" / "warehouse" / "bench.duckdb"), read_only=True)


def answer_rows(site) -> int:
    """How many of the snapshot's golden rows are answer rows (the planted demo: one a page)."""
    con = warehouse(site)
    try:
        return con.execute("SELECT count(*) FROM golden_rows WHERE task_type = 'answer'").fetchone()[0]
    finally:
        con.close()


def test_answer_rows_carry_a_rubric_score_and_its_rule(published_site):
    n_answer = answer_rows(published_site)
    assert n_answer * 3 == published_site.golden_rows
    con = warehouse(published_site)
    try:
        rows = con.execute("""
            SELECT s.vendor, s.row_id, s.response_class, s.answer_score, s.answer_rule, s.correct,
                   json_extract_string(g.task_json, '$.answer_type') AS answer_type
            FROM row_scores s JOIN golden_rows g USING (snapshot_id, row_id)
            WHERE s.task_type = 'answer'""").fetchall()
        others = con.execute(
            "SELECT count(*) FROM row_scores WHERE task_type <> 'answer' "
            "AND (answer_score IS NOT NULL OR answer_rule IS NOT NULL)"
        ).fetchone()[0]
    finally:
        con.close()
    assert others == 0
    assert {r[6] for r in rows} == {"precise", "range", "not_available"}
    assert len(rows) == n_answer * len(published_site.vendors)
    for vendor, row_id, cls, score, rule, correct, answer_type in rows:
        assert score in (0.0, 0.5, 1.0), (vendor, row_id)
        assert rule and (rule.startswith(answer_type) if cls == "ok" else rule.startswith("no answer")), rule
        assert correct == (score == 1.0)
    by_type = {t: [r[3] for r in rows if r[6] == t] for t in ("range", "not_available")}
    assert any(s == 1.0 for s in by_type["range"]) and any(s == 1.0 for s in by_type["not_available"])


def test_the_mean_answer_score_is_published_with_n_and_interval(published_site):
    n_answer = answer_rows(published_site)
    board = json.loads((published_site.out / "leaderboard.json").read_text())
    for e in (e for e in board["vendors"] if e["status"] == "scored"):
        fig = e["metrics"]["answer_score_mean"]
        assert fig["n"] == n_answer and fig["low"] <= fig["value"] <= fig["high"]
        by_task = e["breakdown"]["task_type"]["answer"]["answer_score_mean"]
        assert by_task == fig
        assert "answer_score_mean" not in e["breakdown"]["task_type"]["search"]
    header = next(csv.reader(io.StringIO((published_site.out / "leaderboard.csv").read_text())))
    assert {"answer_score_mean", "answer_score_mean_n", "answer_score_mean_low", "answer_score_mean_high"} <= set(
        header
    )


def test_the_drilldown_shows_the_rule_and_the_sentence_read(published_site):
    out = published_site.out
    public = {
        json.loads(line)["id"]: json.loads(line) for line in (out / "public_split.jsonl").read_text().splitlines()
    }
    kinds = {rid: r["task"].get("answer_type") for rid, r in public.items() if r["task"]["type"] == "answer"}
    rubric_rows = [rid for rid, kind in kinds.items() if kind in ("range", "not_available")]
    assert rubric_rows, "the public split holds range or not-available rows"
    scores = {
        (r["row_id"], r["vendor"]): r for r in csv.DictReader(io.StringIO((out / "public_row_scores.csv").read_text()))
    }
    shown = 0
    for rid in rubric_rows:
        page = HTMLParser((out / "queries" / f"{rid}.html").read_text(encoding="utf-8"))
        facts = page.css_first("dl.facts").text()
        assert public[rid]["task"]["cue"] in facts and "per-cell rubric" in facts
        for vendor in published_site.vendors:
            section = page.css_first(f"section#{vendor}")
            row = scores[(rid, vendor)]
            assert row["answer_rule"] and row["answer_rule"] in section.text()
            if section.css_first("p.reading") is not None:
                shown += 1
                assert section.css_first("span.tag-read") is not None or "withheld" in section.text()
    assert shown > 0


def test_a_rows_page_lists_the_results_its_score_reads_and_links_to_the_bodies(published_site):
    """An answer row's page lists a vendor's top answer_k results, an extract row's its first (the
    ones the score reads), a search row's all; no page inlines a response body: it gives the body's
    length and links to the evidence bundle, which holds every result and body."""
    out = published_site.out
    bundle = json.loads((out / "evidence" / "bundle.json").read_text())
    depth = {"answer": bundle["answer_k"], "extract": 1, "search": None}
    task_of = {
        json.loads(line)["id"]: json.loads(line)["task"]["type"]
        for line in (out / "public_split.jsonl").read_text().splitlines()
    }
    trimmed = {"answer": 0, "extract": 0}
    for vendor in published_site.vendors:
        results = pq.read_table(out / "evidence" / "results" / f"{vendor}.parquet").to_pylist()
        returned: dict[str, int] = {}
        for r in results:
            returned[r["row_id"]] = returned.get(r["row_id"], 0) + 1
        finals = {
            a["row_id"]: a
            for a in pq.read_table(out / "evidence" / "attempts" / f"{vendor}.parquet").to_pylist()
            if a["final"]
        }
        for row_id, task_type in task_of.items():
            page = HTMLParser((out / "queries" / f"{row_id}.html").read_text(encoding="utf-8"))
            section = page.css_first(f"section#{vendor}")
            listed = len(section.css("ol.results > li"))
            want = (
                returned.get(row_id, 0) if depth[task_type] is None else min(depth[task_type], returned.get(row_id, 0))
            )
            assert listed == want, (vendor, row_id, task_type, listed, returned.get(row_id))
            note = section.css_first("p.results-listed")
            assert (note is not None) == (listed < returned.get(row_id, 0)), (vendor, row_id)
            if note is not None:
                trimmed[task_type] += 1
                assert f"of {returned[row_id]} results" in note.text()
                assert note.css_first("a").attributes["href"] == f"../evidence/results/{vendor}.parquet"
            assert section.css_first("pre.raw-response") is None  # no body inline
            final = finals.get(row_id)
            chars = section.css_first("span.body-chars")
            if final is not None and final["body"] is not None:
                assert chars is not None and int(chars.attributes["data-value"]) == len(final["body"])
            else:
                assert chars is None
    assert trimmed["answer"] > 0, "some vendor returned more than answer_k results on an answer row"
