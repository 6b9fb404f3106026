"""Which no-human sign-up flow each simulated vendor offers, and how it behaves.

This describes the stand-in world, not the real vendors, but it never contradicts what is known
of them (vendors.md §13). No real vendor is known to issue API keys by OTP e-mail or by the
OAuth 2.0 device authorization grant, so:

- where §13 says nothing of how a vendor issues keys (Exa, Tavily), the simulated vendor offers
  one of the two flows and approves it automatically, standing for a vendor that auto-approves
  agent sign-ups;
- where §13 says what a new customer must do, the simulated flow stops there: Firecrawl's login
  needs a human in a browser, Brave a credit card, Perplexity prepaid credit, Kagi a funded
  balance;
- where §13 says only "dashboard sign-up" (Jina, Serper, SerpApi, Parallel) or names another
  route (Linkup, You.com), the vendor has no sign-up API: its endpoints answer 404.

A documented route that needs no key at all is recorded as that route, never as agent-ready:
Tavily's keyless mode is honoured here (`KEYLESS_ROUTES`) and trialled by the harness; the
others (x402, Jina Reader without a key, Firecrawl's keyless tier, You.com's free MCP profile)
are entered in the snapshot's agent_trials.yaml. The trial harness is only told which flow to
try (`plan`); the behaviour it has to discover.

Approval is automatic here: a device-code vendor whose flow succeeds approves the user code
after `approve_after_polls` polls. A flow configured to need a human (a CAPTCHA, a card, a
browser sign-in) never gets there, and the trial ends as not agent-ready with that reason.

Times are in the vendor's seconds (RFC 8628 defaults: interval 5 s, slow_down adds 5 s); the
simulator runs them at `BENCH_SIM_SIGNUP_TIME_SCALE` (default 0.02, so 5 s lasts 0.1 s) and
reports the scaled values, which the harness honours like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SignupMethod = Literal["otp_email", "device_code"]
Behaviour = Literal[
    "success", "slow_down", "needs_captcha", "needs_card", "needs_login", "denies", "expires", "not_offered"
]
BEHAVIOURS: tuple[str, ...] = (
    "success",
    "slow_down",
    "needs_captcha",
    "needs_card",
    "needs_login",
    "denies",
    "expires",
    "not_offered",
)
DEFAULT_TIME_SCALE = 0.02


@dataclass(frozen=True)
class SignupOffer:
    """One vendor's sign-up flow in the simulated world.

    success        the key is issued (device code: approved after `approve_after_polls` polls)
    slow_down      device code: the first poll is answered slow_down, then as success
    needs_captcha  OTP: /signup answers captcha_required; device code: the verification page
                   shows a CAPTCHA and the code is never approved
    needs_card     the account is created, but creating an API key answers 402 with `requirement`
    needs_login    OTP: /signup answers login_required; device code: the verification page is a
                   sign-in form for a human in a browser, and the code is never approved
    denies         OTP: /signup answers signup_rejected; device code: access_denied
    expires        device code: never approved, polling ends with expired_token
    not_offered    the flow's endpoints answer 404
    """

    method: SignupMethod
    behaviour: Behaviour
    client_id: str = ""  # the public client id of the vendor's CLI (device code only)
    key_prefix: str = ""  # issued keys look like the vendor's real ones
    approve_after_polls: int = 2
    interval_seconds: float = 5.0
    slow_down_increment_seconds: float = 5.0
    expires_in_seconds: float = 600.0
    otp_expires_in_seconds: float = 600.0
    requirement: str = "add a credit card to your account to create API keys"  # needs_card's message


@dataclass(frozen=True)
class KeylessRoute:
    """A documented way to call the API with no key at all (vendors.md §13)."""

    header: str  # lower-case header name
    value: str
    paths: tuple[str, ...]
    evidence: str


# Where each vendor's (simulated) sign-up API lives; mounted under /h/<host> like every real host.
AUTH_HOSTS: dict[str, str] = {
    "brave": "auth.search.brave.com",
    "exa": "auth.exa.ai",
    "firecrawl": "auth.firecrawl.dev",
    "jina": "auth.jina.ai",
    "kagi": "auth.kagi.com",
    "linkup": "auth.linkup.so",
    "parallel": "auth.parallel.ai",
    "perplexity": "auth.perplexity.ai",
    "serpapi": "auth.serpapi.com",
    "serper": "auth.serper.dev",
    "tavily": "auth.tavily.com",
    "youcom": "auth.you.com",
}

DEMO_OFFERS: dict[str, SignupOffer] = {
    # §13 says nothing of how they issue keys: here they auto-approve an agent's sign-up (Exa after
    # asking the agent once to poll more slowly). Their documented no-human routes are recorded as
    # routes: Exa's x402 in agent_trials.yaml, Tavily's keyless mode trialled below.
    "exa": SignupOffer("device_code", "slow_down", client_id="exa-cli"),
    "tavily": SignupOffer("otp_email", "success", key_prefix="tvly-"),
    # §13: `firecrawl login --browser` needs a human in a browser.
    "firecrawl": SignupOffer("device_code", "needs_login", client_id="firecrawl-cli", key_prefix="fc-"),
    # §13: dashboard sign-up only, and what it asks before a key works.
    "brave": SignupOffer(
        "otp_email", "needs_card", requirement="add a credit card to your account (required even for the free credit)"
    ),
    "perplexity": SignupOffer(
        "device_code",
        "needs_card",
        client_id="pplx-cli",
        key_prefix="pplx-",
        requirement="buy prepaid API credit before creating a key",
    ),
    "kagi": SignupOffer(
        "device_code",
        "needs_card",
        client_id="kagi-cli",
        requirement="fund the account's API balance before creating a key",
    ),
    # §13: dashboard sign-up only (Jina Reader also answers without a key: recorded as a keyless route).
    "jina": SignupOffer("otp_email", "not_offered"),
    "serper": SignupOffer("otp_email", "not_offered"),
    "serpapi": SignupOffer("device_code", "not_offered", client_id="serpapi-cli"),
    "parallel": SignupOffer("device_code", "not_offered", client_id="parallel-cli"),
    # §13: no sign-up API; their no-human routes are x402 (Linkup) and a free MCP profile (You.com).
    "linkup": SignupOffer("device_code", "not_offered", client_id="linkup-cli"),
    "youcom": SignupOffer("otp_email", "not_offered"),
}

# Keyless calls the simulator honours, as the vendor documents them.
KEYLESS_ROUTES: dict[str, KeylessRoute] = {
    "tavily": KeylessRoute(
        "x-tavily-access-mode",
        "keyless",
        ("/search", "/extract"),
        "tavily-python README: X-Tavily-Access-Mode: keyless (vendors.md §2, §13)",
    ),
}
