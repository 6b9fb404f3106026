"""Parallel: POST /v1/search and POST /v1/extract (https://api.parallel.ai), key in `x-api-key`."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, Capability, HttpRequest, ParsedResponse, VendorTask, results_from

_QUOTA_WORDS = ("credit", "balance", "billing", "payment")
# The Search API's modes with a price on Parallel's own pricing page ($5 per 1,000 requests, either
# mode; data/pricing/parallel.md). The SDK also lists turbo and fast, whose price Parallel's own
# pricing page does not state (turbo's $1 per 1,000 is a third-party transcription of its
# changelog): a request for either is refused rather than billed at a guessed price.
_PRICED_MODES = ("advanced", "basic")


def _units_from_usage(usage: Any) -> dict[str, float] | None:
    """Billed units from Parallel's `usage[{name, count}]` SKU list.

    sku_search counts search requests. An extracted URL shows up once per part asked for
    (sku_extract_excerpts, sku_extract_full_content) but is priced once per URL, so the URL
    count is the largest sku_extract_* count. Unknown SKUs are passed through under their own
    name so that a price table without them shows up as unpriced instead of silently free.
    """
    if not isinstance(usage, list) or not usage:
        return None
    units: dict[str, float] = {}
    extract_urls = 0.0
    for item in usage:
        name, count = item.get("name"), item.get("count")
        if not isinstance(name, str) or not isinstance(count, (int, float)):
            continue
        if name == "sku_search":
            units["request.search"] = units.get("request.search", 0.0) + count
        elif name == "sku_search_additional_results":  # (?) SKU name for results past the 10 included
            units["result.search_extra"] = units.get("result.search_extra", 0.0) + count
        elif name.startswith("sku_extract"):
            extract_urls = max(extract_urls, float(count))
        else:
            units[name] = units.get(name, 0.0) + count
    if extract_urls:
        units["request.extract"] = extract_urls
    return units


class ParallelAdapter(Adapter):
    name = "parallel"
    capabilities = frozenset({"search", "extract"})
    # A SKU not named here is reported under its own name (`_units_from_usage`): a unit no
    # manifest prices, which stops the fetch rather than billing it as nothing.
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"request.search", "result.search_extra"}),
        "extract": frozenset({"request.extract"}),
    }

    # The Search API's `mode` presets (docs.parallel.ai/search/modes, parallel-web/parallel-sdk-python
    # 1.3.0 `client_search_params.py`, read 2026-11-29; data/pricing/parallel.md): advanced, the
    # default, "higher quality with more advanced retrieval and compression"; basic, "lower latency",
    # best "with 2-3 high-quality search_queries". Both $5 per 1,000 requests. The response does not
    # say which mode ran, so each is its own configuration.
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "advanced": {"mode": "advanced"},
        "basic": {"mode": "basic"},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"x-api-key": api_key, "Content-Type": "application/json", "Accept": "application/json"}
        if task.capability == "search":
            # v1 wants the knobs under advanced_settings: a top-level max_results is a 422.
            body: dict[str, Any] = {
                "search_queries": [task.text],
                "advanced_settings": {"max_results": task.num_results},
            }
            if "objective" in options:
                body["objective"] = options["objective"]
            if "mode" in options:
                if options["mode"] not in _PRICED_MODES:
                    raise ValueError(
                        f"parallel: mode {options['mode']!r} has no price on Parallel's pricing page "
                        f"(priced: {', '.join(_PRICED_MODES)})"
                    )
                body["mode"] = options["mode"]
        else:
            body = {"urls": [task.text], "advanced_settings": {"full_content": True}}
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("x-api-key",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        billed = _units_from_usage(body.get("usage"))
        if task.capability == "search":
            # results[{url, title, publish_date (YYYY-MM-DD), excerpts[] (markdown)}], best first.
            results = results_from(body["results"], snippet_key="excerpts", published_key="publish_date")
            return ParsedResponse(results=results, billed_units=billed, request_id=body.get("search_id"))
        results = results_from(
            body["results"], snippet_key="excerpts", content_key="full_content", published_key="publish_date"
        )
        request_id = body.get("extract_id")
        errors = body.get("errors") or []
        if not results and errors:
            first = errors[0]
            status = first.get("http_status_code")
            kind = str(first.get("error_type") or "")
            error = "not_found" if status in (404, 410) or "not_found" in kind else "server"
            return ParsedResponse(
                error_class=error,
                error_detail=f"{kind} {status}".strip(),
                request_id=request_id,
                billed_units=billed or {},
            )
        return ParsedResponse(results=results, billed_units=billed, request_id=request_id)

    def billed_units(self, task: VendorTask, body: Any, headers: dict[str, str]) -> dict[str, float]:
        # No usage list in the body: one search request, or one extracted URL per result.
        if task.capability == "extract" and isinstance(body, dict):
            return {"request.extract": float(len(body.get("results") or []))}
        return super().billed_units(task, body, headers)

    def error_class(self, status: int, body: Any) -> str:
        error = body.get("error") if isinstance(body, dict) else None
        message = str(error.get("message") or "").lower() if isinstance(error, dict) else ""
        # (?) The status for an exhausted balance is not documented: 402, or a body that says so.
        if status == 402 or (status in (401, 403) and any(w in message for w in _QUOTA_WORDS)):
            return "quota"
        return super().error_class(status, body)

    def _request_id_safe(self, body: Any) -> str | None:
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("ref_id"), str):
            return error["ref_id"]
        return super()._request_id_safe(body)


MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go (Search $5 per 1,000 requests, Extract $1 per 1,000 URLs)",
    "endpoints": {"search": "https://api.parallel.ai/v1/search", "extract": "https://api.parallel.ai/v1/extract"},
    "prices_usd": {"request.search": 0.005, "result.search_extra": 0.001, "request.extract": 0.001},
    # 600 requests per minute for Search and 600 for Extract, each its own limit.
    "rate_limit_per_second": 20,
    "capability_rate_limits": {"search": 10, "extract": 10},
    "concurrency": 4,
    "key_env": "PARALLEL_API_KEY",
}
