"""The snapshot manifest: everything a snapshot pins before a vendor is called.

`data/snapshots/<snapshot_id>/manifest.yaml` fixes the mode, the golden source, every vendor's
endpoint, plan, price table, rate limit and concurrency, the exclusions with their reasons, the
k values and the fidelity weights. A published number can always be traced back to it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from bench_assets.adapters import available_adapters, default_key_env
from bench_assets.adapters.base import Capability
from bench_assets.errors import BenchInputError
from bench_assets.registries import available_registries, get_registry

# `-e1`, `-e2`, … are errata versions of a published snapshot (see bench_assets.publish.errata).
SNAPSHOT_ID_PATTERN = r"^[a-z][a-z0-9_]*-20[0-9]{2}-q[1-4](-e[1-9][0-9]*)?$"
DEFAULT_FIDELITY_WEIGHTS = {
    "title": 0.15,
    "anchor_phrases": 0.35,
    "table_cells": 0.25,
    "numeric_facts": 0.15,
    "noise": 0.10,
}
# hit@k is scored at these k (the row_scores columns hit_at_<k>); a manifest publishes a subset.
SUPPORTED_K_VALUES = (1, 3, 5, 10)
Mode = Literal["simulated", "replay", "live"]
LIVE_MIN_REVIEW_BUSINESS_DAYS = 10  # the methodology's review period; a live manifest may not shorten it


def _inside_private_store(path: str | None) -> str | None:
    """A path to a file of the private store: relative to it, and never out of it (no `..`, no
    absolute path, no home directory), so the manifest cannot have a private file read from
    anywhere else (and its lines quoted in error messages)."""
    if path is None:
        return None
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if not path.strip() or path.startswith(("/", "~")) or PureWindowsPath(path).anchor or ".." in parts:
        raise ValueError(
            f"{path!r} is not a path inside the private store: give it relative to the private directory, "
            "without '..' (the file must live in the private store)"
        )
    return path


PrivatePath = Annotated[str | None, AfterValidator(_inside_private_store)]


def check_snapshot_id(snapshot_id: str, source: str = "the snapshot partition key") -> str:
    """`snapshot_id` if it is a snapshot id (`SNAPSHOT_ID_PATTERN`), else BenchInputError naming
    `source`: a partition key names folders (`data/snapshots/<id>`, the private store's files), so
    one like `../snapshots/x` would reach outside them."""
    if not re.match(SNAPSHOT_ID_PATTERN, snapshot_id):
        raise BenchInputError(
            source,
            [
                (
                    None,
                    "snapshot_id",
                    f"{snapshot_id!r} is not a snapshot id (like web_search-2026-q3: {SNAPSHOT_ID_PATTERN})",
                )
            ],
        )
    return snapshot_id


def read_text_file(path: Path, what: str) -> str:
    """A text input file's contents, decoded as UTF-8; one that is not UTF-8 is a BenchInputError
    naming the file, the line and the byte, not a decoding traceback."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BenchInputError(
            str(path),
            [
                (
                    line,
                    "<encoding>",
                    f"the {what} is not UTF-8: byte 0x{data[exc.start]:02x} at column {column} ({exc.reason}); "
                    "save the file as UTF-8",
                )
            ],
        ) from None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PricingSource(_Strict):
    """The archived pricing page the price table was read from."""

    file: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    archived_on: str


EvidenceLevel = Literal["raw", "results", "digests"]
# What each level publishes of a vendor's responses in the evidence bundle (publish/evidence.py):
EVIDENCE_LEVELS: dict[str, str] = {
    "raw": "every response body as received, beside the parsed results and the digests",
    "results": "the parsed results (rank, URL, title, the text that was scored) and the digests, not the bodies",
    "digests": "the SHA-256 of every body, of every result's normalized URL and of the text that was scored, "
    "not the results themselves",
}


class TermsSource(_Strict):
    """The archived transcription of the vendor's terms that decides what of its responses may be
    published (`publish_evidence`): the clause, its source and the decision, with date and SHA-256."""

    file: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    archived_on: str


