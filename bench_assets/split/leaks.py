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
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

import ahocorasick
import pyarrow as pa
import pyarrow.parquet as pq
from selectolax.lexbor import LexborHTMLParser

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
_SEPARATOR = "\x00"  # between readings of a file: not whitespace, in no needle, so no match spans two
_HTML_SUFFIXES = {".html", ".htm", ".svg", ".xml"}
_ATTRIBUTE = re.compile(r"""=\s*(?:"([^"]*)"|'([^']*)')""")  # attribute values (not in the text)
_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)


class Substrings:
    """Which of many strings occur in a text, in one pass over it (Aho–Corasick), whatever their
    number: `in` once per string would read a text once per holdout row, and a site grows with
    the rows, so a scan so made grows with their square. `found` returns the strings present, in
    the order they were given."""

    def __init__(self, strings: Iterable[str]):
        self.order: dict[str, int] = {}
        for s in strings:
            if s:
                self.order.setdefault(s, len(self.order))
        self._automaton: Any = None
        if self.order:
            self._automaton = ahocorasick.Automaton()
            for s in self.order:
                self._automaton.add_word(s, s)
            self._automaton.make_automaton()

    def found(self, text: str) -> list[str]:
        if self._automaton is None or not text:
            return []
        present = {s for _, s in self._automaton.iter(text)}
        return sorted(present, key=self.order.__getitem__)


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
    if text.isascii():
        return " ".join(text.lower().split())
    return " ".join(unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).split())


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
    suffix = Path(name).suffix.lower()
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
                        _json_strings(json.loads(doc), strings)
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
    cells: list[str] = []
    decoded: list[str] = []
    for column in table.columns:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        for value in column.to_pylist():
            if not value:
                continue
            cells.append(value)
            if value.lstrip().startswith(("{", "[")):
                strings: list[str] = []
                try:
                    _json_strings(json.loads(value), strings)
                except ValueError:
                    continue
                decoded += strings
    out = [t for t in ("\n".join(cells), "\n".join(decoded)) if t]
    out += [html.unescape(t) for t in out if "&" in t]
    unescaped = [_unescape_unicode(t) for t in out if "\\u" in t]
    return out + [t for t in unescaped if t not in out]


def url_candidates(text: str, hosts: Iterable[str], lowered: str | None = None) -> list[str]:
    """Every URL-like string in the text that names one of `hosts` (lower-case), as written and
    with trailing punctuation dropped; percent-encoded URLs inside them (`?to=https%3A%2F%2F…`) too."""
    seen: dict[str, None] = {}
    tokens: set[str] = set()
    stack = [(text, lowered)]
    while stack:
        chunk, lowered = stack.pop()
        lowered = lowered if lowered is not None else chunk.lower()
        for host in hosts:
            at = lowered.find(host)
            while at != -1:
                # the run of token characters ending at the host (at most 2,048 back): matched on
                # the reversed window, since a search for `[^...]*\Z` retries from every start in it
                left = _RIGHT.match(chunk[max(0, at - 2048) : at][::-1])
                right = _RIGHT.match(chunk, at)
                assert left is not None and right is not None  # both match the empty string
                token = left.group(0)[::-1] + right.group(0)
                at = lowered.find(host, at + len(host))
                if token in tokens:
                    continue
                tokens.add(token)
                for i in {0} | {m.start() for m in _URL_START.finditer(token)}:
                    for candidate in (token[i:], token[i:].rstrip(_TRAILING)):
                        seen.setdefault(candidate)
                if "%" in token:
                    decoded = unquote(token)
                    if decoded != token:
                        stack.append((decoded, None))
    return list(seen)


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
        self._url_cache: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return bool(self.normalized or self.urls)

    def _url_leak(self, candidate: str) -> str | None:
        if candidate not in self._url_cache:
            try:
                form = normalize_url(candidate)
            except (ValueError, UnicodeError):
                form = None
            self._url_cache[candidate] = self.urls.get(form) if form else None
        return self._url_cache[candidate]

    def find(self, texts: Iterable[str]) -> list[Leak]:
        """Every needle in any of the texts (the readings of one file, or one result's fields)."""
        texts = [t for t in texts if t]
        if not texts or not self:
            return []
        found: dict[tuple[str, str], Leak] = {}
        normalized = _SEPARATOR.join(_normalize(t) for t in texts)
        for form in self._needles.found(normalized):
            kind, needle = self.normalized[form]
            how = "" if any(needle in t for t in texts) else "written with other case, width, spacing or escaping"
            found[(kind, needle)] = Leak(kind, needle, how)
        values = [unquote_plus(v) for v in _PARAM_VALUE.findall(normalized) if "+" in v or "%" in v]
        if values:  # a query text written into a URL's parameters (`?q=quarterly+flood+report`)
            params = _SEPARATOR.join(_normalize(v) for v in values)
            for form in self._texts.found(params):
                kind, needle = self.normalized[form]
                if (kind, needle) not in found:
                    found[(kind, needle)] = Leak(kind, needle, "inside a URL's parameters")
        if self.urls:
            joined = _SEPARATOR.join(texts)
            lowered = joined.lower()
            hosts = self._hosts.found(lowered)  # no host, no URL of it
            for url in {u for h in hosts for u in self._exact_by_host.get(h, ())}:
                if url in joined:
                    found.setdefault(("url", url), Leak("url", url))
            for candidate in url_candidates(joined, hosts, lowered):
                leaked = self._url_leak(candidate)
                if leaked and ("url", leaked) not in found:
                    found[("url", leaked)] = Leak("url", leaked, f"written as {candidate[:80]!r}")
        return list(found.values())

    def reveals(self, *texts: str | None, url: str | None = None) -> bool:
        """Whether a result (its URL and text fields) would reveal a needle (the drill-down filter)."""
        if url and self.urls and self._url_leak(url):
            return True
        return bool(self.find([t for t in texts if t] + ([url] if url else [])))

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
