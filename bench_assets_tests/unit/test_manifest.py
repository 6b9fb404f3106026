"""A bad snapshot manifest fails with an error naming the file, the line and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from bench_assets.errors import BenchInputError
from bench_assets.manifest import CandidatePool, GoldenSource, load_manifest, parse_manifest

DEMO = Path(__file__).resolve().parents[2] / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml"


def write(tmp_path, data, snapshot="web_search-2026-q3") -> Path:
    path = tmp_path / snapshot / "manifest.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def demo_data() -> dict:
    return yaml.safe_load(DEMO.read_text())


def for_provider(data: dict, provider: str, **fields) -> None:
    """Set `fields` on every configuration of `provider` (they share its account settings)."""
    for name, entry in data["vendors"].items():
        if name.partition(".")[0] == provider:
            entry.update(fields)


def test_demo_manifest_validates():
    manifest = load_manifest(DEMO)
    assert manifest.mode == "simulated"
    assert len(manifest.vendors) >= 2
    assert manifest.k_values == [1, 3, 5, 10]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.update(mode="production"), "mode"),
        (lambda d: d.update(k_values=[0, 3]), "k_values"),
        (lambda d: d.update(k_values=[1, 3, 20]), "k_values"),
        (lambda d: d["vendors"]["exa"].update(adapter="exaa"), "vendors.exa.adapter"),
        (lambda d: for_provider(d, "exa", key_env="exa key"), "vendors.exa.key_env"),
        (lambda d: for_provider(d, "exa", key_env="BENCH_SPLIT_KEY"), "vendors.exa.key_env"),  # the split secret
        (lambda d: d.update(fidelity_weights={"title": 0.5, "anchor_phrases": 0.6}), "fidelity_weights"),
        (lambda d: d["vendors"]["exa"].update(rate_limit_per_second=0), "vendors.exa.rate_limit_per_second"),
        (lambda d: d["vendors"]["exa"].update(endpoints={"search": "api.exa.ai/search"}), "vendors.exa.endpoints"),
        (lambda d: d["vendors"]["exa"].pop("plan"), "vendors.exa.plan"),
        (lambda d: d["vendors"]["exa"].update(prices_usd={"usd": -1}), "vendors.exa.prices_usd"),
        (
            lambda d: d.update(excluded=[{"vendor": "x", "reason_code": "dislike", "reason": "r", "evidence": "e"}]),
            "excluded.0.reason_code",
        ),
    ],
)
def test_bad_field_is_named_with_file_and_line(tmp_path, mutate, field):
    data = demo_data()
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(BenchInputError) as info:
        load_manifest(path)
    err = info.value
    assert any(f == field for _, f, _ in err.problems), err.problems
    assert str(path) in str(err)
    line = next(line for line, f, _ in err.problems if f == field)
    assert line is not None and line >= 1


def test_snapshot_id_must_match_folder_and_quarter_style(tmp_path):
    data = demo_data()
    with pytest.raises(BenchInputError, match="does not match its folder"):
        load_manifest(write(tmp_path, data, snapshot="web_search-2026-q4"))
    data["snapshot_id"] = "snapshot-june"
    with pytest.raises(BenchInputError, match="snapshot_id"):
        load_manifest(write(tmp_path / "b", data, snapshot="snapshot-june"))


def test_yaml_syntax_error_names_line(tmp_path):
    path = write(tmp_path, "snapshot_id: web_search-2026-q3\nmode: [simulated\n")
    with pytest.raises(BenchInputError) as info:
        load_manifest(path)
    assert info.value.problems[0][1] == "<yaml>"


def test_every_demo_price_table_traces_to_an_archived_pricing_file():
    import hashlib

    manifest = load_manifest(DEMO)
    for vendor, spec in manifest.vendors.items():
        assert spec.pricing_source is not None, vendor
        archived = DEMO.parents[3] / spec.pricing_source.file
        assert hashlib.sha256(archived.read_bytes()).hexdigest() == spec.pricing_source.sha256, vendor
        assert spec.plan and spec.prices_usd and spec.adapter_version


def test_an_unknown_adapter_is_named_with_its_line_and_the_available_ones(tmp_path):
    data = demo_data()
    data["vendors"]["exa"]["adapter"] = "exaa"
    path = write(tmp_path, data)
    with pytest.raises(BenchInputError) as info:
        load_manifest(path)
    (problem,) = info.value.problems
    line, field, message = problem
    assert field == "vendors.exa.adapter" and "no adapter named 'exaa'" in message
    assert "exa, firecrawl" in message  # what it could have been
    assert path.read_text().splitlines()[line - 1].strip() == "adapter: exaa"
    assert f"{path}:{line}: field 'vendors.exa.adapter'" in str(info.value)


def test_k_values_outside_the_scored_ones_are_refused_with_the_supported_ones():
    from bench_assets.manifest import SUPPORTED_K_VALUES
    from bench_assets.storage.warehouse import TABLES

    data = demo_data()
    data["k_values"] = [1, 20]
    with pytest.raises(BenchInputError) as info:
        parse_manifest(yaml.safe_dump(data), "m.yaml")
    assert "k_values" in str(info.value) and "1, 3, 5, 10" in str(info.value)
    data["k_values"] = [10, 1]  # a subset is fine, in any order
    assert parse_manifest(yaml.safe_dump(data), "m.yaml").k_values == [1, 10]
    # the supported k are the ones the score table has a column for
    assert {f"hit_at_{k}" for k in SUPPORTED_K_VALUES} == set(re.findall(r"hit_at_\d+", TABLES["row_scores"].ddl()))


def test_key_env_defaults_to_the_adapters_usual_variable_and_can_be_renamed():
    data = demo_data()
    del data["vendors"]["youcom"]["key_env"]
    for_provider(data, "exa", key_env="EXA_TEAM_B_KEY")
    manifest = parse_manifest(yaml.safe_dump(data), "m.yaml")
    assert manifest.vendors["youcom"].key_env == "YDC_API_KEY"
    assert manifest.vendors["exa"].key_env == "EXA_TEAM_B_KEY"


def with_configuration(name: str, **fields) -> dict:
    data = demo_data()
    base = data["vendors"][name.partition(".")[0]]
    data["vendors"][name] = {**base, **fields}
    return data


def test_a_configuration_is_a_provider_in_a_documented_mode(tmp_path):
    prices = {"usd": 1.0, "request.search": 0.012, "result.extra": 0.001, "page.text": 0.001}
    data = with_configuration("exa.deep", mode="deep", prices_usd=prices)
    manifest = load_manifest(write(tmp_path, data))
    deep, default = manifest.vendors["exa.deep"], manifest.vendors["exa"]
    assert (deep.provider, deep.mode, default.provider, default.mode) == ("exa", "deep", "exa", "auto")
    assert deep.request_options["type"] == "deep" and default.request_options["type"] == "auto"
    assert manifest.configurations_of("exa") == sorted(n for n in data["vendors"] if n.partition(".")[0] == "exa")
    assert "exa.deep" in manifest.configurations_of("exa") and "tavily" not in manifest.configurations_of("exa")


@pytest.mark.parametrize(
    ("name", "fields", "field", "words"),
    [
        (
            "exa.deep",
            {"mode": "deepest"},
            "vendors.exa.deep.mode",
            "not a mode of exa (its documented modes: auto, lite",
        ),
        ("exa.deep", {"mode": "lite"}, "vendors.exa.deep.mode", "names mode 'deep', but its entry runs mode 'lite'"),
        (
            "exa.deep",
            {"mode": "deep", "options": {"type": "auto"}},
            "vendors.exa.deep.options.type",
            "contradicts mode 'deep'",
        ),
        (
            "exa.deep",
            {"mode": "deep", "spend_ceiling_usd": 99.0},
            "vendors.exa.deep.spend_ceiling_usd",
            "share its account",
        ),
        (
            "exa.deep",
            {"mode": "deep", "rate_limit_per_second": 500},
            "vendors.exa.deep.rate_limit_per_second",
            "share its account",
        ),
        (
            "brave.llm_context",  # Brave's LLM Context is its own endpoint: the Web Search one is not it
            {"mode": "llm_context"},
            "vendors.brave.llm_context.endpoints.search",
            "mode 'llm_context' of brave is its endpoint /res/v1/llm/context",
        ),
        (
            "parallel.basic",
            {"mode": "basic", "options": {"mode": "turbo"}},
            "vendors.parallel.basic.options.mode",
            "contradicts mode 'basic'",
        ),
        ("exa.auto", {"mode": "auto"}, "vendors.exa.auto", "the same configuration as 'exa'"),
        ("exa.Deep", {"mode": "deep"}, "vendors", "must be a provider"),
    ],
)
def test_a_configuration_that_does_not_say_what_it_runs_is_named_with_its_line(tmp_path, name, fields, field, words):
    data = with_configuration(name, **fields)
    path = write(tmp_path, data)
    with pytest.raises(BenchInputError) as info:
        load_manifest(path)
    (line,) = [ln for ln, f, message in info.value.problems if f == field and words in message]
    # the line of the entry's field, or of the entry itself where the field is not written
    text = path.read_text().splitlines()[line - 1].strip()
    assert text.startswith((field.rsplit(".", 1)[-1] + ":", name.rsplit(".", 1)[-1], f"{name}:", "vendors:")), text


def test_the_modes_of_parallel_and_brave_are_configurations(tmp_path):
    data = with_configuration("parallel.basic", mode="basic")
    context = "https://api.search.brave.com/res/v1/llm/context"
    data["vendors"]["brave.llm_context"] = {
        **data["vendors"]["brave"],
        "mode": "llm_context",
        "endpoints": {"search": context},
    }
    manifest = load_manifest(write(tmp_path, data))
    assert manifest.vendors["parallel"].request_options["mode"] == "advanced"  # the API's default, sent
    assert manifest.vendors["parallel.basic"].request_options["mode"] == "basic"
    assert (manifest.vendors["brave"].mode, manifest.vendors["brave.llm_context"].mode) == ("web", "llm_context")
    assert manifest.configurations_of("brave") == ["brave", "brave.llm_context"]


def test_a_provider_named_entry_runs_its_default_mode(tmp_path):
    data = demo_data()
    data["vendors"]["exa"]["mode"] = "deep"
    with pytest.raises(BenchInputError) as info:
        load_manifest(write(tmp_path, data))
    assert any("name a configuration of mode 'deep' exa.deep" in m for _, _, m in info.value.problems)


@pytest.mark.parametrize("model", [GoldenSource, CandidatePool])
def test_an_unknown_registry_is_refused_naming_it_and_the_known_ones(model):
    with pytest.raises(ValidationError, match=r"no registry named 'nope'; available: .*federal_register"):
        model.model_validate({"source": "registry", "registries": {"nope": {"stratum": "gov"}}})
