"""A vendor's results on a public row's page (`query.html.j2`'s `<ol class="results">`), written
in Python.

A site of 12,600 golden rows has 8,800 row pages listing about 120 results each: a million list
items, most of what rendering those pages costs publication and `bench rescore` when Jinja writes
them (every field read through the environment's attribute lookup, every value escaped, in a
generator). Here each item is one f-string with markupsafe's escaping, as Jinja's autoescape
escapes; a test checks the list is what the template's loop wrote, byte for byte, item by kind."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

from bench_assets.publish.drilldown import ShownResult
from bench_assets.publish.format import external_href

SNIPPET_CHARS = 300  # a snippet is truncated (Jinja's `truncate`) to about this many characters

_WITHHELD = "withheld: this page is a holdout row's golden page"
_DIGEST_ONLY = "not published (the vendor's terms allow digests only: see the evidence bundle)"


def _tags(r: ShownResult) -> str:
    """The marks a result carries: golden URL, contains the answer, answer read here."""
    return (
        (' <span class="tag tag-golden">golden URL</span>' if r.golden else "")
        + (' <span class="tag tag-correct">contains the answer</span>' if r.contains_answer else "")
        + (' <span class="tag tag-read">answer read here</span>' if r.answer_read else "")
    )


def result_list(results: Sequence[ShownResult], live: bool, truncate: Callable[[str, int], str]) -> Markup:
    """The `<ol class="results">` of one vendor's results (`drilldown.ShownResult`), one `<li>` each:
    withheld (a holdout row's golden page), digest only (the vendor's terms), or its title, marks,
    URL (a link out only in a live snapshot, and only to a plain http(s) URL), snippet (cut by
    `truncate`, Jinja's filter) and how much content came back."""
    items = ['<ol class="results">\n']
    for r in results:
        rank = escape(r.rank)
        if r.withheld:
            items.append(f'<li class="withheld"><span class="rank">{rank}</span>{_WITHHELD}</li>\n')
            continue
        if r.digest_only:
            items.append(f'<li class="digest-only"><span class="rank">{rank}</span>{_DIGEST_ONLY}{_tags(r)}</li>\n')
            continue
        url = r.url
        href = external_href(url) if live else None
        link = (
            f'<a class="url" href="{escape(href)}" rel="external nofollow noopener noreferrer">{escape(url)}</a>'
            if href
            else f'<span class="url">{escape(url)}</span>'
        )
        snippet = f'<span class="snippet">{escape(truncate(r.snippet, SNIPPET_CHARS))}</span>' if r.snippet else ""
        content = (
            f'<span class="snippet">{escape(r.content_chars)} characters of content returned</span>'
            if r.content_chars
            else ""
        )
        title = escape(r.title or "(no title)")
        items.append(
            f'<li><span class="rank">{rank}</span><span class="title">{title}</span>\n'
            f"{_tags(r)}{link}{snippet}{content}</li>\n"
        )
    items.append("</ol>")
    return Markup("".join(items))
