"""The registries of golden truth, as the simulator serves them: their published files (the real
extracts in `registry_extracts/`, see SOURCES.md there) at the registries' own hosts, and a page
for every record at the URL the record points to, which the simulated vendors can find.

The pages are renderings of the records (a PEP's page also carries the opening of its real
reStructuredText source); they are not copies of the live pages, which the live verification
fetches for real. Each page says so in its first paragraph.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from starlette.responses import Response

from bench_assets.golden.planted import Page
from bench_assets.metrics import normalize_url
from bench_assets.registries import arxiv, federal_register, get_registry, peps, rfc_editor
from bench_assets.registries import sec_edgar as edgar
from bench_assets.registries.base import RegistryRecord, RegistryRequest
from bench_assets.simulator.index import tokenize, unit_hash
from bench_assets.simulator.profiles import VendorProfile

EXTRACTS = Path(__file__).parent / "registry_extracts"
RENDERED = "Simulated page rendered from the registry record (the live page is fetched in live mode)."
SEARCH_SHARE = 0.6  # a registry page competes when it holds this share of the query's words

# (host, path) -> (extract file, media type): each registry's published files at its own host
FILES = {
    ("www.rfc-editor.org", "/rfc-index.xml"): ("rfc_editor/rfc-index.xml", "application/xml"),
    ("peps.python.org", "/api/peps.json"): ("peps/peps.json", "application/json"),
    ("export.arxiv.org", "/api/query"): ("arxiv/query-all-GAN.atom", "application/atom+xml"),
    ("www.federalregister.gov", "/api/v1/documents.json"): ("federal_register/documents.json", "application/json"),
    ("www.sec.gov", "/files/company_tickers.json"): ("sec_edgar/company_tickers.json", "application/json"),
}
for _file in sorted((EXTRACTS / "sec_edgar" / "submissions").glob("CIK*.json")):
    FILES[("data.sec.gov", f"/submissions/{_file.name}")] = (f"sec_edgar/submissions/{_file.name}", "application/json")
for _file in sorted((EXTRACTS / "sec_edgar" / "companyfacts").glob("CIK*.json")):
    FILES[("data.sec.gov", f"/api/xbrl/companyfacts/{_file.name}")] = (
        f"sec_edgar/companyfacts/{_file.name}",
        "application/json",
    )


def _records(name: str, path: str, key: str = "extract") -> list[RegistryRecord]:
    registry = get_registry(name)
    parse = (
        edgar.parse_with({"forms": ["10-K", "10-Q", "10-K/A"], "concepts": _all_concepts()})
        if name == edgar.NAME
        else registry.parse
    )
    return parse(RegistryRequest(key, ""), (EXTRACTS / path).read_text(encoding="utf-8")).records


# Each extract, by registry: its file, and the request key its parser reads it with.
EXTRACT_FILES = {
    rfc_editor.NAME: [("rfc_editor/rfc-index.xml", "extract")],
    peps.NAME: [("peps/peps.json", "extract")],
    arxiv.NAME: [("arxiv/query-all-GAN.atom", "extract")],
    federal_register.NAME: [("federal_register/documents.json", "extract")],
    edgar.NAME: [
        (f"sec_edgar/submissions/{f.name}", "submissions")
        for f in sorted((EXTRACTS / "sec_edgar" / "submissions").glob("CIK*.json"))
    ],
}


def extract_records() -> dict[str, list[RegistryRecord]]:
    """Every record of the extracts that names a document with a page of its own, by registry
    (EDGAR's filings; its XBRL facts are values inside filings)."""
    return {
        name: [r for path, key in files for r in _records(name, path, key)] for name, files in EXTRACT_FILES.items()
    }


def record_url_forms(record: RegistryRecord) -> list[str]:
    """The URLs the registry serves this record's document under (its own page first), as each
    registry module documents them."""
    f = record.fields
    if record.registry == rfc_editor.NAME:
        return rfc_editor.url_forms(f)
    if record.registry == peps.NAME:
        return peps.url_forms(f)
    if record.registry == arxiv.NAME:
        return arxiv.url_forms(f)
    if record.registry == federal_register.NAME:
        return federal_register.url_forms(f)
    if record.registry == edgar.NAME and "accessionNumber" in f:
        return edgar.filing_url_forms(f["cik"], f["accessionNumber"], str(f["primaryDocument"]))
    return [record.source_url]


def _all_concepts() -> list[str]:
    out = []
    for f in (EXTRACTS / "sec_edgar" / "companyfacts").glob("CIK*.json"):
        for concepts in json.loads(f.read_text())["facts"].values():
            out += list(concepts)
    return out


def _page(url: str, title: str, paragraphs: list[str], published: str = "2026-01-01") -> Page:
    return Page(
        url=url,
        stratum="registry",
        title=title,
        paragraphs=(RENDERED, *paragraphs),
        table_header=(),
        table_rows=(),
        golden=False,
        published=published,
    )


def _pep_body(number: int) -> list[str]:
    """The opening of the PEP's real source after its header block, paragraph by paragraph."""
    path = EXTRACTS / "peps" / "pages" / f"pep-{number:04d}.rst"
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8").split("\n\n", 1)[-1]
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip() and not set(p.strip()) <= set("=-~")]


