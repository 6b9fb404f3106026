"""Exa: POST /search and POST /contents (https://api.exa.ai), key in `x-api-key`."""

from __future__ import annotations

from typing import Any

from bench_assets.adapters.base import Adapter, HttpRequest, ParsedResponse, VendorTask, results_from


def _documented_usd(task: VendorTask, results: list[dict[str, Any]]) -> float:
    """Exa's published prices: a search is $7 per 1k (10 results included, +$1 per 1k beyond),
    each page of text $1 per 1k; /contents is $1 per 1k pages."""
    with_text = sum(1 for r in results if r.get("text") is not None)
    if task.capability == "search":
        return round(0.007 + 0.001 * max(0, len(results) - 10) + 0.001 * with_text, 6)
    return round(0.001 * with_text, 6)


class ExaAdapter(Adapter):
    name = "exa"
    capabilities = frozenset({"search", "extract"})

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"x-api-key": api_key, "Content-Type": "application/json", "Accept": "application/json"}
        if task.capability == "search":
            body = {"query": task.text, "type": options.get("type", "auto"),
                    "numResults": max(1, min(task.num_results, 100)),  # the API's range is 1-100
                    "contents": {"text": {"maxCharacters": int(options.get("max_characters", 4000))}}}
        else:
            body = {"urls": [task.text], "text": True}
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("x-api-key",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        results = results_from(body["results"], snippet_key="highlights", content_key="text",
                               published_key="publishedDate")
        cost = body.get("costDollars") or {}
        if isinstance(cost.get("total"), (int, float)):
            billed = {"usd": float(cost["total"])}
        else:  # no costDollars: price the call from the documented table, in the same unit
            billed = {"usd": _documented_usd(task, body["results"])}
        if task.capability == "extract":
            failed = [s for s in body.get("statuses", []) if s.get("status") == "error"]
            if failed and not results:
                tag = (failed[0].get("error") or {}).get("tag", "")
                return ParsedResponse(error_class="not_found" if "NOT_FOUND" in tag else "server",
                                      error_detail=tag, request_id=body.get("requestId"), billed_units=billed)
        return ParsedResponse(results=results, billed_units=billed, request_id=body.get("requestId"))

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        n = min(task.num_results, 100)
        if task.capability == "search":
            return {"usd": round(0.007 + 0.001 * max(0, n - 10) + 0.001 * n, 6)}
        return {"usd": 0.001}

    def error_class(self, status: int, body: Any) -> str:
        tag = body.get("tag", "") if isinstance(body, dict) else ""
        if status == 402 or tag in ("NO_MORE_CREDITS", "API_KEY_BUDGET_EXCEEDED"):
            return "quota"
        return super().error_class(status, body)


# What the demo manifest pins for this vendor (prices per unit this adapter reports).
MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go (free credits)",
    "endpoints": {"search": "https://api.exa.ai/search", "extract": "https://api.exa.ai/contents"},
    "prices_usd": {"usd": 1.0},  # Exa reports its own charge in costDollars.total
    "rate_limit_per_second": 10,
    "concurrency": 4,
    "key_env": "EXA_API_KEY",
}
