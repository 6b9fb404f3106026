"""A vendor's listing of the public rows (`publish.vendor_listing.verdict_lines`) is the markup
the template's loop wrote, byte for byte: the page is rendered with the site's own environment
both ways, the loop as it was kept in `fixtures/templates/vendor_rows_reference.html.j2`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jinja2 import FileSystemLoader
from jinja2.loaders import ChoiceLoader

from bench_assets.publish.site import TEMPLATES, Pager, _environment

FIXTURES = Path(__file__).parents[1] / "fixtures" / "templates"


def _verdict(row_id: str, **fields: Any) -> dict[str, Any]:
    verdict = {
        "row_id": row_id,
        "stratum": "docs",
        "task_type": "search",
        "response_class": "ok",
        "correct": True,
        "first_hit_rank": 3,
        "fidelity": None,
        "answer_score": None,
        "billed_usd": 0.005,
        "latency_ms": 312.44,
    }
    return {**verdict, **fields}


LISTED = [
    _verdict("docs-001-s"),
    _verdict("docs-002-e", task_type="extract", correct=False, first_hit_rank=None, fidelity=0.81254),
    _verdict("news-003-a", task_type="answer", response_class="unsupported", correct=None, latency_ms=None),
    _verdict("x<&>\"'", stratum="<b>s</b>", response_class="a & b", fidelity=1, first_hit_rank=10, latency_ms=0.4),
    _verdict("rate-9", correct=0, fidelity=0.0, latency_ms=1e6),
]


@pytest.mark.parametrize("listed", [LISTED, LISTED[:1], []])
@pytest.mark.parametrize("vendor", ["exa", "we<ird> & 'co'"])
def test_a_vendor_listing_page_is_the_templates(listed: list[dict[str, Any]], vendor: str) -> None:
    env = _environment()
    env.loader = ChoiceLoader([FileSystemLoader(TEMPLATES), FileSystemLoader(FIXTURES)])
    context = {
        "board": {"snapshot_id": "web_search-2026-q3", "mode": "simulated", "headline_eligible": True, "vendors": []},
        "manifest": None,
        "root": "../",
        "active": "leaderboard",
        "e": {"vendor": vendor},
        "listed": listed,
        "pager": Pager(2, 501, 500 + len(listed), 9000, ("exa.html", "exa-2.html")),
    }
    new = env.get_template("vendor_rows.html.j2").render(**context)
    old = env.get_template("vendor_rows_reference.html.j2").render(**context)
    assert new == old
    assert new.count("<tr><td") == len(listed)
