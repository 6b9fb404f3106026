"""SEC EDGAR (the "EDGAR Application Programming Interfaces" page and "Accessing EDGAR Data"):
`https://www.sec.gov/files/company_tickers.json` maps tickers to CIKs; for each configured
company, `https://data.sec.gov/submissions/CIK##########.json` lists its filings (parallel arrays
under filings.recent: one record per index) and `https://data.sec.gov/api/xbrl/companyfacts/
CIK##########.json` its XBRL facts (one record per reported value). Fair access: a declared
User-Agent with a contact, at most 10 requests per second.

Pages: a filing's primary document `https://www.sec.gov/Archives/edgar/data/<cik>/<accession
without dashes>/<primaryDocument>`, its index page `.../<accession>-index.htm`, and for a fact the
concept's XBRL API page `https://data.sec.gov/api/xbrl/companyconcept/CIK##########/<taxonomy>/
<concept>.json`, which lists the value as filed.
"""

from __future__ import annotations

import json
from typing import Any

from bench_assets.registries.base import ParsedResponse, Registry, RegistryFormatError, RegistryRecord, RegistryRequest

NAME = "sec_edgar"
TICKERS_URL = "https://www.sec.gov/files/company_tickers.json"
DATA_URL = "https://data.sec.gov"
DEFAULT_FORMS = ("10-K", "10-Q")
DEFAULT_CONCEPTS = ("RevenueFromContractWithCustomerExcludingAssessedTax", "NetIncomeLoss", "Assets")
FILING_FIELDS = ("accessionNumber", "filingDate", "reportDate", "form", "primaryDocument")


def cik10(cik: int | str) -> str:
    return f"{int(cik):010d}"


def archive_base(cik: int | str, accession: str) -> str:
    return f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/{accession.replace('-', '')}"


def document_url(cik: int | str, accession: str, document: str) -> str:
    return f"{archive_base(cik, accession)}/{document}"


def index_url(cik: int | str, accession: str) -> str:
    return f"{archive_base(cik, accession)}/{accession}-index.htm"


def filing_url_forms(cik: int | str, accession: str, document: str) -> list[str]:
    """The URLs one filing (an accession) is served under: its primary document, its index pages,
    its folder, its full submission text (in the folder and beside it), the inline XBRL viewer of
    its primary document, and the same under the zero-padded CIK (sources cited with the identity
    rules, `metrics.identity`)."""
    base = archive_base(cik, accession)
    padded = f"https://www.sec.gov/Archives/edgar/data/{cik10(cik)}/{accession.replace('-', '')}"
    return [
        document_url(cik, accession, document),
        index_url(cik, accession),
        f"{base}/{accession}-index-headers.html",
        f"{base}/",
        f"{base}/{accession}.txt",
        f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/{accession}.txt",
        f"https://www.sec.gov/ix?doc=/Archives/edgar/data/{int(cik)}/{accession.replace('-', '')}/{document}",
        f"{padded}/{document}",
    ]


def concept_url(cik: int | str, taxonomy: str, concept: str) -> str:
    return f"{DATA_URL}/api/xbrl/companyconcept/CIK{cik10(cik)}/{taxonomy}/{concept}.json"


def requests(options: dict[str, Any]) -> list[RegistryRequest]:
    return [RegistryRequest("company_tickers", options.get("tickers_url") or TICKERS_URL)]


def _json(body: str, what: str) -> Any:
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise RegistryFormatError(f"{what} is not JSON: {exc.msg} at {exc.pos}") from None


def _tickers(body: str, options: dict[str, Any]) -> ParsedResponse:
    data = _json(body, "company_tickers.json")
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "cik_str" in v for v in data.values()):
        raise RegistryFormatError("company_tickers.json is not an object of {cik_str, ticker, title} entries")
    by_ticker = {str(v.get("ticker", "")).upper(): v for v in data.values()}
    base = (options.get("data_url") or DATA_URL).rstrip("/")
    out = ParsedResponse()
    filings, facts = options.get("tickers", []), options.get("fact_tickers", options.get("tickers", []))
    for ticker in dict.fromkeys([*filings, *facts]):
        entry = by_ticker.get(str(ticker).upper())
        if entry is None:
            out.rejected.append((str(ticker), "ticker not in company_tickers.json"))
            continue
        cik = cik10(entry["cik_str"])
        if ticker in filings:
            out.follow_up.append(RegistryRequest(f"submissions:{cik}", f"{base}/submissions/CIK{cik}.json"))
        if ticker in facts:
            out.follow_up.append(RegistryRequest(f"companyfacts:{cik}", f"{base}/api/xbrl/companyfacts/CIK{cik}.json"))
    return out


