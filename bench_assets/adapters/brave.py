"""Brave Search API: GET /res/v1/web/search and GET /res/v1/llm/context, key in
`X-Subscription-Token`. Search only."""

from __future__ import annotations

import re
from typing import Any, ClassVar
from urllib.parse import urlsplit

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from

WEB_SEARCH_PATH = "/res/v1/web/search"
LLM_CONTEXT_PATH = "/res/v1/llm/context"
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


class BraveAdapter(Adapter):
    name = "brave"
    version = "2"  # 2: text_decorations=false sent; 429 with the quota used up is quota, 422 VALIDATION on the key is auth (issue 18)
    capabilities = frozenset({"search"})

    # Brave's two search endpoints of the Search plan, each its own configuration (data/pricing/
    # brave.md, read 2026-11-29): Web Search (titles, URLs, descriptions) and LLM Context
    # ("pre-extracted web content optimized for AI agents", brave/brave-search-skills
    # skills/llm-context/SKILL.md), both $5 per 1,000 requests. The mode is the endpoint: a
    # configuration's `endpoints.search` must be the mode's path (`manifest.VendorSpec`).
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "web": {"endpoint_path": WEB_SEARCH_PATH},
        "llm_context": {"endpoint_path": LLM_CONTEXT_PATH},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"X-Subscription-Token": api_key, "Accept": "application/json"}
        path = str(options.get("endpoint_path", WEB_SEARCH_PATH))
        if path not in (WEB_SEARCH_PATH, LLM_CONTEXT_PATH) or not urlsplit(endpoint).path.endswith(path):
            raise ValueError(f"brave: endpoint {endpoint!r} is not the mode's endpoint {path!r}")
        if path == LLM_CONTEXT_PATH:
            # count (results considered, default 20) is left to Brave; the URLs it returns are capped
            # at the results the query wants (maximum_number_of_urls, 1-50).
            context = {"q": task.text, "maximum_number_of_urls": max(1, min(task.num_results, 50))}
            return HttpRequest(
                "GET", endpoint, headers=headers, params=context, secret_headers=("X-Subscription-Token",)
            )
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
        if "grounding" in body:  # an LLM Context answer: only it has `grounding`
            return _parse_llm_context(body)
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


def _parse_llm_context(body: dict[str, Any]) -> ParsedResponse:
    """An LLM Context answer: `grounding.generic[{url, title, snippets[]}]` in Brave's order, and
    `sources{url: {title, hostname, age}}` whose `age` lists the page's dates, one of them ISO
    (brave/brave-search-skills skills/llm-context/SKILL.md, "Response Format"). The snippets are
    text extracted from the page (some JSON-serialized tables or code): the result's content.
    Local recall (`grounding.poi`, `grounding.map`) is not web ranking and is not read."""
    sources = body.get("sources") or {}
    items = []
    for item in body["grounding"].get("generic") or []:
        source = sources.get(item.get("url")) if isinstance(item.get("url"), str) else None
        ages = source.get("age") if isinstance(source, dict) else None
        dates = [a for a in ages if isinstance(a, str) and _ISO_DATE.match(a)] if isinstance(ages, list) else []
        items.append({**item, "_published": dates[0] if dates else None})
    results = results_from(items, snippet_key="snippets", content_key="snippets", published_key="_published")
    return ParsedResponse(results=results)  # billed per request like Web Search; no cost field


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
