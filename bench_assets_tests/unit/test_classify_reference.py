"""The challenge-page test agrees with its reference definition on random bodies.

`fetch.classify.looks_like_challenge` looks for "<html" and "<!doctype" in any letter case without
lower-casing the body; the reference below lower-cases it, as the test was first written. Every
body must get the same answer, so no response changes class.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench_assets.fetch.classify import _CHALLENGE, looks_like_challenge

MANY = settings(deadline=None, max_examples=800)


def reference_looks_like_challenge(body: str | None) -> bool:
    if not body:
        return False
    head = body[:20000]
    lowered = head.lower()
    if not ("<html" in lowered or "<!doctype" in lowered or not head.lstrip().startswith(("{", "["))):
        return False
    return bool(_CHALLENGE.search(head))


PIECES = [
    "{", "[", " ", "\n", "\u00a0", "<", "!", "html", "HTML", "HtMl", "doctype", "DOCTYPE", "<!DocType", "<html",
    "captcha", "Just a moment...", "cf-chl", "\u0130", "\u212a", "\u0131", "\u017f", "ht", "ml", '"a":1', "}", "]",
]  # fmt: skip


@MANY
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
@example('{"results": [], "note": "<HTML> captcha"}')
@example('  [{"x": "<!doctype html> Just a moment..."}]')
@example("\u00a0{<\u0130html captcha")
def test_looks_like_challenge_agrees_with_the_reference(body):
    assert looks_like_challenge(body) == reference_looks_like_challenge(body)


@MANY
@given(st.text(max_size=60))
def test_looks_like_challenge_agrees_on_any_text(body):
    assert looks_like_challenge(body) == reference_looks_like_challenge(body)
    assert looks_like_challenge("{" + body + " captcha") == reference_looks_like_challenge("{" + body + " captcha")


def test_only_ascii_capitals_lower_case_to_the_markup_letters():
    """Why the case-blind pattern finds what the lower-cased search found: no other character
    lower-cases to a letter of "html" or "doctype", to "<" or to "!"."""
    wanted = set("<!htmldoctype")
    others = [chr(c) for c in range(0x110000) if not (0x41 <= c <= 0x5A) and wanted & set(chr(c).lower()) - {chr(c)}]
    assert others == [], others
