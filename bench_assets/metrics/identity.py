"""Document identity for hit@k: the registries' own URL forms of one record name one document.

A golden row names a document, not a spelling. The registries whose documents golden rows name
serve each record under several URLs (formats, mirrors, short links, viewers, DOIs); a search
engine returns whichever it indexed. :func:`document_key` reads, from a URL's normalized form
(:func:`bench_assets.metrics.normalize_url`) alone, which registry document it names:

* RFC Editor / IETF: the RFC number (``rfc:9110``);
* arXiv: the arXiv identifier without its version (``arxiv:2106.09685``; an old-style identifier
  without its subject class, ``arxiv:math/0309136``);
* Python PEPs: the PEP number (``pep:8``);
* Federal Register: the document number (``fr:2020-28567``);
* SEC EDGAR: the accession number, without dashes (``edgar:000095017022019867``).

Two URLs name the same document when their keys are equal; a URL no rule reads has no key and
names the document its normalized form is (:func:`match_key`). Another document of the same
registry has another key and is never a match: RFC 9110 is not RFC 9111 nor RFC 91100, another
accession of the same company is not the filing. Only the URL forms listed in :data:`RULES` are
read, each matched whole (a path that merely contains an RFC number names nothing); a form no
registry documents (a mirror, a search page, a figure inside an HTML paper) stays its own
document. Each registry's forms are cited beside them (``citations``) and published, with the
rules' version, by :func:`identity_rules`.

Rows that name documents no rule covers (planted pages, hand-verified rows) list their
equivalent URLs explicitly (``SearchTask.equivalent_urls``); those are golden URLs for matching.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

__all__ = [
    "IDENTITY_RULES_VERSION",
    "RULES",
    "IdentityRule",
    "UrlForm",
    "document_key",
    "identity_hosts",
    "identity_rules",
    "match_key",
    "site_of",
]

# Raised whenever a rule is added, removed or changed: published with every figure hit@k feeds.
IDENTITY_RULES_VERSION = "1.0"

# A key is never a normalized URL form: no form starts with "@" (userinfo is dropped with
# everything before the last "@" of the authority). Not a control character: pandas' hash tables
# read object strings as C strings, up to the first NUL.
_KEY_MARK = "@"
_REMEMBERED = 1 << 16


@dataclass(frozen=True)
class UrlForm:
    """One URL form a registry serves a record under: the normalized host (no ``www.``), the
    path it must match whole (``pattern``, with the identifier in the group ``id``), and the
    template published for readers. ``query_param``: the form carries the document in that
    query parameter (a viewer URL) and ``pattern`` matches the parameter's value instead."""

    host: str
    pattern: re.Pattern[str]
    template: str
    query_param: str | None = None


@dataclass(frozen=True)
class Citation:
    """Where a registry documents its URL forms: the source, its address, and what it shows."""

    source: str
    url: str
    shows: str


@dataclass(frozen=True)
class IdentityRule:
    """One registry's identity rule: what identifies a record, the URL forms read, how the
    identifier read from a URL becomes the key, and the registry's own documentation."""

    registry: str
    title: str
    identifier: str
    prefix: str
    forms: tuple[UrlForm, ...]
    citations: tuple[Citation, ...]
    canonical: Callable[[str], str]
    never: str


def _form(host: str, path: str, template: str, flags: int = 0, query_param: str | None = None) -> UrlForm:
    return UrlForm(host, re.compile(path, flags), template, query_param)


def _number(text: str) -> str:
    return str(int(text))


def _arxiv_id(text: str) -> str:
    # An old-style identifier's subject class is not part of the article's identity: arXiv's
    # internal "math.CA/0611800v2" is the external "arXiv:math/0611800v2" (arxiv_identifier_for_services).
    if "/" in text:
        archive, number = text.split("/", 1)
        return f"{archive.split('.', 1)[0].lower()}/{number}"
    return text


def _accession(text: str) -> str:
    return text.replace("-", "")


