"""Perplexity Search API: POST /search (https://api.perplexity.ai), key as `Authorization: Bearer`. Search only."""

from __future__ import annotations

from typing import Any

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from

# Words in an error body that mark an exhausted prepaid balance rather than a bad key.
_QUOTA_WORDS = ("credit", "balance", "quota", "billing", "payment")


class PerplexityAdapter(Adapter):
    name = "perplexity"
    capabilities = frozenset({"search"})

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        # max_results above 20 is only accepted for people search (perplexity-py search_create_params).
        body: dict[str, Any] = {"query": task.text, "max_results": max(1, min(task.num_results, 20))}
        for key in ("max_tokens_per_page", "search_context_size", "country"):
            if key in options:
                body[key] = options[key]
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("Authorization",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        # {id, results:[{title, url, snippet, date?, last_updated?}], server_time?}; no cost field.
        results = results_from(body["results"], snippet_key="snippet", published_key="date")
        return ParsedResponse(results=results, request_id=body.get("id"))

    def error_class(self, status: int, body: Any) -> str:
        error = body.get("error") if isinstance(body, dict) else None
        text = ""
        if isinstance(error, dict):
            text = f"{error.get('type', '')} {error.get('code', '')} {error.get('message', '')}".lower()
        elif isinstance(error, str):
            text = error.lower()
        # (?) An exhausted prepaid balance reportedly comes back as 401, not 402 (vendors.md §8):
        # a 401/402 whose body speaks of credit or quota is "quota"; any other 401 is "auth".
        if status in (401, 402, 403) and any(word in text for word in _QUOTA_WORDS):
            return "quota"
        return super().error_class(status, body)


MANIFEST_DEFAULTS = {
    "plan": "Search API, prepaid credits ($5 per 1,000 requests)",
    "endpoints": {"search": "https://api.perplexity.ai/search"},
    "prices_usd": {"request.search": 0.005},
    "rate_limit_per_second": 50,
    "concurrency": 8,
    "key_env": "PERPLEXITY_API_KEY",
}
