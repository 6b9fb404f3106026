"""`bench preflight SNAPSHOT` on a live manifest whose endpoints are the simulator's: one cheapest
call per vendor through the fetch engine, archived; a line per problem for each fault a first
live run meets (a bad key, no credit, a 429, a 500, a body of the wrong shape), and no key
printed or stored."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import httpx
import pytest
import yaml

from bench_assets.cli.main import main
from bench_assets.cli.preflight import simulated_probe
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.profiles import PROFILES
from bench_assets_tests.helpers import SNAPSHOT, make_home

VENDORS = ["brave", "exa", "kagi"]
ARCHIVE = Path("data") / "warehouse" / "partitions" / SNAPSHOT / "preflight.duckdb"


@pytest.fixture()
def live_home(tmp_path, simulator, sim_control, monkeypatch):
    """A bench home with a live manifest whose endpoints are the session simulator's, each vendor's
    key in its manifest variable; returns a function running `bench preflight` there."""

    def make(vendors: list[str], edit=None) -> Path:
        def live(data: dict) -> None:
            data["mode"] = "live"
            for spec in data["vendors"].values():
                spec["endpoints"] = {c: simulated_url(u, simulator.base_url) for c, u in spec["endpoints"].items()}
            if edit:
                edit(data)

        home = make_home(tmp_path / "home", vendors, edit=live)
        monkeypatch.setenv("BENCH_HOME", str(home))
        for vendor, spec in yaml.safe_load((home / "data/snapshots" / SNAPSHOT / "manifest.yaml").read_text())[
            "vendors"
        ].items():
            monkeypatch.setenv(spec["key_env"], sim_key(vendor))
        return home

    return make


def preflight(capsys, *extra: str) -> tuple[int, str, str]:
    query, url = simulated_probe()  # a page the simulator has, as a live run's example.com
    code = main(["preflight", SNAPSHOT, "--query", query, "--url", url, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def archived(home: Path) -> list[dict]:
    con = duckdb.connect(str(home / ARCHIVE), read_only=True)
    try:
        return con.execute("SELECT * FROM raw_responses ORDER BY vendor, query_id, attempt").df().to_dict("records")
    finally:
        con.close()


def problem_lines(err: str) -> dict[str, str]:
    lines = [line.removeprefix("bench preflight: ") for line in err.splitlines() if line.strip()]
    return dict(line.split(": ", 1) for line in lines)


def test_every_vendor_ready_one_archived_billed_call_each_and_never_paid_twice(live_home, sim_control, capsys):
    home = live_home(sorted(PROFILES))
    code, out, err = preflight(capsys)
    assert code == 0, err
    assert err == "" and f"all {len(PROFILES)} vendors ready" in out
    rows = {line.split()[0]: line for line in out.splitlines()[2:-1]}
    assert set(rows) == set(PROFILES)
    assert all(" accepted " in line and " ok " in line for line in rows.values()), out
    assert "requests left this month" in rows["brave"] and "API balance" in rows["kagi"]
    bills = sim_control.billing()
    assert sorted(b["vendor"] for b in bills) == sorted(PROFILES)  # one billed call per vendor
    evidence = archived(home)
    assert len(evidence) == len(PROFILES) and {r["role"] for r in evidence} == {"preflight"}
    assert all(r["final"] and r["http_status"] == 200 and r["body_sha256"] for r in evidence)
    assert {r["snapshot_id"] for r in evidence} == {f"{SNAPSHOT}@preflight"}
    stored = (home / ARCHIVE).read_bytes()
    kept = [v for v in PROFILES if sim_key(v) in out or sim_key(v).encode() in stored or sim_key(v) in str(evidence)]
    assert kept == []  # every key was sent, none printed or archived

    again, out, _ = preflight(capsys)  # answered from the archive: nothing sent, nothing billed
    assert again == 0 and out.count("(archived, not sent again)") == len(PROFILES)
    assert len(sim_control.billing()) == len(PROFILES) and len(archived(home)) == len(PROFILES)

    code, out, _ = preflight(capsys, "--recheck", "--vendor", "kagi")  # asked for: one new call
    assert code == 0 and "not sent again" not in out
    assert [b["vendor"] for b in sim_control.billing()[len(PROFILES) :]] == ["kagi"]


def test_a_wrong_key_is_one_line_naming_the_variable_and_never_printed_or_stored(
    live_home, sim_control, capsys, monkeypatch
):
    home = live_home(VENDORS)
    wrong = "exa-WRONG-planted-key-7f3a9c"
    monkeypatch.setenv("EXA_API_KEY", wrong)
    code, out, err = preflight(capsys)
    assert code == 1
    problems = problem_lines(err)
    assert set(problems) == {"exa"}, err
    assert problems["exa"].startswith("key refused (HTTP 401") and problems["exa"].endswith("check $EXA_API_KEY")
    assert "refused" in next(line for line in out.splitlines() if line.startswith("exa"))
    assert wrong not in out + err
    assert wrong.encode() not in (home / ARCHIVE).read_bytes()
    assert all(wrong not in str(row) for row in archived(home))
    assert sorted(b["vendor"] for b in sim_control.billing()) == ["brave", "kagi"]

    monkeypatch.setenv("EXA_API_KEY", sim_key("exa"))  # fixed: exa is called again, the others are not
    code, out, err = preflight(capsys)
    assert code == 0, err
    assert sorted(b["vendor"] for b in sim_control.billing()) == ["brave", "exa", "kagi"]
    assert sorted(r["query_id"] for r in archived(home) if r["vendor"] == "exa") == ["preflight-1", "preflight-2"]


def test_a_missing_key_is_one_line_naming_the_variable(live_home, capsys, monkeypatch):
    live_home(VENDORS)
    monkeypatch.delenv("KAGI_API_KEY")
    code, _, err = preflight(capsys)
    assert code == 1
    assert problem_lines(err) == {
        "kagi": "no API key for kagi in live mode: set $KAGI_API_KEY in the environment of the code location "
        "(never commit it)"
    }


def test_an_account_out_of_credit_is_one_line_and_billed_nothing(live_home, sim_control, capsys):
    live_home(VENDORS)
    sim_control.credits({"kagi": 0})
    code, out, err = preflight(capsys)
    assert code == 1
    problems = problem_lines(err)
    assert set(problems) == {"kagi"} and problems["kagi"].startswith("out of credit or quota (HTTP ")
    assert " accepted " in next(line for line in out.splitlines() if line.startswith("kagi"))  # the key is known
    assert "kagi" not in {b["vendor"] for b in sim_control.billing()}


@pytest.mark.parametrize(
    "fault, expected",
    [
        ("rate_limited", "rate limited (HTTP 429"),
        ("server_error", "vendor server error (HTTP 5"),
        ("malformed", "response not in the documented shape (HTTP 200"),
        ("truncated", "response not in the documented shape (HTTP 200"),
    ],
)
def test_a_fault_is_one_line_after_a_single_attempt(live_home, sim_control, capsys, fault, expected):
    home = live_home(VENDORS)
    sim_control.faults({"vendors": {"exa": {fault: 1.0}}})
    code, out, err = preflight(capsys)
    assert code == 1
    problems = problem_lines(err)
    assert set(problems) == {"exa"} and problems["exa"].startswith(expected), err
    assert len(problems["exa"]) < 300 and "\n" not in problems["exa"] and "<html" not in problems["exa"]
    if fault == "rate_limited":
        assert "it asks to wait 1 (Retry-After)" in problems["exa"]
    (attempt,) = [r for r in archived(home) if r["vendor"] == "exa"]  # one attempt, archived, no retry
    assert attempt["final"]
    exa = next(line for line in out.splitlines() if line.startswith("exa"))
    if fault in ("malformed", "truncated"):  # the vendor answered (and billed) a body we cannot read
        assert " wrong " in exa and " accepted " in exa
        assert "exa" in {b["vendor"] for b in sim_control.billing()}
    else:
        assert " ? " in exa  # a 429 or 5xx does not say whether the key is good
        assert "exa" not in {b["vendor"] for b in sim_control.billing()}


def test_a_call_that_would_pass_the_spend_ceiling_is_not_sent(live_home, sim_control, capsys):
    def tiny_ceiling(data: dict) -> None:
        data["vendors"]["kagi"]["spend_ceiling_usd"] = 0.001  # below one Kagi search ($0.012)

    home = live_home(VENDORS, edit=tiny_ceiling)
    code, _, err = preflight(capsys)
    assert code == 1
    problems = problem_lines(err)
    assert set(problems) == {"kagi"} and problems["kagi"].startswith("not sent: its cheapest call ($0.0120)")
    assert "kagi" not in {b["vendor"] for b in sim_control.billing()}
    assert "kagi" not in {r["vendor"] for r in archived(home)}


def test_a_simulated_snapshot_is_checked_on_a_simulator_the_command_starts_and_stops(tmp_path, capsys, monkeypatch):
    home = make_home(tmp_path / "home", ["exa", "serper"])
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.delenv("BENCH_SIMULATOR_URL", raising=False)
    assert main(["preflight", SNAPSHOT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "simulated" and [v["vendor"] for v in report["vendors"]] == ["exa", "serper"]
    assert all(v["key_accepted"] and v["shape_ok"] and v["problem"] is None for v in report["vendors"])
    endpoint = report["vendors"][0]["endpoint"]
    assert endpoint.startswith("http://127.0.0.1:")
    with pytest.raises(httpx.ConnectError):  # the simulator it started is gone
        httpx.get(endpoint.split("/h/")[0] + "/_sim/health", timeout=2)
