"""A vendor's verdict on each public row, as the lines of the table on its page and on the pages
that list the rest (`vendor.html.j2`, `vendor_rows.html.j2`), written in Python.

At 12,600 golden rows a vendor lists 8,800 rows and twelve vendors a hundred thousand lines,
a tenth of the site's rendering when Jinja wrote them (every field read through the environment
and escaped through a `Markup`). The markup is the template's, byte for byte:
`test_vendor_listing.py` renders the template's loop as it was beside this."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from bench_assets.publish.format import format_number
from bench_assets.publish.row_page import escape

_CORRECT = '<span class="tag tag-correct">correct</span>'
_NOT_CORRECT = '<span class="tag tag-incorrect">not correct</span>'
_NA = '<span class="na">n/a</span>'


def _verdict(correct: Any) -> str:
    if correct is None:
        return _NA
    return _CORRECT if correct else _NOT_CORRECT


def verdict_lines(vendor: str, listed: Sequence[Mapping[str, Any]]) -> Markup:
    """The table rows of `listed` (`drilldown.row_verdict` each), each linking to the row's page at the vendor's section."""
    name = escape(vendor)
    out = []
    for v in listed:
        row_id = escape(v["row_id"])
        rank, fidelity, latency = v["first_hit_rank"], v["fidelity"], v["latency_ms"]
        out.append(
            f'<tr><td class="text"><a href="../queries/{row_id}.html#{name}">{row_id}</a></td>'
            f'<td class="text">{escape(v["stratum"])}</td><td class="text">{escape(v["task_type"])}</td>\n'
            f'<td class="text"><code>{escape(v["response_class"])}</code></td>\n'
            f'<td class="text">{_verdict(v["correct"])}</td>\n'
            f'<td data-value="{"" if rank is None else escape(rank)}">{"—" if rank is None else escape(rank)}</td>\n'
            f'<td data-value="{"" if fidelity is None else escape(fidelity)}">'
            f"{'—' if fidelity is None else escape(f'{fidelity:.3f}')}</td>\n"
            f'<td data-value="{"" if latency is None else escape(latency)}">'
            f"{escape(format_number('latency_ms', latency))}</td></tr>\n"
        )
    return Markup("".join(out))
