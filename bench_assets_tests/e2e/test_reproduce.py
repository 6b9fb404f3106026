"""A researcher reproduces every public figure from the published files alone (`bench reproduce DIR`).

The session's published snapshot (`published_site`: three vendors on the real simulator,
materialized through Dagster and published) is copied alone into an empty directory, and
`bench reproduce` is run on the copy from yet another empty directory, with no warehouse, no
`data/`, no split key and every socket refused. It re-derives every public verdict from the
evidence bundle and every public figure from the verdicts, and finds nothing to report; a
flipped verdict, a changed figure and an altered result URL are each caught and named. The
bundle is read back as a reader reads it: no holdout row, decoy or key is in it, and every public
attempt is. A live snapshot's lower evidence levels (`results`, `digests`) still reproduce, with
what they cannot support named.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import socket
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from selectolax.lexbor import LexborHTMLParser

from bench_assets.aggregate.provenance import folder_content_hash
from bench_assets.cli import main as cli
from bench_assets.golden.store import load_golden_rows
from bench_assets.golden.verify import row_urls
from bench_assets.manifest import load_manifest
from bench_assets.metrics import normalize_url, wilson_interval
from bench_assets.publish.build import build_snapshot
from bench_assets.publish.drilldown import DrilldownRecords
from bench_assets.publish.evidence import BUNDLE_DIR, evidence_bundle
from bench_assets.publish.inputs import private_terms
from bench_assets.publish.site import _environment
from bench_assets.simulator.app import sim_key
from bench_assets.split.decoys import recorded_decoys
from bench_assets.split.leaks import LeakGuard
from bench_assets_tests.helpers import unwrapped, warehouse_of


@pytest.fixture()
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("bench reproduce tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def downloaded(site, tmp_path: Path) -> Path:
    """The published folder, copied alone into an empty directory (as a reader downloads it)."""
    dest = tmp_path / "download" / site.snapshot
    shutil.copytree(site.out, dest)
    return dest


def run_reproduce(folder: Path, tmp_path: Path, monkeypatch, capsys) -> tuple[int, list[str]]:
    """`bench reproduce DIR` from an empty directory that is also $BENCH_HOME, with none of the
    operator's settings: exit code and printed lines. Nothing may be written there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("BENCH_HOME", str(elsewhere))
    for name in ("BENCH_SPLIT_KEY", "BENCH_WAREHOUSE", "BENCH_PRIVATE_DIR", "BENCH_SIMULATOR_URL", "BENCH_LAKE_URL"):
        monkeypatch.delenv(name, raising=False)
    code = cli.main(["reproduce", str(folder), "--no-progress"])
    lines = unwrapped(capsys.readouterr().out).splitlines()  # each message whole (the CLI wraps at 100)
    assert list(elsewhere.iterdir()) == []  # no warehouse, no data/ was created or read from here
    return code, lines


def differences(lines: list[str]) -> list[str]:
    return [line.removeprefix("difference: ") for line in lines if line.startswith("difference: ")]


def bundle_rows(folder: Path, table: str, vendor: str) -> list[dict]:
    return pq.read_table(folder / BUNDLE_DIR / table / f"{vendor}.parquet").to_pylist()


def write_rows(folder: Path, table: str, vendor: str, rows: list[dict]) -> None:
    path = folder / BUNDLE_DIR / table / f"{vendor}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path, compression="zstd")


