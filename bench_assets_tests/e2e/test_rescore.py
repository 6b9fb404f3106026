"""How `bench rescore` compares a published surface with its re-derivation.

The comparison rules themselves (pure functions), then the whole published site of the session's
snapshot (`published_site`: replies, errata, charts, agent-ready, time-to-retrievability)
re-rendered and compared file by file: untouched it is identical, an edited figure in a page, a
chart or a data file is reported. More end-to-end checks (edited JSON, CSV and tables) are in
test_snapshot_e2e.py.
"""

from __future__ import annotations

import io
import json
import re
import socket
from contextlib import ExitStack, contextmanager, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from bench_assets.cli import main as cli
from bench_assets.rescore.compare import (
    Difference,
    compare_csv,
    compare_frames,
    compare_json,
    first_difference,
    same_value,
)
from bench_assets.rescore.snapshot import rescore_snapshot


def test_figures_compare_within_a_tolerance_and_types_matter_in_json():
    assert same_value(0.1 + 0.2, 0.3)
    assert not same_value(0.5, 0.5001)
    assert same_value(None, float("nan"))  # a missing figure, however it is spelled
    assert not same_value("0.5", 0.5)  # in JSON a string is not a number ...
    assert same_value("0.5", 0.5, text=True)  # ... in a CSV cell it is
    assert not same_value(True, 1) and same_value(True, True)


def test_json_records_are_matched_by_vendor_or_row_id_not_by_position():
    published = {"vendors": [{"vendor": "a", "x": 1}, {"vendor": "b", "x": 2}, {"vendor": "c", "x": 3}]}
    derived = {"vendors": [{"vendor": "a", "x": 1}, {"vendor": "c", "x": 3.5}]}
    assert list(compare_json("", published, derived)) == [
        ("vendors[b]", {"vendor": "b", "x": 2}, None),  # one record missing does not shift the others
        ("vendors[c].x", 3, 3.5),
    ]
    rows = {"public_rows": [{"row_id": "r1", "correct": True}]}
    assert list(compare_json("", rows, {"public_rows": [{"row_id": "r1", "correct": False}]})) == [
        ("public_rows[r1].correct", True, False)
    ]
    assert list(compare_json("", {"k": [1, 2]}, {"k": [1, 2, 3]})) == [("k (items)", 2, 3)]


def test_csv_cells_are_matched_on_their_key_and_named_by_vendor_and_row():
    published = "row_id,vendor,correct,latency_ms\nr1,exa,True,120.5\nr2,exa,False,\n"
    derived = "row_id,vendor,correct,latency_ms\nr1,exa,True,120.50000000001\nr2,exa,True,\nr3,exa,True,9\n"
    found = compare_csv("public_row_scores.csv", published, derived, ("row_id", "vendor"))
    assert found == [
        Difference("public_row_scores.csv", "exa", "row_id r2: correct", "False", "True"),
        Difference("public_row_scores.csv", "exa", "row_id r3", None, "row"),
    ]
    assert str(found[0]) == (
        "public_row_scores.csv · vendor exa · row_id r2: correct: published 'False', derived 'True'"
    )
    assert compare_csv("x.csv", "vendor,a\nexa,1\n", "vendor,a,b\nexa,1,2\n", ("vendor",)) == [
        Difference("x.csv", None, "column b", None, "present")
    ]


def test_a_table_is_compared_row_by_row_even_when_the_totals_agree():
    stored = pd.DataFrame({"vendor": ["exa", "exa"], "row_id": ["r1", "r2"], "correct": [False, True]})
    derived = pd.DataFrame({"vendor": ["exa", "exa"], "row_id": ["r1", "r2"], "correct": [True, False]})
    found = compare_frames("row_scores (DuckDB)", stored, derived, ["vendor", "row_id"], ["correct"])
    assert [str(d) for d in found] == [
        "row_scores (DuckDB) · vendor exa · r1: correct: stored False, derived True",
        "row_scores (DuckDB) · vendor exa · r2: correct: stored True, derived False",
    ]


