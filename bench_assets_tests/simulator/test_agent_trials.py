"""Agent-ready trials: the harness signs up at simulated vendors over real HTTP and real SMTP.

Device code (RFC 8628) with authorization_pending and slow_down, OTP e-mail with the code read
from a real SMTP message, every failing path (CAPTCHA, card, browser sign-in, access_denied,
expired_token, ...), issued keys that work for one search, evidence without secrets, the demo's
simulated world agreeing with what is known of the real vendors (vendors.md §13), and hand-entered
records validated with file, line and field. The asset and the leaderboard showing agent-ready
with its method and date are e2e/test_agent_trials_pipeline.py.
"""

from __future__ import annotations

import re
import time

import httpx
import pytest

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import VendorTask
from bench_assets.agent_ready import harness
from bench_assets.agent_ready.harness import (
    Mailbox,
    SearchProbe,
    register_mailbox_with_simulator,
    run_device_code_trial,
    run_keyless_trial,
    run_otp_email_trial,
    run_planned_trials,
    simulated_plan,
)
from bench_assets.agent_ready.records import TrialRecord, agent_ready_summary, load_hand_entered
from bench_assets.errors import BenchInputError
from bench_assets.manifest import load_manifest
from bench_assets.simulator.app import simulated_url
from bench_assets.simulator.signup_config import KEYLESS_ROUTES
from bench_assets_tests.helpers import (
    DEMO_MANIFEST,
    GOOD_TRIAL,
    SNAPSHOT,
    write_trials,
)

DEMO = load_manifest(DEMO_MANIFEST)
PROBES = {v: SearchProbe(s.adapter, s.endpoints["search"], dict(s.options)) for v, s in DEMO.vendors.items()}
AUTH = {
    "exa": "https://auth.exa.ai",
    "tavily": "https://auth.tavily.com",
    "brave": "https://auth.search.brave.com",
    "serper": "https://auth.serper.dev",
    "serpapi": "https://auth.serpapi.com",
    "kagi": "https://auth.kagi.com",
    "parallel": "https://auth.parallel.ai",
    "perplexity": "https://auth.perplexity.ai",
    "linkup": "https://auth.linkup.so",
    "jina": "https://auth.jina.ai",
    "firecrawl": "https://auth.firecrawl.dev",
}
DEMO_TRIALS = DEMO_MANIFEST.parent / "agent_trials.yaml"


# ##### FIXTURES


@pytest.fixture()
def offers(simulator):
    """Set simulated vendors' sign-up offers for one test; the previous ones are restored after."""
    previous = {}

    def set_offer(vendor: str, method: str, behaviour: str, **fields) -> None:
        r = httpx.post(
            f"{simulator.base_url}/_sim/signup/offers",
            json={"vendor": vendor, "method": method, "behaviour": behaviour, **fields},
            timeout=5,
        )
        r.raise_for_status()
        previous.setdefault(vendor, r.json()["previous"])

    yield set_offer
    for vendor, old in previous.items():
        httpx.post(
            f"{simulator.base_url}/_sim/signup/offers", json={"vendor": vendor, **old}, timeout=5
        ).raise_for_status()


@pytest.fixture()
def resolve(simulator):
    return lambda url: simulated_url(url, simulator.base_url)


@pytest.fixture()
def mailbox(simulator):
    with Mailbox(domain="agent-tests.bench.test") as box:
        register_mailbox_with_simulator(simulator.base_url, box)
        yield box


@pytest.fixture()
def seen_bodies(monkeypatch):
    """Every response body the harness read (codes, tokens and keys included), to look for in the evidence."""
    bodies: list = []
    original = harness._body

    def spy(response):
        body = original(response)
        bodies.append(body)
        return body

    monkeypatch.setattr(harness, "_body", spy)
    return bodies


def secrets_in(bodies) -> set[str]:
    found = set()
    for body in bodies:
        if isinstance(body, dict):
            for name in ("device_code", "user_code", "access_token", "key"):
                if isinstance(body.get(name), str):
                    found.add(body[name])
    return found


