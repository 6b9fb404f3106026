"""Each vendor's part of a public row's page (`query.html.j2`), written in Python: its line in the
verdicts table, and its section (what it returned, how it was scored, its results list).

A site of 12,600 golden rows has 8,800 row pages with a dozen vendors' sections each, about 120
results a page: a million list items and a hundred thousand sections, most of what rendering the
site costs publication and `bench rescore` when Jinja writes them (every field read through the
environment's attribute lookup, every value escaped, in generators three deep). Here each is
formatted strings, every value escaped as Jinja's autoescape (markupsafe) escapes it (`escape`):
a row page renders in 0.68 ms instead of 2.43 ms. The markup is the template's, byte for byte:
`test_row_page.py` keeps the template's loops as they were and renders both, over every kind of
row, entry and result."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup

from bench_assets.publish.drilldown import ShownResult
from bench_assets.publish.format import external_href, format_number

Truncate = Callable[[str, int], str]  # Jinja's `truncate` filter (as the site's environment cuts)

SNIPPET_CHARS = 300  # a result's snippet is cut to about this many characters
SENTENCE_CHARS = 400  # the sentence an answer was read from
METHOD_CHARS = 120  # the method given with a range

_WITHHELD = "withheld: this page is a holdout row's golden page"
_DIGEST_ONLY = "not published (the vendor's terms allow digests only: see the evidence bundle)"
_FIELDS_HEAD = (
    '<div class="table-scroll"><table class="fields"><thead><tr><th class="text">Field</th>'
    '<th>Weight (renormalized)</th><th>Share matched</th><th class="text">Item by item (✓ in the first '
    "result's text; noise: ✓ absent)</th></tr></thead><tbody>\n"
)


def escape(x: Any) -> str:
    """`x` as Jinja's autoescape writes it: markupsafe's five entities, `__html__` as is; without
    making a `Markup` object of each of the 400,000 values a thousand pages write. A string is
    escaped by markupsafe's own C routine where it is built (`_speedups._escape_inner`, what
    `markupsafe.escape` calls: a third of the time of five `str.replace`)."""
    if type(x) is str:
        return _escape_text(x)
    if hasattr(x, "__html__"):
        return str(x.__html__())
    return _escape_text(str(x))


def _escape_replacing(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;").replace('"', "&#34;")
    )


try:  # markupsafe built without its C extension (a pure-Python wheel) has no `_speedups`
    from markupsafe._speedups import _escape_inner as _escape_text
except ImportError:  # pragma: no cover - the pinned wheel has it
    _escape_text = _escape_replacing


def _value(x: Any) -> Any:
    """A figure as a `data-value` holds it: empty when missing."""
    return "" if x is None else escape(x)


def verdict_tag(correct: Any, na: str) -> str:
    """A verdict as the site marks it: correct, not correct, or `na` when none applies."""
    if correct is None:
        return f'<span class="na">{na}</span>'
    return (
        '<span class="tag tag-correct">correct</span>'
        if correct
        else '<span class="tag tag-incorrect">not correct</span>'
    )


def _fixed(x: Any, spec: str) -> str:
    """`"%.3f" | format(x)` (or `%g`), `—` when missing."""
    return "—" if x is None else spec % x


def verdict_rows(task_type: str, vendors: Sequence[Mapping[str, Any]]) -> Markup:
    """The verdicts table's rows: one per vendor entry, its class, verdict, the row's figure (first
    hit, fidelity or score), results, billed and latency, each with its sortable `data-value`."""
    out = []
    for v in vendors:
        name = escape(v["vendor"])
        if task_type == "search":
            rank = v["first_hit_rank"]
            figure = f'<td data-value="{_value(rank)}">{"—" if rank is None else escape(rank)}</td>\n'
        elif task_type == "extract":
            figure = f'<td data-value="{_value(v["fidelity"])}">{_fixed(v["fidelity"], "%.3f")}</td>\n'
        else:  # no line break after it: the template's `endif` took it
            figure = f'<td data-value="{_value(v["answer_score"])}">{_fixed(v["answer_score"], "%g")}</td>'
        out.append(
            f'<tr data-vendor="{name}"><td class="text vendor"><a href="#{name}">{name}</a></td>'
            f'<td class="text"><code>{escape(v["response_class"])}</code></td>\n'
            f'<td class="text">{verdict_tag(v["correct"], "n/a")}</td>\n'
            f"{figure}"
            f'<td data-value="{escape(v["n_results"])}">{escape(v["n_results"])}</td>\n'
            f'<td data-value="{_value(v["billed_usd"])}">{escape(format_number("billed_usd", v["billed_usd"]))}</td>\n'
            f'<td data-value="{_value(v["latency_ms"])}">{escape(format_number("latency_ms", v["latency_ms"]))}</td></tr>\n'
        )
    return Markup("".join(out))


def vendor_sections(
    task_type: str, vendors: Sequence[Mapping[str, Any]], k_values: Sequence[Any], live: bool, truncate: Truncate
) -> Markup:
    """Each vendor entry's section: its class and verdict, attempts, billing, evidence, how it was
    scored, and its results (`result_list`); a vendor without the row's endpoint says so."""
    out = []
    for v in vendors:
        name = escape(v["vendor"])
        out.append(
            f'<section class="vendor-result" id="{name}">\n'
            f'<h3><a href="../vendors/{name}.html">{name}</a>\n'
            f"<code>{escape(v['response_class'])}</code>\n"
            f"{verdict_tag(v['correct'], 'not applicable')}</h3>\n"
        )
        if v["response_class"] == "unsupported":
            endpoint = "extraction" if task_type == "extract" else "search"
            out.append(
                f'<p class="note">{name} has no {endpoint} endpoint: this row is left out of its denominator.</p>\n'
            )
        else:
            out.append(_attempts(v))
            out.append(_scoring(task_type, v, k_values, truncate))
            if v["results"]:
                out.append(f"{result_list(v['results'], live, truncate)}\n")
            else:
                out.append('<p class="note">No results.</p>\n')
        out.append("</section>\n")
    return Markup("".join(out))