# A configuration id: the provider (its adapter) alone for its default mode, `<provider>.<mode>` for another.
CONFIGURATION_ID_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$"
# What configurations of one provider share: its account, so its rate limits, key and spend ceiling.
PROVIDER_SHARED_FIELDS = ("rate_limit_per_second", "capability_rate_limits", "key_env", "spend_ceiling_usd")


class VendorSpec(_Strict):
    """How one endpoint configuration is called and billed in this snapshot: a provider (`adapter`)
    in one of its documented modes (`mode`), with its endpoints, plan, prices and limits."""

    adapter: str = Field(min_length=1, description="the provider: the adapter that speaks its API")
    mode: str | None = Field(
        default=None,
        description="the provider's documented mode (search type, depth, processor); default: the adapter's first",
    )
    adapter_version: str = "1"
    plan: str = Field(min_length=1, description="the plan every number is billed on")
    endpoints: dict[Literal["search", "extract"], str] = Field(min_length=1)
    prices_usd: dict[str, float] = Field(
        min_length=1, description="USD per billed unit, e.g. {'request.search': 0.007, 'credit': 0.008}"
    )
    rate_limit_per_second: float = Field(
        gt=0, description="the vendor's limit for the account or key: all its endpoints together, every process"
    )
    capability_rate_limits: dict[Literal["search", "extract"], float] = Field(
        default={},
        description="per-endpoint limits where the vendor documents them (an endpoint is paced at "
        "the lower of its own and rate_limit_per_second)",
    )
    concurrency: int = Field(ge=1, le=64)
    key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Z][A-Z0-9_]*$",
        description=(
            "the environment variable holding the live key; default: the adapter's usual one (EXA_API_KEY, …)"
        ),
    )
    spend_ceiling_usd: float | None = Field(default=None, gt=0)
    timeout_seconds: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=4, ge=1, le=10)
    backoff_initial_seconds: float = Field(
        default=0.5, gt=0, le=60, description="first retry wait (doubles, with jitter)"
    )
    backoff_max_seconds: float = Field(default=30.0, gt=0, le=600, description="longest backoff between attempts")
    retry_after_max_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="a Retry-After longer than this ends the query instead of waiting"
    )
    options: dict[str, object] = {}
    pricing_source: PricingSource | None = Field(
        default=None, description="the archived pricing text the prices were read from; required in live mode"
    )
    publish_evidence: EvidenceLevel = Field(
        default="digests",
        description="what the vendor's terms allow the evidence bundle to publish of its responses (raw bodies, "
        "parsed results, or digests only); without the clause that allows more, digests",
    )
    evidence_terms: TermsSource | None = Field(
        default=None, description="the archived terms that decide `publish_evidence`; required for raw or results"
    )

    @model_validator(mode="after")
    def _evidence_level_has_its_clause(self) -> VendorSpec:
        """Publishing a vendor's bodies or results is the vendor's call: it must cite the clause."""
        if self.publish_evidence != "digests" and self.evidence_terms is None:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError(
                            "evidence_terms",
                            "required when publish_evidence is '{level}': the archived clause of the vendor's terms "
                            "that allows it (its file under data/terms/, sha256 and archived_on); without it, digests",
                            {"level": self.publish_evidence},
                        ),
                        loc=("evidence_terms",),
                        input=None,
                    )
                ],
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _default_key_env(cls, data: object) -> object:
        """Without a `key_env`, the key is read from the adapter's usual variable; without a `mode`,
        the configuration runs the adapter's default mode."""
        if not isinstance(data, dict):
            return data
        adapter = data.get("adapter")
        if isinstance(adapter, str) and adapter in available_adapters():
            if data.get("key_env") is None:
                data = {**data, "key_env": default_key_env(adapter)}
            if data.get("mode") is None:
                data = {**data, "mode": available_adapters()[adapter].default_mode()}
        return data

    @model_validator(mode="after")
    def _documented_mode(self) -> VendorSpec:
        """The mode is one the provider documents (the adapter's `modes`), and `options` do not
        contradict the parameters that make it (a deep configuration sending a basic request would
        be billed and published as deep)."""
        modes = available_adapters()[self.adapter].modes
        problems: list[tuple[tuple[str, ...], str]] = []
        if self.mode not in modes:
            problems.append(
                (
                    ("mode",),
                    f"{self.mode!r} is not a mode of {self.adapter} (its documented modes: {', '.join(modes)})"
                    f"{nearest(str(self.mode), list(modes))}",
                )
            )
        else:
            for key, value in modes[self.mode].items():
                if key in self.options and self.options[key] != value:
                    problems.append(
                        (
                            ("options", key),
                            f"{key}={self.options[key]!r} contradicts mode {self.mode!r} ({key}={value!r}): "
                            "name the mode that sends it instead",
                        )
                    )
            # A mode that is an endpoint of its own (Brave's LLM Context) is sent only to that endpoint.
            path, search = modes[self.mode].get("endpoint_path"), self.endpoints.get("search")
            if isinstance(path, str) and search is not None and not urlsplit(search).path.endswith(path):
                problems.append(
                    (
                        ("endpoints", "search"),
                        f"mode {self.mode!r} of {self.adapter} is its endpoint {path}: {search!r} is another",
                    )
                )
        if problems:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [InitErrorDetails(type=PydanticCustomError("mode", m), loc=loc, input=None) for loc, m in problems],
            )
        return self

    @property
    def provider(self) -> str:
        """The provider this configuration calls: its account, limits and spend ceiling are shared
        by every configuration of it."""
        return self.adapter

    @property
    def capabilities(self) -> frozenset[str]:
        """The capabilities this configuration is measured on: those its adapter has and its entry
        pins an endpoint for. A mode is a search parameter, so a provider's further modes may pin
        its search endpoint alone: its extract calls, the same request whatever the mode, are then
        measured once, by the configuration that pins them."""
        return frozenset(self.endpoints) & available_adapters()[self.adapter].capabilities

    @property
    def request_options(self) -> dict[str, object]:
        """What the adapter builds the request from: the mode's documented parameters, then `options`."""
        return {**available_adapters()[self.adapter].modes.get(str(self.mode), {}), **self.options}

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, adapter: str) -> str:
        known = sorted(available_adapters())
        if adapter not in known:
            raise ValueError(f"no adapter named {adapter!r}; available: {', '.join(known)}")
        return adapter

    @field_validator("endpoints")
    @classmethod
    def _absolute(cls, endpoints: dict[str, str]) -> dict[str, str]:
        for name, url in endpoints.items():
            if not url.startswith(("https://", "http://")):
                raise ValueError(f"endpoint {name!r} is not an absolute URL: {url!r}")
        return endpoints

    @field_validator("capability_rate_limits")
    @classmethod
    def _positive(cls, limits: dict[str, float]) -> dict[str, float]:
        for cap, limit in limits.items():
            if limit <= 0:
                raise ValueError(f"rate limit of {cap!r} must be positive")
        return limits

    def rate_limit(self, capability: Literal["search", "extract"]) -> float:
        """The pace of one endpoint: its own limit where the vendor documents one, never above the
        account's (so lowering `rate_limit_per_second` slows every endpoint)."""
        return min(self.capability_rate_limits.get(capability, self.rate_limit_per_second), self.rate_limit_per_second)

    @field_validator("prices_usd")
    @classmethod
    def _non_negative(cls, prices: dict[str, float]) -> dict[str, float]:
        for unit, price in prices.items():
            if price < 0:
                raise ValueError(f"price of {unit!r} is negative")
        return prices

    @model_validator(mode="after")
    def _prices_are_the_billed_units(self) -> VendorSpec:
        """Money is spent only on purpose: the price table names exactly the units the adapter bills
        the pinned endpoints in. A unit it does not bill (a misspelt key) and a unit it bills without
        a price would both bill as nothing, and the spend ceiling could never be reached."""
        problems = [
            InitErrorDetails(type=PydanticCustomError("billing_unit", msg), loc=loc, input=None)
            for loc, msg in price_table_problems(self.adapter, set(self.endpoints), self.prices_usd)
        ]
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self