def device_trial(vendor: str, resolve, **kwargs) -> TrialRecord:
    return run_device_code_trial(
        vendor, AUTH[vendor], f"{vendor}-cli", PROBES[vendor], resolve=resolve, snapshot_id=SNAPSHOT, **kwargs
    )


def poll_steps(record: TrialRecord):
    return [s for s in record.steps if s.action == "poll the token endpoint"]


# ##### DEVICE CODE (RFC 8628)


def test_device_code_trial_polls_through_pending_and_slow_down_and_gets_a_working_key(offers, resolve, seen_bodies):
    offers("exa", "device_code", "slow_down", client_id="exa-cli", approve_after_polls=2)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    record = device_trial("exa", resolve, sleep=sleep)

    assert record.agent_ready and record.outcome == "key_works" and record.method == "device_code"
    assert [s.outcome for s in poll_steps(record)] == [
        "slow_down",
        "authorization_pending",
        "authorization_pending",
        "ok",
    ]
    # The harness waited the server's interval before every poll, and the larger one after slow_down.
    device = record.steps[0].response["body"]
    slowed = poll_steps(record)[0].response["body"]["interval"]
    assert slowed > device["interval"] > 0
    assert waits == [device["interval"], slowed, slowed, slowed]
    assert [s.action for s in record.steps] == [
        "device authorization request",
        "open the verification page",
        *["poll the token endpoint"] * 4,
        "create an API key",
        "search with the issued key",
    ]
    assert record.steps[-1].response["status"] == 200 and record.steps[-1].response["results"] > 0
    assert record.key_fingerprint and len(record.key_fingerprint) == 12
    assert secrets_in(seen_bodies), "the spy saw the codes, token and key"


def test_polling_faster_than_the_interval_is_answered_slow_down(offers, simulator, resolve):
    """The simulator enforces the interval, so a harness that ignored it could not succeed."""
    offers("exa", "device_code", "success", client_id="exa-cli", interval_seconds=50)  # a second here
    auth = resolve(AUTH["exa"])
    grant = httpx.post(f"{auth}/oauth/device/code", data={"client_id": "exa-cli"}, timeout=5).json()
    token_request = {
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        "device_code": grant["device_code"],
        "client_id": "exa-cli",
    }
    r = httpx.post(f"{auth}/oauth/token", data=token_request, timeout=5)
    assert r.status_code == 400 and r.json()["error"] == "slow_down"
    assert r.json()["interval"] > grant["interval"]
    assert (
        httpx.post(f"{auth}/oauth/token", data={**token_request, "grant_type": "password"}, timeout=5).json()["error"]
        == "unsupported_grant_type"
    )
    assert (
        httpx.post(f"{auth}/oauth/token", data={**token_request, "device_code": "forged"}, timeout=5).json()["error"]
        == "invalid_grant"
    )


# ##### OTP E-MAIL


def test_otp_email_trial_reads_the_code_from_a_real_smtp_message(offers, resolve, mailbox, seen_bodies):
    offers("tavily", "otp_email", "success", key_prefix="tvly-")
    record = run_otp_email_trial(
        "tavily", AUTH["tavily"], mailbox, PROBES["tavily"], resolve=resolve, snapshot_id=SNAPSHOT
    )

    assert record.agent_ready and record.outcome == "key_works" and record.method == "otp_email"
    # The simulator delivered a real RFC 5322 message over SMTP to the harness's own mailbox.
    rcpts, raw = mailbox._collector.messages[-1]
    assert rcpts[0].endswith("@agent-tests.bench.test") and b"Subject: Your tavily verification code" in raw
    code = re.search(rb"code is (\d{6})", raw).group(1).decode()
    mail_step = next(s for s in record.steps if s.action == "read the verification e-mail")
    assert mail_step.outcome == "code_found" and mail_step.response["subject"] == "Your tavily verification code"
    assert code not in mail_step.response["body"] and "[redacted:otp_code:" in mail_step.response["body"]
    verify = next(s for s in record.steps if s.action == "verify the code")
    assert verify.request["json"]["code"].startswith("[redacted:otp_code:")
    assert record.steps[-1].action == "search with the issued key" and record.steps[-1].outcome == "ok"