def test_the_published_folder_alone_reproduces_with_0_differences(
    published_site, tmp_path, monkeypatch, capsys, no_network
):
    folder = downloaded(published_site, tmp_path)
    code, lines = run_reproduce(folder, tmp_path, monkeypatch, capsys)
    assert code == 0 and lines[-1] == "0 differences", "\n".join(lines)
    head = lines[0]
    rows = sum(1 for _ in (folder / "public_split.jsonl").open())
    assert f"of 3 vendors on {rows} public rows re-derived from the evidence bundle" in head
    assert "bodies re-parsed by their vendor's adapter" in head and " 0 bodies" not in head
    for surface in ("public_row_scores.csv", "leaderboard.json split.public", "leaderboard.csv public_*"):
        assert surface in head
    assert "comparisons_public" in head and "pairwise.csv" in head and "rank ranges and letters" in head
    unverifiable = [line for line in lines if line.startswith("unverifiable from the public folder: ")]
    said = "\n".join(unverifiable)
    for named in (
        "breakdown.split.holdout",
        "breakdown.stratum",
        "metrics.ttr_median_hours",
        "metrics.latency_p50_ms",
        "comparisons.pairs counts",
    ):
        assert f"leaderboard.json {named} (" in said, said
    for checked in ("metrics.correct_rate ", "metrics.overfit_gap ", "metrics.spend_usd "):
        assert checked not in said  # made of public and holdout parts: checked, not named
    # every figure of leaderboard.json landed in exactly one place, none of them different
    board = json.loads((folder / "leaderboard.json").read_text())
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    expected = sum(
        len(e["metrics"])
        + sum(len(figs) for groups in e["breakdown"].values() for figs in groups.values())
        + len(e["response_classes"])
        + len(e["miss_reasons"])
        + 1  # position
        + sum(e.get(k) is not None for k in ("rank_range", "rank_letters", "agent_ready"))
        for e in scored
    )
    expected += sum(len(p) - 2 for p in board["comparisons"]["pairs"]) + len(board["comparisons_public"]["pairs"])
    expected += board.get("power") is not None
    tally = next(line for line in lines if line.startswith("figures of leaderboard.json: "))
    derived = sum(len(e["breakdown"]["split"]["public"]) for e in scored) + len(board["comparisons_public"]["pairs"])
    assert tally.startswith(f"figures of leaderboard.json: {expected}, of which {derived} re-derived"), tally
    assert tally.endswith(" 0 different") and " 0 checked" not in tally and " 0 unverifiable" not in tally, tally
    # the methodology page says which figures a reader can re-derive, check against parts, or not verify
    page = LexborHTMLParser((folder / "methodology.html").read_text()).css_first("section, main").text()
    for said_on_page in (
        "Re-derived from the public evidence",
        "Checked against the published parts",
        "Not verifiable",
    ):
        assert said_on_page in page
    assert "breakdown.split.holdout" in page and "holdout_commitments.json" in page
    # every verdict the published files show is one of those re-derived (all three vendors, every public row)
    published = list(csv.DictReader((folder / "public_row_scores.csv").open()))
    assert {r["vendor"] for r in published} == set(published_site.vendors)
    assert len(published) == rows * 3


def test_a_query_page_shows_what_each_vendor_returned_and_why_it_was_scored_so(published_site):
    out = published_site.out
    extract = next(
        r
        for r in csv.DictReader((out / "public_row_scores.csv").open())
        if r["task_type"] == "extract" and r["vendor"] == "exa" and r["response_class"] == "ok"
    )
    page = LexborHTMLParser((out / "queries" / f"{extract['row_id']}.html").read_text())
    section = page.css_first("section#exa")
    fields = {tr.attributes["data-field"]: tr.text(separator=" ") for tr in section.css("table.fields tr[data-field]")}
    assert "anchor_phrases" in fields and ("✓" in fields["anchor_phrases"] or "✗" in fields["anchor_phrases"])
    final = next(a for a in bundle_rows(out, "attempts", "exa") if a["row_id"] == extract["row_id"] and a["final"])
    assert final["body_sha256"] in section.text()  # the verdict points at its evidence
    assert section.css_first('a[href="../evidence/results/exa.parquet"]') is not None


