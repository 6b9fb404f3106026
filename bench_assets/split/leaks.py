"""The holdout-leak guard: the blocking scan of every file about to be published, and the filter
that withholds holdout-revealing results from the public drill-down pages.

What is looked for: every holdout row's id, query text and golden URLs, the same for the decoys
(private like the holdout), and for holdout rows that died and were replaced (still private).
A leak does not have to be a byte-exact copy, so both sides are compared the way a reader would
read them:

- each published file is decoded as a reader decodes it: HTML and SVG with their entities
  unescaped and their text extracted (with and without a space between elements), JSON and
  JSONL parsed (so `\\uXXXX` and `\\/` escapes are decoded), CSV read cell by cell, Parquet (the
  evidence bundle) read column by column, every string cell as written and, where it holds JSON
  (an archived response body), parsed; any other text as written; `\\uXXXX` escapes left in any
  text are decoded too, and so are percent-encoded URLs;
- query texts and ids are compared after the normalization the metrics use for text
  (`bench_assets.metrics.normalize_text`: NFKC, case-fold, whitespace collapse), so a query
  wrapped across lines, upper-cased or spelled with full-width characters is still found;
- URLs are compared by their normalized form (`bench_assets.metrics.normalize_url`): every
  URL-like string in the decoded content that names a holdout host (with or without scheme,
  `www.`, a trailing slash, reordered or `utm_*` parameters, a fragment or percent-encoding, or
  percent-encoded inside another URL) is extracted and normalized; a query text written into a
  URL's parameters (`?q=quarterly+flood+report`) is found too.

A byte-exact copy of a golden URL, even inside a longer URL, is reported as well.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

import ahocorasick_rs
import pyarrow as pa
import pyarrow.parquet as pq
from selectolax.lexbor import LexborHTMLParser

from bench_assets.adapters.base import loads_json
from bench_assets.metrics import normalize_url

# A URL can only normalize to a holdout URL if it names that URL's host, so URL-like strings are
# looked for around each occurrence of a holdout host: the token around it (no whitespace, quote
# or angle bracket), from each place a URL can start in it: the token's start, a scheme, `//`,
# `www.`, or after `=`, `(`, `[` or `,`.
_DELIMS = "\\x00\\s\"'<>\\\\`{}|^"
_RIGHT = re.compile(f"[^{_DELIMS}]*")
_URL_START = re.compile(r"(?:[a-z][a-z0-9+.-]*:)?//|www\.|(?<=[=(\[,])", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\"*_"
_PARAM_VALUE = re.compile(r"[?&;][^=\s\"'<>&#?]{1,64}=([^\s\"'<>&#]+)")  # a URL parameter's value
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})(?:\\u([0-9a-fA-F]{4}))?")
_WHITESPACE = re.compile(r"\s")  # what `str.split` splits on (a test checks every code point)
_NORMALIZE_BLOCK = 1 << 18  # characters normalized (and searched) at once
_SEPARATOR = "\x00"  # between readings of a file: not whitespace, in no needle, so no match spans two
_HTML_SUFFIXES = {".html", ".htm", ".svg", ".xml"}
_ATTRIBUTE = re.compile(r"""=\s*(?:"([^"]*)"|'([^']*)')""")  # attribute values (not in the text)
_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
_REVEALS_REMEMBERED = 8_000_000  # characters of result texts whose `reveals` answer is kept
_REVEALS_REMEMBERED_EACH = 2_000  # ... each at most this long (a URL, a title and a snippet)
_SHORT_TEXTS = 4_000  # characters of texts (a result's fields) first searched whole for anything at all
_URLS_REMEMBERED = 250_000  # URL-like strings whose normalized form is kept
_TOKENS_REMEMBERED = 16_384  # URL tokens whose URL-like strings are kept (`_token_forms`)


