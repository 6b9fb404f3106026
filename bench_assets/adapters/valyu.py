"""Valyu: POST /v1/search (https://api.valyu.ai), key as `x-api-key`. Search only.

Valyu bills per retrieved result at a price that depends on the source (web, open databases,
proprietary data) and states the charge of every call in `total_deduction_dollars`. The adapter
asks for web results only (`search_type: "web"`, $1.50 per 1,000 retrievals) so that the price is
one documented rate, and bills the charge Valyu states. See data/pricing/valyu.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, Capability, HttpRequest, ParsedResponse, VendorTask, results_from

_QUOTA_WORDS = ("insufficient credit", "insufficient balance", "insufficient funds")


def _message(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    return " ".join(str(body.get(k) or "") for k in ("error", "message")).lower()


class ValyuAdapter(Adapter):
    name = "valyu"
    capabilities = frozenset({"search"})
    # `usd`: Valyu's own statement of the charge; `result.search`: a web retrieval, for a body without it.
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {"search": frozenset({"usd", "result.search"})}

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"x-api-key": api_key, "Content-Type": "application/json", "Accept": "application/json"}
        body = {
            "query": task.text,
            "search_type": options.get("search_type", "web"),
            "max_num_results": max(1, min(task.num_results, 20)),  # 1-20 (docs.valyu.ai; more on request)
            # The SDK's default is 0.5: results Valyu scores lower are dropped. A ranked list is what
            # is scored here, so keep every result Valyu ranks.
            "relevance_threshold": 0.0,
            "is_tool_call": True,
        }
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("x-api-key",))

    def is_success(self, status: int, body: Any) -> bool:
        # 206 is Valyu's partial success (results dropped for a max_price): still an answer.
        return 200 <= status < 300 and not (isinstance(body, dict) and body.get("success") is False)

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        # results[]: {title, url, content, description, source, price, length, relevance_score,
        # publication_date, ...}; `content` is the page text, `description` a short summary.
        items = body["results"]
        if not isinstance(items, list):
            raise TypeError("results is not a list")
        results = results_from(
            items, snippet_key="description", content_key="content", published_key="publication_date"
        )
        charge = body.get("total_deduction_dollars")
        if isinstance(charge, (int, float)) and not isinstance(charge, bool):
            billed = {"usd": float(charge)}
        else:  # no stated charge: one web retrieval per result returned
            billed = {"result.search": float(len(items))}
        tx_id = body.get("tx_id")
        return ParsedResponse(
            results=results, billed_units=billed, request_id=tx_id if isinstance(tx_id, str) else None
        )

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        return {"result.search": float(max(1, min(task.num_results, 20)))}

    def estimate_caveat(self, options: dict[str, Any], capabilities: frozenset[str]) -> str | None:
        return "Valyu bills each result returned; a search that returns fewer results costs less"

    def error_class(self, status: int, body: Any) -> str:
        message = _message(body)
        if any(word in message for word in _QUOTA_WORDS):
            return "quota"
        if 200 <= status < 300:  # success: false on a 2xx (the SDK reads it as a failed search)
            return "bad_request"
        return super().error_class(status, body)

    def _request_id_safe(self, body: Any) -> str | None:
        return body.get("tx_id") if isinstance(body, dict) and isinstance(body.get("tx_id"), str) else None


MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go (web search $1.50 per 1,000 retrievals)",
    "endpoints": {"search": "https://api.valyu.ai/v1/search"},
    # Valyu states its charge in total_deduction_dollars (priced one dollar a dollar); a web
    # retrieval is $0.0015 (docs.valyu.ai/pricing), for the estimate and a body without it.
    "prices_usd": {"usd": 1.0, "result.search": 0.0015},
    "rate_limit_per_second": 5,  # (?) Valyu publishes no rate limit; a polite default
    "concurrency": 4,
    "key_env": "VALYU_API_KEY",
}
