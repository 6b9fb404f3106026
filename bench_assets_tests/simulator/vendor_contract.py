"""The scaffold every vendor's contract test stands on (simulator/test_vendor_<vendor>.py).

A contract test holds one adapter to its vendor: our adapter's request goes to the simulator over
a real socket and its answer is parsed back; the vendor's official SDK reads the same answer; the
vendor's documented responses and error bodies (fixtures/vendors/<vendor>/, each naming its
source) are classified as documented. What every vendor's test needs for that is here, once:

- golden pages whose query is easy for the vendor's simulated index (so a round trip is expected
  to find the page), built from the demo corpus the simulator serves;
- the adapter's request sent to the simulator and its answer parsed;
- billed units priced with the adapter's manifest defaults, to compare with the simulator's bill;
- the documented error fixtures, read in either of their two recorded layouts;
- the checks every vendor shares: each documented error body is classified as recorded, a
  truncated answer is malformed, and a wrong key is refused as `auth` and billed nothing;
- for a vendor that publishes an OpenAPI description, the archived spec (fixtures/vendors/<vendor>/
  openapi.yaml, its SHA-256 recorded in SOURCES.md beside it) as JSON Schema validators for a
  request body and a response body (`VendorOpenApi`).

Each vendor's module keeps its own assertions (status codes, bodies, units, SDK behaviour).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from bench_assets.adapters.base import Adapter, HttpRequest, MalformedResponse, ParsedResponse, VendorTask
from bench_assets.golden.planted import Corpus, Page, build_corpus
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.index import SearchIndex, tokenize, unit_hash
from bench_assets.simulator.profiles import PROFILES
from bench_assets_tests.helpers import FIXTURES


@cache
def demo_corpus() -> Corpus:
    """The corpus the session's simulator serves (same size: BENCH_SIM_PAGES_PER_STRATUM)."""
    return build_corpus(pages_per_stratum=int(os.environ.get("BENCH_SIM_PAGES_PER_STRATUM", "14")))


@cache
def demo_index() -> SearchIndex:
    return SearchIndex(demo_corpus())


def sdk_base_url(sim_base: str, real_url: str) -> str:
    """What an official SDK's documented base-URL option is given: `real_url` on the port where the
    simulator serves its host at the root (https://api.firecrawl.dev -> http://127.0.0.1:P), so an
    SDK that drops a path prefix or builds URLs its own way reaches the simulator unmodified."""
    host, _, rest = real_url.split("://", 1)[1].partition("/")
    root = httpx.get(f"{sim_base}/_sim/hosts", timeout=5).json()[host]["root"]
    assert root, f"the simulator at {sim_base} does not serve {host} on a port of its own"
    return root + (f"/{rest}" if rest else "")