_RFC = r"rfc(?P<id>[1-9][0-9]*)"
# New-style identifiers have 4 digits after the dot from 0704 to 1412 and 5 from 1501 on
# (arxiv_identifier.md); old-style ones are archive[.subject class]/YYMMNNN.
_ARXIV_ID = (
    r"(?P<id>(?:0[7-9]|1[0-4])[0-9]{2}\.[0-9]{4}|(?:1[5-9]|[2-9][0-9])[0-9]{2}\.[0-9]{5}"
    r"|[a-z]+(?:-[a-z]+)?(?:\.[A-Za-z]{2})?/[0-9]{7})"
)
_ARXIV_VERSION = r"(?:v[0-9]+)?"
# Federal Register document numbers: "2020-28567", "94-1234", corrections "C1-2020-28567", the
# 2009-era "E9-12345". Never "FR-2020-12-31" (a whole issue's package on govinfo).
_FR_DOC = r"(?P<id>(?:[A-Z][0-9]-)?[0-9]{2,4}-[0-9]+|[A-Z][0-9]-[0-9]+)"
_FR_DATE = r"[0-9]{4}/[0-9]{1,2}/[0-9]{1,2}"
_GOVINFO_FR = r"FR-[0-9]{4}-[0-9]{2}-[0-9]{2}"
_EDGAR_FOLDER = r"/Archives/edgar/data/[0-9]+/(?P<id>[0-9]{18})"