@pytest.mark.parametrize("tamper", ["flipped verdict", "changed figure", "altered result URL"])
def test_a_tampered_folder_is_caught_and_the_difference_named(
    published_site, tmp_path, monkeypatch, capsys, no_network, tamper
):
    folder = downloaded(published_site, tmp_path)
    if tamper == "flipped verdict":
        rows = list(csv.DictReader((folder / "public_row_scores.csv").open()))
        row = next(r for r in rows if r["vendor"] == "brave" and r["task_type"] == "search" and r["correct"] == "True")
        row["correct"] = "False"
        with (folder / "public_row_scores.csv").open("w") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        expected = [
            f"public_row_scores.csv · vendor brave · row_id {row['row_id']}: correct: published 'False', derived 'True'"
        ]
    elif tamper == "changed figure":
        board = json.loads((folder / "leaderboard.json").read_text())
        entry = next(e for e in board["vendors"] if e["vendor"] == "tavily")
        figure = entry["breakdown"]["split"]["public"]["hit_at_1"]
        was, figure["value"] = figure["value"], round(figure["value"] + 0.05, 6)
        (folder / "leaderboard.json").write_text(json.dumps(board, indent=2, sort_keys=True) + "\n")
        expected = [
            f"leaderboard.json · vendor tavily · breakdown.split.public.hit_at_1.value: published {figure['value']!r}, derived {was!r}"
        ]
    else:
        attempts = {a["row_id"]: a for a in bundle_rows(folder, "attempts", "exa") if a["final"]}
        results = bundle_rows(folder, "results", "exa")
        hits = [r for r in results if r["golden"] and not r["withheld"] and r["row_id"].endswith("-s")]
        with_body = next(r for r in hits if attempts[r["row_id"]]["body"] is not None)
        without_body = next((r for r in hits if attempts[r["row_id"]]["body"] is None), None)
        expected = []
        for r in filter(None, (with_body, without_body)):
            r["url"] = r["url"].replace("://", "://elsewhere.", 1)  # another host: another page
            where = f"evidence/results/exa.parquet · vendor exa · row {r['row_id']} rank {r['rank']}"
            expected.append(f"{where}: url" if r is with_body else f"{where}: url_sha256")
        write_rows(folder, "results", "exa", results)
        expected.append("evidence/results/exa.parquet · vendor — · sha256")  # not the file bundle.json lists
        if without_body is not None:  # scored from the bundle's results: the hit is gone
            expected.append(
                f"public_row_scores.csv · vendor exa · row_id {without_body['row_id']}: correct: published 'True', derived 'False'"
            )
    code, lines = run_reproduce(folder, tmp_path, monkeypatch, capsys)
    found = differences(lines)
    assert code == 1 and lines[-1] == f"{len(found)} difference{'s' if len(found) != 1 else ''}"
    for line in expected:
        assert any(d.startswith(line) for d in found), (line, found)


def rewrite_board(folder: Path, change) -> None:
    board = json.loads((folder / "leaderboard.json").read_text())
    change(board)
    (folder / "leaderboard.json").write_text(json.dumps(board, indent=2, sort_keys=True) + "\n")


def entry_of(board: dict, vendor: str) -> dict:
    return next(e for e in board["vendors"] if e["vendor"] == vendor)


@pytest.mark.parametrize(
    "tamper",
    ["overall correct_rate", "overall n", "overall interval", "holdout figure", "stratum figure", "CSV figure"],
)
def test_a_tampered_headline_figure_is_named_as_the_one_difference(
    published_site, tmp_path, monkeypatch, capsys, no_network, tamper
):
    """Issue 32 item 5: a figure over all rows (or a copy of it) changed by hand is caught, through
    the public and holdout parts it is made of, and named as the only difference."""
    folder = downloaded(published_site, tmp_path)
    board = json.loads((folder / "leaderboard.json").read_text())
    vendor = board["vendors"][0]["vendor"]
    figure = entry_of(board, vendor)["metrics"]["correct_rate"]
    if tamper == "overall correct_rate":
        raised = round(figure["value"] + 0.013, 6)
        rewrite_board(folder, lambda b: entry_of(b, vendor)["metrics"]["correct_rate"].update(value=raised))
        expected = (
            f"leaderboard.json · vendor {vendor} · metrics.correct_rate.value (public + holdout): "
            f"published {raised!r}, derived {figure['value']!r}"
        )
    elif tamper == "overall n":
        rewrite_board(folder, lambda b: entry_of(b, vendor)["metrics"]["correct_rate"].update(n=figure["n"] + 1))
        expected = (
            f"leaderboard.json · vendor {vendor} · metrics.correct_rate.n (public + holdout): "
            f"published {figure['n'] + 1}, derived {figure['n']}"
        )
    elif tamper == "overall interval":
        low = round(figure["low"] - 0.004, 6)
        rewrite_board(folder, lambda b: entry_of(b, vendor)["metrics"]["correct_rate"].update(low=low))
        expected = (
            f"leaderboard.json · vendor {vendor} · metrics.correct_rate.low (public + holdout): "
            f"published {low!r}, derived {figure['low']!r}"
        )
    elif tamper == "holdout figure":  # one more correct row, value and interval made to agree: the sum does not
        held = entry_of(board, vendor)["breakdown"]["split"]["holdout"]["correct_rate"]
        count = round(held["value"] * held["n"]) - 1
        iv = wilson_interval(count, held["n"])
        moved = {"value": round(iv.value, 6), "low": round(iv.low, 6), "high": round(iv.high, 6)}
        rewrite_board(
            folder, lambda b: entry_of(b, vendor)["breakdown"]["split"]["holdout"]["correct_rate"].update(moved)
        )
        expected = f"leaderboard.json · vendor {vendor} · metrics.correct_rate.value (public + holdout): published {figure['value']!r}"
    elif tamper == "stratum figure":
        stratum = sorted(entry_of(board, vendor)["breakdown"]["stratum"])[0]
        part = entry_of(board, vendor)["breakdown"]["stratum"][stratum]["correct_rate"]
        raised = round(part["value"] + 0.013, 6)
        rewrite_board(
            folder, lambda b: entry_of(b, vendor)["breakdown"]["stratum"][stratum]["correct_rate"].update(value=raised)
        )
        expected = f"leaderboard.json · vendor {vendor} · breakdown.stratum.{stratum}.correct_rate.value (no count over n = {part['n']} gives it): published {raised!r}"
    else:
        rows = list(csv.DictReader((folder / "leaderboard.csv").open()))
        row = next(r for r in rows if r["vendor"] == vendor)
        was, row["correct_rate"] = row["correct_rate"], str(round(float(row["correct_rate"]) + 0.013, 6))
        with (folder / "leaderboard.csv").open("w") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        expected = (
            f"leaderboard.csv · vendor {vendor} · correct_rate (against leaderboard.json): "
            f"published {row['correct_rate']!r}, derived {was!r}"
        )
    code, lines = run_reproduce(folder, tmp_path, monkeypatch, capsys)
    found = differences(lines)
    assert code == 1 and any(d.startswith(expected) for d in found), (expected, found)
    if tamper == "holdout figure":  # every figure resting on it disagrees: the overall ones and the vendor file's copy
        return
    if tamper == "CSV figure":  # a file other than leaderboard.json changed: its content hash no longer holds
        assert [d for d in found if "content_hash" in d] == [
            d for d in found if d.startswith("leaderboard.json · vendor — · content_hash")
        ]
        assert len(found) == 2, "\n".join(lines)
    else:  # leaderboard.json is not under its own hash
        assert lines[-1] == "1 difference", "\n".join(lines)
    tally = next(line for line in lines if line.startswith("figures of leaderboard.json: "))
    assert tally.endswith(f" {0 if tamper == 'CSV figure' else 1} different"), tally


