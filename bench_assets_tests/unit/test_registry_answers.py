"""Registry answer rows list the renderings of a date the registry writes in a form of its own."""

from __future__ import annotations

import json
import re

from bench_assets.golden.registry_rows import month_year_renderings, pep_date_renderings, record_tasks
from bench_assets.golden.verdicts import precise_answer_in_text
from bench_assets.simulator.registry_site import extract_records


def test_renderings_of_a_month_and_of_a_pep_date():
    assert month_year_renderings("December", "2020") == ["2020-12", "Dec 2020"]
    assert month_year_renderings("May", "2021") == ["2021-05"]  # "May 2021" is the answer itself
    assert month_year_renderings("Dec", "2020") == []
    assert pep_date_renderings("13-Jun-2000") == ["2000-06-13", "13 June 2000", "June 13, 2000", "13 Jun 2000"]
    assert pep_date_renderings("2000-06-13") == []


def test_the_extracts_answer_rows_accept_the_common_renderings_and_no_other_date():
    records = extract_records()
    rfc = record_tasks(records["rfc_editor"][0])["answer"]
    pep = record_tasks(next(r for r in records["peps"] if r.fields["number"] == 1))["answer"]
    assert rfc.type == "answer" and pep.type == "answer"
    assert rfc.exact_answer == "December 2020" and rfc.accepted_answers == ["2020-12", "Dec 2020"]
    assert pep.exact_answer == "13-Jun-2000" and "2000-06-13" in pep.accepted_answers
    assert precise_answer_in_text(pep, "PEP 1 was created on June 13, 2000.")
    assert precise_answer_in_text(rfc, "RFC 8970 (Dec 2020)")
    assert not precise_answer_in_text(rfc, "published 2020-11") and not precise_answer_in_text(pep, "2000-06-14")
    # no rendering for answers the registry writes as everyone does
    fr = record_tasks(records["federal_register"][0])["answer"]
    assert fr.type == "answer" and fr.accepted_answers == []


def test_a_federal_register_row_is_dated_by_its_records_publication_date():
    from datetime import date

    from bench_assets.golden.registry_rows import published_on
    from bench_assets.registries import federal_register

    records = extract_records()
    fr = records["federal_register"][0]  # the extract's record lists no publication_date: its page's path dates it
    day = re.search(r"/documents/(\d{4})/(\d{2})/(\d{2})/", fr.fields["html_url"]).groups()
    assert published_on(fr) == date.fromisoformat("-".join(day))
    assert published_on(records["rfc_editor"][0]) is None  # only a registry that states a day dates its rows
    # a record with its publication_date (a field the documents request asks for) is dated by it
    doc = {**fr.fields, "publication_date": "2026-11-20"}
    request = federal_register.requests({})[0]
    parsed = federal_register.parse(request, json.dumps({"count": 1, "results": [doc]}))
    assert published_on(parsed.records[0]) == date(2026, 11, 20)
    assert (
        published_on(
            federal_register.parse(
                request, json.dumps({"results": [{**doc, "publication_date": "11/20/2026"}]})
            ).records[0]
        )
        is None
    )
