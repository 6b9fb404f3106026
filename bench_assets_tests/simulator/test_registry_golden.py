"""A registry-sourced snapshot end to end on the embedded default, and the registries' bad input.

The simulator serves the real registry extracts (bench_assets/simulator/registry_extracts) at the
registries' hosts and a page for every record; golden rows are drawn from them, verified against
the pages, split, fetched from simulated vendors, scored and published. A registry that is down,
rate-limits, changes its format or returns a record without a required field is recorded in
`registry_responses` and gives no row; the other registries' rows are drawn as usual.
"""

from __future__ import annotations

import json
import shutil
import threading
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import dagster as dg
import httpx
import pytest
import yaml

from bench_assets.errors import BenchInputError
from bench_assets.golden.rows import load_golden_file, split_groups
from bench_assets.manifest import load_manifest
from bench_assets.review.business_days import fixed_today
from bench_assets.review.quarter import draw_next_quarter
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    make_home,
    materialize,
    register_partitions,
    run_whole_snapshot,
    warehouse_of,
    warehouse_rows,
)

SNAPSHOT = "registry_search-2026-q4"
VENDORS = ["serper", "exa"]
REGISTRIES = {
    "sec_edgar": {"stratum": "sec_filings", "rows": 12, "options": {"tickers": ["TSLA"], "fact_tickers": ["SNOW"]}},
    "rfc_editor": {"stratum": "ietf_rfcs", "rows": 12},
    "peps": {"stratum": "python_peps", "rows": 12},
    "arxiv": {"stratum": "arxiv_papers", "rows": 9, "options": {"search_query": "all:GAN", "max_results": 10}},
    "federal_register": {"stratum": "federal_register", "rows": 3, "options": {"days": 7}},
}


def registry_manifest(registries=None, mix=True):
    def edit(data):
        data["snapshot_id"] = SNAPSHOT
        data["golden"] = {
            "source": "registry",
            "rows_per_stratum": 9,
            "contact": "bench-ops@example.org",
            "registries": registries or REGISTRIES,
            "mix": [{"source": "planted_demo", "strata": ["finance"], "rows_per_stratum": 15}] if mix else [],
        }
        data["decoys"] = {"source": "registry", "ratio": 1.0}
        data["candidates"] = {"source": "registry"}

    return edit


@pytest.fixture(scope="module")
def registry_run(tmp_path_factory, simulator):
    httpx.post(f"{simulator.base_url}/_sim/faults", json={}, timeout=5)
    home = make_home(tmp_path_factory.mktemp("registry"), VENDORS, snapshot=SNAPSHOT, edit=registry_manifest())
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, simulator.base_url, VENDORS, snapshot=SNAPSHOT)
        yield home


def test_registry_rows_are_drawn_with_provenance_and_verified(registry_run):
    home = registry_run
    rows = warehouse_rows(home, "SELECT stratum, provenance, task_type, verification_json FROM golden_rows")
    strata = {r[0] for r in rows}
    assert {"sec_filings", "ietf_rfcs", "python_peps", "arxiv_papers", "federal_register", "finance"} <= strata
    registry = [r for r in rows if r[1] == "registry"]
    assert {r[2] for r in registry} == {"search", "extract", "answer"}
    for _, _, _, verification in registry:
        source = json.loads(verification)["source_record"]
        assert source["tier"] in ("T1", "T2") and len(source["record_sha256"]) == 64 and source["record_id"]
    assert {r[1] for r in rows if r[0] == "finance"} == {"planted"}  # mixed sources, strata per source
    failed = warehouse_rows(home, "SELECT row_id, failures_json FROM golden_verifications WHERE NOT passed")
    assert failed == [] or (all(r[0] for r in failed) and False), failed
    archived = warehouse_rows(home, "SELECT registry, outcome FROM registry_responses WHERE final")
    assert {r[0] for r in archived} == set(REGISTRIES) and {r[1] for r in archived} == {"ok"}


def test_registry_snapshot_scores_and_publishes(registry_run):
    home = registry_run
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    scored = {e["vendor"]: e for e in board["vendors"] if e["status"] == "scored"}
    assert set(scored) == set(VENDORS)
    by_stratum = warehouse_rows(
        home,
        "SELECT stratum, avg(CASE WHEN hit_at_10 THEN 1 ELSE 0 END) FROM row_scores "
        "WHERE task_type = 'search' GROUP BY stratum ORDER BY stratum",
    )
    print("hit@10 by stratum", by_stratum)
    registry_hits = [v for s, v in by_stratum if s != "finance"]
    assert sum(registry_hits) / len(registry_hits) > 0.3  # the vendors' indexes find registry pages