def test_issued_key_works_for_one_search_and_a_bad_key_does_not(offers, resolve, mailbox):
    offers("tavily", "otp_email", "success", key_prefix="tvly-")
    auth = resolve(AUTH["tavily"])
    address = mailbox.address("agent+raw")
    assert httpx.post(f"{auth}/signup", json={"email": address}, timeout=5).status_code == 202
    message = mailbox.wait_for(address, timeout=5)
    code = re.search(r"\b(\d{6})\b", message.get_body(("plain",)).get_content()).group(1)
    assert (
        httpx.post(
            f"{auth}/signup/verify",
            json={"email": address, "code": "000000" if code != "000000" else "111111"},
            timeout=5,
        ).json()["error"]
        == "invalid_code"
    )
    token = httpx.post(f"{auth}/signup/verify", json={"email": address, "code": code}, timeout=5).json()["access_token"]
    key = httpx.post(f"{auth}/api-keys", headers={"Authorization": f"Bearer {token}"}, json={}, timeout=5).json()["key"]
    assert key.startswith("tvly-")

    def search(vendor: str, api_key: str) -> int:
        spec = DEMO.vendors[vendor]
        request = get_adapter(spec.adapter).build(
            VendorTask("search", "annual report", 3), resolve(spec.endpoints["search"]), api_key, {}
        )
        return httpx.request(
            request.method,
            request.url,
            headers=request.headers,
            params=request.params or None,
            json=request.json_body,
            timeout=10,
        ).status_code

    assert search("tavily", key) == 200
    assert search("tavily", "tvly-" + "0" * 40) == 401  # a key nobody issued
    assert search("exa", key) == 401  # a key is the issuing vendor's only


# ##### FAILING PATHS: NOT AGENT-READY, WITH THE REASON


@pytest.mark.parametrize(
    "vendor, method, behaviour, extra, outcome, reason",
    [
        ("serper", "otp_email", "needs_captcha", {}, "captcha_required", "CAPTCHA"),
        ("serpapi", "device_code", "needs_captcha", {"client_id": "serpapi-cli"}, "captcha_required", "CAPTCHA"),
        ("brave", "otp_email", "needs_card", {}, "card_required", "payment card"),
        ("firecrawl", "device_code", "needs_login", {"client_id": "firecrawl-cli"}, "login_required", "sign in"),
        ("serper", "otp_email", "needs_login", {}, "login_required", "browser"),
        ("perplexity", "device_code", "needs_card", {"client_id": "perplexity-cli"}, "card_required", "payment card"),
        ("kagi", "device_code", "denies", {"client_id": "kagi-cli"}, "access_denied", "access_denied"),
        (
            "parallel",
            "device_code",
            "expires",
            {"client_id": "parallel-cli", "expires_in_seconds": 20},
            "expired_token",
            "expired_token",
        ),
        ("jina", "otp_email", "denies", {}, "signup_rejected", "refused"),
        ("linkup", "device_code", "not_offered", {"client_id": "linkup-cli"}, "not_offered", "404"),
    ],
)
def test_a_flow_that_needs_a_human_ends_as_not_agent_ready_with_the_reason(
    offers, resolve, mailbox, vendor, method, behaviour, extra, outcome, reason
):
    offers(vendor, method, behaviour, **extra)
    if method == "device_code":
        record = device_trial(vendor, resolve)
    else:
        record = run_otp_email_trial(
            vendor, AUTH[vendor], mailbox, PROBES[vendor], resolve=resolve, snapshot_id=SNAPSHOT
        )
    assert not record.agent_ready
    assert record.outcome == outcome and reason in record.reason
    assert record.key_fingerprint is None and not any(s.action.startswith("search") for s in record.steps)
    if outcome == "expired_token":
        polls = poll_steps(record)
        assert len(polls) > 1 and {s.outcome for s in polls[:-1]} == {"authorization_pending"}
    summary = agent_ready_summary([record])
    assert summary["ready"] is False and summary["outcome"] == outcome and summary["method"] == method
    if outcome == "login_required" and method == "device_code":
        page = next(s for s in record.steps if s.action == "open the verification page")
        assert page.outcome == "login_required" and not poll_steps(record)  # stopped before polling


