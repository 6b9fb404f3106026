"""The agent-ready trial harness: it acts as an autonomous agent that wants a working API key.

One function per route, each returning a `TrialRecord` with every step as evidence (time,
request, response, outcome):

- `run_device_code_trial`: the OAuth 2.0 device authorization grant (RFC 8628). Request a device
  code, open the verification page itself (it has no human; a CAPTCHA, a card form or a sign-in
  form there ends the trial), poll the token endpoint honouring `interval` (authorization_pending:
  wait; slow_down: wait longer; access_denied / expired_token: stop), create an API key with the token.
- `run_otp_email_trial`: sign up with an address of its own mailbox (`Mailbox`, an aiosmtpd SMTP
  server), read the one-time code from the message, verify it, create an API key.
- `run_keyless_trial`: one search with no key, the way the vendor documents it.

A key counts only once it answers one search through the vendor's adapter (`SearchProbe`).
Secrets (codes, tokens, keys) never reach the evidence: each is replaced by a fingerprint
salted per trial (so a 6-digit code cannot be recovered from it), and the issued key is kept
only as an unsalted SHA-256 prefix (`key_fingerprint`) an operator holding the key can check.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
from aiosmtpd.controller import Controller

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.agent_ready.records import Method, Outcome, TrialMode, TrialRecord, TrialStep, load_hand_entered
from bench_assets.manifest import Manifest

DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_INTERVAL = 5.0  # RFC 8628 §3.2: clients MUST use 5 s when the server sends no interval
SLOW_DOWN_INCREMENT = 5.0  # RFC 8628 §3.5
PROBE_QUERY = "agent sign-up check"  # neutral: never a golden query, so evidence cannot leak one
BODY_LIMIT = 2000
# What a human-only step looks like on a page: CAPTCHA widgets, card number fields.
CAPTCHA_MARKERS = re.compile(r"h-captcha|g-recaptcha|cf-turnstile|captcha", re.I)
CARD_MARKERS = re.compile(r'autocomplete="cc-number"|credit card|payment card', re.I)
LOGIN_MARKERS = re.compile(r'type="password"|autocomplete="current-password"', re.I)  # a sign-in form
OTP_PATTERN = re.compile(r"\b(\d{6})\b")

Resolve = Callable[[str], str]


def _identity(url: str) -> str:
    return url


# ---------------------------------------------------------------------------- evidence


class Evidence:
    """The steps of one trial, with every secret replaced by a salted fingerprint."""

    def __init__(self) -> None:
        self.steps: list[TrialStep] = []
        self._secrets: dict[str, str] = {}
        self._salt = secrets.token_bytes(16)  # per trial, never stored

    def secret(self, value: Any, label: str) -> None:
        if isinstance(value, str) and value:
            digest = hashlib.sha256(self._salt + value.encode()).hexdigest()[:8]
            self._secrets[value] = f"[redacted:{label}:{digest}]"  # no angle brackets: HTML-escaped in pages

    def redact(self, obj: Any) -> Any:
        if isinstance(obj, str):
            for value in sorted(self._secrets, key=len, reverse=True):
                obj = obj.replace(value, self._secrets[value])
            return obj
        if isinstance(obj, dict):
            return {self.redact(k): self.redact(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.redact(v) for v in obj]
        return obj

    def record(
        self, action: str, request: dict | None, response: dict | None, outcome: str, at: datetime | None = None
    ) -> None:
        self.steps.append(
            TrialStep(
                at=at or datetime.now(UTC),
                action=action,
                request=self.redact(request),
                response=self.redact(response),
                outcome=outcome,
            )
        )

    def final_steps(self) -> list[TrialStep]:
        """Every step redacted again with every secret known by the end (one learnt late included)."""
        return [TrialStep.model_validate(self.redact(s.model_dump(mode="json"))) for s in self.steps]


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:BODY_LIMIT]


@dataclass
class Reply:
    status: int | None
    body: Any
    text: str = ""


class TrialClient:
    """HTTP for one trial: every call is recorded as a step of the evidence."""

    def __init__(self, evidence: Evidence, resolve: Resolve = _identity, timeout: float = 10.0):
        self.evidence = evidence
        self.resolve = resolve
        self.http = httpx.Client(timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def call(
        self, action: str, method: str, url: str, *, outcome: Callable[[Reply], str] | None = None, **kwargs: Any
    ) -> Reply:
        at = datetime.now(UTC)
        sent = {"method": method, "url": url}
        for part in ("headers", "data", "json", "params"):
            if kwargs.get(part) is not None:
                sent[part] = kwargs[part]
        try:
            response = self.http.request(method, self.resolve(url), **kwargs)
            reply = Reply(response.status_code, _body(response), response.text)
            received: dict[str, Any] = {"status": response.status_code, "body": reply.body}
        except httpx.HTTPError as exc:
            reply = Reply(None, None, "")
            received = {"transport_error": f"{type(exc).__name__}: {exc}"[:300]}
        self.evidence.record(action, sent, received, outcome(reply) if outcome else _status_outcome(reply), at=at)
        return reply


def _status_outcome(reply: Reply) -> str:
    if reply.status is None:
        return "transport_error"
    if isinstance(reply.body, dict) and isinstance(reply.body.get("error"), str):
        return reply.body["error"]
    return "ok" if 200 <= reply.status < 300 else f"http_{reply.status}"


# ---------------------------------------------------------------------------- the search probe


@dataclass(frozen=True)
class SearchProbe:
    """One search through the vendor's own adapter: what proves a key (or a keyless route) works."""

    adapter: str
    endpoint: str  # the real search endpoint
    options: dict[str, Any] | None = None
    query: str = PROBE_QUERY

    def run(
        self,
        client: TrialClient,
        api_key: str,
        extra_headers: dict[str, str] | None = None,
        action: str = "search with the issued key",
    ) -> tuple[bool, str]:
        adapter = get_adapter(self.adapter)
        client.evidence.secret(api_key, "api_key")
        task = VendorTask("search", self.query, 3)
        request = adapter.build(task, self.endpoint, api_key, dict(self.options or {}))
        headers = dict(request.headers)
        params = dict(request.params)
        if not api_key:  # keyless: drop the parts that would carry a key
            headers = {k: v for k, v in headers.items() if k.lower() not in {h.lower() for h in request.secret_headers}}
            params = {k: v for k, v in params.items() if k not in request.secret_params}
        headers.update(extra_headers or {})
        at = datetime.now(UTC)
        sent = {
            "method": request.method,
            "url": request.url,
            "headers": headers,
            "params": params,
            "json": request.json_body,
        }
        try:
            response = client.http.request(
                request.method,
                client.resolve(request.url),
                headers=headers,
                params=params or None,
                json=request.json_body,
            )
        except httpx.HTTPError as exc:
            client.evidence.record(action, sent, {"transport_error": f"{type(exc).__name__}"}, "transport_error", at)
            return False, f"the search did not answer ({type(exc).__name__})"
        try:
            parsed = adapter.parse(task, response.status_code, dict(response.headers), response.text)
        except MalformedResponse as exc:
            client.evidence.record(
                action, sent, {"status": response.status_code, "malformed": str(exc)[:300]}, "malformed", at
            )
            return False, f"search answered {response.status_code} with a body that is not the vendor's shape"
        # Only a summary: result URLs could be golden URLs, which must never reach a published file.
        summary = {
            "status": response.status_code,
            "results": len(parsed.results),
            "request_id": parsed.request_id,
            "error_class": parsed.error_class,
        }
        ok = 200 <= response.status_code < 300 and parsed.error_class is None
        client.evidence.record(
            action, sent, summary, "ok" if ok else (parsed.error_class or f"http_{response.status_code}"), at
        )
        if ok:
            return True, f"search answered {response.status_code} with {len(parsed.results)} results"
        return False, f"search answered {response.status_code} ({parsed.error_class})"


