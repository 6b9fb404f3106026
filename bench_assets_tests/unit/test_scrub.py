"""The scrubber matches a key in any mixture of the encodings it travels and comes back in.

The property test draws keys with the characters URL encoders disagree on, writes each character
in an encoding drawn on its own (as a transport escaping some characters and not others, then a
vendor escaping its echo again would), and requires that nothing of the key is left; ordinary
text around it is left as it was.
"""

from __future__ import annotations

import json
from html import escape
from urllib.parse import quote, quote_plus

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.adapters.scrub import REDACTED, scrub_secrets

ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=-_.~ "


def written(c: str, how: str) -> str:
    """One character as an encoder writes it."""
    code = ord(c)
    return {
        "raw": c,
        "percent": f"%{code:02X}",
        "percent-lower": f"%{code:02x}",
        "double-percent": f"%25{code:02X}",
        "json-unicode": f"\\u{code:04x}",
        "html-decimal": f"&#{code};",
        "html-hex": f"&#x{code:X};",
        "json-slash": "\\/" if c == "/" else c,
        "html-named": escape(c),
        "plus-space": "+" if c == " " else c,
    }[how]


HOW = [
    "raw",
    "percent",
    "percent-lower",
    "double-percent",
    "json-unicode",
    "html-decimal",
    "html-hex",
    "json-slash",
    "html-named",
    "plus-space",
]


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(alphabet=ALPHABET, min_size=8, max_size=40).filter(lambda k: k.strip() == k and k.strip()),
    hows=st.lists(st.sampled_from(HOW), min_size=40, max_size=40),
    before=st.text(alphabet="#!?,:", max_size=20),  # nothing a key is made of
)
def test_a_key_in_any_mixture_of_encodings_is_scrubbed(key, hows, before):
    encoded = "".join(written(c, how) for c, how in zip(key, hows))
    text = f"{before}[{encoded}]"
    assert scrub_secrets(text, [key]) == f"{before}[{REDACTED}]"


@pytest.mark.parametrize(
    "form",
    [
        "serpapi%2BPLANTED/5e8a%3D0b6c",  # aiohttp on the wire: + and = escaped, / raw
        quote("serpapi+PLANTED/5e8a=0b6c", safe=""),
        quote_plus("serpapi+PLANTED/5e8a=0b6c"),
        json.dumps("serpapi+PLANTED/5e8a=0b6c").strip('"').replace("/", "\\/"),
        "serpapi&#43;PLANTED&#x2F;5e8a&#61;0b6c",
        "SERPAPI%2BPLANTED%2F5E8A%3D0B6C",
        "serpapi%252BPLANTED%252F5e8a%253D0b6c",  # escaped twice
    ],
)
def test_the_forms_a_transport_or_an_echo_gives_a_key(form):
    assert scrub_secrets(f"GET /search?api_key={form}&q=a", ["serpapi+PLANTED/5e8a=0b6c"]) == (
        f"GET /search?api_key={REDACTED}&q=a"
    )


def test_httpx_writes_the_key_in_a_form_it_matches():
    key = "serpapi+PLANTED/5e8a=0b6c"
    url = str(httpx.URL("https://serpapi.com/search", params={"api_key": key, "q": "a b"}))
    assert scrub_secrets(url, [key]) == f"https://serpapi.com/search?api_key={REDACTED}&q=a+b"


def test_a_message_cut_short_inside_a_key_in_any_form():
    key = "serpapi+PLANTED/5e8a=0b6c"
    assert scrub_secrets("error quoting api_key=serpapi%2BPLA", [key]) == f"error quoting api_key={REDACTED}"
    assert scrub_secrets("ends with serpa", [key]) == "ends with serpa"  # fewer than six characters
    assert scrub_secrets("serpapi is a vendor", [key]) == "serpapi is a vendor"


def test_text_without_the_key_is_left_as_it_was():
    text = json.dumps({"url": "https://example.com/a?b=%2F&c=%41", "t": "&#65; &amp; \\u0041 café"})
    assert scrub_secrets(text, ["tvly-PLANTED-3b7e1a9c4d20"]) == text
    assert scrub_secrets(text, ["short"]) == text  # too short to be a key
    assert scrub_secrets(None, ["tvly-PLANTED-3b7e1a9c4d20"]) is None


@settings(max_examples=200, deadline=None)
@given(
    key=st.text(alphabet=ALPHABET, min_size=8, max_size=40).filter(lambda k: k.strip() == k),
    hows=st.lists(st.sampled_from(HOW), min_size=40, max_size=40),
    kept=st.integers(min_value=6, max_value=40),
)
def test_a_message_cut_short_inside_a_key_in_any_mixture_of_encodings(key, hows, kept):
    """A transport error kept to a few hundred characters can end inside the key it quotes."""
    cut = "".join(written(c, how) for c, how in zip(key[:kept], hows))
    assert scrub_secrets(f"error: {cut}", [key]) == f"error: {REDACTED}"