def test_no_email_arriving_ends_the_trial(offers, resolve, simulator):
    offers("tavily", "otp_email", "success")
    with Mailbox(domain="unregistered.bench.test") as box:  # no MX record: the mail cannot arrive
        record = harness.run_otp_email_trial(
            "tavily", AUTH["tavily"], box, PROBES["tavily"], resolve=resolve, mail_timeout=0.3
        )
    assert record.outcome == "no_email" and not record.agent_ready


def test_keyless_route_is_recorded_as_a_route_not_as_agent_ready(resolve):
    record = run_keyless_trial("tavily", "X-Tavily-Access-Mode", "keyless", PROBES["tavily"], resolve=resolve)
    assert record.outcome == "route_works" and record.method == "keyless" and not record.agent_ready
    assert "Authorization" not in record.steps[0].request["headers"]
    refused = run_keyless_trial("exa", "X-Tavily-Access-Mode", "keyless", PROBES["exa"], resolve=resolve)
    assert refused.outcome == "route_failed"
    summary = agent_ready_summary([record])
    assert summary["ready"] is None and summary["other_routes"][0]["method"] == "keyless"


# ##### THE DEMO'S SIMULATED WORLD AGAINST vendors.md §13


def test_the_demo_world_agrees_with_what_is_known_of_each_vendor(simulator, resolve):
    """The default offers, trialled as the demo trials them: a flow succeeds only where §13 says
    nothing of how the vendor issues keys (Exa, Tavily); where it says what a customer must do,
    the trial stops there with that reason; where it says "dashboard sign-up only", there is no
    sign-up API. A keyless route is a route, never agent-ready."""
    with Mailbox(domain="agent-world.bench.test") as box:
        register_mailbox_with_simulator(simulator.base_url, box)
        records = run_planned_trials(
            simulated_plan(simulator.base_url), PROBES, resolve, snapshot_id=SNAPSHOT, mode="simulated", mailbox=box
        )
    by_route = {(r.vendor, r.method): r for r in records}
    # one record per route: a key flow per provider the simulated world documents a sign-up for (a
    # mode is the same account; Keenable and Valyu have none there), and Tavily's keyless mode
    assert len(by_route) == len(records) and {v for v, _ in by_route} <= {s.provider for s in DEMO.vendors.values()}
    outcome = {key: r.outcome for key, r in by_route.items()}
    assert outcome == {
        ("exa", "device_code"): "key_works",
        ("tavily", "otp_email"): "key_works",
        ("tavily", "keyless"): "route_works",
        ("firecrawl", "device_code"): "login_required",  # `firecrawl login --browser` needs a human
        ("brave", "otp_email"): "card_required",
        ("perplexity", "device_code"): "card_required",
        ("kagi", "device_code"): "card_required",
        ("jina", "otp_email"): "not_offered",
        ("serper", "otp_email"): "not_offered",
        ("serpapi", "device_code"): "not_offered",
        ("parallel", "device_code"): "not_offered",
        ("linkup", "device_code"): "not_offered",
        ("youcom", "otp_email"): "not_offered",
    }
    assert {r.vendor for r in records if r.agent_ready} == {"exa", "tavily"}
    assert "slow_down" in [s.outcome for s in poll_steps(by_route[("exa", "device_code")])]
    assert "sign in in a browser" in by_route[("firecrawl", "device_code")].reason
    key_trials = {r.vendor: r for r in records if r.method != "keyless"}
    for vendor, words in (("brave", "credit card"), ("perplexity", "prepaid API credit"), ("kagi", "API balance")):
        assert words in key_trials[vendor].reason, vendor


