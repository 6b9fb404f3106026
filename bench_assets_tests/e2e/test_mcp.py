"""An agent asks `bench mcp` for a verdict through the official MCP SDK's own client.

Over stdio, `bench mcp` is spawned as a desktop client spawns it (the console script, the home in
$BENCH_HOME, the newest published snapshot by default); over streamable HTTP it serves a copy of
the published folder (`--dir`) with metric descriptors added to its leaderboard.json. Both run
against the session's published snapshot (`published_site`). Every answer is checked against the
published files themselves: the set that cannot be told apart from the best against pairwise.csv,
the figures against leaderboard.json, a row's verdicts against public_row_scores.csv; a holdout
row is unknown to it.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters

BENCH = str(Path(sys.executable).with_name("bench"))
FAMILY = "web_search"  # the session snapshot's kind (its id without the quarter)


def board_of(folder: Path) -> dict:
    return json.loads((folder / "leaderboard.json").read_text())


def told_apart_from_best(folder: Path, best: str) -> set[str]:
    """From pairwise.csv (not leaderboard.json): the vendors whose pair with `best` names no better one."""
    with (folder / "pairwise.csv").open(newline="") as f:
        return {
            (r["vendor_b"] if r["vendor_a"] == best else r["vendor_a"])
            for r in csv.DictReader(f)
            if best in (r["vendor_a"], r["vendor_b"]) and r["better"] == ""
        }


async def structured(client: Client, tool: str, arguments: dict) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def error_text(client: Client, tool: str, arguments: dict) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


def check_recommendation(answer: dict, folder: Path, links_under: str = "") -> None:
    board = board_of(folder)
    entries = {e["vendor"]: e for e in board["vendors"]}
    best = next(e["vendor"] for e in board["vendors"] if e.get("position") == 1)
    assert answer["snapshot_id"] == board["snapshot_id"] and answer["mode"] == board["mode"]
    assert answer["best"] == best and answer["rule"]["name"] == "paired"
    assert {c["vendor"] for c in answer["configurations"]} == {best} | told_apart_from_best(folder, best)
    assert answer["configurations"][0]["vendor"] == best
    for c in answer["configurations"]:
        metrics = entries[c["vendor"]]["metrics"]
        rank = metrics[board["rank_metric"]]
        assert {k: c["figure"][k] for k in ("value", "n", "low", "high")} == rank
        cost = metrics["cost_per_correct_usd"]
        # the published figure, read as published: 1000 x the cost per correct within the rounding
        assert {k: c["usd_per_1k_correct"][k] for k in ("value", "n", "low", "high")} == metrics["usd_per_1000_correct"]
        assert abs(c["usd_per_1k_correct"]["value"] - 1000 * cost["value"]) < 1e-3
        assert c["usd_per_1k_correct"]["low"] <= c["usd_per_1k_correct"]["value"] <= c["usd_per_1k_correct"]["high"]
        if c["vendor"] != best:
            diff = c["comparison_with_best"]["difference_vs_best"]
            assert diff["low"] <= diff["value"] <= diff["high"]
        assert c["evidence"] == [f"{links_under}vendors/{c['vendor']}.html", f"{links_under}vendors/{c['vendor']}.json"]
    for link in [*answer["evidence"], *(link for c in answer["configurations"] for link in c["evidence"])]:
        assert (folder / link.removeprefix(links_under)).is_file(), link
    assert answer["headline_eligible"] is False and "illustrative" in answer["caution"]


def test_an_agent_gets_a_verdict_over_stdio(published_site):
    site = published_site
    out = site.out
    board = board_of(out)
    env = {**os.environ, "BENCH_HOME": str(site.home)}
    server = StdioServerParameters(command=BENCH, args=["mcp"], env=env, cwd=str(site.home))

    async def session() -> None:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"recommend", "vendor_figures", "row_verdicts"}
            assert "comparisons.pairs" in tools["recommend"].description
            assert "`better` = null" in tools["recommend"].description

            answer = await structured(client, "recommend", {"task_type": FAMILY})
            check_recommendation(answer, out)
            # the descriptors leaderboard.json publishes (its `metrics` list), for the figures returned
            described = answer["metric_descriptors"]
            assert {board["rank_metric"], "correct_rate", "cost_per_correct_usd"} <= set(described)
            assert described["cost_per_correct_usd"]["direction"] == "lower_better"
            assert described["correct_rate"]["direction"] == "higher_better"

            wrong = await error_text(client, "recommend", {"task_type": "image_search"})
            assert "unknown task_type 'image_search'" in wrong
            assert FAMILY in wrong and "search" in wrong

            # a budget just under the best's $ per 1,000 correct: the best is left out, and named
            best = answer["configurations"][0]
            budget = best["usd_per_1k_correct"]["value"] * 0.999
            cheaper = await structured(client, "recommend", {"task_type": FAMILY, "budget_usd_per_1k": budget})
            assert best["vendor"] in {o["vendor"] for o in cheaper["over_budget"]}
            assert all(c["usd_per_1k_correct"]["value"] <= budget for c in cheaper["configurations"])
            assert best["vendor"] not in {c["vendor"] for c in cheaper["configurations"]}

            stratum = sorted(board["vendors"][0]["breakdown"]["stratum"])[0]
            by_stratum = await structured(client, "recommend", {"task_type": FAMILY, "stratum": stratum})
            assert by_stratum["rule"]["name"] == "interval_overlap"
            assert any("No paired comparison" in n for n in by_stratum["notes"])
            for c in by_stratum["configurations"]:
                published = next(e for e in board["vendors"] if e["vendor"] == c["vendor"])
                assert c["figure"]["value"] == published["breakdown"]["stratum"][stratum]["correct_rate"]["value"]
            assert "unknown stratum" in await error_text(
                client, "recommend", {"task_type": FAMILY, "stratum": "astrology"}
            )

            vendor = site.vendors[0]
            figures = await structured(client, "vendor_figures", {"vendor": vendor})
            assert figures["entry"] == next(e for e in board["vendors"] if e["vendor"] == vendor)
            assert all(vendor in (p["vendor_a"], p["vendor_b"]) for p in figures["comparisons"])
            assert "unknown vendor 'nobody'" in await error_text(client, "vendor_figures", {"vendor": "nobody"})

            with (out / "public_row_scores.csv").open(newline="") as f:
                published_rows = list(csv.DictReader(f))
            row_id = published_rows[0]["row_id"]
            row = await structured(client, "row_verdicts", {"row_id": row_id})
            expected = {r["vendor"]: r["correct"] == "True" for r in published_rows if r["row_id"] == row_id}
            assert {v["vendor"]: v["correct"] for v in row["verdicts"]} == expected
            assert row["golden"]["id"] == row_id and f"queries/{row_id}.html" in row["evidence"]
            one = await structured(client, "row_verdicts", {"row_id": row_id, "vendor": vendor})
            assert [v["vendor"] for v in one["verdicts"]] == [vendor]

            holdout = site.home / "data" / "private" / "holdout" / f"{site.snapshot}.jsonl"
            hidden = json.loads(holdout.read_text().splitlines()[0])["id"]
            assert "holdout rows are never published" in await error_text(client, "row_verdicts", {"row_id": hidden})

    anyio.run(session)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_agent_gets_a_verdict_over_streamable_http_from_a_folder_without_descriptors(published_site, tmp_path):
    copy = tmp_path / published_site.snapshot
    shutil.copytree(published_site.out, copy)
    board = board_of(copy)
    # a snapshot published before leaderboard.json described its metrics (schema < 3)
    del board["metrics"]
    (copy / "leaderboard.json").write_text(json.dumps(board))
    port = free_port()
    base_url = "https://bench.example.org/web_search/"
    command = [BENCH, "mcp", "--dir", str(copy), "--http", "--port", str(port), "--base-url", base_url]
    server = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "bench mcp --http did not listen within 60 s"
                time.sleep(0.2)

        async def session() -> None:
            async with Client(url) as client:
                answer = await structured(client, "recommend", {"task_type": FAMILY})
                check_recommendation(answer, copy, links_under=base_url)
                assert answer["metric_descriptors"] is None  # and the answer says where they are defined
                vendor = published_site.vendors[0]
                figures = await structured(client, "vendor_figures", {"vendor": vendor})
                assert figures["metric_descriptors"] is None

        anyio.run(session)
    finally:
        server.terminate()
        server.wait(timeout=30)
