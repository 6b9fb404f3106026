"""Keenable: POST /v1/search and GET /v1/fetch (https://api.keenable.ai), key as `X-API-Key`.

The request is the one the official SDK (keenableai/keenable-sdk `python/keenable/client.py`)
sends: a JSON body `{query, mode}` with mode "pro" (its default), and `?url=` for a fetch. The
keyed endpoints are used, never the keyless `/public` ones: a benchmark run is billed to its own
account and paced by its own limit. The API takes no result count; the results are what it returns.
Fetch serves only URLs in Keenable's own index (keenable.ai/docs/api). See data/pricing/keenable.md.
"""

from __future__ import annotations

from typing import Any

from bench_assets.adapters.base import Adapter, HttpRequest, NormalizedResult, ParsedResponse, VendorTask, results_from


class KeenableAdapter(Adapter):
    name = "keenable"
    capabilities = frozenset({"search", "extract"})

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"X-API-Key": api_key, "Accept": "application/json"}
        if task.capability == "search":
            headers["Content-Type"] = "application/json"
            body = {"query": task.text, "mode": options.get("mode", "pro")}
            return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("X-API-Key",))
        return HttpRequest("GET", endpoint, headers=headers, params={"url": task.text}, secret_headers=("X-API-Key",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        if task.capability == "extract":
            content = body["content"]
            if not isinstance(content, str):
                raise TypeError("content is not a string")
            url = body.get("url") if isinstance(body.get("url"), str) else task.text
            title = body.get("title") if isinstance(body.get("title"), str) else None
            return ParsedResponse(results=(NormalizedResult(rank=1, url=url, title=title, content=content),))
        # results[]: {title, url, description, snippet, published_at, acquired_at}. `snippet` is the
        # page text; `description` the page's meta description, empty for most pages (the SDK's README).
        items = body["results"]
        if not isinstance(items, list):
            raise TypeError("results is not a list")
        snippets = [{**item, "text": item.get("snippet") or item.get("description") or None} for item in items]
        return ParsedResponse(results=results_from(snippets, snippet_key="text", published_key="published_at"))

    def error_class(self, status: int, body: Any) -> str:
        if status == 400:
            # docs.keenable.ai/authentication: 400 is a malformed API key.
            detail = (
                " ".join(str(body.get(k) or "") for k in ("message", "error", "detail"))
                if isinstance(body, dict)
                else ""
            )
            return "auth" if "key" in detail.lower() else "bad_request"
        return super().error_class(status, body)  # 401/403 auth, 402 credits, 429 rate limit (the SDK's labels)


MANIFEST_DEFAULTS = {
    "plan": "API key, paid use ($1 per 1,000 calls as independent boards report it; no price page: see data/pricing/keenable.md)",
    "endpoints": {"search": "https://api.keenable.ai/v1/search", "extract": "https://api.keenable.ai/v1/fetch"},
    # (?) Keenable publishes no price list; $1 per 1,000 searches is what independent boards paid
    # (data/pricing/keenable.md); fetch is assumed to cost the same.
    "prices_usd": {"request.search": 0.001, "request.extract": 0.001},
    "rate_limit_per_second": 10,  # docs.keenable.ai/authentication: 10 per second without a key; (?) keyed per organization
    "concurrency": 4,
    "key_env": "KEENABLE_API_KEY",
}
