"""arXiv's API, `http://export.arxiv.org/api/query` (the API user manual): an Atom feed whose
`<entry>` elements are records (id, title, summary, authors, published, primary category).
arXiv asks for no more than one request every three seconds. Pages: `https://arxiv.org/abs/<id>`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from bench_assets.registries.base import (
    ParsedResponse,
    Registry,
    RegistryFormatError,
    RegistryRecord,
    RegistryRequest,
    collapse,
)

NAME = "arxiv"
API_URL = "http://export.arxiv.org/api/query"
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
REQUIRED = ("arxiv_id", "title", "summary", "published")


def requests(options: dict[str, Any]) -> list[RegistryRequest]:
    params = {
        "search_query": str(options.get("search_query", "cat:cs.IR")),
        "start": "0",
        "max_results": str(options.get("max_results", 100)),
        "sortBy": "submittedDate",
        "sortOrder": "descending",
    }
    return [RegistryRequest("query", options.get("endpoint") or API_URL, params, accept="application/atom+xml")]


def abs_url(arxiv_id: str) -> str:
    return f"https://arxiv.org/abs/{arxiv_id}"


def url_forms(fields: dict[str, Any]) -> list[str]:
    """The URLs arXiv serves one article under: its abstract page, PDF and HTML rendering,
    unversioned and at every version up to the one the feed gave, on arxiv.org and on
    export.arxiv.org, the feed's own http:// links, and its DataCite DOI (sources cited with the
    identity rules, `metrics.identity`)."""
    article = fields["arxiv_id"]
    latest = int(str(fields.get("version") or "v1").lstrip("v") or 1)
    forms = [abs_url(article), f"https://arxiv.org/pdf/{article}", f"https://export.arxiv.org/abs/{article}"]
    for v in range(1, latest + 1):
        forms += [
            f"https://arxiv.org/abs/{article}v{v}",
            f"http://arxiv.org/abs/{article}v{v}",
            f"https://arxiv.org/pdf/{article}v{v}",
            f"http://arxiv.org/pdf/{article}v{v}",
            f"https://arxiv.org/pdf/{article}v{v}.pdf",
            f"https://arxiv.org/html/{article}v{v}",
            f"https://export.arxiv.org/abs/{article}v{v}",
        ]
    forms.append(f"https://doi.org/10.48550/arXiv.{article}")
    return forms


def parse(request: RegistryRequest, body: str) -> ParsedResponse:
    try:
        root = ET.fromstring(body.encode("utf-8"))
    except ET.ParseError as exc:
        raise RegistryFormatError(f"the arXiv response is not well-formed Atom: {exc}") from None
    if root.tag != f"{ATOM}feed":
        raise RegistryFormatError(f"root element is {root.tag}, not an Atom <feed>")
    out = ParsedResponse()
    for entry in root.findall(f"{ATOM}entry"):
        entry_id = (entry.findtext(f"{ATOM}id") or "").strip()
        if "/api/errors" in entry_id:  # the API reports a bad query as an entry titled "Error"
            raise RegistryFormatError(
                f"arXiv answered with an error entry: {collapse(entry.findtext(f'{ATOM}summary') or '')}"
            )
        match = re.search(r"arxiv\.org/abs/(.+?)(v\d+)?$", entry_id)
        primary = entry.find(f"{ARXIV}primary_category")
        fields: dict[str, Any] = {
            "arxiv_id": match.group(1) if match else None,
            "version": (match.group(2) or "") if match else None,
            "title": collapse(entry.findtext(f"{ATOM}title") or ""),
            "summary": collapse(entry.findtext(f"{ATOM}summary") or ""),
            "authors": [collapse(a.findtext(f"{ATOM}name") or "") for a in entry.findall(f"{ATOM}author")],
            "published": (entry.findtext(f"{ATOM}published") or "").strip(),
            "primary_category": primary.get("term") if primary is not None else None,
        }
        missing = next((n for n in REQUIRED if not fields.get(n)), None)
        if missing:
            out.rejected.append((str(fields["arxiv_id"] or entry_id) or None, f"no {missing}"))
            continue
        raw = ET.tostring(entry, encoding="unicode")
        out.records.append(
            RegistryRecord(NAME, f"arXiv:{fields['arxiv_id']}", fields, raw, abs_url(str(fields["arxiv_id"])))
        )
    return out


REGISTRY = Registry(
    NAME,
    tier="T2",
    tier_reason="preprints whose methods are published but not peer-reviewed or official disclosures",
    max_rate_per_second=1 / 3,
    requests=requests,
    parse=parse,
)
