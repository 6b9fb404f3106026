"""Linkup: POST /v1/search and POST /v1/fetch (https://api.linkup.so), key as `Authorization: Bearer`."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, HttpRequest, NormalizedResult, ParsedResponse, VendorTask, results_from

_QUOTA_CODES = ("INSUFFICIENT_FUNDS_CREDITS", "EXCEED_BUDGET_LIMIT")
_RATE_CODES = ("TOO_MANY_REQUESTS", "TASKS_QUEUE_LIMIT_EXCEEDED")
_NOT_FOUND_CODES = ("FETCH_TARGET_NOT_FOUND", "FETCH_ERROR", "FETCH_TARGET_UNREACHABLE")
_DEPTHS = ("flash", "fast", "standard", "deep")  # (?) flash is listed on its changelog and pricing page only


def _code(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("code") or "") if isinstance(error, dict) else ""


class LinkupAdapter(Adapter):
    name = "linkup"
    capabilities = frozenset({"search", "extract"})

    # Linkup's search depths (docs.linkup.so/pages/get-started/concepts and .../platform/pricing.md,
    # read 2026-11-29; data/pricing/linkup.md): standard, the default, $0.005 a searchResults call;
    # deep, which "continues to search iteratively", $0.05; fast, "one-shot retrieval in about a
    # second", and flash, "ranked sources and snippets in under 200 ms", $0.005 each
    # (.../changelog/flash-depth). The response does not say which depth ran, so each depth is its
    # own configuration, priced by its manifest entry.
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "standard": {"depth": "standard"},
        "deep": {"depth": "deep"},
        "fast": {"depth": "fast"},
        "flash": {"depth": "flash"},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        if task.capability == "search":
            depth = options.get("depth", "standard")
            if depth not in _DEPTHS:
                raise ValueError(f"linkup documents the depths {', '.join(_DEPTHS)}, not {depth!r}")
            body: dict[str, Any] = {
                "q": task.text,
                "depth": depth,
                "outputType": "searchResults",
                "includeImages": False,
                "maxResults": task.num_results,
            }
        else:
            # renderJs=false is the $0.001 fetch; JS rendering ($0.005) is not used for the same reason.
            body = {"url": task.text, "renderJs": False}
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("Authorization",))

    def is_success(self, status: int, body: Any) -> bool:
        # A search that finds nothing is answered 400 SEARCH_QUERY_NO_RESULT: an empty result list, not an error.
        return 200 <= status < 300 or (status == 400 and _code(body) == "SEARCH_QUERY_NO_RESULT")

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        if _code(body) == "SEARCH_QUERY_NO_RESULT":
            return ParsedResponse(results=(), billed_units={})  # (?) assumed not billed, like other 4xx
        if task.capability == "extract":
            markdown = body["markdown"]
            if not isinstance(markdown, str):
                raise TypeError("markdown is not a string")
            title = markdown.split("\n", 1)[0][2:].strip() if markdown.startswith("# ") else None
            result = NormalizedResult(rank=1, url=task.text, title=title, content=markdown)
            return ParsedResponse(results=(result,))
        # searchResults: {results:[{type:"text", name, url, content, favicon} | {type:"image", name, url}]}.
        # The title is `name`; `content` is the query-relevant text Linkup returns for the page.
        # There is no published date, cost or request id in the body.
        items = [item for item in body["results"] if item.get("type", "text") == "text"]
        return ParsedResponse(results=results_from(items, title_key="name", snippet_key="content"))

    def error_class(self, status: int, body: Any) -> str:
        code = _code(body)
        if code in _QUOTA_CODES:
            return "quota"
        if code in _RATE_CODES:
            return "rate_limited"
        if code == "IP_NOT_WHITELISTED":
            return "auth"
        if code in _NOT_FOUND_CODES or code == "SEARCH_QUERY_NO_RESULT":
            return "not_found"
        if status == 402:  # x402: this endpoint wants a payment the caller did not make
            return "quota"
        return super().error_class(status, body)


MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go (standard search $0.005, fetch $0.001 per call)",
    "endpoints": {"search": "https://api.linkup.so/v1/search", "extract": "https://api.linkup.so/v1/fetch"},
    "prices_usd": {"request.search": 0.005, "request.extract": 0.001},
    "rate_limit_per_second": 10,
    "concurrency": 4,
    "key_env": "LINKUP_API_KEY",
}