class Substrings:
    """Which of many strings occur in a text, in one pass over it (Aho–Corasick), whatever their
    number: `in` once per string would read a text once per holdout row, and a site grows with
    the rows, so a scan so made grows with their square. `found` returns the strings present, in
    the order they were given. The automaton is ahocorasick-rs's (Rust): it reads a response body
    faster than pyahocorasick did, and reports every match, overlapping ones too, as that did."""

    def __init__(self, strings: Iterable[str]):
        self.order: dict[str, int] = {}
        for s in strings:
            if s:
                self.order.setdefault(s, len(self.order))
        self._strings = list(self.order)
        self._automaton = ahocorasick_rs.AhoCorasick(self._strings) if self._strings else None

    def found(self, text: str) -> list[str]:
        return sorted(self.present(text), key=self.order.__getitem__)

    def any_in(self, text: str) -> bool:
        """Whether any of the strings occurs in the text."""
        return self._automaton is not None and bool(self._automaton.find_matches_as_indexes(text))

    def present(self, text: str) -> set[str]:
        """The strings present in the text (unordered)."""
        if self._automaton is None or not text:
            return set()
        strings = self._strings
        return {strings[i] for i, _, _ in self._automaton.find_matches_as_indexes(text, overlapping=True)}


def url_hosts(url: str) -> set[str]:
    """The spellings of a URL's host a text may carry: lower-cased, without `www.`, Unicode and punycode."""
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").rstrip(".")
    while host.startswith("www.") and "." in host[4:]:
        host = host[4:]
    out = {host} if host else set()
    try:
        out.add(host.encode("idna").decode("ascii").lower() if not host.isascii() else host.encode().decode("idna"))
    except (UnicodeError, ValueError):
        pass  # not a valid IDN: its one spelling
    return {h for h in out if h}


def _normalize(text: str) -> str:
    """`normalize_text` (NFKC, case-fold, NFKC, whitespace collapsed), computed faster on a whole
    site: ASCII text skips NFKC (it leaves ASCII as it is, and its case-fold is its lower case),
    and whitespace is collapsed by `str.split`, which splits on exactly what `\\s` matches. A
    property test checks it equals `normalize_text` on any text."""
    if len(text) > _NORMALIZE_BLOCK:  # a whole Parquet column: its words are not all held at once
        return " ".join(n for n in map(_normalize_block, _blocks(text)) if n)
    return _normalize_block(text)


def _normalize_block(text: str) -> str:
    if text.isascii():
        return " ".join(text.lower().split())
    return " ".join(unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).split())


def _blocks(text: str) -> Iterator[str]:
    """A long text in pieces of about `_NORMALIZE_BLOCK` characters, each cut just before a
    whitespace character. Each piece normalizes on its own to what it is in the whole: NFKC
    composes and reorders only within a word (a whitespace character is a starter that composes
    with nothing, and stays whitespace), and case-folding is per character; so the normalized
    text is the normalized pieces joined by one space."""
    start = 0
    while start < len(text):
        cut = _WHITESPACE.search(text, start + _NORMALIZE_BLOCK) if len(text) - start > _NORMALIZE_BLOCK else None
        end = cut.start() if cut else len(text)
        yield text[start:end]
        start = end


@dataclass(frozen=True)
class Leak:
    """One needle found in a text: its kind, the needle as the private store holds it, and how it
    was written where it was found (empty when byte for byte)."""

    kind: str  # "id", "text" or "url"
    needle: str
    how: str = ""

    def describe(self, where: str) -> str:
        shown = f"{where}: holdout {self.kind} {self.needle[:60]!r}"
        return f"{shown} ({self.how})" if self.how else shown


def _unescape_unicode(text: str) -> str:
    """Decode `\\uXXXX` escapes (surrogate pairs joined) left in text outside JSON, e.g. in a script."""
    if "\\u" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        hi = int(m.group(1), 16)
        if m.group(2):
            lo = int(m.group(2), 16)
            if 0xD800 <= hi < 0xDC00 and 0xDC00 <= lo < 0xE000:
                return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
            return _safe_chr(hi) + _safe_chr(lo)
        return _safe_chr(hi)

    return _UNICODE_ESCAPE.sub(one, text)


def _safe_chr(code: int) -> str:
    return "\ufffd" if 0xD800 <= code < 0xE000 else chr(code)


def _json_strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _json_strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _json_strings(v, out)


def text_encoding(data: bytes) -> str:
    """The encoding a reader's browser would settle on: UTF-8 when the bytes are UTF-8, else
    Windows-1252 (what a non-UTF-8 text file mostly is), else Latin-1, which decodes any byte."""
    for encoding in ("utf-8", "cp1252"):
        try:
            data.decode(encoding)
            return encoding
        except UnicodeDecodeError:
            pass
    return "latin-1"


