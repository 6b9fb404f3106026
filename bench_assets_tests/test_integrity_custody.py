"""Holdout custody: the keyed split, the private store, the blocking leak check on publication,
and decoys.

Decoys: the test plays the vendor. From the simulator's request log alone (what a vendor sees),
nothing separates holdout queries from decoys: every request has the same shape, the two come in
equal numbers per endpoint, and their positions in the sequence are indistinguishable. The test
itself knows the roles (it reads the private store) and uses them only to check.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import duckdb
import pytest
from scipy.stats import mannwhitneyu

from bench_assets.defs.resources import BenchPaths, VendorGateway, VendorKeys
from bench_assets.golden import GoldenRow
from bench_assets.publish import find_holdout_leaks
from bench_assets.verify import row_urls
from bench_assets.integrity.decoys import interleaved_items, select_decoys
from bench_assets.simulator.corpus import demo_golden_rows, reserve_rows
from bench_assets.split import assign_split
from bench_assets_tests.helpers import (REPO, GOLDEN_STAGES, assets, RESULT_STAGES, SNAPSHOT, VENDOR_STAGES, make_home, materialize,
                                        vendor_key)

VENDORS = ["brave", "exa"]  # a GET API with parameters, and a POST API with a JSON body and an extract endpoint


def _rows(path: Path) -> list[GoldenRow]:
    return [GoldenRow.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def _strings(value, out: list[str]) -> list[str]:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    return out


def _masked(value, text: str):
    """The request part with the query text replaced by a placeholder (what is left is its shape)."""
    if value == text:
        return "<query>"
    if isinstance(value, dict):
        return {k: _masked(v, text) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_masked(v, text) for v in value]
    return value


def request_shape(entry: dict, text: str) -> str:
    body = json.loads(entry["body"]) if entry["body"] else None
    headers = {k: v for k, v in entry["headers"].items() if k != "content-length"}
    return json.dumps({"method": entry["method"], "host": entry["host"], "path": entry["path"],
                       "params": _masked(entry["params"], text), "headers": headers,
                       "body": _masked(body, text)}, sort_keys=True)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory, simulator):
    """One small snapshot fetched by two vendors and published (a simulated draft); the simulator's
    request log of the vendor calls; the Dagster instance."""
    import httpx

    home = make_home(tmp_path_factory.mktemp("decoys"), VENDORS, rows_per_stratum=18)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
        for vendor in VENDORS:
            materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(vendor))
        log = httpx.get(f"{simulator.base_url}/_sim/requests", timeout=5).json()
        materialize(instance, home, simulator.base_url, RESULT_STAGES, SNAPSHOT)
        private = home / "data" / "private"
        role_of_text: dict[str, str] = {}
        for row in _rows(private / "holdout" / f"{SNAPSHOT}.jsonl"):
            role_of_text[row.request_text] = "holdout"
        for row in _rows(private / "decoys" / f"{SNAPSHOT}.jsonl"):
            role_of_text[row.request_text] = "decoy"
        for line in (home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl").read_text().splitlines():
            role_of_text[GoldenRow.model_validate_json(line).request_text] = "public"
        yield SimpleNamespace(home=home, log=log, role_of_text=role_of_text, instance=instance,
                              out=home / "data" / "publish" / SNAPSHOT)


def _labelled(log: list[dict], role_of_text: dict[str, str], vendor: str) -> list[tuple[str, str, dict]]:
    """(role, text, entry) for each logged request of the vendor, roles known only to the test."""
    out = []
    for entry in log:
        if entry["vendor"] != vendor:
            continue
        body = json.loads(entry["body"]) if entry["body"] else None
        texts = [s for s in _strings(entry["params"], []) + _strings(body, []) if s in role_of_text]
        assert len(texts) == 1, f"cannot tell which query a request carries: {entry}"
        out.append((role_of_text[texts[0]], texts[0], entry))
    return out


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_vendor_cannot_tell_holdout_from_decoys_in_its_request_log(fetched, vendor):
    log, role_of_text = fetched.log, fetched.role_of_text
    labelled = _labelled(log, role_of_text, vendor)
    roles = [role for role, _, _ in labelled]
    assert roles.count("holdout") > 10 and roles.count("decoy") > 10 and roles.count("public") > 10

    # 1. shape: per endpoint, every request is identical once the query text is masked, whatever its role
    by_endpoint: dict[str, dict[str, set[str]]] = {}
    for role, text, entry in labelled:
        by_endpoint.setdefault(entry["path"], {}).setdefault(role, set()).add(request_shape(entry, text))
    for path, shapes in by_endpoint.items():
        assert shapes["holdout"] == shapes["decoy"] == shapes["public"], path
        assert len(shapes["holdout"]) == 1, f"{path}: requests differ in shape: {shapes['holdout']}"

    # 2. mix: as many decoys as holdout queries on every endpoint (ratio 1:1, drawn in whole groups)
    for path in by_endpoint:
        n = {r: sum(1 for role, _, e in labelled if role == r and e["path"] == path) for r in ("holdout", "decoy")}
        assert n["holdout"] == n["decoy"], (path, n)

    # 3. order: holdout and decoy positions in the sequence come from one distribution
    positions = {r: [i for i, (role, _, _) in enumerate(labelled) if role == r] for r in ("holdout", "decoy")}
    p = mannwhitneyu(positions["holdout"], positions["decoy"]).pvalue
    assert p > 0.01, f"holdout and decoy positions differ (Mann-Whitney p = {p:.4f})"


def test_decoy_responses_are_archived_and_never_scored(fetched):
    home = fetched.home
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        archived = con.execute("SELECT count(DISTINCT query_id) FROM raw_responses WHERE role = 'decoy' "
                               "AND snapshot_id = ?", [SNAPSHOT]).fetchone()[0]
        decoy_ids = {r[0] for r in con.execute("SELECT row_id FROM decoy_queries WHERE snapshot_id = ?",
                                                [SNAPSHOT]).fetchall()}
        scored = {r[0] for r in con.execute("SELECT DISTINCT row_id FROM row_scores WHERE snapshot_id = ?",
                                             [SNAPSHOT]).fetchall()}
    finally:
        con.close()
    assert archived > 0 and decoy_ids
    assert not (decoy_ids & scored)


def test_decoys_mirror_the_holdout_per_stratum_and_never_overlap_golden_rows():
    rows = demo_golden_rows(rows_per_stratum=30)
    split = assign_split(rows, b"k1")
    pool = reserve_rows("decoy", 10)
    decoys = select_decoys(pool, rows, split, b"k1", 1.0, SNAPSHOT)
    for stratum in {r.stratum for r in rows}:
        held = [r for r in rows if r.stratum == stratum and split[r.id] == "holdout"]
        mine = [d for d in decoys if d.stratum == stratum]
        assert len(mine) == len(held)
        assert sorted(d.task_type for d in mine) == sorted(r.task_type for r in held)
    assert not ({d.request_text for d in decoys} & {r.request_text for r in rows})
    # ratio 2 doubles them; the draw is keyed (another secret draws other decoys) and stable
    assert len(select_decoys(pool, rows, split, b"k1", 2.0, SNAPSHOT)) == 2 * len(decoys)
    assert select_decoys(pool, rows, split, b"k1", 1.0, SNAPSHOT) == decoys
    assert select_decoys(pool, rows, split, b"k2", 1.0, SNAPSHOT) != decoys


def test_the_order_is_keyed_by_the_secret_not_by_public_ids():
    rows = demo_golden_rows(rows_per_stratum=15)
    split = assign_split(rows, b"k1")
    decoys = select_decoys(reserve_rows("decoy", 5), rows, split, b"k1", 1.0, SNAPSHOT)
    a = interleaved_items(rows, split, decoys, {"search", "extract"}, 10, b"k1", SNAPSHOT, "exa")
    b = interleaved_items(rows, split, decoys, {"search", "extract"}, 10, b"k2", SNAPSHOT, "exa")
    assert sorted(a, key=lambda i: i.query_id) == sorted(b, key=lambda i: i.query_id)
    assert [i.query_id for i in a] != [i.query_id for i in b]
    assert a == interleaved_items(rows, split, decoys, {"search", "extract"}, 10, b"k1", SNAPSHOT, "exa")


# ##### THE SPLIT AND THE PRIVATE STORE


def test_the_split_is_keyed_stable_and_70_30_within_every_stratum():
    rows = demo_golden_rows(rows_per_stratum=42)
    split = assign_split(rows, b"secret-one")
    assert assign_split(rows, b"secret-one") == split  # stable across re-runs
    assert assign_split(rows, b"secret-two") != split  # unpredictable without the key
    for stratum in {r.stratum for r in rows}:
        mine = [r for r in rows if r.stratum == stratum]
        assert sum(split[r.id] == "holdout" for r in mine) == round(len(mine) / 3 * 0.3) * 3
    pages = {}
    for r in rows:  # a page's search, extract and answer rows share a URL and one side of the split
        pages.setdefault(row_urls(r)[0], set()).add(split[r.id])
    assert all(len(sides) == 1 for sides in pages.values())


def test_the_holdout_lives_only_in_the_private_store_and_duckdb(fetched, simulator, tmp_path):
    home = fetched.home
    holdout = _rows(home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl")
    assert holdout
    public_file = home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl"
    before = public_file.read_bytes()
    # re-running the split with the private store elsewhere ($BENCH_PRIVATE_DIR) gives the same split there
    elsewhere = tmp_path / "vault"
    result = dg.materialize(assets("query_split"), instance=fetched.instance, partition_key=SNAPSHOT, resources={
        "paths": BenchPaths(root=str(home), private_dir=str(elsewhere)),
        "gateway": VendorGateway(simulator_url=simulator.base_url), "vendor_keys": VendorKeys()})
    assert result.success
    assert (elsewhere / "holdout" / f"{SNAPSHOT}.jsonl").read_bytes() == \
        (home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl").read_bytes()
    assert public_file.read_bytes() == before
    needles = [{"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)} for r in holdout]
    assert find_holdout_leaks(home / "data" / "snapshots", needles) == []  # what ships in the repo
    assert "data/private/" in (REPO / ".gitignore").read_text().splitlines()


# ##### THE BLOCKING LEAK CHECK


def _needles(home: Path, name: str) -> list[dict]:
    return [{"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}
            for r in _rows(home / "data" / "private" / name / f"{SNAPSHOT}.jsonl")]


def test_the_leak_check_passes_on_the_demo_and_finds_every_planted_leak(fetched, tmp_path):
    needles = _needles(fetched.home, "holdout") + _needles(fetched.home, "decoys")
    assert find_holdout_leaks(fetched.out, needles) == []
    copy = tmp_path / "site"
    shutil.copytree(fetched.out, copy)
    holdout = next(n for n in _needles(fetched.home, "holdout") if n["row_id"].endswith("-s"))
    decoy = _needles(fetched.home, "decoys")[0]
    plants = {"leaderboard.csv": holdout["row_id"], "llms.txt": holdout["request_text"],
              "methodology.html": holdout["golden_urls"][0], "exclusions.json": decoy["request_text"]}
    for name, needle in plants.items():
        with (copy / name).open("a", encoding="utf-8") as f:
            f.write(f"\n{needle}\n")
    leaks = find_holdout_leaks(copy, needles)
    for name, needle in plants.items():
        assert any(leak.startswith(f"{name}:") and needle[:60] in leak for leak in leaks), (name, leaks)


def test_a_planted_leak_blocks_publication_and_publishes_nothing(fetched, simulator):
    home = fetched.home
    holdout_url = _rows(home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl")[0]
    url = row_urls(holdout_url)[0]
    disclosures = home / "data" / "snapshots" / SNAPSHOT / "disclosures.md"
    before = {p: p.read_bytes() for p in fetched.out.rglob("*") if p.is_file()}
    disclosures.write_text(f"The operator also wrote about {url} on a blog.\n")
    try:
        result = materialize(fetched.instance, home, simulator.base_url, ("published_snapshot",), SNAPSHOT,
                             raise_on_error=False)
    finally:
        disclosures.unlink()
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "holdout leak" in failure.event_specific_data.error.message
    assert {p: p.read_bytes() for p in fetched.out.rglob("*") if p.is_file()} == before
    assert not list(fetched.out.parent.glob(f".{SNAPSHOT}-*"))  # no staging directory left behind
