"""The cost–quality frontier as the session's published snapshot shows it: $ per 1,000 correct is
1000 × cost per correct with its interval, `pareto_optimal` follows the rule on the published
point estimates, the leaderboard page names the best at each budget, and the frontier chart is
drawn."""

from __future__ import annotations

import csv
import io
import json

from bench_assets.aggregate.frontier import COST_METRIC, board_bands


def test_the_published_frontier_follows_its_rule_and_the_page_names_the_best_at_each_budget(published_site):
    from selectolax.lexbor import LexborHTMLParser

    out = published_site.out
    board = json.loads((out / "leaderboard.json").read_text())
    rank = board["rank_metric"]
    assert board["frontier"]["cost_metric"] == COST_METRIC and board["frontier"]["quality_metric"] == rank
    assert any(d["key"] == COST_METRIC for d in board["metrics"])
    candidates = {}
    for e in board["vendors"]:
        assert isinstance(e["pareto_optimal"], bool)
        # both of the ranking figure's rows: the frontier prices every configuration on the same rows
        cost, per_k = e["metrics"].get("cost_per_correct_shared_usd"), e["metrics"].get(COST_METRIC)
        if per_k is not None:
            assert per_k["n"] == e["metrics"][rank]["n"]
        if cost is None:
            assert per_k is None and not e["pareto_optimal"]
            continue
        for key in ("value", "low", "high"):  # 1000 × the cost per correct, within the two roundings
            assert (per_k[key] is None) == (cost[key] is None)
            if cost[key] is not None:
                assert abs(per_k[key] - 1000 * cost[key]) <= 1000 * 5e-7 + 1e-9
        assert per_k["n"] == cost["n"]
        if e["status"] == "scored" and per_k["value"] is not None:
            candidates[e["vendor"]] = (per_k["value"], e["metrics"][rank]["value"])
    # the rule, written out here apart from aggregate.frontier: nothing at most as dear and at least as good
    expected = {
        v
        for v, (c, q) in candidates.items()
        if not any(c2 <= c and q2 >= q and (c2 < c or q2 > q) for w, (c2, q2) in candidates.items() if w != v)
    }
    assert expected and {e["vendor"] for e in board["vendors"] if e["pareto_optimal"]} == expected
    print("frontier:", {v: candidates[v] for v in sorted(expected, key=lambda v: candidates[v])})
    print("dominated:", {v: candidates[v] for v in sorted(set(candidates) - expected)})

    page = LexborHTMLParser((out / "index.html").read_text())
    rows = page.css("#budget-bands tbody tr")
    bands = board_bands(board)
    assert len(rows) == len(bands) and bands[-1].best
    best_in_rows = [[a.text() for a in r.css("td:nth-child(2) a")] for r in rows]
    assert best_in_rows == [list(b.best) for b in bands]
    print("bands:", [" | ".join(td.text() for td in r.css("td")) for r in rows])
    # the dearest band's best is the vendor with the highest ranking figure among the candidates
    assert bands[-1].best[0] in {v for v, (_, q) in candidates.items() if q == max(q for _, q in candidates.values())}
    assert page.css_first("#chart-frontier img").attributes["src"] == "charts/frontier.svg"
    assert (out / "charts" / "frontier.svg").read_bytes().startswith(b"<?xml")

    lines = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    assert all(f"{COST_METRIC}_low" in line and "public_usd_per_1000_correct" in line for line in lines)