def decode_bytes(data: bytes) -> str:
    """The text of a file as a reader reads it (a UTF-8 byte-order mark dropped)."""
    encoding = text_encoding(data)
    return data.decode("utf-8-sig" if encoding == "utf-8" else encoding)


def readings(name: str, text: str) -> list[str]:
    """The ways a reader reads one file's text (`name` decides how it is parsed). HTML and SVG:
    the text (scripts and styles included) with and without a space between elements, every
    attribute value and comment, entities decoded; JSON, JSONL and CSV: every string or cell,
    decoded (the raw text when it does not parse); anything else as written, entities decoded."""
    suffix = os.path.splitext(name)[1].lower()  # (not `Path`: a body is read this way, 100,000 of them)
    out: list[str] = []
    if suffix in _HTML_SUFFIXES:
        tree = LexborHTMLParser(text)
        # both: words split by markup ("fl<b>oo</b>d") and words in neighbouring cells
        out += [tree.text(separator=""), tree.text(separator=" ")]
        hidden = [a or b for a, b in _ATTRIBUTE.findall(text)] + _COMMENT.findall(text)
        out.append(html.unescape("\n".join(hidden)))
    elif suffix in (".json", ".jsonl", ".csv", ".tsv"):
        strings: list[str] = []
        try:
            if suffix in (".csv", ".tsv"):
                strings = [
                    c for row in csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",") for c in row
                ]
            else:
                for doc in [text] if suffix == ".json" else text.splitlines():
                    if doc.strip():
                        _json_strings(loads_json(doc), strings)
        except (ValueError, csv.Error):
            strings = [text]  # not valid: read as written
        joined = "\n".join(strings)
        out.append(html.unescape(joined) if "&" in joined else joined)
    else:
        out.append(html.unescape(text) if "&" in text else text)
    unescaped = [_unescape_unicode(t) for t in out if "\\u" in t]
    return out + [t for t in unescaped if t not in out]


def parquet_readings(data: bytes) -> list[str]:
    """The ways a reader reads a Parquet file (as DuckDB or pyarrow show it): every string cell of
    every column, as written, and for a cell that holds JSON its strings decoded (a `\\/` or
    `\\uXXXX` escape in an archived body hides nothing); entities and escapes decoded as for text."""
    table = pq.read_table(io.BytesIO(data))
    # each column's cells, and each cell's decoded strings, joined as they are read: the texts are
    # the same as joining every cell (every string) at once, without holding each one as an object
    cells: list[str] = []
    decoded: list[str] = []
    for column in table.columns:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        values = [value for value in column.to_pylist() if value]
        if not values:
            continue
        cells.append("\n".join(values))
        for value in values:
            if value.lstrip().startswith(("{", "[")):
                strings: list[str] = []
                try:
                    _json_strings(loads_json(value), strings)
                except ValueError:
                    continue
                if strings:
                    decoded.append("\n".join(strings))
        del values
    out = [t for t in ("\n".join(cells), "\n".join(decoded)) if t]
    del cells, decoded
    out += [html.unescape(t) for t in out if "&" in t]
    unescaped = [_unescape_unicode(t) for t in out if "\\u" in t]
    return out + [t for t in unescaped if t not in out]


def _host_tokens(chunk: str, hosts: Iterable[str], lowered: str) -> Iterator[tuple[str, int, str]]:
    """(host, position, token) for each occurrence of each host (in the order of `hosts`, then of
    position): the run of token characters around it (no whitespace, quote or angle bracket)."""
    for host in hosts:
        at = lowered.find(host)
        while at != -1:
            # the run of token characters ending at the host (at most 2,048 back): matched on
            # the reversed window, since a search for `[^...]*\Z` retries from every start in it
            left = _RIGHT.match(chunk[max(0, at - 2048) : at][::-1])
            right = _RIGHT.match(chunk, at)
            assert left is not None and right is not None  # both match the empty string
            yield host, at, left.group(0)[::-1] + right.group(0)
            at = lowered.find(host, at + len(host))


