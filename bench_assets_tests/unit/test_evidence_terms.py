"""What may be redistributed of a vendor's responses is the vendor's call, written down: each
manifest entry's `publish_evidence` with the archived clause of its terms (`evidence_terms`), and
the level a snapshot actually publishes (`Manifest.evidence_level`)."""

from __future__ import annotations

import hashlib
import re

import pytest
import yaml

from bench_assets.errors import BenchInputError
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import DEMO_MANIFEST

ROOT = DEMO_MANIFEST.parents[3]


def test_every_demo_vendor_has_its_level_and_the_archived_terms_that_decide_it():
    manifest = load_manifest(DEMO_MANIFEST)
    for vendor, spec in sorted(manifest.vendors.items()):
        assert spec.evidence_terms is not None, vendor
        path = ROOT / spec.evidence_terms.file
        assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.evidence_terms.sha256, vendor
        text = path.read_text(encoding="utf-8")
        decision = re.search(r"^- \*\*Decision\*\*: `(raw|results|digests)`", text, re.M)
        assert decision is not None and decision.group(1) == spec.publish_evidence, vendor
        # the file says where it was read, or that the terms could not be found (then digests)
        assert "[doc http" in text or ("not found" in text and spec.publish_evidence == "digests"), vendor


def test_raw_or_results_without_the_clause_that_allows_it_is_refused_with_file_line_and_field(tmp_path):
    data = yaml.safe_load(DEMO_MANIFEST.read_text())
    data["vendors"]["exa"]["publish_evidence"] = "raw"
    del data["vendors"]["exa"]["evidence_terms"]
    path = tmp_path / data["snapshot_id"] / "manifest.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BenchInputError) as refused:
        load_manifest(path)
    problems = {field: (line, message) for line, field, message in refused.value.problems}
    assert set(problems) == {"vendors.exa.evidence_terms"}
    line, message = problems["vendors.exa.evidence_terms"]
    assert "required when publish_evidence is 'raw'" in message
    assert path.read_text().splitlines()[line - 1].strip() == "exa:"
    data["vendors"]["exa"]["publish_evidence"] = "digests"  # the safe default needs no clause
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert load_manifest(path).vendors["exa"].publish_evidence == "digests"


def test_a_live_snapshot_publishes_the_vendors_level_a_simulated_one_its_own_bodies(tmp_path):
    manifest = load_manifest(DEMO_MANIFEST)
    level, why = manifest.evidence_level("exa")
    assert level == "raw" and "simulator" in why and "a live snapshot publishes digests" in why
    live = manifest.model_copy(update={"mode": "live"})
    level, why = live.evidence_level("exa")
    assert level == "digests" and "data/terms/exa.md" in why
