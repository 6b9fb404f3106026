"""The Python PEP index API, `https://peps.python.org/api/peps.json` (documented in PEP 0's
"API" page): an object keyed by PEP number; each value is one record (number, title, authors,
status, type, topic, created, python_version, ..., url). Pages: the record's `url`."""

from __future__ import annotations

import json
from typing import Any

from bench_assets.registries.base import (
    ParsedResponse,
    Registry,
    RegistryFormatError,
    RegistryRecord,
    RegistryRequest,
    require,
)

NAME = "peps"
INDEX_URL = "https://peps.python.org/api/peps.json"
REQUIRED = ("number", "title", "authors", "status", "type", "created", "url")


def url_forms(fields: dict[str, Any]) -> list[str]:
    """The URLs one PEP is served under: its page, the redirect page at its bare number, and the
    legacy python.org paths PEP 676 keeps redirecting (sources cited with the identity rules,
    `metrics.identity`)."""
    n = int(fields["number"])
    return [
        fields.get("url") or f"https://peps.python.org/pep-{n:04d}/",
        f"https://peps.python.org/{n}/",
        f"https://www.python.org/dev/peps/pep-{n:04d}/",
        f"https://www.python.org/peps/pep-{n:04d}.html",
    ]


def requests(options: dict[str, Any]) -> list[RegistryRequest]:
    return [RegistryRequest("peps", options.get("endpoint") or INDEX_URL)]


def parse(request: RegistryRequest, body: str) -> ParsedResponse:
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise RegistryFormatError(f"peps.json is not JSON: {exc.msg} at {exc.pos}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise RegistryFormatError("peps.json is not an object of PEP records keyed by number")
    out = ParsedResponse()
    for key, record in data.items():
        missing = require(record, REQUIRED)
        if missing:
            out.rejected.append((f"PEP {key}", f"no {missing}"))
            continue
        raw = json.dumps(record, indent=1)
        out.records.append(RegistryRecord(NAME, f"PEP {record['number']}", dict(record), raw, record["url"]))
    return out


REGISTRY = Registry(
    NAME,
    tier="T1",
    tier_reason="PEPs are the Python project's own documents of record for its decisions (official disclosure)",
    max_rate_per_second=1.0,
    requests=requests,
    parse=parse,
)
