"""You.com: GET /v1/search and POST /v1/contents (https://ydc-index.io), key in `X-API-Key`."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, Capability, HttpRequest, NormalizedResult, ParsedResponse, VendorTask


def _text(item: dict[str, Any]) -> str | None:
    """The snippet text of a web or news result: description plus snippets (or highlights)."""
    contents = item.get("contents")
    if not isinstance(contents, dict):
        contents = {}
    parts = [item.get("description"), *(item.get("snippets") or []), *(contents.get("highlights") or [])]
    text = "\n".join(p for p in parts if isinstance(p, str) and p)
    return text or None


class YoucomAdapter(Adapter):
    name = "youcom"
    capabilities = frozenset({"search", "extract"})
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"request.search"}),
        "extract": frozenset({"page.extract"}),
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"X-API-Key": api_key, "Accept": "application/json"}
        if task.capability == "search":
            params: dict[str, Any] = {"query": task.text, "count": max(1, min(task.num_results, 100))}
            for key in ("country", "freshness", "safesearch"):
                if key in options:
                    params[key] = options[key]
            return HttpRequest("GET", endpoint, headers=headers, params=params, secret_headers=("X-API-Key",))
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
        return ParsedResponse(results=tuple(results), request_id=request_id)

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        return {"request.search": 1.0} if task.capability == "search" else {"page.extract": 1.0}

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
