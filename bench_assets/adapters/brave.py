"""Brave Search API: GET /res/v1/web/search, key in `X-Subscription-Token`. Search only."""

from __future__ import annotations

from typing import Any

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from


class BraveAdapter(Adapter):
    name = "brave"
    version = "2"  # 2: text_decorations=false sent; 429 with the quota used up is quota, 422 VALIDATION on the key is auth (issue 18)
    capabilities = frozenset({"search"})

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"X-Subscription-Token": api_key, "Accept": "application/json"}
        params = {
            "q": task.text,
            "count": max(1, min(task.num_results, 20)),  # Brave accepts 1-20
            "extra_snippets": "true" if options.get("extra_snippets", True) else "false",
            # text_decorations defaults to true: descriptions then carry <strong> highlighting
            # markers (brave/brave-search-mcp-server README: "Include highlighting markers
            # (default: true)"). The text we score must be the page's, not Brave's markup.
            "text_decorations": "false",
        }
        return HttpRequest("GET", endpoint, headers=headers, params=params, secret_headers=("X-Subscription-Token",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        items = (body.get("web") or {}).get("results", [])
        # The description plus extra snippets are the text Brave gives an agent. Copies, so the
        # caller's body (which may be archived) is left as the vendor sent it.
        items = [
            {**item, "_text": "\n".join([item.get("description") or "", *(item.get("extra_snippets") or [])])}
            for item in items
        ]
        results = results_from(items, snippet_key="_text", published_key="page_age")
        return ParsedResponse(results=results)  # Brave bills per successful request; no cost field

    def error_class(self, status: int, body: Any) -> str:
        error = body.get("error") if isinstance(body, dict) else None
        # Brave's error fields come inside `error` ({"error": {"code", "detail", "meta", "status"},
        # "type": "ErrorResponse"}); one quoted capture of its 422 for an invalid token has them at
        # the top level (fixtures/vendors/brave/SOURCES.md): both are read.
        error = error if isinstance(error, dict) else body if isinstance(body, dict) else {}
        code = str(error.get("code") or "")
        meta: dict[str, Any] = error["meta"] if isinstance(error.get("meta"), dict) else {}
        if code in ("SUBSCRIPTION_TOKEN_INVALID", "SUBSCRIPTION_NOT_FOUND") or status in (401, 403):
            return "auth"
        if meta.get("component") == "authentication":
            return "auth"  # the token was refused, whatever the code says
        if code == "VALIDATION" and _names_the_token(meta):
            return "auth"  # no key sent: 422 VALIDATION on the x-subscription-token header
        if code in ("CREDIT_EXHAUSTED", "QUOTA_LIMITED") or status == 402:
            return "quota"
        if code == "RATE_LIMITED":
            # Brave answers both limits with 429 RATE_LIMITED and says which in meta: the
            # monthly quota used up (quota_current >= quota_limit) is out of quota, not worth
            # retrying; otherwise the per-second rate (rate_current >= rate_limit) was hit.
            # Shape: brave/brave-search-mcp-server src/BraveAPI/types.ts RateLimitErrorResponse.
            return "quota" if _quota_used_up(meta) else "rate_limited"
        # 422 is also Brave's answer to an invalid parameter (code VALIDATION): only a token code
        # above makes a 422 "auth"; without a body to tell, an unknown 422 is a bad request.
        return super().error_class(status, body)


def _quota_used_up(meta: dict[str, Any]) -> bool:
    limit, current = meta.get("quota_limit"), meta.get("quota_current")
    if isinstance(limit, bool) or isinstance(current, bool):
        return False
    if isinstance(limit, (int, float)) and isinstance(current, (int, float)):
        return limit > 0 and current >= limit
    return False


def _names_the_token(meta: dict[str, Any]) -> bool:
    errors: list[Any] = meta["errors"] if isinstance(meta.get("errors"), list) else []
    return any(
        isinstance(e, dict) and "x-subscription-token" in [str(part).lower() for part in e.get("loc") or []]
        for e in errors
    )


MANIFEST_DEFAULTS = {
    "plan": "Search ($5 per 1,000 requests)",
    "endpoints": {"search": "https://api.search.brave.com/res/v1/web/search"},
    "prices_usd": {"request.search": 0.005},
    "rate_limit_per_second": 50,
    "concurrency": 8,
    "key_env": "BRAVE_API_KEY",
}