@lru_cache(maxsize=_TOKENS_REMEMBERED)
def _token_forms(token: str) -> tuple[tuple[str, ...], str | None]:
    """A token's URL-like strings, from each place a URL can start in it, as written and with
    trailing punctuation dropped (in `_token_candidates`' order), and the token percent-decoded
    when that changes it. Remembered: the same result URLs come back in many bodies."""
    forms: list[str] = []
    for i in {0} | {m.start() for m in _URL_START.finditer(token)}:
        forms += (token[i:], token[i:].rstrip(_TRAILING))
    decoded = unquote(token) if "%" in token else token
    return tuple(forms), (decoded if decoded != token else None)


def _token_candidates(tokens: Iterable[str], hosts: list[str]) -> list[str]:
    """The URL-like strings of tokens (each once, in order): from each place a URL can start in
    it, as written and with trailing punctuation dropped; then those of the percent-encoded URLs
    inside them (`?to=https%3A%2F%2F…`), the last decoded first."""
    seen: dict[str, None] = {}
    taken: set[str] = set()
    stack: list[str] = []

    def take(batch: Iterable[str]) -> None:
        for token in batch:
            if token in taken:
                continue
            taken.add(token)
            forms, decoded = _token_forms(token)
            for candidate in forms:
                seen.setdefault(candidate)
            if decoded is not None:
                stack.append(decoded)

    take(tokens)
    while stack:
        chunk = stack.pop()
        take(token for _, _, token in _host_tokens(chunk, hosts, chunk.lower()))
    return list(seen)


def url_candidates(text: str, hosts: Iterable[str], lowered: str | None = None) -> list[str]:
    """Every URL-like string in the text that names one of `hosts` (lower-case), as written and
    with trailing punctuation dropped; percent-encoded URLs inside them (`?to=https%3A%2F%2F…`) too."""
    hosts = list(hosts)
    lowered = lowered if lowered is not None else text.lower()
    return _token_candidates((token for _, _, token in _host_tokens(text, hosts, lowered)), hosts)


class _LongerInLowerCase(Exception):
    """A text holds a letter whose lower case is longer than it: `_Scan` does not read it."""


