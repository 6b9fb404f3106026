"""Tavily: POST /search and POST /extract (https://api.tavily.com), key as `Authorization: Bearer`."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, Capability, HttpRequest, ParsedResponse, VendorTask, results_from

# Documented credit costs (docs.tavily.com/documentation/api-credits): search 1 credit (advanced
# 2); extract 1 credit per 5 successful URLs (advanced 2). Tavily charges extract credits whole,
# amortised over a key's calls (`usage.credits` is 0 until the fifth URL, then 1), so one call's
# own charge is read from `usage.credits`; the per-URL share below is only the long-run average,
# used for the estimate and for a response without `usage`.
_SEARCH_CREDITS = {"basic": 1.0, "fast": 1.0, "ultra-fast": 1.0, "advanced": 2.0}
_EXTRACT_CREDITS_PER_URL = {"basic": 1.0 / 5, "advanced": 2.0 / 5}


class TavilyAdapter(Adapter):
    name = "tavily"
    version = "2"  # 2: extract credits read as whole, amortised numbers (issue 18)
    capabilities = frozenset({"search", "extract"})
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"credit"}),
        "extract": frozenset({"credit"}),
    }

    # Tavily's search depths (docs.tavily.com/documentation/api-credits, read 2026-11-29; data/pricing/
    # tavily.md): basic, the default, 1 credit; advanced, "more relevant content snippets", 2 credits;
    # fast (beta, docs.tavily.com/changelog), "optimized for low latency", 1 credit.
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "basic": {"search_depth": "basic"},
        "advanced": {"search_depth": "advanced"},
        "fast": {"search_depth": "fast"},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        if task.capability == "search":
            body: dict[str, Any] = {
                "query": task.text,
                "search_depth": options.get("search_depth", "basic"),
                "topic": "general",
                "max_results": max(0, min(task.num_results, 20)),
                # include_usage makes Tavily report the credits it charged in usage.credits.
                "include_usage": True,
            }
            if options.get("include_raw_content"):
                body["include_raw_content"] = options["include_raw_content"]
        else:
            body = {
                "urls": [task.text],
                "extract_depth": options.get("extract_depth", "basic"),
                "format": options.get("format", "markdown"),
                "include_usage": True,
            }
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("Authorization",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        request_id = body.get("request_id")
        if task.capability == "search":
            # `content` is Tavily's query-relevant snippet; `raw_content` the page (only when asked for).
            results = results_from(
                body["results"], snippet_key="content", content_key="raw_content", published_key="published_date"
            )
        else:
            results = results_from(body["results"], snippet_key=None, content_key="raw_content")
        billed = self._credits(task, body)
        if task.capability == "extract" and not results:
            failed = body.get("failed_results") or []
            detail = str((failed[0] or {}).get("error", "")) if failed else "no result"
            return ParsedResponse(
                error_class="not_found", error_detail=detail[:300], request_id=request_id, billed_units=billed
            )
        return ParsedResponse(results=results, billed_units=billed, request_id=request_id)

    def _credits(self, task: VendorTask, body: dict[str, Any]) -> dict[str, float]:
        usage = body.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("credits"), (int, float)):
            return {"credit": float(usage["credits"])}
        # No usage block (include_usage not honoured): fall back to the documented credit table.
        if task.capability == "search":
            return {"credit": _SEARCH_CREDITS["basic"]}
        return {"credit": _EXTRACT_CREDITS_PER_URL["basic"] * len(body.get("results") or [])}

    def estimate_caveat(self, options: dict[str, Any], capabilities: frozenset[str]) -> str | None:
        if "extract" not in capabilities:  # a search's credits are whole and known before the call
            return None
        return (
            "Tavily charges extract credits whole, 1 (advanced 2) for every fifth successful URL of a "
            "key: a single call may bill 0 or a whole credit; the estimate is the per-URL average"
        )

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        advanced = options.get("search_depth", "basic") == "advanced" or options.get("extract_depth") == "advanced"
        if task.capability == "search":
            return {"credit": 2.0 if advanced else 1.0}
        depth = "advanced" if advanced else "basic"
        return {"credit": _EXTRACT_CREDITS_PER_URL[depth]}  # the amortised average of a URL

    def error_class(self, status: int, body: Any) -> str:
        # Tavily: 401 invalid key; 432 plan usage limit and 433 pay-as-you-go limit (out of credit);
        # 429 rate limit; 403 forbidden (the SDK groups 403/432/433 as ForbiddenError).
        if status in (432, 433):
            return "quota"
        return super().error_class(status, body)

    def _request_id_safe(self, body: Any) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("request_id"), str):
            return body["request_id"]
        return None


MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go ($0.008 per credit)",
    "endpoints": {"search": "https://api.tavily.com/search", "extract": "https://api.tavily.com/extract"},
    "prices_usd": {"credit": 0.008},  # Tavily reports the credits it charged in usage.credits
    "rate_limit_per_second": 16,  # production key: 1,000 RPM
    "concurrency": 4,
    "key_env": "TAVILY_API_KEY",
}
