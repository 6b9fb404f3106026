"""Holdout custody: the keyed split, the private store, the blocking leak check on publication,
and decoys.

Decoys: the test plays the vendor. From the simulator's request log alone (what a vendor sees),
nothing separates holdout queries from decoys: every request has the same shape, the two come in
equal numbers per endpoint, and neither their positions in the sequence nor the gaps between
requests are distinguishable, since every role waits in one paced queue in the keyed order. The
test itself knows the roles (it reads the private store) and uses them only to check. Across
quarters, the decoys come back exactly as often as the holdout does.

The leak check: every altered spelling of a holdout query, id or URL that a reader would read as
the same (wrapped, upper-cased, HTML- or JSON-escaped, full-width, a URL with `www.`, a trailing
slash, reordered or tracking parameters, percent-encoding, no scheme, or inside another URL) is
found in every kind of published file, and each one blocks publication.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, urlsplit

import dagster as dg
import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, ks_2samp, mannwhitneyu

from bench_assets.adapters import get_adapter
from bench_assets.defs.resources import BenchPaths
from bench_assets.fetch.plan import interleaved_items
from bench_assets.golden.planted import demo_golden_rows, reserve_rows
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.verify import row_urls
from bench_assets.metrics import normalize_text
from bench_assets.split import leaks
from bench_assets.split.assign import assign_split, split_key
from bench_assets.split.decoys import select_decoys
from bench_assets.split.leaks import LeakGuard
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    REPO,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    assets,
    make_home,
    materialize,
    register_partitions,
    resources,
    vendor_key,
)

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
    return json.dumps(
        {
            "method": entry["method"],
            "host": entry["host"],
            "path": entry["path"],
            "params": _masked(entry["params"], text),
            "headers": headers,
            "body": _masked(body, text),
        },
        sort_keys=True,
    )


@pytest.fixture(scope="module")
def fetched(tmp_path_factory, simulator):
    """One small snapshot fetched by two vendors and published (a simulated draft); the simulator's
    request log of the vendor calls; the Dagster instance."""
    import httpx

    home = make_home(tmp_path_factory.mktemp("decoys"), VENDORS, rows_per_stratum=18)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
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
        yield SimpleNamespace(
            home=home, log=log, role_of_text=role_of_text, instance=instance, out=home / "data" / "publish" / SNAPSHOT
        )


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

    # 4. timing: the gap before each request, since the previous one to its endpoint (the unit the
    # fetch paces: one rate limiter per endpoint, one concurrency limit, blind to the role), comes
    # from one distribution for holdout and decoys. The gaps are machine noise around that one rule
    # (back-to-back pairs from the limiter's slack slot, else the limiter's spacing or a free
    # concurrency slot), so under it the p-value is uniform: the permissive threshold makes a false
    # alarm a 1-in-1000 event, while a role paced apart (decoys in a burst, or at another rate)
    # lands far below it at these sample sizes.
    gaps = inter_request_gaps(labelled)
    assert len(gaps["holdout"]) >= 10 and len(gaps["decoy"]) >= 10, {r: len(g) for r, g in gaps.items()}
    p = ks_2samp(gaps["holdout"], gaps["decoy"]).pvalue
    assert p > 0.001, f"holdout and decoy requests are paced apart (Kolmogorov-Smirnov p = {p:.5f})"


def inter_request_gaps(labelled: list[tuple[str, str, dict]]) -> dict[str, list[float]]:
    """Per role, the seconds between each request and the previous request to the same endpoint,
    as the vendor's server saw them arrive (the first request to an endpoint has no gap)."""
    gaps: dict[str, list[float]] = {}
    previous: dict[str, float] = {}
    for role, _, entry in sorted(labelled, key=lambda x: x[2]["at"]):
        endpoint = f"{entry['host']}{entry['path']}"
        if endpoint in previous:
            gaps.setdefault(role, []).append(entry["at"] - previous[endpoint])
        previous[endpoint] = entry["at"]
    return gaps