def _attempts(v: Mapping[str, Any]) -> str:
    """Attempts, latency, billing, request id and error; where the evidence bundle holds them."""
    attempts = v["attempts"]
    latency = "" if v["latency_ms"] is None else f", {escape(format_number('latency_ms', v['latency_ms']))}"
    request = f", request id <code>{escape(v['request_id'])}</code>" if v["request_id"] else ""
    error = f". <strong>{escape(v['error_detail'])}</strong>" if v["error_detail"] else ""
    name = escape(v["vendor"])
    digest = (
        f'; the final body\'s SHA-256 <code class="digest">{escape(v["body_sha256"])}</code>'
        if v["body_sha256"]
        else ""
    )
    return (
        f'<p class="note">{escape(attempts)} attempt{"s" if attempts != 1 else ""}{latency}, '
        f"billed {escape(format_number('billed_usd', v['billed_usd']))}{request}{error}</p>\n"
        f'<p class="note evidence">Evidence: <a href="../evidence/attempts/{name}.parquet">every attempt</a> and '
        f'<a href="../evidence/results/{name}.parquet">every result</a> in the evidence bundle, published at level '
        f'<code>{escape(v["evidence_level"])}</code> (<a href="../disclosures.html#evidence-levels">why</a>)'
        f"{digest}.</p>\n"
    )