def nearest(name: str, known: list[str]) -> str:
    """ ", did you mean 'x'?" for the known name closest to a misspelt one, or nothing."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def price_table_problems(
    adapter_name: str, pinned: set[Capability], prices: dict[str, float]
) -> list[tuple[tuple[str, ...], str]]:
    """(field path under the vendor entry, message) for each price of a unit the adapter never bills
    (a misspelt unit would bill as nothing), each unit it bills the `pinned` capabilities in that has
    no price, and a `usd` unit (the vendor's own charge in dollars) not priced at one dollar. A
    price of a unit billed only by an endpoint the manifest does not pin is harmless, and kept."""
    adapter = available_adapters()[adapter_name]()
    billed = adapter.billable_units(pinned)
    ever = adapter.billable_units(adapter.capabilities)
    problems: list[tuple[tuple[str, ...], str]] = []
    for unit in sorted(set(prices) - ever):
        problems.append(
            (
                ("prices_usd", unit),
                f"{unit!r} is not a unit {adapter_name} bills in (it bills {', '.join(sorted(ever))})"
                f"{nearest(unit, sorted(ever))}",
            )
        )
    for unit in sorted(billed - set(prices)):
        calls = " and ".join(sorted(c for c in pinned if unit in adapter.billing_units.get(c, frozenset())))
        problems.append(
            (
                ("prices_usd",),
                f"no price for {unit!r}, a unit {adapter_name} bills {calls} calls in: add "
                f"`{unit}: <USD per unit>` from the archived pricing page (a unit without a price would bill "
                "as nothing, and the spend ceiling could not stop it)",
            )
        )
    if "usd" in ever and prices.get("usd", 1.0) != 1.0:
        problems.append(
            (("prices_usd", "usd"), "'usd' is the vendor's own charge in dollars: its price is 1.0 (a dollar a dollar)")
        )
    return problems


class Exclusion(_Strict):
    """A vendor that is listed with its reason and never called or scored."""

    vendor: str = Field(min_length=1)
    reason_code: Literal[
        "no_programmatic_endpoint",
        "terms_prohibit_evaluation",
        "no_capability",
        "closed_to_new_customers",  # an account cannot be opened, so a run cannot be repeated
        "no_ranked_results",  # answers with generated text, never a ranked result list to score
        "other",
    ]
    reason: str = Field(min_length=1)
    evidence: str = Field(min_length=1)
    decided_by: str = "bench maintainers"


TaskName = Literal["search", "extract", "answer"]
STRATUM_PATTERN = r"^[a-z0-9_]+$"


class RegistrySpec(_Strict):
    """One registry the golden rows are drawn from: its stratum, how many rows, which tasks, and
    the registry's own options (EDGAR's tickers, forms and concepts; arXiv's query; the Federal
    Register's window in days). `endpoint` / `tickers_url` / `data_url` point elsewhere (a mirror)."""

    stratum: str = Field(pattern=STRATUM_PATTERN)
    rows: int | None = Field(default=None, ge=1, le=10_000, description="rows drawn (default: golden.rows_per_stratum)")
    tasks: list[TaskName] = Field(default=["search", "extract", "answer"], min_length=1)
    rate_limit_per_second: float | None = Field(
        default=None, gt=0, description="default: the registry's documented pace"
    )
    options: dict[str, object] = {}


class MixedSource(_Strict):
    """Rows from a second source beside the primary one (planted pages or a file), its strata declared."""

    source: Literal["planted_demo", "file"]
    path: PrivatePath = Field(default=None, description="relative to the private directory")
    strata: list[str] = Field(min_length=1, description="the strata taken from this source")
    rows_per_stratum: int = Field(default=15, ge=3, le=10_000)

    @model_validator(mode="after")
    def _path_for_files(self) -> MixedSource:
        if self.source == "file" and not self.path:
            raise ValueError("a mixed source of type 'file' needs a path")
        return self


def known_registries(registries: dict[str, RegistrySpec]) -> dict[str, RegistrySpec]:
    """`registries`, refused when one is not a registry bench has."""
    known = available_registries()
    unknown = sorted(set(registries) - set(known))
    if unknown:
        raise ValueError(f"no registry named {', '.join(map(repr, unknown))}; available: {', '.join(known)}")
    return registries


class GoldenSource(_Strict):
    """Where the golden rows come from: the planted demo corpus, a JSONL file, or registries
    (`registries`), optionally mixed with further sources (`mix`), each with its own strata."""

    source: Literal["planted_demo", "file", "registry"]
    path: PrivatePath = Field(default=None, description="relative to the private directory")
    rows_per_stratum: int = Field(default=40, ge=5, le=10_000)
    registries: dict[str, RegistrySpec] = {}
    contact: str | None = Field(
        default=None, description="who runs the fetch, sent in the User-Agent (EDGAR's fair-access rules need one)"
    )
    mix: list[MixedSource] = []

    @model_validator(mode="after")
    def _path_for_files(self) -> GoldenSource:
        if self.source == "file" and not self.path:
            raise ValueError("a golden source of type 'file' needs a path")
        return self

    @field_validator("registries")
    @classmethod
    def _known_registries(cls, registries: dict[str, RegistrySpec]) -> dict[str, RegistrySpec]:
        return known_registries(registries)

    @model_validator(mode="after")
    def _registry_rules(self) -> GoldenSource:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        if self.source == "registry" and not self.registries:
            problems.append((("registries",), "a golden source of type 'registry' needs at least one registry"))
        if self.registries and self.source != "registry":
            problems.append(
                (("registries",), f"registries are only read when source is 'registry', not {self.source!r}")
            )
        needs = [n for n in self.registries if get_registry(n).needs_contact]
        if needs and (not self.contact or "@" not in self.contact):
            problems.append(
                (
                    ("contact",),
                    f"{', '.join(needs)} requires a declared User-Agent with a contact: set an e-mail address",
                )
            )
        seen: dict[str, str] = {}
        declared: list[tuple[tuple[str | int, ...], str]] = [
            (("registries", n, "stratum"), spec.stratum) for n, spec in self.registries.items()
        ]
        declared += [(("mix", i, "strata"), st) for i, m in enumerate(self.mix) for st in m.strata]
        for loc, stratum in declared:
            if stratum in seen:
                problems.append(
                    (loc, f"stratum {stratum!r} is already declared by {seen[stratum]}; strata are per source")
                )
            seen.setdefault(stratum, ".".join(map(str, loc)))
        if problems:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    InitErrorDetails(type=PydanticCustomError("golden_source", msg), loc=loc, input=None)
                    for loc, msg in problems
                ],
            )
        return self


