"""The RFC Editor's index, `https://www.rfc-editor.org/rfc-index.xml` (schema: rfc-index.xsd).

One GET returns every entry; an `<rfc-entry>` is one record (doc-id, title, authors, date,
abstract, status, stream, ...). `<rfc-not-issued-entry>` numbers that were never issued are
rejected: they carry no title. Pages: `https://www.rfc-editor.org/rfc/rfcNNNN`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from bench_assets.registries.base import ParsedResponse, Registry, RegistryFormatError, RegistryRecord, RegistryRequest
from bench_assets.registries.base import collapse as _collapse

NAME = "rfc_editor"
INDEX_URL = "https://www.rfc-editor.org/rfc-index.xml"
REQUIRED = ("number", "title", "month", "year")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(entry: ET.Element, name: str) -> ET.Element | None:
    return next((c for c in entry if _local(c.tag) == name), None)


def _text(node: ET.Element | None) -> str | None:
    return _collapse("".join(node.itertext())) if node is not None else None


def page_url(number: int) -> str:
    return f"https://www.rfc-editor.org/rfc/rfc{number}"


# The index's <file-format> names and the extensions the RFC Editor serves them under.
FORMAT_EXTENSIONS = {"HTML": "html", "TXT": "txt", "ASCII": "txt", "PDF": "pdf", "XML": "xml"}


def url_forms(fields: dict[str, Any]) -> list[str]:
    """The URLs the RFC Editor and the IETF serve one RFC under, from its index entry: the RFC
    Editor's page, its info page and each file format the entry lists, the Datatracker's document
    page and rendering, www.ietf.org's copies of the text, the legacy tools.ietf.org rendering,
    and the DOI (the sources are cited with the identity rules, `metrics.identity`)."""
    n = fields["number"]
    extensions = sorted({FORMAT_EXTENSIONS[f] for f in fields.get("formats") or () if f in FORMAT_EXTENSIONS})
    forms = [
        page_url(n),
        f"https://www.rfc-editor.org/info/rfc{n}",
        *(f"https://www.rfc-editor.org/rfc/rfc{n}.{ext}" for ext in extensions),
        f"https://datatracker.ietf.org/doc/rfc{n}/",
        f"https://datatracker.ietf.org/doc/html/rfc{n}",
        *(f"https://www.ietf.org/rfc/rfc{n}.{ext}" for ext in extensions if ext in ("txt", "html")),
        f"https://tools.ietf.org/html/rfc{n}",
    ]
    if fields.get("doi"):
        forms.append(f"https://doi.org/{fields['doi']}")
    return forms


def requests(options: dict[str, Any]) -> list[RegistryRequest]:
    return [RegistryRequest("rfc-index", options.get("endpoint") or INDEX_URL, accept="application/xml")]


def entry_fields(entry: ET.Element) -> dict[str, Any]:
    doc_id = _text(_child(entry, "doc-id")) or ""
    date = _child(entry, "date")
    abstract = _child(entry, "abstract")
    return {
        "doc_id": doc_id,
        "number": int(doc_id[3:]) if doc_id.startswith("RFC") and doc_id[3:].isdigit() else None,
        "title": _text(_child(entry, "title")),
        "authors": [_text(_child(a, "name")) for a in entry if _local(a.tag) == "author"],
        "month": _text(_child(date, "month")) if date is not None else None,
        "year": _text(_child(date, "year")) if date is not None else None,
        "abstract": [_text(p) for p in abstract if _local(p.tag) == "p"] if abstract is not None else [],
        "current_status": _text(_child(entry, "current-status")),
        "stream": _text(_child(entry, "stream")),
        "wg": _text(_child(entry, "wg_acronym")),
        "page_count": _text(_child(entry, "page-count")),
        "keywords": [_text(k) for k in (_child(entry, "keywords") or [])],
        "doi": _text(_child(entry, "doi")),
        "formats": [_text(f) for f in (_child(entry, "format") or [])],
    }


def parse(request: RegistryRequest, body: str) -> ParsedResponse:
    try:
        root = ET.fromstring(body.encode("utf-8"))
    except ET.ParseError as exc:
        raise RegistryFormatError(f"rfc-index.xml is not well-formed XML: {exc}") from None
    if _local(root.tag) != "rfc-index":
        raise RegistryFormatError(f"root element is <{_local(root.tag)}>, not <rfc-index>")
    out = ParsedResponse()
    for entry in root:
        kind = _local(entry.tag)
        if kind == "rfc-not-issued-entry":
            out.rejected.append((_text(_child(entry, "doc-id")), "not issued: no title, date or abstract"))
        if kind != "rfc-entry":
            continue
        fields = entry_fields(entry)
        missing = next((name for name in REQUIRED if not fields.get(name)), None)
        if missing:
            out.rejected.append((fields["doc_id"] or None, f"no {missing}"))
            continue
        raw = ET.tostring(entry, encoding="unicode")
        out.records.append(RegistryRecord(NAME, fields["doc_id"], fields, raw, page_url(fields["number"])))
    return out


REGISTRY = Registry(
    NAME,
    tier="T1",
    tier_reason="the RFC series is the IETF's own publication of record (official disclosure)",
    max_rate_per_second=1.0,
    requests=requests,
    parse=parse,
)