def _scoring(task_type: str, v: Mapping[str, Any], k_values: Sequence[Any], truncate: Truncate) -> str:
    """How the entry was scored: the first golden URL's rank and hit@k (search), fidelity field by
    field (extract), or the score, rule, answer ranks and the sentence read (answer)."""
    if task_type == "search":
        rank = v["first_hit_rank"]
        first = (
            f"the first golden URL is at rank <strong>{escape(rank)}</strong>"
            if rank is not None
            else "no golden URL among the results"
        )
        hits = ", ".join(f"hit@{escape(k)} {'✓' if v.get(f'hit_at_{k}') else '✗'}" for k in k_values)
        return f"<p>How it was scored: {first}&nbsp;({hits}).</p>\n"  # the `endif` took the line break
    if task_type == "extract":
        label = escape(v["fidelity_label"] or "no extraction")
        out = (
            f"<p>How it was scored: fidelity <strong>{_fixed(v['fidelity'], '%.3f')}</strong> ({label}) "
            "from the first result's title and content.</p>\n"
        )
        if v.get("fidelity_fields"):
            out += _FIELDS_HEAD + "".join(_field_row(f, v["evidence_level"]) for f in v["fidelity_fields"])
            out += "</tbody></table></div>\n"
        return out
    ranks = v["answer_ranks"]
    appears = (
        f" The answer appears in result{'s' if len(ranks) > 1 else ''} {', '.join(str(escape(r)) for r in ranks)}."
        if ranks
        else ""
    )
    out = (
        f"<p>How it was scored: score <strong>{_fixed(v['answer_score'], '%g')}</strong>, rule: "
        f'<span class="rule">{escape(v["answer_rule"] or "—")}</span>.{appears}</p>\n'
    )
    if v["answer_reading"]:
        out += _reading(v["answer_reading"], truncate)
    return out


def _field_row(f: Mapping[str, Any], level: str) -> str:
    items = f.get("items", [])
    if items:
        shown = " · ".join(
            f'<span class="item {"found" if it.found else "missing"}">{"✓" if it.found else "✗"} {escape(it.item)}</span>'
            for it in items
        )
    else:
        shown = (
            '<span class="na">not shown: the vendor\'s terms allow digests only</span>' if level == "digests" else ""
        )
    field = escape(str(f["field"]).replace("_", " "))
    return (
        f'<tr data-field="{escape(f["field"])}"><td class="text">{field}</td><td>{_fixed(f["weight"], "%.3f")}</td>'
        f'<td>{f["score"]:.3f}</td><td class="text items">{shown}</td></tr>'
    )


def _reading(r: Mapping[str, Any], truncate: Truncate) -> str:
    """Where the answer was read: the sentence (unless withheld, or the terms allow digests only),
    what it was read as, and the method given."""
    if r["withheld"]:
        sentence = '<span class="na">the sentence is on a holdout page and is withheld</span>'
    elif r["sentence"] is None:
        sentence = '<span class="na">the sentence is not published: the vendor\'s terms allow digests only</span>'
    else:
        sentence = f"<q>{escape(truncate(r['sentence'], SENTENCE_CHARS))}</q>"
    kind = r["kind"]
    if kind == "range":
        value = f" {escape(r['low'])} to {escape(r['high'])}"
    elif kind == "precise":
        value = f" {escape(r['value'])}"
    else:
        value = ""
    method = f", method: {escape(truncate(r['method'], METHOD_CHARS))}" if r["method"] else ""
    kind_words = escape(str(kind).replace("_", " "))
    return f'<p class="reading">Read at rank {escape(r["rank"])}: {sentence} ({kind_words}{value}{method})</p>\n'


def _tags(r: ShownResult) -> str:
    """The marks a result carries: golden URL, contains the answer, answer read here."""
    return (
        (' <span class="tag tag-golden">golden URL</span>' if r.golden else "")
        + (' <span class="tag tag-correct">contains the answer</span>' if r.contains_answer else "")
        + (' <span class="tag tag-read">answer read here</span>' if r.answer_read else "")
    )


def result_list(results: Sequence[ShownResult], live: bool, truncate: Truncate) -> Markup:
    """The `<ol class="results">` of one vendor's results (`drilldown.ShownResult`), one `<li>` each:
    withheld (a holdout row's golden page), digest only (the vendor's terms), or its title, marks,
    URL (a link out only in a live snapshot, and only to a plain http(s) URL), snippet (cut by
    `truncate`) and how much content came back."""
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
