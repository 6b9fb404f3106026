"""Jina: Search GET https://s.jina.ai/?q= and Reader GET https://r.jina.ai/<url>, both with
`Accept: application/json` (the JSON envelope) and the key as `Authorization: Bearer`."""

from __future__ import annotations

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


class JinaAdapter(Adapter):
    name = "jina"
    version = "2"  # 2: the 10,000-token floor read over data[].usage; 409 BudgetExceededError is quota (issue 18)
    capabilities = frozenset({"search", "extract"})
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"token"}),
        "extract": frozenset({"token"}),
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        if task.capability == "search":
            # `count` is read by every published version of the searcher; newer ones also take `num`
            # (which wins when both are sent), so we send `count` alone. Range 0-20.
            params = {"q": task.text, "count": max(1, min(task.num_results, 20))}
            return HttpRequest("GET", endpoint, headers=headers, params=params, secret_headers=("Authorization",))
        if options.get("return_format"):
            headers["X-Return-Format"] = str(options["return_format"])
        # Reader takes the target URL as the path: https://r.jina.ai/https://example.com/page
        return HttpRequest(
            "GET", endpoint.rstrip("/") + "/" + task.text, headers=headers, secret_headers=("Authorization",)
        )

    def is_success(self, status: int, body: Any) -> bool:
        # A search that finds nothing is answered 422 AssertionFailureError "No search results
        # available for query …": an empty result list, not a refused request.
        return 200 <= status < 300 or (status == 422 and _no_search_results(body))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        data = body["data"]
        if task.capability == "search" and data is None and _no_search_results(body):
            return ParsedResponse(results=(), billed_units={"token": float(self._tokens(body, headers))})
        if task.capability == "search":
            if not isinstance(data, list):
                raise TypeError("search data is not a list")
            # Search returns each page's body in `content` and the SERP snippet in `description`.
            results = results_from(data, snippet_key="description", content_key="content", published_key="date")
        else:
            if not isinstance(data, dict):
                raise TypeError("reader data is not an object")
            url = data.get("url") or task.text
            results = (
                NormalizedResult(
                    rank=1,
                    url=url,
                    title=data.get("title"),
                    snippet=data.get("description"),
                    content=data.get("content"),
                    published=data.get("publishedTime"),
                ),
            )
        return ParsedResponse(results=results, billed_units={"token": float(self._tokens(body, headers))})

    @staticmethod
    def _tokens(body: dict[str, Any], headers: dict[str, str]) -> float:
        usage = ((body.get("meta") or {}).get("usage") or {}).get("tokens")
        if isinstance(usage, (int, float)):
            return float(usage)
        header = headers.get("x-usage-tokens")
        if header is not None:
            return float(header)
        data = body.get("data")
        items = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        return float(sum(((item or {}).get("usage") or {}).get("tokens", 0) for item in items))

    # Jina bills the tokens of the pages it returns, unknown before the call: Reader the page,
    # Search the pages of its results, at least 10,000 tokens per 10 results and at most 2,000,000
    # (jina-ai/reader src/api/searcher.ts `assignChargeAmount`, commit f289e5d, 2026-05-01). The
    # estimate figures every page at ESTIMATED_PAGE_TOKENS (a typical article), so it is an upper
    # figure for a snapshot whose pages are no longer than that, and an underestimate otherwise.
    ESTIMATED_PAGE_TOKENS = 2000.0
    SEARCH_MIN_TOKENS_PER_10 = 10000.0
    SEARCH_MAX_TOKENS = 2_000_000.0

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        if task.capability == "search":
            floor = self.SEARCH_MIN_TOKENS_PER_10 * max(1, -(-task.num_results // 10))
            return {"token": min(self.SEARCH_MAX_TOKENS, max(floor, self.ESTIMATED_PAGE_TOKENS * task.num_results))}
        return {"token": self.ESTIMATED_PAGE_TOKENS}

    def estimate_caveat(self, options: dict[str, Any], capabilities: frozenset[str]) -> str | None:
        return (
            f"Jina bills the tokens of the pages it returns: figured at {self.ESTIMATED_PAGE_TOKENS:,.0f} "
            f"tokens a page (a search at least {self.SEARCH_MIN_TOKENS_PER_10:,.0f} per 10 results), an upper "
            "figure for pages no longer than that"
        )

    def error_class(self, status: int, body: Any) -> str:
        # Jina's JSON errors carry {code, name, status, message}: `name` is the error class and
        # `status` its five-digit code, whose first three digits are the HTTP status
        # (jina-ai/reader src/services/errors.ts, commit f289e5d: InsufficientCreditsError 40201,
        # InsufficientBalanceError 40203, BudgetExceededError 40904). We read the name when there
        # is one and fall back on the HTTP status.
        name = str(body.get("name", "")) if isinstance(body, dict) else ""
        if name in QUOTA_ERRORS or status == 402:
            return "quota"
        if name in ("AuthenticationRequiredError", "AuthenticationFailedError"):
            return "auth"
        if name == "RateLimitTriggeredError":
            return "rate_limited"
        if status == 422 and name in ("AssertionFailureError", ""):
            return "not_found"  # "Failed to goto <url>": the target page could not be fetched
        return super().error_class(status, body)


# Out of money, or over the token budget a request set (X-Token-Budget): 409 BudgetExceededError
# is raised by jina-ai/reader src/api/crawler.ts when the charge would pass the budget. No retry
# can pay either, so both are quota.
QUOTA_ERRORS = ("InsufficientBalanceError", "InsufficientCreditsError", "BudgetExceededError")


def _no_search_results(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and body.get("name") == "AssertionFailureError"
        and str(body.get("message", "")).startswith("No search results")
    )


MANIFEST_DEFAULTS = {
    "plan": "Prepaid tokens, premium key (1B tokens for $50)",
    "endpoints": {"search": "https://s.jina.ai/", "extract": "https://r.jina.ai/"},
    # No documented price per token: $0.05 per million is the project's assumption (the "1B tokens
    # for $50" package), said so in data/pricing/jina.md. Jina reports the tokens it charged.
    "prices_usd": {"token": 0.00000005},
    # Premium key: Search 1,000 RPM, Reader 5,000 RPM (a free key allows 100 and 500 RPM).
    # Limits are per key and per product, so the key's is their sum.
    "rate_limit_per_second": 99,
    "capability_rate_limits": {"search": 16, "extract": 83},
    "concurrency": 4,
    "key_env": "JINA_API_KEY",
}
