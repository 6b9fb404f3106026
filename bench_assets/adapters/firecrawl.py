"""Firecrawl v2: POST /v2/search and POST /v2/scrape (https://api.firecrawl.dev), key as `Authorization: Bearer`."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from bench_assets.adapters.base import (
    Adapter,
    Capability,
    HttpRequest,
    NormalizedResult,
    ParsedResponse,
    VendorTask,
    results_from,
)


class FirecrawlAdapter(Adapter):
    name = "firecrawl"
    version = "2"  # 2: sources and formats sent as objects, the form Firecrawl's v2 OpenAPI admits (issue 18)
    capabilities = frozenset({"search", "extract"})
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"credit"}),
        "extract": frozenset({"credit"}),
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        if task.capability == "search":
            # Sources and formats as objects ({"type": ...}), the only form Firecrawl's published v2
            # OpenAPI description admits (bench_assets_tests/fixtures/vendors/firecrawl/openapi.json); its server
            # takes bare strings too, but the description is the contract we hold ourselves to.
            body: dict[str, Any] = {
                "query": task.text,
                "limit": max(1, min(task.num_results, 100)),
                "sources": [{"type": "web"}],
            }
            if options.get("scrape_results"):  # each result scraped too: +1 credit per result
                body["scrapeOptions"] = {"formats": [{"type": "markdown"}], "onlyMainContent": True}
        else:
            body = {
                "url": task.text,
                "formats": [{"type": "markdown"}],
                "onlyMainContent": bool(options.get("only_main_content", True)),
            }
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("Authorization",))

    def is_success(self, status: int, body: Any) -> bool:
        return 200 <= status < 300 and not (isinstance(body, dict) and body.get("success") is False)

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        if body.get("success") is not True:
            raise ValueError("success is not true")
        data = body["data"]
        if task.capability == "search":
            # v2 groups results by source ({"web": [...]}); with scrapeOptions the docs' own example
            # answers a flat list of scraped documents (fixtures/vendors/firecrawl/SOURCES.md).
            items = data if isinstance(data, list) else data.get("web") or []
            if not isinstance(items, list):
                raise TypeError("data.web is not a list")
            results = results_from(
                [_search_item(item) for item in items],
                snippet_key="description",
                content_key="markdown",
                published_key="_published",
            )
            credits = body.get("creditsUsed")
            if not isinstance(credits, (int, float)):
                credits = 2 * math.ceil(max(len(results), 1) / 10)  # documented: 2 credits per 10 results
            return ParsedResponse(results=results, billed_units={"credit": float(credits)}, request_id=body.get("id"))
        meta = data.get("metadata") or {}
        credits = meta.get("creditsUsed", body.get("creditsUsed"))
        billed = {"credit": float(credits) if isinstance(credits, (int, float)) else 1.0}
        request_id = meta.get("scrapeId") or body.get("id")
        status = meta.get("statusCode")
        if isinstance(status, int) and status >= 400:  # the target page answered with an error
            return ParsedResponse(
                error_class="not_found" if status in (404, 410) else "server",
                error_detail=str(meta.get("error") or status),
                billed_units=billed,
                request_id=request_id,
            )
        url = next((u for u in (meta.get("sourceURL"), meta.get("url")) if isinstance(u, str) and u), task.text)
        markdown = data["markdown"]
        results = (
            NormalizedResult(
                rank=1,
                url=url,
                title=meta.get("title"),
                snippet=meta.get("description"),
                content=markdown,
                published=meta.get("publishedTime"),
            ),
        )
        return ParsedResponse(results=results, billed_units=billed, request_id=request_id)

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        if task.capability == "search":
            return {"credit": 2.0 * max(1, -(-task.num_results // 10))}  # 2 credits per 10 results
        return {"credit": 1.0}

    def error_class(self, status: int, body: Any) -> str:
        # 402 "Payment Required: Insufficient credits"; 429 rate or concurrency limit; 408 timeout.
        if 200 <= status < 300:
            return "server"  # success: false inside a 2xx
        if status == 408:
            return "server"
        return super().error_class(status, body)


def _search_item(item: Any) -> dict[str, Any]:
    """One search result as a flat record: a scraped result is a full Document (its page text is
    `markdown`, its URL and title in `metadata`); a bare string is a result with that URL, as
    Firecrawl's own SDKs read one (firecrawl/firecrawl apps/python-sdk/firecrawl/v2/methods/search.py,
    `_transform_array`). A copy: the archived body is left as the vendor sent it."""
    if isinstance(item, str):
        return {"url": item}
    if not isinstance(item, dict):
        return {}
    meta: dict[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
    return {
        **item,
        "url": item["url"] if "url" in item else meta.get("sourceURL") or meta.get("url"),
        "title": item["title"] if "title" in item else meta.get("title"),
        "_published": meta.get("publishedTime") or item.get("date"),
    }


MANIFEST_DEFAULTS = {
    # No documented price per credit: $0.0008 is the project's assumption (the Standard plan read
    # as about $80 a month for 100,000 credits), said so in data/pricing/firecrawl.md.
    "plan": "Standard (100,000 credits per month)",
    "endpoints": {"search": "https://api.firecrawl.dev/v2/search", "extract": "https://api.firecrawl.dev/v2/scrape"},
    "prices_usd": {"credit": 0.0008},  # Firecrawl reports creditsUsed (search) / metadata.creditsUsed (scrape)
    # Standard: 250 search RPM and 500 scrape RPM, each its own limit; the account's is their sum.
    "rate_limit_per_second": 12.4,
    "capability_rate_limits": {"search": 4.1, "extract": 8.3},
    "concurrency": 8,
    "key_env": "FIRECRAWL_API_KEY",
}