class SplitSpec(_Strict):
    public_share: float = Field(default=0.7, gt=0, lt=1)
    key_env: str = Field(default="BENCH_SPLIT_KEY", pattern=r"^[A-Z][A-Z0-9_]*$")


class RowPool(_Strict):
    """A pool of golden-row-shaped records: the planted demo's reserve pages, or a private JSONL file."""

    source: Literal["planted_demo", "file", "registry"] | None = Field(
        default=None, description="default: as the golden source (registry: candidates the draw left over)"
    )
    path: PrivatePath = Field(default=None, description="relative to the private directory")
    reserve_pages: int | None = Field(
        default=None,
        ge=1,
        description="planted_demo only: reserve pages per stratum (default: half the golden pages); "
        "each quarter drawn from the demo grows the candidate reserve by that many",
    )


class CandidatePool(RowPool):
    """Replacements for dead and rotated rows: a pool as above, and the windowed registries asked
    afresh for each quarter's draw (`registries`, written by `bench quarter next`)."""

    registries: dict[str, RegistrySpec] = Field(
        default={},
        description="windowed registries (the Federal Register) whose strata are drawn whole each quarter from "
        "the documents published since the last draw; a registry-sourced golden set's windowed registries "
        "count as listed here",
    )

    @field_validator("registries")
    @classmethod
    def _windowed_only(cls, registries: dict[str, RegistrySpec]) -> dict[str, RegistrySpec]:
        known_registries(registries)
        known = available_registries()
        fixed = sorted(n for n in registries if not get_registry(n).windowed)
        windowed = [n for n in known if get_registry(n).windowed]
        if fixed:
            raise ValueError(
                f"{', '.join(map(repr, fixed))} publishes no window of days to ask again each quarter; "
                f"windowed registries: {', '.join(windowed)}"
            )
        return registries