@pytest.mark.parametrize("vendor", VENDORS)
def test_every_role_waits_in_one_paced_queue_in_the_keyed_order(fetched, vendor):
    """The pacing rule behind the timing check, from the bench's own archive: per endpoint, public,
    holdout and decoy requests wait in one queue (one concurrency limit, one rate limiter) and leave
    in the order keyed by the split secret, whatever their role: no role is held back, batched or
    sent apart. Asyncio's wake-ups may swap neighbours, so the send order is compared by rank
    correlation with a wide margin (it stays above 0.95 in practice)."""
    home = fetched.home
    manifest = BenchPaths(root=str(home)).manifest(SNAPSHOT)
    private = home / "data" / "private"
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        split = dict(con.execute("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [SNAPSHOT]).fetchall())
        sent = con.execute(
            "SELECT capability, query_id, role FROM raw_responses WHERE snapshot_id = ? AND vendor = ? "
            "AND attempt = 1 ORDER BY started_at",
            [SNAPSHOT, vendor],
        ).fetchall()
    finally:
        con.close()
    keyed = interleaved_items(
        _rows(private / "golden" / f"{SNAPSHOT}.jsonl"),
        split,
        _rows(private / "decoys" / f"{SNAPSHOT}.jsonl"),
        get_adapter(manifest.vendors[vendor].adapter).capabilities,
        manifest.results_per_query,
        split_key(manifest.split.key_env, manifest.mode),
        SNAPSHOT,
        vendor,
    )
    for capability in sorted({c for c, _, _ in sent}):
        planned = [i.query_id for i in keyed if i.capability == capability]
        order = [q for c, q, _ in sent if c == capability]
        assert sorted(order) == sorted(planned), capability  # every planned request sent, once
        assert {"holdout", "decoy"} <= {role for c, _, role in sent if c == capability}, capability
        rank = {q: i for i, q in enumerate(planned)}
        tau = kendalltau(range(len(order)), [rank[q] for q in order]).statistic
        assert tau > 0.8, f"{capability}: requests left out of the keyed order (Kendall tau {tau:.3f})"


def test_decoy_responses_are_archived_and_never_scored(fetched):
    home = fetched.home
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        archived = con.execute(
            "SELECT count(DISTINCT query_id) FROM raw_responses WHERE role = 'decoy' AND snapshot_id = ?", [SNAPSHOT]
        ).fetchone()[0]
        decoy_ids = {
            r[0] for r in con.execute("SELECT row_id FROM decoy_queries WHERE snapshot_id = ?", [SNAPSHOT]).fetchall()
        }
        scored = {
            r[0]
            for r in con.execute("SELECT DISTINCT row_id FROM row_scores WHERE snapshot_id = ?", [SNAPSHOT]).fetchall()
        }
    finally:
        con.close()
    assert archived > 0 and decoy_ids
    assert not (decoy_ids & scored)


def test_the_integrity_files_are_made_of_each_vendors_share_of_its_archive(fetched):
    """Publication and rescore read each vendor's decoy spend and holdout commitments from its own
    archive (`vendor_integrity`, with its build): the integrity files made of them are the
    published ones."""
    from datetime import date

    from bench_assets.golden.store import load_golden_rows
    from bench_assets.manifest import load_manifest
    from bench_assets.publish.guard import PublicationGuard, vendor_integrity
    from bench_assets.storage.warehouse import Warehouse

    manifest = load_manifest(fetched.home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    warehouse = Warehouse(fetched.home / "data" / "warehouse" / "bench.duckdb")
    rows, split = load_golden_rows(warehouse, SNAPSHOT), warehouse.split(SNAPSHOT)
    board = json.loads((fetched.out / "leaderboard.json").read_text())
    guard = PublicationGuard(
        warehouse,
        manifest,
        board,
        rows,
        split,
        split_key(manifest.split.key_env, manifest.mode),
        "draft",
        date(2026, 9, 1),
    )
    known = {
        v: vendor_integrity(manifest, v, warehouse.rows("raw_responses", SNAPSHOT, vendor=v), guard.commitment_key)
        for v in VENDORS
    }
    assert all(k.decoys and k.decoys[0] > 0 and k.commitments for k in known.values())
    published = json.loads((fetched.out / "holdout_commitments.json").read_text())
    assert json.loads(guard.files(known)["holdout_commitments.json"]) == published
    assert guard.files(known)["exclusions.json"] == (fetched.out / "exclusions.json").read_text()


def test_decoys_mirror_the_holdout_per_stratum_and_never_overlap_golden_rows():
    rows = demo_golden_rows(rows_per_stratum=30)
    split = assign_split(rows, b"k1")
    pool = reserve_rows("decoy", 10)
    decoys = select_decoys(pool, rows, split, b"k1", 1.0)
    for stratum in {r.stratum for r in rows}:
        held = [r for r in rows if r.stratum == stratum and split[r.id] == "holdout"]
        mine = [d for d in decoys if d.stratum == stratum]
        assert len(mine) == len(held)
        assert sorted(d.task_type for d in mine) == sorted(r.task_type for r in held)
    assert not ({d.request_text for d in decoys} & {r.request_text for r in rows})
    # ratio 2 doubles them; the draw is keyed (another secret draws other decoys) and stable
    assert len(select_decoys(pool, rows, split, b"k1", 2.0)) == 2 * len(decoys)
    assert select_decoys(pool, rows, split, b"k1", 1.0) == decoys
    assert select_decoys(pool, rows, split, b"k2", 1.0) != decoys


def _groups(rows) -> set[str]:
    from bench_assets.golden.rows import split_groups

    return set(split_groups(list(rows)).values())


def test_decoys_persist_across_quarters_exactly_as_the_holdout_does():
    """q3 → q4: rotation retires a quarter of the holdout's groups in every stratum, and rows of the
    new cohort join the holdout. A vendor comparing the two quarters' non-public queries must see
    the decoys repeat exactly as often as the holdout."""
    key = b"split-secret"
    q3 = demo_golden_rows(rows_per_stratum=42, cohort="2026-q3")
    split3 = assign_split(q3, key)
    # a fresh decoy pool per cohort, as the planted demo draws one for the golden set's cohort
    pool = reserve_rows("decoy", 14, cohort="2026-q3") + [
        r.model_copy(update={"id": r.id.replace("-d", "-e"), "cohort": "2026-q4"})
        for r in reserve_rows("decoy", 14, seed=7)
    ]
    retire, new_rows, split4 = set(), [], dict(split3)
    for stratum in sorted({r.stratum for r in q3}):
        held = sorted({r.id.rsplit("-", 1)[0] for r in q3 if r.stratum == stratum and split3[r.id] == "holdout"})
        gone = held[: len(held) // 4 or 1]  # a quarter of the stratum's holdout pages retire
        retire |= {r.id for r in q3 if r.id.rsplit("-", 1)[0] in gone}
    replacements = [r.model_copy(update={"cohort": "2026-q4"}) for r in reserve_rows("candidate", 14, cohort="2026-q4")]
    for stratum in sorted({r.stratum for r in q3}):
        need = sum(1 for rid in retire if rid.startswith(f"{stratum}-"))
        mine = [r for r in replacements if r.stratum == stratum][:need]
        new_rows += mine
        split4.update({r.id: "holdout" for r in mine})
    q4 = [r for r in q3 if r.id not in retire] + new_rows

    decoys3 = select_decoys(pool, q3, split3, key, 1.0)
    decoys4 = select_decoys(pool, q4, split4, key, 1.0)
    holdout3 = {r.id for r in q3 if split3[r.id] == "holdout"}
    holdout4 = {r.id for r in q4 if split4.get(r.id) == "holdout"}
    ids3, ids4 = {d.id for d in decoys3}, {d.id for d in decoys4}
    assert len(ids3) == len(holdout3) and len(ids4) == len(holdout4)
    held_over = len(holdout3 & holdout4) / len(holdout3)
    assert 0.6 < held_over < 0.9  # most of the holdout stays ...
    assert len(ids3 & ids4) / len(ids3) == held_over  # ... and exactly as many decoys come back
    for stratum in sorted({r.stratum for r in q3}):  # in every stratum, not just on the whole
        h3 = {i for i in holdout3 if i.startswith(f"{stratum}-")}
        d3 = {i for i in ids3 if i.startswith(f"{stratum}-")}
        assert len(d3 & ids4) == len(h3 & holdout4), stratum
    # the new cohort's holdout has decoys of its own, which were never sent before
    assert {d.cohort for d in decoys4 if d.id not in ids3} == {"2026-q4"}
    # keyed by the secret, not by the snapshot: another secret draws other decoys
    assert {d.id for d in select_decoys(pool, q3, split3, b"other", 1.0)} != ids3


def test_the_order_is_keyed_by_the_secret_not_by_public_ids():
    rows = demo_golden_rows(rows_per_stratum=15)
    split = assign_split(rows, b"k1")
    decoys = select_decoys(reserve_rows("decoy", 5), rows, split, b"k1", 1.0)
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
    result = dg.materialize(
        assets("query_split"),
        instance=fetched.instance,
        partition_key=SNAPSHOT,
        resources=resources(home, simulator.base_url, private_dir=str(elsewhere)),
    )
    assert result.success
    assert (elsewhere / "holdout" / f"{SNAPSHOT}.jsonl").read_bytes() == (
        home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl"
    ).read_bytes()
    assert public_file.read_bytes() == before
    needles = [{"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)} for r in holdout]
    assert LeakGuard(needles).scan(home / "data" / "snapshots") == []  # what ships in the repo
    assert "data/private/" in (REPO / ".gitignore").read_text().splitlines()


# ##### THE BLOCKING LEAK CHECK


def _needles(home: Path, name: str) -> list[dict]:
    return [
        {"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}
        for r in _rows(home / "data" / "private" / name / f"{SNAPSHOT}.jsonl")
    ]


def test_the_leak_check_passes_on_the_demo_and_finds_every_planted_leak(fetched, tmp_path):
    needles = _needles(fetched.home, "holdout") + _needles(fetched.home, "decoys")
    assert LeakGuard(needles).scan(fetched.out) == []
    copy = tmp_path / "site"
    shutil.copytree(fetched.out, copy)
    holdout = next(n for n in _needles(fetched.home, "holdout") if n["row_id"].endswith("-s"))
    decoy = _needles(fetched.home, "decoys")[0]
    plants = {
        "leaderboard.csv": holdout["row_id"],
        "llms.txt": holdout["request_text"],
        "methodology.html": holdout["golden_urls"][0],
        "exclusions.json": decoy["request_text"],
    }
    for name, needle in plants.items():
        with (copy / name).open("a", encoding="utf-8") as f:
            f.write(f"\n{needle}\n")
    leaks = LeakGuard(needles).scan(copy)
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
        result = materialize(
            fetched.instance, home, simulator.base_url, ("published_snapshot",), SNAPSHOT, raise_on_error=False
        )
    finally:
        disclosures.unlink()
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "holdout leak" in failure.event_specific_data.error.message
    assert {p: p.read_bytes() for p in fetched.out.rglob("*") if p.is_file()} == before
    assert not list(fetched.out.parent.glob(f".{SNAPSHOT}-*"))  # no staging directory left behind


# ##### EVERY SPELLING A READER WOULD READ AS THE SAME


def _spellings(row: dict) -> dict[str, str]:
    """Altered forms of a holdout search row's query, id and golden URL (the test knows the row)."""
    text, url = row["request_text"], row["golden_urls"][0]
    parts = urlsplit(url)
    scheme, host, path = parts.scheme, parts.netloc, parts.path
    query = "&".join(reversed(parts.query.split("&"))) if parts.query else ""  # parameters reordered
    q = f"?{query}" if query else ""
    words = text.split(" ")
    return {
        "query wrapped across lines": "\n    ".join([" ".join(words[:2]), " ".join(words[2:])]),
        "query upper-cased": text.upper(),
        "query as HTML character references": "".join(f"&#x{ord(c):x};" for c in text),
        "query HTML-escaped (&amp;, &#32;)": html.escape(text).replace(" ", "&#32;", 1),
        "query JSON-escaped (\\uXXXX)": "".join(f"\\u{ord(c):04x}" for c in text),
        "query in full-width characters": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text),
        "query in a URL's parameters": f"https://search.example.test/?q={quote(text).replace('%20', '+')}",
        "row id upper-cased": row["row_id"].upper(),
        "url with www., a trailing slash, parameters reordered": f"{scheme}://www.{host}{path}/{q}",
        "url upper-cased host, fragment and tracking": f"{scheme.upper()}://{host.upper()}{path}{q}"
        f"{'&' if q else '?'}utm_source=x#top",
        "url with an explicit default port": f"{scheme}://{host}:{443 if scheme == 'https' else 80}{path}{q}",
        "url with percent-encoded path": f"{scheme}://{host}"
        + "".join(f"%{ord(c):02X}" if c.isalnum() else c for c in path)
        + q,
        "url without a scheme": f"{host}{path}{q}",
        "url percent-encoded inside another": f"https://redirect.example.test/go?to={quote(url, safe='')}",
        "url with &amp; in an HTML attribute": f'<a href="{html.escape(url)}&amp;utm_source=b">x</a>'
        if parts.query
        else f'<a href="{url}?utm_medium=a&amp;utm_source=b">x</a>',
    }


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_the_guard_normalizes_text_exactly_as_the_metrics_do(text):
    assert leaks._normalize(text) == normalize_text(text)


def test_the_leak_guard_reads_every_kind_of_file_as_a_reader_does(tmp_path):
    row = {
        "row_id": "news-007-s",
        "request_text": "Quarterly flood & storm report Velmora's 2026",
        "golden_urls": ["https://gov.velmora.test/reports/flood-q2?year=2026&area=north"],
    }
    guard = LeakGuard([row])
    for name, form in _spellings(row).items():
        for suffix, content in (
            (".html", f"<p>{form}</p>"),
            (".txt", form),
            (".md", f"see {form}."),
            (".json", json.dumps({"note": form}, ensure_ascii=True)),
            (".csv", f'a,b\n1,"{form}"\n'),
            (".svg", f"<svg><text>{form}</text></svg>"),
        ):
            if suffix == ".json" and "\\u" in form:
                content = '{"note": "' + form + '"}'  # already JSON-escaped: as a JSON file would hold it
            path = tmp_path / f"page{suffix}"
            path.write_text(content, encoding="utf-8")
            assert guard.scan(tmp_path), (name, suffix, content)
            path.unlink()
    # a query split by markup and a URL with its parameters reordered
    (tmp_path / "split.html").write_text(
        "<table><tr><td>Quarterly <b>flood</b> &amp; storm report</td><td>Velmora's 2026</td></tr></table>"
    )
    (tmp_path / "params.txt").write_text("https://gov.velmora.test/reports/flood-q2?area=north&year=2026")
    leaks = guard.scan(tmp_path)
    assert any(x.startswith("split.html: holdout text") for x in leaks), leaks
    assert any(x.startswith("params.txt: holdout url") and "written as" in x for x in leaks), leaks
    # and what is not the holdout is not reported: other pages, other parameters, other queries
    for p in tmp_path.iterdir():
        p.unlink()
    (tmp_path / "ok.html").write_text(
        '<a href="https://gov.velmora.test/reports/flood-q3">Quarterly flood report</a>'
        "<p>https://gov.velmora.test/reports/flood-q2?year=2025&area=north news-007-x</p>"
    )
    assert guard.scan(tmp_path) == []


# One altered spelling of each kind of needle the guard holds (the query, the row id, the URL): that
# every spelling is found in every kind of file is the test above's, with the same spellings and guard.
PUBLICATION_FORMS = ("query as HTML character references", "row id upper-cased", "url percent-encoded inside another")


@pytest.mark.parametrize("form", PUBLICATION_FORMS)
def test_an_altered_spelling_of_a_holdout_row_blocks_publication(fetched, simulator, form):
    """Planted in a vendor's reply, which is published byte for byte: the spelling stops publication,
    and nothing is published."""
    home = fetched.home
    row = next(
        n for n in _needles(home, "holdout") if n["row_id"].endswith("-s") and len(n["request_text"].split()) > 2
    )
    reply = home / "data" / "snapshots" / SNAPSHOT / "replies" / "exa.txt"
    reply.parent.mkdir(exist_ok=True)
    before = {p: p.read_bytes() for p in fetched.out.rglob("*") if p.is_file()}
    reply.write_text(f"Our view on one of your queries:\n{_spellings(row)[form]}\n", encoding="utf-8")
    try:
        result = materialize(
            fetched.instance, home, simulator.base_url, ("published_snapshot",), SNAPSHOT, raise_on_error=False
        )
    finally:
        reply.unlink()
    assert not result.success, form
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.event_specific_data.error.message
    assert "holdout leak" in message, message
    assert {p: p.read_bytes() for p in fetched.out.rglob("*") if p.is_file()} == before
