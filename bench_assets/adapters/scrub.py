"""Scrubbing a key out of text before it is kept anywhere.

A key leaves the process in whatever form the transport writes it: raw in a header, and in a URL
percent-encoded by rules that differ between clients (httpx, like aiohttp, escapes `+` and `=` in
a query value but leaves `/` raw; `urllib.parse.quote` escapes all three; `quote_plus` writes a
space as `+`). A vendor echoing the request back may escape it again: JSON (`\\/`, `\\u002b`), an
HTML page (`&#43;`, `&amp;`), a Python error message (`b'...\\n'`). No list of whole forms covers
every mixture, so the key is matched a character at a time: each character in any of the ways
one character is written in those encodings (`_CHARACTER_FORMS`), in any letter case. Whatever
mixture a transport or an echo produces is matched, as long as each character is written in one
of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import overload

REDACTED = "<redacted>"
# A shorter "key" is no vendor's, and scrubbing it would rewrite ordinary words of the evidence.
MIN_SCRUBBED_SECRET = 8
# A message cut short (transport errors are kept to a few hundred characters) may end in the
# first characters of a key: an ending of at least this many characters of a key is scrubbed too.
MIN_SCRUBBED_KEY_PREFIX = 6
# The longest form of one character below (`&#x0000ff;`-like references, `%25XX` for each byte).
_LONGEST_CHARACTER_FORM = 40

_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_HTML_NAMED = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;", "/": "&sol;", "=": "&equals;"}
_PLUS_SIGN = {" ": "+"}  # a space in form encoding (quote_plus)


def _character_forms(c: str) -> list[str]:
    """The regular expressions one character of a key is matched by: the character itself; each of
    its UTF-8 bytes percent-encoded, once or twice (`%2B`, `%252B`); JSON's escapes (`\\u002b`, `\\/`);
    HTML character references (`&#43;`, `&#x2b;`, `&amp;`); Python's escapes in a bytes or str
    repr (`\\n`, `\\x0a`); a space as `+`. Hex digits and letters in any case (the pattern is
    matched ignoring case)."""
    code = ord(c)
    data = c.encode("utf-8")
    forms = [re.escape(c)]
    forms.append("".join(f"%(?:25)?{b:02x}" for b in data))
    forms.append(f"\\\\u{code:04x}" if code <= 0xFFFF else "".join(f"\\\\u{u:04x}" for u in _surrogates(code)))
    forms.append(f"&#0*{code};?")
    forms.append(f"&#x0*{code:x};?")
    for table in (_JSON_ESCAPES, _HTML_NAMED, _PLUS_SIGN):
        if c in table:
            forms.append(re.escape(table[c]))
    if code < 0x80:
        forms.append(f"\\\\x{code:02x}")
    return forms


def _surrogates(code: int) -> tuple[int, int]:
    code -= 0x10000
    return 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)


def _character_pattern(c: str) -> str:
    return "(?:" + "|".join(_character_forms(c)) + ")"


def _core(secret: str) -> str:
    """The key without the whitespace or control characters around it (a careless .env's newline)."""
    return re.sub(r"^[\s\x00-\x1f\x7f]+|[\s\x00-\x1f\x7f]+$", "", secret)


# The last character of every form in `_character_forms` that does not end in the character itself:
# hex and decimal digits, ";" of a reference, "+" for a space, JSON's and Python's \n, \r, \t.
_ESCAPE_ENDINGS = "0123456789abcdef;+nrt"

# An ASCII letter or digit written escaped in one of the forms above, one pattern per escape
# character (a pattern that starts with a literal is searched for at the speed of a plain search).
_HEX_ALNUM = "(?:3[0-9]|[46][1-9a-f]|[57][0-9a])"
_ESCAPED_ALNUM = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        f"%(?:25)?{_HEX_ALNUM}",
        f"\\\\(?:u00|x){_HEX_ALNUM}",
        f"&#(?:x0*{_HEX_ALNUM}|0*(?:4[89]|5[0-7]|6[5-9]|[78][0-9]|9[07-9]|1[01][0-9]|12[0-2]))",
    )
)


@dataclass(frozen=True)
class _Matcher:
    """The compiled patterns for one set of keys."""

    whole: re.Pattern[str]  # any key, whole, in any mixture of forms
    tail: re.Pattern[str]  # an ending that is the start (at least MIN_SCRUBBED_KEY_PREFIX characters) of a key
    tail_chars: int  # how far from the end such an ending can start
    # the characters such an ending can end in (lower-cased): a key's own from its sixth on, and
    # the last character of any form (`_ESCAPE_ENDINGS`); a JSON body's "}" is none of them
    tail_last: frozenset[str]
    runs: tuple[str, ...]  # each key's longest run of ASCII letters and digits, lower-cased

    def may_hold(self, text: str) -> bool:
        """False only when `text` cannot hold a key: a key whose letters and digits are all written
        as themselves shows its longest run of them as it is (in some letter case); one that has
        one of them escaped shows an escaped letter or digit. Both are cheap to search for, and
        most texts hold neither a run nor such an escape."""
        if not all(self.runs):
            return True  # a key of symbols only: no literal part to look for
        lowered = text.lower()
        return any(run in lowered for run in self.runs) or any(p.search(text) for p in _ESCAPED_ALNUM)


@lru_cache(maxsize=64)
def _matcher(secrets: tuple[str, ...]) -> _Matcher | None:
    keys = sorted({k for s in secrets for k in (s, _core(s)) if len(_core(k)) >= MIN_SCRUBBED_SECRET}, key=len)
    if not keys:
        return None
    keys.reverse()  # the longest first: a key with its trailing newline before the key alone
    whole = "|".join("".join(_character_pattern(c) for c in key) for key in keys)
    tails = []
    for key in {_core(k) for k in keys}:
        chars = [_character_pattern(c) for c in key]
        nested = ""
        for c in reversed(chars[MIN_SCRUBBED_KEY_PREFIX:]):
            nested = f"(?:{c}{nested})?"
        tails.append("".join(chars[:MIN_SCRUBBED_KEY_PREFIX]) + nested)
    return _Matcher(
        re.compile(whole, re.IGNORECASE),
        re.compile(f"(?:{'|'.join(tails)})\\Z", re.IGNORECASE),
        max(map(len, keys)) * _LONGEST_CHARACTER_FORM,
        frozenset(_ESCAPE_ENDINGS) | {c.lower() for key in keys for c in _core(key)[MIN_SCRUBBED_KEY_PREFIX - 1 :]},
        tuple(max(re.findall(r"[A-Za-z0-9]+", key) or [""], key=len).lower() for key in keys),
    )


@overload
def scrub_secrets(text: str, secrets: Iterable[str]) -> str: ...
@overload
def scrub_secrets(text: str | None, secrets: Iterable[str]) -> str | None: ...
def scrub_secrets(text: str | None, secrets: Iterable[str]) -> str | None:
    """`text` with every occurrence of every secret replaced by "<redacted>", in whatever mixture
    of encodings each of its characters is written (see the module docstring), and an ending that
    is the start of one (a message cut short) as well."""
    if not text:
        return text
    matcher = _matcher(tuple(sorted({s for s in secrets if s})))
    if matcher is None:
        return text
    if matcher.may_hold(text):
        text = matcher.whole.sub(REDACTED, text)
    if text[-1].lower() in matcher.tail_last:
        cut = matcher.tail.search(text, max(0, len(text) - matcher.tail_chars))
        if cut is not None:
            text = text[: cut.start()] + REDACTED
    return text
