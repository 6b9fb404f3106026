"""What every vendor adapter is: transport only.

An adapter builds the exact HTTP request a vendor documents and parses the exact response it
returns into a normalized result list. It never scores and never decides whether an answer is
right. Each vendor is one small module in this package defining one `Adapter` subclass.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pydantic_core

from bench_assets.adapters.scrub import REDACTED
from bench_assets.adapters.scrub import scrub_secrets as scrub_secrets  # importable from here too, where it was first

Capability = Literal["search", "extract"]

# Error classes an adapter may report from the vendor's own codes. The scoring layer adds the
# classes only evidence can show (timeout, blocked, malformed, empty).
VENDOR_ERROR_CLASSES = ("auth", "quota", "rate_limited", "bad_request", "not_found", "server")


@dataclass(frozen=True)
class VendorTask:
    """What we ask a vendor: a search query, or a URL to extract."""

    capability: Capability
    text: str
    num_results: int = 10
    page: int = 1  # 1-based page of a search the vendor serves a page at a time (`Adapter.page_size`)


def key_problem(key: str) -> str | None:
    """Why a key read from the environment cannot be sent as it is, or None when it can.

    A trailing newline or space (a common .env mistake) or a control character would make httpx
    refuse the header with an error that quotes it, key included; never name the key itself."""
    if key != key.strip():
        return "has leading or trailing whitespace (a trailing newline is a common .env mistake)"
    bad = next((c for c in key if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        return f"contains a control character (U+{ord(bad):04X})"
    return None


@dataclass(frozen=True)
class HttpRequest:
    """An HTTP request, with the names of the parts that carry a secret (never archived)."""

    method: Literal["GET", "POST"]
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    json_body: Any = None
    secret_headers: tuple[str, ...] = ()
    secret_params: tuple[str, ...] = ()

    def redacted(self) -> dict[str, Any]:
        """The request as archived: secret headers and parameters replaced by a marker."""
        secret_h = {h.lower() for h in self.secret_headers}
        headers = {k: (REDACTED if k.lower() in secret_h else v) for k, v in self.headers.items()}
        params = {k: (REDACTED if k in self.secret_params else v) for k, v in self.params.items()}
        return {"method": self.method, "url": self.url, "headers": headers, "params": params, "json": self.json_body}


@dataclass(frozen=True)
class NormalizedResult:
    """One result as every vendor's answer is read: rank is 1-based in the vendor's own order."""

    rank: int
    url: str
    title: str | None = None
    snippet: str | None = None
    content: str | None = None
    published: str | None = None


@dataclass(frozen=True)
class ParsedResponse:
    """What the adapter read from a response: results, billed units, request id, vendor error class."""

    results: tuple[NormalizedResult, ...] = ()
    billed_units: dict[str, float] | None = None
    request_id: str | None = None
    error_class: str | None = None
    error_detail: str | None = None


class MalformedResponse(ValueError):
    """The body is not what the vendor documents (truncated JSON, wrong shape)."""


def loads_json(text: str) -> Any:
    """`json.loads(text)`, faster: the text is read by pydantic-core's JSON parser
    (jiter), which reads a JSON text as json does (integers of any size as ints, NaN and Infinity,
    numbers rounded alike, the last of duplicate keys; `test_json_decoding.py` holds it to that), and
    a text it refuses (a lone surrogate, nesting deeper than it allows, anything that is not JSON)
    goes to json, so every value and every error, message included, is json's own."""
    try:
        return pydantic_core.from_json(text, cache_strings=False)
    except (ValueError, TypeError):
        return json.loads(text)


# A search answered over several pages is archived as one attempt whose body is this envelope:
# {"bench_pages": [page 1 body as sent, page 2 body, ...], "bench_stopped": why paging ended early}.
# Each page's body is kept as the exact text the vendor sent; no vendor body has this key.
PAGES_KEY = "bench_pages"
PAGES_STOPPED_KEY = "bench_stopped"
PAGES_WANTED_KEY = "bench_wanted"  # the results the query asked for: the pages' results are cut there
PAGES_FAILURES_KEY = "bench_page_failures"  # failed tries of further pages: status, error, body start


def pages_envelope(
    bodies: list[str], wanted: int, stopped: str | None = None, failures: list[dict[str, Any]] | None = None
) -> str:
    """The archived body of a search answered in `bodies` (one text per page, in order) for a
    query that wanted `wanted` results."""
    envelope: dict[str, Any] = {PAGES_KEY: bodies, PAGES_WANTED_KEY: wanted}
    if stopped:
        envelope[PAGES_STOPPED_KEY] = stopped
    if failures:
        envelope[PAGES_FAILURES_KEY] = failures
    return json.dumps(envelope)


