"""Classify an archived response before any scoring: evidence first, verdict second.

A 200 can still be a failure: a captcha or challenge page, an empty result list, a body that is
not the vendor's shape. Every response gets exactly one class; failures stay in the denominator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench_assets.adapters.base import Adapter, MalformedResponse, ParsedResponse, VendorTask
from bench_assets.fetch import SPEND_CEILING_REACHED

RESPONSE_CLASSES = ("ok", "empty", "blocked", "auth", "quota", "server", "timeout", "malformed", "rejected",
                    "unsupported")
ANSWERED_CLASSES = ("ok",)

# Markers of interstitial challenge pages (Cloudflare, reCAPTCHA, hCaptcha, Akamai, generic bot walls).
_CHALLENGE = re.compile(
    r"(captcha|cf-chl|challenge-platform|just a moment\.\.\.|attention required|verify you are (a )?human|"
    r"are you a robot|unusual traffic|access denied|bot detection|ddos protection)", re.IGNORECASE)

_VENDOR_CLASS = {"auth": "auth", "quota": "quota", "rate_limited": "quota", "server": "server",
                 "bad_request": "rejected", "not_found": "rejected"}


@dataclass(frozen=True)
class Classified:
    response_class: str
    parsed: ParsedResponse | None
    detail: str | None = None


def looks_like_challenge(body: str | None) -> bool:
    """A challenge page: an HTML body (or text) carrying a known interstitial marker."""
    if not body:
        return False
    head = body[:20000]
    lowered = head.lower()
    # the cheap test first: most bodies are JSON, and the marker search is the costly part
    if not ("<html" in lowered or "<!doctype" in lowered or not head.lstrip().startswith(("{", "["))):
        return False
    return bool(_CHALLENGE.search(head))


def classify_response(adapter: Adapter, capability: str, http_status: int | None, headers: dict[str, str],
                      body: str | None, transport_error: str | None) -> Classified:
    """Return the class of one final archived attempt, with the parsed response when there is one."""
    if transport_error:
        if transport_error.startswith("timeout"):
            return Classified("timeout", None, transport_error)
        if transport_error == SPEND_CEILING_REACHED:
            return Classified("quota", None, "spend ceiling of the manifest reached; not sent")
        return Classified("server", None, transport_error)
    assert http_status is not None
    if 200 <= http_status < 300 and looks_like_challenge(body):
        return Classified("blocked", None, "challenge page served with a success status")
    try:
        parsed = adapter.parse(VendorTask(capability, ""), http_status, headers, body or "")
    except MalformedResponse as exc:
        if looks_like_challenge(body):
            return Classified("blocked", None, str(exc))
        return Classified("malformed", None, str(exc))
    if parsed.error_class:
        if http_status >= 500 and looks_like_challenge(body):
            return Classified("blocked", parsed, parsed.error_detail)
        return Classified(_VENDOR_CLASS.get(parsed.error_class, "server"), parsed, parsed.error_detail)
    if not parsed.results:
        return Classified("empty", parsed)
    return Classified("ok", parsed)