@lru_cache(maxsize=1)
def registry_pages() -> dict[str, Page]:
    """A page for every record of every extract, by its canonical URL."""
    pages: list[Page] = []
    for r in _records("rfc_editor", "rfc_editor/rfc-index.xml"):
        f = r.fields
        pages.append(
            _page(
                r.source_url,
                f"RFC {f['number']}: {f['title']}",
                [
                    f"Request for Comments: {f['number']}",
                    f"{f['month']} {f['year']}",
                    f"Authors: {', '.join(a for a in f['authors'] if a)}",
                    f"Category: {f['current_status']}",
                    "Abstract",
                    *f["abstract"],
                ],
            )
        )
    for r in _records("peps", "peps/peps.json"):
        f = r.fields
        pages.append(
            _page(
                r.source_url,
                f"PEP {f['number']} – {f['title']}",
                [
                    f"Author: {f['authors']}",
                    f"Status: {f['status']}",
                    f"Type: {f['type']}",
                    f"Created: {f['created']}",
                    *_pep_body(f["number"]),
                ],
            )
        )
    for r in _records("arxiv", "arxiv/query-all-GAN.atom"):
        f = r.fields
        pages.append(
            _page(
                r.source_url,
                f"[{f['arxiv_id']}] {f['title']}",
                [
                    f"Authors: {', '.join(f['authors'])}",
                    f"Abstract: {f['summary']}",
                    f"Submitted on {f['published'][:10]}",
                    f"Subjects: {f['primary_category']}",
                ],
            )
        )
    for r in _records("federal_register", "federal_register/documents.json"):
        f = r.fields
        pages.append(
            _page(
                r.source_url,
                f["title"],
                [f"Document Number: {f['document_number']}", f"Type: {f['type']}", "Summary", f.get("abstract") or ""],
            )
        )
    for sub in sorted((EXTRACTS / "sec_edgar" / "submissions").glob("CIK*.json")):
        for r in _records("sec_edgar", f"sec_edgar/submissions/{sub.name}", "submissions"):
            d = r.fields
            pages.append(
                _page(
                    r.source_url,
                    f"{d['company']} {d['form']} {d['reportDate']}",
                    [
                        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
                        f"FORM {d['form']}",
                        f"For the period ended {d['reportDate']}",
                        d["company"] or "",
                    ],
                )
            )
            pages.append(
                _page(
                    edgar.index_url(d["cik"], d["accessionNumber"]),
                    f"EDGAR Filing Documents for {d['accessionNumber']}",
                    [
                        f"Form {d['form']} - {d.get('primaryDocDescription') or ''}",
                        f"SEC Accession No. {d['accessionNumber']}",
                        f"Filing Date {d['filingDate']}",
                        f"Period of Report {d['reportDate']}",
                        f"{d['company']} (Filer) CIK: {edgar.cik10(d['cik'])}",
                        d["primaryDocument"],
                    ],
                )
            )
    concepts: dict[str, list[dict]] = {}
    for facts_file in sorted((EXTRACTS / "sec_edgar" / "companyfacts").glob("CIK*.json")):
        for r in _records("sec_edgar", f"sec_edgar/companyfacts/{facts_file.name}", "companyfacts"):
            concepts.setdefault(r.source_url, []).append(r.fields)
    for url, facts in concepts.items():
        head = facts[0]
        pages.append(
            _page(
                url,
                f"{head['company']} {head['label']} ({head['concept']}) XBRL facts",
                [
                    f"Fiscal year {x['fy']} (period ending {x['end']}): {x['label']} {x['val']} {x['unit']}, filed {x['filed']} "
                    f"in a {x['form']} ({x['accn']})"
                    for x in facts
                ],
            )
        )
    return {normalize_url(p.url): p for p in pages}


# The share of a vendor's registry results it writes under the registry's own canonical URL; the
# rest under another of the registry's URL forms of the same document, as search engines index
# them (datatracker.ietf.org for an RFC, /pdf/ for an arXiv paper, the inline XBRL viewer for a
# filing). Which form a vendor uses for a page is fixed per vendor and page.
CANONICAL_SHARE = 0.4