class _Scan:
    """`LeakGuard.find` over texts read a block at a time, finding what a search of the texts
    joined whole finds (`LeakGuard._find_joined`):

    - blocks are cut just before a whitespace character (`_blocks`), so no word, no run without
      whitespace (where a URL parameter lies) and no URL token spans two blocks of a text; the
      normalized text is the normalized blocks joined by a space (see `_blocks`);
    - an id or query text may span blocks (it may hold spaces): each block is searched with the
      end of the normalized text before it, one character shorter than the longest needle; a
      golden URL written as is, with the end of the text before it, one shorter than the longest;
    - a URL parameter's value may run on across the separator between two texts: the open run is
      carried over to the next text;
    - URL tokens are gathered with where their host was found, and read in the order a search of
      the whole text reads them (host by host, then by position), so each leak is reported with
      the same spelling."""

    def __init__(self, guard: LeakGuard, first: bool = False):
        self.guard = guard
        self.first = first  # stop at the first needle found (`LeakGuard.holds_any`)
        self.needle_reach = guard._needle_reach
        self.url_reach = guard._url_reach
        self.forms: set[str] = set()
        self.values: list[str] = []
        self.hosts: set[str] = set()
        self.exact: set[str] = set()
        self.tokens: dict[str, tuple[int, int]] = {}  # token -> (its host's place, its position)
        self.needle_tail = ""  # the end of the normalized texts so far
        self.run = ""  # the normalized texts' last run without whitespace so far
        self.url_tail = ""  # the end of the texts so far, as written
        self.offset = 0  # where the next block starts in the texts joined
        self.started = False

    def read(self, text: str) -> bool:
        """Read one more text; True when reading for the first find (`first`) and one was found:
        the rest need not be read."""
        if self.started:
            self.needle_tail = ""  # no needle holds the separator
            self.run += _SEPARATOR
            self.url_tail = (self.url_tail + _SEPARATOR)[-self.url_reach :] if self.url_reach else ""
            self.offset += len(_SEPARATOR)
        self.started = True
        spoken = False  # whether this text's normalized form has begun
        for block in _blocks(text):
            normalized = _normalize_block(block)
            piece = (" " if spoken and normalized else "") + normalized
            spoken = spoken or bool(normalized)
            self._needles(piece)
            if self.first and self.forms:
                return True
            self._params(piece)
            if self.guard.urls:
                self._urls(block)
                if self.first and self.exact:
                    return True
            self.offset += len(block)
        return False

    def _needles(self, piece: str) -> None:
        window = self.needle_tail + piece
        self.forms |= self.guard._needles.present(window)
        self.needle_tail = window[-self.needle_reach :] if self.needle_reach else ""

    def _params(self, piece: str) -> None:
        run = self.run + piece
        cut = piece.rfind(" ")
        if cut == -1:
            self.run = run
            return
        cut += len(self.run)
        self._values(run[:cut])
        self.run = run[cut + 1 :]

    def _values(self, runs: str) -> None:
        """The parameter values of whole runs (a value never holds whitespace); only one with `+`
        or `%` is decoded again, so text without both `=` and one of them has none to read."""
        if ("+" in runs or "%" in runs) and "=" in runs:
            self.values += [unquote_plus(v) for v in _PARAM_VALUE.findall(runs) if "+" in v or "%" in v]

    def _urls(self, block: str) -> None:
        guard = self.guard
        lowered = block.lower()
        if len(lowered) != len(block):
            raise _LongerInLowerCase
        # a host, and so a URL token, never spans two blocks (no whitespace in either)
        hosts = guard._hosts.present(lowered)
        self.hosts |= hosts
        for url in {u for h in hosts for u in guard._exact_by_host.get(h, ())}:
            if url not in self.exact and url in block:
                self.exact.add(url)
        # a golden URL as written might (with a space in it): look across the cut, for every host found so far
        if self.url_reach and self.url_tail:
            seam = self.url_tail + block[: self.url_reach]
            for url in {u for h in self.hosts for u in guard._exact_by_host.get(h, ())}:
                if url not in self.exact and url in seam:
                    self.exact.add(url)
        self.url_tail = (self.url_tail + block)[-self.url_reach :] if self.url_reach else ""
        order = guard._hosts.order
        for host, at, token in _host_tokens(block, sorted(hosts, key=order.__getitem__), lowered):
            place = (order[host], self.offset + at)
            known = self.tokens.get(token)
            if known is None or place < known:
                self.tokens[token] = place

    def leaks(self, texts: list[str]) -> list[Leak]:
        guard = self.guard
        self._values(self.run)
        found: dict[tuple[str, str], Leak] = {}
        for form in sorted(self.forms, key=guard._needles.order.__getitem__):
            kind, needle = guard.normalized[form]
            found[(kind, needle)] = Leak(kind, needle, guard._how(needle, texts))
        guard._param_leaks(self.values, found)
        if guard.urls:
            hosts = sorted(self.hosts, key=guard._hosts.order.__getitem__)
            for url in {u for h in hosts for u in guard._exact_by_host.get(h, ())}:
                if url in self.exact:
                    found.setdefault(("url", url), Leak("url", url))
            ordered = sorted(self.tokens, key=self.tokens.__getitem__)
            guard._candidate_leaks(_token_candidates(ordered, hosts), found)
        return list(found.values())


