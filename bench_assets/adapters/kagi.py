"""Kagi Search API: GET /api/v0/search (https://kagi.com), key as `Authorization: Bot <token>`. Search only.

Pinned to v0 on purpose. Kagi's own OpenAPI description of v1 (github.com/kagisearch/
kagi-openapi-golang api/openapi.yaml, commit aeb3920, 2026-05-11) says "The v1 API is currently
in preview to early access testers" and that v0 "is being replaced with a new version that will
be available publicly soon"; v1 is also a different contract (POST JSON `{query, workflow}`,
Bearer auth, results under `data.search[]`, string error codes) that this adapter does not speak.
The quick start that shows /api/v1/search (help.kagi.com/kagi/api/api-portal.html) documents
that preview. v0 is what the official `kagiapi` SDK calls and what help.kagi.com's response-format
page documents. Move to v1 with a new adapter version once Kagi opens it. See data/pricing/kagi.md.
"""

from __future__ import annotations

from typing import Any

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from

# Error codes in the body's `error[]` (help.kagi.com response-format): 0 internal, 1 malformed request,
# 2 unauthorized, 100 no billing information, 101 insufficient credit, 200 summarize failed.
_CODE_CLASS = {0: "server", 1: "bad_request", 2: "auth", 100: "quota", 101: "quota", 200: "server"}


def _error_codes(body: Any) -> list[int]:
    errors = body.get("error") if isinstance(body, dict) else None
    if not isinstance(errors, list):
        return []
    return [e["code"] for e in errors if isinstance(e, dict) and isinstance(e.get("code"), int)]


class KagiAdapter(Adapter):
    name = "kagi"
    capabilities = frozenset({"search"})

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"Authorization": f"Bot {api_key}", "Accept": "application/json"}
        params = {"q": task.text, "limit": max(1, task.num_results)}
        return HttpRequest("GET", endpoint, headers=headers, params=params, secret_headers=("Authorization",))

    def is_success(self, status: int, body: Any) -> bool:
        # The envelope can carry `error[]` with no data; treat that as a failure whatever the status.
        if not 200 <= status < 300:
            return False
        return not (_error_codes(body) and not (isinstance(body, dict) and body.get("data")))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        # data[]: t=0 search results {rank, url, title, snippet, published, thumbnail}; t=1 related searches.
        items = [item for item in body["data"] if item.get("t") == 0]
        results = results_from(items, snippet_key="snippet", published_key="published")
        # meta.api_balance is the balance left after the call, not its price: billing stays per request.
        return ParsedResponse(results=results, request_id=(body.get("meta") or {}).get("id"))

    def error_class(self, status: int, body: Any) -> str:
        if status == 429:  # (?) no documented rate limit or body code for it: the status says it all
            return "rate_limited"
        for code in _error_codes(body):
            if code in _CODE_CLASS:
                return _CODE_CLASS[code]
        return super().error_class(status, body)

    def _request_id_safe(self, body: Any) -> str | None:
        meta = body.get("meta") if isinstance(body, dict) else None
        return meta.get("id") if isinstance(meta, dict) and isinstance(meta.get("id"), str) else None


MANIFEST_DEFAULTS = {
    "plan": "Search API, funded API balance ($12 per 1,000 searches)",
    "endpoints": {"search": "https://kagi.com/api/v0/search"},  # v0, not the v1 preview: see the docstring
    "prices_usd": {"request.search": 0.012},
    "rate_limit_per_second": 5,  # (?) Kagi documents no rate limit; a polite default
    "concurrency": 2,
    "key_env": "KAGI_API_KEY",
}