def private_needles(site) -> list[dict]:
    """What must never be published: holdout rows, dead holdout rows and decoys (as publication guards them)."""
    warehouse = warehouse_of(site.home)
    manifest = load_manifest(site.home / "data" / "snapshots" / site.snapshot / "manifest.yaml")
    rows = load_golden_rows(warehouse, site.snapshot)
    split = warehouse.split(site.snapshot)
    terms, _ = private_terms(site.home / "data" / "private", manifest, warehouse, rows, split)
    decoys = recorded_decoys(site.home / "data" / "private", site.snapshot)
    assert terms and decoys
    return terms + [{"row_id": d.id, "request_text": d.request_text, "golden_urls": row_urls(d)} for d in decoys]


def test_the_bundle_holds_every_public_attempt_and_no_holdout_row_decoy_or_key(published_site):
    out = published_site.out
    needles = private_needles(published_site)
    bundle = out / BUNDLE_DIR
    con = duckdb.connect()
    cells: list[str] = []
    for path in sorted(bundle.rglob("*.parquet")):
        table = pq.read_table(path)
        cells += [v for c in table.columns if pa.types.is_string(c.type) for v in c.to_pylist() if v]
    text = "\n".join(cells)
    lowered = text.lower()
    for n in needles:
        assert n["row_id"] not in text
        assert not n["request_text"] or n["request_text"].lower() not in lowered
        for url in n["golden_urls"]:
            assert url not in text
    private_forms = {normalize_url(u) for n in needles for u in n["golden_urls"]}
    listed = con.execute(f"SELECT url FROM '{bundle}/results/*.parquet' WHERE url IS NOT NULL").fetchall()
    assert not {normalize_url(u) for (u,) in listed} & private_forms
    assert LeakGuard(needles).scan(bundle) == []  # read as a reader reads it (JSON bodies decoded)
    for vendor in published_site.vendors:
        assert sim_key(vendor) not in text  # keys never travel into the bundle ...
    sent = con.execute(
        f"SELECT count(*) FROM '{bundle}/attempts/*.parquet' WHERE request_json LIKE '%<redacted>%'"
    ).fetchone()
    total = con.execute(f"SELECT count(*) FROM '{bundle}/attempts/*.parquet'").fetchone()
    assert sent == total  # ... every request is there, its key redacted
    # every attempt of every public row is there, nothing of the holdout's or the decoys'
    archived = warehouse_of(published_site.home).query_df(
        "SELECT vendor, count(*) AS n FROM raw_responses WHERE snapshot_id = ? AND role = 'public' GROUP BY 1",
        [published_site.snapshot],
    )
    ours = dict(con.execute(f"SELECT vendor, count(*) FROM '{bundle}/attempts/*.parquet' GROUP BY 1").fetchall())
    assert ours == dict(zip(archived["vendor"], archived["n"]))
    # the guard had something to do: public queries returned holdout pages, withheld with their digest kept
    withheld = con.execute(
        f"SELECT count(*), count(url), count(text_sha256) FROM '{bundle}/results/*.parquet' WHERE withheld"
    ).fetchone()
    assert withheld[0] > 0 and withheld[1] == 0 and withheld[2] == 0
    bodies = con.execute(
        f"SELECT count(*), count(body) FROM '{bundle}/attempts/*.parquet' WHERE body_withheld IS NOT NULL"
    ).fetchone()
    assert bodies[0] > 0 and bodies[1] == 0
    index = json.loads((bundle / "bundle.json").read_text())
    for rel, record in index["files"].items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == record["sha256"]
    assert {v["evidence_level"] for v in index["vendors"].values()} == {"raw"}  # simulated: the simulator's bodies