RULES: tuple[IdentityRule, ...] = (
    IdentityRule(
        registry="rfc_editor",
        title="RFC series (RFC Editor, IETF)",
        identifier="RFC number",
        prefix="rfc",
        canonical=_number,
        never="another RFC number: RFC 9110 is not RFC 9111 nor RFC 91100; an Internet-Draft is not the RFC",
        forms=(
            _form(
                "rfc-editor.org",
                rf"/rfc/{_RFC}(?:\.(?:html|txt|pdf|xml))?",
                "www.rfc-editor.org/rfc/rfcN[.html|.txt|.pdf|.xml]",
            ),
            _form("rfc-editor.org", rf"/info/{_RFC}", "www.rfc-editor.org/info/rfcN"),
            _form(
                "rfc-editor.org", rf"/rfc/inline-errata/{_RFC}\.html", "www.rfc-editor.org/rfc/inline-errata/rfcN.html"
            ),
            _form(
                "rfc-editor.org", rf"/(?:rfc/)?pdfrfc/{_RFC}\.txt\.pdf", "www.rfc-editor.org/[rfc/]pdfrfc/rfcN.txt.pdf"
            ),
            _form("datatracker.ietf.org", rf"/doc/{_RFC}", "datatracker.ietf.org/doc/rfcN/"),
            _form(
                "datatracker.ietf.org",
                rf"/doc/html/{_RFC}(?:\.(?:txt|html))?",
                "datatracker.ietf.org/doc/html/rfcN[.txt|.html]",
            ),
            _form("ietf.org", rf"/rfc/{_RFC}\.(?:txt|html|pdf|xml)", "www.ietf.org/rfc/rfcN.txt|.html|.pdf|.xml"),
            _form("tools.ietf.org", rf"/html/{_RFC}", "tools.ietf.org/html/rfcN"),
            _form("doi.org", r"/10\.17487/rfc0*(?P<id>[1-9][0-9]*)", "doi.org/10.17487/RFCNNNN", re.IGNORECASE),
            _form("dx.doi.org", r"/10\.17487/rfc0*(?P<id>[1-9][0-9]*)", "dx.doi.org/10.17487/RFCNNNN", re.IGNORECASE),
        ),
        citations=(
            Citation(
                "RFC Editor, rfc-index.xml (the registry's own index, extract in bench_assets/simulator/registry_extracts)",
                "https://www.rfc-editor.org/rfc-index.xml",
                "each <rfc-entry> lists its file formats (HTML, TXT, PDF, XML) and its DOI 10.17487/RFCNNNN",
            ),
            Citation(
                "RFC Editor website source, ietf-tools/red client/utilities/url.ts (commit 1dd59388b3b04be2d47dd1fdd7afa42cb6285df0)",
                "https://github.com/ietf-tools/red/blob/1dd59388b3b04be2d47dd1fdd7afa42cb6285df0/client/utilities/url.ts",
                "the RFC Editor's own paths: /rfc/rfcN/, /rfc/rfcN.html, /info/rfcN/",
            ),
            Citation(
                "RFC 7841, Section 3.2.3 (the boilerplate every RFC carries)",
                "https://www.rfc-editor.org/rfc/rfc7841.html",
                '"may be obtained at https://www.rfc-editor.org/info/rfcN"',
            ),
            Citation(
                "IETF Datatracker source, ietf-tools/datatracker ietf/doc/urls.py (commit 024cfc3f2004f069d302424817a3d682b028507e)",
                "https://github.com/ietf-tools/datatracker/blob/024cfc3f2004f069d302424817a3d682b028507e/ietf/doc/urls.py",
                "/doc/<name>/ (the document's page) and /doc/html/<name>(.txt|.html)? (the document)",
            ),
            Citation(
                "IETF web server configuration, ietf-tools/www k8s/ietfweb/nginx-default.conf (commit 0dbcce2233172a2524fb069756e2c2212cc75438)",
                "https://github.com/ietf-tools/www/blob/0dbcce2233172a2524fb069756e2c2212cc75438/k8s/ietfweb/nginx-default.conf",
                "www.ietf.org/rfc serves the RFC directory (rfcN.txt, .html, .pdf, .xml)",
            ),
            Citation(
                "IETF tools transition plan, ietf-tools/tools-transition-plan README.md",
                "https://github.com/ietf-tools/tools-transition-plan/blob/main/README.md",
                "tools.ietf.org/html/rfcN redirects to www.rfc-editor.org/rfc/rfcN.html",
            ),
        ),
    ),
    IdentityRule(
        registry="arxiv",
        title="arXiv",
        identifier="arXiv identifier without its version (and, for old-style identifiers, without the subject class)",
        prefix="arxiv",
        canonical=_arxiv_id,
        never="another arXiv identifier; a figure or file inside an HTML paper is not the paper",
        forms=(
            *(
                _form(host, rf"/{kind}/{_ARXIV_ID}{_ARXIV_VERSION}{suffix}", f"{host}/{kind}/<id>[vN]{shown}")
                for host in ("arxiv.org", "export.arxiv.org")
                for kind, suffix, shown in (("abs", "", ""), ("pdf", r"(?:\.pdf)?", "[.pdf]"), ("html", "", ""))
            ),
            _form(
                "browse.arxiv.org", rf"/(?:abs|html)/{_ARXIV_ID}{_ARXIV_VERSION}", "browse.arxiv.org/abs|html/<id>[vN]"
            ),
            _form("doi.org", rf"/10\.48550/arxiv\.{_ARXIV_ID}", "doi.org/10.48550/arXiv.<id>", re.IGNORECASE),
            _form("dx.doi.org", rf"/10\.48550/arxiv\.{_ARXIV_ID}", "dx.doi.org/10.48550/arXiv.<id>", re.IGNORECASE),
        ),
        citations=(
            Citation(
                'arXiv, "Understanding the arXiv identifier" (arXiv/arxiv-docs source/help/arxiv_identifier.md)',
                "https://info.arxiv.org/help/arxiv_identifier.html",
                "arXiv:YYMM.NNNNN[vV]: without the version the identifier refers to the article (its latest version)",
            ),
            Citation(
                'arXiv, "arXiv identifier scheme - information for interacting services"',
                "https://info.arxiv.org/help/arxiv_identifier_for_services.html",
                "old-style internal math.CA/0611800v2 is external arXiv:math/0611800v2 (the subject class is not part of it)",
            ),
            Citation(
                "arXiv API user's manual, and the API's Atom feed (extract in bench_assets/simulator/registry_extracts/arxiv)",
                "https://info.arxiv.org/help/api/user-manual.html",
                "export.arxiv.org serves the API; each entry links arxiv.org/abs/<id>vN and arxiv.org/pdf/<id>vN",
            ),
            Citation(
                'arXiv, "Understanding arXiv Assigned DOIs" (arXiv/arxiv-docs source/help/doi.md)',
                "https://info.arxiv.org/help/doi.html",
                "https://doi.org/10.48550/arXiv.<id>, one DOI per article (a new version gets no new DOI)",
            ),
            Citation(
                'arXiv, "HTML papers for beta testing" (arXiv/arxiv-docs source/about/accessibility_html_papers.md)',
                "https://info.arxiv.org/about/accessibility_html_papers.html",
                "HTML renderings at browse.arxiv.org/html/<id>vN (now arxiv.org/html/<id>vN, e.g. arXiv's own arxiv.org/html/2402.08954v1)",
            ),
        ),
    ),
    IdentityRule(
        registry="peps",
        title="Python Enhancement Proposals",
        identifier="PEP number",
        prefix="pep",
        canonical=_number,
        never="another PEP number: PEP 8 is not PEP 80 nor PEP 800",
        forms=(
            _form("peps.python.org", r"/pep-(?P<id>[0-9]{4})", "peps.python.org/pep-NNNN/"),
            _form("peps.python.org", r"/(?P<id>[0-9]{1,4})", "peps.python.org/N/ (redirect page)"),
            _form("python.org", r"/dev/peps/pep-(?P<id>[0-9]{4})", "www.python.org/dev/peps/pep-NNNN/ (legacy)"),
            _form("python.org", r"/peps/pep-(?P<id>[0-9]{4})\.html", "www.python.org/peps/pep-NNNN.html (legacy)"),
        ),
        citations=(
            Citation(
                'PEP 676, "PEP Infrastructure Process", Specification (python/peps peps/pep-0676.rst)',
                "https://peps.python.org/pep-0676/",
                "PEPs at peps.python.org/pep-NNNN/; python.org redirects /dev/peps/(.*) and /peps/(.*).html there",
            ),
            Citation(
                "python/peps pep_sphinx_extensions/pep_processor/html/pep_html_redirects.py",
                "https://github.com/python/peps/blob/main/pep_sphinx_extensions/pep_processor/html/pep_html_redirects.py",
                "a redirect page for every PEP at its bare number (peps.python.org/8/)",
            ),
            Citation(
                "PEP index API, peps.json (extract in bench_assets/simulator/registry_extracts/peps)",
                "https://peps.python.org/api/peps.json",
                "each record's url: https://peps.python.org/pep-NNNN/",
            ),
        ),
    ),
    IdentityRule(
        registry="federal_register",
        title="Federal Register",
        identifier="Federal Register document number",
        prefix="fr",
        canonical=lambda text: text,
        never="another document number; the whole day's issue (FR-YYYY-MM-DD.pdf) is not one of its documents",
        forms=(
            _form(
                "federalregister.gov",
                rf"/documents/{_FR_DATE}/{_FR_DOC}(?:/[^/]+)?",
                "www.federalregister.gov/documents/YYYY/MM/DD/<number>[/<slug>]",
            ),
            _form(
                "federalregister.gov",
                rf"/(?:d|a)/{_FR_DOC}(?:/[^/]+)?",
                "www.federalregister.gov/d/<number>[/<anchor>] (short link; /a/ legacy)",
            ),
            _form(
                "federalregister.gov",
                rf"/documents/full_text/(?:html|xml|text)/{_FR_DATE}/{_FR_DOC}\.(?:html|xml|txt)",
                "www.federalregister.gov/documents/full_text/html|xml|text/YYYY/MM/DD/<number>.html|.xml|.txt",
            ),
            _form(
                "federalregister.gov",
                rf"/public-inspection/{_FR_DOC}(?:/[^/]+)?",
                "www.federalregister.gov/public-inspection/<number>/<slug>",
            ),
            _form(
                "public-inspection.federalregister.gov",
                rf"/{_FR_DOC}\.pdf",
                "public-inspection.federalregister.gov/<number>.pdf",
            ),
            _form(
                "govinfo.gov",
                rf"/content/pkg/{_GOVINFO_FR}/pdf/{_FR_DOC}\.pdf",
                "www.govinfo.gov/content/pkg/FR-YYYY-MM-DD/pdf/<number>.pdf",
            ),
            _form(
                "govinfo.gov",
                rf"/content/pkg/{_GOVINFO_FR}/html/{_FR_DOC}\.htm",
                "www.govinfo.gov/content/pkg/FR-YYYY-MM-DD/html/<number>.htm",
            ),
            _form(
                "govinfo.gov",
                rf"/app/details/{_GOVINFO_FR}/{_FR_DOC}",
                "www.govinfo.gov/app/details/FR-YYYY-MM-DD/<number>",
            ),
            _form("govinfo.gov", rf"/link/fr/{_FR_DOC}", "www.govinfo.gov/link/fr/<number>[?link-type=pdf|html]"),
        ),
        citations=(
            Citation(
                "FederalRegister.gov site source, usnationalarchives/federalregister-web config/routes.rb (commit b0662a38fd2a21541131da7ce6000321fba072e5)",
                "https://github.com/usnationalarchives/federalregister-web/blob/b0662a38fd2a21541131da7ce6000321fba072e5/config/routes.rb",
                "documents/:year/:month/:day/:document_number/:slug, the short links /d/:document_number(/:anchor) and "
                "/a/:document_number, public-inspection/:document_number/:slug",
            ),
            Citation(
                "Federal Register API source, usnationalarchives/federalregister-api-core app/models/entry.rb",
                "https://github.com/usnationalarchives/federalregister-api-core/blob/main/app/models/entry.rb",
                "the official copies on govinfo: content/pkg/FR-<date>/pdf/<number>.pdf, content/pkg/FR-<date>/html/<number>.htm, "
                "app/details/FR-<date>/<number>; full text under documents/full_text/",
            ),
            Citation(
                "Federal Register API v1 documentation",
                "https://www.federalregister.gov/developers/documentation/api/v1",
                "a document's html_url, pdf_url (govinfo), public_inspection_pdf_url, body_html_url, raw_text_url, full_text_xml_url",
            ),
        ),
    ),
    IdentityRule(
        registry="sec_edgar",
        title="SEC EDGAR filings",
        identifier="accession number (one submission: its primary document, exhibits, index pages and full text)",
        prefix="edgar",
        canonical=_accession,
        never="another accession number, of the same company or not; the company's filing list is not a filing",
        forms=(
            _form(
                "sec.gov",
                rf"{_EDGAR_FOLDER}(?:/[^/]+)?",
                "www.sec.gov/Archives/edgar/data/<cik>/<accession, no dashes>[/<file>]",
            ),
            _form(
                "sec.gov",
                r"/Archives/edgar/data/[0-9]+/(?P<id>[0-9]{10}-[0-9]{2}-[0-9]{6})\.txt",
                "www.sec.gov/Archives/edgar/data/<cik>/<accession>.txt (full submission text)",
            ),
            _form(
                "sec.gov",
                rf"{_EDGAR_FOLDER}/[^/]+",
                "www.sec.gov/ix?doc=/Archives/edgar/data/<cik>/<accession, no dashes>/<document> (inline XBRL viewer)",
                query_param="doc",
            ),
        ),
        citations=(
            Citation(
                'SEC, "Accessing EDGAR Data"',
                "https://www.sec.gov/edgar/searchedgar/accessing-edgar-data.htm",
                "a filing's folder /Archives/edgar/data/<CIK>/<accession without dashes>/ with its documents, index "
                "pages (<accession>-index.htm, -index-headers.html) and the full submission <accession>.txt",
            ),
            Citation(
                "SEC EDGAR submissions JSON (extract in bench_assets/simulator/registry_extracts/sec_edgar)",
                "https://data.sec.gov/submissions/CIK0001318605.json",
                "each filing's accessionNumber and primaryDocument, from which its URLs are built",
            ),
            Citation(
                "SEC Inline XBRL viewer at www.sec.gov/ix",
                "https://www.sec.gov/ix",
                "the viewer takes the document's Archives path in its doc parameter (EDGAR links inline XBRL filings "
                "through it); no SEC page defining the parameter was found in the material searched",
            ),
        ),
    ),
)

