"""`bench demo --quarters N`: the simulated world of each quarter (the simulator's vendors drifted
by the quarter's distance from the shipped one, the candidate reserve its manifest names) and the
option's refusals. The run itself is measured, not tested: it is the whole demo N times."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_assets.cli import main as cli
from bench_assets.cli.demo import quarters_after, simulator_env
from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import build_corpus, reserve_rows
from bench_assets.simulator.app import CANDIDATE_PAGES_ENV, DRIFT_QUARTERS_ENV, create_simulator
from bench_assets.simulator.profiles import (
    DRIFT_BOUNDS,
    DRIFT_QUALITY,
    MODE_PROFILES,
    PROFILES,
    drift_direction,
    drifted_mode_profiles,
    drifted_profiles,
)

SHIPPED = Path(__file__).parents[2] / "data" / "snapshots"
READY_Q4 = "\ncandidates: {source: planted_demo, reserve_pages: 14}\n"  # as `bench quarter next` grows it


def test_the_shipped_quarter_keeps_the_profiles_and_later_ones_drift_each_vendor_its_own_way():
    assert drifted_profiles(0) == PROFILES  # the shipped quarter's figures do not move
    one, two = drifted_profiles(1), drifted_profiles(2)
    assert drifted_profiles(2) == two  # deterministic
    directions = {drift_direction(v) for v in PROFILES}
    assert directions == {1, -1}  # some vendors improve, some worsen: the trend shows both
    for vendor, p in PROFILES.items():
        step = drift_direction(vendor)
        low, high = DRIFT_BOUNDS
        assert one[vendor].quality == pytest.approx(min(high, max(low, p.quality + step * DRIFT_QUALITY)))
        assert low <= two[vendor].quality <= high and low <= two[vendor].coverage <= high
        # only ranking quality and coverage move: prices, latency, extraction stay as pinned
        assert one[vendor].usd_per_request == p.usd_per_request and one[vendor].latency_ms == p.latency_ms


def test_a_vendors_modes_drift_with_it_and_keep_their_ladder():
    """Before, only the base profiles drifted: a configuration (`exa.deep`) scored the same every
    quarter, so the demo's trend per configuration showed nothing."""
    assert drifted_mode_profiles(0) == MODE_PROFILES
    for quarters in (1, 2, 3):
        bases, modes = drifted_profiles(quarters), drifted_mode_profiles(quarters)
        for vendor, by_mode in MODE_PROFILES.items():
            for mode, p in by_mode.items():
                moved = modes[vendor][mode]
                step = drift_direction(vendor) * quarters
                low, high = DRIFT_BOUNDS
                assert moved.quality == pytest.approx(min(high, max(low, p.quality + step * DRIFT_QUALITY)))
                assert moved.usd_per_request == p.usd_per_request and moved.latency_ms == p.latency_ms
                # a deeper mode stays at or above its vendor's base profile as both move
                if p.quality >= PROFILES[vendor].quality:
                    assert moved.quality >= bases[vendor].quality
                if p.coverage >= PROFILES[vendor].coverage:
                    assert moved.coverage >= bases[vendor].coverage


def test_a_quarter_is_counted_from_the_shipped_one():
    assert quarters_after("web_search-2026-q3") == 0
    assert quarters_after("web_search-2026-q4") == 1 and quarters_after("web_search-2027-q1") == 2
    assert quarters_after("web_search-2027-q1-e1") == 2 and quarters_after("web_search-2026-q2") == 0


def test_each_quarter_runs_on_the_simulated_world_its_manifest_names(tmp_path, monkeypatch):
    shipped = (SHIPPED / "web_search-2026-q3" / "manifest.yaml").read_text()
    for sid, extra in (("web_search-2026-q3", ""), ("web_search-2026-q4", READY_Q4)):
        (tmp_path / "data" / "snapshots" / sid).mkdir(parents=True)
        text = shipped.replace("snapshot_id: web_search-2026-q3", f"snapshot_id: {sid}") + extra
        (tmp_path / "data" / "snapshots" / sid / "manifest.yaml").write_text(text)
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    assert simulator_env("web_search-2026-q3") == {}  # the simulator as always
    assert simulator_env("web_search-2026-q4") == {CANDIDATE_PAGES_ENV: "14", DRIFT_QUARTERS_ENV: "1"}
    # the simulator built from it serves the grown reserve (the first pages as before) and drifted vendors
    monkeypatch.setenv(CANDIDATE_PAGES_ENV, "14")
    monkeypatch.setenv(DRIFT_QUARTERS_ENV, "1")
    sim = create_simulator(pages_per_stratum=14, latency_scale=0)
    grown = {u for r in reserve_rows("candidate", 14, base=7) if r.task.type == "search" for u in r.task.golden_urls}
    assert grown <= set(sim.corpus.pages) and set(build_corpus().pages) <= set(sim.corpus.pages)
    assert sim.profiles == drifted_profiles(1)
    assert sim.mode_profile("exa", "deep") == drifted_mode_profiles(1)["exa"]["deep"] != MODE_PROFILES["exa"]["deep"]


def test_several_quarters_need_a_simulator_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    (tmp_path / "data" / "snapshots" / "web_search-2026-q3").mkdir(parents=True)
    (tmp_path / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml").write_text(
        (SHIPPED / "web_search-2026-q3" / "manifest.yaml").read_text()
    )
    monkeypatch.setenv("BENCH_SIMULATOR_URL", "http://127.0.0.1:9")
    with pytest.raises(BenchInputError, match="starts a simulator per quarter"):
        cli.run_command(cli.build_parser().parse_args(["demo", "--quarters", "3"]))
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["demo", "--quarters", "0"])
