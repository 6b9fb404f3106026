"""A row page's results list, written in Python (`publish.result_list`), is what the template's
loop wrote before, byte for byte: the loop is kept here as the reference and both are rendered
from the site's own Jinja environment, over every kind of result."""

from __future__ import annotations

import pytest

from bench_assets.publish.drilldown import ShownResult
from bench_assets.publish.site import _environment

# query.html.j2's loop as it was, the reference
TEMPLATE_LOOP = """\
{% if v.results %}
<ol class="results">
{% for r in v.results %}
{% if r.withheld %}
<li class="withheld"><span class="rank">{{ r.rank }}</span>withheld: this page is a holdout row's golden page</li>
{% elif r.digest_only %}
<li class="digest-only"><span class="rank">{{ r.rank }}</span>not published (the vendor's terms allow digests only: see the evidence bundle){% if r.golden %} <span class="tag tag-golden">golden URL</span>{% endif %}{% if r.contains_answer %} <span class="tag tag-correct">contains the answer</span>{% endif %}{% if r.answer_read %} <span class="tag tag-read">answer read here</span>{% endif %}</li>
{% else %}
<li><span class="rank">{{ r.rank }}</span><span class="title">{{ r.title or "(no title)" }}</span>
{% if r.golden %} <span class="tag tag-golden">golden URL</span>{% endif %}{% if r.contains_answer %} <span class="tag tag-correct">contains the answer</span>{% endif %}{% if r.answer_read %} <span class="tag tag-read">answer read here</span>{% endif %}
{% if board.mode == "live" and external(r.url) %}<a class="url" href="{{ external(r.url) }}" rel="external nofollow noopener noreferrer">{{ r.url }}</a>{% else %}<span class="url">{{ r.url }}</span>{% endif %}
{% if r.snippet %}<span class="snippet">{{ r.snippet | truncate(300) }}</span>{% endif %}
{% if r.content_chars %}<span class="snippet">{{ r.content_chars }} characters of content returned</span>{% endif %}
</li>
{% endif %}
{% endfor %}
</ol>
{% else %}
<p class="note">No results.</p>
{% endif %}
"""

# how query.html.j2 now writes the same list
NEW_LOOP = """\
{% if v.results %}
{{ result_list(v.results, board.mode == "live") }}
{% else %}
<p class="note">No results.</p>
{% endif %}
"""

LONG = "word " * 70 + "and <b>a tag</b> & 'quotes' \"here\""
RESULTS = [
    ShownResult(1, True),
    ShownResult(2, False, digest_only=True),
    ShownResult(3, False, digest_only=True, golden=True, contains_answer=True, answer_read=True),
    ShownResult(4, False, url="https://a.test/x?q=1&r=<2>", title='Tom & "Jerry" <3', snippet="short 'one'"),
    ShownResult(5, False, url="https://b.test/", title=None, snippet=LONG, content_chars=1234, golden=True),
    ShownResult(6, False, url="javascript:alert(1)", title="", snippet="", content_chars=0, contains_answer=True),
    ShownResult(7, False, url="  https://c.test/path  ", title="t", snippet="x" * 310, answer_read=True),
    ShownResult(8, False, url="https://d.test/", title="naïve — ünïcödé", snippet="y" * 303),
    ShownResult(9, False, url=None, title="no url"),
]


@pytest.mark.parametrize("mode", ["simulated", "live"])
@pytest.mark.parametrize(
    "results",
    [RESULTS, RESULTS[:1], RESULTS[3:4], []],
    ids=["every kind", "one withheld", "one shown", "none"],
)
def test_the_results_list_is_what_the_template_loop_wrote(mode: str, results: list[ShownResult]) -> None:
    env = _environment()
    context = {"v": {"results": results}, "board": {"mode": mode}}
    assert env.from_string(NEW_LOOP).render(**context) == env.from_string(TEMPLATE_LOOP).render(**context)


def test_a_live_snapshot_links_out_only_to_plain_web_urls() -> None:
    html = _environment().from_string(NEW_LOOP).render(v={"results": RESULTS}, board={"mode": "live"})
    assert '<a class="url" href="https://a.test/x?q=1&amp;r=&lt;2&gt;"' in html
    assert 'href="https://c.test/path"' in html  # stripped, as `external_href` gives it
    assert "javascript:" in html and 'href="javascript:' not in html
    assert "Tom &amp; &#34;Jerry&#34; &lt;3" in html and "<b>" not in html