_BY_HOST: dict[str, list[tuple[IdentityRule, UrlForm]]] = {}
for _rule in RULES:
    for _url_form in _rule.forms:
        _BY_HOST.setdefault(_url_form.host, []).append((_rule, _url_form))


def identity_hosts() -> frozenset[str]:
    """The normalized hosts some identity rule reads (a URL on any other host has no key)."""
    return frozenset(_BY_HOST)


def _split(form: str) -> tuple[str, str, str]:
    end = len(form)
    for delimiter in "/?":
        position = form.find(delimiter)
        if position != -1:
            end = min(end, position)
    host, rest = form[:end], form[end:]
    path, _, query = rest.partition("?")
    return host, path, query


def _query_value(query: str, name: str) -> str | None:
    for piece in query.split("&"):
        key, sep, value = piece.partition("=")
        if sep and key == name:
            return unquote(value).rstrip("/")  # as normalization strips a path's trailing slashes
    return None


@lru_cache(maxsize=_REMEMBERED)
def document_key(form: str) -> str | None:
    """The registry document a normalized URL form names (``"rfc:9110"``), or None.

    ``form`` is what :func:`bench_assets.metrics.normalize_url` returns (no scheme, host
    lower-cased without ``www.``, no fragment, parameters sorted). A form names a document when
    its host and path match one of the URL forms of :data:`RULES` whole (a path form ignores the
    query; a viewer form reads its document from the named parameter); the key is the rule's
    prefix and the identifier read from the URL in the registry's canonical spelling (RFC and PEP
    numbers without leading zeros, arXiv identifiers without version, accession numbers without
    dashes). Anything else, the empty form included, has no key.
    """
    if not isinstance(form, str) or not form:
        return None
    host, path, query = _split(form)
    candidates = _BY_HOST.get(host)
    if not candidates:
        return None
    for rule, url_form in candidates:
        if url_form.query_param is not None:
            if path != "/ix":
                continue
            target = _query_value(query, url_form.query_param)
            found = url_form.pattern.fullmatch(target) if target is not None else None
        else:
            found = url_form.pattern.fullmatch(path)
        if found:
            return f"{rule.prefix}:{rule.canonical(found.group('id'))}"
    return None


