"""leaderboard.json read as an agent reads it, without the docs: with only its published schema,
every metric a vendor entry carries is described (with which way is better), and the file says
what it is (status, disclaimer, license, when it was published, a hash over the other files an
outsider can recompute) and what it was measured on (the cohort). Uses the session's published
snapshot (`published_site`)."""

from __future__ import annotations

import json
import subprocess

import jsonschema
from selectolax.lexbor import LexborHTMLParser

from bench_assets.aggregate.provenance import HASH_EXCLUDED, content_hash, folder_content_hash
from bench_assets.storage.warehouse import Warehouse


def _published(site) -> tuple[dict, dict]:
    board = json.loads((site.out / "leaderboard.json").read_text())
    schema = json.loads((site.out / "leaderboard.schema.json").read_text())
    return board, schema


def test_every_metric_a_vendor_entry_carries_is_described_with_its_direction(published_site):
    """Only the published JSON and its published schema: no bench code is consulted."""
    board, schema = _published(published_site)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    validator.validate(board)
    directions = set(schema["$defs"]["descriptor"]["properties"]["direction"]["enum"])
    described = {d["key"]: d for d in board["metrics"]}
    assert len(described) == len(board["metrics"]), "a metric is described twice"
    carried: set[str] = set()
    for entry in board["vendors"]:
        carried |= set(entry["metrics"])
        for groups in (entry.get("breakdown") or {}).values():
            for figures in groups.values():
                carried |= set(figures)
    assert carried, "the snapshot has no figure to describe"
    assert carried <= set(described), f"not described: {sorted(carried - set(described))}"
    for key in carried:
        assert described[key]["direction"] in directions, key
        assert described[key]["definition"] and described[key]["unit"] and described[key]["interval"], key
    # the directions an agent must not get wrong
    assert described["cost_per_correct_usd"]["direction"] == "lower_better"
    assert described["correct_rate"]["direction"] == "higher_better"
    assert described["latency_p50_ms"]["direction"] == "lower_better"
    assert described["cost_per_correct_usd"]["null_means"] == "undefined"
    assert described["ttr_median_hours"]["null_means"] == "not_reached"
    # the schema holds a descriptor to its contract
    broken = json.loads(json.dumps(board))
    del broken["metrics"][0]["direction"]
    assert not validator.is_valid(broken)
    broken["metrics"][0]["direction"] = "up"
    assert not validator.is_valid(broken)


def test_the_file_states_its_provenance_and_the_hash_an_outsider_recomputes(published_site):
    board, _ = _published(published_site)
    out = published_site.out
    assert board["schema_version"] == 5
    assert board["status"] == "simulated" and "simulated" in board["disclaimer"].lower()
    assert board["license"] == "CC-BY-4.0"
    assert "CC-BY-4.0" in (out / "methodology.html").read_text()
    # generated_at is when the publication was recorded, not the clock of whoever renders it
    assert board["generated_at"] == board["versions"]["publication"]["recorded_at"]
    # the content hash: the documented shell command in the folder, the folder read here, and the
    # SHA-256 per file the publications table recorded all give it
    command = (
        "find . -type f ! -path ./leaderboard.json ! -path ./llms.txt -printf '%P\\n' | LC_ALL=C sort "
        "| xargs -d '\\n' sha256sum | sha256sum"
    )
    assert command.replace("\\n", "\n") in board["content_hash_method"].replace("\\n", "\n")
    shell = subprocess.run(["bash", "-c", command], cwd=out, capture_output=True, text=True, check=True)
    assert board["content_hash"] == "sha256:" + shell.stdout.split()[0]
    assert folder_content_hash(out) == board["content_hash"]
    warehouse = Warehouse(published_site.home / "data" / "warehouse" / "bench.duckdb")
    recorded = warehouse.rows("publications", published_site.snapshot, columns=["path", "sha256"])
    assert set(HASH_EXCLUDED) <= set(recorded["path"])
    assert content_hash(zip(recorded["path"], recorded["sha256"])) == board["content_hash"]
    llms = (out / "llms.txt").read_text()
    assert board["content_hash"] in llms and board["disclaimer"] in llms


def test_the_cohort_says_what_the_figures_were_measured_on(published_site):
    board, _ = _published(published_site)
    cohort = board["cohort"]
    public = [json.loads(line) for line in (published_site.out / "public_split.jsonl").read_text().splitlines()]
    assert cohort["public_rows"] == len(public)
    assert cohort["cohort_size"] == cohort["public_rows"] + cohort["holdout_rows"] > cohort["public_rows"]
    assert cohort["holdout_fraction"] == 0.3
    dates = sorted(r["published_on"] for r in public if r.get("published_on"))
    pages = cohort["golden_pages_published"]
    assert (pages["first"], pages["last"]) == ((dates[0], dates[-1]) if dates else (None, None))
    assert pages["dated_rows"] + pages["undated_rows"] == len(public)


def test_llms_txt_and_the_column_headers_read_the_descriptors(published_site):
    board, _ = _published(published_site)
    llms = (published_site.out / "llms.txt").read_text()
    for d in board["metrics"]:
        assert f"- `{d['key']}` ({d['label']}): {d['definition']}. {d['direction']};" in llms, d["key"]
    page = LexborHTMLParser((published_site.out / "index.html").read_text())
    described = {d["key"]: d for d in board["metrics"]}
    # the metric columns (the others, e.g. position and letters, are not metrics of a vendor entry)
    titles = {
        th.attributes["data-metric"]: th.attributes.get("title") or ""
        for th in page.css("thead th[data-metric]")
        if th.attributes["data-metric"] in described
    }
    assert "cost_per_correct_usd" in titles
    for key, title in titles.items():
        assert title.startswith(described[key]["definition"]), key
    assert "lower is better" in titles["cost_per_correct_usd"]
    assert "higher is better" in titles[board["rank_metric"]]
