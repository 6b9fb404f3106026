"""Bad input everywhere a user can give it: a clear error naming the input and field, and the
warehouse left exactly as it was.

A warehouse populated by a good run (golden rows, a vendor partition, aggregates) is the
starting point; each bad input (manifest, golden file, environment variable, CLI argument) is
then given the way an operator would give it, and the whole warehouse, every table and every
partition archive, is compared with what it held before.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml

from bench_assets.cli import main as cli
from bench_assets.errors import BenchInputError
from bench_assets.simulator.server import start_simulator
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    failure_text,
    fingerprint,
    make_home,
    manifest_edited,
    materialize,
    register_partitions,
    unwrapped,
    vendor_key,
)

VENDOR = "brave"


@pytest.fixture(scope="module")
def populated(tmp_path_factory, simulator):
    home = make_home(tmp_path_factory.mktemp("home"), [VENDOR], rows_per_stratum=6)
    dagster_home = tmp_path_factory.mktemp("dagster")
    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(VENDOR))
        materialize(instance, home, simulator.base_url, ("vendor_leaderboard",), SNAPSHOT)
        before = fingerprint(home)
        assert any("raw_responses" in k for k in before) and all(not v.startswith("(0") for v in before.values())
        yield home, instance, before


# ##### MANIFEST AND GOLDEN FILE, THROUGH DAGSTER


@pytest.mark.parametrize("stages, partition", [(GOLDEN_STAGES, SNAPSHOT), (VENDOR_STAGES, vendor_key(VENDOR))])
@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["vendors"][VENDOR].update(concurrency=0), "vendors.brave.concurrency"),
        (lambda d: d["vendors"][VENDOR].update(timeout_seconds="soon"), "vendors.brave.timeout_seconds"),
        (
            lambda d: d["vendors"][VENDOR]["endpoints"].update(search="api.search.brave.com/x"),
            "vendors.brave.endpoints",
        ),
        (lambda d: d.update(mode="production"), "mode"),
        (lambda d: d["vendors"][VENDOR].update(adapter="bravee"), "vendors.brave.adapter"),  # no such adapter
        (lambda d: d.update(k_values=[1, 20]), "k_values"),  # hit@k is not scored at 20
        # a live snapshot may not switch off decoys or shorten the vendor review
        (lambda d: d.update(mode="live", decoys={"ratio": 0}), "decoys.ratio"),
        (lambda d: d.update(mode="live", review={"business_days": 5}), "review.business_days"),
    ],
)
def test_a_bad_manifest_field_is_named_and_changes_nothing(populated, simulator, stages, partition, edit, field):
    home, instance, before = populated
    with manifest_edited(home, edit) as path:
        result = materialize(instance, home, simulator.base_url, stages, partition, raise_on_error=False)
    assert not result.success
    message = failure_text(result)
    assert str(path) in message and f"field '{field}'" in message, message
    assert fingerprint(home) == before


def test_a_manifest_that_is_not_yaml_is_named_with_its_line(populated, simulator):
    home, instance, before = populated
    with manifest_edited(home, text="snapshot_id: web_search-2026-q3\nmode: [simulated\n") as path:
        result = materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT, raise_on_error=False)
    assert not result.success
    assert f"{path}:3: field '<yaml>'" in failure_text(result)
    assert fingerprint(home) == before


def test_a_malformed_golden_row_is_named_and_the_golden_rows_stay(populated, simulator):
    home, instance, before = populated
    good = json.loads((home / "data" / "private" / "golden" / f"{SNAPSHOT}.jsonl").read_text().splitlines()[0])
    bad = {**good, "id": good["id"] + "-x", "task": {**good["task"], "type": "search", "golden_urls": ["not a url"]}}
    golden = home / "data" / "private" / "golden" / "edited.jsonl"
    golden.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with manifest_edited(home, lambda d: d.update(golden={"source": "file", "path": "golden/edited.jsonl"})):
        result = materialize(instance, home, simulator.base_url, ("golden_rows",), SNAPSHOT, raise_on_error=False)
    assert not result.success
    assert f"{golden}:2: field 'task" in failure_text(result)
    assert fingerprint(home) == before


def files_under(home: Path) -> dict[str, int]:
    """Every file of the home (lock files aside) with its size: nothing new, nothing rewritten."""
    return {
        str(p.relative_to(home)): p.stat().st_size
        for p in home.rglob("*")
        if p.is_file() and p.suffix not in (".lock", ".lease")
    }


@pytest.mark.parametrize("stages", [GOLDEN_STAGES, VENDOR_STAGES])
def test_a_partition_key_that_is_not_a_snapshot_id_is_refused_before_any_file(populated, simulator, stages):
    """The UI accepts any dynamic partition key; `../snapshots/<id>` used to reach the real manifest
    and write holdout rows to data/private/snapshots/."""
    home, instance, before = populated
    key = f"../snapshots/{SNAPSHOT}"
    register_partitions(instance, [key])
    files = files_under(home)
    partition = key if stages == GOLDEN_STAGES else vendor_key(VENDOR, key)
    result = materialize(instance, home, simulator.base_url, stages, partition, raise_on_error=False)
    assert not result.success
    message = failure_text(result)
    assert f"field 'snapshot_id': '{key}' is not a snapshot id" in message, message
    assert files_under(home) == files and fingerprint(home) == before
    assert not (home / "data" / "private" / "snapshots").exists()


@pytest.mark.parametrize("path", ["/etc/passwd", "../../../../../../etc/passwd", "golden/../../outside.jsonl"])
@pytest.mark.parametrize("where", ["golden", "decoys"])
def test_a_private_path_outside_the_private_store_is_refused_naming_the_field(populated, simulator, path, where):
    home, instance, before = populated

    def edit(d: dict) -> None:
        if where == "golden":
            d["golden"] = {"source": "file", "path": path}
        else:
            d["decoys"] = {**d.get("decoys", {}), "source": "file", "path": path}

    with manifest_edited(home, edit) as manifest:
        result = materialize(instance, home, simulator.base_url, ("golden_rows",), SNAPSHOT, raise_on_error=False)
    assert not result.success
    message = failure_text(result)
    assert f"{manifest}:" in message and f"field '{where}.path'" in message and "private store" in message, message
    assert "root:" not in message  # no line of a file outside the store was read
    assert fingerprint(home) == before


def test_a_manifest_that_is_not_utf8_is_named_with_its_line(populated, simulator):
    home, instance, before = populated
    text = "snapshot_id: web_search-2026-q3\nmode: simulated\n# written in Latin-1: caf\xe9\n"
    with manifest_edited(home, text="") as path:
        path.write_bytes(text.encode("latin-1"))
        result = materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT, raise_on_error=False)
    assert not result.success
    message = failure_text(result)
    assert f"{path}:3: field '<encoding>': the manifest is not UTF-8: byte 0xe9 at column 26" in message, message
    assert fingerprint(home) == before


def test_a_golden_file_that_is_not_utf8_is_named_with_its_line(populated, simulator):
    home, instance, before = populated
    lines = (home / "data" / "private" / "golden" / f"{SNAPSHOT}.jsonl").read_text().splitlines()
    golden = home / "data" / "private" / "golden" / "latin1.jsonl"
    golden.write_bytes("\n".join([lines[0], lines[1].replace("}", ', "note": "caf\xe9"}', 1)]).encode("latin-1"))
    with manifest_edited(home, lambda d: d.update(golden={"source": "file", "path": "golden/latin1.jsonl"})):
        result = materialize(instance, home, simulator.base_url, ("golden_rows",), SNAPSHOT, raise_on_error=False)
    assert not result.success
    message = failure_text(result)
    assert f"{golden}:2: field '<encoding>': the golden file is not UTF-8: byte 0xe9" in message, message
    assert fingerprint(home) == before


# ##### ERRATA FILES


GOOD_ERRATUM = {
    "id": "E1",
    "date": "2026-07-20",
    "vendor": VENDOR,
    "action": "rescore",
    "what": "an outdated price",
    "why": "the vendor's invoice",
    "who": "bench maintainers",
    "snapshot": SNAPSHOT,
    "corrects": SNAPSHOT,
    "version": f"{SNAPSHOT}-e1",
    "summary": "brave rescore: price corrected",
}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[{"id": "E1",', "field '<json>': Expecting"),
        ('{"errata": []}', "field '<file>': errata.json must be a list of entries"),
        (json.dumps([{**GOOD_ERRATUM, "action": "rescored"}]), "field '[0].action': Input should be 'rescore'"),
        (
            json.dumps([GOOD_ERRATUM, {k: v for k, v in GOOD_ERRATUM.items() if k != "what"}]),
            "field '[1].what': Field required",
        ),
        (
            json.dumps([{**GOOD_ERRATUM, "before": {"snapshot_id": "x", "metrics": []}}]),
            "field '[0].before.snapshot_id'",
        ),
        (json.dumps([GOOD_ERRATUM, GOOD_ERRATUM]), "field '[1].id': duplicate entry id 'E1'"),
    ],
)
def test_a_bad_errata_json_is_named_with_its_entry_and_field_and_changes_nothing(populated, simulator, text, expected):
    home, instance, before = populated
    path = home / "data" / "snapshots" / SNAPSHOT / "errata.json"
    path.write_text(text)
    try:
        result = materialize(
            instance, home, simulator.base_url, ("published_snapshot",), SNAPSHOT, raise_on_error=False
        )
    finally:
        path.unlink()
    assert not result.success
    message = failure_text(result)
    assert str(path) in message and expected in message, message
    assert fingerprint(home) == before
    assert not (home / "data" / "publish" / SNAPSHOT).exists()


@pytest.mark.parametrize(
    "entries, expected",
    [
        (
            [{"id": "E1", "date": "2026-07-20", "vendor": VENDOR, "action": "rescore", "what": "x", "why": "y"}],
            "field '[0].who': Field required",
        ),
        (
            [
                {
                    "id": "E1",
                    "date": "last week",
                    "vendor": VENDOR,
                    "action": "rescore",
                    "what": "x",
                    "why": "y",
                    "who": "z",
                }
            ],
            "field '[0].date'",
        ),
        ("not a list", "field '<file>': errata.yaml must be a list of entries"),
    ],
)
def test_a_bad_errata_yaml_is_named_by_bench_errata_apply_and_changes_nothing(
    populated, monkeypatch, capsys, tmp_path, entries, expected
):
    home, _, before = populated
    path = home / "data" / "snapshots" / SNAPSHOT / "errata.yaml"
    path.write_text(yaml.safe_dump(entries))
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    try:
        code = cli.main(["errata", "apply", SNAPSHOT, "E1"])
    finally:
        path.unlink()
    assert code == 2
    err = unwrapped(capsys.readouterr().err)
    assert str(path) in err and expected in err, err
    assert fingerprint(home) == before


# ##### ENVIRONMENT


def test_a_missing_split_key_in_live_mode_is_named_and_changes_nothing(populated, simulator, monkeypatch):
    home, instance, before = populated
    monkeypatch.delenv("BENCH_SPLIT_KEY", raising=False)
    with manifest_edited(home, lambda d: d.update(mode="live")):
        result = materialize(instance, home, simulator.base_url, ("query_split",), SNAPSHOT, raise_on_error=False)
    assert not result.success
    assert "$BENCH_SPLIT_KEY: field 'BENCH_SPLIT_KEY': the split key is required in live mode" in failure_text(result)
    assert fingerprint(home) == before


@pytest.mark.parametrize("key_env", [None, "BRAVE_SEARCH_TOKEN"])
def test_a_missing_vendor_key_in_live_mode_is_named_and_changes_nothing(populated, simulator, monkeypatch, key_env):
    home, instance, before = populated
    monkeypatch.setenv("BENCH_SPLIT_KEY", "split-key-for-this-test")
    env = key_env or "BRAVE_API_KEY"
    monkeypatch.delenv(env, raising=False)

    def live(data: dict) -> None:
        data["mode"] = "live"
        if key_env:  # the manifest names the variable the key is read from
            data["vendors"][VENDOR]["key_env"] = key_env

    with manifest_edited(home, live):
        result = materialize(
            instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(VENDOR), raise_on_error=False
        )
    assert not result.success
    assert f"${env}: field '{env}': no API key for brave in live mode" in failure_text(result)
    assert fingerprint(home) == before


@pytest.mark.parametrize(
    "name, value, field",
    [
        ("BENCH_SIM_FAULTS", '{"vendors": {"exa": {"timeout": 3}}}', "vendors.exa.timeout"),
        ("BENCH_SIM_FAULTS", "{not json", "<json>"),
        ("BENCH_SIM_LATENCY_SCALE", "fast", "BENCH_SIM_LATENCY_SCALE"),
        ("BENCH_SIM_PAGES_PER_STRATUM", "0", "BENCH_SIM_PAGES_PER_STRATUM"),
    ],
)
def test_a_bad_simulator_variable_is_named_before_anything_starts(name, value, field):
    with pytest.raises(BenchInputError) as err:
        start_simulator(env={name: value})
    assert f"${name}: field '{field}'" in str(err.value)


# ##### CLI ARGUMENTS AND VARIABLES


@pytest.mark.parametrize(
    "argv, env, expected",
    [
        (["rescore", "Bad ID"], {}, "argument snapshot: 'Bad ID' is not a snapshot id"),
        (["rescore", "../web_search-2026-q3"], {}, "is not a snapshot id"),
        (["rescore", "nosuch-2026-q1"], {}, "unknown snapshot 'nosuch-2026-q1'"),
        (["estimate", "nosuch-2026-q1"], {}, "unknown snapshot 'nosuch-2026-q1'"),
        (["snapshot", "add", "web_search-2026-q5"], {}, "is not a snapshot id"),
        (["demo", "--snapshot", "nosuch-2026-q1"], {}, "unknown snapshot 'nosuch-2026-q1'"),
        (["demo", "--workers", "0"], {}, "argument --workers: '0' is not a positive integer"),
        (
            ["demo"],
            {"BENCH_WORKERS": "many"},
            "$BENCH_WORKERS: field 'BENCH_WORKERS': 'many' is not a positive integer",
        ),
        (["demo"], {"BENCH_SIM_FAULTS": '{"vendors": {"acme": {}}}'}, "$BENCH_SIM_FAULTS: field 'vendors'"),
        (["simulator", "--port", "70000"], {}, "argument --port: '70000' is not a TCP port"),
    ],
)
def test_a_bad_cli_argument_or_variable_is_named_and_changes_nothing(
    populated, monkeypatch, capsys, tmp_path, argv, env, expected
):
    home, _, before = populated
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("BENCH_SIMULATOR_URL", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        code = cli.main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert expected in capsys.readouterr().err
    assert fingerprint(home) == before
