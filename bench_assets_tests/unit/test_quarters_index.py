"""The index above the snapshot folders: every published quarter with its versions and errata,
the ranking figure and overfit gap per vendor and quarter, the tuning signal where a gap stays
above zero, and the paired change on public rows carried over (read from the folders alone)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from bench_assets.metrics.paired import mcnemar_exact_p
from bench_assets.publish.quarters import write_quarters_index


def fig(value, low, high, n=100):
    return {"value": value, "low": low, "high": high, "n": n}


def publish(root: Path, snapshot: str, gaps: dict[str, tuple], correct: dict[str, dict[str, bool]], errata=()):
    folder = root / snapshot
    folder.mkdir(parents=True)
    board = {
        "snapshot_id": snapshot,
        "title": snapshot,
        "mode": "simulated",
        "rank_metric": "correct_rate_shared",
        "vendors": [
            {
                "vendor": v,
                "status": "scored",
                "rank_range": {"best": 1, "worst": 2},
                "metrics": {"correct_rate_shared": fig(0.8, 0.7, 0.9), "overfit_gap": fig(*gap)},
            }
            for v, gap in gaps.items()
        ],
    }
    (folder / "leaderboard.json").write_text(json.dumps(board))
    (folder / "errata.json").write_text(json.dumps(list(errata)))
    with (folder / "public_row_scores.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row_id", "vendor", "correct"])
        for vendor, rows in correct.items():
            for row_id, ok in rows.items():
                w.writerow([row_id, vendor, ok])


def test_the_index_lists_every_quarter_and_names_a_gap_that_stays_positive(tmp_path):
    rows_q3 = {f"r{i}": i % 2 == 0 for i in range(20)}
    rows_q4 = {**{f"r{i}": True for i in range(15)}, **{f"n{i}": False for i in range(5)}}  # r15..r19 retired
    publish(
        tmp_path, "web_search-2026-q3", {"a": (0.1, 0.02, 0.2), "b": (0.1, -0.05, 0.2)}, {"a": rows_q3, "b": rows_q3}
    )
    publish(
        tmp_path, "web_search-2026-q4", {"a": (0.12, 0.03, 0.22), "b": (0.0, -0.1, 0.1)}, {"a": rows_q4, "b": rows_q3}
    )
    erratum = {"id": "E1", "date": "2026-10-02", "vendor": "a", "what": "price", "version": "web_search-2026-q3-e1"}
    publish(tmp_path, "web_search-2026-q3-e1", {"a": (0.1, 0.02, 0.2), "b": (0.1, -0.05, 0.2)}, {}, [erratum])
    written = write_quarters_index(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "index.html",
        "quarters.json",
        "quarters.csv",
        "trends/a.svg",
        "trends/b.svg",
    ]
    record = json.loads((tmp_path / "quarters.json").read_text())
    quarters = record["quarters"]
    assert [q["snapshot_id"] for q in quarters] == ["web_search-2026-q3", "web_search-2026-q4"]
    # the erratum stays with its quarter; the quarter links its newest version
    assert quarters[0]["versions"] == ["web_search-2026-q3", "web_search-2026-q3-e1"]
    assert quarters[0]["folder"] == "web_search-2026-q3-e1" and quarters[0]["errata"][0]["id"] == "E1"
    # a's gap is above zero in both quarters: the tuning signal; b's never is
    assert record["tuning_signals"] == [{"vendor": "a", "quarters": ["web_search-2026-q3", "web_search-2026-q4"]}]
    html = (tmp_path / "index.html").read_text()
    assert "tuning to the published set" in html and 'href="web_search-2026-q4/index.html"' in html
    # the trend per vendor: a chart of both figures per quarter; a's says the gap stays above zero
    assert '<img src="trends/a.svg"' in html and '<img src="trends/b.svg"' in html
    assert "interval lies above zero in web_search-2026-q3, web_search-2026-q4" in html
    assert "does not stay above zero" in html.split('id="trend-b"')[1].split("</figure>")[0]
    chart_a, chart_b = ((tmp_path / "trends" / f"{v}.svg").read_text() for v in "ab")
    assert "tuning signal" in chart_a and "tuning signal" not in chart_b
    assert "2026-q3" in chart_a and "2026-q4" in chart_a  # one point per quarter, labelled
    # vermillion (Okabe-Ito) where a's gap interval is above zero; b's never is
    assert "#d55e00" in chart_a.lower() and "#d55e00" not in chart_b.lower()
    # the paired change on the rows carried over (r0..r14), from the newest version of Q3... which
    # holds no row scores here, so no pair is formed with it
    assert record["paired_changes"] == []
    csv_rows = list(csv.DictReader((tmp_path / "quarters.csv").open()))
    assert {(r["snapshot_id"], r["vendor"], r["overfit_gap_positive"]) for r in csv_rows} >= {
        ("web_search-2026-q4", "a", "True"),
        ("web_search-2026-q4", "b", "False"),
    }


def test_the_paired_change_is_on_the_rows_both_quarters_scored(tmp_path):
    rows_q3 = {f"r{i}": i % 2 == 0 for i in range(20)}  # r0, r2, ... correct
    rows_q4 = {**{f"r{i}": True for i in range(15)}, **{f"n{i}": False for i in range(5)}}
    publish(tmp_path, "web_search-2026-q3", {"a": (0.0, -0.1, 0.1)}, {"a": rows_q3})
    publish(tmp_path, "web_search-2026-q4", {"a": (0.0, -0.1, 0.1)}, {"a": rows_q4})
    write_quarters_index(tmp_path)
    (change,) = json.loads((tmp_path / "quarters.json").read_text())["paired_changes"]
    # carried over: r0..r14; correct only after: the odd ones among them (7), only before: none
    assert change["rows"] == 15 and change["correct_only_before"] == 0 and change["correct_only_after"] == 7
    assert change["mcnemar_p"] == round(mcnemar_exact_p(0, 7), 6)
    assert abs(change["change"] - 7 / 15) < 1e-6


def test_two_publications_writing_the_index_at_once_both_succeed(tmp_path):
    """Two snapshots published beside each other in one home both rewrite the index above them
    (and its trend charts): one must not delete the other's charts while it writes them."""
    import subprocess
    import sys

    rows = {f"r{i}": i % 2 == 0 for i in range(20)}
    vendors = {f"v{i}": (0.1, 0.02, 0.2) for i in range(12)}  # enough charts to overlap
    for snapshot in ("web_search-2026-q3", "web_search-2026-q4"):
        publish(tmp_path, snapshot, vendors, dict.fromkeys(vendors, rows))
    writer = (
        "import sys; from pathlib import Path; from bench_assets.publish.quarters import write_quarters_index\n"
        "for _ in range(3): write_quarters_index(Path(sys.argv[1]))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", writer, str(tmp_path)], stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert sorted(p.name for p in (tmp_path / "trends").iterdir()) == sorted(f"v{i}.svg" for i in range(12))
    assert not list(tmp_path.glob("*.lock"))  # the lock lives beside the site, not in it