class DecoySpec(RowPool):
    """Decoy queries sent interleaved with the holdout, archived and never scored."""

    ratio: float = Field(default=1.0, ge=0.0, le=5.0, description="decoy rows per holdout row, in every stratum")


class ReviewSpec(_Strict):
    """The vendor-review period before publication."""

    business_days: int = Field(default=10, ge=0, le=60, description="US business days between packets and publication")


class Manifest(_Strict):
    """A snapshot manifest, validated."""

    snapshot_id: str = Field(pattern=SNAPSHOT_ID_PATTERN)
    mode: Mode
    title: str = ""
    golden: GoldenSource
    split: SplitSpec = SplitSpec()
    k_values: list[int] = list(SUPPORTED_K_VALUES)
    answer_k: int = Field(
        default=5, ge=1, le=100, description="answer rows are correct when the answer is in the top answer_k results"
    )
    results_per_query: int = Field(default=10, ge=1, le=100)
    fidelity_weights: dict[str, float] = DEFAULT_FIDELITY_WEIGHTS
    vendors: dict[str, VendorSpec] = Field(min_length=1)
    excluded: list[Exclusion] = []
    decoys: DecoySpec = DecoySpec()
    candidates: CandidatePool = Field(default=CandidatePool(), description="replacements for dead rows and rotation")
    review: ReviewSpec = ReviewSpec()
    supersedes: str | None = Field(
        default=None, pattern=SNAPSHOT_ID_PATTERN, description="the published version this errata version corrects"
    )

    @field_validator("k_values")
    @classmethod
    def _k(cls, ks: list[int]) -> list[int]:
        if not ks or len(set(ks)) != len(ks) or not set(ks) <= set(SUPPORTED_K_VALUES):
            raise ValueError(
                f"k_values must be distinct values among the k that hit@k is scored at: "
                f"{', '.join(map(str, SUPPORTED_K_VALUES))}"
            )
        return sorted(ks)

    @field_validator("fidelity_weights")
    @classmethod
    def _weights(cls, w: dict[str, float]) -> dict[str, float]:
        unknown = set(w) - set(DEFAULT_FIDELITY_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown fidelity fields {sorted(unknown)}; known: {sorted(DEFAULT_FIDELITY_WEIGHTS)}")
        if any(v < 0 for v in w.values()) or abs(sum(w.values()) - 1.0) > 1e-9:
            raise ValueError("fidelity weights must be non-negative and sum to 1")
        return w

    @field_validator("vendors")
    @classmethod
    def _vendor_names(cls, vendors: dict[str, VendorSpec]) -> dict[str, VendorSpec]:
        for name in vendors:
            if not re.match(CONFIGURATION_ID_PATTERN, name):
                raise ValueError(
                    f"configuration id {name!r} must be a provider (lower-case letters, digits or '_'), "
                    "optionally followed by '.' and its mode, like exa or exa.deep"
                )
        return vendors

    def configurations_of(self, provider: str) -> list[str]:
        """The configuration ids of one provider in this manifest (they share its account)."""
        return sorted(name for name, spec in self.vendors.items() if spec.provider == provider)

    @model_validator(mode="after")
    def _configurations_named_and_shared(self) -> Manifest:
        """A configuration id names its provider and mode: `<adapter>` runs the adapter's default
        mode, `<adapter>.<mode>` that mode; no configuration appears twice. Configurations of one
        provider share its account: they must pin the same rate limits, key and spend ceiling."""
        problems: list[tuple[tuple[str, ...], str]] = []
        seen: dict[tuple[str, str | None], str] = {}
        for name, spec in sorted(self.vendors.items()):
            provider, _, mode = name.partition(".")
            default = (
                available_adapters()[spec.adapter].default_mode() if spec.adapter in available_adapters() else None
            )
            if provider != spec.adapter:
                continue  # `_vendors_runnable` names it
            if mode and mode != spec.mode:
                problems.append(
                    (("vendors", name, "mode"), f"{name!r} names mode {mode!r}, but its entry runs mode {spec.mode!r}")
                )
            elif not mode and spec.mode != default:
                problems.append(
                    (
                        ("vendors", name, "mode"),
                        f"{name!r} is {provider}'s default mode ({default!r}); name a configuration of mode "
                        f"{spec.mode!r} {provider}.{spec.mode}",
                    )
                )
            key = (spec.adapter, spec.mode)
            if key in seen and spec.options == self.vendors[seen[key]].options:
                problems.append((("vendors", name), f"{name!r} is the same configuration as {seen[key]!r}"))
            seen.setdefault(key, name)
        for provider in sorted({spec.provider for spec in self.vendors.values()}):
            names = self.configurations_of(provider)
            first = self.vendors[names[0]]
            for name in names[1:]:
                for field in PROVIDER_SHARED_FIELDS:
                    if getattr(self.vendors[name], field) != getattr(first, field):
                        problems.append(
                            (
                                ("vendors", name, field),
                                f"differs from {names[0]}'s: configurations of {provider} share its account, so "
                                f"{field} is the provider's ({getattr(first, field)!r}), the same in each",
                            )
                        )
        if problems:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    InitErrorDetails(type=PydanticCustomError("configuration", m), loc=loc, input=None)
                    for loc, m in problems
                ],
            )
        return self

    @model_validator(mode="after")
    def _vendors_runnable(self) -> Manifest:
        """Every vendor can run, and a live one can spend only so much. A vendor's key names its
        adapter and its `vendor` partition: any other key would pass here and fail minutes into a
        run. A live vendor bills real money: each needs a spend ceiling, where its fetch stops."""
        known = sorted(available_adapters())
        problems = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "unknown_vendor",
                    "'{vendor}' names no adapter, so no vendor partition runs it (the vendors are: {known}){near}",
                    {"vendor": name, "known": ", ".join(known), "near": nearest(name, known)},
                ),
                loc=("vendors", name),
                input=name,
            )
            for name in sorted(self.vendors)
            if name.partition(".")[0] not in known
        ]
        problems += [
            InitErrorDetails(
                type=PydanticCustomError(
                    "unknown_vendor",
                    "'{vendor}' is a configuration of {provider}, but its adapter is '{adapter}': a configuration "
                    "id starts with its provider's adapter",
                    {"vendor": name, "provider": name.partition(".")[0], "adapter": spec.adapter},
                ),
                loc=("vendors", name, "adapter"),
                input=spec.adapter,
            )
            for name, spec in sorted(self.vendors.items())
            if name.partition(".")[0] in known and name.partition(".")[0] != spec.adapter
        ]
        if self.mode == "live":
            problems += [
                InitErrorDetails(
                    type=PydanticCustomError(
                        "live_rule",
                        "required in live mode: the most this snapshot may spend on {vendor}, in USD, its "
                        "preflight included; the fetch stops there and records the queries left as not sent",
                        {"vendor": name},
                    ),
                    loc=("vendors", name, "spend_ceiling_usd"),
                    input=None,
                )
                for name, spec in sorted(self.vendors.items())
                if spec.spend_ceiling_usd is None
            ]
        if problems:  # field errors, so the message names the vendor's key or field and its line
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    @model_validator(mode="after")
    def _excluded_not_called(self) -> Manifest:
        """An excluded vendor is never called: it may not also be configured in `vendors`."""
        problems = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "excluded_and_configured",
                    "'{vendor}' is excluded but also configured in `vendors`; an excluded vendor "
                    "is never called, so remove it from one of the two",
                    {"vendor": e.vendor},
                ),
                loc=("excluded", i, "vendor"),
                input=e.vendor,
            )
            for i, e in enumerate(self.excluded)
            if e.vendor in self.vendors
        ]
        if problems:  # field errors, so the message names excluded.<n>.vendor and its line
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    @model_validator(mode="after")
    def _split_key_stays_home(self) -> Manifest:
        """The split secret never leaves the operator: no vendor's key may be read from its variable."""
        problems = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "split_key_sent",
                    "'{env}' holds the split secret (split.key_env); a vendor key must come from another variable",
                    {"env": spec.key_env},
                ),
                loc=("vendors", name, "key_env"),
                input=spec.key_env,
            )
            for name, spec in sorted(self.vendors.items())
            if spec.key_env == self.split.key_env
        ]
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    @model_validator(mode="after")
    def _live_integrity(self) -> Manifest:
        """A live snapshot may not switch off what keeps it honest: decoys hide the holdout on the
        wire, and vendors get their rows at least 10 business days before publication."""
        if self.mode != "live":
            return self
        problems = []
        if self.decoys.ratio <= 0:
            problems.append(
                InitErrorDetails(
                    type=PydanticCustomError(
                        "live_rule", "must be > 0 in live mode: the holdout is never sent without decoys"
                    ),
                    loc=("decoys", "ratio"),
                    input=self.decoys.ratio,
                )
            )
        if self.review.business_days < LIVE_MIN_REVIEW_BUSINESS_DAYS:
            problems.append(
                InitErrorDetails(
                    type=PydanticCustomError(
                        "live_rule",
                        "must be at least {minimum} in live mode: every vendor gets its rows {minimum} US "
                        "business days before publication",
                        {"minimum": LIVE_MIN_REVIEW_BUSINESS_DAYS},
                    ),
                    loc=("review", "business_days"),
                    input=self.review.business_days,
                )
            )
        if problems:  # raised as field errors, so the message names decoys.ratio / review.business_days
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    @model_validator(mode="after")
    def _live_prices_pinned(self) -> Manifest:
        """A live figure is billed money: every vendor's prices must trace to the archived pricing
        text they were read from (`pricing_source`)."""
        if self.mode != "live":
            return self
        problems = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "live_rule",
                    "required in live mode: the archived pricing text the prices were read from "
                    "(its file under data/pricing/, sha256 and archived_on)",
                ),
                loc=("vendors", name, "pricing_source"),
                input=None,
            )
            for name, spec in sorted(self.vendors.items())
            if spec.pricing_source is None
        ]
        if problems:  # field errors, so the message names vendors.<name>.pricing_source and its line
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    def evidence_level(self, vendor: str) -> tuple[EvidenceLevel, str]:
        """The level at which the evidence bundle publishes a vendor's responses, and why. Live: the
        vendor's terms (`publish_evidence`). Otherwise every body was written by bench's simulator,
        which no vendor's terms govern, so it is published whole (`raw`)."""
        spec = self.vendors[vendor]
        terms = f" ({spec.evidence_terms.file})" if spec.evidence_terms else " (no clause allowing more was found)"
        if self.mode == "live":
            return spec.publish_evidence, f"the vendor's terms allow {spec.publish_evidence}{terms}"
        return "raw", (
            f"{self.mode}: every body was written by bench's simulator, not by the vendor; a live snapshot "
            f"publishes {spec.publish_evidence}{terms}"
        )

    def pool_source(self, pool: RowPool) -> str:
        """Where a pool's rows come from (a file pool without a path is checked where it is used)."""
        return pool.source or self.golden.source

    @property
    def version_tag(self) -> str:
        return self.snapshot_id


