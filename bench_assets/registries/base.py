"""What every registry adapter speaks: requests, records, and the failures a response can carry."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class RegistryRequest:
    """One GET to a registry. `key` names it within a fetch (stable across runs)."""

    key: str
    url: str
    params: dict[str, str] = field(default_factory=dict)
    accept: str = "application/json"


@dataclass(frozen=True)
class RegistryRecord:
    """One record as the registry published it: its id, the fields read from it, and its own text."""

    registry: str
    record_id: str
    fields: dict[str, Any]
    raw: str  # the record's own text in the registry's format (an XML element, a JSON object)
    source_url: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw.encode("utf-8")).hexdigest()


@dataclass
class ParsedResponse:
    """The records a response holds, and those it holds without a field a golden row needs
    (record id or None, reason): recorded as evidence, never drawn."""

    records: list[RegistryRecord] = field(default_factory=list)
    rejected: list[tuple[str | None, str]] = field(default_factory=list)
    follow_up: list[RegistryRequest] = field(default_factory=list)  # requests this response leads to


class RegistryFormatError(ValueError):
    """The body is not in the registry's published format (it changed, or came back damaged)."""


@dataclass(frozen=True)
class Registry:
    """A registry: its name, DeepWeb-Bench provenance tier, documented pacing, and its two functions.

    `requests(options)` gives the first requests of a fetch; `parse(request, body)` reads one
    response body into records (raising RegistryFormatError when the format is not the registry's)
    and may ask for follow-up requests (EDGAR: a company's submissions after the ticker list)."""

    name: str
    tier: Literal[
        "T1", "T2", "T3", "T4"
    ]  # T1 primary filings, official disclosures, final rules ... T4 informal sources
    tier_reason: str
    max_rate_per_second: float
    requests: Callable[[dict[str, Any]], list[RegistryRequest]]
    parse: Callable[[RegistryRequest, str], ParsedResponse]
    needs_contact: bool = False  # the registry requires a declared User-Agent with a contact (EDGAR)
    # asked for what was published in a window of days (`since`, `until` options): its stratum is
    # new every quarter, drawn whole from the documents published since the last draw
    windowed: bool = False


def require(data: dict[str, Any], names: tuple[str, ...]) -> str | None:
    """The first of `names` missing or empty in `data` (None when all are there)."""
    for name in names:
        value = data.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            return name
    return None


def collapse(text: str) -> str:
    return " ".join(text.split())