@lru_cache(maxsize=1)
def registry_url_forms() -> dict[str, tuple[str, ...]]:
    """Every registry page's other URL forms (the registry's own forms of the same document, none
    normalizing to the page's URL), by the page's normalized URL."""
    pages = registry_pages()
    out: dict[str, tuple[str, ...]] = {}
    for records in extract_records().values():
        for record in records:
            forms = record_url_forms(record)
            urls = [record.source_url]
            if record.registry == edgar.NAME and "accessionNumber" in record.fields:
                urls.append(edgar.index_url(record.fields["cik"], record.fields["accessionNumber"]))
            for url in urls:
                own = normalize_url(url)
                if own in pages:
                    out[own] = tuple(dict.fromkeys(f for f in forms if normalize_url(f) != own))
    return out


@dataclass
class RegistrySite:
    """The registry hosts inside the simulator: their files, pages the vendors can find, and the
    registries' other URL forms of each page, which the vendors return too."""

    pages: dict[str, Page] = field(default_factory=registry_pages)
    forms: dict[str, tuple[str, ...]] = field(default_factory=registry_url_forms)
    _by_form: dict[str, Page] | None = None
    # Built on first search, as every search asks: for each word, which pages hold it (a mask in
    # page order), and each vendor's covered pages.
    _holding: dict[str, np.ndarray] | None = None
    _covered: dict[tuple[str, float], np.ndarray] = field(default_factory=dict)

    def page(self, url: str) -> Page | None:
        """The registry page at `url`, or at any of the registry's other URL forms of it."""
        if self._by_form is None:
            self._by_form = {normalize_url(f): self.pages[own] for own, forms in self.forms.items() for f in forms}
        form = normalize_url(url)
        return self.pages.get(form) or self._by_form.get(form)

    def vendor_url(self, vendor: str, page: Page) -> str:
        """The URL this vendor returns a page under: a registry page under the registry's
        canonical URL for a share of pages (`CANONICAL_SHARE`), else under one of its other forms,
        fixed per vendor and page; any other page under its own URL."""
        forms = self.forms.get(normalize_url(page.url))
        draw = unit_hash(vendor, "registry-url-form", page.url)
        if not forms or draw < CANONICAL_SHARE:
            return page.url
        return forms[min(len(forms) - 1, int((draw - CANONICAL_SHARE) / (1 - CANONICAL_SHARE) * len(forms)))]

    def searchable(self, vendor: str, profile: VendorProfile, query: str) -> list[Page]:
        """The registry pages in this vendor's index that hold most of the query's words, in page order."""
        terms = set(tokenize(query))
        if not terms:
            return []
        listed = list(self.pages.values())
        if self._holding is None:
            holding: dict[str, np.ndarray] = {}
            for i, page in enumerate(listed):
                for word in set(tokenize(page.text())):
                    holding.setdefault(word, np.zeros(len(listed), dtype=bool))[i] = True
            self._holding = holding
        key = (vendor, profile.coverage)
        if key not in self._covered:
            self._covered[key] = np.array([unit_hash(vendor, "coverage", p.url) < profile.coverage for p in listed])
        held = np.zeros(len(listed), dtype=np.int64)  # how many of the query's words each page holds
        for word in terms:
            if word in self._holding:
                held += self._holding[word]
        return [listed[i] for i in np.flatnonzero(self._covered[key] & (held / len(terms) >= SEARCH_SHARE)).tolist()]


def registry_file(host: str, path: str) -> Response | None:
    """A registry's published file (or EDGAR's companyconcept view of a companyfacts file), else None."""
    found = FILES.get((host, path))
    if found is not None:
        return Response((EXTRACTS / found[0]).read_bytes(), media_type=found[1])
    if host == "data.sec.gov" and path.startswith("/api/xbrl/companyconcept/"):
        return _company_concept(path)
    return None


def _company_concept(path: str) -> Response | None:
    """EDGAR's companyconcept API: one concept's facts, as found in the companyfacts file."""
    parts = path.removesuffix(".json").split("/")  # ['', 'api', 'xbrl', 'companyconcept', CIK, taxonomy, concept]
    if len(parts) != 7:
        return None
    facts_file = EXTRACTS / "sec_edgar" / "companyfacts" / f"{parts[4]}.json"
    if not facts_file.exists():
        return None
    data = json.loads(facts_file.read_text())
    concept = data["facts"].get(parts[5], {}).get(parts[6])
    if concept is None:
        return None
    body = {
        "cik": data["cik"],
        "taxonomy": parts[5],
        "tag": parts[6],
        "label": concept["label"],
        "description": concept["description"],
        "entityName": data["entityName"],
        "units": concept["units"],
    }
    return Response(json.dumps(body), media_type="application/json")