class LeakGuard:
    """The holdout's needles, normalized once; scans texts, files and directories for them.

    `holdout` is a list of {row_id, request_text, golden_urls} (holdout rows, decoys, dead
    holdout rows). With `urls=False` golden URLs are not looked for (a vendor's review packet
    may list any page the vendor itself returned)."""

    def __init__(self, holdout: Iterable[dict[str, Any]], *, urls: bool = True):
        self.normalized: dict[str, tuple[str, str]] = {}  # normalized text or id -> (kind, needle)
        self.exact_urls: set[str] = set()  # golden URLs as written (a byte-exact copy, even inside a longer URL)
        self.urls: dict[str, str] = {}  # normalized URL -> URL as the private store holds it
        self.hosts: set[str] = set()  # every spelling of the golden URLs' hosts
        self._exact_by_host: dict[str, list[str]] = {}
        for row in holdout:
            for kind, value in (("id", row.get("row_id")), ("text", row.get("request_text"))):
                if value and _normalize(value):
                    self.normalized.setdefault(_normalize(value), (kind, value))
            if urls:
                for url in row.get("golden_urls") or []:
                    self.exact_urls.add(url)
                    self.urls.setdefault(normalize_url(url), url)
                    for host in url_hosts(url):
                        self.hosts.add(host)
                        self._exact_by_host.setdefault(host, []).append(url)
        # longest first, so a query that contains another is reported as itself
        self._normalized_items = sorted(self.normalized.items(), key=lambda kv: -len(kv[0]))
        self._needles = Substrings(f for f, _ in self._normalized_items)
        self._texts = Substrings(f for f, v in self._normalized_items if v[0] == "text")
        self._hosts = Substrings(self.hosts)
        # how far back a block's search looks: one character short of the longest needle, the longest URL
        self._needle_reach = max((len(f) for f in self.normalized), default=1) - 1
        self._url_reach = max((len(u) for u in self.exact_urls), default=1) - 1
        self._url_cache: dict[str, str | None] = {}
        # `reveals` answers, per result: the same page comes back for many rows and from many vendors
        self._revealed: dict[tuple[tuple[str | None, ...], str | None], bool] = {}
        self._revealed_chars = 0

    def __bool__(self) -> bool:
        return bool(self.normalized or self.urls)

    def _url_leak(self, candidate: str) -> str | None:
        if candidate not in self._url_cache:
            try:
                form = normalize_url(candidate)
            except (ValueError, UnicodeError):
                form = None
            if len(self._url_cache) >= _URLS_REMEMBERED:  # a site's worth of URLs: start again
                self._url_cache.clear()
            self._url_cache[candidate] = self.urls.get(form) if form else None
        return self._url_cache[candidate]

    def learn_url_forms(self, forms: Mapping[str, str]) -> None:
        """Take URLs' normalized forms (`metrics.normalize_url`) already derived elsewhere (a
        vendor's result URLs, as scoring normalized them), so that asking whether one of them is a
        private row's URL does not normalize it again. Kept like the forms the guard derives itself
        (up to `_URLS_REMEMBERED`, then all forgotten at once)."""
        if len(self._url_cache) + len(forms) > _URLS_REMEMBERED:
            self._url_cache.clear()
        for url, form in forms.items():
            self._url_cache.setdefault(url, self.urls.get(form) if form else None)

    def find(self, texts: Iterable[str]) -> list[Leak]:
        """Every needle in any of the texts (the readings of one file, or one result's fields).

        What is found is what a search of all the texts joined by `_SEPARATOR` finds (each text
        normalized for ids and query texts, lower-cased for hosts); the texts are read a block at
        a time (`_Scan`), so a large file (a vendor's evidence Parquet) is never copied whole."""
        texts = [t for t in texts if t]
        if not texts or not self:
            return []
        scan = _Scan(self)
        try:
            for text in texts:
                scan.read(text)
        except _LongerInLowerCase:  # a letter whose lower case is longer (İ): see _find_joined
            return self._find_joined(texts)
        return scan.leaks(texts)

    def holds_any(self, texts: Iterable[str]) -> bool:
        """Whether `find` would find anything in the texts: the same scan, stopped at the first
        needle found (a response body that names a private row mostly does so early, by a query
        text or a golden URL as written), and nothing gathered to describe it."""
        texts = [t for t in texts if t]
        if not texts or not self:
            return False
        scan = _Scan(self, first=True)
        try:
            for text in texts:
                if scan.read(text):
                    return True
        except _LongerInLowerCase:
            return bool(self._find_joined(texts))
        # read whole without a find on the way (no query text, id or golden URL as written): what
        # is left to look for (URL parameters, URLs spelled otherwise) is what `find` looks for
        return bool(scan.leaks(texts))

    def _nothing_in(self, texts: list[str]) -> bool:
        """Whether short texts (a result's fields: most hold nothing, while a file or a body
        seldom does) certainly hold no needle, read once joined:
        no id or query text in their normalized form (none holds the separator, so none spans two
        texts; normalizing the texts joined changes only the spaces next to it), no host in their
        lower-cased form (a URL leak, as written, spelled otherwise or percent-encoded inside
        another URL, is only looked for around a host), and no URL parameter value to decode (one
        needs a `=` and a `+` or `%`). Longer texts go straight to the scan."""
        if sum(map(len, texts)) > _SHORT_TEXTS:  # a file's readings seldom hold nothing: the scan reads them once
            return False
        joined = _SEPARATOR.join(texts)
        normalized = _normalize_block(joined)
        if "=" in normalized and ("+" in normalized or "%" in normalized):
            return False
        if self._needles.any_in(normalized):
            return False
        return not (self.urls and self._hosts.any_in(joined.lower()))

    def _find_joined(self, texts: list[str]) -> list[Leak]:
        """`find` on the texts joined whole. Kept for texts whose lower-cased form is longer than
        they are: host positions are found in the lower-cased text and cut from the text as written,
        and `_Scan`, which reads in blocks, would cut them elsewhere."""
        found: dict[tuple[str, str], Leak] = {}
        normalized = _SEPARATOR.join(_normalize(t) for t in texts)
        for form in self._needles.found(normalized):
            kind, needle = self.normalized[form]
            found[(kind, needle)] = Leak(kind, needle, self._how(needle, texts))
        values = [unquote_plus(v) for v in _PARAM_VALUE.findall(normalized) if "+" in v or "%" in v]
        del normalized
        self._param_leaks(values, found)
        if self.urls:
            joined = _SEPARATOR.join(texts)
            lowered = joined.lower()
            hosts = self._hosts.found(lowered)  # no host, no URL of it
            for url in {u for h in hosts for u in self._exact_by_host.get(h, ())}:
                if url in joined:
                    found.setdefault(("url", url), Leak("url", url))
            self._candidate_leaks(url_candidates(joined, hosts, lowered), found)
        return list(found.values())

    @staticmethod
    def _how(needle: str, texts: list[str]) -> str:
        return "" if any(needle in t for t in texts) else "written with other case, width, spacing or escaping"

    def _param_leaks(self, values: list[str], found: dict[tuple[str, str], Leak]) -> None:
        """Query texts in URL parameters' values (`?q=quarterly+flood+report`), decoded."""
        if values:
            params = _SEPARATOR.join(_normalize(v) for v in values)
            for form in self._texts.found(params):
                kind, needle = self.normalized[form]
                if (kind, needle) not in found:
                    found[(kind, needle)] = Leak(kind, needle, "inside a URL's parameters")

    def _candidate_leaks(self, candidates: list[str], found: dict[tuple[str, str], Leak]) -> None:
        for candidate in candidates:
            leaked = self._url_leak(candidate)
            if leaked and ("url", leaked) not in found:
                found[("url", leaked)] = Leak("url", leaked, f"written as {candidate[:80]!r}")

    def reveals(self, *texts: str | None, url: str | None = None) -> bool:
        """Whether a result (its URL and text fields) would reveal a needle (the drill-down filter).
        Short answers are remembered (up to `_REVEALS_REMEMBERED` characters of texts, then
        forgotten at once): the same page comes back for many rows and from many vendors."""
        size = sum(len(t) for t in texts if isinstance(t, str)) + len(url or "")
        if size > _REVEALS_REMEMBERED_EACH:  # a whole page's text: seldom asked about twice
            return self._reveals(texts, url)
        key = (texts, url)
        known = self._revealed.get(key)
        if known is None:
            known = self._reveals(texts, url)
            if self._revealed_chars + size > _REVEALS_REMEMBERED:
                self._revealed.clear()
                self._revealed_chars = 0
            self._revealed[key] = known
            self._revealed_chars += size
        return known

    def _reveals(self, texts: tuple[str | None, ...], url: str | None) -> bool:
        if url and self.urls and self._url_leak(url):
            return True
        fields = [t for t in texts if t] + ([url] if url else [])
        if not fields or not self or self._nothing_in(fields):
            return False
        return self.holds_any(fields)

    def scan_file(self, path: Path, rel: str) -> list[str]:
        data = path.read_bytes()
        texts = parquet_readings(data) if path.suffix.lower() == ".parquet" else readings(path.name, decode_bytes(data))
        return [leak.describe(rel) for leak in self.find(texts)]

    def scan_counts(self, leaks: list[str]) -> dict[tuple[str, str], int]:
        """`scan`'s findings counted per (file, kind): what may be shown outside the private store."""
        counts: dict[tuple[str, str], int] = {}
        for leak in leaks:
            where, _, rest = leak.partition(": holdout ")
            key = (where, rest.split(" ", 1)[0])
            counts[key] = counts.get(key, 0) + 1
        return counts

    def scan(self, directory: Path) -> list[str]:
        """Every place a needle appears in the files under `directory`, as `path: holdout kind 'needle'`."""
        leaks: list[str] = []
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                leaks += self.scan_file(path, path.relative_to(directory).as_posix())
        return leaks
