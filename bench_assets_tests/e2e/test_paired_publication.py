"""What the session's published snapshot (`published_site`: three vendors on the real simulator,
materialized through Dagster) says about which vendors differ, and with which versions it was made.

The paired comparisons are read back from every surface (leaderboard.json, pairwise.csv, the
warehouse's `vendor_comparisons`, the pages, llms.txt, the Dagster metadata) and re-derived from
the published counts alone; the recorded versions are checked against the checkout and the files
they describe, and `bench rescore` is shown to warn when its own environment differs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
from pathlib import Path

import dagster as dg
import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from bench_assets.aggregate.comparisons import ranking_records, vendor_comparisons
from bench_assets.fetch import versions as versions_module
from bench_assets.metrics import PairedCounts, compare_pairs, paired_ranking, ranking_from_comparisons
from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets_tests.helpers import REPO, warehouse_of, warehouse_rows


def board_of(site) -> dict:
    return json.loads((site.out / "leaderboard.json").read_text())


def scored(board: dict) -> list[dict]:
    return sorted((e for e in board["vendors"] if e["status"] == "scored"), key=lambda e: e["position"])


def page(path: Path) -> HTMLParser:
    return HTMLParser(path.read_text(encoding="utf-8"))


# ##### WHICH VENDORS DIFFER


def test_every_pair_is_published_the_same_on_every_surface(published_site):
    board = board_of(published_site)
    vendors = [e["vendor"] for e in scored(board)]
    section = board["comparisons"]
    assert section["vendors"] == vendors and section["correction"] == "holm" and section["alpha"] == 0.05
    assert section["task_types"] == board["ranking"]["task_types"]
    pairs = {(p["vendor_a"], p["vendor_b"]): p for p in section["pairs"]}
    assert len(pairs) == len(vendors) * (len(vendors) - 1) // 2

    # pairwise.csv: the same pairs, cell for cell
    published = {
        (r["vendor_a"], r["vendor_b"]): r
        for r in csv.DictReader(io.StringIO((published_site.out / "pairwise.csv").read_text()))
    }
    assert set(published) == set(pairs)
    for key, p in pairs.items():
        r = published[key]
        assert [int(r[c]) for c in ("n", "both_correct", "a_only", "b_only", "neither")] == [
            p[c] for c in ("n", "both_correct", "a_only", "b_only", "neither")
        ]
        assert float(r["p_adjusted"]) == pytest.approx(p["p_adjusted"]) and (r["better"] or None) == p["better"]
        assert float(r["difference"]) == pytest.approx(p["difference"]["value"])

    # the warehouse's table holds them, and they are the row scores' paired counts
    stored = warehouse_rows(
        published_site.home,
        "SELECT vendor_a, vendor_b, n, a_only, b_only, p_adjusted, better FROM vendor_comparisons WHERE snapshot_id = ?",
        [published_site.snapshot],
    )
    assert {(a, b): (n, x, y, better) for a, b, n, x, y, _, better in stored} == {
        k: (p["n"], p["a_only"], p["b_only"], p["better"]) for k, p in pairs.items()
    }
    scores = warehouse_of(published_site.home).rows("row_scores", published_site.snapshot)
    recount = vendor_comparisons(published_site.snapshot, scores)
    assert {(r.vendor_a, r.vendor_b): (r.a_only, r.b_only) for r in recount.itertuples()} == {
        k: (p["a_only"], p["b_only"]) for k, p in pairs.items()
    }
    # every vendor answered every ranking row: each pair is compared on all of them
    records = ranking_records(scores, section["task_types"])
    assert {p["n"] for p in pairs.values()} == {len(records) // len(vendors)}


def test_ranks_letters_and_power_follow_from_the_published_counts_alone(published_site):
    """What a researcher can do with pairwise.csv: every p-value, rank range, letter and the
    minimum detectable difference come back from the counts."""
    board = board_of(published_site)
    rows = list(csv.DictReader(io.StringIO((published_site.out / "pairwise.csv").read_text())))
    counts = [
        PairedCounts(
            r["vendor_a"], r["vendor_b"], *(int(r[c]) for c in ("both_correct", "a_only", "b_only", "neither"))
        )
        for r in rows
    ]
    compared = compare_pairs(counts)
    assert [c.p_value for c in compared] == pytest.approx([float(r["p_value"]) for r in rows])
    entries = scored(board)
    again = ranking_from_comparisons([e["vendor"] for e in entries], compared)
    for position, e in enumerate(entries, start=1):
        assert (e["rank_range"]["best"], e["rank_range"]["worst"]) == again.rank_ranges[e["vendor"]]
        assert e["rank_range"]["best"] <= position <= e["rank_range"]["worst"]
        assert e["rank_letters"] == again.letters[e["vendor"]]
    power = board["power"]
    assert power["pairs"] == len(rows) and power["alpha_strictest"] == pytest.approx(0.05 / len(rows))
    assert power["minimum_detectable_difference"] == pytest.approx(again.power.minimum_detectable_difference, abs=1e-6)
    assert "percentage points" in power["note"] and "80%" in power["note"]
    # and from the row scores, the same ranking (the pure function of (vendor, row, correct) records)
    scores = warehouse_of(published_site.home).rows("row_scores", published_site.snapshot)
    direct = paired_ranking(ranking_records(scores, board["comparisons"]["task_types"]))
    assert direct.letters == again.letters and direct.rank_ranges == again.rank_ranges


def test_the_pages_say_which_vendors_differ_and_what_tied_means(published_site):
    out, board = published_site.out, board_of(published_site)
    section, power = board["comparisons"], board["power"]
    index = page(out / "index.html")
    told = sum(1 for p in section["pairs"] if p["better"])
    assert index.css_first("#pairs-told-apart").text() == f"{told} of {len(section['pairs'])} pairs are told apart."
    assert power["note"] in index.css_first("#power").text()
    assert index.css_first("#chart-pairwise img").attributes["src"] == "charts/pairwise.svg"
    assert len(index.css("#pairs tbody tr")) == len(section["pairs"])
    svg = (out / "charts" / "pairwise.svg").read_text()
    for e in scored(board):
        assert f"{e['vendor']} ({e['rank_letters']})" in svg  # the row labels carry the letters
        row = index.css_first(f'#leaderboard tr[data-vendor="{e["vendor"]}"]')
        assert row.css_first('td[data-metric="rank_letters"]').text(strip=True) == e["rank_letters"]
        vendor_page = page(out / "vendors" / f"{e['vendor']}.html")
        others = [tr.attributes["data-vendor"] for tr in vendor_page.css("#pairs tbody tr")]
        assert sorted(others) == sorted(x["vendor"] for x in scored(board) if x["vendor"] != e["vendor"])
    for text in (index.text(), (out / "limitations.html").read_text(), (out / "methodology.html").read_text()):
        assert "tie group" not in text.lower() and "not a formal test" not in text
    limitations = page(out / "limitations.html").text()
    assert "Holm-adjusted" in limitations and power["note"] in limitations
    llms = (out / "llms.txt").read_text()
    assert "pairwise.csv" in llms and power["note"] in llms and "rank_group" not in llms
    for e in scored(board):
        assert f"letters {e['rank_letters']}" in llms


def latest_metadata(instance, asset: str) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None, f"{asset} was never materialized"
    return event.asset_materialization.metadata


def test_dagster_shows_the_paired_comparison(published_site):
    meta = latest_metadata(published_site.instance, "vendor_leaderboard")
    board = board_of(published_site)
    assert meta["pairs_compared"].value == len(board["comparisons"]["pairs"])
    assert meta["pairs_told_apart"].value == sum(1 for p in board["comparisons"]["pairs"] if p["better"])
    assert board["power"]["note"] in meta["leaderboard"].value
    assert "chart_pairwise" in latest_metadata(published_site.instance, "published_snapshot")


# ##### VERSIONS


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_versions_are_recorded_at_fetch_and_publication_and_published(published_site):
    board = board_of(published_site)
    versions = board["versions"]
    publication = versions["publication"]
    assert publication["code"]["commit"] == git("rev-parse", "HEAD")
    assert publication["code"]["dirty"] == bool(git("status", "--porcelain"))
    assert publication["code"]["source"] == "git checkout"
    import numpy
    import pandas
    import scipy

    assert (
        publication["packages"]["numpy"] == numpy.__version__ and publication["packages"]["scipy"] == scipy.__version__
    )
    assert publication["packages"]["pandas"] == pandas.__version__ and publication["packages"]["duckdb"]
    assert set(publication["adapters"]) == set(published_site.vendors)
    # the input files' digests are the files'
    snapshot_dir = published_site.home / "data" / "snapshots" / published_site.snapshot
    for label, path in (
        ("manifest", snapshot_dir / "manifest.yaml"),
        ("public_split", snapshot_dir / "public_split.jsonl"),
    ):
        assert publication["files"][label]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), label
    golden = published_site.home / "data" / "private" / "golden" / f"{published_site.snapshot}.jsonl"
    assert publication["files"]["golden_set"] == {
        "path": f"private:golden/{published_site.snapshot}.jsonl",
        "sha256": hashlib.sha256(golden.read_bytes()).hexdigest(),
    }
    # every vendor's fetch sent its requests once and recorded the versions it ran with
    assert set(versions["fetch"]) == set(published_site.vendors)
    for vendor, runs in versions["fetch"].items():
        assert len(runs) == 1 and runs[0]["responses_sent"] > 0
        assert runs[0]["code"]["commit"] == publication["code"]["commit"]
        assert set(runs[0]["adapters"]) == {vendor}
    # the disclosures page shows them
    disclosures = page(published_site.out / "disclosures.html")
    assert publication["code"]["commit"] in disclosures.css_first("#publication-versions").text()
    shown = {tr.attributes["data-file"]: tr.text() for tr in disclosures.css("#input-files tbody tr")}
    assert publication["files"]["manifest"]["sha256"] in shown["manifest"]
    assert len(disclosures.css("#fetch-runs tbody tr")) == len(published_site.vendors)
    limitations = page(published_site.out / "limitations.html")
    assert limitations.css_first('a[href="disclosures.html#versions"]') is not None


def test_rescore_warns_when_its_versions_differ_from_the_publications(published_site, monkeypatch):
    """One rescore with two versions changed warns of exactly those two: every other version of this
    environment (Python, each package, adapter and input file) matches the publication's record, so
    an unchanged environment is warned of nothing. (That an untouched site rescores to no
    differences is test_rescore.py's claim; here it holds with the versions changed too.)"""
    publication = board_of(published_site)["versions"]["publication"]
    real = versions_module.package_versions()
    monkeypatch.setattr(versions_module, "package_versions", lambda: {**real, "numpy": "0.0.1"})
    monkeypatch.setattr(
        versions_module, "code_version", lambda: {"commit": "unknown", "dirty": None, "source": "unknown: a wheel"}
    )
    report = rescore_snapshot(published_site.home, published_site.snapshot)
    assert report.differences == [], report.summary()  # versions are warned about, not differences
    assert report.warnings == [
        f"code commit unknown differs from the publication's {publication['code']['commit']}",
        f"package numpy: 0.0.1 differs from the publication's {real['numpy']}",
    ], report.summary()
    assert "warning: package numpy" in report.summary()


def test_an_installed_package_without_a_checkout_records_an_unknown_commit(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "bench_assets"
    package.mkdir(parents=True)
    monkeypatch.delenv("BENCH_CODE_COMMIT", raising=False)
    monkeypatch.setattr(versions_module, "_pip_vcs_commit", lambda: None)
    code = versions_module.code_version(package)
    assert code["commit"] == "unknown" and code["dirty"] is None
    assert "wheel" in code["source"]
    monkeypatch.setenv("BENCH_CODE_COMMIT", "0123abc")
    assert versions_module.code_version(package) == {
        "commit": "0123abc",
        "dirty": None,
        "source": "$BENCH_CODE_COMMIT, set where the code was installed",
    }
    monkeypatch.setattr(versions_module, "_pip_vcs_commit", lambda: "f" * 40)
    assert versions_module.code_version(package)["commit"] == "f" * 40
    # a checkout where git itself fails is "unknown" with the reason, not a crash
    broken = tmp_path / "broken" / "bench_assets"
    broken.mkdir(parents=True)
    (broken.parent / ".git").write_text("gitdir: /nowhere\n")
    code = versions_module.code_version(broken)
    assert code["commit"] == "unknown" and code["source"].startswith("unknown: git failed")