class Adapter:
    """Base class: one subclass per vendor module. Subclasses set the class attributes and
    implement `build` and `parse_ok`; most override `error_class` to map the vendor's codes."""

    name: ClassVar[str]
    capabilities: ClassVar[frozenset[Capability]]
    version: ClassVar[str] = "1"
    # Every unit a call of each capability can be billed in: each unit `parse` may report for it and
    # `expected_units` counts. A manifest must price each one of the capabilities it pins and no
    # other, so a misspelt or missing price can never make a vendor free (`manifest.VendorSpec`).
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"request.search"}),
        "extract": frozenset({"request.extract"}),
    }

    # The modes the vendor documents for its search (depth, type, processor, ...): each mode's name
    # and the request parameters that make it, read by `build` from its options (a manifest entry's
    # `options` come on top, `manifest.VendorSpec.request_options`). The first mode is the default,
    # the one a configuration named by the provider alone (`exa`) runs; its parameters are what
    # `build` sends when no option says otherwise. A mode's price is the manifest's (`prices_usd`).
    modes: ClassVar[dict[str, dict[str, Any]]] = {"default": {}}

    @classmethod
    def default_mode(cls) -> str:
        return next(iter(cls.modes))

    def billable_units(self, capabilities: Iterable[Capability]) -> frozenset[str]:
        """The units calls of `capabilities` (those this adapter has) can be billed in."""
        units: frozenset[str] = frozenset()
        for capability in set(capabilities) & self.capabilities:
            units |= self.billing_units.get(capability, frozenset())
        return units

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        raise NotImplementedError

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        """Parse a success body (already JSON-decoded unless `json_body` is False)."""
        raise NotImplementedError

    # Subclasses whose success body is not JSON (Jina's plain text) set this to False.
    json_body: ClassVar[bool] = True

    # Results one request returns at most, for a vendor that serves more only page by page (Google
    # behind SerpApi and Serper since September 2025); None: one request answers any depth.
    page_size: ClassVar[int | None] = None

    def pages_for(self, task: VendorTask) -> int:
        """Requests needed for `task.num_results` results (each billed as one call)."""
        if self.page_size is None or task.capability != "search":
            return 1
        return max(1, math.ceil(task.num_results / self.page_size))

    def page_results(self, task: VendorTask) -> int:
        """Results to ask for in one request: all of them when one page holds them, else a full
        page on every page (so that page boundaries fall every `page_size` results whichever way
        the vendor counts its offset); the paged answer is cut to what was wanted when read."""
        if self.page_size is None or self.pages_for(task) == 1:
            return max(1, task.num_results)
        return self.page_size

    def has_next_page(self, task: VendorTask, body: Any) -> bool:
        """Whether the vendor says a page follows `body` (the page `task.page`); paging stops
        otherwise, so an exhausted result list is not paid for again."""
        return False

    def billed_units(self, task: VendorTask, body: Any, headers: dict[str, str]) -> dict[str, float]:
        """Units the call is billed in; the default is one request of the capability."""
        return {f"request.{task.capability}": 1.0}

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        """Units one successful call is expected to bill, known before anything is sent (for
        `bench estimate`). Vendors that bill per result, credit or token override it with their
        documented rule, assuming a full result page."""
        return {f"request.{task.capability}": 1.0}

    def estimate_caveat(self, options: dict[str, Any], capabilities: frozenset[str]) -> str | None:
        """Why `expected_units` may differ from the bill (a vendor billing usage unknown before the
        call) for a configuration sending `capabilities`, for `bench estimate`; None when it is the
        documented charge of a full result page."""
        return None

    def error_class(self, status: int, body: Any) -> str:
        """Map a non-success status (and body) to an error class; vendors override where codes differ."""
        if status in (401, 403):
            return "auth"
        if status == 402:
            return "quota"
        if status == 429:
            return "rate_limited"
        if status == 404:
            return "not_found"
        if 400 <= status < 500:
            return "bad_request"
        return "server"

    def is_success(self, status: int, body: Any) -> bool:
        return 200 <= status < 300

    def parse(self, task: VendorTask, status: int, headers: dict[str, str], body_text: str) -> ParsedResponse:
        """Parse any archived response. Raises MalformedResponse when a success body is not the
        vendor's shape, and nothing else: an error status is classed by the vendor's codes where
        the body has them (by the status alone where it is unreadable), and no result reaches the
        results without a URL that is a string (`readable_results`)."""
        headers = {k.lower(): v for k, v in headers.items()}
        body: Any = body_text
        if self.json_body or not (200 <= status < 300):
            try:
                body = loads_json(body_text) if body_text else None
            except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep to read
                if 200 <= status < 300 and self.json_body:
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep to read"
                    raise MalformedResponse(f"{self.name}: body is not JSON ({reason})") from exc
                body = body_text
        if not self._succeeded(status, body):
            detail = body_text[:300] if isinstance(body_text, str) else None
            return ParsedResponse(
                error_class=self._vendor_error_class(status, body),
                error_detail=detail,
                request_id=self._guarded_request_id(body),
            )
        if self.page_size is not None and isinstance(body, dict) and PAGES_KEY in body:
            return self._parse_pages(task, status, headers, body)
        try:
            parsed = self.parse_ok(task, body, headers)
            units = parsed.billed_units if parsed.billed_units is not None else self.billed_units(task, body, headers)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError) as exc:
            raise MalformedResponse(f"{self.name}: unexpected response shape ({type(exc).__name__}: {exc})") from exc
        if not all(
            isinstance(count, (int, float)) and not isinstance(count, bool) and math.isfinite(count) and count >= 0
            for count in units.values()
        ):
            raise MalformedResponse(f"{self.name}: billed units that are not a count ({units})")
        return ParsedResponse(
            results=readable_results(parsed.results),
            billed_units=units,
            request_id=parsed.request_id if isinstance(parsed.request_id, str) else None,
            error_class=parsed.error_class,
            error_detail=parsed.error_detail,
        )

    # The vendor's own readings of a body (`is_success`, `error_class`, the request id) meet bodies
    # of any shape: one that trips over a shape it did not expect falls back to the status alone.
    _SHAPE_ERRORS = (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError)

    def _succeeded(self, status: int, body: Any) -> bool:
        try:
            return self.is_success(status, body)
        except self._SHAPE_ERRORS:
            return 200 <= status < 300

    def _vendor_error_class(self, status: int, body: Any) -> str:
        try:
            found = self.error_class(status, body)
        except self._SHAPE_ERRORS:
            found = None
        return found if found in VENDOR_ERROR_CLASSES else Adapter.error_class(self, status, None)

    def _guarded_request_id(self, body: Any) -> str | None:
        try:
            found = self._request_id_safe(body)
        except self._SHAPE_ERRORS:
            return None
        return found if isinstance(found, str) else None

    def _parse_pages(self, task: VendorTask, status: int, headers: dict[str, str], envelope: dict) -> ParsedResponse:
        """Read a paged answer (see `PAGES_KEY`): results of every page in order, re-ranked and cut
        to the results the query wanted (recorded in the envelope: a rescore knows no
        `num_results`); billed units summed, each page billed as the vendor bills one call."""
        pages = envelope[PAGES_KEY]
        wanted = envelope.get(PAGES_WANTED_KEY)
        if not isinstance(pages, list) or not pages or not all(isinstance(p, str) for p in pages):
            raise MalformedResponse(f"{self.name}: paged body holds no page texts")
        results: list[NormalizedResult] = []
        units: dict[str, float] = {}
        request_id = None
        for number, text in enumerate(pages, start=1):
            page_task = VendorTask(task.capability, task.text, task.num_results, number)
            parsed = self.parse(page_task, status, headers, text)
            if parsed.error_class is not None:
                raise MalformedResponse(f"{self.name}: page {number} of a paged body is an error")
            request_id = request_id or parsed.request_id
            for unit, count in (parsed.billed_units or {}).items():
                units[unit] = units.get(unit, 0.0) + count
            results += [
                NormalizedResult(len(results) + i + 1, r.url, r.title, r.snippet, r.content, r.published)
                for i, r in enumerate(parsed.results)
            ]
        if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0:
            results = results[:wanted]
        return ParsedResponse(results=tuple(results), billed_units=units, request_id=request_id)

    def _request_id_safe(self, body: Any) -> str | None:
        if isinstance(body, dict):
            for key in ("requestId", "request_id", "id"):
                if isinstance(body.get(key), str):
                    return body[key]
        return None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def readable_results(results: tuple[NormalizedResult, ...]) -> tuple[NormalizedResult, ...]:
    """Results as scoring may read them: a result whose URL is not a string is left out (those after
    it move up a rank, as `results_from` ranks only items with a URL), and a title, snippet, content
    or date that is not text is read as absent. Results that need neither are returned as they are.
    (An extraction's result may carry the URL it was asked for, which classification reads as "":
    a string, kept.)"""
    if all(
        isinstance(r.url, str)
        and all(v is None or isinstance(v, str) for v in (r.title, r.snippet, r.content, r.published))
        for r in results
    ):
        return results
    kept = [r for r in results if isinstance(r.url, str)]
    renumber = len(kept) != len(results)
    return tuple(
        NormalizedResult(
            i if renumber else r.rank,
            r.url,
            _text_or_none(r.title),
            _text_or_none(r.snippet),
            _text_or_none(r.content),
            _text_or_none(r.published),
        )
        for i, r in enumerate(kept, start=1)
    )


def _joined(value: Any) -> Any:
    """A list of texts (Brave's extra snippets, Parallel's excerpts) as one text; other values as they are."""
    if isinstance(value, list):
        return "\n".join(s for s in value if isinstance(s, str))
    return value


def results_from(
    items: list[dict[str, Any]],
    url_key: str = "url",
    title_key: str = "title",
    snippet_key: str | None = "snippet",
    content_key: str | None = None,
    published_key: str | None = None,
) -> tuple[NormalizedResult, ...]:
    """Build normalized results from a list of dicts, skipping items with no URL."""
    out: list[NormalizedResult] = []
    for item in items:
        url = item.get(url_key)
        if not isinstance(url, str) or not url:
            continue
        snippet = _joined(item.get(snippet_key)) if snippet_key else None
        content = _joined(item.get(content_key)) if content_key else None
        title = item.get(title_key)
        published = item.get(published_key) if published_key else None
        # positional: one result per item of every archived body, and keyword arguments cost more
        out.append(NormalizedResult(len(out) + 1, url, title, snippet, content, published))
    return tuple(out)
