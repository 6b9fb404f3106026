"""Classify an archived response before any scoring: evidence first, verdict second.

A 200 can still be a failure: a captcha or challenge page, an empty result list, a body that is
not the vendor's shape. Every response gets exactly one class; failures stay in the denominator.
The order of the checks (`classify_response`): a transport error (timeout, spend ceiling, other);
a challenge page at any status (`blocked`, before the vendor's own error codes, since a CDN's
403 or 503 challenge is not the vendor refusing the key); a body the adapter cannot read
(`malformed`); the vendor's own error codes (`auth`, `quota`, `rate_limited`, `rejected`,
`server`); no results (`empty`); otherwise `ok`.

`quota` is credit or quota used up (no retry helps; the account must be topped up) or the
manifest's spend ceiling reached; `rate_limited` is a 429 (or the vendor's own rate-limit code)
that lasted through every retry, or asked for a wait longer than the manifest allows: too many
requests at once, not an empty account. A rate-limit storm and exhausted credit are different
findings about a vendor, so they are counted apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bench_assets.adapters.base import Adapter, Capability, MalformedResponse, ParsedResponse, VendorTask

# The fetch engine's record of a call the manifest's spend ceiling stopped before it was sent.
SPEND_CEILING_REACHED = "spend_ceiling_reached"
# Its record of a call not sent because an earlier response of the partition was billed in a unit
# the manifest does not price (`unpriced_stop`): its spend could no longer be known. A re-run once
# the price is added sends these calls (`fetch.engine.fetch_partition`).
UNPRICED_UNIT_STOP = "unpriced_billing_unit"


def unpriced_stop(units: Iterable[str]) -> str:
    """The transport-error text archived for a call not sent for `units` (unpriced units)."""
    return f"{UNPRICED_UNIT_STOP}: {', '.join(sorted(units))}"


# Statuses worth another attempt (unless the vendor says the account is out of credit).
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

RESPONSE_CLASSES = (
    "ok",
    "empty",
    "blocked",
    "auth",
    "quota",
    "rate_limited",
    "server",
    "timeout",
    "malformed",
    "rejected",
    "unsupported",
)
ANSWERED_CLASSES = ("ok",)

# Markers of interstitial challenge pages (Cloudflare, reCAPTCHA, hCaptcha, Akamai, generic bot walls).
_CHALLENGE = re.compile(
    r"(captcha|cf-chl|challenge-platform|just a moment\.\.\.|attention required|verify you are (a )?human|"
    r"are you a robot|unusual traffic|access denied|bot detection|ddos protection)",
    re.IGNORECASE,
)

_VENDOR_CLASS = {
    "auth": "auth",
    "quota": "quota",
    "rate_limited": "rate_limited",
    "server": "server",
    "bad_request": "rejected",
    "not_found": "rejected",
}


@dataclass(frozen=True)
class Classified:
    response_class: str
    parsed: ParsedResponse | None
    detail: str | None = None


# "<html" or "<!doctype" in any letter case: exactly what finding them in the lower-cased text
# finds (no character but an ASCII capital lower-cases to one of these letters, "<" or "!"),
# without lower-casing the first 20,000 characters of every body.
_HTML_MARKUP = re.compile(r"<(?:[Hh][Tt][Mm][Ll]|![Dd][Oo][Cc][Tt][Yy][Pp][Ee])")


def looks_like_challenge(body: str | None) -> bool:
    """A challenge page: an HTML body (or other non-JSON text) carrying a known interstitial marker."""
    if not body:
        return False
    head = body[:20000]
    # the cheap test first: most bodies are JSON, and the marker search is the costly part
    if head.lstrip().startswith(("{", "[")) and _HTML_MARKUP.search(head) is None:
        return False
    return bool(_CHALLENGE.search(head))


def _is_html(body: str) -> bool:
    head = body[:2000].lower()
    return "<html" in head or "<!doctype html" in head


def is_challenge(http_status: int, headers: dict[str, str], body: str | None) -> bool:
    """A bot wall or CDN challenge instead of the vendor's answer, whatever the status.

    Cloudflare marks its challenge responses with `cf-mitigated: challenge`; otherwise the body
    must carry a challenge marker (`looks_like_challenge`) and be either an HTML page (a challenge
    served as 403, 429 or 503 is not the vendor's error code) or any non-JSON text under a
    success or 5xx status. A vendor's own plain-text 4xx ("Access denied: invalid key") keeps the
    vendor's class."""
    if any(k.lower() == "cf-mitigated" and str(v).lower() == "challenge" for k, v in headers.items()):
        return True
    if not looks_like_challenge(body):
        return False
    assert body is not None
    return 200 <= http_status < 300 or http_status >= 500 or _is_html(body)


def classify_response(
    adapter: Adapter,
    capability: Capability,
    http_status: int | None,
    headers: dict[str, str],
    body: str | None,
    transport_error: str | None,
    parsed: ParsedResponse | None = None,
) -> Classified:
    """Return the class of one final archived attempt, with the parsed response when there is one.

    `parsed`: the adapter's reading of this very response (`adapter.parse(VendorTask(capability,
    ""), http_status, headers, body)`) when the caller has it already (`fetch.spend.read_attempt`
    keeps it); the body is then not parsed again. It is used only where the body would be parsed."""
    if transport_error:
        if transport_error.startswith("timeout"):
            return Classified("timeout", None, transport_error)
        if transport_error == SPEND_CEILING_REACHED:
            return Classified("quota", None, "spend ceiling of the manifest reached; not sent")
        if transport_error.startswith(UNPRICED_UNIT_STOP):
            units = transport_error.partition(":")[2].strip()
            return Classified(
                "quota", None, f"not sent: the vendor billed in {units}, which the manifest does not price"
            )
        return Classified("server", None, transport_error)
    if http_status is None:
        raise ValueError("an archived attempt has neither an HTTP status nor a transport error")
    if is_challenge(http_status, headers, body):
        kind = "a success" if 200 <= http_status < 300 else "an error"
        return Classified("blocked", None, f"challenge page served with {kind} status ({http_status})")
    if parsed is None:
        try:
            parsed = adapter.parse(VendorTask(capability, ""), http_status, headers, body or "")
        except MalformedResponse as exc:
            return Classified("malformed", None, str(exc))
    if parsed.error_class:
        return Classified(_VENDOR_CLASS.get(parsed.error_class, "server"), parsed, parsed.error_detail)
    if not parsed.results:
        return Classified("empty", parsed)
    return Classified("ok", parsed)
