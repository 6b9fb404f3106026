"""Exa: POST /search and POST /contents (https://api.exa.ai), key in `x-api-key`."""

from __future__ import annotations

from typing import Any, ClassVar

from bench_assets.adapters.base import Adapter, Capability, HttpRequest, ParsedResponse, VendorTask, results_from

# Exa's pricing since 2026-03-03 (exa.ai/docs/changelog/pricing-update, "Exa Pricing Update",
# dated March 3, 2026): a search is $7 per 1k requests *with* the text and highlights of up to 10
# results; each result beyond 10 adds $1 per 1k. /contents is still $1 per 1k pages per content
# type. So a search's text is never a unit of its own; a /contents page of text is.
SEARCH_RESULTS_INCLUDED = 10


def _documented_units(task: VendorTask, results: list[dict[str, Any]]) -> dict[str, float]:
    """The units Exa's pricing bills a call in, for a response that does not state its cost: a
    search (text and highlights of 10 results included) and each result beyond 10; for /contents,
    each page of text. The manifest's price table prices them (`request.search`, `result.extra`,
    `page.text`)."""
    if task.capability == "search":
        units = {"request.search": 1.0, "result.extra": float(max(0, len(results) - SEARCH_RESULTS_INCLUDED))}
    else:
        units = {"page.text": float(sum(1 for r in results if r.get("text") is not None))}
    return {unit: n for unit, n in units.items() if n}


class ExaAdapter(Adapter):
    name = "exa"
    version = "2"  # 2: billed units per Exa's 2026-03-03 pricing (text and highlights included in a search) (issue 18)
    capabilities = frozenset({"search", "extract"})
    # costDollars.total when Exa states its charge (`usd`), else the units its pricing bills.
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"usd", "request.search", "result.extra"}),
        "extract": frozenset({"usd", "page.text"}),
    }

    # Exa's search types (exa.ai/changelog, read 2026-11-29: "The search types we recommend are now
    # lite, auto, and deep"; data/pricing/exa.md): auto is the default ($7 per 1k), lite the
    # low-cost one served from Exa's cache ($4 per 1k), deep the multi-step research mode ($12 per 1k).
    modes: ClassVar[dict[str, dict[str, Any]]] = {
        "auto": {"type": "auto"},
        "lite": {"type": "lite"},
        "deep": {"type": "deep"},
    }

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"x-api-key": api_key, "Content-Type": "application/json", "Accept": "application/json"}
        if task.capability == "search":
            body = {
                "query": task.text,
                "type": options.get("type", "auto"),
                "numResults": max(1, min(task.num_results, 100)),  # the API's range is 1-100
                "contents": {"text": {"maxCharacters": int(options.get("max_characters", 4000))}},
            }
        else:
            body = {"urls": [task.text], "text": True}
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("x-api-key",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        results = results_from(
            body["results"], snippet_key="highlights", content_key="text", published_key="publishedDate"
        )
        cost = body.get("costDollars") or {}
        if isinstance(cost.get("total"), (int, float)):
            billed = {"usd": float(cost["total"])}  # Exa's own charge, in dollars
        else:  # no costDollars: the units Exa's pricing bills, priced by the manifest
            billed = _documented_units(task, body["results"])
        if task.capability == "extract":
            failed = [s for s in body.get("statuses", []) if s.get("status") == "error"]
            if failed and not results:
                tag = (failed[0].get("error") or {}).get("tag", "")
                return ParsedResponse(
                    error_class="not_found" if "NOT_FOUND" in tag else "server",
                    error_detail=tag,
                    request_id=body.get("requestId"),
                    billed_units=billed,
                )
        return ParsedResponse(results=results, billed_units=billed, request_id=body.get("requestId"))

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        # A full result page (one page for /contents), each result with the text this adapter asks for.
        pages = max(1, min(task.num_results, 100)) if task.capability == "search" else 1
        return _documented_units(task, [{"text": ""}] * pages)

    def error_class(self, status: int, body: Any) -> str:
        tag = body.get("tag", "") if isinstance(body, dict) else ""
        if status == 402 or tag in ("NO_MORE_CREDITS", "API_KEY_BUDGET_EXCEEDED"):
            return "quota"
        return super().error_class(status, body)


# What the demo manifest pins for this vendor (prices per unit this adapter reports).
MANIFEST_DEFAULTS = {
    "plan": "Pay-as-you-go (free credits)",
    "endpoints": {"search": "https://api.exa.ai/search", "extract": "https://api.exa.ai/contents"},
    # Exa reports its own charge in costDollars.total (priced one dollar a dollar); the other units
    # price a response without it, and the estimate: $7 per 1k searches with the text and
    # highlights of 10 results, $1 per 1k results beyond 10, $1 per 1k /contents pages of text
    # (exa.ai/docs/changelog/pricing-update, 2026-03-03; data/pricing/exa.md).
    "prices_usd": {"usd": 1.0, "request.search": 0.007, "result.extra": 0.001, "page.text": 0.001},
    # Per endpoint (exa.ai/docs/reference/rate-limits): /search 10 QPS, /contents 100 QPS; no
    # account-wide limit is documented, so the account's is their sum.
    "rate_limit_per_second": 110,
    "capability_rate_limits": {"search": 10, "extract": 100},
    "concurrency": 4,
    "key_env": "EXA_API_KEY",
}