def test_redrawing_reuses_the_archive(registry_run, simulator, sim_logs):
    home = registry_run
    before = warehouse_rows(home, "SELECT row_id FROM golden_rows ORDER BY row_id")
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, ("golden_rows",), SNAPSHOT)
    assert warehouse_rows(home, "SELECT row_id FROM golden_rows ORDER BY row_id") == before
    asked = [r for r in sim_logs.requests() if r["host"] in ("www.rfc-editor.org", "peps.python.org")]
    assert asked == []  # re-derived from registry_responses, nothing fetched again


# ##### BAD INPUT: every failure is evidence, and its rows are not drawn


class _Registry(BaseHTTPRequestHandler):
    """A local registry answering with what a test sets: (status, body) by path."""

    answers: ClassVar[dict[str, tuple[int, str]]] = {}

    def do_GET(self):
        status, body = self.answers.get(self.path.split("?")[0], (404, "{}"))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture()
def local_registry():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _golden(tmp_path, simulator, registries, faults=None):
    httpx.post(f"{simulator.base_url}/_sim/faults", json=faults or {}, timeout=5)
    home = make_home(tmp_path, VENDORS, snapshot=SNAPSHOT, edit=registry_manifest(registries, mix=False))
    try:
        with dg.instance_for_test() as instance:
            register_partitions(instance, [SNAPSHOT])
            result = materialize(instance, home, simulator.base_url, GOLDEN_STAGES[:2], SNAPSHOT, raise_on_error=False)
    finally:
        httpx.post(f"{simulator.base_url}/_sim/faults", json={}, timeout=5)
    return home, result


def test_a_registry_down_or_rate_limiting_is_evidence_and_others_are_drawn(tmp_path, simulator):
    faults = {"seed": "down", "vendors": {"peps": {"server_error": 1.0}, "arxiv": {"rate_limited": 1.0}}}
    home, result = _golden(tmp_path, simulator, REGISTRIES, faults)
    assert result.success
    outcomes = dict(warehouse_rows(home, "SELECT registry, outcome FROM registry_responses WHERE final"))
    assert outcomes["peps"].startswith("http_5") and outcomes["arxiv"] == "rate_limited"
    attempts = warehouse_rows(home, "SELECT count(*) FROM registry_responses WHERE registry = 'peps'")[0][0]
    assert attempts == 3  # retried, each attempt kept
    strata = {r[0] for r in warehouse_rows(home, "SELECT DISTINCT stratum FROM golden_rows")}
    assert "python_peps" not in strata and "arxiv_papers" not in strata and "ietf_rfcs" in strata
    checks = [
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.asset_check_evaluation_data.check_name == "every_registry_gave_candidates"
    ]
    assert checks and not checks[0].passed
    meta = next(m for m in result.asset_materializations_for_node("golden_rows")).metadata
    report = {r["registry"]: r for r in meta["registry_candidates_json"].value}
    assert report["peps"]["candidate_rows"] == 0 and report["rfc_editor"]["candidate_rows"] > 0


def test_a_changed_format_or_a_record_without_a_field_is_not_drawn(tmp_path, simulator, local_registry):
    peps = json.loads(
        (
            __import__("pathlib").Path(__file__).parents[2] / "bench_assets/simulator/registry_extracts/peps/peps.json"
        ).read_text()
    )
    del peps["8"]["title"]  # a record without a required field
    _Registry.answers = {
        "/peps.json": (200, json.dumps(peps)),
        "/rfc-index.xml": (200, '{"the index": "is JSON now"}'),  # the format changed
    }
    registries = {
        "peps": {"stratum": "python_peps", "rows": 200, "options": {"endpoint": f"{local_registry}/peps.json"}},
        "rfc_editor": {"stratum": "ietf_rfcs", "options": {"endpoint": f"{local_registry}/rfc-index.xml"}},
    }
    home, result = _golden(tmp_path, simulator, registries)
    assert result.success
    final = {
        r[0]: r[1:]
        for r in warehouse_rows(
            home, "SELECT registry, outcome, records, rejected_json FROM registry_responses WHERE final"
        )
    }
    assert final["rfc_editor"][0] == "format_changed"
    assert final["peps"][0] == "ok" and final["peps"][1] == 31
    assert ["PEP 8", "no title"] in json.loads(final["peps"][2])
    ids = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM golden_rows")}
    assert not any("pep-8-" in i for i in ids) and any("pep-9-" in i for i in ids)


# ##### THE NEXT QUARTER: a windowed registry's stratum drawn fresh

NEXT = "registry_search-2027-q1"
FR_EXTRACT = Path(__file__).parents[2] / "bench_assets/simulator/registry_extracts/federal_register/documents.json"