@lru_cache(maxsize=_REMEMBERED)
def match_key(form: str) -> str:
    """What hit@k compares for a normalized URL form: its registry document key (marked so that
    it never equals a form) when it names one, else the form itself. Two URLs match iff their
    match keys are equal; the empty form is never matched by anything."""
    key = document_key(form)
    return form if key is None else _KEY_MARK + key


def site_of(form: str) -> str:
    """The site a normalized URL form is on, for saying why a row was missed: the registry whose
    URL forms its host carries (datatracker.ietf.org and rfc-editor.org are one site, the RFC
    series), else the host itself."""
    host = _split(form)[0] if isinstance(form, str) else ""
    candidates = _BY_HOST.get(host)
    return f"registry:{candidates[0][0].registry}" if candidates else host


def identity_rules() -> dict[str, Any]:
    """The identity rules as published data: their version, and per registry what identifies a
    record, every URL form read (as a template), what is never the same document, and where the
    registry documents its forms. The methodology page and leaderboard.json print this."""
    return {
        "version": IDENTITY_RULES_VERSION,
        "applies_to": "hit@k and first-hit rank (metrics.hit_at_k, metrics.first_hit_rank, score.vector.score_result_lists)",
        "summary": (
            "URLs are first normalized (metrics.normalize_url). A result also hits when it names the same document as "
            "a golden URL: the same registry record under any of the registry's own URL forms below, read from the URL "
            "alone, or one of the row's listed equivalent_urls. Another document of the same registry never does."
        ),
        "registries": [
            {
                "registry": rule.registry,
                "title": rule.title,
                "identity": rule.identifier,
                "key": f"{rule.prefix}:<identifier>",
                "url_forms": [f.template for f in rule.forms],
                "never": rule.never,
                "citations": [{"source": c.source, "url": c.url, "shows": c.shows} for c in rule.citations],
            }
            for rule in RULES
        ],
        "equivalent_urls": (
            "A search row whose document no rule covers (planted, file and hand-verified rows) may list "
            "equivalent_urls: other URLs of the same document, checked when the row is loaded, which count as its "
            "golden URLs."
        ),
    }
