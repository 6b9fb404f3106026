"""Perplexity Search API: POST /search (https://api.perplexity.ai), key as `Authorization: Bearer`. Search only."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from

# The documented search types of web search ("people" is a search of people, not of the web).
_SEARCH_TYPES = ("web", "fast")

# Words in an error body that mark an exhausted prepaid balance rather than a bad key.
_QUOTA_WORDS = ("credit", "balance", "quota", "billing", "payment")


class PerplexityAdapter(Adapter):
    name = "perplexity"
    capabilities = frozenset({"search"})

    # Perplexity's search types (docs.perplexity.ai/docs/search/fast-search, read 2026-11-29;
    # data/pricing/perplexity.md): web, the default ("rare, difficult, or ambiguous questions"),
    # $5 per 1k requests; fast, "lower-latency, lower-cost web results", $1 per 1k. The response
    # does not say which type ran, so each is its own configuration, priced by its manifest entry.
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "web": {"search_type": "web"},
        "fast": {"search_type": "fast"},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        # max_results above 20 is only accepted for people search (perplexity-py search_create_params).
        body: dict[str, Any] = {"query": task.text, "max_results": max(1, min(task.num_results, 20))}
        if options.get("search_type", "web") not in _SEARCH_TYPES:
            raise ValueError(
                f"perplexity documents the web search types {', '.join(_SEARCH_TYPES)}, not {options['search_type']!r}"
            )
        for key in ("search_type", "max_tokens_per_page", "search_context_size", "country"):
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
