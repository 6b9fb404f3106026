"""SerpApi: GET https://serpapi.com/search?engine=google, key in the `api_key` query parameter. Search only.

At most 10 results a request. Google ignores `num` above 10 since September 2025, and SerpApi's
maintainers confirm that more results come only from further pages (`start=10`, `start=20`, ...),
each billed as one search: github.com/serpapi/public-roadmap/issues/3032 (2025-09-11),
github.com/serpapi/google-search-results-python/issues/82 (2025-11-07, maintainer's answer), and
SerpApi's pagination page (serpapi.com/pagination: `serpapi_pagination.next` is omitted when no
page follows). See data/pricing/serpapi.md.
"""

from __future__ import annotations

from typing import Any

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from

# SerpApi answers both "out of searches" and "hourly throughput exceeded" with 429; only the
# message tells them apart.
_QUOTA_WORDS = ("run out of searches", "out of searches", "no searches left", "plan searches", "upgrade your plan")


class SerpApiAdapter(Adapter):
    name = "serpapi"
    version = "2"  # 2: at most 10 results a request, further pages by start= billed as searches (issue 18)
    capabilities = frozenset({"search"})
    page_size = 10

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        params: dict[str, Any] = {"engine": "google", "q": task.text, "output": "json", "api_key": api_key}
        # SerpApi's published parameter list for the google engine (bench_assets_tests/fixtures/
        # vendors/serpapi/google-engine.json) has no `num` any more: a page is Google's 10. `num` is sent only to
        # ask fewer than 10, the legacy parameter (?) Google still applies below its page size; SerpApi's
        # tracker reports sporadic empty answers with num below 10 (serpapi/public-roadmap#1083, #210),
        # so a manifest should keep results_per_query at 10 or above for SerpApi.
        if self.page_results(task) < self.page_size:
            params["num"] = self.page_results(task)
        if task.page > 1:
            params["start"] = (task.page - 1) * self.page_size
        for key in ("location", "gl", "hl", "google_domain", "no_cache"):
            if options.get(key) is not None:
                params[key] = options[key]
        return HttpRequest("GET", endpoint, params=params, secret_params=("api_key",))

    def is_success(self, status: int, body: Any) -> bool:
        # A search that failed upstream comes back with search_metadata.status "Error".
        metadata = body.get("search_metadata") if isinstance(body, dict) else None
        if isinstance(metadata, dict) and metadata.get("status") == "Error":
            return False
        return 200 <= status < 300

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        # No organic_results with HTTP 200 and status Success (plus an `error` message) means the
        # query had no results: an empty list, not an error.
        items = body.get("organic_results") or []
        if not isinstance(items, list):
            raise TypeError("organic_results is not a list")
        metadata = body["search_metadata"]
        if not isinstance(metadata, dict):
            raise TypeError(f"search_metadata is not an object ({type(metadata).__name__})")
        if not all(isinstance(item, dict) for item in items):
            raise TypeError("an organic result is not an object")
        results = results_from(items, url_key="link", snippet_key="snippet", published_key="date")
        # Billed: one search per call (the default request.search unit); SerpApi has no cost field.
        return ParsedResponse(results=results, request_id=metadata.get("id"))

    def has_next_page(self, task: VendorTask, body: Any) -> bool:
        pagination = body.get("serpapi_pagination") if isinstance(body, dict) else None
        return isinstance(pagination, dict) and bool(pagination.get("next"))

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        return {"request.search": float(self.pages_for(task))}  # every page is a search

    def error_class(self, status: int, body: Any) -> str:
        message = str(body.get("error", "")) if isinstance(body, dict) else str(body or "")
        if 200 <= status < 300:
            return "server"  # search_metadata.status == "Error"
        if status == 429:
            return "quota" if any(w in message.lower() for w in _QUOTA_WORDS) else "rate_limited"
        if status == 410:
            return "not_found"  # an archived search that expired
        return super().error_class(status, body)

    def _request_id_safe(self, body: Any) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("search_metadata"), dict):
            rid = body["search_metadata"].get("id")
            return rid if isinstance(rid, str) else None
        return None


MANIFEST_DEFAULTS = {
    "plan": "Developer ($75 per month, 5,000 searches)",
    "endpoints": {"search": "https://serpapi.com/search"},
    "prices_usd": {"request.search": 0.015},
    # vendors.md gives no number for the hourly throughput cap (?); SerpApi's plan table shows
    # 1,000 searches per hour for Developer, about 0.28 per second.
    "rate_limit_per_second": 0.25,
    "concurrency": 4,
    "key_env": "SERPAPI_API_KEY",
}
