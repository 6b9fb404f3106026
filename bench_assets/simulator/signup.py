"""The simulated vendors' sign-up APIs: OTP e-mail, and the OAuth 2.0 device authorization grant.

Each vendor's sign-up API is mounted at `/h/<auth host>/...` like every other real host
(`https://auth.exa.ai/oauth/token` is `/h/auth.exa.ai/oauth/token`):

    POST /oauth/device/code   RFC 8628 §3.1: form client_id, scope -> device_code, user_code,
                              verification_uri(_complete), expires_in, interval
    GET  /device              the verification page a human would open (?user_code=...)
    POST /oauth/token         RFC 8628 §3.4: grant_type=urn:ietf:params:oauth:grant-type:device_code;
                              400 authorization_pending / slow_down / access_denied / expired_token
    POST /signup              JSON {email}: e-mails a one-time code over SMTP
    POST /signup/verify       JSON {email, code} -> an access token
    POST /api-keys            Bearer access token -> a new API key, accepted by the vendor's search API

Test hooks: `POST /_sim/signup/mailboxes {domain, host, port}` tells the simulator where mail
for a domain is delivered (its MX record); `GET /_sim/signup/plan` says which flow to try per
vendor (the simulated world's onboarding docs; behaviours are not disclosed);
`POST /_sim/signup/offers {vendor, ...}` replaces one vendor's offer and returns the old one.
Which vendor offers what, and how it behaves, is `signup_config`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import secrets
import smtplib
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import parseaddr
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from bench_assets.simulator.signup_config import (
    AUTH_HOSTS,
    BEHAVIOURS,
    DEFAULT_TIME_SCALE,
    DEMO_OFFERS,
    KEYLESS_ROUTES,
    KeylessRoute,
    SignupOffer,
)

DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # RFC 8628 §6.1: no vowels, no look-alikes
POLL_SLACK_SECONDS = 0.005  # clock granularity allowed when checking the polling interval


@dataclass
class DeviceGrant:
    vendor: str
    client_id: str
    device_code: str
    user_code: str
    expires_at: float
    interval: float  # real seconds
    last_poll: float
    polls: int = 0
    slow_down_sent: bool = False
    used: bool = False


@dataclass
class PendingCode:
    vendor: str
    email: str
    code: str
    expires_at: float
    attempts: int = 0


def _oauth_error(error: str, description: str, status: int = 400, **extra: Any) -> Response:
    # RFC 6749 §5.2 error response; caching forbidden like every token response (§5.1).
    return JSONResponse(
        {"error": error, "error_description": description, **extra},
        status_code=status,
        headers={"Cache-Control": "no-store"},
    )


def _not_found(what: str) -> Response:
    return JSONResponse({"error": "not_found", "message": f"{what} is not available"}, status_code=404)


class SignupService:
    """The state of every simulated sign-up: pending device grants and codes, tokens, issued keys."""

    def __init__(
        self,
        offers: dict[str, SignupOffer] | None = None,
        keyless: dict[str, KeylessRoute] | None = None,
        time_scale: float = DEFAULT_TIME_SCALE,
    ):
        self.offers = dict(DEMO_OFFERS if offers is None else offers)
        self.keyless = dict(KEYLESS_ROUTES if keyless is None else keyless)
        self.time_scale = time_scale
        self._lock = threading.Lock()
        self.mailboxes: dict[str, tuple[str, int]] = {}
        self.grants: dict[str, DeviceGrant] = {}
        self.codes: dict[tuple[str, str], PendingCode] = {}
        self.tokens: dict[str, str] = {}  # access token -> vendor
        self.keys: dict[str, str] = {}  # issued API key -> vendor
        self.deliveries: list[dict[str, Any]] = []  # what was mailed where (no codes)

    @classmethod
    def from_env(cls) -> SignupService:
        return cls(time_scale=float(os.environ.get("BENCH_SIM_SIGNUP_TIME_SCALE", DEFAULT_TIME_SCALE)))

    # ------------------------------------------------------------------ used by the API auth check

    def issued_keys(self, vendor: str) -> set[str]:
        with self._lock:
            return {k for k, v in self.keys.items() if v == vendor}

    def keyless_request(self, vendor: str, path: str, headers: dict[str, str]) -> bool:
        """A call the vendor documents as working with no key (headers lower-cased)."""
        route = self.keyless.get(vendor)
        return (
            route is not None
            and path in route.paths
            and headers.get(route.header) == route.value
            and not headers.get("authorization")
        )

    # ------------------------------------------------------------------ helpers

    def _seconds(self, vendor_seconds: float) -> float:
        return round(vendor_seconds * self.time_scale, 4)

    def _offer(self, vendor: str, method: str) -> SignupOffer | None:
        offer = self.offers.get(vendor)
        if offer is None or offer.method != method or offer.behaviour == "not_offered":
            return None
        return offer

    def _new_key(self, vendor: str, offer: SignupOffer) -> str:
        key = f"{offer.key_prefix}{secrets.token_hex(20)}"
        with self._lock:
            self.keys[key] = vendor
        return key

    def _new_token(self, vendor: str) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self.tokens[token] = vendor
        return token

    # ------------------------------------------------------------------ device authorization grant

    async def device_code(self, vendor: str, host: str, request: Request) -> Response:
        offer = self._offer(vendor, "device_code")
        if offer is None:
            return _not_found("device authorization")
        form = _form(await request.body())
        if form.get("client_id") != offer.client_id:
            return _oauth_error("invalid_client", "unknown client_id", status=401)
        device_code = secrets.token_urlsafe(32)
        user_code = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
        user_code = f"{user_code[:4]}-{user_code[4:]}"
        now = time.monotonic()
        grant = DeviceGrant(
            vendor,
            offer.client_id,
            device_code,
            user_code,
            expires_at=now + self._seconds(offer.expires_in_seconds),
            interval=self._seconds(offer.interval_seconds),
            last_poll=now,
        )
        with self._lock:
            self.grants[device_code] = grant
        return JSONResponse(
            {
                "device_code": device_code,
                "user_code": user_code,
                "verification_uri": f"https://{host}/device",
                "verification_uri_complete": f"https://{host}/device?user_code={user_code}",
                "expires_in": self._seconds(offer.expires_in_seconds),
                "interval": grant.interval,
            },
            headers={"Cache-Control": "no-store"},
        )

    async def verification_page(self, vendor: str, host: str, request: Request) -> Response:
        offer = self._offer(vendor, "device_code")
        user_code = request.query_params.get("user_code", "")
        with self._lock:
            grant = next((g for g in self.grants.values() if g.vendor == vendor and g.user_code == user_code), None)
        if offer is None or grant is None:
            return HTMLResponse("<h1>Unknown or expired code</h1>", status_code=404)
        if offer.behaviour == "needs_captcha":
            body = (
                '<h1>Confirm you are human</h1><form method="post" action="/device/approve">'
                f'<div class="h-captcha" data-sitekey="{vendor}-sitekey"></div>'
                '<button type="submit">Approve</button></form>'
            )
        elif offer.behaviour == "needs_login":
            # What a CLI's browser login opens: a human signs in to the dashboard to approve the code.
            body = (
                f"<h1>Sign in to {vendor} to approve {grant.user_code}</h1>"
                '<form method="post" action="/login"><input type="email" name="email" autocomplete="username">'
                '<input type="password" name="password" autocomplete="current-password">'
                '<button type="submit">Sign in</button></form>'
            )
        else:
            body = (
                f"<h1>Sign-in request from {grant.client_id}</h1>"
                "<p>Waiting for approval. Requests from agents are reviewed automatically.</p>"
            )
        return HTMLResponse(f"<!doctype html><html><body>{body}</body></html>")

    async def token(self, vendor: str, request: Request) -> Response:
        offer = self.offers.get(vendor)
        form = _form(await request.body())
        if offer is None or offer.method != "device_code" or offer.behaviour == "not_offered":
            return _not_found("token endpoint")
        if form.get("grant_type") != DEVICE_GRANT_TYPE:
            return _oauth_error("unsupported_grant_type", f"grant_type must be {DEVICE_GRANT_TYPE}")
        now = time.monotonic()
        with self._lock:
            grant = self.grants.get(form.get("device_code", ""))
            if grant is None or grant.vendor != vendor or grant.used:
                return _oauth_error("invalid_grant", "unknown or already used device_code")
            if form.get("client_id") != grant.client_id:
                return _oauth_error("invalid_client", "client_id does not match the device_code", status=401)
            if now >= grant.expires_at:
                return _oauth_error("expired_token", "the device_code has expired; start again")
            too_soon = now - grant.last_poll < grant.interval - POLL_SLACK_SECONDS
            grant.last_poll = now
            increment = self._seconds(offer.slow_down_increment_seconds)
            if too_soon or (offer.behaviour == "slow_down" and not grant.slow_down_sent):
                # RFC 8628 §3.5: the interval grows for this and every later request; like GitHub's
                # device flow, the response carries the new interval.
                grant.slow_down_sent = True
                grant.interval = round(grant.interval + increment, 4)
                return _oauth_error("slow_down", "polling too fast; wait `interval` seconds", interval=grant.interval)
            grant.polls += 1
            decided = grant.polls > offer.approve_after_polls
            if decided and offer.behaviour == "denies":
                grant.used = True
                return _oauth_error("access_denied", "the vendor does not approve automated sign-ups")
            if not decided or offer.behaviour in ("needs_captcha", "needs_login", "expires"):
                return _oauth_error("authorization_pending", "the user code has not been approved yet")
            grant.used = True
        token = self._new_token(vendor)
        return JSONResponse(
            {"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": "api_keys"},
            headers={"Cache-Control": "no-store"},
        )

    # ------------------------------------------------------------------ OTP e-mail

    async def signup(self, vendor: str, request: Request) -> Response:
        offer = self._offer(vendor, "otp_email")
        if offer is None:
            return _not_found("sign-up")
        body = _json(await request.body())
        email = body.get("email") if isinstance(body, dict) else None
        if not isinstance(email, str) or "@" not in parseaddr(email)[1]:
            return JSONResponse(
                {"error": "invalid_email", "message": "a valid e-mail address is required"}, status_code=400
            )
        if offer.behaviour == "needs_captcha":
            return JSONResponse(
                {
                    "error": "captcha_required",
                    "message": "complete the CAPTCHA to sign up",
                    "captcha": {"provider": "hcaptcha", "sitekey": f"{vendor}-sitekey"},
                },
                status_code=403,
            )
        if offer.behaviour == "needs_login":
            return JSONResponse(
                {"error": "login_required", "message": "finish signing up in a browser"}, status_code=403
            )
        if offer.behaviour == "denies":
            return JSONResponse(
                {"error": "signup_rejected", "message": "automated sign-ups are not accepted"}, status_code=403
            )
        code = f"{secrets.randbelow(10**6):06d}"
        with self._lock:
            self.codes[(vendor, email.lower())] = PendingCode(
                vendor, email, code, time.monotonic() + self._seconds(offer.otp_expires_in_seconds)
            )
        await asyncio.to_thread(self._send_code, vendor, email, code)
        # Like a real vendor, the answer does not say whether the mail could be delivered.
        return JSONResponse(
            {"status": "verification_sent", "email": email, "expires_in": self._seconds(offer.otp_expires_in_seconds)},
            status_code=202,
        )

    def _send_code(self, vendor: str, email: str, code: str) -> bool:
        domain = email.rsplit("@", 1)[1].lower()
        with self._lock:
            mx = self.mailboxes.get(domain)
        record = {"at": time.time(), "vendor": vendor, "to": email, "delivered": False}
        if mx is not None:
            msg = EmailMessage()
            msg["From"] = f"{vendor} <no-reply@{AUTH_HOSTS[vendor]}>"
            msg["To"] = email
            msg["Subject"] = f"Your {vendor} verification code"
            msg.set_content(
                f"Your {vendor} verification code is {code}.\n"
                "It expires in 10 minutes. If you did not sign up, ignore this message.\n"
            )
            try:
                with smtplib.SMTP(mx[0], mx[1], timeout=5) as smtp:
                    smtp.send_message(msg)
                record["delivered"] = True
            except (OSError, smtplib.SMTPException) as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self.deliveries.append(record)
        return bool(record["delivered"])

    async def verify(self, vendor: str, request: Request) -> Response:
        offer = self._offer(vendor, "otp_email")
        if offer is None:
            return _not_found("sign-up")
        body = _json(await request.body())
        email = body.get("email", "") if isinstance(body, dict) else ""
        code = body.get("code", "") if isinstance(body, dict) else ""
        with self._lock:
            pending = self.codes.get((vendor, str(email).lower()))
            if pending is None:
                return JSONResponse(
                    {"error": "invalid_request", "message": "no sign-up pending for this e-mail"}, status_code=400
                )
            if time.monotonic() >= pending.expires_at:
                return JSONResponse({"error": "code_expired", "message": "request a new code"}, status_code=400)
            pending.attempts += 1
            if pending.attempts > 5:
                return JSONResponse({"error": "too_many_attempts", "message": "request a new code"}, status_code=429)
            if not secrets.compare_digest(str(code), pending.code):
                return JSONResponse({"error": "invalid_code", "message": "the code is not valid"}, status_code=400)
            del self.codes[(vendor, str(email).lower())]
        token = self._new_token(vendor)
        return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 3600})

    # ------------------------------------------------------------------ API keys

    async def create_key(self, vendor: str, request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else ""
        with self._lock:
            owner = self.tokens.get(token)
        if owner != vendor:
            return JSONResponse(
                {"error": "invalid_token", "message": "missing or invalid access token"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        offer = self.offers[vendor]
        if offer.behaviour == "needs_card":
            return JSONResponse({"error": "payment_method_required", "message": offer.requirement}, status_code=402)
        body = _json(await request.body())
        name = body.get("name", "default") if isinstance(body, dict) else "default"
        key = self._new_key(vendor, offer)
        return JSONResponse({"id": f"key_{secrets.token_hex(6)}", "name": name, "key": key}, status_code=201)

    # ------------------------------------------------------------------ test hooks

    async def register_mailbox(self, request: Request) -> Response:
        body = _json(await request.body())
        try:
            domain, host, port = str(body["domain"]).lower(), str(body["host"]), int(body["port"])
        except (KeyError, TypeError, ValueError):
            return JSONResponse({"error": "need domain, host and port"}, status_code=400)
        with self._lock:
            self.mailboxes[domain] = (host, port)
        return JSONResponse({"ok": True, "domain": domain})

    async def plan(self, request: Request) -> Response:
        """Which flow to try at each vendor, and where: what the vendor's onboarding docs would say."""
        out = []
        for vendor, offer in sorted(self.offers.items()):
            out.append(
                {
                    "vendor": vendor,
                    "method": offer.method,
                    "auth_base": f"https://{AUTH_HOSTS[vendor]}",
                    "client_id": offer.client_id or None,
                }
            )
        for vendor, route in sorted(self.keyless.items()):
            out.append(
                {
                    "vendor": vendor,
                    "method": "keyless",
                    "header": route.header,
                    "value": route.value,
                    "evidence": route.evidence,
                }
            )
        return JSONResponse(out)

    async def replace_offer(self, request: Request) -> Response:
        body = _json(await request.body())
        vendor = body.get("vendor") if isinstance(body, dict) else None
        if vendor not in AUTH_HOSTS:
            return JSONResponse({"error": f"unknown vendor {vendor!r}"}, status_code=400)
        fields = {k: v for k, v in body.items() if k != "vendor"}
        if fields.get("method") not in ("otp_email", "device_code"):
            return JSONResponse({"error": "method must be otp_email or device_code"}, status_code=400)
        if fields.get("behaviour") not in BEHAVIOURS:
            return JSONResponse({"error": f"behaviour must be one of {list(BEHAVIOURS)}"}, status_code=400)
        try:
            offer = SignupOffer(**fields)
        except TypeError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        with self._lock:
            previous = self.offers.get(vendor)
            self.offers[vendor] = offer
        return JSONResponse({"previous": dataclasses.asdict(previous) if previous else None})

    # ------------------------------------------------------------------ routes

    def routes(self, prefix: str) -> list[Route]:
        """Starlette routes for every vendor's auth host, mounted before the generic host dispatch."""
        out = [
            Route("/_sim/signup/mailboxes", self.register_mailbox, methods=["POST"]),
            Route("/_sim/signup/plan", self.plan, methods=["GET"]),
            Route("/_sim/signup/offers", self.replace_offer, methods=["POST"]),
        ]
        for vendor, host in AUTH_HOSTS.items():
            base = f"{prefix}/{host}"
            out += [
                Route(f"{base}/oauth/device/code", _bind(self.device_code, vendor, host), methods=["POST"]),
                Route(f"{base}/device", _bind(self.verification_page, vendor, host), methods=["GET"]),
                Route(f"{base}/oauth/token", _bind(self.token, vendor), methods=["POST"]),
                Route(f"{base}/signup", _bind(self.signup, vendor), methods=["POST"]),
                Route(f"{base}/signup/verify", _bind(self.verify, vendor), methods=["POST"]),
                Route(f"{base}/api-keys", _bind(self.create_key, vendor), methods=["POST"]),
            ]
        return out


def _bind(handler, *args):
    async def endpoint(request: Request) -> Response:
        return await handler(*args, request)

    return endpoint


def _form(body: bytes) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except json.JSONDecodeError:
        return None