def _field_path(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "<manifest>"


def _line_of(text: str, loc: tuple) -> int | None:
    """Best-effort line of a YAML key path, so errors point where the operator should look."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def field_line(path: str | Path, loc: tuple[str | int, ...]) -> int | None:
    """The line of a field of a manifest file (or of the nearest enclosing key), for a message about it."""
    try:
        return _line_of(Path(path).read_text(encoding="utf-8"), loc)
    except OSError:
        return None


def parse_manifest(text: str, source: str) -> Manifest:
    """Validate manifest YAML text; raises BenchInputError naming the file, line and field."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise BenchInputError(source, [(mark.line + 1 if mark else None, "<yaml>", str(exc).splitlines()[0])]) from exc
    if not isinstance(data, dict):
        raise BenchInputError(source, [(None, "<manifest>", "the manifest must be a YAML mapping")])
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        problems = [(_line_of(text, err["loc"]), _field_path(err["loc"]), err["msg"]) for err in exc.errors()]
        raise BenchInputError(source, problems) from None


def load_manifest(path: str | Path) -> Manifest:
    """Load `manifest.yaml`; the snapshot id must match its folder name."""
    path = Path(path)
    if not path.exists():
        raise BenchInputError(str(path), [(None, "<file>", "manifest not found")])
    text = read_text_file(path, "manifest")
    manifest = parse_manifest(text, str(path))
    if path.parent.name != manifest.snapshot_id:
        raise BenchInputError(
            str(path),
            [
                (
                    _line_of(text, ("snapshot_id",)),
                    "snapshot_id",
                    f"{manifest.snapshot_id!r} does not match its folder {path.parent.name!r}",
                )
            ],
        )
    return manifest


def manifest_sha256(path: str | Path) -> str:
    """The SHA-256 of the manifest file's bytes, recorded with the snapshot so every figure traces to it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