def fr_documents(new: int, day: date) -> str:
    """A Federal Register documents.json answer: the archived real record (2020-28567, drawn in the
    last quarter), then `new` documents published on `day`. The new ones are ours, written in that
    record's shape (the only record any stored copy of the API holds, SOURCES.md): they prove the
    draw's logic, not anything about the registry."""
    real = json.loads(FR_EXTRACT.read_text())["results"][0]
    made = [
        {
            **real,
            "document_number": f"{day.year}-9{i:04d}",
            "title": f"Test notice {i} published in the window after the last draw",
            "abstract": f"This test notice {i} stands for a document published after the last draw.",
            "publication_date": day.isoformat(),
            "html_url": f"https://www.federalregister.gov/documents/{day:%Y/%m/%d}/{day.year}-9{i:04d}/test-notice-{i}",
        }
        for i in range(new)
    ]
    return json.dumps({"count": 1 + new, "results": [real, *made]})


def _next_quarter_home(tmp_path, registry_run, local_registry) -> Path:
    """A copy of the registry snapshot's home whose Federal Register is the local registry."""
    home = tmp_path / "home"
    shutil.copytree(registry_run, home)
    path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    data["golden"]["registries"]["federal_register"]["options"]["endpoint"] = f"{local_registry}/api/v1/documents.json"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return home


def test_the_next_quarter_draws_a_windowed_registry_stratum_fresh(tmp_path, registry_run, simulator, local_registry):
    """Before, the next quarter's Federal Register rows came from what the last draw left (documents
    of the last quarter's window) and only a quarter of them rotated: the stratum grew stale."""
    home = _next_quarter_home(tmp_path, registry_run, local_registry)
    drawn_on = warehouse_rows(home, "SELECT max(started_at)::DATE FROM registry_responses")[0][0]
    day = drawn_on + timedelta(days=91)
    _Registry.answers = {"/api/v1/documents.json": (200, fr_documents(4, day))}
    with dg.instance_for_test() as instance, fixed_today(day):
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, ("next_quarter",), SNAPSHOT)
    # the registry was asked for the documents published since its last draw, up to the draw's day
    asked = warehouse_rows(
        home, "SELECT request_json, outcome, records FROM registry_responses WHERE snapshot_id = ? AND final", [NEXT]
    )
    assert len(asked) == 1 and asked[0][1:] == ("ok", 5)
    params = json.loads(asked[0][0])["params"]
    assert params["conditions[publication_date][gte]"] == drawn_on.isoformat()
    assert params["conditions[publication_date][lte]"] == day.isoformat()

    private = home / "data" / "private"
    last = {r.id: r for r in load_golden_file(private / "golden" / f"{SNAPSHOT}.jsonl")}
    nxt = {r.id: r for r in load_golden_file(private / "golden" / f"{NEXT}.jsonl")}
    plan = yaml.safe_load((private / "rotation" / f"{SNAPSHOT}.yaml").read_text())
    retired = {r["row_id"] for r in plan["retire"]}
    old_fr = {i for i, r in last.items() if r.stratum == "federal_register"}
    new_fr = {i for i, r in nxt.items() if r.stratum == "federal_register"}
    # the stratum retires whole and is replaced, group for group, by documents of the new window
    assert old_fr and old_fr <= retired and not old_fr & new_fr
    groups = len(set(split_groups([last[i] for i in old_fr]).values()))
    assert len(set(split_groups([nxt[i] for i in new_fr]).values())) == groups
    assert all(nxt[i].cohort == "2027-q1" and nxt[i].published_on == day for i in new_fr)
    assert all("2020-28567" not in i for i in new_fr)  # drawn before: never again
    # the other strata rotate their quarter as before, and the plan is what was applied
    others = [i for i in last if i not in old_fr]
    assert 0 < len(retired - old_fr) < len(others) / 2
    assert {rep["row_id"] for rep in plan["replacements"]} == set(nxt) - set(last)
    assert plan["fresh_strata"]["federal_register"].startswith(f"federal_register asked for {drawn_on}..{day}: ok 1")
    # the next manifest asks the registry again for the quarter after
    manifest = load_manifest(home / "data" / "snapshots" / NEXT / "manifest.yaml")
    assert manifest.candidates.registries["federal_register"].stratum == "federal_register"


def test_a_window_short_of_documents_is_refused_and_its_answer_kept(tmp_path, registry_run, local_registry):
    """The window held only the document drawn last quarter: the stratum cannot be renewed."""
    home = _next_quarter_home(tmp_path, registry_run, local_registry)
    _Registry.answers = {"/api/v1/documents.json": (200, fr_documents(0, date(2027, 2, 1)))}
    with pytest.raises(BenchInputError) as refused:
        draw_next_quarter(
            warehouse_of(home), home / "data" / "snapshots", home / "data" / "private", SNAPSHOT, date(2027, 2, 27)
        )
    message = str(refused.value)
    assert "stratum federal_register: the plan retires 1 groups" in message and "short by 1" in message
    assert "drawn fresh: federal_register asked for" in message and "1 records" in message
    assert not (home / "data" / "snapshots" / NEXT / "manifest.yaml").exists()
    kept = warehouse_rows(home, "SELECT outcome, records FROM registry_responses WHERE snapshot_id = ?", [NEXT])
    assert kept == [("ok", 1)]  # the evidence of the window asked stays
