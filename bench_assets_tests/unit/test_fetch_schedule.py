"""The order `bench demo` starts vendor partitions in (`fetch.schedule`): never a configuration whose
provider is already fetching (it would hold a worker while it waits for its sibling's lease), the
provider with the most paced seconds left first; and the paced time of a configuration."""

from __future__ import annotations

from bench_assets.fetch.schedule import next_configuration, paced_seconds
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import DEMO_MANIFEST

PROVIDER_OF = {"exa": "exa", "exa.deep": "exa", "exa.lite": "exa", "brave": "brave", "kagi": "kagi"}
SECONDS = {"exa": 10.0, "exa.deep": 9.0, "exa.lite": 9.0, "brave": 5.0, "kagi": 20.0}


def drain(slots: int) -> list[list[str]]:
    """Run the schedule as the demo does, partitions finishing in the order they started: the
    configurations running together at each start."""
    pending, running, together = set(PROVIDER_OF), [], []
    while pending or running:
        while len(running) < slots:
            busy = {PROVIDER_OF[v] for v in running}
            name = next_configuration(pending, busy, PROVIDER_OF, SECONDS)
            if name is None:
                break
            pending.discard(name)
            running.append(name)
            together.append(sorted(running))
        running.pop(0)
    return together


def test_two_configurations_of_one_provider_never_hold_workers_at_once():
    for slots in (2, 3, 4):
        for running in drain(slots):
            providers = [PROVIDER_OF[v] for v in running]
            assert len(providers) == len(set(providers)), (slots, running)


def test_the_longest_chain_of_modes_starts_first_and_its_longest_mode_first():
    # exa's three modes (28 s together) before kagi (20 s alone), exa itself (10 s) first
    assert next_configuration(set(PROVIDER_OF), set(), PROVIDER_OF, SECONDS) == "exa"
    # with exa fetching, the next is another provider's, the longest
    assert next_configuration(set(PROVIDER_OF) - {"exa"}, {"exa"}, PROVIDER_OF, SECONDS) == "kagi"
    # only exa's modes left and exa busy: nothing to start until it finishes
    assert next_configuration({"exa.deep", "exa.lite"}, {"exa"}, PROVIDER_OF, SECONDS) is None
    # equal seconds: the configuration id decides, so the order is stable
    assert next_configuration({"exa.deep", "exa.lite"}, set(), PROVIDER_OF, SECONDS) == "exa.deep"


def test_paced_seconds_counts_each_endpoint_at_its_limit_and_the_account_at_its_own():
    manifest = load_manifest(DEMO_MANIFEST)
    exa, deep = manifest.vendors["exa"], manifest.vendors["exa.deep"]
    calls = {"search": 200, "extract": 100}
    search, extract = exa.rate_limit("search"), exa.rate_limit("extract")
    assert paced_seconds(exa, calls) == max(200 / search + 100 / extract, 300 / exa.rate_limit_per_second)
    # a mode that pins search alone is paced for its searches only
    assert paced_seconds(deep, calls) == max(200 / deep.rate_limit("search"), 200 / deep.rate_limit_per_second)
