"""Serper.dev: POST https://google.serper.dev/search and POST https://scrape.serper.dev, key in `X-API-KEY`.

At most 10 results a request: Google ignores `num` above 10 since September 2025 (see
serpapi.py for the sources), so deeper result lists are asked page by page with Serper's `page`
field (1-based, echoed in `searchParameters.page`), each page billed as its own query (`credits`
in each body). See data/pricing/serper.md.
"""

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


class SerperAdapter(Adapter):
    name = "serper"
    version = "2"  # 2: at most 10 results a request, further pages by page= billed as searches (issue 18)
    capabilities = frozenset({"search", "extract"})
    billing_units: ClassVar[dict[Capability, frozenset[str]]] = {
        "search": frozenset({"credit"}),
        "extract": frozenset({"credit"}),
    }
    page_size = 10

    def build(self, task: VendorTask, endpoint: str, api_key: str, options: dict[str, Any]) -> HttpRequest:
        headers = {"X-API-KEY": api_key, "Content-Type": "application/json"}
        if task.capability == "search":
            body: dict[str, Any] = {"q": task.text, "num": self.page_results(task)}
            if task.page > 1:
                body["page"] = task.page
            for key in ("gl", "hl", "location", "tbs"):
                if options.get(key):
                    body[key] = options[key]
        else:
            body = {"url": task.text, "includeMarkdown": bool(options.get("include_markdown", True))}
        return HttpRequest("POST", endpoint, headers=headers, json_body=body, secret_headers=("X-API-KEY",))

    def parse_ok(self, task: VendorTask, body: Any, headers: dict[str, str]) -> ParsedResponse:
        if task.capability == "search":
            # Serper returns Google's snippet only; `date` is Google's display date when it shows one.
            if "organic" not in body and "searchParameters" not in body:
                raise KeyError("organic")
            # A query with no results may come back without an `organic` list: that is an empty answer.
            results = results_from(
                body.get("organic") or [], url_key="link", snippet_key="snippet", published_key="date"
            )
        else:
            text = body.get("markdown") or body["text"]
            if not isinstance(text, str):
                raise ValueError("scrape body has no text")
            meta = body.get("metadata") or {}
            # The scrape body does not echo the URL; the page's og:url stands in when the task's is unknown.
            url = task.text or meta.get("og:url") or ""
            results = (NormalizedResult(rank=1, url=url, title=meta.get("title"), content=text),) if text else ()
        return ParsedResponse(results=results, billed_units=self._credits(task, body))

    def _credits(self, task: VendorTask, body: dict[str, Any]) -> dict[str, float]:
        credits = body.get("credits")
        if isinstance(credits, (int, float)) and not isinstance(credits, bool):
            return {"credit": float(credits)}
        # No credits field: documented default of one credit per search call (up to 10 results).
        return {"credit": 1.0 if task.capability == "search" else 2.0}

    def has_next_page(self, task: VendorTask, body: Any) -> bool:
        # Serper publishes no "next page" field: a short page means Google had no more.
        organic = body.get("organic") if isinstance(body, dict) else None
        return isinstance(organic, list) and len(organic) >= self.page_results(task)

    def expected_units(self, task: VendorTask, options: dict[str, Any]) -> dict[str, float]:
        if task.capability == "search":
            return {"credit": float(self.pages_for(task))}  # one credit a page of up to 10
        return {"credit": 2.0}

    def error_class(self, status: int, body: Any) -> str:
        message = str(body.get("message", "")) if isinstance(body, dict) else str(body or "")
        # Out of credit is HTTP 400 {"message": "Not enough credits", "statusCode": 400} (observed by
        # several clients; one catalogue says 429 (?)): read the message, not only the status.
        if "credit" in message.lower():
            return "quota"
        return super().error_class(status, body)


MANIFEST_DEFAULTS = {
    "plan": "Starter prepaid credits ($50 for 50,000 credits)",
    "endpoints": {"search": "https://google.serper.dev/search", "extract": "https://scrape.serper.dev"},
    "prices_usd": {"credit": 0.001},  # Serper reports the credits deducted in `credits`
    "rate_limit_per_second": 50,  # Starter QPS cap
    "concurrency": 8,
    "key_env": "SERPER_API_KEY",
}
