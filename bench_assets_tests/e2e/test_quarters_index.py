"""Publication writes the index of every published quarter above the snapshot folders."""

from __future__ import annotations

import csv
import json
import re


def test_publication_writes_the_quarters_index_from_the_published_files(published_site):
    root = published_site.out.parent
    record = json.loads((root / "quarters.json").read_text())
    (quarter,) = [q for q in record["quarters"] if q["snapshot_id"] == published_site.snapshot]
    board = json.loads((root / quarter["folder"] / "leaderboard.json").read_text())
    rows = [r for r in csv.DictReader((root / "quarters.csv").open()) if r["snapshot_id"] == published_site.snapshot]
    assert {r["vendor"] for r in rows} == {v["vendor"] for v in board["vendors"]}
    for r in rows:
        v = next(v for v in board["vendors"] if v["vendor"] == r["vendor"])
        gap = v["metrics"].get("overfit_gap") or {}
        assert (r["overfit_gap"] or None) == (None if gap.get("value") is None else str(gap["value"]))
        assert r["rank_best"] == str(v["rank_range"]["best"]) if v.get("rank_range") else True
    html = (root / "index.html").read_text()
    for href in re.findall(r'href="([^"#:]+)"', html):
        assert (root / href).exists(), href  # every link of the index resolves
    # a trend chart per published vendor, each image of the index there
    srcs = re.findall(r'<img src="([^"#:]+)"', html)
    assert {s.removeprefix("trends/").removesuffix(".svg") for s in srcs} >= {
        r["vendor"] for r in rows if r["rank_value"]
    }
    assert all((root / src).exists() for src in srcs)