def test_every_documented_no_human_route_is_recorded_as_a_route():
    """§13's routes that need no key (or pay per request) are in the demo's agent_trials.yaml, or
    (Tavily's keyless mode) trialled by the harness; none of them counts as agent-ready."""
    records = load_hand_entered(DEMO_TRIALS, SNAPSHOT, set(DEMO.vendors))
    routes = {(r.vendor, r.method) for r in records}
    assert routes == {
        ("exa", "x402"),
        ("linkup", "x402"),
        ("firecrawl", "keyless"),
        ("youcom", "keyless"),
        ("jina", "keyless"),
    }
    assert all(r.outcome == "route_documented" and not r.agent_ready and r.evidence_url for r in records)
    jina = next(r for r in records if r.vendor == "jina")
    assert "Reader" in jina.reason and "Search" in jina.reason  # keyless for reading pages only
    assert set(KEYLESS_ROUTES) == {"tavily"}  # the route the simulator honours, trialled by the harness


# ##### EVIDENCE


def test_evidence_has_no_secrets(offers, resolve, mailbox, seen_bodies):
    offers("exa", "device_code", "success", client_id="exa-cli")
    offers("tavily", "otp_email", "success", key_prefix="tvly-")
    records = [
        device_trial("exa", resolve),
        run_otp_email_trial("tavily", AUTH["tavily"], mailbox, PROBES["tavily"], resolve=resolve),
    ]
    secrets = secrets_in(seen_bodies)
    codes = {c for _, raw in mailbox._collector.messages for c in re.findall(rb"code is (\d{6})", raw)}
    secrets |= {c.decode() for c in codes}
    assert len(secrets) >= 7  # device code, user code, 2 tokens, 2 keys, the e-mailed code
    for record in records:
        text = record.model_dump_json()
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{record.vendor}: secrets in the evidence"
        for label in ("[redacted:access_token:", "[redacted:api_key:"):
            assert label in text


# ##### HAND-ENTERED RECORDS


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"evidence": "my notes"}, "trials.0.evidence", "pattern"),
        ({"method": "carrier_pigeon"}, "trials.0.method", "otp_email"),
        ({"method": "x402", "outcome": "key_works"}, "trials.0.outcome", "cannot follow method 'x402'"),
        ({"outcome": "captcha_required", "method": "otp_email", "reason": ""}, "trials.0.reason", "needs a reason"),
        ({"date": "2999-01-01"}, "trials.0.date", "future"),
        ({"vendor": "altavista"}, "trials.0.vendor", "not a vendor of snapshot"),
        ({"verdict": "fine"}, "trials.0.verdict", "Extra inputs"),
    ],
)
def test_a_bad_hand_entered_record_names_file_line_and_field(tmp_path, change, field, words):
    path = write_trials(tmp_path, [{**GOOD_TRIAL, **change}])
    with pytest.raises(BenchInputError) as err:
        load_hand_entered(path, SNAPSHOT, set(DEMO.vendors))
    message = str(err.value)
    assert f"{path}:" in message and f"field '{field}'" in message and words in message
    line = int(re.search(rf"{re.escape(str(path))}:(\d+)", message).group(1))
    key = field.split(".")[-1]
    assert path.read_text().splitlines()[line - 1].strip().lstrip("- ").startswith(f"{key}:")


def test_a_good_hand_entered_record_becomes_a_live_trial(tmp_path):
    path = write_trials(
        tmp_path,
        [
            GOOD_TRIAL,
            {
                **GOOD_TRIAL,
                "vendor": "exa",
                "method": "device_code",
                "outcome": "key_works",
                "reason": None,
                "date": "2026-07-02",
            },
        ],
    )
    brave, exa = load_hand_entered(path, SNAPSHOT, set(DEMO.vendors))
    assert (brave.mode, brave.recorded_by, brave.agent_ready, brave.outcome) == (
        "live",
        "hand",
        False,
        "human_required",
    )
    assert exa.agent_ready and exa.evidence_url == GOOD_TRIAL["evidence"] and exa.source.startswith(f"{path}:")
    summary = agent_ready_summary([exa])
    assert summary["ready"] is True and summary["trial_date"] == "2026-07-02"
    assert summary["evidence"]["link"] == GOOD_TRIAL["evidence"]
    assert summary["label"] == "yes: device code, 2026-07-02"  # a live trial: no "simulated"
