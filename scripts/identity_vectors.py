"""Write the document-identity test vectors from the registry extracts in the repository.

For every record of bench_assets/simulator/registry_extracts that names a document (RFCs, PEPs,
arXiv articles, the Federal Register document, EDGAR filings): the URL its golden rows name, every
other URL form the registry serves the same document under (`registries.<name>` url forms, each
cited with the identity rules in `metrics.identity`), and near misses that are other documents or
no document at all (another RFC number, another accession of the same company, the day's whole
Federal Register issue, a figure inside an arXiv HTML paper). `bench_assets_tests/unit/
test_identity_rules.py` asserts every same-document form is a hit and no near miss is.

python scripts/identity_vectors.py          # rewrite the vector file
python scripts/identity_vectors.py --check  # exit 1 if the file is not what the extracts give
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench_assets.metrics import IDENTITY_RULES_VERSION, normalize_url
from bench_assets.registries import arxiv, federal_register, peps, rfc_editor
from bench_assets.registries import sec_edgar as edgar
from bench_assets.registries.base import RegistryRecord
from bench_assets.simulator.registry_site import extract_records, record_url_forms

VECTORS = (
    Path(__file__).resolve().parent.parent / "bench_assets_tests" / "fixtures" / "identity" / "registry_url_forms.json"
)


def _near_misses(record: RegistryRecord, records: list[RegistryRecord]) -> list[dict[str, str]]:
    f = record.fields
    others = [r for r in records if r.record_id != record.record_id]
    if record.registry == rfc_editor.NAME:
        n = f["number"]
        out = [
            (rfc_editor.page_url(n + 1), f"RFC {n + 1}, another RFC"),
            (f"https://www.rfc-editor.org/rfc/rfc{n}0", f"RFC {n}0, another RFC whose number starts the same"),
            (f"https://datatracker.ietf.org/doc/html/rfc{n + 1}", f"RFC {n + 1} on the Datatracker"),
            (f"https://doi.org/10.17487/RFC{n - 1}", f"the DOI of RFC {n - 1}"),
            (f"https://www.rfc-editor.org/rfc/rfc{n}.json", "the RFC's metadata record, not the RFC"),
        ]
        draft = record.raw.split("<draft>", 1)[1].split("</draft>", 1)[0] if "<draft>" in record.raw else None
        if draft:
            out.append((f"https://datatracker.ietf.org/doc/{draft}/", "the Internet-Draft the RFC was published from"))
        return [{"url": u, "why": why} for u, why in out]
    if record.registry == peps.NAME:
        n = int(f["number"])
        return [
            {"url": f"https://peps.python.org/pep-{n + 1:04d}/", "why": f"PEP {n + 1}, another PEP"},
            {"url": f"https://peps.python.org/pep-{n * 10:04d}/", "why": f"PEP {n * 10}, another PEP"},
            {"url": f"https://www.python.org/dev/peps/pep-{n + 1:04d}/", "why": f"PEP {n + 1} at the legacy path"},
            {"url": "https://peps.python.org/", "why": "the PEP index"},
        ]
    if record.registry == arxiv.NAME:
        article = f["arxiv_id"]
        head, _, tail = article.rpartition(".")
        bumped = f"{head}.{int(tail) + 1:0{len(tail)}d}"
        return [
            *(
                {"url": arxiv.abs_url(o.fields["arxiv_id"]), "why": "another article of the same feed"}
                for o in others[:2]
            ),
            {"url": f"https://arxiv.org/abs/{bumped}", "why": f"arXiv:{bumped}, the next identifier"},
            {"url": f"https://arxiv.org/pdf/{bumped}v1", "why": f"the PDF of arXiv:{bumped}"},
            {"url": f"https://arxiv.org/html/{article}v1/x1.png", "why": "a figure inside the HTML paper"},
            {"url": f"https://arxiv.org/list/{f['primary_category']}/recent", "why": "a listing of its category"},
        ]
    if record.registry == federal_register.NAME:
        number = f["document_number"]
        year, _, sequence = number.partition("-")
        other = f"{year}-{int(sequence) + 1}"
        dated = f["html_url"].split("/documents/", 1)[1].split("/")[:3]
        day = "-".join(dated)
        return [
            {"url": f"https://www.federalregister.gov/d/{other}", "why": f"FR {other}, another document"},
            {
                "url": f"https://www.govinfo.gov/content/pkg/FR-{day}/pdf/{other}.pdf",
                "why": f"the official PDF of FR {other}",
            },
            {"url": f"https://www.govinfo.gov/content/pkg/FR-{day}/pdf/FR-{day}.pdf", "why": "the whole day's issue"},
            {
                "url": f"https://www.federalregister.gov/documents/{'/'.join(dated)}",
                "why": "the day's table of contents",
            },
        ]
    if record.registry == edgar.NAME:
        cik = f["cik"]
        siblings = [o for o in others if o.fields.get("cik") == cik][:3]
        return [
            *(
                {
                    "url": edgar.document_url(cik, o.fields["accessionNumber"], str(o.fields["primaryDocument"])),
                    "why": f"{o.fields['form']} {o.fields['accessionNumber']}, another filing of the same company",
                }
                for o in siblings
            ),
            *(
                {"url": edgar.index_url(cik, o.fields["accessionNumber"]), "why": "another filing's index page"}
                for o in siblings[:1]
            ),
            {"url": f"https://www.sec.gov/Archives/edgar/data/{cik}", "why": "the company's folder of every filing"},
            {
                "url": f"https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK={edgar.cik10(cik)}",
                "why": "the company's filing list",
            },
        ]
    return []


def vectors() -> dict[str, Any]:
    documents = []
    total = 0
    for registry, records in extract_records().items():
        for record in records:
            forms = record_url_forms(record)
            golden = record.source_url
            seen = {normalize_url(golden)}
            same = []
            for url in forms:
                form = normalize_url(url)
                if form not in seen:  # another spelling normalization alone already equates is no test
                    seen.add(form)
                    same.append(url)
            total += len(same)
            documents.append(
                {
                    "registry": registry,
                    "record_id": record.record_id,
                    "golden_url": golden,
                    "same_document": same,
                    "not_the_document": _near_misses(record, records),
                }
            )
    return {
        "identity_rules_version": IDENTITY_RULES_VERSION,
        "generated_by": "python scripts/identity_vectors.py, from bench_assets/simulator/registry_extracts "
        "(see SOURCES.md there) and the URL forms of bench_assets/registries",
        "note": "same_document: URLs the registry serves the golden document under, none normalizing to the golden "
        "URL's form (normalization alone does not equate them); not_the_document: other documents or pages, "
        "each with why. Every same_document URL must be a hit for the golden URL, no not_the_document URL may be.",
        "same_document_urls": total,
        "documents": documents,
    }


def render() -> str:
    return json.dumps(vectors(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not VECTORS.exists() or VECTORS.read_text(encoding="utf-8") != text:
            print(f"{VECTORS} is out of date: run python scripts/identity_vectors.py", file=sys.stderr)
            return 1
        return 0
    VECTORS.parent.mkdir(parents=True, exist_ok=True)
    VECTORS.write_text(text, encoding="utf-8")
    print(f"wrote {VECTORS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
