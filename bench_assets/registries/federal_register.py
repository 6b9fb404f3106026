"""The Federal Register API, `https://www.federalregister.gov/api/v1/documents.json` (API v1
documentation): `{count, results: [document, ...]}`; each document is a record (document_number,
title, type, abstract, publication_date, agencies, html_url). Asked for documents published in
the last `days` days, so this stratum is new every snapshot; or, given `since` (and `until`), for
documents published between those days (the API's `conditions[publication_date][gte]` and
`[lte]`): the window a next quarter's draw asks for (`golden.registry_window`). Pages: the
record's `html_url`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from bench_assets.registries.base import (
    ParsedResponse,
    Registry,
    RegistryFormatError,
    RegistryRecord,
    RegistryRequest,
    require,
)

NAME = "federal_register"
API_URL = "https://www.federalregister.gov/api/v1/documents.json"
REQUIRED = ("document_number", "title", "type", "html_url")
FIELDS = ("document_number", "title", "type", "abstract", "publication_date", "agencies", "html_url")


def url_forms(fields: dict[str, Any]) -> list[str]:
    """The URLs one Federal Register document is served under: its page (with and without the
    slug), its short links, its full text, its public-inspection copy and its official copies on
    govinfo (dated by its publication date, or the date of its page's path). Sources cited with the
    identity rules (`metrics.identity`)."""
    number, page = fields["document_number"], fields["html_url"]
    forms = [page, f"https://www.federalregister.gov/d/{number}", f"https://www.federalregister.gov/a/{number}"]
    forms.append(f"https://public-inspection.federalregister.gov/{number}.pdf")
    dated = re.search(r"/documents/([0-9]{4})/([0-9]{2})/([0-9]{2})/", page)
    day = fields.get("publication_date") or ("-".join(dated.groups()) if dated else None)
    if day:
        y, m, d = day.split("-")
        forms += [
            f"https://www.federalregister.gov/documents/{y}/{m}/{d}/{number}",
            f"https://www.federalregister.gov/documents/full_text/html/{y}/{m}/{d}/{number}.html",
            f"https://www.federalregister.gov/documents/full_text/xml/{y}/{m}/{d}/{number}.xml",
            f"https://www.federalregister.gov/documents/full_text/text/{y}/{m}/{d}/{number}.txt",
            f"https://www.govinfo.gov/content/pkg/FR-{day}/pdf/{number}.pdf",
            f"https://www.govinfo.gov/content/pkg/FR-{day}/html/{number}.htm",
            f"https://www.govinfo.gov/app/details/FR-{day}/{number}",
        ]
    forms.append(f"https://www.govinfo.gov/link/fr/{number}?link-type=pdf")
    return forms


def requests(options: dict[str, Any]) -> list[RegistryRequest]:
    """The documents published in the last `days` days, or from `since` to `until` (ISO dates,
    both days included); a window's request is keyed by its days, so another window is asked anew."""
    since = options.get("since") or (datetime.now(UTC).date() - timedelta(days=int(options.get("days", 7)))).isoformat()
    params = {
        "conditions[publication_date][gte]": str(since),
        "order": "newest",
        "per_page": str(options.get("per_page", 100)),
        **{f"fields[{i}]": f for i, f in enumerate(FIELDS)},
    }
    key = "documents"
    if options.get("since"):
        key = f"documents {since}..{options.get('until') or ''}"
        if options.get("until"):
            params["conditions[publication_date][lte]"] = str(options["until"])
    return [RegistryRequest(key, options.get("endpoint") or API_URL, params)]


def parse(request: RegistryRequest, body: str) -> ParsedResponse:
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise RegistryFormatError(f"the documents response is not JSON: {exc.msg} at {exc.pos}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise RegistryFormatError("the documents response has no `results` list")
    out = ParsedResponse()
    for doc in data["results"]:
        if not isinstance(doc, dict):
            out.rejected.append((None, "a result that is not an object"))
            continue
        missing = require(doc, REQUIRED)
        if missing:
            out.rejected.append((doc.get("document_number"), f"no {missing}"))
            continue
        raw = json.dumps(doc, sort_keys=True)
        out.records.append(RegistryRecord(NAME, f"FR {doc['document_number']}", dict(doc), raw, doc["html_url"]))
    return out


REGISTRY = Registry(
    NAME,
    tier="T1",
    tier_reason="the Federal Register is the official daily publication of US rules, proposed rules and notices",
    max_rate_per_second=1.0,
    requests=requests,
    parse=parse,
    windowed=True,
)