class VendorContract:
    """One vendor's adapter (with its module's MANIFEST_DEFAULTS) against the simulator."""

    def __init__(self, adapter: Adapter, manifest_defaults: Mapping[str, Any]):
        self.adapter = adapter
        self.vendor = adapter.name
        self.defaults = manifest_defaults
        self.fixtures = FIXTURES / "vendors" / self.vendor

    # ##### GOLDEN PAGES THE VENDOR'S SIMULATED INDEX FINDS

    @cached_property
    def easy_pages(self) -> tuple[Page, ...]:
        """Golden pages with an easy query for this vendor: in its simulated index (coverage < 1
        leaves some out) and ahead of the 10th-best other page by more than the profile's rank
        noise can make up."""
        index, profile = demo_index(), PROFILES[self.vendor]
        easy = []
        for page in demo_corpus().golden_pages:
            scores = sorted(index.scores(tokenize(page.query)), reverse=True)
            if (
                unit_hash(self.vendor, "coverage", page.url) < profile.coverage
                and scores[0] > 0
                and 1 - scores[10] / scores[0] > (1 - profile.quality) * 1.6
            ):
                easy.append(page)
        return tuple(easy)

    def golden_page(self, i: int = 0) -> Page:
        return self.easy_pages[i]

    @cached_property
    def top_ranked_page(self) -> Page:
        """A golden page this vendor's simulated index ranks first for the page's own query."""
        index = demo_index()
        for page in demo_corpus().golden_pages:
            hits = index.search(page.query, self.vendor, PROFILES[self.vendor], 10)
            if hits and hits[0].page.url == page.url:
                return page
        raise AssertionError(f"no golden page is ranked first by {self.vendor}")

    # ##### CALLS OVER A REAL SOCKET

    def endpoint(self, capability: str, base: str) -> str:
        """The vendor's documented endpoint for a capability, on the simulator at `base`."""
        return simulated_url(self.defaults["endpoints"][capability], base)

    @staticmethod
    def send(req: HttpRequest) -> httpx.Response:
        return httpx.request(
            req.method, req.url, headers=req.headers, params=req.params or None, json=req.json_body, timeout=10
        )

    def parse(self, task: VendorTask, resp: httpx.Response) -> ParsedResponse:
        return self.adapter.parse(task, resp.status_code, dict(resp.headers), resp.text)

    def call(
        self, simulator, task: VendorTask, key: str | None = None, options: dict | None = None
    ) -> tuple[httpx.Response, ParsedResponse]:
        """The adapter's request for `task` sent to the simulator (with the simulator's key for
        this vendor unless `key` is given), and the adapter's reading of the answer."""
        req = self.adapter.build(
            task, self.endpoint(task.capability, simulator.base_url), key or sim_key(self.vendor), options or {}
        )
        resp = self.send(req)
        parsed = self.parse(task, resp)
        self.assert_declared_units(task, parsed)
        return resp, parsed

    def assert_declared_units(self, task: VendorTask, parsed: ParsedResponse) -> None:
        """Every unit a response is billed in is one the adapter declares for the capability (so a
        manifest that validates prices it, and no answer bills as nothing)."""
        billed = {unit for unit, count in (parsed.billed_units or {}).items() if count}
        assert billed <= self.adapter.billing_units[task.capability], (task.capability, billed)

    # ##### BILLING

    def usd(self, units: Mapping[str, float]) -> float:
        """Billed units priced with the adapter's manifest defaults (what bench estimates)."""
        return sum(count * self.defaults["prices_usd"][unit] for unit, count in units.items())

    # ##### THE VENDOR'S DOCUMENTED ERROR BODIES

    @property
    def error_fixtures(self) -> list[Path]:
        return sorted(self.fixtures.glob("error_*.json"))

    @property
    def recorded_error_statuses(self) -> set[int]:
        """The HTTP statuses of the vendor's recorded error bodies."""
        return {json.loads(path.read_text())["status"] for path in self.error_fixtures}

    def error_fixture(self, path: Path) -> tuple[dict, ParsedResponse]:
        """A recorded error response and our adapter's reading of it. Two layouts are recorded:
        {status, headers, body (JSON), expected_class} and {capability, status, headers?, body
        (JSON or text), expected_error_class}."""
        fixture = json.loads(path.read_text())
        body = fixture["body"] if isinstance(fixture["body"], str) else json.dumps(fixture["body"])
        task = VendorTask(fixture.get("capability", "search"), "q")
        return fixture, self.adapter.parse(task, fixture["status"], fixture.get("headers", {}), body)

    def documented_error_bodies_test(self) -> Callable[[Path], None]:
        """The test, one case per recorded error body, that the adapter classifies it as recorded
        and reads no results from it (a module binds it to a `test_` name)."""

        @pytest.mark.parametrize("path", self.error_fixtures, ids=lambda p: p.stem)
        def test(path: Path) -> None:
            fixture, parsed = self.error_fixture(path)
            expected = fixture["expected_class"] if "expected_class" in fixture else fixture["expected_error_class"]
            assert parsed.error_class == expected
            assert parsed.results == ()

        return test

    # ##### THE VENDOR'S PUBLISHED SUCCESS BODIES

    @property
    def ok_fixtures(self) -> list[Path]:
        return sorted(self.fixtures.glob("ok_*.json"))

    def documented_success_bodies_test(self) -> Callable[[Path], None]:
        """The test, one case per published success body (ok_*.json: {source, capability, status,
        body, expected_urls, expected_units?, expected_published?}), that the adapter reads exactly
        the recorded results in order, with their dates and billed units where the fixture gives them."""

        @pytest.mark.parametrize("path", self.ok_fixtures, ids=lambda p: p.stem)
        def test(path: Path) -> None:
            fixture = json.loads(path.read_text())
            body = fixture["body"] if isinstance(fixture["body"], str) else json.dumps(fixture["body"])
            task = VendorTask(fixture.get("capability", "search"), fixture.get("task_text", "q"))
            parsed = self.adapter.parse(task, fixture["status"], fixture.get("headers", {}), body)
            assert parsed.error_class is None
            assert [r.url for r in parsed.results] == fixture["expected_urls"]
            self.assert_declared_units(task, parsed)
            if "expected_units" in fixture:
                assert parsed.billed_units == fixture["expected_units"]
            if "expected_published" in fixture:
                assert [r.published for r in parsed.results] == fixture["expected_published"]

        return test

    def sources_name_every_fixture(self) -> None:
        """SOURCES.md beside the fixtures names every fixture file and where its body comes from."""
        sources = (self.fixtures / "SOURCES.md").read_text()
        missing = [p.name for p in sorted(self.fixtures.glob("*.json")) if f"`{p.name}`" not in sources]
        assert not missing, f"fixtures not named in {self.vendor}/SOURCES.md: {missing}"
        for path in [*self.ok_fixtures, *self.error_fixtures]:  # archived specs are the vendor's files as is
            assert json.loads(path.read_text()).get("source"), f"{path.name} names no source"

    # ##### A KEY THE VENDOR DOES NOT KNOW

    def wrong_key_answer(
        self, simulator, sim_logs, status: int, key: str = "wrong", text: str = "some query"
    ) -> tuple[httpx.Response, ParsedResponse]:
        """The vendor's answer to a search sent with a key it does not know: HTTP `status`, which
        our adapter classes `auth`, and nothing billed (each vendor checks its own body)."""
        resp, parsed = self.call(simulator, VendorTask("search", text), key=key)
        assert resp.status_code == status, resp.text
        assert parsed.error_class == "auth"
        assert sim_logs.billing() == []
        return resp, parsed

    # ##### MALFORMED ANSWERS

    def assert_truncated_answer_is_malformed(self, simulator, task: VendorTask) -> None:
        """A real answer of the simulator to `task`, cut in half, is refused as malformed."""
        resp, _ = self.call(simulator, task)
        assert resp.status_code == 200, resp.text
        with pytest.raises(MalformedResponse):
            self.adapter.parse(task, 200, dict(resp.headers), resp.text[: len(resp.text) // 2])


# ##### THE VENDOR'S OWN OPENAPI DESCRIPTION


def _nullable_as_type(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` (still found in some 3.1 specs) as JSON Schema says it:
    null added to the node's `type`. Everything else is left as the vendor wrote it."""
    if isinstance(node, list):
        return [_nullable_as_type(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _nullable_as_type(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") is True and "type" in out:
        kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*kinds, "null"] if "null" not in kinds else kinds
    return out


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


class VendorOpenApi:
    """A vendor's archived OpenAPI description, its schemas read as JSON Schema 2020-12 (which 3.1
    schemas are; a 3.0 spec's `nullable` is translated, its other keywords mean the same here):
    validators for an operation's JSON request body and JSON response body. The file must match
    the SHA-256 recorded beside it in SOURCES.md, so a changed spec is a visible change."""

    def __init__(self, vendor: str, name: str = "openapi.yaml"):
        folder = FIXTURES / "vendors" / vendor
        self.path = folder / name
        raw = self.path.read_bytes()
        # SOURCES.md records each archived spec on one line: "- `<name>` ... SHA-256: <hex>".
        pattern = rf"`{re.escape(name)}`[^\n]*SHA-256[^0-9a-f\n]*([0-9a-f]{{64}})"
        recorded = re.search(pattern, (folder / "SOURCES.md").read_text())
        assert recorded, f"{folder / 'SOURCES.md'}: no SHA-256 recorded for {name}"
        self.sha256 = hashlib.sha256(raw).hexdigest()
        assert self.sha256 == recorded.group(1), f"{self.path}: SHA-256 {self.sha256} is not the one in SOURCES.md"
        self.spec = _nullable_as_type(yaml.safe_load(raw))

    def _validator(self, pointer: str) -> jsonschema.protocols.Validator:
        # The whole spec is the root resource, so the spec's own "#/components/..." refs resolve.
        schema = {**self.spec, "$ref": pointer}
        return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

    def request_errors(self, method: str, path: str, body: Any) -> list[str]:
        """Where `body` departs from the operation's documented JSON request body."""
        pointer = _pointer("paths", path, method.lower(), "requestBody", "content", "application/json", "schema")
        return _errors(self._validator(pointer), body)

    def response_errors(self, method: str, path: str, status: int, body: Any) -> list[str]:
        """Where `body` departs from the operation's documented JSON response for `status`."""
        response = self.spec["paths"][path][method.lower()]["responses"][str(status)]
        if "$ref" in response:  # "#/components/responses/<Name>"
            parts = response["$ref"].removeprefix("#/").split("/")
        else:
            parts = ["paths", path, method.lower(), "responses", str(status)]
        return _errors(self._validator(_pointer(*parts, "content", "application/json", "schema")), body)


def _errors(validator: jsonschema.protocols.Validator, body: Any) -> list[str]:
    return sorted(
        f"{'/'.join(map(str, e.absolute_path)) or '<body>'}: {e.message}" for e in validator.iter_errors(body)
    )