def test_the_bundle_read_with_scorings_url_forms_is_byte_for_byte_the_one_that_normalizes_every_url(published_site):
    """A vendor's build takes each result URL's normalized form (its digest, its golden flag) from
    scoring's results (`publish.build`); the bundle built without scoring normalizes every URL
    itself (`evidence_bundle`). The two give the same Parquet bytes for every vendor."""
    site = published_site
    warehouse = warehouse_of(site.home)
    manifest = load_manifest(site.home / "data" / "snapshots" / site.snapshot / "manifest.yaml")
    rows = load_golden_rows(warehouse, site.snapshot)
    split = warehouse.split(site.snapshot)
    guard = LeakGuard(private_needles(site))
    built = build_snapshot(warehouse, manifest, rows, split, guard)
    by_scoring = {rel: f.data for b in built.vendors for rel, f in b.files.files.items()}
    alone = evidence_bundle(
        manifest,
        [r for r in rows if split[r.id] == "public"],
        lambda v: warehouse.rows("raw_responses", site.snapshot, vendor=v),
        guard,
    ).parquet
    assert by_scoring.keys() == alone.keys() and len(alone) == 2 * len(site.vendors)
    for rel, data in alone.items():
        assert by_scoring[rel] == data, rel
    assert by_scoring == {rel: (site.out / rel).read_bytes() for rel in by_scoring}  # and as published