# ##### THE WHOLE SITE (the session's published snapshot: replies, errata, charts, agent-ready, TTR)


@contextmanager
def edited(path: Path, edit):
    """The file with `edit(text) -> text` applied, restored byte for byte afterwards."""
    original = path.read_bytes()
    path.write_text(edit(original.decode("utf-8")), encoding="utf-8")
    try:
        yield
    finally:
        path.write_bytes(original)


@pytest.fixture()
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("rescore tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def rescore(site) -> list[str]:
    return [str(d) for d in rescore_snapshot(site.home, site.snapshot).differences]


def test_an_untouched_site_re_renders_byte_for_byte_without_network(published_site, no_network):
    from bench_assets.review.business_days import fixed_today

    # another day and another clock: nothing the site states depends on when rescore runs
    with fixed_today("2031-02-03"):
        report = rescore_snapshot(published_site.home, published_site.snapshot)
    assert report.differences == [], report.summary()
    assert any(s.startswith("site (") for s in report.surfaces) and "publications (SHA-256 per file)" in report.surfaces
    files = int(re.search(r"site \((\d+) files", next(s for s in report.surfaces if s.startswith("site"))).group(1))
    assert files == sum(1 for p in published_site.out.rglob("*") if p.is_file())


def in_file(found: list[str], *names: str) -> list[str]:
    """The differences reported for these published files (a difference starts with its file)."""
    return [d for d in found if d.split(" · ", 1)[0] in names]


@pytest.fixture(scope="module")
def edits(published_site):
    """The published site edited in many files at once and re-scored once per set of edits, then
    restored (each file byte for byte) and re-scored again. A rescore compares every file on its
    own, so edits to different files are each reported as if made alone (and the tests below hold
    every set to exactly the differences its edits make); edits that would meet in one file, or
    change what another file's check reads, are in separate sets. Each rescore re-renders the
    whole site, so one per set, not one per edit, is what keeps this module cheap."""
    out = published_site.out
    board = json.loads((out / "leaderboard.json").read_text())
    entry = next(e for e in board["vendors"] if e["status"] == "scored")
    vendor, rank = entry["vendor"], board["rank_metric"]
    seen = SimpleNamespace(vendor=vendor, rank=rank, value=entry["metrics"][rank]["value"])
    seen.shown = f"{seen.value:.3f}"
    seen.hit = f"{entry['metrics']['hit_at_1']['value']:.3f}"
    linked = '(?:<a class="rows" href="[^"]*">)?'  # a figure links to the rows behind it
    cell = re.compile(
        rf'(<tr data-vendor="{vendor}".*?data-metric="{rank}"><span class="v">{linked}){re.escape(seen.shown)}<', re.S
    )
    card = re.compile(
        rf'(data-metric="hit_at_1"><span class="k"[^>]*>[^<]*</span>{linked}<span class="v">){re.escape(seen.hit)}<'
    )

    def board_edited(text: str) -> str:
        doc = json.loads(text)
        next(e for e in doc["vendors"] if e["vendor"] == vendor)["metrics"][rank]["value"] = 0.999
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"

    def row_edited(text: str) -> str:
        doc = json.loads(text)
        doc["public_rows"][0]["correct"] = not doc["public_rows"][0]["correct"]
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"

    seen.first_row = json.loads((out / "vendors" / f"{vendor}.json").read_text())["public_rows"][0]
    svg = out / "charts" / "overfit_gap.svg"
    seen.label = re.search(r">([+-]\d+ pt)</text>", svg.read_text()).group(1)  # an axis label, whichever the data drew
    assert seen.label != "+90 pt"
    seen.query = sorted((out / "queries").glob("*-s.html"))[0]
    extra, removed = out / "charts" / "extra.svg", out / "llms.txt"

    # Figures and text: a page's table cell and card, the JSON files' figures, a chart's label, the
    # methodology's constants, a query page's verdict, and a file added and one missing.
    with ExitStack() as stack:
        stack.enter_context(edited(out / "index.html", lambda t: cell.sub(r"\g<1>0.999<", t, count=1)))
        stack.enter_context(edited(out / "vendors" / f"{vendor}.html", lambda t: card.sub(r"\g<1>0.111<", t, count=1)))
        stack.enter_context(edited(out / "leaderboard.json", board_edited))
        stack.enter_context(edited(out / "vendors" / f"{vendor}.json", row_edited))
        stack.enter_context(edited(svg, lambda t: t.replace(f">{seen.label}</text>", ">+90 pt</text>", 1)))
        stack.enter_context(edited(out / "methodology.html", lambda t: t.replace("<td>0.9</td>", "<td>0.8</td>", 1)))
        stack.enter_context(
            edited(
                seen.query,
                lambda t: t.replace(
                    '<span class="tag tag-correct">correct</span>',
                    '<span class="tag tag-incorrect">not correct</span>',
                    1,
                ),
            )
        )
        kept = removed.read_bytes()
        extra.write_text("<svg/>")
        removed.unlink()
        stack.callback(removed.write_bytes, kept)
        stack.callback(extra.unlink)
        seen.edited_pages = [
            "0.999" in (out / "index.html").read_text(),
            "0.111" in (out / "vendors" / f"{vendor}.html").read_text(),
        ]
        seen.figures = rescore(published_site)
        # the command reports the same and exits 1
        with pytest.MonkeyPatch.context() as env, redirect_stdout(io.StringIO()) as printed:
            env.setenv("BENCH_HOME", str(published_site.home))
            seen.command_exit = cli.main(["rescore", published_site.snapshot])
        seen.command_output = printed.getvalue()
    # Markup only: a chart's drawing (no text changed), and a data file reformatted (same figures).
    with (
        edited(svg, lambda t: t.replace("stroke-width: 0.9", "stroke-width: 1.9", 1)),
        edited(out / "leaderboard.json", lambda t: json.dumps(json.loads(t))),
    ):
        seen.markup = rescore(published_site)
    # The publication date the review record states: alone, since the content hash leaderboard.json
    # and llms.txt state covers it.
    review = out / "review.json"
    with edited(review, lambda t: re.sub(r'"published_on": "[0-9-]+"', '"published_on": "2030-01-01"', t)):
        seen.review_date = rescore(published_site)
    seen.restored = rescore(published_site)  # every file back: nothing differs
    return seen


def test_each_edited_file_is_reported_once_and_the_restored_site_not_at_all(edits):
    vendor = edits.vendor
    assert sorted(d.split(" · ", 1)[0] for d in edits.figures) == sorted(
        [
            "index.html",
            f"vendors/{vendor}.html",
            "leaderboard.json",
            f"vendors/{vendor}.json",
            "charts/overfit_gap.svg",
            "methodology.html",
            f"queries/{edits.query.name}",
            "charts/extra.svg",
            "llms.txt",
        ]
    ), edits.figures
    assert sorted(d.split(" · ", 1)[0] for d in edits.markup) == ["charts/overfit_gap.svg", "leaderboard.json"]
    assert edits.restored == []


def test_an_edited_figure_in_the_leaderboard_page_and_a_vendor_page_is_reported(edits):
    vendor, rank = edits.vendor, edits.rank
    assert edits.edited_pages == [True, True]
    # the first such cell on the page is the first screen's (table#summary)
    assert in_file(edits.figures, "index.html") == [
        f"index.html · vendor {vendor} · text in table#summary tr[data-vendor={vendor}] "
        f"td[data-metric={rank}] (changed since publication): published '0.999', derived '{edits.shown}'"
    ], edits.figures
    found = in_file(edits.figures, f"vendors/{vendor}.html")
    assert len(found) == 1 and found[0].startswith(f"vendors/{vendor}.html · vendor {vendor} · text in ")
    assert "[data-metric=hit_at_1]" in found[0] and "(changed since publication)" in found[0]
    assert found[0].endswith(f"published '0.111', derived '{edits.hit}'")
    # the command reports it and exits 1
    assert edits.command_exit == 1
    assert "0.111" in edits.command_output


def test_an_edited_figure_in_the_json_files_is_reported_figure_by_figure(edits):
    """leaderboard.json and vendors/<vendor>.json are compared figure by figure (a file whose text is
    the re-rendered text is not read as JSON: it has the same figures)."""
    vendor, rank, first = edits.vendor, edits.rank, edits.first_row
    assert in_file(edits.figures, "leaderboard.json", f"vendors/{vendor}.json") == [  # the two edited figures
        f"leaderboard.json · vendor {vendor} · metrics.{rank}.value: published 0.999, derived {edits.value!r}",
        f"vendors/{vendor}.json · vendor {vendor} · public_rows[{first['row_id']}].correct: "
        f"published {not first['correct']!r}, derived {first['correct']!r}",
    ], edits.figures


def test_edited_charts_methodology_and_query_pages_and_added_or_missing_files_are_reported(edits):
    found = in_file(edits.figures, "charts/overfit_gap.svg")
    assert len(found) == 1 and found[0].startswith("charts/overfit_gap.svg · vendor — · text"), found
    assert found[0].endswith(f"published '+90 pt', derived '{edits.label}'"), found
    found = in_file(edits.markup, "charts/overfit_gap.svg")  # a drawing, no text
    assert (
        len(found) == 1
        and re.match(r"charts/overfit_gap.svg · vendor — · line \d+ \(changed since publication\)", found[0])
        and "1.9" in found[0]
    ), found
    assert in_file(edits.figures, "methodology.html") == [
        "methodology.html · vendor — · text in table#constants (changed since publication): "
        "published '0.8', derived '0.9'"
    ], edits.figures
    found = in_file(edits.figures, f"queries/{edits.query.name}")
    assert len(found) == 1, edits.figures
    assert sorted(in_file(edits.figures, "charts/extra.svg", "llms.txt")) == sorted(
        [
            "charts/extra.svg · vendor — · (file): published 'present (not recorded at publication)', derived None",
            "llms.txt · vendor — · (file): published None, derived 'present'",
        ]
    ), edits.figures


def test_a_reformatted_data_file_whose_figures_agree_is_reported_by_its_digest(edits):
    found = in_file(edits.markup, "leaderboard.json")
    assert len(found) == 1 and found[0].startswith("leaderboard.json · vendor — · sha256 (figures agree): "), found
    # the publication date the review record states is what the re-rendering is dated by: an edit
    # to it re-renders identically, and the digest recorded at publication still catches it
    found = edits.review_date
    # and the content hash leaderboard.json and llms.txt state no longer holds for the files as re-rendered
    assert len(found) == 3 and found[2].startswith("review.json · vendor — · sha256: "), found
    assert found[0].startswith("leaderboard.json · vendor — · content_hash: "), found
    assert found[1].startswith("llms.txt · vendor — · line "), found


def test_first_difference_names_the_text_a_reader_sees_and_falls_back_to_lines():
    a = b'<table id="t"><tr data-vendor="exa"><td data-metric="hit_at_1"><span>0.5</span></td></tr></table>'
    b = a.replace(b"0.5", b"0.6")
    assert first_difference("x.html", a, b) == (
        "exa",
        "text in table#t tr[data-vendor=exa] td[data-metric=hit_at_1]",
        "0.5",
        "0.6",
    )
    # markup only (a sort key): the first differing line, excerpted
    c = a.replace(b"<span>", b'<span data-value="1">')
    vendor, item, published, derived = first_difference("x.html", a, c)
    assert (vendor, item) == (None, "line 1")
    # excerpted around the first character that differs
    assert published.startswith("…") and published.endswith('"hit_at_1"><span>0.5</span></td></tr></table>')
    assert derived.startswith("…") and derived.endswith('"hit_at_1"><span data-value="1">0.5</span></td></tr></table>')
    assert first_difference("x.bin", b"\xff\x00", b"\xff\x01")[1] == "bytes (sha256)"
