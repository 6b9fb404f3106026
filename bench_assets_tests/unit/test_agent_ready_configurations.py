"""Agent-ready per endpoint configuration: an agent signs up for a provider's account, and every
mode of the provider runs on that one key, so a configuration with no trial of its own is as
agent-ready as its provider's trial found the account; a trial recorded for the configuration
itself speaks for it."""

from __future__ import annotations

from datetime import date

import pandas as pd

from bench_assets.agent_ready.records import TrialRecord
from bench_assets.aggregate.leaderboard import build_leaderboard
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import DEMO_MANIFEST, SNAPSHOT


def test_a_mode_configuration_is_as_agent_ready_as_its_providers_trial_found_the_account():
    def trial(vendor: str, outcome: str) -> TrialRecord:
        return TrialRecord(
            trial_id=f"t-{vendor}",
            snapshot_id=SNAPSHOT,
            vendor=vendor,
            method="device_code",
            mode="simulated",
            recorded_by="harness",
            trial_date=date(2026, 7, 1),
            outcome=outcome,
        )

    manifest = load_manifest(DEMO_MANIFEST)
    assert manifest.vendors["exa.deep"].provider == "exa" and manifest.vendors["tavily.fast"].provider == "tavily"
    empty = pd.DataFrame(
        columns=["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"]
    )
    # exa.deep and exa.lite share exa's account; tavily.fast has a trial of its own, which speaks for it
    trials = [trial("exa", "key_works"), trial("tavily", "key_works"), trial("tavily.fast", "captcha_required")]
    board = build_leaderboard(manifest, empty, set(), agent_trials=trials)
    ready = {e["vendor"]: e["agent_ready"] for e in board["vendors"] if e["status"] != "excluded"}
    assert ready["exa.deep"] == ready["exa.lite"] == ready["exa"] and ready["exa"]["ready"] is True
    assert ready["tavily.fast"]["ready"] is False and ready["tavily.advanced"]["ready"] is True
    assert ready["brave.llm_context"]["ready"] is None  # brave: no trial recorded, for the provider or the mode