def _submissions(body: str, options: dict[str, Any]) -> ParsedResponse:
    data = _json(body, "submissions JSON")
    recent = (data.get("filings") or {}).get("recent") if isinstance(data, dict) else None
    if not isinstance(recent, dict) or not isinstance(recent.get("accessionNumber"), list):
        raise RegistryFormatError("submissions JSON has no filings.recent.accessionNumber array")
    forms = set(options.get("forms") or DEFAULT_FORMS)
    out = ParsedResponse()
    for i, accession in enumerate(recent["accessionNumber"]):
        record = {k: (v[i] if isinstance(v, list) and i < len(v) else None) for k, v in recent.items()}
        if record.get("form") not in forms:
            continue
        missing = next((f for f in FILING_FIELDS if not record.get(f)), None)
        if missing:
            out.rejected.append((accession, f"no {missing}"))
            continue
        fields = {**record, "cik": int(data["cik"]), "company": data.get("name")}
        out.records.append(
            RegistryRecord(
                NAME,
                accession,
                fields,
                json.dumps(record, sort_keys=True),
                document_url(data["cik"], accession, str(record["primaryDocument"])),
            )
        )
    return out


def _companyfacts(body: str, options: dict[str, Any]) -> ParsedResponse:
    data = _json(body, "companyfacts JSON")
    facts = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(facts, dict) or "cik" not in data:
        raise RegistryFormatError("companyfacts JSON has no cik and facts")
    concepts = set(options.get("concepts") or DEFAULT_CONCEPTS)
    out = ParsedResponse()
    for taxonomy, by_concept in facts.items():
        for concept, spec in by_concept.items():
            if concept not in concepts:
                continue
            for unit, values in (spec.get("units") or {}).items():
                for fact in values:
                    # one value per period: the annual figure as filed in a 10-K, framed by EDGAR
                    if fact.get("form") != "10-K" or fact.get("fp") != "FY" or "frame" not in fact:
                        continue
                    record_id = f"CIK{cik10(data['cik'])}/{taxonomy}/{concept}/{unit}/{fact.get('frame')}"
                    missing = next((f for f in ("val", "end", "accn", "fy") if fact.get(f) is None), None)
                    if missing:
                        out.rejected.append((record_id, f"no {missing}"))
                        continue
                    fields = {
                        **fact,
                        "cik": int(data["cik"]),
                        "company": data.get("entityName"),
                        "taxonomy": taxonomy,
                        "concept": concept,
                        "label": spec.get("label"),
                        "unit": unit,
                    }
                    out.records.append(
                        RegistryRecord(
                            NAME,
                            record_id,
                            fields,
                            json.dumps(fact, sort_keys=True),
                            concept_url(data["cik"], taxonomy, concept),
                        )
                    )
    return out


def parse_with(options: dict[str, Any]):
    """The parser for a fetch with these options (the tickers, forms and concepts it asks for)."""

    def parse(request: RegistryRequest, body: str) -> ParsedResponse:
        kind = request.key.split(":", 1)[0]
        reader = {"company_tickers": _tickers, "submissions": _submissions, "companyfacts": _companyfacts}[kind]
        return reader(body, options)

    return parse


def parse(request: RegistryRequest, body: str) -> ParsedResponse:
    return parse_with({})(request, body)


REGISTRY = Registry(
    NAME,
    tier="T1",
    tier_reason="SEC filings and the XBRL values filed in them are primary regulatory filings",
    max_rate_per_second=10.0,
    requests=requests,
    parse=parse,
    needs_contact=True,
)
