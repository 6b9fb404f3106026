"""The leak scan reads large texts a block at a time (`split.leaks._Scan`): it must find exactly
what a search of the texts joined whole finds (`LeakGuard._find_joined`), whatever the blocks
(here a few characters each, so ids, query texts, URLs and URL parameters all span them)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.metrics import normalize_text, normalize_url
from bench_assets.split import leaks
from bench_assets.split.leaks import LeakGuard

PRIVATE = [
    {
        "row_id": "finance-007-s",
        "request_text": "Quarterly flood report of Orbelin",
        "golden_urls": ["https://orbelin.test/reports/flood", "https://docs.orbelin.test/a b?x=1"],
    },
    {
        "row_id": "docs-012-e",
        "request_text": "Orbelin API pagination limits",
        "golden_urls": ["http://www.zunlo.test/page/"],
    },
    {"row_id": "news-3", "request_text": "ΑΣ σ Straße", "golden_urls": ["https://xn--bcher-kva.test/p"]},
]
# pieces a text is made of: parts of ids, query texts and URLs in many spellings, and what separates them
PIECES = [
    "quarterly",
    "flood",
    "report",
    "of",
    "orbelin",
    "QUARTERLY  FLOOD\nREPORT OF ORBELIN",
    "Orbelin API",
    "https://orbelin.test/reports/flood",
    "https://www.orbelin.test/reports/flood/?utm_source=x",
    "docs-012-e",
    "DOCS-012-E",
    "?q=quarterly+flood+report+of+orbelin",
    "&q=orbelin+api+pagination+limits",
    "%3A%2F%2Forbelin.test%2Freports%2Fflood",
    "https://docs.orbelin.test/a b?x=1",
    "zunlo.test/page",
    "ｑｕａｒｔｅｒｌｙ",
    "e\u0301",
    "İ",
    "ΑΣ",
    "σ",
    "STRASSE",
    "straße",
    "bücher.test/p",
    "xn--bcher-kva.test/p",
    "\n",
    " ",
    "\t",
    "\x00",
    "=",
    "+",
    "%",
    "https://orbelin.test/reports/drought",
    "<b>",
    "&amp;",
    "finance-007-s",
    "lorem",
    "\u00a0",
    "\u3000",
]
SEPARATORS = ["", " ", "\n", "/", "-", ".", "\x00"]

text = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), max_size=40).map(
    lambda parts: "".join(p + s for p, s in parts)
)


@pytest.fixture(scope="module")
def guard() -> LeakGuard:
    return LeakGuard(PRIVATE)


def described(found: list[leaks.Leak]) -> list[tuple[str, str, str]]:
    return [(x.kind, x.needle, x.how) for x in found]


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(text, min_size=1, max_size=4), block=st.sampled_from([1, 3, 8, 40]))
def test_reading_in_blocks_finds_what_reading_whole_finds(guard, texts, block, monkeypatch_module):
    monkeypatch_module.setattr(leaks, "_NORMALIZE_BLOCK", block)
    found = described(guard.find(texts))
    # the scan that stops at the first needle (a body's verdict) agrees, read in blocks too
    holds = guard.holds_any(texts)
    monkeypatch_module.setattr(leaks, "_NORMALIZE_BLOCK", 1 << 18)
    assert found == described(guard._find_joined([t for t in texts if t]))
    assert holds == bool(found)


@settings(max_examples=600, deadline=None)
@given(texts=st.lists(text, min_size=1, max_size=4))
def test_short_texts_said_to_hold_nothing_hold_nothing(guard, texts):
    """`reveals` answers short texts (a result's fields) from one look at them joined, when that
    look sees no needle, no host and no URL parameter to decode: the full search must agree."""
    texts = [t for t in texts if t]
    if texts and guard._nothing_in(texts):
        assert guard._find_joined(texts) == []


def test_a_short_text_with_a_needle_is_searched_in_full(guard):
    assert guard._nothing_in(["lorem ipsum", "https://example.test/flood?q=1"])
    assert not guard._nothing_in(["lorem", "https://example.test/?q=a+b"])  # a parameter to decode
    assert not guard.reveals("Quarterly flood report", "of orbelin")  # the needle spans two texts: none
    assert guard.reveals("see QUARTERLY  FLOOD report of Orbelin")
    assert guard.reveals("x", url="https://www.orbelin.test/reports/flood/?utm_source=x")
    assert guard.reveals("go", "?q=orbelin+api+pagination+limits")
    assert guard.reveals("see http://Example.test/?to=https%3A%2F%2Forbelin.test%2Freports%2Fflood")
    assert not guard.reveals("Orbelin report", url="https://orbelin.test/reports/drought")


def test_a_url_whose_form_it_was_given_is_judged_by_that_form():
    """Result URLs come with the forms scoring derived (`learn_url_forms`): the guard reads a
    URL's leak from the form it was given, not normalizing it again, and answers as it would
    have."""
    urls = [
        "https://www.orbelin.test/reports/flood/?utm_source=x",
        "https://orbelin.test/reports/drought",
        "HTTP://ZUNLO.test/page",
        "https://bücher.test/p#top",
        "",
    ]
    told = LeakGuard(PRIVATE)
    told.learn_url_forms({u: normalize_url(u) for u in urls})
    fresh = LeakGuard(PRIVATE)
    for url in urls:
        assert told.reveals("lorem", url=url) == fresh.reveals("lorem", url=url), url
    assert [fresh.reveals(url=u) for u in urls] == [True, False, True, True, False]
    # the form given is the one read: a drought page said to be the flood page is withheld
    misled = LeakGuard(PRIVATE)
    misled.learn_url_forms({"https://orbelin.test/reports/drought": "orbelin.test/reports/flood"})
    assert misled.reveals("lorem", url="https://orbelin.test/reports/drought")


@pytest.mark.parametrize(
    "texts",
    [
        ["see QUARTERLY  FLOOD report of Orbelin", "and more"],  # a query text, in the first text
        ["nothing", "x https://orbelin.test/reports/flood y"],  # a golden URL as written
        ["nothing", "see www.orbelin.test/reports/flood/?utm_source=x"],  # spelled otherwise
        ["go ?q=orbelin+api+pagination+limits"],  # in a URL's parameters
        ["to=https%3A%2F%2Forbelin.test%2Freports%2Fflood"],  # percent-encoded in another URL
        ["İ docs-012-e"],  # read whole: a letter whose lower case is longer
        ["orbelin.test/reports/drought", "Quarterly flood", "report of orbelin"],  # nothing
        ["", "lorem"],
    ],
)
def test_holds_any_says_whether_find_finds_anything(guard, texts):
    assert guard.holds_any(texts) == bool(guard.find(texts))


@settings(max_examples=300, deadline=None)
@given(value=st.text(), block=st.sampled_from([1, 2, 5, 17]))
def test_a_text_normalized_in_blocks_is_the_text_normalized(value, block, monkeypatch_module):
    monkeypatch_module.setattr(leaks, "_NORMALIZE_BLOCK", block)
    assert leaks._normalize(value) == normalize_text(value)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_a_site_scanned_side_by_side_finds_what_one_scan_finds(tmp_path, monkeypatch):
    """`publish.snapshot.scan_site` cuts the files in parts scanned in forked children: its
    findings, joined, are the serial scan's, leak for leak and in the same order."""
    from bench_assets.publish.snapshot import scan_site
    from bench_assets.runtime import processes as workers

    texts = {
        "index.html": "<p>clean page</p>",
        "a/1.html": "<p>Quarterly   flood report of ORBELIN</p>",
        "a/2.json": '{"u": "https://www.orbelin.test/reports/flood/?utm_source=x"}',
        "b/3.txt": "nothing here " * 5000,  # a large file: the parts are cut by bytes
        "b/4.csv": "row,DOCS-012-E\n",
        "c/5.html": "<a href='http://zunlo.test/page'>x</a>",
    }
    for rel, text in texts.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    guard = LeakGuard(PRIVATE)
    serial = guard.scan(tmp_path)
    assert len(serial) >= 4
    monkeypatch.setenv(workers.WORKERS_ENV, "2")
    assert scan_site(guard, tmp_path) == serial
    monkeypatch.setenv(workers.WORKERS_ENV, "3")
    assert scan_site(guard, tmp_path) == serial