# ---------------------------------------------------------------------------- the agent's mailbox


class _Collector:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], bytes]] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # aiosmtpd handler hook
        with self.arrived:
            self.messages.append(
                ([r.lower() for r in envelope.rcpt_tos], envelope.original_content or envelope.content)
            )
            self.arrived.notify_all()
        return "250 Message accepted for delivery"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Mailbox:
    """The agent's own mailbox: an SMTP server on 127.0.0.1 (aiosmtpd) that keeps what it receives."""

    def __init__(self, domain: str = "agent.bench.test", host: str = "127.0.0.1", port: int | None = None):
        self.domain = domain
        self.host = host
        self.port = port or _free_port(host)
        self._collector = _Collector()
        self._controller = Controller(self._collector, hostname=host, port=self.port)

    def __enter__(self) -> Mailbox:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._controller.stop()

    def address(self, local: str) -> str:
        return f"{local}@{self.domain}"

    def wait_for(self, address: str, timeout: float) -> EmailMessage | None:
        """The first message to `address`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._collector.arrived:
            while True:
                for rcpts, raw in self._collector.messages:
                    if address.lower() in rcpts:
                        return email.message_from_bytes(raw, policy=email.policy.default)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._collector.arrived.wait(left)


def register_mailbox_with_simulator(sim_base: str, mailbox: Mailbox) -> None:
    """Point the simulated vendors' mail for the mailbox's domain at it (its MX record)."""
    httpx.post(
        f"{sim_base.rstrip('/')}/_sim/signup/mailboxes",
        json={"domain": mailbox.domain, "host": mailbox.host, "port": mailbox.port},
        timeout=5,
    ).raise_for_status()


# ---------------------------------------------------------------------------- trials


@dataclass
class _Trial:
    vendor: str
    method: Method
    snapshot_id: str
    mode: TrialMode
    evidence: Evidence
    started_at: datetime
    key: str | None = None

    def done(self, outcome: Outcome, reason: str) -> TrialRecord:
        finished = datetime.now(UTC)
        return TrialRecord(
            trial_id=f"{self.vendor}-{self.method}-{self.started_at:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}",
            snapshot_id=self.snapshot_id,
            vendor=self.vendor,
            method=self.method,
            mode=self.mode,
            recorded_by="harness",
            trial_date=self.started_at.date(),
            started_at=self.started_at,
            finished_at=finished,
            outcome=outcome,
            reason=reason,
            key_fingerprint=hashlib.sha256(self.key.encode()).hexdigest()[:12] if self.key else None,
            steps=self.evidence.final_steps(),
        )


def _start(vendor: str, method: Method, snapshot_id: str, mode: TrialMode) -> _Trial:
    return _Trial(vendor, method, snapshot_id, mode, Evidence(), datetime.now(UTC))


def _human_step(page: str) -> Outcome | None:
    if CAPTCHA_MARKERS.search(page):
        return "captcha_required"
    if CARD_MARKERS.search(page):
        return "card_required"
    if LOGIN_MARKERS.search(page):
        return "login_required"
    return None


def _create_and_prove_key(
    trial: _Trial, client: TrialClient, auth_base: str, access_token: str, probe: SearchProbe
) -> TrialRecord:
    trial.evidence.secret(access_token, "access_token")
    reply = client.call(
        "create an API key",
        "POST",
        f"{auth_base}/api-keys",
        headers={"Authorization": f"Bearer {access_token}"},
        json={"name": "bench agent trial"},
    )
    key = reply.body.get("key") if isinstance(reply.body, dict) else None
    if reply.status == 402:
        detail = reply.body.get("message", "") if isinstance(reply.body, dict) else ""
        return trial.done("card_required", f"creating an API key needs a payment card (402: {detail})")
    if reply.status not in (200, 201) or not isinstance(key, str) or not key:
        return trial.done("flow_error", f"creating an API key answered {reply.status}: {_short(reply.body)}")
    trial.evidence.secret(key, "api_key")
    trial.key = key
    # The key response is recorded before the key was known as a secret; final_steps() redacts it.
    works, detail = probe.run(client, key)
    if works:
        return trial.done("key_works", f"key issued with no human; {detail}")
    return trial.done("key_rejected", f"the issued key was refused: {detail}")


def _short(body: Any) -> str:
    return str(body)[:200]


def run_device_code_trial(
    vendor: str,
    auth_base: str,
    client_id: str,
    probe: SearchProbe,
    *,
    resolve: Resolve = _identity,
    snapshot_id: str = "",
    mode: TrialMode = "simulated",
    max_polls: int = 100,
    sleep: Callable[[float], None] = time.sleep,
) -> TrialRecord:
    """Obtain a key by the OAuth 2.0 device authorization grant (RFC 8628), with no human."""
    trial = _start(vendor, "device_code", snapshot_id, mode)
    client = TrialClient(trial.evidence, resolve)
    try:
        reply = client.call(
            "device authorization request",
            "POST",
            f"{auth_base}/oauth/device/code",
            data={"client_id": client_id, "scope": "api_keys"},
        )
        body = reply.body if isinstance(reply.body, dict) else {}
        if reply.status == 404:
            return trial.done("not_offered", f"no device authorization endpoint at {auth_base} (404)")
        if reply.status != 200 or not body.get("device_code"):
            return trial.done("flow_error", f"device authorization answered {reply.status}: {_short(reply.body)}")
        trial.evidence.secret(body["device_code"], "device_code")
        trial.evidence.secret(body.get("user_code"), "user_code")
        interval = float(body.get("interval") or DEFAULT_INTERVAL)
        page_url = body.get("verification_uri_complete") or body.get("verification_uri")
        if page_url:
            # No human to hand the code to: the agent opens the page itself, to see what it asks.
            page = client.call(
                "open the verification page",
                "GET",
                page_url,
                outcome=lambda r: _human_step(r.text) or ("ok" if r.status == 200 else f"http_{r.status}"),
            )
            needs = _human_step(page.text)
            if needs == "captcha_required":
                return trial.done(needs, "the verification page asks for a CAPTCHA: a human must approve")
            if needs == "card_required":
                return trial.done(needs, "the verification page asks for a payment card: a human must approve")
            if needs == "login_required":
                return trial.done(needs, "the verification page asks a human to sign in in a browser to approve")
        for _ in range(max_polls):
            sleep(interval)  # RFC 8628 §3.5: wait at least `interval` seconds between polls
            reply = client.call(
                "poll the token endpoint",
                "POST",
                f"{auth_base}/oauth/token",
                data={"grant_type": DEVICE_GRANT_TYPE, "device_code": body["device_code"], "client_id": client_id},
            )
            answer = reply.body if isinstance(reply.body, dict) else {}
            error = answer.get("error")
            if reply.status == 200 and answer.get("access_token"):
                return _create_and_prove_key(trial, client, auth_base, answer["access_token"], probe)
            if error == "authorization_pending":
                continue
            if error == "slow_down":
                interval = float(answer.get("interval") or interval + SLOW_DOWN_INCREMENT)
                continue
            if error == "access_denied":
                return trial.done("access_denied", "the vendor denied the authorization request (access_denied)")
            if error == "expired_token":
                return trial.done("expired_token", "the device code expired before anyone approved it (expired_token)")
            return trial.done("flow_error", f"token endpoint answered {reply.status}: {_short(reply.body)}")
        return trial.done("flow_error", f"no decision after {max_polls} polls")
    finally:
        client.close()


def run_otp_email_trial(
    vendor: str,
    auth_base: str,
    mailbox: Mailbox,
    probe: SearchProbe,
    *,
    resolve: Resolve = _identity,
    snapshot_id: str = "",
    mode: TrialMode = "simulated",
    mail_timeout: float = 10.0,
) -> TrialRecord:
    """Obtain a key by e-mail one-time code: the agent signs up with an address of its own mailbox."""
    trial = _start(vendor, "otp_email", snapshot_id, mode)
    client = TrialClient(trial.evidence, resolve)
    address = mailbox.address(f"agent+{vendor}-{secrets.token_hex(3)}")
    try:
        reply = client.call("sign up with an e-mail address", "POST", f"{auth_base}/signup", json={"email": address})
        body = reply.body if isinstance(reply.body, dict) else {}
        error = body.get("error")
        if reply.status == 404:
            return trial.done("not_offered", f"no sign-up endpoint at {auth_base} (404)")
        if error == "captcha_required" or "captcha" in body:
            return trial.done("captcha_required", f"sign-up asks for a CAPTCHA ({reply.status}): a human must solve it")
        if reply.status == 402 or error == "payment_method_required":
            return trial.done("card_required", f"sign-up needs a payment card ({reply.status})")
        if error == "login_required":
            return trial.done("login_required", f"sign-up must be finished by a human in a browser ({reply.status})")
        if error == "signup_rejected" or reply.status == 403:
            return trial.done("signup_rejected", f"sign-up refused ({reply.status}): {body.get('message', '')}")
        if reply.status not in (200, 201, 202):
            return trial.done("flow_error", f"sign-up answered {reply.status}: {_short(reply.body)}")
        started = time.monotonic()
        message = mailbox.wait_for(address, mail_timeout)
        if message is None:
            trial.evidence.record(
                "read the verification e-mail",
                {"mailbox": address},
                {"waited_seconds": round(time.monotonic() - started, 3)},
                "no_email",
            )
            return trial.done("no_email", f"no verification e-mail reached {address} within {mail_timeout:g} s")
        text = message.get_body(preferencelist=("plain", "html"))
        content = text.get_content() if text is not None else ""
        found = OTP_PATTERN.search(content)
        code = found.group(1) if found else None
        trial.evidence.secret(code, "otp_code")
        trial.evidence.record(
            "read the verification e-mail",
            {"mailbox": address},
            {"from": message["From"], "to": message["To"], "subject": message["Subject"], "body": content[:BODY_LIMIT]},
            "code_found" if code else "no_code",
        )
        if code is None:
            return trial.done("flow_error", "the verification e-mail holds no 6-digit code")
        reply = client.call(
            "verify the code", "POST", f"{auth_base}/signup/verify", json={"email": address, "code": code}
        )
        answer = reply.body if isinstance(reply.body, dict) else {}
        if reply.status == 402 or answer.get("error") == "payment_method_required":
            return trial.done("card_required", f"verification needs a payment card ({reply.status})")
        if reply.status != 200 or not answer.get("access_token"):
            return trial.done("flow_error", f"code verification answered {reply.status}: {_short(reply.body)}")
        return _create_and_prove_key(trial, client, auth_base, answer["access_token"], probe)
    finally:
        client.close()


def run_keyless_trial(
    vendor: str,
    header: str,
    value: str,
    probe: SearchProbe,
    *,
    resolve: Resolve = _identity,
    snapshot_id: str = "",
    mode: TrialMode = "simulated",
    evidence_url: str | None = None,
) -> TrialRecord:
    """One search with no key at all, as the vendor documents it (e.g. Tavily's keyless mode)."""
    trial = _start(vendor, "keyless", snapshot_id, mode)
    client = TrialClient(trial.evidence, resolve)
    try:
        works, detail = probe.run(client, "", extra_headers={header: value}, action="search with no key")
    finally:
        client.close()
    record = trial.done("route_works" if works else "route_failed", f"keyless route ({header}: {value}): {detail}")
    return record.model_copy(update={"evidence_url": evidence_url})


# ---------------------------------------------------------------------------- a planned round of trials


def simulated_plan(sim_base: str) -> list[dict[str, Any]]:
    """Which route to try at each simulated vendor (the simulated world's onboarding docs)."""
    response = httpx.get(f"{sim_base.rstrip('/')}/_sim/signup/plan", timeout=10)
    response.raise_for_status()
    return response.json()


def run_planned_trials(
    plan: list[dict[str, Any]],
    probes: dict[str, SearchProbe],
    resolve: Resolve,
    *,
    snapshot_id: str,
    mode: TrialMode,
    mailbox: Mailbox | None = None,
    workers: int = 4,
) -> list[TrialRecord]:
    """Run every planned trial of the vendors in `probes` (the snapshot's vendors); trials mostly
    wait (polling intervals, mail), so a few run at once. Records come back in plan order."""

    def one(entry: dict[str, Any]) -> TrialRecord | None:
        vendor, method = entry["vendor"], entry["method"]
        probe = probes.get(vendor)
        if probe is None:
            return None
        if method == "device_code":
            return run_device_code_trial(
                vendor,
                entry["auth_base"],
                entry.get("client_id") or "",
                probe,
                resolve=resolve,
                snapshot_id=snapshot_id,
                mode=mode,
            )
        if method == "otp_email":
            if mailbox is None:
                raise ValueError("an OTP e-mail trial needs a mailbox")
            return run_otp_email_trial(
                vendor, entry["auth_base"], mailbox, probe, resolve=resolve, snapshot_id=snapshot_id, mode=mode
            )
        if method == "keyless":
            return run_keyless_trial(
                vendor, entry["header"], entry["value"], probe, resolve=resolve, snapshot_id=snapshot_id, mode=mode
            )
        return None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return [r for r in pool.map(one, plan) if r is not None]


def snapshot_trials(
    manifest: Manifest, hand_entered: Path | None, sim_base: str | None, resolve: Resolve
) -> list[TrialRecord]:
    """Every agent-ready trial of a snapshot: the hand-entered live trials (validated first: a bad
    record names file, line and field before any trial runs), then, in simulated mode, the
    harness's own trials at each simulated vendor, each key proven with one search."""
    records: list[TrialRecord] = []
    if hand_entered is not None and hand_entered.exists():
        vendors = set(manifest.vendors) | {e.vendor for e in manifest.excluded}
        records += load_hand_entered(hand_entered, manifest.snapshot_id, vendors)
    if manifest.mode == "simulated" and sim_base:
        probes = {
            v: SearchProbe(spec.adapter, spec.endpoints["search"], dict(spec.request_options))
            for v, spec in manifest.vendors.items()
            if "search" in spec.endpoints
        }
        with Mailbox() as mailbox:
            register_mailbox_with_simulator(sim_base, mailbox)
            records += run_planned_trials(
                simulated_plan(sim_base),
                probes,
                resolve,
                snapshot_id=manifest.snapshot_id,
                mode="simulated",
                mailbox=mailbox,
            )
    return records
