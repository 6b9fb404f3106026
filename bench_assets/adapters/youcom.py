"""You.com: GET /v1/search and POST /v1/contents (https://ydc-index.io), key in `X-API-Key`."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, Capability, HttpRequest, NormalizedResult, ParsedResponse, VendorTask

_EXTRACTION_SOURCES = ("blend", "cache", "fetch")


def _text(item: dict[str, Any]) -> str | None:
    """The snippet text of a web or news result: description plus snippets (or highlights)."""
    contents = item.get("contents")
    if not isinstance(contents, dict):
        contents = {}
    parts = [item.get("description"), *(item.get("snippets") or []), *(contents.get("highlights") or [])]
    text = "\n".join(p for p in parts if isinstance(p, str) and p)
    return text or None


def _extraction(options: dict[str, Any]) -> dict[str, Any] | None:
    """The `extraction` object of a POST /v1/search for a full_page configuration, else None (a GET
    search with snippets). Its shape is the SDK's strict `models.Extraction` (youdotcom 3.6.0)."""
    mode = options.get("extraction_mode")
    if mode is None:
        return None
    if mode != "full_page":
        raise ValueError(f"youcom: only extraction_mode 'full_page' is configured, not {mode!r}")
    source = options.get("extraction_source", "fetch")
    if source != "fetch":
        # blend and cache serve some pages from You.com's cache for free, and the response does not
        # say which: a page's bill could not be read from it.
        raise ValueError(
            f"youcom: extraction_source {source!r} bills only the pages crawled live, which the response "
            f"does not name; bench configures 'fetch' (documented: {', '.join(_EXTRACTION_SOURCES)})"
        )
    return {
        "extraction_mode": "full_page",
        "extraction_source": source,
        "full_page": {"extraction_formats": ["markdown"]},
    }


def _live_pages(items: list[dict[str, Any]]) -> int:
    """Results that came back with a full page (contents.markdown or contents.html)."""
    count = 0
    for item in items:
        contents = item.get("contents")
        if isinstance(contents, dict) and (contents.get("markdown") or contents.get("html")):
            count += 1
    return count


class YoucomAdapter(Adapter):
    name = "youcom"
    capabilities = frozenset({"search", "extract"})
    # A full page attached to a search result is billed like a Contents page, $1 per 1,000 pages
    # (you.com/docs/administration/billing, read 2026-11-29), so both are `page.extract`.
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"request.search", "page.extract"}),
        "extract": frozenset({"page.extract"}),
    }

    # You.com's search options with a price of their own (data/pricing/youcom.md): the default, a
    # search with snippets ($5 per 1k calls); full_page, each result's whole page crawled live with
    # the search ($1 per 1k pages on top). `fetch` always crawls live, so every page returned is
    # billed and the bill is known from the response; `blend` bills only the pages it did not serve
    # from You.com's cache, which the response does not say.
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "default": {},
        "full_page": {"extraction_mode": "full_page", "extraction_source": "fetch"},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"X-API-Key": api_key, "Accept": "application/json"}
        if task.capability == "search":
            params: dict[str, Any] = {"query": task.text, "count": max(1, min(task.num_results, 100))}
            for key in ("country", "freshness", "safesearch"):
                if key in options:
                    params[key] = options[key]
            extraction = _extraction(options)
            if extraction is None:
                return HttpRequest("GET", endpoint, headers=headers, params=params, secret_headers=("X-API-Key",))
            # `extraction` is a POST /v1/search body field only (you.com/docs changelog 2026-08-11).
            headers["Content-Type"] = "application/json"
            body = {**params, "extraction": extraction}
            return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("X-API-Key",))
        # (?) Older docs name the field `format` (a string); the youdotcom SDK (3.x) sends `formats` (a list).
        headers["Content-Type"] = "application/json"
        body = {"urls": [task.text], "formats": ["markdown"]}
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("X-API-Key",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        if task.capability == "extract":
            # A JSON array of {url, title, html, markdown, metadata}; one entry per requested URL.
            if not isinstance(body, list):
                raise TypeError("contents response is not a list")
            results: list[NormalizedResult] = []
            for item in body:
                content = item.get("markdown") or item.get("html")
                if isinstance(item.get("url"), str) and isinstance(content, str) and content:
                    results.append(
                        NormalizedResult(
                            rank=len(results) + 1, url=item["url"], title=item.get("title"), content=content
                        )
                    )
            if not results:
                return ParsedResponse(
                    error_class="not_found", error_detail="no content returned for the URL", billed_units={}
                )
            return ParsedResponse(results=tuple(results), billed_units={"page.extract": float(len(results))})
        # results.web[] in rank order, then results.news[] (present only for news-classified queries).
        sections = body.get("results") or {}  # optional in the SDK's SearchResponse: no section, no results
        items = [*(sections.get("web") or []), *(sections.get("news") or [])]
        results, seen = [], set()
        for item in items:
            url = item.get("url")
            if not isinstance(url, str) or not url or url in seen:
                continue
            seen.add(url)
            contents = item.get("contents") if isinstance(item.get("contents"), dict) else {}
            page = contents.get("markdown") or contents.get("html")  # only when livecrawled
            results.append(
                NormalizedResult(
                    rank=len(results) + 1,
                    url=url,
                    title=item.get("title"),
                    snippet=_text(item),
                    content=page if isinstance(page, str) else None,
                    published=item.get("page_age"),
                )
            )
        metadata = body.get("metadata") or {}
        # (?) The request id is `metadata.request_uuid` in older docs and `search_uuid` in the 3.x SDK.
        request_id = metadata.get("search_uuid") or metadata.get("request_uuid")
        billed = {"request.search": 1.0}
        pages = _live_pages(items)
        if pages:  # full pages asked for (extraction_source fetch: each one crawled live and billed)
            billed["page.extract"] = float(pages)
        return ParsedResponse(results=tuple(results), request_id=request_id, billed_units=billed)

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        if task.capability == "extract":
            return {"page.extract": 1.0}
        if _extraction(options) is None:
            return {"request.search": 1.0}
        # A full result page, each result's page crawled live.
        return {"request.search": 1.0, "page.extract": float(max(1, min(task.num_results, 100)))}

    def error_class(self, status: int, body: Any) -> str:
        code = str(body.get("error") or "") if isinstance(body, dict) else ""
        if status == 402 or code == "payment_required":  # free-tier limit or credits exhausted
            return "quota"
        return super().error_class(status, body)


MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go (Search $5 per 1,000 calls, Contents $1 per 1,000 pages)",
    "endpoints": {"search": "https://ydc-index.io/v1/search", "extract": "https://ydc-index.io/v1/contents"},
    "prices_usd": {"request.search": 0.005, "page.extract": 0.001},
    "rate_limit_per_second": 10,
    "concurrency": 4,
    "key_env": "YDC_API_KEY",
}