def test_a_live_snapshot_at_results_and_digests_levels_reproduces_and_names_what_digests_cannot_support(
    published_site, tmp_path, monkeypatch, capsys, no_network
):
    """The bundle as a live snapshot would publish it where tavily's terms allow results and exa's
    digests only: no body of either, no URL or text of exa's; the folder still reproduces, exa's
    search verdicts from the golden URLs' digests, its extract and answer verdicts named."""
    site = published_site
    warehouse = warehouse_of(site.home)
    manifest = load_manifest(site.home / "data" / "snapshots" / site.snapshot / "manifest.yaml")
    vendors = dict(manifest.vendors)
    vendors["exa"] = vendors["exa"].model_copy(update={"publish_evidence": "digests"})
    vendors["tavily"] = vendors["tavily"].model_copy(update={"publish_evidence": "results"})
    live = manifest.model_copy(update={"mode": "live", "vendors": vendors})
    rows = load_golden_rows(warehouse, site.snapshot)
    split = warehouse.split(site.snapshot)
    bundle = evidence_bundle(
        live,
        [r for r in rows if split[r.id] == "public"],
        lambda v: warehouse.rows("raw_responses", site.snapshot, vendor=v),
        LeakGuard(private_needles(site)),
    )
    folder = downloaded(site, tmp_path)
    shutil.rmtree(folder / BUNDLE_DIR)
    for rel, content in bundle.files().items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
    exa, tavily = bundle_rows(folder, "results", "exa"), bundle_rows(folder, "results", "tavily")
    assert all(r[c] is None for r in exa for c in ("url", "title", "snippet", "content", "published"))
    assert all(r["url_sha256"] for r in exa if not r["withheld"])
    assert any(r["url"] for r in tavily) and any(r["content"] for r in tavily)
    for vendor in ("exa", "tavily"):
        assert all(
            a["body"] is None and a["body_withheld"]
            for a in bundle_rows(folder, "attempts", vendor)
            if a["body_sha256"]
        )

    # as such a publication states it: the content hash over its files (leaderboard.json is not under it)
    rewrite_board(folder, lambda b: b.update(content_hash=folder_content_hash(folder)))
    code, lines = run_reproduce(folder, tmp_path, monkeypatch, capsys)
    assert code == 0 and lines[-1] == "0 differences", "\n".join(lines)
    named = [line for line in lines if "vendor exa ·" in line and "digests only" in line]
    assert len(named) == 1
    listed = named[0].split("not published: ", 1)[1]
    assert "-x (result 1)" in listed and "-a (result" in listed and "-s (" not in listed  # search rows re-derived
    assert not any(
        "vendor tavily ·" in line and "verdicts, taken as published" in line and "digests" in line for line in lines
    )

    # exa's search verdicts really are re-derived from the digests: a flipped one is caught
    published = list(csv.DictReader((folder / "public_row_scores.csv").open()))
    row = next(r for r in published if r["vendor"] == "exa" and r["task_type"] == "search" and r["hit_at_10"] == "True")
    row["hit_at_10"] = "False"
    with (folder / "public_row_scores.csv").open("w") as f:
        writer = csv.DictWriter(f, fieldnames=list(published[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(published)
    second = tmp_path / "second"
    second.mkdir()
    code, lines = run_reproduce(folder, second, monkeypatch, capsys)
    assert code == 1
    assert (
        f"public_row_scores.csv · vendor exa · row_id {row['row_id']}: hit_at_10: published 'False', derived 'True'"
        in differences(lines)
    )


def test_reproduce_names_the_folder_it_cannot_read(tmp_path, capsys):
    assert cli.main(["reproduce", str(tmp_path / "nowhere"), "--no-progress"]) == 2
    assert "nowhere" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["reproduce", str(tmp_path / "empty"), "--no-progress"]) == 2
    assert "evidence/bundle.json" in capsys.readouterr().err


def test_a_digests_vendors_query_page_shows_ranks_and_marks_not_what_it_returned(published_site):
    """Where a vendor's terms allow digests only, its drill-down shows each result's rank, whether
    it is a golden URL or holds the answer, and the body's SHA-256, not its URL, title or text."""
    site = published_site
    warehouse = warehouse_of(site.home)
    manifest = load_manifest(site.home / "data" / "snapshots" / site.snapshot / "manifest.yaml")
    live = manifest.model_copy(update={"mode": "live"})  # the demo manifest's levels: digests for every vendor
    rows = load_golden_rows(warehouse, site.snapshot)
    split = warehouse.split(site.snapshot)
    results = warehouse.query_df(
        "SELECT r.* FROM response_results r JOIN query_split q USING (snapshot_id, row_id) "
        "WHERE r.snapshot_id = ? AND q.split = 'public'",
        [site.snapshot],
    )
    build = build_snapshot(warehouse, live, rows, split, LeakGuard(private_needles(site)))
    queries = list(DrilldownRecords(live, build.public_rows, {b.vendor: b.entries for b in build.vendors}))
    entries = [e for q in queries for e in q["vendors"] if e["response_class"] == "ok"]
    assert entries and {e["evidence_level"] for e in entries} == {"digests"}
    for e in entries:
        assert all(
            {k for k, v in r._asdict().items() if v is not None}
            <= {"rank", "withheld", "golden", "contains_answer", "answer_read", "digest_only"}
            for r in e["results"]  # `drilldown.ShownResult`: what is not shown is None
        )
        assert not e.get("answer_reading") or e["answer_reading"]["sentence"] is None
        assert all(f["items"] == [] for f in e.get("fidelity_fields") or [])
        assert e["body_sha256"]
    assert any(r.golden for e in entries for r in e["results"])  # the marks are still there
    q = next(q for q in queries if q["task_type"] == "search")
    board = json.loads((site.out / "leaderboard.json").read_text())
    html = _environment().get_template("query.html.j2").render(board=board, manifest=live, root="../", active="", q=q)
    page = LexborHTMLParser(html)
    golden = {normalize_url(u) for u in q["golden_urls"]}  # the row's own golden URLs are public
    returned = [u for u in set(results.loc[results["row_id"] == q["row_id"], "url"]) if normalize_url(u) not in golden]
    assert returned and not [u for u in returned if u in html]
    assert page.css("li.digest-only") and "the vendor's terms allow digests only" in page.text()
